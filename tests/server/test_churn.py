"""The webhook under churn: the real app, its informer on the fake API server, pod and
node events streaming in while clients send AdmissionReviews to /validate and /mutate.

- during the churn every answer is a 200 with a well-formed response: a patch that is
  a JSONPatch applying to the pod, a placement annotation that is JSON, counts as
  many nodes as the cluster held at some moment and selects a node it held, no
  internal error; a probe whose answer reads only the frozen part of the cluster
  (tests/churn_world.py) gets exactly the answer it gets before the churn;
- once the churn stops and the informer holds exactly what the API server holds,
  every probe's answer equals the answer of a fresh app (fresh scheduler framework,
  no plugin cache) on a snapshot built from scratch of the same objects.

Seeded (TOPOSPREAD_SEED); `pytest -k churn` selects it.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import jsonpatch
import pytest
from kubernetes.client import Configuration
from werkzeug.serving import make_server

from tests.builders import HOSTNAME, ZONE, make_pod, review, selector, with_affinity
from tests.churn_world import ChurnWorld, seed
from tests.fake_apiserver import COLLECTIONS, FakeApiServer
from webhook.cluster.informer import LiveSource
from webhook.cluster.needs import NEEDED
from webhook.cluster.source import StaticSource, snapshot_objects
from webhook.config import FORESIGHT_MAX_BUDGET_MS, Settings, settings_from_dict
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.server.app import create_app

RawObj = dict[str, Any]
CHURN_SECONDS = 6.0
EVENTS_PER_SECOND = 300
CLIENTS = 3
DRY_RUN = {"topospread.io/dry-run": "true"}
# The foresight and its scale-up diagnosis give up past their budget: on a busy machine
# that would make an answer depend on timing, so the budget is the largest allowed.
CONFIG: RawObj = {
    "schedulerConfiguration": {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    },
    "policy": {"foresightBudgetMilliseconds": FORESIGHT_MAX_BUDGET_MS},
}


def fresh_settings() -> Settings:
    """Settings resolved anew: their scheduler framework has seen no snapshot."""
    return settings_from_dict(json.loads(json.dumps(CONFIG)))


def wait_for(check: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


# ---- the probes ------------------------------------------------------------------------


def _with_image(pod: RawObj, image: str) -> RawObj:
    pod["spec"]["containers"][0]["image"] = image
    return pod


def probes() -> dict[str, tuple[str, RawObj, bool]]:
    """name -> (endpoint, AdmissionReview, whether its answer reads only frozen objects)."""
    web = make_pod().name("probe-web").namespace("churn").label("app", "web")
    web = web.annotation("topospread.io/dry-run", "true").requests(cpu="250m")
    web = web.spread(1, ZONE, "DoNotSchedule", selector({"app": "web"}))
    db = make_pod().name("probe-db").namespace("churn").label("app", "db")
    db = db.annotation("topospread.io/dry-run", "true").requests(cpu="250m").obj()
    db = with_affinity(db, "In", "app", HOSTNAME, ["db"], anti=True)
    batch = make_pod().name("probe-batch").namespace("churn").label("app", "batch")
    batch = batch.annotation("topospread.io/dry-run", "true")
    spread_host = make_pod().name("probe-host").namespace("churn").label("app", "web")
    spread_host = spread_host.spread(1, HOSTNAME, "DoNotSchedule", selector({"app": "web"}))
    steady = make_pod().name("probe-steady").namespace("frozen").label("app", "steady")
    steady_pinned = steady.node_selector({"pool": "frozen"}).spread(
        1, ZONE, "DoNotSchedule", selector({"app": "steady"})
    )
    bare_steady = make_pod().name("probe-inject").namespace("frozen").label("app", "steady")
    # The churn probes stay off the frozen nodes (their empty zones would take them all).
    churn_only = {"pool": "churn"}
    web, batch, spread_host = (b.node_selector(churn_only) for b in (web, batch, spread_host))
    db["spec"]["nodeSelector"] = dict(churn_only)
    cases = {
        "mutate-web": ("mutate", _with_image(web.obj(), "img-a:1"), False),
        "mutate-db": ("mutate", _with_image(db, "img-b:1"), False),
        "mutate-batch": ("mutate", batch.obj(), False),
        "validate-host": ("validate", spread_host.obj(), False),
        "validate-frozen": ("validate", steady_pinned.obj(), True),
        "mutate-frozen": ("mutate", bare_steady.obj(), True),
    }
    return {
        name: (
            endpoint,
            review(pod, uid=f"uid-{name}", namespace=pod["metadata"]["namespace"]),
            frozen,
        )
        for name, (endpoint, pod, frozen) in cases.items()
    }


def check_well_formed(
    name: str, status: int, body: bytes, pod: RawObj, world: ChurnWorld
) -> RawObj:
    """The response of one review: a 200, an AdmissionReview, a patch that applies,
    annotations that are JSON, no internal error, a placement over as many nodes as
    the cluster held at some moment and on a node it held; returns the document."""
    assert status == 200, (name, status, body[:300])
    doc = json.loads(body)
    response = doc["response"]
    assert response["allowed"] is True or response.get("status", {}).get("code") == 403, doc
    for warning in response.get("warnings", []):
        assert "internal error" not in warning, (name, warning)
    if "patch" in response:
        assert response["patchType"] == "JSONPatch"
        patch = json.loads(base64.b64decode(response["patch"]))
        assert isinstance(patch, list) and patch, (name, patch)
        patched = jsonpatch.apply_patch(pod, patch)
        for key, value in patched["metadata"].get("annotations", {}).items():
            if key == "topospread.io/placement":
                summary = json.loads(value)
                assert isinstance(summary, dict), (name, summary)
                lo, hi = world.node_counts
                assert lo <= summary["nodes"] <= hi, (name, summary["nodes"], lo, hi)
                selected = summary["selectedNode"]
                assert selected is None or selected in world.node_names, (name, selected)
    return doc


def readable(doc: RawObj) -> RawObj:
    """The response with its patch decoded and JSON annotation values parsed, so that
    a difference names the field that differs."""
    out = json.loads(json.dumps(doc))
    response = out["response"]
    if "patch" in response:
        patch = json.loads(base64.b64decode(response["patch"]))
        for op in patch:
            value = op.get("value")
            if isinstance(value, str) and value.startswith("{"):
                op["value"] = json.loads(value)
        response["patch"] = patch
    return out


# ---- the harness -----------------------------------------------------------------------


class Client:
    """One keep-alive HTTP connection to the server."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(self, endpoint: str, doc: RawObj) -> tuple[int, bytes]:
        body = json.dumps(doc).encode()
        self.conn.request("POST", f"/{endpoint}", body, {"Content-Type": "application/json"})
        resp = self.conn.getresponse()
        return resp.status, resp.read()

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    yield server
    server.stop()


