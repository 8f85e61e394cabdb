"""The few exception classes topospread raises.

    TopospreadError
    ├── ConfigError        a config file that cannot be used (refuse to start)
    ├── InputError         a file or document the CLI cannot read (exit 2)
    └── ReviewError        a malformed AdmissionReview (HTTP 400, never a 5xx)

Rules never raise: a bad object yields FieldErrors, and the scheduling model
answers with status codes.
"""

from __future__ import annotations


class TopospreadError(Exception):
    """Base class of every error topospread raises on purpose."""


class ConfigError(TopospreadError):
    """The config file is invalid; the message says which key and why."""


class InputError(TopospreadError):
    """An input file or document cannot be read or is of the wrong shape."""


class ReviewError(TopospreadError):
    """The request body is not a usable AdmissionReview."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
