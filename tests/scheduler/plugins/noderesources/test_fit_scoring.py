"""NodeResourcesFit's scoring strategies, from upstream's least_allocated_test.go,
most_allocated_test.go and requested_to_capacity_ratio_test.go.

Legend: quantities are upstream's ("cpu": "4000" is 4000 cores); a pod built by
pod_with(r1, r2) has one container per requests map and none when given none, so
"nothing requested" pods count no non-zero defaults. Expected scores are worked
in each case's comment with Go's truncating integer division. The cases upstream
keeps for weight validation ("resource with negative weight", ...) are in
tests/scheduler/config/test_validation.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    container_pod,
    node_info,
    node_infos,
    node_with,
    pod_with,
    resource_node,
)
from webhook.api.resources import DEFAULT_MEMORY_REQUEST, non_zero_requests
from webhook.scheduler.config.types import (
    DEFAULT_RESOURCES,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from webhook.scheduler.framework.snapshot import bound_pod_requests
from webhook.scheduler.framework.types import MAX_NODE_SCORE, Code, CycleState
from webhook.scheduler.plugins.noderesources.fit_scoring import (
    PRE_SCORE_STATE_KEY,
    FitPreScoreState,
    FitScoring,
    score_for,
)
from webhook.scheduler.plugins.noderesources.least_allocated import least_requested_score
from webhook.scheduler.plugins.noderesources.most_allocated import most_requested_score
from webhook.scheduler.plugins.noderesources.resource_allocation import (
    allocatable_and_requested,
)

EXT = "abc.com/xyz"
EXTENDED_RESOURCE_SET = (*DEFAULT_RESOURCES, ResourceSpec(EXT, 1))
R = dict[str, str]


def _scores(
    strategy: ScoringStrategy,
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, int], set[Code]]:
    plugin = FitScoring(NodeResourcesFitArgs(scoring_strategy=strategy))
    state = CycleState()
    infos = node_infos(nodes, existing or [])
    assert plugin.pre_score(state, pod, infos, None).ok  # type: ignore[arg-type]
    out: dict[str, int] = {}
    codes: set[Code] = set()
    for info in infos:
        score, status = plugin.score(state, pod, info)
        out[info.name] = score
        codes.add(status.code)
    # The ScoreBatch hook: every node's score in one call, or the failure.
    many, status = plugin.score_nodes(state, pod, infos)
    if codes == {Code.SUCCESS}:
        assert (many, status.code) == (list(out.values()), Code.SUCCESS)
    else:
        assert status.code in codes and not status.ok
    return out, codes


def least(resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> ScoringStrategy:
    return ScoringStrategy("LeastAllocated", resources)


def most(resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> ScoringStrategy:
    return ScoringStrategy("MostAllocated", resources)


CPU_MEM_1 = pod_with({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


def _nodes(*sizes: tuple[str, str] | tuple[str, str, R]) -> list[dict[str, Any]]:
    out = []
    for i, size in enumerate(sizes, 1):
        extra = size[2] if len(size) == 3 else {}  # type: ignore[misc]
        out.append(node_with(f"node{i}", cpu=size[0], memory=size[1], **extra))
    return out


LEAST_CASES = [
    pytest.param(
        # CPU and memory: (cap - 0) * 100 / cap = 100 on both nodes.
        least(),
        pod_with(),
        _nodes(("4000", "10000"), ("4000", "10000")),
        [],
        {"node1": MAX_NODE_SCORE, "node2": MAX_NODE_SCORE},
        Code.SUCCESS,
        id="nothing scheduled, nothing requested",
    ),
    pytest.param(
        # node1: cpu (4000-3000)*100/4000 = 25, memory (10000-5000)*100/10000 = 50 -> 37
        # node2: cpu (6000-3000)*100/6000 = 50, memory 50 -> 50
        least(),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [],
        {"node1": 37, "node2": 50},
        Code.SUCCESS,
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        least(()),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [],
        {"node1": 0, "node2": 0},
        Code.ERROR,
        id="Resources not set, pods scheduled with error",
    ),
    pytest.param(
        # Existing pods have no containers: they count nothing, not the defaults.
        least(),
        pod_with(),
        _nodes(("4000", "10000"), ("4000", "10000")),
        [
            pod_with(node="node1"),
            pod_with(node="node1"),
            pod_with(node="node2"),
            pod_with(node="node2"),
        ],
        {"node1": MAX_NODE_SCORE, "node2": MAX_NODE_SCORE},
        Code.SUCCESS,
        id="no resources requested, pods scheduled",
    ),
    pytest.param(
        # node1: cpu (10000-6000)*100/10000 = 40, memory 100 -> 70
        # node2: cpu 40, memory (20000-5000)*100/20000 = 75 -> 57
        least(),
        pod_with(),
        _nodes(("10000", "20000"), ("10000", "20000")),
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "0"}, node="node2"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 70, "node2": 57},
        Code.SUCCESS,
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        # node1: cpu 40, memory (20000-5000)*100/20000 = 75 -> 57
        # node2: cpu 40, memory (20000-10000)*100/20000 = 50 -> 45
        least(),
        CPU_MEM_1,
        _nodes(("10000", "20000"), ("10000", "20000")),
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 57, "node2": 45},
        Code.SUCCESS,
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        # node2: cpu 40, memory (50000-10000)*100/50000 = 80 -> 60
        least(),
        CPU_MEM_1,
        _nodes(("10000", "20000"), ("10000", "50000")),
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 57, "node2": 60},
        Code.SUCCESS,
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        # cpu 6000 > 4000 scores 0; memory 100 on node1, 50 on node2.
        least(),
        pod_with({"cpu": "3000", "memory": "0"}),
        _nodes(("4000", "10000"), ("4000", "10000")),
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 50, "node2": 25},
        Code.SUCCESS,
        id="requested resources exceed node capacity",
    ),
    pytest.param(
        least(),
        pod_with(),
        [node_with("node1"), node_with("node2")],
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 0, "node2": 0},
        Code.SUCCESS,
        id="zero node resources, pods scheduled with resources",
    ),
    pytest.param(
        # node1: (25 * 1 + 50 * 2) / 3 = 41; node2: (50 + 100) / 3 = 50
        least((ResourceSpec("memory", 2), ResourceSpec("cpu", 1))),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [],
        {"node1": 41, "node2": 50},
        Code.SUCCESS,
        id="nothing scheduled, resources requested with different weight on CPU and memory, "
        "differently sized nodes",
    ),
    pytest.param(
        # The pod does not request abc.com/xyz: it is left out; cpu and memory 50 each.
        least(EXTENDED_RESOURCE_SET),
        CPU_MEM_1,
        _nodes(("6000", "10000"), ("6000", "10000", {EXT: "4"})),
        [],
        {"node1": 50, "node2": 50},
        Code.SUCCESS,
        id="bypass extended resource if the pod does not request",
    ),
    pytest.param(
        # abc.com/xyz: node1 (4-2)*100/4 = 50, node2 (10-2)*100/10 = 80 -> 50 and 60
        least(EXTENDED_RESOURCE_SET),
        pod_with({"cpu": "3000", "memory": "5000", EXT: "2"}),
        _nodes(("6000", "10000", {EXT: "4"}), ("6000", "10000", {EXT: "10"})),
        [],
        {"node1": 50, "node2": 60},
        Code.SUCCESS,
        id="honor extended resource if the pod requests",
    ),
    pytest.param(
        # cpu 50, memory 60; the extended resource the pod does not request is skipped.
        least((ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1))),
        pod_with({"cpu": "3000", "memory": "4000"}),
        _nodes(("6000", "10000"), ("6000", "10000", {EXT: "4"})),
        [],
        {"node1": 55, "node2": 55},
        Code.SUCCESS,
        id="if the node doesn't have a resource",
    ),
    # NodeInfo.NonZeroRequested on the node side: existing containers without
    # requests count 100m / 200Mi each (the twin of most_allocated's case).
    pytest.param(
        # node1: cpu 300m of 250m -> 0, memory 600Mi of 1000Mi -> 40: 20
        # node2: cpu 100m of 250m -> 60, memory 200Mi of 1000Mi -> 80: 70
        least(),
        container_pod(),
        [
            node_with("node1", cpu="250m", memory="1000Mi"),
            node_with("node2", cpu="250m", memory="1000Mi"),
        ],
        [container_pod(node="node1"), container_pod(node="node1")],
        {"node1": 20, "node2": 70},
        Code.SUCCESS,
        id="no resources requested, pods scheduled, nonzero request for resource",
    ),
    pytest.param(
        # node1's pod requests cpu only: its memory counts 200Mi.
        # node1: cpu 200m of 1000m -> 80, memory 300Mi of 1000Mi -> 70: 75
        # node2: cpu 100m -> 90, memory 100Mi -> 90: 90
        least(),
        pod_with({"cpu": "100m", "memory": "100Mi"}),
        [
            node_with("node1", cpu="1", memory="1000Mi"),
            node_with("node2", cpu="1", memory="1000Mi"),
        ],
        [pod_with({"cpu": "100m"}, node="node1")],
        {"node1": 75, "node2": 90},
        Code.SUCCESS,
        id="an existing container without a memory request counts 200Mi",
    ),
    pytest.param(
        # node1's pod has a container without requests and an init container asking
        # 300m / 100Mi: max(100m, 300m) = 300m, max(200Mi, 100Mi) = 200Mi.
        # node1: cpu 400m of 1000m -> 60, memory 300Mi of 1000Mi -> 70: 65
        least(),
        pod_with({"cpu": "100m", "memory": "100Mi"}),
        [node_with("node1", cpu="1", memory="1000Mi")],
        [pod_with({}, init=[{"cpu": "300m", "memory": "100Mi"}], node="node1")],
        {"node1": 65},
        Code.SUCCESS,
        id="an existing pod's init container is maxed against its defaulted containers",
    ),
]

MOST_CASES = [
    pytest.param(
        most(),
        pod_with(),
        _nodes(("4000", "10000"), ("4000", "10000")),
        [],
        {"node1": 0, "node2": 0},
        Code.SUCCESS,
        id="nothing scheduled, nothing requested",
    ),
    pytest.param(
        # node1: cpu 3000*100/4000 = 75, memory 50 -> 62; node2: 50, 50 -> 50
        most(),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [],
        {"node1": 62, "node2": 50},
        Code.SUCCESS,
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        most(()),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [],
        {"node1": 0, "node2": 0},
        Code.ERROR,
        id="Resources not set, pods scheduled with error",
    ),
    pytest.param(
        # node1: cpu 60, memory 0 -> 30; node2: cpu 60, memory 25 -> 42
        most(),
        pod_with(),
        _nodes(("10000", "20000"), ("10000", "20000")),
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "0"}, node="node2"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 30, "node2": 42},
        Code.SUCCESS,
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        most(),
        CPU_MEM_1,
        _nodes(("10000", "20000"), ("10000", "20000")),
        [
            pod_with({"cpu": "3000", "memory": "0"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 42, "node2": 55},
        Code.SUCCESS,
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        # node1: cpu 5000/5000 = 100, memory 90 -> 95; node2: 50, 100 -> 75
        most(),
        pod_with({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        _nodes(("5000", "10000"), ("10000", "9000")),
        [],
        {"node1": 95, "node2": 75},
        Code.SUCCESS,
        id="resources requested equal node capacity",
    ),
    pytest.param(
        # node1: (75 * 1 + 50 * 2) / 3 = 58; node2: 50
        most((ResourceSpec("memory", 2), ResourceSpec("cpu", 1))),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [],
        {"node1": 58, "node2": 50},
        Code.SUCCESS,
        id="nothing scheduled, resources requested, differently sized nodes (weighted)",
    ),
    pytest.param(
        # Containers without requests count 100m / 200Mi each.
        # node1: cpu 300m of 250m caps at 100, memory 600Mi / 1000Mi = 60 -> 80
        # node2: cpu 100m / 250m = 40, memory 200Mi / 1000Mi = 20 -> 30
        most(),
        container_pod(),
        [
            node_with("node1", cpu="250m", memory="1000Mi"),
            node_with("node2", cpu="250m", memory="1000Mi"),
        ],
        [container_pod(node="node1"), container_pod(node="node1")],
        {"node1": 80, "node2": 30},
        Code.SUCCESS,
        id="no resources requested, pods scheduled, nonzero request for resource",
    ),
    pytest.param(
        most(EXTENDED_RESOURCE_SET),
        CPU_MEM_1,
        _nodes(("6000", "10000"), ("6000", "10000", {EXT: "4"})),
        [],
        {"node1": 50, "node2": 50},
        Code.SUCCESS,
        id="bypass extended resource if the pod does not request",
    ),
    pytest.param(
        # abc.com/xyz: node1 2*100/4 = 50, node2 2*100/10 = 20 -> 50 and 40
        most(EXTENDED_RESOURCE_SET),
        pod_with({"cpu": "3000", "memory": "5000", EXT: "2"}),
        _nodes(("6000", "10000", {EXT: "4"}), ("6000", "10000", {EXT: "10"})),
        [],
        {"node1": 50, "node2": 40},
        Code.SUCCESS,
        id="honor extended resource if the pod request",
    ),
    pytest.param(
        most((ResourceSpec(EXT, 2), ResourceSpec("cpu", 1), ResourceSpec("memory", 1))),
        pod_with({"cpu": "3000", "memory": "4000"}),
        _nodes(("6000", "10000"), ("6000", "10000", {EXT: "4"})),
        [],
        {"node1": 45, "node2": 45},
        Code.SUCCESS,
        id="if the node doesn't have a resource",
    ),
]

SHAPE = (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0))
SHAPE_UP = (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 1))


def rtcr(
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES,
    shape: tuple[UtilizationShapePoint, ...] = SHAPE,
) -> ScoringStrategy:
    return ScoringStrategy("RequestedToCapacityRatio", resources, shape)


FOO, BAR = "intel.com/foo", "intel.com/bar"
MIB = 1024 * 1024
SINGLE = (ResourceSpec(FOO, 1),)
MULTIPLE = (ResourceSpec(FOO, 3), ResourceSpec(BAR, 5))

RTCR_CASES = [
    pytest.param(
        rtcr(),
        pod_with(),
        _nodes(("4000", "10000"), ("4000", "10000")),
        [pod_with(node="node1"), pod_with(node="node1")],
        {"node1": MAX_NODE_SCORE, "node2": MAX_NODE_SCORE},
        Code.SUCCESS,
        id="nothing scheduled, nothing requested (default - least requested nodes have priority)",
    ),
    pytest.param(
        # node1: cpu 75% -> 25, memory 50% -> 50; math.Round(75 / 2) = 38
        rtcr(),
        CPU_MEM_1,
        _nodes(("4000", "10000"), ("6000", "10000")),
        [pod_with(node="node1"), pod_with(node="node1")],
        {"node1": 38, "node2": 50},
        Code.SUCCESS,
        id="nothing scheduled, resources requested, differently sized nodes "
        "(default - least requested nodes have priority)",
    ),
    pytest.param(
        rtcr(),
        pod_with(),
        _nodes(("4000", "10000"), ("6000", "10000")),
        [
            pod_with({"cpu": "3000", "memory": "5000"}, node="node1"),
            pod_with({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        {"node1": 38, "node2": 50},
        Code.SUCCESS,
        id="no resources requested, pods scheduled with resources "
        "(default - least requested nodes have priority)",
    ),
    # TestResourceBinPackingSingleExtended: shape 0 -> 0, 100 -> 10 (scaled).
    pytest.param(
        rtcr(SINGLE, SHAPE_UP),
        pod_with(),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4}),
        ],
        [],
        {"node1": 0, "node2": 0},
        Code.SUCCESS,
        id="single extended: nothing scheduled, nothing requested",
    ),
    pytest.param(
        # node1: 2/8 = 25% -> 2; node2: 2/4 = 50% -> 5
        rtcr(SINGLE, SHAPE_UP),
        pod_with({FOO: "2"}),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4}),
        ],
        [pod_with()],
        {"node1": 2, "node2": 5},
        Code.SUCCESS,
        id="single extended: resources requested, pods scheduled with less resources",
    ),
    pytest.param(
        # node2: (2 + 2) / 4 = 100% -> 10
        rtcr(SINGLE, SHAPE_UP),
        pod_with({FOO: "2"}),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4}),
        ],
        [pod_with({FOO: "2"}, node="node2")],
        {"node1": 2, "node2": 10},
        Code.SUCCESS,
        id="single extended: resources requested, pods scheduled with resources, "
        "on node with existing pod running ",
    ),
    pytest.param(
        rtcr(SINGLE, SHAPE_UP),
        pod_with({FOO: "4"}),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4}),
        ],
        [pod_with()],
        {"node1": 5, "node2": 10},
        Code.SUCCESS,
        id="single extended: resources requested, pods scheduled with more resources",
    ),
    # TestResourceBinPackingMultipleExtended: foo weight 3, bar weight 5.
    pytest.param(
        rtcr(MULTIPLE, SHAPE_UP),
        pod_with(),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8, BAR: 4}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4, BAR: 8}),
        ],
        [],
        {"node1": 0, "node2": 0},
        Code.SUCCESS,
        id="multiple extended: nothing scheduled, nothing requested",
    ),
    pytest.param(
        # node1: foo 25% -> 2, bar 50% -> 5: round((6 + 25) / 8) = 4
        # node2: foo 50% -> 5, bar 25% -> 2: round((15 + 10) / 8) = 3
        rtcr(MULTIPLE, SHAPE_UP),
        pod_with({FOO: "2", BAR: "2"}),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8, BAR: 4}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4, BAR: 8}),
        ],
        [pod_with()],
        {"node1": 4, "node2": 3},
        Code.SUCCESS,
        id="multiple extended: resources requested, pods scheduled with less resources",
    ),
    pytest.param(
        # node2: foo (2+2)/4 -> 10, bar (2+2)/8 -> 5: round((30 + 25) / 8) = 7
        rtcr(MULTIPLE, SHAPE_UP),
        pod_with({FOO: "2", BAR: "2"}),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8, BAR: 4}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4, BAR: 8}),
        ],
        [pod_with({FOO: "2", BAR: "2"}, node="node2")],
        {"node1": 4, "node2": 7},
        Code.SUCCESS,
        id="multiple extended: resources requested, pods scheduled with resources, "
        "on node with existing pod running ",
    ),
    pytest.param(
        rtcr(MULTIPLE, SHAPE_UP),
        pod_with({FOO: "4", BAR: "2"}),
        [
            resource_node("node1", 4000, 10000 * MIB, {FOO: 8, BAR: 4}),
            resource_node("node2", 4000, 10000 * MIB, {FOO: 4, BAR: 8}),
        ],
        [pod_with()],
        {"node1": 5, "node2": 5},
        Code.SUCCESS,
        id="multiple extended: resources requested, pods scheduled with more resources",
    ),
    # Boundary: a resource scoring 0 is left out of the mean (here memory at 100%).
    pytest.param(
        rtcr(),
        pod_with({"cpu": "1000", "memory": "10000"}),
        _nodes(("4000", "10000")),
        [],
        {"node1": 75},
        Code.SUCCESS,
        id="a resource scoring 0 leaves the weighted mean",
    ),
    # Boundary: over capacity scores f(100).
    pytest.param(
        rtcr(SINGLE, SHAPE_UP),
        pod_with({FOO: "9"}),
        [resource_node("node1", 4000, 10000 * MIB, {FOO: 8})],
        [],
        {"node1": 10},
        Code.SUCCESS,
        id="a request over capacity scores the shape's value at 100",
    ),
]


@pytest.mark.parametrize(
    ("strategy", "pod", "nodes", "existing", "want", "code"),
    LEAST_CASES + MOST_CASES + RTCR_CASES,
)
def test_scoring_strategy(
    strategy: ScoringStrategy,
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    want: dict[str, int],
    code: Code,
) -> None:
    """Each node's NodeResourcesFit score under the strategy, as upstream's tables."""
    got, codes = _scores(strategy, pod, nodes, existing)
    assert got == want
    assert codes == {code}


def test_pre_score_state_holds_the_non_zero_requests() -> None:
    """PreScore leaves the pod's requests in strategy order, defaults applied."""
    plugin = FitScoring()
    state = CycleState()
    assert plugin.pre_score(state, container_pod(), [], None).ok  # type: ignore[arg-type]
    assert state[PRE_SCORE_STATE_KEY] == FitPreScoreState((100, DEFAULT_MEMORY_REQUEST))


