"""Fuzzing the HTTP surface of /validate and /mutate through the Flask test client.

Whatever the body, the answer is one of:
  - HTTP 400 (413 when too large) with a JSON metav1.Status saying why;
  - HTTP 200 with a well-formed AdmissionReview in the version asked, echoing request.uid.
Never a 5xx, and never an internal error swallowed into "allowed unchecked" (the app logs
those at ERROR, which these tests watch for). Every JSONPatch returned applies cleanly to
the request object and changes nothing but what the webhook owns: the pod template's
topologySpreadConstraints and `topospread.io/` annotations.

Bounded for CI by the hypothesis "ci" profile; `make fuzz` runs the "long" profile.
"""

from __future__ import annotations

import base64
import copy
import functools
import io
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jsonpatch
import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.test import Client
from werkzeug.wrappers import Response

from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    exists,
    expr,
    make_node,
    make_pod,
    review,
    selector,
    workload,
)
from webhook.api.kube import TEMPLATE_PATHS
from webhook.cluster.source import StaticSource
from webhook.config import settings_from_dict
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.server.app import create_app

RawObj = dict[str, Any]

ENDPOINTS = ("/validate", "/mutate")

# The body cap the interface promises: an object and its old version of up to 3 MiB each
# (kube-apiserver's own request limit) plus the envelope.
BODY_CAP = 7 * 1024 * 1024

OWNED_ANNOTATION_PREFIX = "topospread.io/"

# The largest lists (constraints, matchLabelKeys, labels) and strings (in units of
# 10,000 characters: 3 MB) the huge-input test sends.
LIST_CAP = 20_000
STRING_CAP = 300

# `make test` (profile "ci") replays one fixed sequence of examples, so a run passes or
# fails for the code, not for a lucky draw; `make fuzz` (HYPOTHESIS_PROFILE=long)
# explores new examples every run.
DERANDOMIZE = os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci"
FUZZ = settings(derandomize=DERANDOMIZE)
# Fewer examples where each one is heavy; the "long" profile still scales them up.
HEAVY = settings(
    max_examples=max(10, settings.default.max_examples // 5),
    derandomize=DERANDOMIZE,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------------------
# Apps under test


def _snapshot() -> Snapshot:
    nodes = [
        make_node().name(f"node-{z}{i}").zone(f"zone-{z}").hostname().obj()
        for z in "ab"
        for i in range(2)
    ]
    pods = [
        make_pod().name(f"web-{i}").label("app", "web").node(f"node-a{i % 2}").obj()
        for i in range(3)
    ]
    # A Service selecting app=web gives pods without constraints a default selector.
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    return Snapshot.from_objects([*nodes, *pods, service])


@functools.cache
def _apps() -> tuple[Flask, ...]:
    """A bare app (no cluster state), and one with cluster state, an old API server
    (the webhook moves matchLabelKeys and records them in an annotation) and defaults."""
    bare = create_app()
    config = {
        "matchLabelKeysMerge": "webhook",
        "podTopologySpread": {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA},
            ],
        },
    }
    clustered = create_app(
        settings_from_dict(config), source=StaticSource(_snapshot(), version=(1, 33))
    )
    return bare, clustered


def _clients() -> list[FlaskClient]:
    return [app.test_client() for app in _apps()]


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _no_error_logged() -> Iterator[None]:
    """Fail when anything logs at ERROR: the app logs every exception it swallows."""
    handler = _Errors()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
    assert not handler.records, [
        f"{r.name}: {r.getMessage()}\n{logging.Formatter().formatException(r.exc_info)}"
        if r.exc_info
        else f"{r.name}: {r.getMessage()}"
        for r in handler.records
    ]


# ---------------------------------------------------------------------------------------
# Checking an answer


def _template_keys(obj: Any, request_kind: Any) -> tuple[str, ...] | None:
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind is None and isinstance(request_kind, dict):
        kind = request_kind.get("kind")
    return TEMPLATE_PATHS.get(kind) if isinstance(kind, str) else None


