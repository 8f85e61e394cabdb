"""`check -o junit` and `check -o sarif`: the formats CI systems read.

JUnit XML: one testsuite per input file, one testcase per object; an invalid object
is a failure, a skipped kind is skipped, an unreadable file an error; warnings go to
the testcase's system-out (failures with --strict). SARIF 2.1.0: one run, one result
per error (level error) and per warning (level warning), each at its file and line,
with the warning ids (and `invalid`, `unschedulable-denied`, `unreadable-input`,
`unknown-field`, `duplicate-field`) as rules, for code-scanning annotations; a field
strict decoding refuses is at its own line where the input kept it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET  # nosec B405 - only builds XML, never parses any
from pathlib import Path
from typing import Any

from webhook.cli.results import FIELD_IDS, CheckResult, Report, readable, title
from webhook.cli.version import version
from webhook.validation.advice import WARNING_IDS

__all__ = ["junit", "sarif"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

ERROR_RULES = {
    "invalid": "kube-apiserver would refuse the object (topologySpreadConstraints)",
    "unschedulable-denied": "the webhook would deny the pod: no node fits its constraints",
    "unreadable-input": "the input could not be read as Kubernetes objects",
}


def _version() -> str:
    return version()


def _case_name(r: CheckResult) -> str:
    ns = (
        r.obj.get("metadata", {}).get("namespace")
        if isinstance(r.obj.get("metadata"), dict)
        else None
    )
    where = f" (namespace {ns})" if isinstance(ns, str) and ns else ""
    return f"{title(r.obj)}{where}"


def junit(report: Report, *, strict: bool = False) -> str:
    """The report as JUnit XML (the schema Jenkins, GitLab and GitHub reporters read)."""
    root = ET.Element("testsuites", name="topospread check")
    by_file: dict[str, list[CheckResult]] = {f: [] for f in report.inputs}
    for r in report.results:
        by_file.setdefault(r.file, []).append(r)
    problems = {p.source: p for p in report.problems}
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for source, results in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=source)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        problem = problems.get(source)
        if problem is not None:
            case = ET.SubElement(suite, "testcase", classname=source, name="read")
            ET.SubElement(case, "error", type="unreadable-input", message=problem.message)
            counts["tests"] += 1
            counts["errors"] += 1
        for r in results:
            attrs = {"classname": source, "name": _case_name(r), "file": source}
            if r.doc.line is not None:
                attrs["line"] = str(r.doc.line)
            case = ET.SubElement(suite, "testcase", attrs)
            counts["tests"] += 1
            if not r.checked and not r.field_errors:
                ET.SubElement(case, "skipped", message=r.skipped)
                counts["skipped"] += 1
                continue
            warnings = [f"{p.text()}{p.hint()} [{p.kind}-field]" for p in r.field_warnings]
            warnings += [f"{w.text()} [{w.id}]" for w in r.warnings]
            if r.valid is False:
                failure = ET.SubElement(case, "failure", type="invalid", message=r.message())
                hints = [f"{p.text()}{p.hint()}" for p in r.field_errors if p.meant]
                rules = [r.rules_message()] if r.field_errors and r.rules_message() else []
                failure.text = "\n".join([r.message(), *hints, *rules, *r.notes()])
                counts["failures"] += 1
            elif strict and warnings:
                failure = ET.SubElement(
                    case, "failure", type="warning", message=f"{len(warnings)} warning(s)"
                )
                failure.text = "\n".join(warnings)
                counts["failures"] += 1
            if warnings:
                ET.SubElement(case, "system-out").text = "\n".join(warnings)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _uri(source: str) -> str:
    if source == "<stdin>":
        return "stdin"
    path = Path(source)
    if path.is_absolute():
        return path.as_uri()
    return path.as_posix()


def _location(source: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(source)}}
    if line is not None:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def sarif(report: Report) -> str:
    """The report as a SARIF 2.1.0 log (GitHub code scanning and friends)."""
    rules = [
        {"id": rule, "shortDescription": {"text": text}, "defaultConfiguration": {"level": "error"}}
        for rule, text in ERROR_RULES.items()
    ] + [
        {
            "id": rule,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": "warning"},
        }
        for rule, text in {**FIELD_IDS, **WARNING_IDS}.items()
    ]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []

    def add(rule: str, level: str, text: str, source: str, line: int | None) -> None:
        results.append(
            {
                "ruleId": rule,
                "ruleIndex": index[rule],
                "level": level,
                "message": {"text": text},
                "locations": [_location(source, line)],
            }
        )

    for problem in report.problems:
        add("unreadable-input", "error", problem.message, problem.source, None)
    for r in report.results:
        for level, found in (("error", r.field_errors), ("warning", r.field_warnings)):
            for p in found:
                text = f"{title(r.obj)}: {p.text()}{p.hint()}"
                add(f"{p.kind}-field", level, text, r.file, p.line or r.doc.line)
        if not r.checked:
            continue
        for e in r.errors:
            add("invalid", "error", f"{title(r.obj)}: {readable(e.error())}", r.file, r.doc.line)
        if r.denial is not None:
            add("unschedulable-denied", "error", r.denial, r.file, r.doc.line)
        for w in r.warnings:
            rule = w.id if w.id in index else "internal-error"
            add(rule, "warning", f"{title(r.obj)}: {readable(w.text())}", r.file, r.doc.line)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "topospread",
                        "version": _version(),
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
