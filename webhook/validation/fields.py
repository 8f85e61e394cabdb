"""Unknown and duplicate fields, found as kube-apiserver's strict decoding finds them.

kube-apiserver decodes a request body into the Go types of its release
(sigs.k8s.io/json, case-sensitive). Under `fieldValidation=Strict` (what kubectl
sends by default) a key no type field has, or a field given twice, refuses the
object: `strict decoding error: unknown field "PATH", duplicate field "PATH"`; under
`Warn` (the API server's own default) each becomes a warning with the same words;
under `Ignore` nothing is said and the key is dropped.

The walk follows upstream's decoder: keys in the order written; an unknown key is
reported and not looked into; a duplicate of a known field or of a map key is
reported and its value decoded again; a value of another JSON type than the field's
is not looked into (the decoder fails on it with a type error, not a strict one);
the same report at the same path is made once; at most 100 are kept. CAVEAT: a
parsed object keeps the last value of a duplicate field (as kubectl does), so what
upstream would also find inside the earlier values is not reported.

The field tables (webhook/data/fields/<release>.json) are generated from upstream's
own OpenAPI of each release (tools/field_schemas.py). Pure: raw JSON in, problems out.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

from webhook.api.field import go_quote
from webhook.api.kube import RawObj
from webhook.validation.advice import did_you_mean

__all__ = [
    "FIELD_VALIDATION",
    "MAX_STRICT_ERRORS",
    "FieldProblem",
    "FieldSchema",
    "FieldValidation",
    "KeyOrder",
    "decode_error",
    "field_schema",
    "parse_field_validation",
    "strict_problems",
]

FieldValidation = Literal["Strict", "Warn", "Ignore"]
FIELD_VALIDATION: tuple[FieldValidation, ...] = ("Strict", "Warn", "Ignore")

# sigs.k8s.io/json saveStrictError: "prevent excessive numbers of accumulated errors".
MAX_STRICT_ERRORS = 100

_NO_LINES = itertools.repeat(None)

# A mapping's keys as written, duplicates included, each with its 1-based line (None
# when unknown): what a parser that keeps the source saw, for a dict it built.
KeyOrder = Sequence[tuple[str, int | None]]


def parse_field_validation(value: str) -> FieldValidation | None:
    """`Strict`, `Warn` or `Ignore` (any case, as kubectl's --validate), None otherwise."""
    for known in FIELD_VALIDATION:
        if value.lower() == known.lower():
            return known
    return None


@dataclass(frozen=True)
class FieldProblem:
    """One strict decoding error.

    kind: "unknown" or "duplicate"; path: upstream's path (dotted, `[i]` for list
    items); meant: the field most probably meant, relative to the object the key is
    in (ours, never part of upstream's text); line: where the key is written, when
    the input kept it.
    """

    kind: Literal["unknown", "duplicate"]
    path: str
    meant: str | None = None
    line: int | None = None
    # The path's keys and list indexes, from the object's root (to find the line).
    keys: tuple[str | int, ...] = field(default=(), compare=False, repr=False)

    def text(self) -> str:
        """kube-apiserver's words: `unknown field "PATH"` (also its warning's text)."""
        return f"{self.kind} field {go_quote(self.path)}"

    def hint(self) -> str:
        """What we add after upstream's words: ` (did you mean "X"?)`, or ""."""
        return f" (did you mean {go_quote(self.meant)}?)" if self.meant else ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.path, "message": self.text()}
        if self.meant:
            out["didYouMean"] = self.meant
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass(frozen=True)
class FieldSchema:
    """One release's field table: each kind's root type, each type's fields and shapes
    (tools/field_schemas.py says what a shape string means)."""

    release: str
    kinds: Mapping[str, str]
    types: Mapping[str, Mapping[str, str]]

    def root(self, obj: RawObj) -> str | None:
        """The type an object decodes into, None for an apiVersion and kind not listed."""
        return self.kinds.get(f"{obj.get('apiVersion')} {obj.get('kind')}")