def _drop_owned_annotations(meta: Any) -> None:
    if not isinstance(meta, dict):
        return
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in [k for k in annotations if k.startswith(OWNED_ANNOTATION_PREFIX)]:
            del annotations[key]
    # null, absent and empty read the same to the API server.
    if "annotations" in meta and not meta["annotations"]:
        del meta["annotations"]


def _drop_if_empty(parent: RawObj, key: str) -> None:
    if key in parent and not parent[key]:
        del parent[key]


def _without_owned(obj: Any, keys: tuple[str, ...] | None) -> Any:
    """`obj` with everything the webhook may change removed, to compare the rest."""
    out = copy.deepcopy(obj)
    if not isinstance(out, dict):
        return out
    _drop_owned_annotations(out.get("metadata"))
    _drop_if_empty(out, "metadata")
    if keys is None:
        return out
    node: Any = out
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return out
    _drop_owned_annotations(node.get("metadata"))
    _drop_if_empty(node, "metadata")
    if isinstance(node.get("spec"), dict):
        node["spec"].pop("topologySpreadConstraints", None)
    _drop_if_empty(node, "spec")
    return out


def _check_patch(response: RawObj, request: RawObj) -> None:
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"], validate=True))
    assert isinstance(ops, list) and ops
    obj = request["object"]
    # Raises (and so fails the test) when an operation does not apply.
    patched = jsonpatch.apply_patch(obj, ops)
    keys = _template_keys(obj, request.get("kind"))
    assert keys is not None, "a patch for an object the webhook does not handle"
    assert _without_owned(patched, keys) == _without_owned(obj, keys), ops


def _check_answer(status: int, body: bytes, sent: bytes) -> None:
    assert status in (200, 400, 413), (status, body[:500])
    doc = json.loads(body)
    if status != 200:
        assert doc["kind"] == "Status"
        assert doc["code"] == status
        assert isinstance(doc["message"], str) and doc["message"]
        return
    # A 200 means the body was a usable review; Python's parser keeps the last of
    # duplicate keys, as Go's encoding/json (kube-apiserver) does.
    sent_doc = json.loads(sent)
    request = sent_doc["request"]
    assert doc["apiVersion"] == sent_doc["apiVersion"]
    assert doc["kind"] == "AdmissionReview"
    response = doc["response"]
    assert response["uid"] == request["uid"]
    assert type(response["allowed"]) is bool
    if not response["allowed"]:
        assert response["status"]["code"] == 422
        assert isinstance(response["status"]["message"], str)
        assert "patch" not in response
    for warning in response.get("warnings", []):
        assert isinstance(warning, str) and warning
    if "patch" in response:
        _check_patch(response, request)
    else:
        assert "patchType" not in response


def _post_everywhere(body: bytes, **kwargs: Any) -> None:
    with _no_error_logged():
        for client in _clients():
            for path in ENDPOINTS:
                resp = client.post(path, data=body, content_type="application/json", **kwargs)
                _check_answer(resp.status_code, resp.get_data(), body)


