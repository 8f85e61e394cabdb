"""NodeResourcesBalancedAllocation, from upstream's balanced_allocation_test.go.

Legend: nodes are makeNode(name, milliCPU, memory, extended); pod specs are
upstream's: cpuOnly (1000m + 2000m cpu, memory 0) bound to node1, cpuAndMemory
(1000m/2000 + 2000m/3000) bound to node2, cpuAndMemoryAndGPU (cpuAndMemory plus 3
nvidia.com/gpu) bound to node1. Scores are (1 - std) * 100 truncated, with the
fractions worked in each case's comment. The DRA-backed extended resource cases
are not ported (DRA is out of scope).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import node_info, node_infos, pod_with, resource_node
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


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "resources", "want"),
    [
        pytest.param(
            # node1: cpu 3000/4000 = .75, memory 5000/10000 = .5, std .125 -> 87
            # node2: cpu 3000/6000 = .5, memory .5, std 0 -> 100
            cpu_and_memory(),
            [resource_node("node1", 4000, 10000), resource_node("node2", 6000, 10000)],
            [],
            None,
            {"node1": 87, "node2": MAX_NODE_SCORE},
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            # node1: cpu 6000/10000 = .6, memory 5000/20000 = .25, std .175 -> 82
            # node2: cpu .6, memory 10000/20000 = .5, std .05 -> 95
            cpu_and_memory(),
            [resource_node("node1", 10000, 20000), resource_node("node2", 10000, 20000)],
            [cpu_only(), cpu_and_memory()],
            None,
            {"node1": 82, "node2": 95},
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            # node2: memory 10000/50000 = .2, std .2 -> 80
            cpu_and_memory(),
            [resource_node("node1", 10000, 20000), resource_node("node2", 10000, 50000)],
            [cpu_only(), cpu_and_memory()],
            None,
            {"node1": 82, "node2": 80},
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            # node1: cpu 6000/6000 = 1, memory 0, std .5 -> 50
            # node2: cpu 1, memory 5000/10000 = .5, std .25 -> 75
            cpu_only(),
            [resource_node("node1", 6000, 10000), resource_node("node2", 6000, 10000)],
            [cpu_only(), cpu_and_memory()],
            None,
            {"node1": 50, "node2": 75},
            id="requested resources at node capacity",
        ),
        pytest.param(
            # node1: cpu 3000/3500, memory 5000/40000, gpu 4/8: std .3002 -> 70
            # node2: cpu 3000/3500, memory 5000/40000, gpu 1/8: std .345 -> 65
            pod_with({"memory": "0", GPU: "1"}),
            [
                resource_node("node1", 3500, 40000, SCALAR),
                resource_node("node2", 3500, 40000, SCALAR),
            ],
            [cpu_and_memory(), cpu_memory_gpu()],
            WITH_GPU,
            {"node1": 70, "node2": 65},
            id="include scalar resource on a node for balanced resource allocation",
        ),
        pytest.param(
            # The pod does not request the GPU: it is skipped on both nodes.
            # cpu 3000/3500, memory 5000/40000: std .366 -> 63
            cpu_and_memory(),
            [resource_node("node1", 3500, 40000, SCALAR), resource_node("node2", 3500, 40000)],
            [],
            WITH_GPU,
            {"node1": 63, "node2": 63},
            id="node without the scalar resource should skip the scalar resource",
        ),
        pytest.param(
            # A node without allocatable has no fractions: std 0 -> 100.
            cpu_and_memory(),
            [{"kind": "Node", "metadata": {"name": "node1"}}],
            [],
            None,
            {"node1": MAX_NODE_SCORE},
            id="a node without allocatable scores as balanced",
        ),
        pytest.param(
            # Fractions cap at 1: cpu 3000/1000 -> 1, memory 5000/5000 = 1, std 0.
            cpu_and_memory(),
            [resource_node("node1", 1000, 5000)],
            [],
            None,
            {"node1": MAX_NODE_SCORE},
            id="fractions over one are capped",
        ),
    ],
)
def test_balanced_allocation(
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    resources: tuple[ResourceSpec, ...] | None,
    want: dict[str, int],
) -> None:
    """Each node's balance score, with and without PreScore (upstream's
    "... if PreScore not called" cases)."""
    args = NodeResourcesBalancedAllocationArgs(resources) if resources else None
    plugin = NodeResourcesBalancedAllocation(args)
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
