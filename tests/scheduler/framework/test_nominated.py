"""Pods nominated to a node (status.nominatedNodeName, not bound) count there for pods of
equal or lower priority: RunFilterPluginsWithNominatedPods, on upstream's tables
TestFilterPluginsWithNominatedPods (framework/runtime/framework_test.go) and
TestFindFitPredicateCallCounts (schedule_one_test.go) under their case names, then
through the whole default profile (place, simulate).

Every case of both tables is here. Upstream registers its TestPlugin1 as a PreFilter
plugin only: here it is a plugin of the handle with PreFilterExtensions and no Filter
step (the handle runs the Filter of the plugins its order names).

Legend: nodes hold 1 cpu; "nominated n1 [p 1000, 600m]" is an unbound pod of priority
1000 requesting 600m, nominated to n1.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from tests.builders import make_node, make_pod
from webhook.api.kube import RawObj
from webhook.scheduler.framework.nominated import FilterHandle
from webhook.scheduler.framework.preemption import pod_priority
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SUCCESS, Code, CycleState, Reads, Status
from webhook.scheduler.placement import place, simulate

LOW, HIGH = 0, 1000


def node(name: str) -> RawObj:
    return make_node().name(name).hostname().allocatable(cpu="1", memory="1Gi", pods="32").obj()


def nominated(name: str, priority: int, cpu: str = "600m", to: str = "n1") -> RawObj:
    return make_pod().name(name).priority(priority).requests(cpu=cpu).nominated_node(to).obj()


def incoming(priority: int, cpu: str = "600m", name: str = "p") -> RawObj:
    return make_pod().name(name).priority(priority).requests(cpu=cpu).obj()


class FakePlugin:
    """upstream's TestPlugin (framework_test.go): AddPod returns `add_pod_status`
    (PreFilterAddPodStatus), Filter `filter_status` (FilterStatus); each records what
    it saw."""

    reads: ClassVar[Reads] = Reads(node_fields=("pods",))

    def __init__(
        self, name: str, *, add_pod_status: Status = SUCCESS, filter_status: Status = SUCCESS
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.add_pod_status = add_pod_status
        self.filter_status = filter_status
        self.added: list[str] = []
        self.filter_calls = 0

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        self.filter_calls += 1
        return self.filter_status

    def add_pod(self, state: CycleState, pod: RawObj, other: RawObj, node: NodeInfo) -> Status:
        self.added.append(other["metadata"]["name"])
        return self.add_pod_status

    def remove_pod(self, state: CycleState, pod: RawObj, other: RawObj, node: NodeInfo) -> Status:
        return SUCCESS


# errInjectedStatus / errInjectedFilterStatus.
INJECTED = "injected status"
INJECTED_FILTER = "injected filter status"


def run(
    pod: RawObj,
    objects: list[RawObj],
    pre_filter: FakePlugin | None = None,
    filter_: FakePlugin | None = None,
) -> Status:
    """RunFilterPluginsWithNominatedPods on n1, with `pre_filter` (a PreFilter plugin
    with PreFilterExtensions, no Filter step) and `filter_` (a Filter plugin)."""
    snap = Snapshot.from_objects([node("n1"), *objects])
    plugins = [p for p in (pre_filter, filter_) if p is not None]
    order = [filter_.name] if filter_ is not None else []
    handle = FilterHandle(snap, pod, plugins, {}, order, pod_priority)
    return handle.run_filter_plugins_with_nominated_pods(CycleState(), pod, snap.nodes["n1"])


@pytest.mark.parametrize(
    ("pre_filter", "filter_", "pod", "objects", "want"),
    [
        pytest.param(None, None, incoming(LOW), [], SUCCESS, id="node has no nominated pod"),
        pytest.param(
            FakePlugin("TestPlugin1"),
            FakePlugin("TestPlugin2"),
            incoming(LOW),
            [nominated("n", HIGH)],
            SUCCESS,
            id="node has a high-priority nominated pod and all filters succeed",
        ),
        pytest.param(
            FakePlugin("TestPlugin1", add_pod_status=Status(Code.ERROR, INJECTED)),
            None,
            incoming(LOW),
            [nominated("n", HIGH)],
            Status(Code.ERROR, f'running AddPod on PreFilter plugin "TestPlugin1": {INJECTED}'),
            id="node has a high-priority nominated pod and pre filters fail",
        ),
        pytest.param(
            FakePlugin("TestPlugin1"),
            FakePlugin("TestPlugin2", filter_status=Status(Code.ERROR, INJECTED_FILTER)),
            incoming(LOW),
            [nominated("n", HIGH)],
            Status(Code.ERROR, f'running "TestPlugin2" filter plugin: {INJECTED_FILTER}'),
            id="node has a high-priority nominated pod and filters fail",
        ),
        pytest.param(
            FakePlugin("TestPlugin1", add_pod_status=Status(Code.UNSCHEDULABLE, INJECTED)),
            FakePlugin("TestPlugin2"),
            incoming(HIGH),
            [nominated("n", LOW)],
            SUCCESS,
            id="node has a low-priority nominated pod and pre filters return unschedulable",
        ),
    ],
)
def test_filter_plugins_with_nominated_pods(
    pre_filter: FakePlugin | None,
    filter_: FakePlugin | None,
    pod: RawObj,
    objects: list[RawObj],
    want: Status,
) -> None:
    """Upstream's TestFilterPluginsWithNominatedPods (framework_test.go), case by case:
    the nominated pods of >= priority added through AddPod, then Filter (an Error
    wrapped with the plugin's name, as RunFilterPlugins does)."""
    assert run(pod, objects, pre_filter, filter_) == want


@pytest.mark.parametrize(
    ("pod", "expected_count"),
    [
        pytest.param(
            incoming(HIGH), 1, id="nominated pods have lower priority, predicate is called once"
        ),
        pytest.param(
            incoming(LOW), 2, id="nominated pods have higher priority, predicate is called twice"
        ),
    ],
)
def test_find_fit_predicate_call_counts(pod: RawObj, expected_count: int) -> None:
    """Upstream's TestFindFitPredicateCallCounts (schedule_one_test.go): a pod of medium
    priority nominated to the node; Filter runs once per pass, and the second pass (the
    node without the nominated pods) runs only when some were added."""
    fake = FakePlugin("FakeFilter")
    assert run(pod, [nominated("nominated", (LOW + HIGH) // 2)], None, fake) == SUCCESS
    assert fake.filter_calls == expected_count


@pytest.mark.parametrize(
    ("pod", "objects", "want", "added"),
    [
        pytest.param(
            incoming(HIGH),
            [nominated("n", HIGH)],
            Status(Code.UNSCHEDULABLE, INJECTED),
            ["n"],
            id="a nominated pod of equal priority counts",
        ),
        pytest.param(
            incoming(HIGH, name="n"),
            [nominated("n", HIGH)],
            SUCCESS,
            [],
            id="the pod itself, nominated there, does not count",
        ),
    ],
)
def test_add_ge_nominated_pods_boundaries(
    pod: RawObj, objects: list[RawObj], want: Status, added: list[str]
) -> None:
    """addGENominatedPods's two boundaries, not in upstream's tables: a nominated pod of
    priority >= the pod's counts, the pod itself (same UID; here namespace/name) not.
    The Filter fails whenever the first pass runs with a pod added."""
    extension = FakePlugin("TestPlugin1")
    failing = FakePlugin("TestPlugin2", filter_status=Status(Code.UNSCHEDULABLE, INJECTED))
    got = run(pod, objects, extension, failing if added else FakePlugin("TestPlugin2"))
    assert got == want
    assert extension.added == added


@pytest.mark.parametrize(
    ("pod", "objects", "want"),
    [
        pytest.param(incoming(LOW), [nominated("n", HIGH)], "n2", id="higher priority holds n1"),
        pytest.param(incoming(HIGH), [nominated("n", HIGH)], "n2", id="equal priority holds n1"),
        pytest.param(incoming(HIGH), [nominated("n", LOW)], "n1", id="lower priority does not"),
        pytest.param(
            incoming(LOW), [nominated("n", HIGH, cpu="300m")], "n1", id="room left for both"
        ),
    ],
)
def test_nominated_pods_hold_room_in_place(pod: RawObj, objects: list[RawObj], want: str) -> None:
    """n1 and n2 alike (n1 first by name); a nominated pod holds its room on n1."""
    snap = Snapshot.from_objects([node("n1"), node("n2"), *objects])
    decision = place(pod, snap)
    assert decision.selected_node == want
    n1 = next(v for v in decision.nodes if v.name == "n1")
    if want == "n2":
        assert not n1.feasible
        assert n1.filters["NodeResourcesFit"] == Status(
            Code.UNSCHEDULABLE, "Insufficient cpu", ("Insufficient cpu",)
        )
        assert decision.reasons == {"Insufficient cpu": 1}


def test_nominated_pod_is_not_a_pod_of_the_node() -> None:
    """A nominated pod is held apart: not on its node, not counted in a namespace."""
    snap = Snapshot.from_objects([node("n1"), nominated("n", HIGH)])
    assert snap.nodes["n1"].pods == []
    assert snap.pods_in("default") == []
    assert [p["metadata"]["name"] for p in snap.nominated_pods("n1")] == ["n"]
    assert snap.nominated_nodes() == ["n1"]
    bound = {**nominated("n", HIGH), "spec": {**nominated("n", HIGH)["spec"], "nodeName": "n1"}}
    snap.upsert(bound)
    assert snap.nominated_nodes() == []
    assert [p["metadata"]["name"] for p in snap.nodes["n1"].pods] == ["n"]


def test_simulate_keeps_room_for_the_nominated_pod() -> None:
    """Two replicas of a low-priority pod: the room n1 holds for a nominated pod of
    higher priority is not theirs."""
    snap = Snapshot.from_objects([node("n1"), node("n2"), nominated("n", HIGH, cpu="1")])
    sim = simulate(incoming(LOW, cpu="500m"), snap, replicas=3)
    assert sim.placements == ["n2", "n2", None]
