"""The Flask app over its test client: every endpoint, and every kind of bad input.

A malformed body gets HTTP 400 (413 when too large) with a JSON Status; it never
gets a 5xx.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.builders import DNS, ZONE, RawObj, make_pod, review, selector
from webhook.admission.review import MAX_BODY_BYTES, MAX_DEPTH
from webhook.cluster.source import StaticSource
from webhook.config import Settings
from webhook.server import serve
from webhook.server.app import EXTENSION, create_app

UID = "705ab4f5-6393-11e8-b7cc-42010a800002"


class SnapshotStub:
    """Stands for a Snapshot: the server only hands it on."""


@pytest.fixture
def app() -> Flask:
    return create_app()


@pytest.fixture
def client(app: Flask) -> Iterator[FlaskClient]:
    with app.test_client() as c:
        yield c


def pod_review(max_skew: int = 1) -> RawObj:
    pod = make_pod().name("web").label("app", "web")
    return review(pod.spread(max_skew, ZONE, DNS, selector({"app": "web"})).obj())


def with_request(**changes: Any) -> RawObj:
    doc = pod_review()
    doc["request"].update(changes)
    return doc


def without_request_key(key: str) -> RawObj:
    doc = pod_review()
    del doc["request"][key]
    return doc


def deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


# (case, raw body, expected status, words the message must hold)
BAD_BODIES: list[tuple[str, bytes, int, str]] = [
    ("empty body", b"", 400, "not JSON"),
    ("not JSON", b"kind: AdmissionReview", 400, "not JSON"),
    ("truncated JSON", json.dumps(pod_review()).encode()[:-3], 400, "not JSON"),
    ("invalid UTF-8", b'{"kind": "Admission\xff\xfeReview"}', 400, "not valid UTF-8"),
    ("NaN constant", b'{"kind": "AdmissionReview", "x": NaN}', 400, "not JSON"),
    ("nested too deeply", deep(100_000), 400, "nested too deeply"),
    ("nested past the bound", deep(MAX_DEPTH + 1), 400, "nested too deeply"),
    (
        "deep inside the object",
        json.dumps(pod_review()).encode().replace(b'"web"', b"[" * 100 + b'"web"' + b"]" * 100, 1),
        400,
        "nested too deeply",
    ),
    ("a JSON list", b"[]", 400, "expected a JSON object"),
    ("a JSON string", b'"review"', 400, "expected a JSON object"),
    ("wrong kind", json.dumps({**pod_review(), "kind": "Pod"}).encode(), 400, "kind must be"),
    (
        "wrong apiVersion",
        json.dumps({**pod_review(), "apiVersion": "admission.k8s.io/v2"}).encode(),
        400,
        "apiVersion must be",
    ),
    ("no request", json.dumps({**pod_review(), "request": None}).encode(), 400, "request"),
    ("request a list", json.dumps({**pod_review(), "request": []}).encode(), 400, "request"),
    ("no uid", json.dumps(without_request_key("uid")).encode(), 400, "request.uid"),
    ("empty uid", json.dumps(with_request(uid="")).encode(), 400, "request.uid"),
    ("uid a number", json.dumps(with_request(uid=7)).encode(), 400, "request.uid"),
    ("no operation", json.dumps(without_request_key("operation")).encode(), 400, "operation"),
    ("operation a list", json.dumps(with_request(operation=["CREATE"])).encode(), 400, "operation"),
    ("no object", json.dumps(without_request_key("object")).encode(), 400, "request.object"),
    ("object null", json.dumps(with_request(object=None)).encode(), 400, "request.object"),
    ("object a list", json.dumps(with_request(object=[])).encode(), 400, "request.object"),
    ("object a string", json.dumps(with_request(object="pod")).encode(), 400, "request.object"),
    ("oldObject a string", json.dumps(with_request(oldObject="x")).encode(), 400, "oldObject"),
    ("request.kind a string", json.dumps(with_request(kind="Pod")).encode(), 400, "request.kind"),
    (
        "object kind differs",
        json.dumps(
            with_request(kind={"group": "apps", "version": "v1", "kind": "Deployment"})
        ).encode(),
        400,
        "does not match",
    ),
    ("dryRun a string", json.dumps(with_request(dryRun="yes")).encode(), 400, "dryRun"),
    ("namespace a number", json.dumps(with_request(namespace=3)).encode(), 400, "namespace"),
    ("too large", b" " * (MAX_BODY_BYTES + 1), 413, "larger than"),
]


@pytest.mark.parametrize(
    ("case", "raw", "code", "words"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES]
)
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_malformed_body_gets_json_status(
    client: FlaskClient, path: str, case: str, raw: bytes, code: int, words: str
) -> None:
    """A body that is not a usable AdmissionReview: 400 (413 too large) and a JSON Status."""
    resp = client.post(path, data=raw, content_type="application/json")
    assert resp.status_code == code, case
    assert resp.mimetype == "application/json"
    doc = resp.get_json()
    assert doc["kind"] == "Status"
    assert doc["status"] == "Failure"
    assert doc["code"] == code
    assert words in doc["message"], doc["message"]


def test_nesting_up_to_the_bound_is_answered(client: FlaskClient) -> None:
    """An object nested as deep as the bound allows is reviewed normally (no 400, no 5xx)."""
    doc = pod_review()
    node: Any = "x"
    for _ in range(MAX_DEPTH - 8):
        node = [node]
    doc["request"]["object"]["metadata"]["annotations"] = {"deep": node}
    for path in ("/validate", "/mutate"):
        resp = client.post(path, json=doc)
        assert resp.status_code == 200
        assert resp.get_json()["response"]["uid"] == UID


def test_chunked_body_over_the_cap_is_refused(client: FlaskClient) -> None:
    """Without Content-Length the cap still holds while reading the stream."""

    stream = io.BytesIO(b" " * (MAX_BODY_BYTES + 1024))
    resp = client.post(
        "/validate",
        input_stream=stream,
        headers={"Transfer-Encoding": "chunked"},
        # As gunicorn sets it: the server terminates the stream, werkzeug caps the read.
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert resp.status_code == 413
    assert resp.get_json()["reason"] == "RequestEntityTooLarge"


@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_review_answers_echo_uid(client: FlaskClient, path: str) -> None:
    """A well formed review is answered 200 with an AdmissionReview for the same uid."""
    resp = client.post(path, json=pod_review())
    assert resp.status_code == 200
    doc = resp.get_json()
    assert doc["kind"] == "AdmissionReview"
    assert doc["response"]["uid"] == UID
    assert doc["response"]["allowed"] is True


def test_content_type_is_not_required(client: FlaskClient) -> None:
    """The body is read raw whatever the Content-Type (curl --data sends a form type)."""
    resp = client.post(
        "/validate",
        data=json.dumps(pod_review()),
        content_type="application/x-www-form-urlencoded",
    )
    assert resp.status_code == 200
    assert resp.get_json()["response"]["uid"] == UID


def test_validate_denies_invalid_pod(client: FlaskClient) -> None:
    """An invalid pod is a 200 answer with allowed false (not an HTTP error)."""
    resp = client.post("/validate", json=pod_review(max_skew=0))
    assert resp.status_code == 200
    status = resp.get_json()["response"]["status"]
    assert status["code"] == 422
    assert status["message"] == (
        'Pod "web" is invalid: spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero"
    )


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [("GET", "/validate", 405), ("PUT", "/mutate", 405), ("GET", "/nowhere", 404)],
)
def test_wrong_method_or_path_is_json(
    client: FlaskClient, method: str, path: str, code: int
) -> None:
    """Routing errors are JSON Statuses too."""
    resp = client.open(path, method=method)
    assert resp.status_code == code
    assert resp.get_json()["code"] == code


def test_healthz_is_ok(client: FlaskClient) -> None:
    """/healthz: 200 while the process serves."""
    resp = client.get("/healthz")
    assert (resp.status_code, resp.text) == (200, "ok\n")


@pytest.mark.parametrize(
    ("source", "code"),
    [
        (None, 200),
        (StaticSource(None), 503),
        (StaticSource(SnapshotStub()), 200),  # type: ignore[arg-type]
    ],
    ids=["no cluster source", "source not synced", "source synced"],
)
def test_readyz_follows_the_source(source: StaticSource | None, code: int) -> None:
    """/readyz: 503 until the cluster source has synced."""
    app = create_app(source=source)
    assert app.test_client().get("/readyz").status_code == code


def test_readyz_turns_ready_when_source_syncs() -> None:
    """The same app answers 503 then 200 once the snapshot arrives."""
    source = StaticSource(None)
    client = create_app(source=source).test_client()
    assert client.get("/readyz").status_code == 503
    source.replace(SnapshotStub())  # type: ignore[arg-type]
    assert client.get("/readyz").status_code == 200


def test_source_is_started_and_version_reaches_the_rules() -> None:
    """create_app starts the source; its server_version selects the rules (v1.33 here)."""

    class Recording(StaticSource):
        started = 0

        def start(self) -> None:
            self.started += 1

    source = Recording(SnapshotStub(), version=(1, 33))  # type: ignore[arg-type]
    client = create_app(source=source).test_client()
    assert source.started == 1
    pod = (
        make_pod()
        .label("app", "web")
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["app"])
        .obj()
    )
    response = client.post("/validate", json=review(pod)).get_json()["response"]
    assert response["allowed"] is False


def test_failing_version_lookup_still_answers(caplog: pytest.LogCaptureFixture) -> None:
    """A source that cannot tell the version: reviews use the newest rules, no 5xx."""

    class NoVersion(StaticSource):
        def server_version(self) -> tuple[int, int] | None:
            raise OSError("connection refused")

    client = create_app(source=NoVersion(SnapshotStub())).test_client()  # type: ignore[arg-type]
    with caplog.at_level("ERROR", logger="topospread.server"):
        resp = client.post("/validate", json=pod_review(max_skew=0))
    assert resp.status_code == 200
    assert resp.get_json()["response"]["allowed"] is False
    assert "connection refused" in caplog.text


def test_failing_source_start_leaves_server_up_unready() -> None:
    """A source that fails to start: /healthz 200, /readyz 503, no crash."""

    class Broken(StaticSource):
        def start(self) -> None:
            raise OSError("cannot reach the API server")

    client = create_app(source=Broken(None)).test_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 503


def test_metrics_count_requests_and_decisions(client: FlaskClient) -> None:
    """/metrics is Prometheus text with request and decision counters."""
    client.post("/validate", json=pod_review(max_skew=0))
    client.post("/validate", json=pod_review())
    client.post("/mutate", data=b"junk")
    text = client.get("/metrics").text
    decisions = "topospread_admission_decisions_total"
    assert 'topospread_http_requests_total{code="200",path="/validate"} 2.0' in text
    assert 'topospread_http_requests_total{code="400",path="/mutate"} 1.0' in text
    assert decisions + '{decision="denied",endpoint="validate"} 1.0' in text
    assert decisions + '{decision="allowed",endpoint="validate"} 1.0' in text
    assert decisions + '{decision="malformed",endpoint="mutate"} 1.0' in text


def test_unknown_paths_share_one_metrics_label(client: FlaskClient) -> None:
    """Arbitrary URLs do not grow the label set."""
    client.get("/a")
    client.get("/b")
    assert (
        'topospread_http_requests_total{code="404",path="other"} 2.0' in client.get("/metrics").text
    )


def test_apps_do_not_share_state() -> None:
    """Two apps in one process: separate services and separate counters."""
    a, b = create_app(), create_app()
    assert a.extensions[EXTENSION] is not b.extensions[EXTENSION]
    a.test_client().post("/validate", json=pod_review())
    assert "topospread_admission_decisions_total{" not in b.test_client().get("/metrics").text


def test_snapshot_is_read_under_the_source_lock() -> None:
    """A review reads the source through reading(): writers wait until it is done."""
    events: list[str] = []

    class Watching(StaticSource):
        def reading(self) -> Any:
            events.append("read")
            return super().reading()

    client = create_app(source=Watching(SnapshotStub())).test_client()  # type: ignore[arg-type]
    client.post("/mutate", json=pod_review())
    assert events == ["read"]


def test_a_snapshot_file_is_primed_before_the_workers_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """serve loads --snapshot in the master and primes the model on it there, so every
    forked worker shares the built indexes and no first review pays for them."""
    primed: list[tuple[Any, Settings]] = []
    monkeypatch.setattr(serve, "prime", lambda snap, settings: primed.append((snap, settings)))
    monkeypatch.setattr(serve.gc, "freeze", lambda: None)
    settings = Settings()
    args = argparse.Namespace(snapshot=None, kubeconfig=None, in_cluster=False)
    source = serve._source(args, settings)
    assert primed == [(source.snapshot(), settings)]
    assert source.snapshot() is not None