def test_score_without_pre_score_computes_requests() -> None:
    """Score works without PreScore state, as upstream's fallback does."""
    plugin = FitScoring()
    info = node_info(node_with("n", cpu="4000", memory="10000"))
    assert plugin.score(CycleState(), CPU_MEM_1, info) == plugin.score(
        _prescored(plugin, CPU_MEM_1), CPU_MEM_1, info
    )


def _prescored(plugin: FitScoring, pod: dict[str, Any]) -> CycleState:
    state = CycleState()
    plugin.pre_score(state, pod, [], None)  # type: ignore[arg-type]
    return state


def test_default_args_are_least_allocated_cpu_memory() -> None:
    """With no args, the strategy is LeastAllocated over cpu and memory, weight 1."""
    scorer = FitScoring().scorer
    assert scorer.name == "LeastAllocated"
    assert scorer.resources == DEFAULT_RESOURCES
    assert not scorer.use_requested
    assert score_for(most()).name == "MostAllocated"


@pytest.mark.parametrize(
    "strategy",
    [least(), most(), rtcr(), least(EXTENDED_RESOURCE_SET)],
    ids=["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio", "with a scalar"],
)
def test_remembered_node_side_follows_the_node(strategy: ScoringStrategy) -> None:
    """The node's side of each resource is remembered per node generation: after a pod
    is bound (a new generation) the score is that of a node never scored before."""
    plugin = FitScoring(NodeResourcesFitArgs(scoring_strategy=strategy))
    pod = pod_with({"cpu": "1000", "memory": "2000", EXT: "1"})
    node = node_with("node1", cpu="4000", memory="10000", **{EXT: "4"})
    info = node_info(node)
    first = plugin.score(_prescored(plugin, pod), pod, info)
    bound = pod_with({"cpu": "2000", "memory": "5000", EXT: "2"}, node="node1", name="b")
    info._add(("default", "b"), bound, *bound_pod_requests(bound))
    again = plugin.score(_prescored(plugin, pod), pod, info)
    fresh = plugin.score(_prescored(plugin, pod), pod, node_info(node, [bound]))
    assert again == fresh != first


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(pod_with(), {"cpu": 0, "memory": 0}, id="no containers count nothing"),
        pytest.param(
            container_pod(),
            {"cpu": 100, "memory": DEFAULT_MEMORY_REQUEST},
            id="a container without requests counts the defaults",
        ),
        pytest.param(
            pod_with({"cpu": "0", "memory": "0"}),
            {"cpu": 0, "memory": 0},
            id="an explicit zero stays zero",
        ),
        pytest.param(
            pod_with({"cpu": "1"}, {"memory": "1Gi"}),
            {"cpu": 1100, "memory": 1024**3 + DEFAULT_MEMORY_REQUEST},
            id="defaults fill per container",
        ),
        pytest.param(
            pod_with({"cpu": "50m"}, init=[{"cpu": "2"}]),
            {"cpu": 2000, "memory": DEFAULT_MEMORY_REQUEST},
            id="init containers get the defaults too and are maxed",
        ),
    ],
)
def test_non_zero_requests(pod: dict[str, Any], want: dict[str, int]) -> None:
    """GetNonzeroRequests: missing cpu / memory per container count 100m / 200Mi."""
    got = non_zero_requests(pod)
    assert {k: got[k] for k in want} == want