def _dumps(doc: Any, ascii_only: bool = False) -> bytes:
    """JSON bytes; a lone surrogate becomes a \\ud800 escape when `ascii_only`, else the
    three bytes of its invalid UTF-8 encoding."""
    text = json.dumps(doc, ensure_ascii=ascii_only, allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------------------------------
# A corpus of valid reviews to mutate

_web = selector({"app": "web"})


def _corpus() -> list[RawObj]:
    one = make_pod().name("one").label("app", "web").spread(1, ZONE, DNS, _web).obj()
    two = (
        make_pod()
        .name("two")
        .labels({"app": "web", "pod-template-hash": "abc"})
        .spread(1, ZONE, DNS, _web, matchLabelKeys=["pod-template-hash"])
        .spread(
            2,
            HOSTNAME,
            SA,
            selector(None, expr("app", "In", "web", "db")),
            minDomains=None,
            nodeAffinityPolicy="Honor",
            nodeTaintsPolicy="Ignore",
        )
        .obj()
    )
    dry = (
        make_pod()
        .name("dry")
        .label("app", "web")
        .annotation("topospread.io/dry-run", "true")
        .spread(1, ZONE, DNS, _web)
        .obj()
    )
    invalid = (
        make_pod()
        .name("bad")
        .spread(0, "", "Sometimes", exists("app"), minDomains=2, matchLabelKeys=["app"])
        .obj()
    )
    deploy = workload(
        "Deployment",
        make_pod().label("app", "web").spread(1, ZONE, SA, _web, matchLabelKeys=["app"]).obj(),
        name="web",
    )
    cron = workload(
        "CronJob",
        make_pod().label("job", "x").spread(1, ZONE, DNS, exists("job")).obj(),
        name="nightly",
    )
    bare = make_pod().generate_name("web-").obj()
    bare["metadata"].pop("namespace")
    delete = review(one, "DELETE", old=one)
    delete["request"]["object"] = None
    return [
        review(make_pod().name("zero").label("app", "web").obj()),
        review(one),
        review(two),
        review(two, dry_run=True, api_version="admission.k8s.io/v1beta1"),
        review(dry),
        review(invalid),
        review(one, "UPDATE", old=make_pod().name("one").obj()),
        review(deploy),
        review(cron, "UPDATE", old=cron),
        review(bare, namespace="team-a"),
        delete,
    ]


CORPUS = _corpus()


# ---------------------------------------------------------------------------------------
# Strategies

# Strings that mean something to the webhook, besides random ones.
_words = st.sampled_from(
    [
        "",
        "Pod",
        "Deployment",
        "AdmissionReview",
        "admission.k8s.io/v1",
        "CREATE",
        "UPDATE",
        DNS,
        SA,
        "Honor",
        "Ignore",
        ZONE,
        "app",
        "pod-template-hash",
        "topospread.io/dry-run",
        "true",
        "In",
        "Exists",
        "a" * 64,
        "a/" * 200,
        "\ud800",  # a lone surrogate, as a JSON \ud800 escape decodes to
        "\u0000\u001b[31m",
    ]
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**400])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | _words
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | _words, inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


