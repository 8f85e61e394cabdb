"""LiveSource against a fake API server: list, watch, bookmarks, 410, drops, errors.

Each test scripts the fake (tests/fake_apiserver.py), lets the source catch up
and checks that what the source holds equals a fresh list of the fake's
objects. Waits are bounded (WAIT seconds) and every source is stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from kubernetes.client import Configuration

from tests.builders import ZONE, make_node, make_pod
from tests.fake_apiserver import COLLECTIONS, FakeApiServer
from webhook.cluster.informer import RESOURCES, Backoff, LiveSource, parse_server_version
from webhook.cluster.source import snapshot_objects
from webhook.cluster.trim import trim
from webhook.errors import ConfigError
from webhook.scheduler.framework.snapshot import Snapshot

RawObj = dict[str, Any]
WAIT = 10.0


class FakeSnapshot:
    """Records what the source feeds it: kind -> (namespace, name) -> object."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[tuple[str, str], RawObj]] = {k: {} for k in COLLECTIONS}
        self.lock = threading.Lock()

    @classmethod
    def from_objects(cls, objs: Iterable[RawObj]) -> FakeSnapshot:
        snap = cls()
        for obj in objs:
            snap.upsert(obj)
        return snap

    @staticmethod
    def _key(obj: RawObj) -> tuple[str, str]:
        meta = obj["metadata"]
        return (meta.get("namespace", ""), meta["name"])

    def upsert(self, obj: RawObj) -> None:
        with self.lock:
            self.objects[obj["kind"]][self._key(obj)] = obj

    def delete(self, obj: RawObj) -> None:
        with self.lock:
            del self.objects[obj["kind"]][self._key(obj)]

    def state(self) -> dict[str, dict[tuple[str, str], RawObj]]:
        with self.lock:
            return {k: dict(v) for k, v in self.objects.items()}


def fresh_state(server: FakeApiServer) -> dict[str, dict[tuple[str, str], RawObj]]:
    """What a source should hold: every object of a fresh list, trimmed."""
    return {
        kind: {FakeSnapshot._key(o): trim(o, kind) for o in server.current(kind)}
        for kind in COLLECTIONS
    }


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def converged(source: LiveSource, server: FakeApiServer) -> bool:
    snap = source.snapshot()
    return isinstance(snap, FakeSnapshot) and snap.state() == fresh_state(server)


def assert_converges(source: LiveSource, server: FakeApiServer) -> None:
    try:
        wait_until(lambda: converged(source, server), "the source to equal a fresh list")
    except AssertionError:
        snap = source.snapshot()
        assert isinstance(snap, FakeSnapshot)
        assert snap.state() == fresh_state(server)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer().start()
    yield fake
    fake.stop()


@pytest.fixture
def make_source(server: FakeApiServer) -> Iterator[Callable[..., LiveSource]]:
    sources: list[LiveSource] = []

    def make(**kwargs: Any) -> LiveSource:
        options: dict[str, Any] = {
            "configuration": Configuration(host=server.url),
            "watch_timeout": 30,
            "backoff_initial": 0.01,
            "backoff_cap": 0.05,
            "snapshot_factory": FakeSnapshot.from_objects,
        }
        options.update(kwargs)
        source = LiveSource(**options)
        sources.append(source)
        return source

    yield make
    for source in sources:
        source.stop()


def started(make_source: Callable[..., LiveSource], **kwargs: Any) -> LiveSource:
    source = make_source(**kwargs)
    source.start()
    wait_until(source.synced, "the first full sync")
    return source


def pod(name: str, node: str = "n1", **labels: str) -> RawObj:
    return make_pod().name(name).namespace("ns").labels(labels).node(node).obj()


def node(name: str, zone: str = "a") -> RawObj:
    return make_node().name(name).zone(zone).allocatable(cpu="4", memory="8Gi", pods="110").obj()


def service(name: str, **selector: str) -> RawObj:
    meta = {"name": name, "namespace": "ns"}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"selector": selector}}


def controller(kind: str, name: str, **labels: str) -> RawObj:
    api = COLLECTIONS[kind][1]
    meta = {"name": name, "namespace": "ns"}
    if kind == "ReplicationController":
        spec: RawObj = {"selector": labels}
    else:
        spec = {"selector": {"matchLabels": labels}}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "spec": spec}


