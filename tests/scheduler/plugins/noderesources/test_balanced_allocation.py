"""NodeResourcesBalancedAllocation, from upstream's balanced_allocation_test.go of
each release: v1.35.4's table (score = balance with the pod) and the table v1.36.3
and v1.37.2 share (score = 50 + (50 + balance with - balance without) / 2).

Legend: nodes are makeNode(name, milliCPU, memory, extended); pod specs are
upstream's: cpuOnly (1000m + 2000m cpu, memory 0) bound to node1, cpuAndMemory
(1000m/2000 + 2000m/3000) bound to node2, cpuAndMemoryAndGPU (cpuAndMemory plus 3
nvidia.com/gpu) bound to node1. A balance is (1 - std) * 100 truncated, with the
fractions worked in each case's comment. The DRA-backed extended resource cases
are not ported (DRA is out of scope).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node_info, node_infos, pod_with, resource_node
from webhook.api.versions import KubeVersion, features_for
from webhook.scheduler.config.types import (
    NodeResourcesBalancedAllocationArgs,
    ResourceSpec,
)
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Reads,
)
from webhook.scheduler.plugins.noderesources.balanced_allocation import (
    PRE_SCORE_STATE_KEY,
    BalancedAllocationPreScoreState,
    NodeResourcesBalancedAllocation,
    balanced_resource_delta_scorer,
    balanced_resource_scorer,
)

GPU = "nvidia.com/gpu"


def cpu_only(node: str = "node1") -> dict[str, Any]:
    return pod_with({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node=node)


def cpu_and_memory(node: str = "node2") -> dict[str, Any]:
    return pod_with(
        {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node=node
    )


def cpu_memory_gpu(node: str = "node1") -> dict[str, Any]:
    return pod_with(
        {"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}, node=node
    )


WITH_GPU = (ResourceSpec("cpu"), ResourceSpec("memory"), ResourceSpec(GPU))
SCALAR = {GPU: 8}
V1_35 = features_for(KubeVersion(1, 35))
V1_36 = features_for(KubeVersion(1, 36))
V1_37 = features_for(KubeVersion(1, 37))


# Each case under its name in upstream's tables, with what each release scores:
# v1.35 the balance with the pod, (1 - std) * 100; v1.36 and v1.37 (the same table in
# v1.36.3 and v1.37.2) the change, 50 + (50 + with - without) // 2. "a -> b" is the
# balance without the pod and with it; "(n)" the v1.36 score.
CASES = [
    pytest.param(
        # node1: cpu 3000/4000 = .75, memory 5000/10000 = .5: 100 -> 87 (v1.36: 68)
        # node2: cpu 3000/6000 = .5, memory .5: 100 -> 100 (v1.36: 75)
        cpu_and_memory(),
        [resource_node("node1", 4000, 10000), resource_node("node2", 6000, 10000)],
        [],
        None,
        {"node1": 87, "node2": MAX_NODE_SCORE},
        {"node1": 68, "node2": 75},
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        # node1: cpu 3000 -> 6000/10000, memory 0 -> 5000/20000: 85 -> 82 (73)
        # node2: cpu 3000 -> 6000/10000, memory 5000 -> 10000/20000: 97 -> 95 (74)
        cpu_and_memory(),
        [resource_node("node1", 10000, 20000), resource_node("node2", 10000, 20000)],
        [cpu_only(), cpu_and_memory()],
        None,
        {"node1": 82, "node2": 95},
        {"node1": 73, "node2": 74},
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        # node2: cpu 30% -> 60%, memory 5000 -> 10000/50000 (10% -> 20%): 90 -> 80 (70)
        cpu_and_memory(),
        [resource_node("node1", 10000, 20000), resource_node("node2", 10000, 50000)],
        [cpu_only(), cpu_and_memory()],
        None,
        {"node1": 82, "node2": 80},
        {"node1": 73, "node2": 70},
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        # node1: cpu 3000/3000, memory 0 -> 5000/5000: 50 -> 100 (100)
        # node2: cpu 0/3000, memory 0 -> 5000/5000: 100 -> 50 (50)
        # (new in v1.36's table; v1.35 scores the "with" side, the same here)
        pod_with({"memory": "2000"}, {"memory": "3000"}),
        [resource_node("node1", 3000, 5000), resource_node("node2", 3000, 5000)],
        [cpu_only()],
        None,
        {"node1": MAX_NODE_SCORE, "node2": MAX_NODE_SCORE // 2},
        {"node1": MAX_NODE_SCORE, "node2": MAX_NODE_SCORE // 2},
        id="resources requested, pods scheduled with resources, nodes to reach min/max score",
    ),
    pytest.param(
        # node1: cpu 50% -> 100%, memory 0: 75 -> 50 (62)
        # node2: cpu 50% -> 100%, memory 50%: 100 -> 75 (62)
        cpu_only(),
        [resource_node("node1", 6000, 10000), resource_node("node2", 6000, 10000)],
        [cpu_only(), cpu_and_memory()],
        None,
        {"node1": 50, "node2": 75},
        {"node1": 62, "node2": 62},
        id="requested resources at node capacity",
    ),
    pytest.param(
        # cpu 3000/3500, memory 5000/40000; node1: gpu 3 -> 4/8: 69 -> 70 (75);
        # node2: gpu 0 -> 1/8: 62 -> 65 (76). v1.35.4 names it "include scalar
        # resource on a node for balanced resource allocation".
        pod_with({"cpu": "0", "memory": "0", GPU: "1"}),
        [
            resource_node("node1", 3500, 40000, SCALAR),
            resource_node("node2", 3500, 40000, SCALAR),
        ],
        [cpu_and_memory(), cpu_memory_gpu()],
        WITH_GPU,
        {"node1": 70, "node2": 65},
        {"node1": 75, "node2": 76},
        id="scalar resource is included in the score computation if pod requests the "
        "scalar resource",
    ),
    pytest.param(
        # The pod does not request the GPU: it is skipped on both nodes.
        # cpu 0 -> 3000/3500, memory 0 -> 5000/40000: 100 -> 63 (56). v1.35.4 names it
        # "node without the scalar resource should skip the scalar resource".
        cpu_and_memory(),
        [resource_node("node1", 3500, 40000, SCALAR), resource_node("node2", 3500, 40000)],
        [],
        WITH_GPU,
        {"node1": 63, "node2": 63},
        {"node1": 56, "node2": 56},
        id="scalar resource is not included in the score computation if pod doesn't "
        "request the scalar resource",
    ),
    pytest.param(
        # A node without allocatable has no fractions: 100 -> 100 (75).
        cpu_and_memory(),
        [{"kind": "Node", "metadata": {"name": "node1"}}],
        [],
        None,
        {"node1": MAX_NODE_SCORE},
        {"node1": 75},
        id="a node without allocatable scores as balanced",
    ),
    pytest.param(
        # Fractions cap at 1: cpu 3000/1000 -> 1, memory 5000/5000 = 1: 100 -> 100 (75).
        cpu_and_memory(),
        [resource_node("node1", 1000, 5000)],
        [],
        None,
        {"node1": MAX_NODE_SCORE},
        {"node1": 75},
        id="fractions over one are capped",
    ),
]


@pytest.mark.parametrize("features", [V1_35, V1_36, V1_37], ids=["v1.35", "v1.36", "v1.37"])
@pytest.mark.parametrize(("pod", "nodes", "pods", "resources", "want_35", "want_36"), CASES)
def test_balanced_allocation(
    features: Any,
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    resources: tuple[ResourceSpec, ...] | None,
    want_35: dict[str, int],
    want_36: dict[str, int],
) -> None:
    """Each node's score as the release scores it, with and without PreScore
    (upstream's "... if PreScore not called" cases)."""
    want = want_35 if features is V1_35 else want_36
    args = NodeResourcesBalancedAllocationArgs(resources) if resources else None
    plugin = NodeResourcesBalancedAllocation(args, features=features)
    infos = node_infos(nodes, pods)
    state = CycleState()
    assert plugin.pre_score(state, pod, infos, None).ok  # type: ignore[arg-type]
    got = {}
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status.code is Code.SUCCESS
        assert plugin.score(CycleState(), pod, info) == (score, status)
        got[info.name] = score
    scores = dict(got)
    assert plugin.normalize_score(state, pod, scores).ok
    assert scores == got == want
    # The ScoreBatch hook: every node in one call, with and without PreScore.
    in_order = [want[info.name] for info in infos]
    assert plugin.score_nodes(state, pod, infos) == (in_order, SUCCESS)
    assert plugin.score_nodes(CycleState(), pod, infos) == (in_order, SUCCESS)


@pytest.mark.parametrize(
    ("features", "want"),
    [
        pytest.param(V1_35, 50, id="v1.35: the balance with the pod"),
        pytest.param(V1_36, 62, id="v1.36: the change in balance"),
        pytest.param(V1_37, 62, id="v1.37: the change in balance"),
    ],
)
def test_each_release_scores_by_its_own_rule(features: Any, want: int) -> None:
    """One node, cpu 50% -> 100% and memory at 0%: v1.35 scores the balance after (50),
    v1.36 and v1.37 the change (75 -> 50 gives 62)."""
    node = node_info(resource_node("node1", 6000, 10000), [cpu_only()])
    plugin = NodeResourcesBalancedAllocation(features=features)
    state = CycleState()
    assert plugin.pre_score(state, cpu_only(), [node], None).ok  # type: ignore[arg-type]
    assert plugin.score(state, cpu_only(), node) == (want, SUCCESS)


@pytest.mark.parametrize(
    ("requested", "allocated", "allocatable", "want"),
    [
        pytest.param([1, 1], [1, 1], [2, 2], 75, id="no change is 75"),
        pytest.param([2, 2], [2, 0], [2, 2], 100, id="from 50 to 100 is 100"),
        pytest.param([2, 0], [0, 0], [2, 2], 50, id="from 100 to 50 is 50"),
        pytest.param([3, 1], [2, 1], [4, 4], 69, id="from 87 to 75 is 69"),
        pytest.param([3, 5], [0, 0], [4, 10], 68, id="from 100 to 87 truncates to 68"),
    ],
)
def test_delta_scorer(
    requested: list[int], allocated: list[int], allocatable: list[int], want: int
) -> None:
    """balancedResourceScorer of v1.36: 50..100 around 75, in Go's integer division."""
    assert balanced_resource_delta_scorer(requested, allocated, allocatable) == want


def test_best_effort_pod_is_skipped() -> None:
    """nothing scheduled, nothing requested, skip in PreScore (kubernetes#129138);
    without PreScore its Score is 0."""
    plugin = NodeResourcesBalancedAllocation()
    pod = pod_with()
    state = CycleState()
    assert plugin.pre_score(state, pod, [], None) is SKIP  # type: ignore[arg-type]
    assert PRE_SCORE_STATE_KEY not in state
    info = node_info(resource_node("node1", 4000, 10000))
    assert plugin.score(CycleState(), pod, info)[0] == 0
    assert plugin.score_nodes(CycleState(), pod, [info, info]) == ([0, 0], SUCCESS)


def test_requests_are_counted_as_they_are() -> None:
    """BalancedAllocation uses Requested, not the non-zero defaults."""
    plugin = NodeResourcesBalancedAllocation()
    pod = pod_with({"cpu": "1"}, {})
    state = CycleState()
    plugin.pre_score(state, pod, [], None)  # type: ignore[arg-type]
    assert state[PRE_SCORE_STATE_KEY] == BalancedAllocationPreScoreState((1000, 0))


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([], [], 100, id="no resource"),
        pytest.param([1], [2], 100, id="one resource has no deviation"),
        pytest.param([3, 1], [4, 4], 75, id="two: |f0 - f1| / 2"),
        pytest.param([1, 0], [3, 0], 100, id="allocatable 0 is left out"),
        pytest.param([1, 2, 3], [3, 3, 3], 72, id="three: population std"),
    ],
)
def test_balanced_resource_scorer(requested: list[int], allocatable: list[int], want: int) -> None:
    """balancedResourceScorer's std cases, truncated toward zero."""
    assert balanced_resource_scorer(requested, allocatable) == want


def test_plugin_surface() -> None:
    """The plugin declares its name and what it reads."""
    assert NodeResourcesBalancedAllocation.name == "NodeResourcesBalancedAllocation"
    assert isinstance(NodeResourcesBalancedAllocation.reads, Reads)
    assert "requested" in NodeResourcesBalancedAllocation.reads.node_fields
