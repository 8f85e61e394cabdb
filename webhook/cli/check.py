"""`topospread check`: validate manifests for CI, as the webhook would on admission.

Each object is validated by the target API server's rules (`--server-version`):
a manifest as a CREATE (matchLabelKeys merged into a Pod's selector from v1.34), an
object carrying server state (uid, resourceVersion, creationTimestamp, status: an
export of a live cluster) as kube-apiserver validates an update of a stored object,
which merges nothing (`--as-new` / `--as-stored` decide instead). With cluster state
(`--snapshot`, or the live cluster with `--cluster`), a Pod also gets /validate's
unschedulable foresight, and the topology-key warning fires only for keys no node
carries.

Nothing is silently green: kinds without a pod template are reported as skipped,
never as valid, a summary line counts everything, and input with nothing to check
says so (and fails with --fail-empty).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from webhook.admission.review import invalid_status, object_name, qualified_kind
from webhook.api.field import FieldError, go_quote
from webhook.api.kube import HANDLED_KINDS, PodTemplate, RawObj
from webhook.cli.common import (
    CliConfig,
    Target,
    colour,
    load_target,
    node_label_keys,
    paint,
    template_of,
)
from webhook.cli.inputs import Document, expand_inputs, read_documents
from webhook.errors import InputError
from webhook.validation.advice import WARNING_IDS, Advice, did_you_mean, template_advice

__all__ = [
    "CheckResult",
    "Checker",
    "InputProblem",
    "Report",
    "check_documents",
    "cli_check",
    "is_stored",
    "run_check",
]

log = logging.getLogger("topospread.check")

# Fields only the API server sets: an object carrying one was read back from a cluster.
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp")

# upstream's `<constraint>[j]` path of a matchLabelKeys error (v1.34+).
_MERGED_PATH = re.compile(r"^(.*\.topologySpreadConstraints\[\d+\])\[(\d+)\]$")
# json.Marshal's HTML escapes in a rendered value, undone for people to read.
_HTML_ESCAPES = re.compile(r"(?<!\\)\\u00(3c|3e|26)")
_UNESCAPED = {"3c": "<", "3e": ">", "26": "&"}


def is_stored(obj: RawObj) -> bool:
    """True when the object carries state only kube-apiserver writes (it was exported)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and any(meta.get(k) for k in SERVER_FIELDS):
        return True
    return obj.get("status") is not None


def readable(text: str) -> str:
    """`"\\u003cinteger\\u003e"` shown as written: `"<integer>"`."""
    return _HTML_ESCAPES.sub(lambda m: _UNESCAPED[m.group(1)], text)


def _group(obj: RawObj) -> str:
    api_version = obj.get("apiVersion")
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def _namespace(obj: RawObj) -> str:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) else ""


def title(obj: RawObj) -> str:
    """`Deployment.apps "web"`, as kube-apiserver names an object."""
    return f"{qualified_kind(_group(obj), str(obj.get('kind')))} {go_quote(object_name(obj))}"


@dataclass
class CheckResult:
    """The verdict on one object.

    checked: False when the kind has no pod template topospread knows (`skipped`
    says why); stored: validated as a stored object rather than a create; denial:
    foresight's denial message under policy.denyUnschedulable.
    """

    doc: Document
    checked: bool = True
    stored: bool = False
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[Advice] = field(default_factory=list)
    denial: str | None = None
    skipped: str = ""

    @property
    def obj(self) -> RawObj:
        return self.doc.obj

    @property
    def file(self) -> str:
        return self.doc.source

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind"))

    @property
    def name(self) -> str:
        return object_name(self.obj)

    @property
    def valid(self) -> bool | None:
        """None for an object that was not checked: never reported as valid."""
        if not self.checked:
            return None
        return not self.errors and self.denial is None

    def message(self) -> str:
        """kube-apiserver's denial message (HTML escapes undone), "" when valid."""
        if self.errors:
            status = invalid_status(_group(self.obj), self.kind, self.name, self.errors)
            return readable(str(status["message"]))
        return self.denial or ""

    def notes(self) -> list[str]:
        """Which matchLabelKeys entry each upstream `[i][j]` error path is."""
        out = []
        for e in self.errors:
            entry = match_label_keys_entry(e.field)
            if entry:
                out.append(f"{e.field} is {entry}")
        return out

    def lines(self, painted: bool = False, verbose: bool = False) -> list[str]:
        head = f"{self.file}: {title(self.obj)}"
        if not self.checked:
            return [f"{head} skipped: {self.skipped}"] if verbose else []
        out = []
        if not self.valid:
            out.append(
                f"{self.file}: "
                + self.message().replace(" is invalid", paint(" is invalid", "red", painted), 1)
            )
            out.extend(f"{head}: note: {n}" for n in self.notes())
        elif verbose:
            state = "stored object" if self.stored else "new object"
            out.append(f"{head} is {paint('valid', 'green', painted)} (as a {state})")
        warning = paint("warning", "yellow", painted)
        out.extend(f"{head}: {warning}: {readable(w.text())} [{w.id}]" for w in self.warnings)
        return out

    def to_json(self) -> dict[str, Any]:
        errors = []
        for e in self.errors:
            entry: dict[str, Any] = {
                "field": e.field,
                "reason": e.type.reason,
                "message": readable(e.body()),
            }
            mlk = match_label_keys_entry(e.field)
            if mlk:
                entry["matchLabelKeysField"] = mlk
            errors.append(entry)
        out: dict[str, Any] = {
            "file": self.file,
            "document": self.doc.index,
            "line": self.doc.line,
            "kind": self.kind,
            "name": self.name,
            "namespace": _namespace(self.obj),
            "checked": self.checked,
            "valid": self.valid,
        }
        if self.doc.item is not None:
            out["item"] = self.doc.item
        if self.checked:
            out["validatedAs"] = "stored" if self.stored else "new"
        else:
            out["skipped"] = self.skipped
        out["errors"] = errors
        if self.denial is not None:
            out["denial"] = self.denial
        out["warnings"] = [w.to_json() for w in self.warnings]
        return out