def _replace(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def mutated_reviews(draw: st.DrawFn) -> Any:
    """A valid review with one to three nodes replaced by random JSON (or deleted)."""
    doc: Any = copy.deepcopy(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        delete = bool(path) and draw(st.booleans())
        doc = _replace(doc, path, None if delete else draw(json_values), delete)
    return doc


def _dump_with_duplicate(node: Any, at: tuple[Any, ...], key: str, value: Any, last: bool) -> str:
    """JSON text of `node` where the object at path `at` holds `key` twice."""

    def child(step: Any, item: Any) -> str:
        if at and at[0] == step:
            return _dump_with_duplicate(item, at[1:], key, value, last)
        return json.dumps(item)

    if isinstance(node, dict):
        items = [f"{json.dumps(k)}:{child(k, v)}" for k, v in node.items()]
        if not at:
            items.insert(len(items) if last else 0, f"{json.dumps(key)}:{json.dumps(value)}")
        return "{" + ",".join(items) + "}"
    if isinstance(node, list):
        return "[" + ",".join(child(i, v) for i, v in enumerate(node)) + "]"
    return json.dumps(node)


# ---------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("index", range(len(CORPUS)))
def test_corpus_review_is_answered_with_an_admission_review(index: int) -> None:
    """Each unmutated corpus review gets a 200 AdmissionReview (the fuzzing baseline)."""
    body = _dumps(CORPUS[index])
    with _no_error_logged():
        for client in _clients():
            for path in ENDPOINTS:
                resp = client.post(path, data=body, content_type="application/json")
                assert resp.status_code == 200
                _check_answer(resp.status_code, resp.get_data(), body)


@FUZZ
@given(json_values)
def test_random_json_gets_a_400_status(doc: Any) -> None:
    """Random JSON is never an AdmissionReview: 400 with a JSON Status, never a 5xx."""
    _post_everywhere(_dumps(doc))


@FUZZ
@given(mutated_reviews(), st.booleans())
def test_review_with_a_node_replaced_by_random_json_is_answered(doc: Any, ascii_only: bool) -> None:
    """Wrong types at any path of a valid review: 400, or 200 echoing the uid; patches
    apply and touch only owned paths."""
    _post_everywhere(_dumps(doc, ascii_only))


@FUZZ
@given(st.sampled_from(CORPUS), st.data())
def test_bytes_spliced_into_a_review_are_answered(doc: RawObj, data: st.DataObject) -> None:
    """Bytes overwritten, inserted or cut anywhere in the text, invalid UTF-8 included."""
    body = bytearray(_dumps(doc))
    at = data.draw(st.integers(0, len(body)))
    action = data.draw(st.sampled_from(["insert", "overwrite", "truncate"]))
    chunk = data.draw(
        st.binary(min_size=1, max_size=8)
        | st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"])
    )
    if action == "insert":
        body[at:at] = chunk
    elif action == "overwrite":
        body[at : at + len(chunk)] = chunk
    else:
        del body[at:]
    _post_everywhere(bytes(body))


@FUZZ
@given(st.sampled_from(CORPUS), st.data())
def test_duplicate_keys_are_answered_as_the_last_one_reads(
    doc: RawObj, data: st.DataObject
) -> None:
    """A key written twice in one object: 400, or 200 answering what the last one says."""
    dicts = [p for p in _paths(doc) if isinstance(_get(doc, p), dict)]
    at = data.draw(st.sampled_from(dicts))
    target = _get(doc, at)
    key = data.draw(st.sampled_from(sorted(target)) | st.text(max_size=8)) if target else "k"
    value = data.draw(json_values)
    last = data.draw(st.booleans())
    body = _dump_with_duplicate(doc, at, key, value, last).encode("utf-8", "surrogatepass")
    _post_everywhere(body)


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@FUZZ
@given(st.integers(1, 100_000), st.sampled_from(["[", '{"a":']))
def test_deeply_nested_body_gets_a_400(depth: int, opener: str) -> None:
    """Nesting deeper than any parser stack: a 400, not a RecursionError."""
    closer = "]" if opener == "[" else "}"
    _post_everywhere((opener * depth + "1" + closer * depth).encode())


@HEAVY
@given(
    st.sampled_from(CORPUS),
    st.integers(1, 3_000),
    st.sampled_from(["labels", "labelSelector", "constraints", "uid"]),
)
def test_deep_nesting_inside_a_review_is_answered(doc: RawObj, depth: int, where: str) -> None:
    """Nesting a parser accepts, at places the webhook walks: answered, never an error."""
    nested = "[" * depth + '"x"' + "]" * depth
    marker = "__nested__"
    doc = copy.deepcopy(doc)
    obj = doc["request"]["object"] or {}
    doc["request"]["object"] = obj
    spec = _pod_spec(obj)
    if where == "labels":
        obj.setdefault("metadata", {})["labels"] = {"app": marker}
    elif where == "labelSelector":
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS, "labelSelector": marker}
        ]
    elif where == "constraints":
        spec["topologySpreadConstraints"] = marker
    else:
        doc["request"]["uid"] = marker
    body = _dumps(doc).replace(json.dumps(marker).encode(), nested.encode())
    _post_everywhere(body)


def _pod_spec(obj: RawObj) -> RawObj:
    node = obj
    for key in TEMPLATE_PATHS.get(obj.get("kind", "Pod"), ()):
        node = node.setdefault(key, {})
    return node.setdefault("spec", {})


