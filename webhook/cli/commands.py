"""The `review`, `check` and `mutate` commands: the webhook's decisions, offline.

`review` answers an AdmissionReview read on stdin through exactly the code the HTTP
handler runs; `check` validates manifests for CI (exit 0 valid, 1 invalid, 2 unreadable
input); `mutate` prints manifests as /mutate would leave them. Without a cluster the
API server version is unknown: matchLabelKeys merges show the v1.34 result.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

import yaml

from webhook.admission.context import ReviewContext
from webhook.admission.handlers import answer_review, mutate_reviewed, review_object
from webhook.admission.review import invalid_status, object_name, qualified_kind
from webhook.api.field import FieldError, go_quote
from webhook.api.kube import HANDLED_KINDS, RawObj
from webhook.config import load_settings
from webhook.errors import InputError

__all__ = ["CheckResult", "check_objects", "cli_check", "cli_mutate", "cli_review"]


def _context(args: argparse.Namespace) -> ReviewContext:
    settings = load_settings(getattr(args, "config", None))
    snapshot = None
    path = getattr(args, "snapshot", None)
    if path:
        from webhook.cluster.source import FileSource

        snapshot = FileSource(path).load()
    return ReviewContext(settings=settings, snapshot=snapshot)


def cli_review(args: argparse.Namespace) -> int:
    """`topospread review {validate|mutate}`: one AdmissionReview on stdin, the answer on stdout."""
    ctx = _context(args)
    answer = answer_review(sys.stdin.buffer.read(), args.operation, ctx)
    print(json.dumps(answer.doc, indent=2, ensure_ascii=False))
    if answer.status != 200:
        print(f"topospread review: {answer.doc['message']}", file=sys.stderr)
        return 2
    return 0


# ---------------------------------------------------------------------------------------
# check


def _group(obj: RawObj) -> str:
    api_version = obj.get("apiVersion")
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def _namespace(obj: RawObj) -> str:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) else ""


def _title(obj: RawObj) -> str:
    """`Deployment.apps "web"`, as kube-apiserver names an object."""
    return f"{qualified_kind(_group(obj), str(obj.get('kind')))} {go_quote(object_name(obj))}"


@dataclass
class CheckResult:
    """The verdict on one object of one file."""

    file: str
    obj: RawObj
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind"))

    @property
    def name(self) -> str:
        return object_name(self.obj)

    @property
    def valid(self) -> bool:
        return not self.errors

    def lines(self) -> list[str]:
        title = _title(self.obj)
        if self.valid:
            out = [f"{self.file}: {title} is valid"]
        else:
            status = invalid_status(_group(self.obj), self.kind, self.name, self.errors)
            out = [f"{self.file}: {status['message']}"]
        return out + [f"{self.file}: {title}: warning: {w}" for w in self.warnings]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "kind": self.kind,
            "name": self.name,
            "namespace": _namespace(self.obj),
            "valid": self.valid,
            "errors": [
                {"field": e.field, "reason": e.type.reason, "message": e.body()}
                for e in self.errors
            ],
            "warnings": list(self.warnings),
        }


def _load(path: str, stderr: TextIO) -> list[RawObj] | None:
    """Every object of a file, None (after saying why) when it cannot be used."""
    from webhook.cluster.files import load_objects

    try:
        objs = load_objects(path)
    except InputError as exc:
        print(f"topospread: {exc}", file=stderr)
        return None
    for i, obj in enumerate(objs):
        if not isinstance(obj.get("kind"), str) or not obj["kind"]:
            print(f"topospread: {path}: object #{i} has no kind", file=stderr)
            return None
    return objs


def check_objects(path: str, objs: list[RawObj], ctx: ReviewContext) -> list[CheckResult]:
    """Validate the objects of one file as /validate would on create."""
    results = []
    for obj in objs:
        result = CheckResult(path, obj)
        if obj["kind"] in HANDLED_KINDS:
            verdict = review_object(obj, ctx, stored=False)
            result.errors, result.warnings = verdict.errors, verdict.warnings
        results.append(result)
    return results


def _load_all(paths: list[str]) -> tuple[list[tuple[str, list[RawObj]]], bool]:
    """The objects of every readable file, and whether some file was not."""
    loaded = []
    unreadable = False
    for path in paths:
        objs = _load(path, sys.stderr)
        if objs is None:
            unreadable = True
        else:
            loaded.append((path, objs))
    return loaded, unreadable


def cli_check(args: argparse.Namespace) -> int:
    """`topospread check [-o text|json] FILE...`: 0 all valid, 1 any invalid, 2 unreadable."""
    ctx = _context(args)
    loaded, unreadable = _load_all(args.files)
    results = [r for path, objs in loaded for r in check_objects(path, objs, ctx)]
    if args.output == "json":
        print(json.dumps([r.to_json() for r in results], indent=2, ensure_ascii=False))
    else:
        for result in results:
            if result.obj["kind"] in HANDLED_KINDS:
                print("\n".join(result.lines()))
    if unreadable:
        return 2
    return 0 if all(r.valid for r in results) else 1


# ---------------------------------------------------------------------------------------
# mutate


def cli_mutate(args: argparse.Namespace) -> int:
    """`topospread mutate FILE...`: the objects as the mutating webhook leaves them (YAML)."""
    ctx = _context(args)
    loaded, unreadable = _load_all(args.files)
    out: list[RawObj] = []
    for path, objs in loaded:
        for obj in objs:
            result = mutate_reviewed(obj, ctx, namespace=_namespace(obj) or "default")
            for warning in result.warnings:
                print(f"{path}: {_title(obj)}: warning: {warning}", file=sys.stderr)
            out.append(result.mutated)
    if unreadable:
        return 2
    sys.stdout.write(yaml.safe_dump_all(out, sort_keys=False, allow_unicode=True))
    return 0

