"""DefaultPreemption on upstream's tables (plugins/defaultpreemption/default_preemption_test.go),
under their case names.

Legend: resources small/medium/large/veryLarge = 100m/200m/300m/500m cpu with as many
bytes of memory; priorities neg/low/mid/high/veryHigh = -100/0/100/1000/10000; nodes
hold veryLarge and 32 pods unless a case says otherwise; "node-a/zone1" is node-a
with labels hostname=node-a, zone=zone1.

Not carried over (the model has no such part): TestPostFilter's "preemption result
filtered out by extenders" and its PodGroup / workload-aware cases (SchedulingGroup,
TAS, WAP: alpha features upstream); TestPreempt's extender cases and its checks of
the API calls made; TestCustomSelection (IsEligiblePod / MoreImportantPod replaced by
an out-of-tree build); TestDryRunPreemption's expectedNumFilterCalled (the count of
Filter calls, an artefact of the runtime's parallelism).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from tests.builders import make_node, make_pod, pdb
from webhook.api.kube import RawObj
from webhook.scheduler.config.types import DefaultPreemptionArgs
from webhook.scheduler.framework.nominated import FilterHandle
from webhook.scheduler.framework.preemption import Candidate, Evaluator, Preemption
from webhook.scheduler.framework.runtime.framework import FilterCycle
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SUCCESS, Code, CycleState, Reads, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.defaultpreemption import cycle_handle, post_filter
from webhook.scheduler.plugins.defaultpreemption.plugin import (
    NAME,
    CyclePreemption,
    DefaultPreemption,
)
from webhook.scheduler.plugins.noderesources.fit import NodeResourcesFit
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400", "pods": "32"}


def epoch(n: int) -> str:
    """epochTimeN: n seconds after the epoch (upstream's are n nanoseconds apart)."""
    return f"1970-01-01T00:00:0{n}Z"


def pod(
    name: str,
    priority: int | None = None,
    node: str = "",
    req: dict[str, str] | None = None,
    start: int | None = None,
    labels: dict[str, str] | None = None,
) -> RawObj:
    b = make_pod().name(name)
    if priority is not None:
        b = b.priority(priority)
    if node:
        b = b.node(node)
    if req:
        b = b.requests(**req)
    if start is not None:
        b = b.start_time(epoch(start))
    for k, v in (labels or {}).items():
        b = b.label(k, v)
    return b.obj()


def node(spec: str, capacity: dict[str, str] | None = None) -> RawObj:
    """A node from "name[/zone]" with hostname / zone labels, holding `capacity`
    (veryLarge and 32 pods by default; st.MakeNode().Capacity adds 32 pods)."""
    parts = spec.split("/")
    b = make_node().name(parts[0])
    for key, value in zip(("hostname", "zone", "region"), parts, strict=False):
        b = b.label(key, value)
    return b.allocatable(
        **{"pods": "32", **(capacity if capacity is not None else VERY_LARGE)}
    ).obj()


class _Fake:
    name: ClassVar[str] = "fake"
    reads: ClassVar[Reads] = Reads(node_fields=("name",))


class FalseFilter(_Fake):
    name = "FalseFilter"

    def filter(self, state: CycleState, p: RawObj, n: NodeInfo) -> Status:
        return Status(Code.UNSCHEDULABLE, "")


class TrueFilter(_Fake):
    name = "TrueFilter"

    def filter(self, state: CycleState, p: RawObj, n: NodeInfo) -> Status:
        return SUCCESS


class MatchFilter(_Fake):
    """Passes the node named like the pod (tf.NewMatchFilterPlugin)."""

    name = "MatchFilter"

    def filter(self, state: CycleState, p: RawObj, n: NodeInfo) -> Status:
        return SUCCESS if p["metadata"]["name"] == n.name else Status(Code.UNSCHEDULABLE, "")


class FakeFilter(_Fake):
    """Returns one code on every node (tf.FakeFilterPlugin's FailedNodeReturnCodeMap)."""

    name = "FakeFilter"

    def __init__(self, code: Code = Code.SUCCESS) -> None:
        self.code = code

    def filter(self, state: CycleState, p: RawObj, n: NodeInfo) -> Status:
        return SUCCESS if self.code is Code.SUCCESS else Status(self.code, "")


class ErrorExtensions(_Fake):
    """TestPlugin: AddPod / RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"

    def pre_filter(self, state: CycleState, p: RawObj, snapshot: Snapshot) -> Status:
        return SUCCESS

    def filter(self, state: CycleState, p: RawObj, n: NodeInfo) -> Status:
        return SUCCESS

    def add_pod(self, state: CycleState, p: RawObj, other: RawObj, n: NodeInfo) -> Status:
        if n.labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to add pod: {p['metadata']['name']}")
        return SUCCESS

    def remove_pod(self, state: CycleState, p: RawObj, other: RawObj, n: NodeInfo) -> Status:
        if n.labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to remove pod: {p['metadata']['name']}")
        return SUCCESS


def evaluator(
    preemptor: RawObj,
    objects: Sequence[RawObj],
    plugins: Sequence[Any],
    *,
    spread: bool = False,
    args: DefaultPreemptionArgs | None = None,
) -> tuple[Snapshot, FilterHandle, CycleState, Evaluator]:
    """The framework of a case: its filter plugins (PodTopologySpread last when
    `spread`), PreFilter run on the preemptor, DefaultPreemption with `args`."""
    snap = Snapshot.from_objects(objects)
    every = [*plugins, PodTopologySpread()] if spread else list(plugins)
    prepared = FilterCycle(every).prepare(preemptor, snap)
    order = [p.name for p in every]
    handle, state = cycle_handle(preemptor, snap, prepared, order)
    plugin = DefaultPreemption(args)
    return snap, handle, state, Evaluator(NAME, handle, CyclePreemption(plugin, handle))


def seen(candidates: Sequence[Candidate]) -> list[tuple[str, list[str], int]]:
    """(node, victim names sorted, PDB violations), sorted by node, as upstream compares."""
    return sorted(
        (
            c.name,
            sorted(p["metadata"]["name"] for p in c.victims.pods),
            c.victims.num_pdb_violations,
        )
        for c in candidates
    )


# ---- TestPostFilter ------------------------------------------------------------------

U, UU = Code.UNSCHEDULABLE, Code.UNRESOLVABLE
VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}

POST_FILTER = [
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        [],
        {"node1": U},
        "node1",
        Status(),
        id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        pod("p"),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        [],
        {"node1": U},
        None,
        Status(
            U,
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        [],
        {"node1": UU},
        None,
        Status(
            U, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        pod("p", HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        [],
        {},
        None,
        Status(
            U, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
        id="preemption should respect absent NodeToStatusReader entry meaning "
        "UnschedulableAndUnresolvable",
    ),
    pytest.param(
        pod("p", MID),
        [pod("p1", HIGH, "node1"), pod("p2", LOW, "node2")],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        [],
        {"node1": U, "node2": U},
        "node2",
        Status(),
        id="pod can be made schedulable on one node",
    ),
    pytest.param(
        pod("p", VERY_HIGH),
        [
            pod("p1", HIGH, "node1", labels=NON_VIOLATING),
            pod("p2", LOW, "node1", labels=VIOLATING),
            pod("p3", MID, "node2", labels=VIOLATING),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        [
            pdb("violating-pdb", VIOLATING, 0),
            pdb("non-violating-pdb", NON_VIOLATING, 2**31 - 1),
        ],
        {"node1": U, "node2": U},
        "node2",
        Status(),
        id="pod can be made schedulable on minHighestPriority node",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        [],
        {"node1": U, "node2": U},
        None,
        Status(U, "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", HIGH, "node1"), pod("p2", node="node2"), pod("p3", HIGH, "node3")],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        [],
        {"node1": U, "node2": U, "node3": U},
        None,
        Status(
            U,
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
            "2 No preemption victims found for incoming pod.",
        ),
        id="no candidate nodes found with mixed reasons, no lower priority pod and no enough "
        "CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node(f"node{i}", NODE_RES) for i in (1, 2, 3, 4)],
        [],
        {"node1": U, "node2": U, "node4": UU},
        None,
        Status(
            U,
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
            "2 Preemption is not helpful for scheduling.",
        ),
        id="no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes "
        "and 2 nodes don't have enough CPU resource",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1")],
        [make_node().name("node1").label("error", "true").allocatable(pods="32", **LARGE).obj()],
        [],
        {"node1": U},
        None,
        Status(
            Code.ERROR,
            'preemption: running RemovePod on PreFilter plugin "test-plugin": '
            "failed to remove pod: p",
        ),
        id="only one node but failed with TestPlugin",
    ),
    pytest.param(
        pod("p", HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2", req=MEDIUM)],
        [
            make_node().name("node1").label("error", "true").allocatable(pods="32", **LARGE).obj(),
            node("node2", LARGE),
        ],
        [],
        {"node1": U, "node2": U},
        "node2",
        Status(),
        id="one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "pods", "nodes", "pdbs", "statuses", "want_node", "want_status"), POST_FILTER
)
def test_post_filter(
    preemptor: RawObj,
    pods: list[RawObj],
    nodes: list[RawObj],
    pdbs: list[RawObj],
    statuses: dict[str, Code],
    want_node: str | None,
    want_status: Status,
) -> None:
    """TestPostFilter: NodeResourcesFit and a PreFilterExtensions plugin; the node
    statuses of the cycle are given."""
    _, handle, state, _ = evaluator(
        preemptor, [*nodes, *pods, *pdbs], [NodeResourcesFit(), ErrorExtensions()]
    )
    given = {name: Status(code, "") for name, code in statuses.items()}
    plugin = DefaultPreemption()
    result, status = post_filter(plugin, handle, state, preemptor, given)
    assert (status.code, status.reason) == (want_status.code, want_status.reason)
    assert (result.node if result is not None else None) == want_node


# ---- TestDryRunPreemption ------------------------------------------------------------

FIT = NodeResourcesFit
DRY_RUN = [
    pytest.param(
        [FalseFilter()],
        ["node1", "node2"],
        pod("p", HIGH),
        [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
        [],
        None,
        [],
        id="a pod that does not fit on any node",
    ),
    pytest.param(
        [FakeFilter(Code.UNSCHEDULABLE), TrueFilter()],
        ["node1", "node2"],
        pod("p", HIGH),
        [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
        [],
        None,
        [],
        id="a pod that fits with no preemption",
    ),
    pytest.param(
        [FakeFilter(Code.UNSCHEDULABLE), MatchFilter()],
        ["node1", "node2"],
        pod("node1", HIGH),
        [pod("p1", MID, "node1"), pod("p2", MID, "node2")],
        [],
        None,
        [],
        id="a pod that fits on one node with no preemption",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2"],
        pod("p", HIGH, req=LARGE),
        [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        [],
        None,
        [("node1", ["p1"], 0), ("node2", ["p2"], 0)],
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2"],
        pod("p", LOW, req=LARGE),
        [pod("p1", MID, "node1", LARGE), pod("p2", MID, "node2", LARGE)],
        [],
        None,
        [],
        id="a pod that would fit on the nodes, but other pods running are higher priority, "
        "no preemption would happen",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2"],
        pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", LOW, "node1", SMALL),
            pod("p1.2", MID, "node1", LARGE),
            pod("p2", MID, "node2", LARGE),
        ],
        [],
        None,
        [("node1", ["p1.2"], 0), ("node2", ["p2"], 0)],
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2"],
        pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", MID, "node1", SMALL),
            pod("p1.2", LOW, "node1", SMALL),
            pod("p1.3", MID, "node1", MEDIUM),
            pod("p1.4", HIGH, "node1", SMALL),
            pod("p2", HIGH, "node2", LARGE),
        ],
        [],
        None,
        [("node1", ["p1.2", "p1.3"], 0)],
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2"],
        pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", LOW, "node1", SMALL, start=5),
            pod("p1.2", LOW, "node1", SMALL, start=4),
            pod("p1.3", MID, "node1", MEDIUM, start=3),
            pod("p1.4", HIGH, "node1", SMALL, start=2),
            pod("p2", HIGH, "node2", LARGE, start=1),
        ],
        [],
        None,
        [("node1", ["p1.1", "p1.3"], 0)],
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        [FIT()],
        ["node1"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.2", MID, "node1", MEDIUM, labels={"app": "foo"}),
        ],
        [pdb("pdb", {"app": "foo"}, 1)],
        None,
        [("node1", ["p1.1", "p1.2"], 1)],
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        [FIT()],
        ["node1"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.2", MID, "node1", MEDIUM, labels={"app": "foo"}),
        ],
        [pdb("pdb", {"app": "foo"}, 1, disrupted=["p2"])],
        None,
        [("node1", ["p1.1", "p1.2"], 1)],
        id="preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim doesn't belong to DisruptedPods",
    ),
    pytest.param(
        [FIT()],
        ["node1"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.2", MID, "node1", MEDIUM, labels={"app": "foo"}),
        ],
        [pdb("pdb", {"app": "foo"}, 1, disrupted=["p1.2"])],
        None,
        [("node1", ["p1.1", "p1.2"], 0)],
        id="preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim belongs to DisruptedPods",
    ),
    pytest.param(
        [FIT()],
        ["node1"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.2", MID, "node1", MEDIUM, labels={"app": "foo"}),
            pod("p1.3", MID, "node1", MEDIUM, labels={"app": "foo"}),
        ],
        [pdb("pdb", {"app": "foo"}, 1, disrupted=["p1.3"])],
        None,
        [("node1", ["p1.1", "p1.2", "p1.3"], 1)],
        id="preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim which belongs to DisruptedPods is treated as 'nonViolating'",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2", "node3", "node4", "node5"],
        pod("p", HIGH, req=LARGE),
        [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)],
        [],
        (DefaultPreemptionArgs(40, 1), 4),
        [("node1", ["p1"], 0), ("node5", ["p5"], 0)],
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2", "node3", "node4", "node5"],
        pod("p", HIGH, req=LARGE),
        [
            pod("p1", MID, "node1", LARGE),
            pod("p2", VERY_HIGH, "node2", LARGE),
            pod("p3", MID, "node3", LARGE),
            pod("p4", MID, "node4", LARGE),
            pod("p5", VERY_HIGH, "node5", LARGE),
        ],
        [],
        (DefaultPreemptionArgs(40, 1), 4),
        [("node1", ["p1"], 0), ("node3", ["p3"], 0)],
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        [FIT()],
        ["node1", "node2", "node3", "node4", "node5"],
        pod("p", HIGH, req=LARGE),
        [
            pod("p1", MID, "node1", LARGE, labels={"app": "foo"}),
            pod("p2", MID, "node2", LARGE, labels={"app": "foo"}),
            pod("p3", MID, "node3", LARGE),
            pod("p4", MID, "node4", LARGE),
            pod("p5", MID, "node5", LARGE, labels={"app": "foo"}),
        ],
        [pdb("pdb", {"app": "foo"}, 0)],
        (DefaultPreemptionArgs(40, 2), 4),
        [("node1", ["p1"], 1), ("node3", ["p3"], 0), ("node5", ["p5"], 1)],
        id="preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]


@pytest.mark.parametrize(
    ("plugins", "node_names", "preemptor", "pods", "pdbs", "limits", "expected"), DRY_RUN
)
def test_dry_run_preemption(
    plugins: list[Any],
    node_names: list[str],
    preemptor: RawObj,
    pods: list[RawObj],
    pdbs: list[RawObj],
    limits: tuple[DefaultPreemptionArgs, int] | None,
    expected: list[tuple[str, list[str], int]],
) -> None:
    """TestDryRunPreemption: every node dry-run from the offset upstream's seeded random
    source draws in that case (its comments say which), as many candidates as the args
    ask for."""
    args, offset = limits if limits is not None else (None, 0)
    snap, _, state, ev = evaluator(
        preemptor, [*map(node, node_names), *pods, *pdbs], plugins, args=args
    )
    infos = snap.node_table().infos
    _, num = ev.interface.get_offset_and_num_candidates(len(infos))
    got, _ = ev.dry_run_preemption(state, preemptor, infos, pdbs, offset, num)
    assert seen(got) == expected


def test_dry_run_preemption_resolves_pod_topology_spread() -> None:
    """TestDryRunPreemption "preemption to resolve pod topology spread filter failure":
    spreads zone [3/2] hostname [2/1/2], maxSkew 1 on both; node-a keeps its mid pod."""
    foo = {"foo": ""}
    exists = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
    preemptor = (
        make_pod().name("p").label("foo").priority(HIGH)
        .spread(1, "zone", "DoNotSchedule", exists)
        .spread(1, "hostname", "DoNotSchedule", exists)
        .obj()
    )  # fmt: skip
    pods = [
        pod("pod-a1", MID, "node-a", labels=foo),
        pod("pod-a2", LOW, "node-a", labels=foo),
        pod("pod-b1", LOW, "node-b", labels=foo),
        pod("pod-x1", HIGH, "node-x", labels=foo),
        pod("pod-x2", HIGH, "node-x", labels=foo),
    ]
    nodes = [node(n) for n in ("node-a/zone1", "node-b/zone1", "node-x/zone2")]
    snap, _, state, ev = evaluator(preemptor, [*nodes, *pods], [], spread=True)
    infos = snap.node_table().infos
    got, _ = ev.dry_run_preemption(state, preemptor, infos, [], 0, 3)
    assert seen(got) == [("node-a", ["pod-a2"], 0), ("node-b", ["pod-b1"], 0)]


def test_dry_run_preemption_across_cycles_wraps_around() -> None:
    """TestDryRunPreemption "preemption offset across multiple scheduling cycles and wrap
    around": offsets 4, 1, 3 (upstream's seeded draws) give two candidates each."""
    pods = [pod(f"p{i}", MID, f"node{i}", LARGE) for i in range(1, 6)]
    nodes = [node(f"node{i}") for i in range(1, 6)]
    expected = {
        4: [("node1", ["p1"], 0), ("node5", ["p5"], 0)],
        1: [("node2", ["p2"], 0), ("node3", ["p3"], 0)],
        3: [("node4", ["p4"], 0), ("node5", ["p5"], 0)],
    }
    for cycle, offset in enumerate((4, 1, 3), 1):
        preemptor = pod(f"tp{cycle}", HIGH, req=LARGE)
        snap, _, state, ev = evaluator(
            preemptor, [*nodes, *pods], [FIT()], args=DefaultPreemptionArgs(40, 1)
        )
        infos = snap.node_table().infos
        got, _ = ev.dry_run_preemption(state, preemptor, infos, [], offset, 2)
        assert seen(got) == expected[offset]


# ---- TestSelectBestCandidate ---------------------------------------------------------

SELECT_BEST = [
    pytest.param(
        ["node1", "node2"],
        pod("p", HIGH, req=LARGE),
        [pod("p1", MID, "node1", LARGE, start=0), pod("p2", MID, "node2", LARGE, start=0)],
        ["node1", "node2"],
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=0),
            pod("p1.2", MID, "node1", LARGE, start=0),
            pod("p2.1", MID, "node2", MEDIUM, start=0),
            pod("p2.2", LOW, "node2", MEDIUM, start=0),
            pod("p3.1", LOW, "node3", MEDIUM, start=0),
            pod("p3.2", LOW, "node3", MEDIUM, start=0),
        ],
        ["node3"],
        id="node with min highest priority pod is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=0),
            pod("p1.2", MID, "node1", LARGE, start=0),
            pod("p2.1", MID, "node2", LARGE, start=0),
            pod("p2.2", LOW, "node2", MEDIUM, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0),
            pod("p3.2", MID, "node3", MEDIUM, start=0),
        ],
        ["node2"],
        id="when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", SMALL, start=0),
            pod("p1.2", NEG, "node1", SMALL, start=0),
            pod("p1.3", MID, "node1", SMALL, start=0),
            pod("p1.4", NEG, "node1", SMALL, start=0),
            pod("p2.1", MID, "node2", LARGE, start=0),
            pod("p2.2", NEG, "node2", MEDIUM, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0),
            pod("p3.2", NEG, "node3", SMALL, start=0),
            pod("p3.3", LOW, "node3", SMALL, start=0),
        ],
        ["node2"],
        id="when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", SMALL, start=0),
            pod("p1.2", NEG, "node1", SMALL, start=0),
            pod("p1.3", NEG, "node1", SMALL, start=0),
            pod("p2.1", MID, "node2", LARGE, start=0),
            pod("p2.2", NEG, "node2", MEDIUM, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0),
            pod("p3.2", NEG, "node3", SMALL, start=0),
            pod("p3.3", LOW, "node3", SMALL, start=0),
        ],
        ["node2"],
        id="sum of adjusted priorities is considered",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"],
        pod("p", VERY_HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", SMALL, start=0),
            pod("p1.2", LOW, "node1", SMALL, start=0),
            pod("p1.3", LOW, "node1", SMALL, start=0),
            pod("p2.1", HIGH, "node2", LARGE, start=0),
            pod("p3.1", MID, "node3", MEDIUM, start=0),
            pod("p3.2", LOW, "node3", SMALL, start=0),
            pod("p3.3", LOW, "node3", SMALL, start=0),
            pod("p3.4", LOW, "node3", MEDIUM, start=0),
            pod("p4.1", MID, "node4", MEDIUM, start=0),
            pod("p4.2", MID, "node4", SMALL, start=0),
            pod("p4.3", MID, "node4", SMALL, start=0),
            pod("p4.4", NEG, "node4", SMALL, start=0),
        ],
        ["node1"],
        id="non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=2),
            pod("p1.2", MID, "node1", MEDIUM, start=2),
            pod("p2.1", MID, "node2", MEDIUM, start=3),
            pod("p2.2", MID, "node2", MEDIUM, start=3),
            pod("p3.1", MID, "node3", MEDIUM, start=1),
            pod("p3.2", MID, "node3", MEDIUM, start=1),
        ],
        ["node2"],
        id="same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", MID, "node1", MEDIUM, start=4),
            pod("p1.2", MID, "node1", MEDIUM, start=2),
            pod("p2.1", MID, "node2", MEDIUM, start=5),
            pod("p2.2", MID, "node2", MEDIUM, start=1),
            pod("p3.1", MID, "node3", MEDIUM, start=3),
            pod("p3.2", MID, "node3", MEDIUM, start=6),
        ],
        ["node3"],
        id="same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", LOW, "node1", MEDIUM, start=4),
            pod("p1.2", MID, "node1", MEDIUM, start=2),
            pod("p2.1", MID, "node2", MEDIUM, start=6),
            pod("p2.2", LOW, "node2", MEDIUM, start=1),
            pod("p3.1", LOW, "node3", MEDIUM, start=3),
            pod("p3.2", MID, "node3", MEDIUM, start=5),
        ],
        ["node2"],
        id="different priority, same number of victims, different start time for all pods",
    ),
]