def seed(server: FakeApiServer) -> None:
    for i in range(3):
        server.add(node(f"n{i}", zone="ab"[i % 2]))
    for i in range(5):
        server.add(pod(f"p{i}", node=f"n{i % 3}", app="web"))
    server.add(service("web", app="web"))
    for kind in ("ReplicaSet", "StatefulSet", "ReplicationController"):
        server.add(controller(kind, "c", app="web"))


# ---- first sync ----------------------------------------------------------------------


def test_first_list_pages_through_every_kind(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """With limit=2, five pods take three pages; the source holds all of every kind."""
    seed(server)
    source = started(make_source, page_size=2)
    assert_converges(source, server)
    lists = server.requests_for("Pod", watch=False)
    assert [r.query.get("limit") for r in lists] == ["2", "2", "2"]
    assert "continue" not in lists[0].query
    assert all("continue" in r.query for r in lists[1:])
    for kind in COLLECTIONS:
        assert server.requests_for(kind, watch=False), kind


def test_list_items_without_kind_are_trimmed_as_their_kind(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """List items carry no kind; the source sets it, and drops what the model does not read."""
    full = node("n1")
    full["status"]["images"] = [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 1}]
    full["status"]["nodeInfo"] = {"kubeletVersion": "v1.34.0"}
    server.add(full)
    source = started(make_source)
    snap = source.snapshot()
    assert isinstance(snap, FakeSnapshot)
    held = snap.state()["Node"][("", "n1")]
    assert held["kind"] == "Node" and held["apiVersion"] == "v1"
    assert held["status"] == {
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "images": [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 1}],
    }
    assert held["metadata"]["labels"] == {ZONE: "a"}


