"""Field errors in the shape of apimachinery's field.ErrorList.

`FieldError.error()` renders exactly as kube-apiserver does
("spec.x: Invalid value: 0: must be greater than zero"), and `cause()` gives
the StatusCause a denial lists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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


def render_value(value: Any) -> str:
    """Render a bad value as Go's field.Error does (%#v-ish for strings, %v otherwise)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[]string{" + ", ".join(render_value(v) for v in value) + "}"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class FieldError:
    """One field error: type, dotted field path, the bad value (or OMIT) and detail."""

    type: ErrorType
    field: str
    bad_value: Any = field(default=OMIT, compare=False)
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
    detail = "supported values: " + ", ".join(json.dumps(v) for v in valid) if valid else ""
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, detail)


def too_long(path: str, value: Any, max_length: int) -> FieldError:
    return FieldError(ErrorType.TOO_LONG, path, value, f"must have at most {max_length} bytes")


def aggregate(errors: list[FieldError]) -> str:
    """Render a list of errors as utilerrors.NewAggregate(...).Error() does."""
    if len(errors) == 1:
        return errors[0].error()
    return "[" + ", ".join(e.error() for e in errors) + "]"