def match_label_keys_entry(path: str) -> str | None:
    """`spec.tsc[0].matchLabelKeys[1]` for upstream's `spec.tsc[0][1]`, else None."""
    m = _MERGED_PATH.match(path)
    return f"{m.group(1)}.matchLabelKeys[{m.group(2)}]" if m else None


@dataclass(frozen=True)
class InputProblem:
    """An input that could not be read as Kubernetes objects."""

    source: str
    message: str


@dataclass
class Report:
    """Everything one `check` run found."""

    inputs: list[str]
    results: list[CheckResult]
    problems: list[InputProblem]

    @property
    def checked(self) -> list[CheckResult]:
        return [r for r in self.results if r.checked]

    @property
    def invalid(self) -> list[CheckResult]:
        return [r for r in self.results if r.valid is False]

    @property
    def warning_count(self) -> int:
        return sum(len(r.warnings) for r in self.results)

    @property
    def skipped(self) -> list[CheckResult]:
        return [r for r in self.results if not r.checked]

    def summary(self) -> str:
        files = len(self.inputs)
        objects = len(self.results)
        parts = [
            f"{len(self.checked)} checked",
            f"{len(self.invalid)} invalid",
            f"{self.warning_count} warning{'s' if self.warning_count != 1 else ''}",
            f"{len(self.skipped)} skipped",
        ]
        if self.problems:
            parts.append(f"{len(self.problems)} unreadable")
        return (
            f"{files} file{'s' if files != 1 else ''}, "
            f"{objects} object{'s' if objects != 1 else ''}: " + ", ".join(parts)
        )

    def empty_message(self) -> str | None:
        """Why nothing was checked, None when something was."""
        if self.checked or (self.problems and not self.results):
            return None
        where = ", ".join(self.inputs) if len(self.inputs) <= 3 else f"{len(self.inputs)} files"
        if not self.results:
            return (
                f"no objects in {where or 'the input'}: nothing was checked "
                "(an empty render, e.g. from a failed `helm template`?)"
            )
        kinds = sorted({r.kind for r in self.results})
        return (
            f"nothing to check in {where}: {len(self.results)} object(s) of kinds without a "
            f"pod template ({', '.join(kinds)}) were skipped"
        )