def test_synced_flips_only_after_every_kind_is_listed(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """While one kind's list is pending: not synced, no snapshot, nothing to wait for;
    after it: both."""
    seed(server)
    server.hold_lists("StatefulSet")
    source = make_source()
    source.start()
    others = [k for k in COLLECTIONS if k != "StatefulSet"]
    # A kind starts watching only after its list is applied.
    wait_until(
        lambda: all(server.requests_for(k, watch=True) for k in others), "the other kinds' lists"
    )
    assert source.synced() is False
    assert source.snapshot() is None
    with source.reading() as snap:
        assert snap is None
    # Nothing to wait for before the first sync: wait_for answers at once.
    started_at = time.monotonic()
    assert source.wait_for("ReplicaSet", "ns", "c", timeout=WAIT) is False
    assert time.monotonic() - started_at < WAIT / 2
    server.release_lists("StatefulSet")
    wait_until(source.synced, "the first full sync")
    assert source.snapshot() is not None
    assert_converges(source, server)


def test_wait_for_returns_when_the_watch_delivers_the_object(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """wait_for: True at once for an object held, True as soon as a held-back watch
    delivers one, False after its timeout for one that never comes."""
    seed(server)
    source = started(make_source)
    assert source.wait_for("ReplicaSet", "ns", "c", timeout=0) is True
    server.hold_watches("ReplicaSet")
    server.add(controller("ReplicaSet", "late", app="web"))
    threading.Timer(0.3, server.release_watches, args=("ReplicaSet",)).start()
    started_at = time.monotonic()
    assert source.wait_for("ReplicaSet", "ns", "late", timeout=WAIT) is True
    waited = time.monotonic() - started_at
    assert 0.2 < waited < WAIT / 2, waited
    assert source.wait_for("ReplicaSet", "ns", "never", timeout=0.2) is False
    assert source.wait_for("ReplicaSet", "other", "c", timeout=0) is False


def test_list_errors_are_retried_until_the_list_succeeds(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """HTTP 500 twice on the pod list, then success: synced, nothing missing."""
    seed(server)
    server.fail_next("Pod", 500, 500)
    source = started(make_source)
    assert len(server.requests_for("Pod", watch=False)) == 3
    assert_converges(source, server)


def test_a_page_that_fails_mid_list_serves_nothing_until_a_whole_list_succeeds(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """The second page of the first pod list fails: not synced, no snapshot, until the
    list is taken again from its first page and completes."""
    seed(server)
    server.fail_next("Pod", 0, 500)
    source = make_source(page_size=2, backoff_initial=0.5, backoff_cap=0.5)
    source.start()
    wait_until(lambda: len(server.requests_for("Pod", watch=False)) >= 2, "the failed page")
    assert source.synced() is False and source.snapshot() is None
    wait_until(source.synced, "the first full sync")
    tokens = ["continue" in r.query for r in server.requests_for("Pod", watch=False)]
    assert tokens == [False, True, False, True, True]
    assert_converges(source, server)


def test_expired_continue_token_restarts_the_list_from_the_first_page(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """410 on the second page: the list starts over without a token and completes."""
    seed(server)
    server.fail_next("Pod", 0, 410)
    source = started(make_source, page_size=2)
    assert_converges(source, server)
    tokens = ["continue" in r.query for r in server.requests_for("Pod", watch=False)]
    assert tokens == [False, True, False, True, True]


# ---- watch events --------------------------------------------------------------------

KIND_CASES: list[tuple[str, Callable[[], RawObj], Callable[[RawObj], RawObj]]] = [
    ("Node", lambda: node("n9", zone="a"), lambda o: {**o, "spec": {"unschedulable": True}}),
    (
        "Pod",
        lambda: pod("p9", node="n1", app="web"),
        lambda o: {**o, "metadata": {**o["metadata"], "labels": {"app": "db"}}},
    ),
    ("Service", lambda: service("s9", app="web"), lambda o: {**o, "spec": {"selector": {}}}),
    (
        "ReplicaSet",
        lambda: controller("ReplicaSet", "r9", app="web"),
        lambda o: {**o, "spec": {"selector": {"matchLabels": {"app": "db"}}}},
    ),
    (
        "StatefulSet",
        lambda: controller("StatefulSet", "s9", app="web"),
        lambda o: {**o, "spec": {"selector": {"matchLabels": {"app": "db"}}}},
    ),
    (
        "ReplicationController",
        lambda: controller("ReplicationController", "c9", app="web"),
        lambda o: {**o, "spec": {"selector": {"app": "db"}}},
    ),
]


@pytest.mark.parametrize(("kind", "build", "change"), KIND_CASES, ids=[c[0] for c in KIND_CASES])
def test_added_modified_deleted_keep_the_source_equal_to_a_fresh_list(
    server: FakeApiServer,
    make_source: Callable[..., LiveSource],
    kind: str,
    build: Callable[[], RawObj],
    change: Callable[[RawObj], RawObj],
) -> None:
    """After ADDED, after MODIFIED, after DELETED: the source equals a fresh list."""
    seed(server)
    source = started(make_source)
    created = server.add(build())
    assert_converges(source, server)
    server.modify(change(created))
    assert_converges(source, server)
    server.delete(created)
    assert_converges(source, server)
    assert len(server.requests_for(kind, watch=False)) == 1


def test_pod_moving_node_and_being_deleted_and_recreated(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """A burst of events on one name (bind, rebind, delete, recreate) ends in the last state."""
    seed(server)
    source = started(make_source)
    unbound = make_pod().name("x").namespace("ns").label("app", "web").obj()
    created = server.add(unbound)
    bound = server.modify({**created, "spec": {**created["spec"], "nodeName": "n1"}})
    server.modify({**bound, "spec": {**bound["spec"], "nodeName": "n2"}})
    server.delete(bound)
    server.add(pod("x", node="n0", app="db"))
    assert_converges(source, server)


def test_bookmark_moves_the_resume_point(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """After a BOOKMARK the next watch resumes from the bookmark's resourceVersion."""
    seed(server)
    source = started(make_source)
    mark = server.bookmark("Pod")
    wait_until(lambda: source.counts().get("bookmarks", 0) >= 1, "the bookmark")
    server.end_watches("Pod")
    wait_until(lambda: len(server.requests_for("Pod", watch=True)) >= 2, "the re-watch")
    watches = server.requests_for("Pod", watch=True)
    assert watches[-1].query["resourceVersion"] == str(mark)
    assert watches[-1].query["allowWatchBookmarks"] == "true"
    assert len(server.requests_for("Pod", watch=False)) == 1


def test_watch_requests_ask_for_bookmarks_and_a_timeout(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """A watch resumes from the list's resourceVersion with bookmarks and timeoutSeconds."""
    seed(server)
    started(make_source, watch_timeout=60)
    lists = server.requests_for("Node", watch=False)
    watch = server.requests_for("Node", watch=True)[0].query
    list_rv = str(server.resource_version)
    assert lists and watch["resourceVersion"] == list_rv
    assert watch["allowWatchBookmarks"] == "true"
    assert 60 <= int(watch["timeoutSeconds"]) < 120


# ---- failures ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["ERROR event", "HTTP 410"])
def test_gone_triggers_a_relist_that_catches_up(
    server: FakeApiServer, make_source: Callable[..., LiveSource], how: str
) -> None:
    """Changes missed by the watch (add, modify, delete) arrive through the re-list."""
    seed(server)
    source = started(make_source)
    server.hold_watches("Pod")
    server.add(pod("new", app="web"))
    server.delete(pod("p0"))
    changed = pod("p1", node="n2", app="db")
    server.modify(changed)
    if how == "ERROR event":
        server.compact("Pod")
    else:
        server.fail_next("Pod", 410)
        server.end_watches("Pod")
    server.release_watches("Pod")
    assert_converges(source, server)
    assert len(server.requests_for("Pod", watch=False)) == 2
    assert source.counts()["relists"] == 1


def test_dropped_connection_mid_event_loses_no_update(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """Half an event then a hang-up: the source re-watches from its last whole event."""
    seed(server)
    source = started(make_source)
    before = server.add(pod("before-drop", app="web"))
    assert_converges(source, server)
    server.drop_next_event("Pod")
    server.add(pod("after-drop", app="web"))
    assert_converges(source, server)
    watches = server.requests_for("Pod", watch=True)
    assert len(watches) == 2
    assert watches[1].query["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert len(server.requests_for("Pod", watch=False)) == 1


def test_watch_http_500_backs_off_and_resumes_without_relisting(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """Two 500s on re-watching nodes, then success: the update made meanwhile arrives."""
    seed(server)
    source = started(make_source)
    server.fail_next("Node", 500, 500)
    server.end_watches("Node")
    server.add(node("late"))
    assert_converges(source, server)
    assert len(server.requests_for("Node", watch=True)) == 4
    assert len(server.requests_for("Node", watch=False)) == 1


# ---- lifecycle, version, configuration ------------------------------------------------


def test_nothing_runs_before_start_and_stop_ends_every_thread(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """Construction sends nothing; start() syncs; stop() ends the threads it started."""
    seed(server)
    source = make_source()
    assert server.requests == []
    assert source.synced() is False and source.snapshot() is None
    before = set(threading.enumerate())
    source.start()
    wait_until(source.synced, "the first full sync")
    ours = [t for t in threading.enumerate() if t not in before and t.name.startswith("topo")]
    assert sorted(t.name for t in ours) == sorted(
        [f"topospread-watch-{r.kind}" for r in RESOURCES] + ["topospread-server-version"]
    )
    assert all(t.daemon for t in ours)
    source.stop()
    assert [t.name for t in ours if t.is_alive()] == []


def test_server_version_is_read_from_the_api_server(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """/version with minor "30+" reads as (1, 30)."""
    source = make_source()
    assert source.server_version() is None
    source.start()
    wait_until(lambda: source.server_version() is not None, "the server version")
    assert source.server_version() == (1, 30)


def test_fetch_server_version_asks_now_without_start(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """A blocking fetch works before start() and starts no thread."""
    server.version = {"major": "", "minor": "", "gitVersion": "v1.29.4-eks-036c24b"}
    source = make_source()
    assert source.fetch_server_version() == (1, 29)
    assert source.server_version() == (1, 29)
    assert [r.path for r in server.requests] == ["/version"]
    assert source.synced() is False


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"major": "1", "minor": "30"}, (1, 30)),
        ({"major": "1", "minor": "30+"}, (1, 30)),
        ({"major": "1+", "minor": "29+"}, (1, 29)),
        ({"major": "", "minor": "", "gitVersion": "v1.28.3-eks-4f4795d"}, (1, 28)),
        ({"major": "1", "minor": "x", "gitVersion": "v1.31.0"}, (1, 31)),
        ({"major": "1", "minor": ""}, None),
        ({"major": 1, "minor": 30}, None),
        ({"gitVersion": "unknown"}, None),
        ([], None),
    ],
)
def test_parse_server_version(body: Any, expected: tuple[int, int] | None) -> None:
    assert parse_server_version(body) == expected


def test_kubeconfig_configures_host_and_bearer_token(server: FakeApiServer, tmp_path: Any) -> None:
    """A kubeconfig's server and token reach every request (Authorization header)."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        f"clusters: [{{name: fake, cluster: {{server: '{server.url}'}}}}]\n"
        "users: [{name: me, user: {token: s3cret}}]\n"
        "contexts: [{name: fake, context: {cluster: fake, user: me}}]\n"
    )
    source = LiveSource(
        kubeconfig=str(kubeconfig), backoff_initial=0.01, snapshot_factory=FakeSnapshot.from_objects
    )
    try:
        source.start()
        wait_until(source.synced, "the first full sync")
    finally:
        source.stop()
    assert server.requests
    assert {r.headers.get("authorization") for r in server.requests} == {"Bearer s3cret"}


def test_unusable_kubeconfig_is_a_config_error(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match="kubeconfig"):
        LiveSource(kubeconfig=str(tmp_path / "missing"))


def test_in_cluster_outside_a_cluster_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ConfigError, match="in-cluster"):
        LiveSource(in_cluster=True)


# ---- backoff -------------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_within_its_jitter_band() -> None:
    """Delays are drawn from [d/2, d], d = initial * 2**n capped; reset starts over."""
    low = Backoff(initial=1.0, cap=5.0, rng=lambda: 0.0)
    high = Backoff(initial=1.0, cap=5.0, rng=lambda: 1.0)
    assert [low.next() for _ in range(5)] == [0.5, 1.0, 2.0, 2.5, 2.5]
    assert [high.next() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    high.reset()
    assert high.next() == 1.0


# ---- with the real Snapshot ----------------------------------------------------------


def snapshot_view(snap: Snapshot) -> dict[str, Any]:
    """What the model reads of a Snapshot: nodes, pods per node, requests, workloads.

    A request summing to zero may be absent or 0 in NodeInfo.requested: both read as 0.
    """
    return {
        "nodes": {
            name: (
                sorted(p["metadata"]["name"] for p in info.pods),
                {k: v for k, v in info.requested.items() if v},
                info.labels,
            )
            for name, info in snap.nodes.items()
        },
        "pods": snap.pod_count(),
        **{
            attr: {ns: sorted(o["metadata"]["name"] for o in objs) for ns, objs in by_ns.items()}
            for attr, by_ns in (
                ("services", snap.services),
                ("replicasets", snap.replicasets),
                ("statefulsets", snap.statefulsets),
                ("replicationcontrollers", snap.replicationcontrollers),
            )
        },
    }


def real_converged(source: LiveSource, server: FakeApiServer) -> bool:
    everything = [o for kind in COLLECTIONS for o in server.current(kind)]
    expected = snapshot_view(Snapshot.from_objects(snapshot_objects(everything)))
    with source.reading() as snap:
        return isinstance(snap, Snapshot) and snapshot_view(snap) == expected


def test_events_and_relists_keep_the_real_snapshot_equal_to_a_fresh_one(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """Default Snapshot: binds, moves, deletes, a new node and a 410 re-list all land."""
    seed(server)
    source = started(make_source, snapshot_factory=None)
    check = lambda: wait_until(lambda: real_converged(source, server), "the real snapshot")  # noqa: E731
    check()
    moved = server.current("Pod")[0]
    moved["spec"]["nodeName"] = "n2"
    moved["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    server.modify(moved)
    server.add(node("n3", zone="c"))
    server.add(pod("on-new-node", node="n3", app="web"))
    check()
    server.hold_watches("Pod")
    server.delete(pod("p4"))
    server.add(pod("missed", node="n1", app="web"))
    server.compact("Pod")
    server.release_watches("Pod")
    check()
    server.delete(node("n3"))
    server.delete(service("web"))
    check()


def test_prime_runs_once_on_the_whole_state_before_synced(
    server: FakeApiServer, make_source: Callable[..., LiveSource]
) -> None:
    """`prime` sees every kind's first list applied, while synced() still says False
    (no review reads the state meanwhile), and runs once, not again on a relist."""
    seed(server)
    seen: list[tuple[bool, dict[str, int]]] = []

    def prime(snap: Any) -> None:
        seen.append((source.synced(), {k: len(v) for k, v in snap.state().items()}))

    source = make_source(prime=prime)
    source.start()
    wait_until(source.synced, "the first full sync")
    assert seen == [(False, {k: len(v) for k, v in fresh_state(server).items()})]
    server.hold_watches("Pod")
    server.add(pod("p9"))
    server.compact("Pod")
    server.release_watches("Pod")
    assert_converges(source, server)
    assert source.counts()["relists"] == 1
    assert len(seen) == 1


def test_a_failing_prime_is_logged_and_the_source_syncs(
    server: FakeApiServer, make_source: Callable[..., LiveSource], caplog: pytest.LogCaptureFixture
) -> None:
    """A model that cannot be primed is slower, not broken: synced all the same."""
    seed(server)

    def prime(snap: Any) -> None:
        raise RuntimeError("boom")

    source = started(make_source, prime=prime)
    assert_converges(source, server)
    assert "priming the cluster state failed" in caplog.text
