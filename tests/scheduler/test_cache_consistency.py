"""The runtime's caches under a snapshot that keeps changing.

Plugins and the runtime keep what they computed across decisions, keyed by
Snapshot.version, node generations and the journal of node changes. Two kinds of
checks:

- a reader that runs while a change is under way (a reader not holding the
  source's lock, as the Snapshot's own lock allows) may compute from the half-applied
  state, but must not keep that result once the change is done: the version and the
  generations move only after the change is fully applied. ImageLocality's image
  counts, InterPodAffinity's index of existing terms and the filter memo, one case
  each;
- a property (hypothesis): random sequences of changes (nodes added, relabelled,
  tainted, cordoned, given images, deleted; pods added, bound, marked terminating,
  deleted) interleaved with decisions, some of them taken in the middle of a change,
  give, after every completed change, the decisions a fresh framework makes on a
  fresh snapshot of the same objects.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.builders import HOSTNAME, ZONE, make_node, make_pod, selector, with_affinity
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.imagelocality import ImageLocality
from webhook.scheduler.plugins.interpodaffinity.common import ExistingTermsIndex
from webhook.scheduler.profile import Framework, framework_of

RawObj = dict[str, Any]
MB = 1024 * 1024
DEFAULT_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}


class _WatchedLock:
    """The Snapshot's re-entrant lock, telling `waiting` when another thread has to
    wait for it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.waiting = threading.Event()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.waiting.set()
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class Interleaved(Snapshot):
    """A Snapshot whose next change lets `reader` run in another thread, at `at`:
    "start" (the change's lock taken, nothing changed yet) or "journal" (a node
    already changed, not yet journaled). The change goes on once the reader is done
    or waits for the Snapshot's lock, as a reader without the source's lock would;
    `upsert` and `delete` return once the reader is done too."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = _WatchedLock()  # type: ignore[assignment]
        self.reader: Callable[[], object] | None = None
        self.at = "start"
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    def _let_read(self, at: str) -> None:
        reader = self.reader
        if reader is None or self.at != at:
            return
        self.reader = None
        done = threading.Event()
        lock = self._lock
        assert isinstance(lock, _WatchedLock)
        lock.waiting.clear()

        def run() -> None:
            try:
                reader()
            except BaseException as exc:  # noqa: BLE001 - re-raised by the test
                self.failure = exc
            finally:
                done.set()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        while not done.is_set() and not lock.waiting.is_set():
            done.wait(0.001)

    def _joined(self) -> None:
        if self._thread is not None:
            self._thread.join(30)
            assert not self._thread.is_alive()
            self._thread = None

    def _upsert(self, kind: Any, obj: RawObj) -> None:
        self._let_read("start")
        super()._upsert(kind, obj)

    def _delete(self, kind: Any, obj: RawObj) -> None:
        self._let_read("start")
        super()._delete(kind, obj)

    def _changed(self, name: str) -> None:
        self._let_read("journal")
        super()._changed(name)

    def upsert(self, obj: RawObj) -> None:
        super().upsert(obj)
        self._joined()

    def delete(self, obj: RawObj) -> None:
        super().delete(obj)
        self._joined()


def fresh_framework() -> Framework:
    """The default profile built anew: no plugin has seen any snapshot."""
    profiles, errors = resolve_configuration(DEFAULT_CONFIG)
    assert not errors, errors
    return framework_of(profiles[0])


def image(name: str, size_mb: int = 500) -> RawObj:
    return {"names": [name], "sizeBytes": size_mb * MB}


def imaged_node(name: str, *images: str) -> RawObj:
    b = make_node().name(name).hostname().zone("a").allocatable(cpu="4", memory="8Gi", pods="20")
    return b.images([image(i) for i in images]).obj()


# ---- a reader in the middle of a change ---------------------------------------------------


def test_image_counts_first_read_mid_change_are_not_kept() -> None:
    """n2 gets image `app` while ImageLocality counts the image's nodes for the first
    time (the change's lock taken, nothing changed yet: it counts 1 node). Once the
    change is done it counts 2, as a count from scratch does."""
    plugin = ImageLocality()
    snap = Interleaved.from_objects([imaged_node("n1", "app"), imaged_node("n2")])
    snap.reader = lambda: plugin._image_counts(snap)
    snap.upsert(imaged_node("n2", "app"))
    assert snap.reader is None and snap.failure is None  # the reader did run, mid-change
    counts, total = plugin._image_counts(snap)
    assert (counts["app"], total) == (2, 2)
    scratch = Snapshot.from_objects([imaged_node("n1", "app"), imaged_node("n2", "app")])
    assert ImageLocality()._image_counts(scratch)[0]["app"] == 2


def test_affinity_index_first_synced_mid_change_is_not_kept() -> None:
    """A pod with required anti-affinity to app=web per hostname binds on n2 while
    InterPodAffinity's index syncs for the first time (before the pod is added): a
    web pod must not go to n2 once the change is done."""
    fw = fresh_framework()
    nodes = [imaged_node("n1"), imaged_node("n2")]
    snap = Interleaved.from_objects(nodes)
    web = make_pod().name("web").label("app", "web").requests(cpu="100m").obj()
    guard = with_affinity(
        make_pod().name("guard").node("n2").obj(), "In", "app", HOSTNAME, ["web"], anti=True
    )
    index: ExistingTermsIndex = fw.plugin("InterPodAffinity").index
    snap.reader = lambda: index.sync(snap)
    snap.upsert(guard)
    assert snap.reader is None and snap.failure is None
    got = place(web, snap, framework=fw)
    assert [v.name for v in got.nodes if v.feasible] == ["n1"]
    fresh = place(web, Snapshot.from_objects([*nodes, guard]), framework=fresh_framework())
    assert [v.name for v in fresh.nodes if v.feasible] == ["n1"]


@pytest.mark.parametrize("at", ["start", "journal"])
def test_a_decision_taken_mid_change_leaves_no_stale_memo(at: str) -> None:
    """n2 is cordoned while a whole decision runs mid-change (filter outcomes are
    remembered per node generation and journal mark): the next decision finds n2
    unschedulable."""
    fw = fresh_framework()
    snap = Interleaved.from_objects([imaged_node("n1"), imaged_node("n2")])
    web = make_pod().name("web").label("app", "web").obj()
    assert {v.name for v in place(web, snap, framework=fw).nodes if v.feasible} == {"n1", "n2"}
    cordoned = imaged_node("n2")
    cordoned["spec"] = {"unschedulable": True}
    snap.reader, snap.at = (lambda: place(web, snap, framework=fw)), at
    snap.upsert(cordoned)
    assert snap.reader is None and snap.failure is None
    assert [v.name for v in place(web, snap, framework=fw).nodes if v.feasible] == ["n1"]


# ---- the property -----------------------------------------------------------------------

NODE_NAMES = ["n0", "n1", "n2"]
IMAGES = ["img-a:1", "img-b:1"]

node_change = st.tuples(
    st.just("node"),
    st.sampled_from(NODE_NAMES),
    st.sampled_from(["za", "zb", None]),  # zone label
    st.sets(st.sampled_from(IMAGES)),
    st.sampled_from([None, "taint", "cordon"]),
)
node_delete = st.tuples(st.just("node-delete"), st.sampled_from(NODE_NAMES))
pod_change = st.tuples(
    st.just("pod"),
    st.integers(0, 7),
    st.sampled_from(["web", "db"]),
    st.sampled_from([*NODE_NAMES, ""]),  # "" leaves it unbound
    st.booleans(),  # terminating
    st.sampled_from([None, "anti-web", "with-db"]),  # its own pod (anti-)affinity
    st.sampled_from(["100m", "1500m"]),
)
pod_delete = st.tuples(st.just("pod-delete"), st.integers(0, 7))
change = st.one_of(node_change, node_delete, pod_change, pod_delete)
# (the change; what reads during it, and where: nothing, whole decisions, or the
# plugins' caches alone; a decision after it)
step = st.tuples(
    change,
    st.sampled_from([None, ("decide", "start"), ("decide", "journal"), ("caches", "start")]),
    st.booleans(),
)


def node_of(name: str, zone: str | None, images: set[str], how: str | None) -> RawObj:
    b = make_node().name(name).hostname().allocatable(cpu="2", memory="8Gi", pods="20")
    if zone is not None:
        b = b.zone(zone)
    if how == "taint":
        b = b.taint("dedicated", "db")
    elif how == "cordon":
        b = b.unschedulable()
    return b.images([image(i) for i in sorted(images)]).obj()


def pod_of(
    n: int, app: str, node: str, terminating: bool, affinity: str | None, cpu: str
) -> RawObj:
    b = make_pod().name(f"p{n}").label("app", app).requests(cpu=cpu)
    if node:
        b = b.node(node)
    if terminating:
        b = b.terminating()
    pod = b.obj()
    pod["spec"]["containers"][0]["image"] = IMAGES[n % 2]
    if affinity == "anti-web":
        with_affinity(pod, "In", "app", HOSTNAME, ["web"], anti=True)
    elif affinity == "with-db":
        with_affinity(pod, "In", "app", ZONE, ["db"], required=False, weight=10)
    return pod


def probes() -> list[RawObj]:
    """Pods whose decisions read every cached piece: images, existing pods' terms,
    own (anti-)affinity, spread, resources, taints and cordons."""
    spread = (
        make_pod()
        .name("spread")
        .label("app", "web")
        .requests(cpu="500m")
        .spread(1, ZONE, "DoNotSchedule", selector({"app": "web"}))
        .obj()
    )
    spread["spec"]["containers"][0]["image"] = "img-a:1"
    db = with_affinity(
        make_pod().name("near-db").label("app", "web").requests(cpu="1").obj(),
        "In",
        "app",
        ZONE,
        ["db"],
    )
    db["spec"]["containers"][0]["image"] = "img-b:1"
    tolerant = make_pod().name("tolerant").label("app", "db")
    tolerant = tolerant.toleration("dedicated", "db", "NoSchedule").obj()
    tolerant["spec"]["containers"][0]["image"] = "img-b:1"
    # The spread probe last: its PreFilter waits for the Snapshot's lock (match_counts),
    # so a decision taken mid-change reads the others' caches first, lock-free.
    return [db, tolerant, spread]


def change_of(op: Any) -> tuple[tuple[str, str], RawObj | None]:
    """(kind, name) of the object a drawn change touches, and the object after it
    (None: deleted)."""
    if op[0] == "node":
        return ("Node", op[1]), node_of(*op[1:])
    if op[0] == "node-delete":
        return ("Node", op[1]), None
    if op[0] == "pod":
        return ("Pod", f"p{op[1]}"), pod_of(*op[1:])
    return ("Pod", f"p{op[1]}"), None


def caches(snap: Snapshot, fw: Framework) -> None:
    """Fill the caches a decision reads first (ImageLocality's image counts,
    InterPodAffinity's index), without the rest of a decision."""
    fw.plugin("ImageLocality")._image_counts(snap)
    fw.plugin("InterPodAffinity").index.sync(snap)


def decisions(snap: Snapshot, fw: Framework) -> list[RawObj]:
    return [place(p, snap, framework=fw).to_json() for p in probes()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=25))
@example(  # the first image count, taken as n0 gets img-a: kept past the change if stale
    [
        (("node", "n0", "za", set(), None), None, False),
        (("node", "n1", "za", set(), None), None, False),
        (("node", "n0", "za", {"img-a:1"}, None), ("caches", "start"), True),
    ]
)
def test_decisions_under_changes_equal_decisions_from_scratch(steps: list[Any]) -> None:
    fw = fresh_framework()  # its caches live across every step below
    live: dict[tuple[str, str], RawObj] = {}
    snap = Interleaved()
    for op, mid, after in steps:
        key, obj = change_of(op)
        if obj is None:
            live.pop(key, None)
        else:
            live[key] = obj
        if mid is not None:
            # A reader in another thread during the change: what it gets is not
            # checked (it may read a half-applied state), only that nothing it
            # computed outlives the change.
            what, snap.at = mid
            snap.reader = (
                (lambda: decisions(snap, fw)) if what == "decide" else (lambda: caches(snap, fw))
            )
        if obj is None:
            snap.delete({"kind": key[0], "metadata": {"name": key[1], "namespace": "default"}})
        else:
            snap.upsert(copy.deepcopy(obj))
        snap.reader = None
        if snap.failure is not None:
            raise snap.failure
        if after:
            want = decisions(
                Snapshot.from_objects(copy.deepcopy(list(live.values()))), fresh_framework()
            )
            assert decisions(snap, fw) == want
    want = decisions(Snapshot.from_objects(copy.deepcopy(list(live.values()))), fresh_framework())
    assert decisions(snap, fw) == want