@pytest.mark.parametrize(
    ("resource", "pod_request", "use_requested", "want"),
    [
        ("cpu", 10, False, (4000, 110)),
        ("cpu", 10, True, (4000, 60)),
        ("memory", 0, False, (100, 30)),
        ("ephemeral-storage", 1, False, (50, 6)),
        ("example.com/gpu", 0, False, (0, 0)),
        ("example.com/gpu", 1, False, (8, 3)),
        ("example.com/fpga", 1, False, (0, 0)),
        ("pods", 1, False, (0, 0)),
    ],
)
def test_allocatable_and_requested(
    resource: str, pod_request: int, use_requested: bool, want: tuple[int, int]
) -> None:
    """cpu / memory read non-zero requests unless use_requested; scalar resources the
    pod does not request, or the node does not list, are left out."""
    allocatable = {
        "cpu": 4000,
        "memory": 100,
        "ephemeral-storage": 50,
        "example.com/gpu": 8,
        "pods": 110,
    }
    requested = {"cpu": 50, "memory": 10, "ephemeral-storage": 5, "example.com/gpu": 2}
    non_zero = {"cpu": 100, "memory": 30}
    got = allocatable_and_requested(
        allocatable, requested, non_zero, resource, pod_request, use_requested
    )
    assert got == want


@pytest.mark.parametrize(
    ("requested", "capacity", "least_want", "most_want"),
    [(0, 0, 0, 0), (5, 4, 0, 100), (3, 4, 25, 75), (1, 3, 66, 33), (4, 4, 0, 100)],
)
def test_per_resource_scores(
    requested: int, capacity: int, least_want: int, most_want: int
) -> None:
    """leastRequestedScore and mostRequestedScore at their boundaries (truncation)."""
    assert least_requested_score(requested, capacity) == least_want
    assert most_requested_score(requested, capacity) == most_want