def settled(source: LiveSource, fake: FakeApiServer) -> bool:
    """The source holds exactly the API server's objects, at their versions."""
    for kind in NEEDED:
        if kind not in COLLECTIONS:
            continue
        want = {
            (o["metadata"].get("namespace") or "", o["metadata"]["name"]): o["metadata"][
                "resourceVersion"
            ]
            for o in fake.current(kind)
        }
        if source.keys(kind) != want:
            return False
    return True


def scratch_answers(
    objects: list[RawObj], cases: dict[str, tuple[str, RawObj, bool]]
) -> dict[str, RawObj]:
    """Each probe's answer from a fresh app on a snapshot built from scratch."""
    snap = Snapshot.from_objects(snapshot_objects(objects))
    app = create_app(fresh_settings(), source=StaticSource(snap, version=(1, 30)))
    out = {}
    with app.test_client() as client:
        for name, (endpoint, doc, _) in cases.items():
            resp = client.post(f"/{endpoint}", json=doc)
            assert resp.status_code == 200, (name, resp.data[:300])
            out[name] = json.loads(resp.data)
    return out


def test_churn_answers_stay_well_formed_and_end_exact(fake: FakeApiServer) -> None:
    world = ChurnWorld(seed())
    for obj in world.initial():
        fake.add(obj)
    cases = probes()
    before = scratch_answers(world.objects(), cases)

    source = LiveSource(
        configuration=Configuration(host=fake.url),
        watch_timeout=30,
        backoff_initial=0.01,
        backoff_cap=0.05,
    )
    app = create_app(fresh_settings(), source=source)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        wait_for(source.synced, "the informer's first sync")
        stop = threading.Event()
        answers: list[tuple[str, int, bytes]] = []
        failures: list[BaseException] = []
        lock = threading.Lock()

        def client_loop(i: int) -> None:
            client = Client(server.port)
            names = sorted(cases)
            n = i
            try:
                while not stop.is_set():
                    name = names[n % len(names)]
                    n += 1
                    endpoint, doc, _ = cases[name]
                    status, body = client.post(endpoint, doc)
                    with lock:
                        answers.append((name, status, body))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                failures.append(exc)
            finally:
                client.close()

        clients = [threading.Thread(target=client_loop, args=(i,)) for i in range(CLIENTS)]
        for t in clients:
            t.start()
        started = time.monotonic()
        interval = 1.0 / EVENTS_PER_SECOND
        while time.monotonic() - started < CHURN_SECONDS:
            due = started + world.events * interval
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            world.step(fake)
        stop.set()
        for t in clients:
            t.join(30)
        assert not failures, failures
        wait_for(lambda: settled(source, fake), "the informer to hold the final state")

        # During the churn: well formed, and exact where only frozen objects are read.
        assert len(answers) > 20, len(answers)
        for name, status, body in answers:
            endpoint, doc, frozen = cases[name]
            got = check_well_formed(name, status, body, doc["request"]["object"], world)
            if frozen:
                assert readable(got) == readable(before[name]), name

        # After it: every answer is the one computed from scratch on the final state.
        after = scratch_answers(world.objects(), cases)
        client = Client(server.port)
        try:
            for name, (endpoint, doc, frozen) in sorted(cases.items()):
                status, body = client.post(endpoint, doc)
                got = check_well_formed(name, status, body, doc["request"]["object"], world)
                assert readable(got) == readable(after[name]), name
                if frozen:
                    assert readable(after[name]) == readable(before[name]), name
        finally:
            client.close()
        print(
            f"seed {seed()}: {world.events} events in {CHURN_SECONDS:.0f} s, "
            f"{len(answers)} reviews answered during the churn"
        )
    finally:
        server.shutdown()
        server.server_close()
        source.stop()
