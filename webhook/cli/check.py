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
from dataclasses import replace
from typing import TextIO

from webhook.admission.foresight import foresee
from webhook.api.field import FieldError
from webhook.api.kube import HANDLED_KINDS, PodTemplate, RawObj
from webhook.cli.common import (
    CliConfig,
    Target,
    colour,
    load_target,
    node_label_keys,
    template_of,
)
from webhook.cli.inputs import Document, expand_inputs, read_documents
from webhook.cli.reports import junit, sarif
from webhook.cli.results import (
    CheckResult,
    InputProblem,
    Report,
    is_stored,
    object_namespace,
    readable,
)
from webhook.errors import InputError
from webhook.validation.advice import WARNING_IDS, Advice, did_you_mean, template_advice
from webhook.validation.fields import (
    FieldSchema,
    FieldValidation,
    field_schema,
    strict_problems,
)
from webhook.validation.rules import validate_constraints, validate_object

__all__ = ["Checker", "check_documents", "cli_check", "run_check"]

log = logging.getLogger("topospread.check")


class Checker:
    """Validates objects against one Target; holds what every object shares."""

    def __init__(
        self,
        target: Target,
        *,
        as_stored: bool | None = None,
        ignore: Iterable[str] = (),
        field_validation: FieldValidation | None = None,
    ) -> None:
        self.target = target
        self.as_stored = as_stored
        self.ignore = frozenset(ignore)
        self.node_keys = node_label_keys(target.snapshot)
        self.field_validation = field_validation or target.config.field_validation
        self.schema = self._schema()

    def _schema(self) -> FieldSchema | None:
        """The field table of the API server whose rules apply, else of the release
        modelled (a server older than the oldest table: its fields are a subset)."""
        if self.field_validation == "Ignore":
            return None
        major, minor = self.target.server_version
        version = self.target.kubernetes_version
        return field_schema(f"{major}.{minor}") or field_schema(
            f"{version.major}.{version.minor}"
        )

    @property
    def config(self) -> CliConfig:
        return self.target.config

    def check(self, doc: Document) -> CheckResult:
        obj = doc.obj
        result = CheckResult(doc, field_validation=self.field_validation)
        if self.schema is not None:
            found = strict_problems(obj, self.schema, doc.written or (lambda d: None))
            result.fields = [
                p if p.line is not None else replace(p, line=doc.line_of(p.keys)) for p in found
            ]
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
                separate_revisions=self.target.settings.separate_revisions,
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
        obj = result.obj
        namespace = object_namespace(obj) or self.target.namespace
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
    checker = Checker(
        target,
        as_stored=as_stored,
        ignore=getattr(args, "ignore", ()) or (),
        field_validation=getattr(args, "field_validation", None),
    )
    results: list[CheckResult] = []
    problems: list[InputProblem] = []
    for path in inputs:
        try:
            docs = read_documents(path, keep_keys=checker.schema is not None)
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
        out.write(junit(report, strict=args.strict))
    elif fmt == "sarif":
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