class Checker:
    """Validates objects against one Target; holds what every object shares."""

    def __init__(
        self,
        target: Target,
        *,
        as_stored: bool | None = None,
        ignore: Iterable[str] = (),
    ) -> None:
        self.target = target
        self.as_stored = as_stored
        self.ignore = frozenset(ignore)
        self.node_keys = node_label_keys(target.snapshot)

    @property
    def config(self) -> CliConfig:
        return self.target.config

    def check(self, doc: Document) -> CheckResult:
        obj = doc.obj
        result = CheckResult(doc)
        kind = result.kind
        custom = self.config.custom(obj)
        if kind not in HANDLED_KINDS and custom is None:
            result.checked = False
            result.skipped = f"kind {kind} has no pod template topospread knows"
            return result
        tpl = template_of(obj, self.config)
        if tpl is None:
            result.checked = False
            result.skipped = "its pod template is missing or not an object"
            return result
        stored = self.as_stored if self.as_stored is not None else is_stored(obj)
        result.stored = stored
        try:
            result.errors = self._errors(obj, tpl, stored, custom is not None)
            result.warnings = template_advice(
                obj,
                tpl,
                topology_keys=self.config.topology_keys,
                node_label_keys=self.node_keys,
                server_version=self.target.server_version,
                controller_labels=custom.pod_labels if custom is not None else None,
            )
        except Exception:  # noqa: BLE001 - one bad object must not stop the run
            log.exception("checking %s %r failed", kind, result.name)
            result.warnings = [
                Advice(
                    "internal-error",
                    tpl.spec_path + ".topologySpreadConstraints",
                    "not checked because of an internal error in topospread",
                )
            ]
        if kind == "Pod" and not stored and not result.errors and self.target.snapshot:
            self._foresee(result)
        result.warnings = [w for w in result.warnings if w.id not in self.ignore]
        return result

    def _errors(
        self, obj: RawObj, tpl: PodTemplate, stored: bool, custom: bool
    ) -> list[FieldError]:
        from webhook.validation.rules import validate_constraints, validate_object

        version = self.target.server_version
        if custom:
            constraints = tpl.spec.get("topologySpreadConstraints")
            return validate_constraints(
                constraints,
                tpl.spec_path + ".topologySpreadConstraints",
                old_constraints=constraints if stored else None,
                server_version=version,
            )
        # A stored object is validated as an update of itself: kube-apiserver merges
        # matchLabelKeys only at create, and the stored spec relaxes what it relaxes.
        return validate_object(obj, old=obj if stored else None, server_version=version)

    def _foresee(self, result: CheckResult) -> None:
        from webhook.admission.foresight import foresee

        obj = result.obj
        namespace = _namespace(obj) or self.target.namespace
        seen = foresee(
            obj,
            self.target.snapshot,
            self.target.settings,
            name=result.name,
            namespace=namespace,
        )
        for text in seen.warnings:
            fld, _, message = text.partition(": ")
            result.warnings.append(Advice("unschedulable", fld, message))
        if seen.denial is not None:
            result.denial = readable(str(seen.denial.get("message", "")))


def check_documents(docs: Iterable[Document], checker: Checker) -> list[CheckResult]:
    return [checker.check(d) for d in docs]


def run_check(args: argparse.Namespace, target: Target, err: TextIO) -> Report:
    """Read every input, check every object; unreadable inputs become problems."""
    inputs = expand_inputs(args)
    as_stored = {"new": False, "stored": True}.get(getattr(args, "validate_as", "auto"))
    checker = Checker(target, as_stored=as_stored, ignore=getattr(args, "ignore", ()) or ())
    results: list[CheckResult] = []
    problems: list[InputProblem] = []
    for path in inputs:
        try:
            docs = read_documents(path)
        except InputError as exc:
            problems.append(InputProblem("<stdin>" if path == "-" else path, str(exc)))
            continue
        results.extend(check_documents(docs, checker))
    return Report(["<stdin>" if p == "-" else p for p in inputs], results, problems)


def ignore_ids(values: list[str]) -> list[str]:
    """The ids of every --ignore (comma-separated or repeated); InputError on an unknown one."""
    ids = [x for v in values for x in re.split(r"[\s,]+", v) if x]
    for i in ids:
        if i not in WARNING_IDS:
            near = did_you_mean(i, WARNING_IDS)
            hint = f"; did you mean {near}?" if near else ""
            raise InputError(
                f"--ignore: unknown warning id {i!r}{hint} (ids: {', '.join(WARNING_IDS)})"
            )
    return ids


def cli_check(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Exit 0 all valid, 1 any invalid (or a warning with --strict), 2 input, usage or
    cluster errors, and nothing checked with --fail-empty."""
    out = out or sys.stdout
    err = err or sys.stderr
    args.ignore = ignore_ids(getattr(args, "ignore", None) or [])
    target = load_target(args, err=err)
    report = run_check(args, target, err)
    fmt = getattr(args, "output", "text")
    painted = colour(out) if fmt == "text" else False
    me = f"{getattr(args, 'prog', 'topospread')} check"
    for problem in report.problems:
        print(f"{me}: {problem.message}", file=err)
    if fmt == "json":
        out.write(json.dumps([r.to_json() for r in report.results], indent=2, ensure_ascii=False))
        out.write("\n")
    elif fmt == "junit":
        from webhook.cli.reports import junit

        out.write(junit(report, strict=args.strict))
    elif fmt == "sarif":
        from webhook.cli.reports import sarif

        out.write(sarif(report))
    else:
        for result in report.results:
            for line in result.lines(painted, verbose=getattr(args, "verbose", False)):
                print(line, file=out)
    empty = report.empty_message()
    if empty:
        print(f"{me}: warning: {empty}", file=err)
    summary = report.summary()
    if fmt == "text":
        print(summary, file=out)
    else:
        print(f"{me}: {summary}", file=err)
    if report.problems or (empty and getattr(args, "fail_empty", False)):
        return 2
    if report.invalid:
        return 1
    if getattr(args, "strict", False) and report.warning_count:
        return 1
    return 0
