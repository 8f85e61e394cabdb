"""The per-request shortcuts give what the long ways give: the request line written
directly is the formatter's line, the depth bound read from the bytes is the depth."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from webhook.admission.review import MAX_DEPTH, _too_deep
from webhook.server.logs import REQUEST_LOGGER, JSONFormatter, render_review_line

FIELDS: list[dict[str, Any]] = [
    {"endpoint": "validate", "decision": "allowed", "status": 200, "duration_ms": 0.412},
    {"endpoint": "mutate", "decision": "denied", "uid": "ü-\"quoted\"\n", "causes": 2,
     "fields": ["spec.a", "spec.b"], "dry_run": False, "msg": "cannot override"},
    {"endpoint": "validate", "decision": "malformed", "status": 400, "error": "x" * 200},
]


@pytest.mark.parametrize("fields", FIELDS)
def test_direct_request_line_is_the_formatters_line(fields: dict[str, Any]) -> None:
    record = logging.LogRecord(REQUEST_LOGGER, logging.INFO, __file__, 1, "admission review",
                               None, None)
    record.fields = fields
    record.created = 1_700_000_000.25
    expected = JSONFormatter().format(record)
    line = render_review_line(fields, record.created).decode()
    assert line.endswith("\n") and "\n" not in line[:-1]
    got, want = json.loads(line), json.loads(expected)
    assert got.pop("pid") == want.pop("pid")
    assert list(got) == list(want)
    assert got == want


def depth_of(doc: Any) -> int:
    """The nesting depth by walking the parsed document (the root is level 1)."""
    if isinstance(doc, dict):
        return 1 + max(map(depth_of, doc.values()), default=0)
    if isinstance(doc, list):
        return 1 + max(map(depth_of, doc), default=0)
    return 0


def nested(depth: int, *, strings: bool = False) -> bytes:
    """A JSON text nesting `depth` levels; with `strings`, brackets inside strings too."""
    doc: Any = "[[{{" if strings else 1
    for i in range(depth):
        doc = {"k]{": doc, "s": "}}]]\\\"["} if i % 2 else [doc, "[\\\\", {}]
    return json.dumps(doc).encode()


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 10, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 300])
def test_depth_from_the_bytes(depth: int, strings: bool) -> None:
    """Too deep exactly when the document nests more than the bound; brackets in
    strings, escaped quotes and empty containers do not count."""
    body = nested(depth, strings=strings)
    real = depth_of(json.loads(body))
    assert real in (depth, depth + 1)
    for bound in (real - 1, real, MAX_DEPTH):
        assert _too_deep(body, bound) is (real > bound)