@cache
def field_schema(release: str) -> FieldSchema | None:
    """The field table of a release ("1.37"), None when none is shipped."""
    try:
        text = resources.files("webhook").joinpath(f"data/fields/{release}.json").read_text(
            encoding="utf-8"
        )
    except FileNotFoundError:
        return None
    data = json.loads(text)
    return FieldSchema(data["release"], data["kinds"], data["types"])


def _meant(key: str, fields: Mapping[str, str], schema: FieldSchema) -> str | None:
    """The field a key was probably meant to be: a sibling that differs only in case,
    the one object-valued sibling that has the key as a field (a key indented one
    level too little: `matchLabels` beside `labelSelector`, kubernetes#97687), or a
    close sibling."""
    folded = [f for f in fields if f.lower() == key.lower()]
    if folded:
        return folded[0]
    parents = [f for f, shape in fields.items() if key in schema.types.get(shape, ())]
    if len(parents) == 1:
        return f"{parents[0]}.{key}"
    return did_you_mean(key, fields)


def strict_problems(
    obj: RawObj,
    schema: FieldSchema,
    written: Callable[[dict[str, Any]], KeyOrder | None] = lambda d: None,
) -> list[FieldProblem]:
    """Every unknown and duplicate field of an object, in upstream's order and words;
    [] when its apiVersion and kind are not in the table. `written(d)` gives the keys
    of a dict as the input wrote them (duplicates and lines), None when not kept."""
    root = schema.root(obj)
    if root is None:
        return []
    found: list[FieldProblem] = []
    seen: set[tuple[str, str]] = set()

    def report(kind: Literal["unknown", "duplicate"], path: str, **more: Any) -> None:
        if (kind, path) in seen or len(found) >= MAX_STRICT_ERRORS:
            return
        seen.add((kind, path))
        found.append(FieldProblem(kind, path, **more))

    def keys(d: dict[str, Any]) -> Iterable[tuple[Any, int | None]]:
        order = written(d)
        return order if order is not None else zip(d, _NO_LINES, strict=False)

    def named(key: Any) -> str:
        """A key as JSON names it (YAML allows others: `true:`, `80:`)."""
        if isinstance(key, str):
            return key
        if isinstance(key, bool):
            return "true" if key else "false"
        return "null" if key is None else str(key)

    def walk(value: Any, shape: str, path: str, at: tuple[str | int, ...]) -> None:
        if not shape:
            return
        if shape[0] == "[":
            if isinstance(value, list):
                for i, item in enumerate(value):
                    walk(item, shape[1:], f"{path}[{i}]", (*at, i))
            return
        if not isinstance(value, dict):
            return
        prefix = f"{path}." if path else ""
        done: set[str] = set()
        if shape[0] == "{":
            for raw, line in keys(value):
                key = named(raw)
                if key in done:
                    report("duplicate", prefix + key, line=line, keys=(*at, key))
                done.add(key)
                walk(value.get(raw), shape[1:], prefix + key, (*at, key))
            return
        fields = schema.types.get(shape, {})
        for raw, line in keys(value):
            key = named(raw)
            field = fields.get(key)
            if field is None:
                meant = _meant(key, fields, schema)
                report("unknown", prefix + key, meant=meant, line=line, keys=(*at, key))
                continue
            if key in done:
                report("duplicate", prefix + key, line=line, keys=(*at, key))
            done.add(key)
            if field:
                walk(value.get(raw), field, prefix + key, (*at, key))

    walk(obj, root, "", ())
    return found


def decode_error(obj: RawObj, problems: Sequence[FieldProblem]) -> str:
    """kube-apiserver's whole answer under Strict (a 400 BadRequest), as kubectl prints
    it after `Error from server (BadRequest): error when creating "FILE": `."""
    api_version = obj.get("apiVersion")
    version = api_version.rpartition("/")[2] if isinstance(api_version, str) else ""
    kind = obj.get("kind")
    errors = ", ".join(p.text() for p in problems)
    return (
        f"{kind} in version {go_quote(version)} cannot be handled as a {kind}: "
        f"strict decoding error: {errors}"
    )