@pytest.mark.parametrize(("node_names", "preemptor", "pods", "expected"), SELECT_BEST)
def test_select_best_candidate(
    node_names: list[str], preemptor: RawObj, pods: list[RawObj], expected: list[str]
) -> None:
    """TestSelectBestCandidate: DryRunPreemption over every node, then SelectCandidate
    (pickOneNodeForPreemption); any of `expected` is right."""
    snap, _, state, ev = evaluator(preemptor, [*map(node, node_names), *pods], [FIT()])
    infos = snap.node_table().infos
    offset, num = ev.interface.get_offset_and_num_candidates(len(infos))
    candidates, _ = ev.dry_run_preemption(state, preemptor, infos, [], offset, num)
    best = ev.select_candidate(candidates)
    assert best is not None
    assert best.name in expected


# ---- TestPodEligibleToPreemptOthers --------------------------------------------------

NOMINATED = make_pod().name("p_with_nominated_node").priority(HIGH).nominated_node("node1")


def terminating_low() -> Any:
    return make_pod().name("p1").priority(LOW).node("node1").terminating()


@pytest.mark.parametrize(
    ("preemptor", "pods", "nodes", "nominated_status", "expected"),
    [
        pytest.param(
            NOMINATED.obj(),
            [terminating_low().obj()],
            ["node1"],
            Status(UU, "node(s) had untolerated taint"),
            True,
            id="Pod with nominated node",
        ),
        pytest.param(
            make_pod().name("p_without_nominated_node").priority(HIGH).obj(),
            [],
            [],
            None,
            True,
            id="Pod without nominated node",
        ),
        pytest.param(
            make_pod()
            .name("p_with_preempt_never_policy")
            .priority(HIGH)
            .preemption_policy("Never")
            .obj(),
            [],
            [],
            None,
            False,
            id="Pod with 'PreemptNever' preemption policy",
        ),
        pytest.param(
            NOMINATED.obj(),
            [
                terminating_low()
                .condition("DisruptionTarget", "True", "PreemptionByScheduler")
                .obj()
            ],
            ["node1"],
            None,
            False,
            id="preemption victim pod terminating, as indicated by the dedicated "
            "DisruptionTarget condition",
        ),
        pytest.param(
            NOMINATED.obj(),
            [terminating_low().obj()],
            ["node1"],
            None,
            True,
            id="non-victim Pods terminating",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    preemptor: RawObj,
    pods: list[RawObj],
    nodes: list[str],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    """TestPodEligibleToPreemptOthers."""
    _, handle, _, ev = evaluator(preemptor, [*map(node, nodes), *pods], [])
    ok, _ = CyclePreemption(DefaultPreemption(), handle).pod_eligible_to_preempt_others(
        preemptor, nominated_status
    )
    assert ok is expected


# ---- TestPreempt, through the whole default profile ----------------------------------

FOO_EXISTS = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BASIC = [
    pod("p1.1", LOW, "node1", SMALL),
    pod("p1.2", LOW, "node1", SMALL),
    pod("p2.1", HIGH, "node2", LARGE),
    pod("p3.1", MID, "node3", MEDIUM),
]


@pytest.mark.parametrize(
    ("preemptor", "pods", "node_names", "want"),
    [
        pytest.param(
            make_pod().name("p").priority(HIGH).requests(**VERY_LARGE)
            .preemption_policy("PreemptLowerPriority").obj(),
            BASIC,
            ["node1", "node2", "node3"],
            Preemption("node1", ("default/p1.1", "default/p1.2")),
            id="basic preemption logic",
        ),
        pytest.param(
            make_pod().name("p").priority(HIGH).requests(**VERY_LARGE)
            .preemption_policy("Never").obj(),
            BASIC,
            ["node1", "node2", "node3"],
            None,
            id="no preempting in pod",
        ),
        pytest.param(
            make_pod().name("p").priority(HIGH).requests(**VERY_LARGE).obj(),
            BASIC,
            ["node1", "node2", "node3"],
            Preemption("node1", ("default/p1.1", "default/p1.2")),
            id="PreemptionPolicy is nil",
        ),
        pytest.param(
            make_pod().name("p").label("foo").priority(HIGH)
            .spread(1, "zone", "DoNotSchedule", FOO_EXISTS)
            .spread(1, "hostname", "DoNotSchedule", FOO_EXISTS)
            .obj(),
            [
                pod("p-a1", HIGH, "node-a", labels={"foo": ""}),
                pod("p-a2", HIGH, "node-a", labels={"foo": ""}),
                pod("p-b1", LOW, "node-b", labels={"foo": ""}),
                pod("p-x1", HIGH, "node-x", labels={"foo": ""}),
                pod("p-x2", HIGH, "node-x", labels={"foo": ""}),
            ],
            ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
            Preemption("node-b", ("default/p-b1",)),
            id="preemption for topology spread constraints",
        ),
    ],
)  # fmt: skip
def test_preempt(
    preemptor: RawObj, pods: list[RawObj], node_names: list[str], want: Preemption | None
) -> None:
    """TestPreempt: the whole default profile decides, then PostFilter (place())."""
    snap = Snapshot.from_objects([*map(node, node_names), *pods])
    decision = place(preemptor, snap)
    assert decision.selected_node is None
    assert decision.preemption == want
