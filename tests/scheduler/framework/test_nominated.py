"""Pods nominated to a node (status.nominatedNodeName, not bound) count there for pods of
equal or lower priority: RunFilterPluginsWithNominatedPods, after upstream's
framework/runtime/framework_test.go TestFilterPluginsWithNominatedPods (its case names),
then through the whole default profile (place, simulate).

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
UNSCHEDULABLE = Status(Code.UNSCHEDULABLE, "injected")


def node(name: str) -> RawObj:
    return make_node().name(name).hostname().allocatable(cpu="1", memory="1Gi", pods="32").obj()


def nominated(name: str, priority: int, cpu: str = "600m", to: str = "n1") -> RawObj:
    return make_pod().name(name).priority(priority).requests(cpu=cpu).nominated_node(to).obj()


def incoming(priority: int, cpu: str = "600m", name: str = "p") -> RawObj:
    return make_pod().name(name).priority(priority).requests(cpu=cpu).obj()


class Recorder:
    """A filter plugin with PreFilterExtensions that records what AddPod saw, and
    fails Filter when the state holds an added pod (`fail_with_added`) or AddPod itself
    (`add_fails`)."""

    name: ClassVar[str] = "TestPlugin"
    reads: ClassVar[Reads] = Reads(node_fields=("pods",))

    def __init__(self, *, add_fails: bool = False, fail_with_added: bool = False) -> None:
        self.add_fails = add_fails
        self.fail_with_added = fail_with_added
        self.added: list[str] = []

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        if self.fail_with_added and state.get("added"):
            return UNSCHEDULABLE
        return SUCCESS

    def add_pod(self, state: CycleState, pod: RawObj, other: RawObj, node: NodeInfo) -> Status:
        if self.add_fails:
            return Status(Code.ERROR, "injected AddPod failure")
        state["added"] = [*state.get("added", []), other["metadata"]["name"]]
        self.added.append(other["metadata"]["name"])
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: RawObj, other: RawObj, node: NodeInfo) -> Status:
        return SUCCESS


def run(plugin: Recorder, pod: RawObj, objects: list[RawObj]) -> Status:
    snap = Snapshot.from_objects([node("n1"), *objects])
    handle = FilterHandle(snap, pod, [plugin], {}, [plugin.name], pod_priority)
    return handle.run_filter_plugins_with_nominated_pods(CycleState(), pod, snap.nodes["n1"])


@pytest.mark.parametrize(
    ("plugin", "pod", "objects", "want", "added"),
    [
        pytest.param(Recorder(), incoming(LOW), [], SUCCESS, [], id="node has no nominated pod"),
        pytest.param(
            Recorder(),
            incoming(LOW),
            [nominated("n", HIGH)],
            SUCCESS,
            ["n"],
            id="node has a high-priority nominated pod and all filters succeed",
        ),
        pytest.param(
            Recorder(add_fails=True),
            incoming(LOW),
            [nominated("n", HIGH)],
            Status(
                Code.ERROR,
                'running AddPod on PreFilter plugin "TestPlugin": injected AddPod failure',
            ),
            [],
            id="node has a high-priority nominated pod and pre filters fail",
        ),
        pytest.param(
            Recorder(fail_with_added=True),
            incoming(LOW),
            [nominated("n", HIGH)],
            UNSCHEDULABLE,
            ["n"],
            id="node has a high-priority nominated pod and filters fail",
        ),
        pytest.param(
            Recorder(add_fails=True),
            incoming(HIGH),
            [nominated("n", LOW)],
            SUCCESS,
            [],
            id="node has a low-priority nominated pod and pre filters return unschedulable",
        ),
        pytest.param(
            Recorder(fail_with_added=True),
            incoming(HIGH),
            [nominated("n", HIGH)],
            UNSCHEDULABLE,
            ["n"],
            id="a nominated pod of equal priority counts",
        ),
        pytest.param(
            Recorder(fail_with_added=True),
            incoming(HIGH, name="n"),
            [nominated("n", HIGH)],
            SUCCESS,
            [],
            id="the pod itself, nominated there, does not count",
        ),
    ],
)
def test_filter_plugins_with_nominated_pods(
    plugin: Recorder, pod: RawObj, objects: list[RawObj], want: Status, added: list[str]
) -> None:
    """RunFilterPluginsWithNominatedPods: the nominated pods of >= priority added to a
    copy of the state and the node (AddPod), then Filter; the second pass without them."""
    assert run(plugin, pod, objects) == want
    assert plugin.added == added


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