@HEAVY
@given(
    st.sampled_from(CORPUS[1:10]),
    st.sampled_from(
        ["constraints", "matchLabelKeys", "labels", "selector", "label value", "topologyKey"]
    ),
    st.integers(0, LIST_CAP),
)
def test_huge_strings_and_arrays_are_answered(doc: RawObj, where: str, n: int) -> None:
    """Up to 20,000 constraints, keys or labels, and strings up to 3 MB, within the cap:
    each request's work is linear in them (tests/test_bounded_work.py counts it)."""
    doc = copy.deepcopy(doc)
    size = min(n, STRING_CAP)  # 10,000 characters per unit: 3 MB at most
    obj = doc["request"]["object"]
    spec = _pod_spec(obj)
    labels = obj.setdefault("metadata", {}).setdefault("labels", {})
    base = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS, "labelSelector": _web}
    if where == "constraints":
        spec["topologySpreadConstraints"] = [
            {**base, "topologyKey": f"k{i % 50}", "matchLabelKeys": ["app"]} for i in range(n)
        ]
    elif where == "matchLabelKeys":
        labels.update({f"key-{i}": "v" for i in range(n)})
        spec["topologySpreadConstraints"] = [
            {**base, "matchLabelKeys": [f"key-{i}" for i in range(n)] + ["app"]}
        ]
    elif where == "labels":
        labels.update({f"example.com/key-{i}": f"v{i}" for i in range(n)})
    elif where == "selector":
        spec["topologySpreadConstraints"] = [
            {
                **base,
                "labelSelector": selector(
                    {f"k{i}": "v" for i in range(n)},
                    *(expr(f"e{i}", "In", *[str(j) for j in range(5)]) for i in range(n // 10)),
                ),
            }
        ]
    elif where == "label value":
        labels["app"] = "w" * (size * 10_000)
    else:
        spec["topologySpreadConstraints"] = [{**base, "topologyKey": "z" * (size * 10_000)}]
    body = _dumps(doc)
    assert len(body) <= BODY_CAP
    _post_everywhere(body)


def _padded(size: int) -> bytes:
    """A valid review padded with trailing whitespace (still valid JSON) to `size` bytes."""
    body = _dumps(CORPUS[1])
    return body + b" " * (size - len(body))


@pytest.mark.parametrize("path", ENDPOINTS)
def test_body_exactly_at_the_cap_is_answered(path: str) -> None:
    """7 MiB is still accepted."""
    body = _padded(BODY_CAP)
    with _no_error_logged():
        resp = _clients()[0].post(path, data=body, content_type="application/json")
    assert resp.status_code == 200
    _check_answer(resp.status_code, resp.get_data(), body)


@pytest.mark.parametrize("path", ENDPOINTS)
def test_body_one_byte_over_the_cap_gets_413(path: str) -> None:
    """7 MiB + 1: 413 with a Status naming the limit."""
    resp = _clients()[0].post(path, data=_padded(BODY_CAP + 1), content_type="application/json")
    assert resp.status_code == 413
    doc = resp.get_json()
    assert doc["kind"] == "Status" and doc["code"] == 413
    assert doc["reason"] == "RequestEntityTooLarge"
    assert str(BODY_CAP) in doc["message"]


@pytest.mark.parametrize("path", ENDPOINTS)
def test_chunked_body_over_the_cap_gets_413(path: str) -> None:
    """Without a Content-Length (chunked, as gunicorn passes it on) the cap still holds."""
    resp = _clients()[0].post(
        path,
        input_stream=io.BytesIO(_padded(BODY_CAP + 4096)),
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert resp.status_code == 413
    assert resp.get_json()["code"] == 413


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/validate", 405),
        ("PUT", "/mutate", 405),
        ("POST", "/nowhere", 404),
        ("POST", "/healthz", 405),
    ],
)
def test_wrong_method_or_path_gets_a_json_status(method: str, path: str, status: int) -> None:
    """Routing errors are answered with a JSON Status too, never an HTML page."""
    resp = _clients()[0].open(path, method=method, data=b"{}")
    assert resp.status_code == status
    assert resp.get_json()["code"] == status


@FUZZ
@given(mutated_reviews())
def test_review_routes_answer_as_the_flask_routes_do(doc: Any) -> None:
    """POST /validate and /mutate are answered straight from WSGI: same status line,
    headers and body as the Flask routes behind them."""
    body = _dumps(doc)
    for app in _apps():
        direct = Client(app.wsgi_app, Response)
        routed = Client(app.wsgi_app.flask_wsgi, Response)  # type: ignore[attr-defined]
        for path in ENDPOINTS:
            answers = [
                client.post(path, data=body, content_type="application/json")
                for client in (direct, routed)
            ]
            fast, flask = answers
            assert fast.status == flask.status
            assert sorted(fast.headers.items()) == sorted(flask.headers.items())
            assert fast.get_data() == flask.get_data()
