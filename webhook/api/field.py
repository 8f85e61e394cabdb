"""Field errors in the shape of apimachinery's field.ErrorList.

`FieldError.error()` renders exactly as kube-apiserver does
("spec.x: Invalid value: 0: must be greater than zero"), and `cause()` gives
the StatusCause a denial lists.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from enum import Enum
from typing import Any

# Sentinel for errors that carry no value (Required, Forbidden, TooLong without value).
OMIT: Any = object()


class ErrorType(Enum):
    """apimachinery field.ErrorType: (cause reason, rendered prefix)."""

    NOT_FOUND = ("FieldValueNotFound", "Not found")
    REQUIRED = ("FieldValueRequired", "Required value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    INTERNAL = ("InternalError", "Internal error")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")

    @property
    def reason(self) -> str:
        return self.value[0]

    @property
    def label(self) -> str:
        return self.value[1]


def _scrub(text: str) -> str:
    """Lone surrogates cannot come out of Go's JSON decoder: it turns them into U+FFFD."""
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def _go_printable(ch: str) -> bool:
    # Go's unicode.IsPrint: categories L, M, N, P, S and the ASCII space.
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


_GO_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(text: str) -> str:
    """Quote a string as Go's strconv.Quote (the %q verb) does."""
    out = ['"']
    for ch in _scrub(text):
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif _go_printable(ch):
            out.append(ch)
        elif ch in _GO_SHORT_ESCAPES:
            out.append(_GO_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _dumps(value: Any, sort_keys: bool) -> str:
    return json.dumps(
        value, ensure_ascii=False, sort_keys=sort_keys, separators=(",", ":"), default=str
    )


def go_json(value: Any) -> str:
    """Render a value as Go's json.Marshal does: compact, map keys sorted, HTML-safe escapes."""
    try:
        try:
            text = _dumps(value, sort_keys=True)
        except TypeError:  # keys of mixed types (from YAML) cannot be sorted
            text = _dumps(value, sort_keys=False)
    except (RecursionError, TypeError, ValueError):
        # Absurdly deep or self-referencing (YAML anchors) input: show its shape, never fail.
        text = "[...]" if isinstance(value, list) else "{...}" if isinstance(value, dict) else "..."
    text = _scrub(text)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


@dataclass(frozen=True)
class JSONValue:
    """A bad value that upstream renders through json.Marshal (named string types, pointers,
    lists and maps since v1.34), as opposed to a plain Go string rendered with %q."""

    value: Any


def render_value(value: Any) -> str:
    """Render a bad value as apimachinery's field.Error.ErrorBody does.

    Plain strings use %q; ints, floats and bools use %v; anything else goes
    through json.Marshal (wrap a string in JSONValue to get that rendering).
    """
    if isinstance(value, JSONValue):
        return go_json(value.value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return go_json(value)


@dataclass(frozen=True)
class FieldError:
    """One field error: type, dotted field path, the bad value (or OMIT) and detail."""

    type: ErrorType
    field: str
    bad_value: Any = dataclass_field(default=OMIT, compare=False)
    detail: str = ""

    def body(self) -> str:
        """The error text without the field path, as StatusCause.message carries it."""
        text = self.type.label
        if self.bad_value is not OMIT and self.type not in (
            ErrorType.REQUIRED,
            ErrorType.FORBIDDEN,
            ErrorType.TOO_LONG,
            ErrorType.INTERNAL,
        ):
            text += ": " + render_value(self.bad_value)
        if self.detail:
            text += ": " + self.detail
        return text

    def error(self) -> str:
        """The full rendered error, as kube-apiserver prints it."""
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": self.type.reason, "message": self.body(), "field": self.field}


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, OMIT, detail)


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value, "")


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, OMIT, detail)


def not_supported(path: str, value: Any, valid: list[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, detail)


def too_long(path: str, value: Any, max_length: int) -> FieldError:
    unit = "byte" if max_length == 1 else "bytes"
    return FieldError(ErrorType.TOO_LONG, path, value, f"may not be more than {max_length} {unit}")


def aggregate(errors: list[FieldError]) -> str:
    """Render a list of errors as ErrorList.ToAggregate().Error() does (identical messages once)."""
    messages = list(dict.fromkeys(e.error() for e in errors))
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"
