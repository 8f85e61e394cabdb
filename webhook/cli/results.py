"""What `check` found, per object and for the whole run: the data the text, JSON,
JUnit and SARIF renderings share."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from webhook.admission.review import invalid_status, object_name, qualified_kind
from webhook.api.field import FieldError, go_quote
from webhook.api.kube import RawObj
from webhook.cli.common import (
    paint,
)
from webhook.cli.inputs import Document
from webhook.validation.advice import Advice
from webhook.validation.fields import FieldProblem, FieldValidation, decode_error

__all__ = [
    "FIELD_IDS",
    "CheckResult",
    "InputProblem",
    "Report",
    "is_stored",
    "object_namespace",
    "readable",
    "title",
]

# Fields only the API server sets: an object carrying one was read back from a cluster.
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp")

# upstream's `<constraint>[j]` path of a matchLabelKeys error (v1.34+).
_MERGED_PATH = re.compile(r"^(.*\.topologySpreadConstraints\[\d+\])\[(\d+)\]$")
# json.Marshal's HTML escapes in a rendered value, undone for people to read.
_HTML_ESCAPES = re.compile(r"(?<!\\)\\u00(3c|3e|26)")
_UNESCAPED = {"3c": "<", "3e": ">", "26": "&"}


# The ids of strict field validation's findings (warnings under Warn, SARIF rules).
FIELD_IDS = {
    "unknown-field": "a key no field of the object's type has: kube-apiserver refuses it "
    "under fieldValidation=Strict (kubectl's default) and drops it under Warn",
    "duplicate-field": "a field given twice: kube-apiserver refuses it under "
    "fieldValidation=Strict; kubectl and Helm keep the last value without a word",
}


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


def object_namespace(obj: RawObj) -> str:
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
    foresight's denial message under policy.denyUnschedulable; fields: the unknown
    and duplicate fields strict decoding finds, errors under field_validation Strict
    and warnings under Warn (Ignore finds none).
    """

    doc: Document
    checked: bool = True
    stored: bool = False
    errors: list[FieldError] = field(default_factory=list)
    warnings: list[Advice] = field(default_factory=list)
    denial: str | None = None
    skipped: str = ""
    fields: list[FieldProblem] = field(default_factory=list)
    field_validation: FieldValidation = "Strict"

    @property
    def field_errors(self) -> list[FieldProblem]:
        return self.fields if self.field_validation == "Strict" else []

    @property
    def field_warnings(self) -> list[FieldProblem]:
        return self.fields if self.field_validation == "Warn" else []

    @property
    def warning_count(self) -> int:
        return len(self.warnings) + len(self.field_warnings)

    def decode_error(self) -> str | None:
        """kube-apiserver's 400 under Strict, None when strict decoding passes."""
        return decode_error(self.obj, self.field_errors) if self.field_errors else None

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
        """None for an object that was not checked: never reported as valid (one that
        strict decoding refuses is invalid, checked or not)."""
        if self.field_errors:
            return False
        if not self.checked:
            return None
        return not self.errors and self.denial is None

    def message(self) -> str:
        """kube-apiserver's denial message (HTML escapes undone), "" when valid: the
        strict decoding error first, as the API server stops there."""
        return self.decode_error() or self.rules_message()

    def rules_message(self) -> str:
        """The validation rules' denial (or foresight's), "" when they pass."""
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

    def field_lines(self, painted: bool = False) -> list[str]:
        """Strict decoding's error (kube-apiserver's words) and a note per field with
        its line or the field meant; under Warn, one warning per field."""
        out = []
        decoded = self.decode_error()
        if decoded:
            error = paint("strict decoding error", "red", painted)
            out.append(f"{self.file}: {decoded.replace('strict decoding error', error, 1)}")
            out.extend(
                f"{self._at(p)}: {title(self.obj)}: note: {p.text()}{p.hint()}"
                for p in self.field_errors
                if p.meant or p.line is not None
            )
        warning = paint("warning", "yellow", painted)
        out.extend(
            f"{self._at(p)}: {title(self.obj)}: {warning}: {p.text()}{p.hint()} [{p.kind}-field]"
            for p in self.field_warnings
        )
        return out

    def _at(self, problem: FieldProblem) -> str:
        return f"{self.file}:{problem.line}" if problem.line is not None else self.file

    def lines(self, painted: bool = False, verbose: bool = False) -> list[str]:
        head = f"{self.file}: {title(self.obj)}"
        out = self.field_lines(painted)
        if not self.checked:
            return [*out, f"{head} skipped: {self.skipped}"] if verbose else out
        rules = self.rules_message()
        if rules:
            invalid = paint(" is invalid", "red", painted)
            out.append(f"{self.file}: " + rules.replace(" is invalid", invalid, 1))
            out.extend(f"{head}: note: {n}" for n in self.notes())
        elif verbose and not self.field_errors:
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
            "namespace": object_namespace(self.obj),
            "checked": self.checked,
            "valid": self.valid,
        }
        if self.doc.item is not None:
            out["item"] = self.doc.item
        if self.checked:
            out["validatedAs"] = "stored" if self.stored else "new"
        else:
            out["skipped"] = self.skipped
        errors.extend(
            {"field": p.path, "reason": "BadRequest", **p.to_json()} for p in self.field_errors
        )
        out["errors"] = errors
        decoded = self.decode_error()
        if decoded:
            out["decodeError"] = decoded
        if self.denial is not None:
            out["denial"] = self.denial
        out["warnings"] = [w.to_json() for w in self.warnings] + [
            {"id": f"{p.kind}-field", **p.to_json()} for p in self.field_warnings
        ]
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
        return sum(r.warning_count for r in self.results)

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
