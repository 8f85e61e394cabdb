"""Structured logs: one JSON object per line on stderr.

Every record carries `ts` (RFC 3339, UTC, milliseconds), `level`, `logger`, `pid` and
`msg`; fields given as `extra={"fields": {...}}` are merged in, and a traceback goes
into `exc`. Each answered AdmissionReview is one info line (log_review): uid, kind,
namespace, name, operation, endpoint, decision, duration_ms, warnings (a count), HTTP
status, and for a denial the field paths of its causes. Object bodies, user info and
anything read from Secrets are never logged. gunicorn's own messages go through the
same formatter (dict_config); its access log stays off.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import logging.config
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.admission.handlers import Answer

__all__ = [
    "JSONFormatter",
    "REQUEST_LOGGER",
    "configure",
    "dict_config",
    "log_review",
    "render_review_line",
]

REQUEST_LOGGER = "topospread.request"

# Causes listed in a denial line; the count is always given.
MAX_LOGGED_FIELDS = 10
# A malformed review's error message may quote a value from the body: keep it short.
MAX_ERROR_CHARS = 200

_request_log = logging.getLogger(REQUEST_LOGGER)


class JSONFormatter(logging.Formatter):
    """A logging.Formatter writing one compact JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        ts = dt.datetime.fromtimestamp(record.created, tz=dt.UTC)
        doc: dict[str, Any] = {
            "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                doc.setdefault(key, value)
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exc"] = record.exc_text
        return json.dumps(doc, ensure_ascii=False, default=str, separators=(",", ":"))


def dict_config(level: str = "INFO") -> dict[str, Any]:
    """A logging.config.dictConfig document: everything as JSON on stderr, gunicorn's
    error log included (gunicorn's `logconfig_dict`), gunicorn's access log dropped."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": JSONFormatter}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level, "handlers": ["json"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": [], "propagate": True},
            "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": False},
        },
    }


def configure(level: str = "INFO") -> None:
    """Send every log record to stderr as JSON lines; request lines are then written
    straight to stderr (see log_review)."""
    global _direct
    logging.config.dictConfig(dict_config(level))
    _direct = True


# Set by configure(): the request logger's records would go to the JSON handler on
# stderr, so log_review renders the very same line itself and writes it in one call,
# without a LogRecord, the handler's lock and the formatter (tests capturing records
# leave it off).
_direct = False
_pid = os.getpid()
# The second of the last request line and its rendering: "2024-05-01T12:00:00".
_second = -1
_second_text = ""


def _after_fork() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork)

_encode = json.JSONEncoder(ensure_ascii=False, default=str, separators=(",", ":")).encode


def _timestamp(now: float) -> str:
    """JSONFormatter's `ts` for the time `now` (milliseconds, UTC)."""
    global _second, _second_text
    second = int(now)
    if second != _second:
        _second_text = dt.datetime.fromtimestamp(second, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = second
    millis = int((now - second) * 1000)
    return f"{_second_text}.{millis:03d}Z"


def render_review_line(fields: dict[str, Any], now: float) -> bytes:
    """The request line JSONFormatter would write for these fields, newline included."""
    doc: dict[str, Any] = {
        "ts": _timestamp(now),
        "level": "info",
        "logger": REQUEST_LOGGER,
        "pid": _pid,
        "msg": "admission review",
    }
    for key, value in fields.items():
        doc.setdefault(key, value)
    return (_encode(doc) + "\n").encode("utf-8", "backslashreplace")


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(2, view)
        view = view[written:]


def review_fields(endpoint: str, answer: Answer, seconds: float) -> dict[str, Any]:
    """The fields of one request line (see the module docstring)."""
    review = answer.review
    fields: dict[str, Any] = {
        "endpoint": endpoint,
        "decision": answer.decision,
        "status": answer.status,
        "duration_ms": round(seconds * 1000, 3),
    }
    if review is None:
        message = answer.doc.get("message")
        fields["error"] = str(message)[:MAX_ERROR_CHARS] if message else ""
        return fields
    from webhook.admission.review import object_name
    from webhook.server.metrics import denial_causes

    response = answer.doc.get("response")
    response = response if isinstance(response, dict) else {}
    fields.update(
        uid=review.uid,
        kind=review.kind,
        namespace=review.namespace,
        name=object_name(review.obj, review.name),
        operation=review.operation,
        dry_run=review.dry_run,
        warnings=len(response.get("warnings") or []),
    )
    if response.get("allowed") is False:
        causes = list(denial_causes(response))
        fields["causes"] = len(causes)
        fields["fields"] = [field for field, _ in causes[:MAX_LOGGED_FIELDS]]
    return fields


def log_review(endpoint: str, answer: Answer, seconds: float) -> None:
    """Log one answered AdmissionReview as a single info line."""
    if not _request_log.isEnabledFor(logging.INFO):
        return
    fields = review_fields(endpoint, answer, seconds)
    if _direct:
        # stderr gone: as logging would, never fail the request for its log line.
        with contextlib.suppress(OSError):
            _write(render_review_line(fields, time.time()))
        return
    _request_log.info("admission review", extra={"fields": fields})


def level_from_env(default: str = "INFO") -> str:
    """The level TOPOSPREAD_LOG_LEVEL names (debug, info, warning, error), else default."""
    value = os.environ.get("TOPOSPREAD_LOG_LEVEL", default).upper()
    return value if value in ("DEBUG", "INFO", "WARNING", "ERROR") else default
