"""The NodeResourcesBalancedAllocation score plugin: nodes whose resources would be
used in equal proportions score higher
(pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go).

balance = (1 - std) * 100, truncated, where std is the standard deviation of the
fractions requested / allocatable (each capped at 1) over the configured
resources the node has. Requests are counted as they are (no non-zero defaults).
A pod requesting none of the resources is skipped at PreScore (kubernetes#129138).

The score differs by release:
- v1.35: the balance with the pod: score = balance(node + pod), 0..100.
- v1.36 and later: how the pod changes the balance:
  score = 50 + (50 + balance(node + pod) - balance(node)) / 2, 50..100, so 75 means
  unchanged, above it the pod evens the node out, below it the pod tilts it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from webhook.api.kube import RawObj
from webhook.api.versions import Features
from webhook.scheduler.config.types import NodeResourcesBalancedAllocationArgs
from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    CycleState,
    Reads,
    Status,
)
from webhook.scheduler.plugins.noderesources.resource_allocation import (
    ResourceAllocationScorer,
    is_best_effort,
    resources_key,
)

__all__ = [
    "PLUGIN_NAME",
    "PRE_SCORE_STATE_KEY",
    "BalancedAllocationPreScoreState",
    "NodeResourcesBalancedAllocation",
    "balanced_resource_delta_scorer",
    "balanced_resource_scorer",
]

PLUGIN_NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + PLUGIN_NAME

# What Score reads of the incoming pod and of a node: the requests and the
# allocatable; the summed requests of the node's pods.
_POD_FIELDS = (
    "spec.containers[].resources.requests",
    "spec.initContainers[].resources.requests",
    "spec.initContainers[].restartPolicy",
    "spec.resources.requests",
    "spec.overhead",
)
_NODE_FIELDS = ("status.allocatable", "requested")


@dataclass(frozen=True)
class BalancedAllocationPreScoreState:
    """What PreScore leaves for Score.

    pod_requests: the pod's request of each configured resource, in the order of
    the args' resources; never all zero (such a pod is skipped).
    """

    pod_requests: tuple[int, ...]


def balanced_resource_scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """(1 - std of the capped fractions) * MAX_NODE_SCORE, truncated toward zero; for
    two resources std is |f0 - f1| / 2, for one or none it is 0.

    Port of balanced_allocation.go: balancedResourceScorer.
    """
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(req / alloc, 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for fraction in fractions:
            acc = acc + (fraction - mean) * (fraction - mean)
        std = math.sqrt(acc / len(fractions))
    # int64(float) in Go truncates toward zero, as int() does.
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_delta_scorer(
    requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]
) -> int:
    """The v1.36 score: 50 + (50 + balance with the pod - balance without it) / 2, in
    Go's integer division; 75 when the pod leaves the balance as it was.

    Port of balanced_allocation.go (v1.36): balancedResourceScorer."""
    half = MAX_NODE_SCORE // 2
    with_pod = balanced_resource_scorer(requested, allocatable)
    without_pod = balanced_resource_scorer(allocated, allocatable)
    return half + go_div(half + with_pod - without_pod, 2)


class NodeResourcesBalancedAllocation:
    """The plugin, built once per profile from its args.

    Port of balanced_allocation.go: NewBalancedAllocation.
    """

    name: ClassVar[str] = PLUGIN_NAME
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(pod_fields=_POD_FIELDS, node_fields=_NODE_FIELDS)

    def __init__(
        self,
        args: NodeResourcesBalancedAllocationArgs | None = None,
        *,
        features: Features | None = None,
    ) -> None:
        self.args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        self.features = features if features is not None else Features()
        # v1.36 scores the change in balance the pod makes (kubernetes#135573).
        delta = balanced_resource_delta_scorer if self.features.version.at_least(36) else None
        self.scorer = ResourceAllocationScorer(
            PLUGIN_NAME,
            balanced_resource_scorer,
            tuple(self.args.resources),
            use_requested=True,
            delta_scorer=delta,
        )

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status:
        """The pod's requests into `state`; SKIP for a pod requesting none of the
        resources, so best-effort pods do not all pile onto one node.

        Port of balanced_allocation.go: BalancedAllocation.PreScore.
        """
        requests = self.scorer.pod_request_list(pod)
        if is_best_effort(requests):
            return SKIP
        state[PRE_SCORE_STATE_KEY] = BalancedAllocationPreScoreState(requests)
        return SUCCESS

    def score(self, state: CycleState, pod: RawObj, node: NodeInfo) -> tuple[int, Status]:
        """The node's balance score (0..MAX_NODE_SCORE). Without PreScore state the
        requests are computed here, and a best-effort pod scores 0.

        Port of balanced_allocation.go: BalancedAllocation.Score.
        """
        requests = self._requests(state, pod)
        if requests is None:
            return 0, SUCCESS
        return self.scorer.score(requests, node)

    def score_nodes(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        """score() of each of `nodes`, in order, in one call (the ScoreBatch hook)."""
        requests = self._requests(state, pod)
        if requests is None:
            return [0] * len(nodes), SUCCESS
        return self.scorer.score_many(requests, nodes)

    def _requests(self, state: CycleState, pod: RawObj) -> tuple[int, ...] | None:
        """The pod's requests PreScore left, or computed here without it; None for a
        best-effort pod without PreScore (it scores 0)."""
        pre = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(pre, BalancedAllocationPreScoreState):
            return pre.pod_requests
        requests = self.scorer.pod_request_list(pod)
        return None if is_best_effort(requests) else requests

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """No normalisation: scores are already 0..MAX_NODE_SCORE (ScoreExtensions nil)."""
        return SUCCESS

    def score_key(self, state: CycleState, pod: RawObj) -> tuple[int, ...] | None:
        """What Score reads of the pod (after PreScore): its requests; the raw score
        reads nothing else but the node."""
        pre = state.get(PRE_SCORE_STATE_KEY)
        return pre.pod_requests if isinstance(pre, BalancedAllocationPreScoreState) else None

    def score_node_key(self, node: NodeInfo) -> Hashable:
        """What Score reads of a node, whatever the pod: allocatable and requests."""
        return resources_key(node)
