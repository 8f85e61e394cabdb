"""Structured logs: one JSON line per AdmissionReview, its fields, and no object bodies."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.builders import DNS, ZONE, RawObj, make_pod, review, selector
from webhook.server.app import EXTENSION, create_app
from webhook.server.logs import REQUEST_LOGGER, JSONFormatter

SECRET = "hunter2-do-not-log"
P = "spec.topologySpreadConstraints"


@pytest.fixture
def client() -> Iterator[FlaskClient]:
    app = create_app()
    yield app.test_client()
    app.extensions[EXTENSION].stop()


def lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The request records as serve writes them: formatted, then parsed back."""
    fmt = JSONFormatter()
    out = []
    for record in caplog.records:
        if record.name == REQUEST_LOGGER:
            text = fmt.format(record)
            assert "\n" not in text
            out.append(json.loads(text))
    return out


def secret_pod(max_skew: int = 1, key: str = ZONE, name: str = "web") -> RawObj:
    """A pod carrying values that must never reach a log: an annotation, an env var."""
    pod = make_pod().namespace("shop").label("app", "web").annotation("token", SECRET)
    pod = pod.name(name) if name else pod.generate_name("web-")
    obj = pod.spread(max_skew, key, DNS, selector({"app": "web"})).obj()
    obj["spec"]["containers"][0]["env"] = [{"name": "PASSWORD", "value": SECRET}]
    return obj


COMMON = {"level": "info", "logger": REQUEST_LOGGER, "msg": "admission review"}

# name, endpoint, body, expected fields (besides ts, pid, duration_ms)
CASES: list[tuple[str, str, Any, dict[str, Any]]] = [
    (
        "denied",
        "validate",
        review(secret_pod(max_skew=0), uid="u-1"),
        {
            "endpoint": "validate", "decision": "denied", "status": 200, "uid": "u-1",
            "kind": "Pod", "namespace": "shop", "name": "web", "operation": "CREATE",
            "dry_run": False, "warnings": 0, "causes": 1, "fields": [f"{P}[0].maxSkew"],
        },
    ),
    (
        "allowed-with-a-warning",
        "validate",
        review(secret_pod(key="failure-domain.beta.kubernetes.io/zone"), uid="u-2"),
        {
            "endpoint": "validate", "decision": "allowed", "status": 200, "uid": "u-2",
            "kind": "Pod", "namespace": "shop", "name": "web", "operation": "CREATE",
            # deprecated-topology-key, outage-blocks-replacements
            "dry_run": False, "warnings": 2,
        },
    ),
    (
        "generate-name-dry-run",
        "validate",
        review(secret_pod(name=""), uid="u-3", dry_run=True),
        {
            "endpoint": "validate", "decision": "allowed", "status": 200, "uid": "u-3",
            "kind": "Pod", "namespace": "shop", "name": "web-", "operation": "CREATE",
            # outage-blocks-replacements (a zone DoNotSchedule, nodeTaintsPolicy unset)
            "dry_run": True, "warnings": 1,
        },
    ),
    (
        "malformed",
        "mutate",
        b'{"kind": "AdmissionReview"}',
        {
            "endpoint": "mutate", "decision": "malformed", "status": 400,
            "error": "malformed AdmissionReview: apiVersion must be one of "
            "admission.k8s.io/v1, admission.k8s.io/v1beta1, got None",
        },
    ),
]


@pytest.mark.parametrize(("name", "endpoint", "body", "fields"), CASES, ids=[c[0] for c in CASES])
def test_one_line_per_review_with_its_fields(
    client: FlaskClient,
    caplog: pytest.LogCaptureFixture,
    name: str,
    endpoint: str,
    body: Any,
    fields: dict[str, Any],
) -> None:
    """Each review logs exactly one info line holding the request's identity and outcome."""
    caplog.set_level(logging.INFO, logger=REQUEST_LOGGER)
    if isinstance(body, bytes):
        client.post(f"/{endpoint}", data=body)
    else:
        client.post(f"/{endpoint}", json=body)
    (line,) = lines(caplog)
    assert isinstance(line.pop("duration_ms"), float)
    assert isinstance(line.pop("pid"), int)
    assert line.pop("ts").endswith("Z")
    assert line == {**COMMON, **fields}


def test_no_object_body_user_info_or_values_in_the_line(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The line names the object but never carries its body, values or the requester."""
    caplog.set_level(logging.DEBUG)
    client.post("/validate", json=review(secret_pod(max_skew=0)))
    client.post("/mutate", json=review(secret_pod()))
    formatted = [JSONFormatter().format(r) for r in caplog.records]
    assert len(lines(caplog)) == 2
    for text in formatted:
        assert SECRET not in text
        assert "userInfo" not in text and "system:authenticated" not in text
        assert "Invalid value" not in text  # denial messages quote the object's values


def test_probes_and_metrics_are_not_logged(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Only reviews make request lines: probes every few seconds would drown them."""
    caplog.set_level(logging.INFO, logger=REQUEST_LOGGER)
    for path in ("/healthz", "/readyz", "/metrics"):
        client.get(path)
    assert lines(caplog) == []


def test_formatter_merges_fields_and_keeps_its_own() -> None:
    """Extra fields join the line; they cannot overwrite ts, level, logger, pid or msg."""
    record = logging.LogRecord("x.y", logging.WARNING, __file__, 1, "hello %s", ("you",), None)
    record.fields = {"uid": "u", "msg": "spoofed", "level": "debug"}
    doc = json.loads(JSONFormatter().format(record))
    assert doc["msg"] == "hello you"
    assert doc["level"] == "warning"
    assert doc["logger"] == "x.y"
    assert doc["uid"] == "u"


def test_formatter_puts_the_traceback_in_one_field() -> None:
    """An exception stays on the one line, under exc."""
    try:
        raise ValueError("boom")
    except ValueError:
        info = sys.exc_info()
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), info)
    text = JSONFormatter().format(record)
    assert "\n" not in text
    doc = json.loads(text)
    assert doc["msg"] == "failed"
    assert "ValueError: boom" in doc["exc"]
