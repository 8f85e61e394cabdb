"""The LeastAllocated scoring strategy: nodes with more room left score higher
(pkg/scheduler/framework/plugins/noderesources/least_allocated.go)."""

from __future__ import annotations

from collections.abc import Sequence

from webhook.scheduler.config.types import ResourceSpec
from webhook.scheduler.framework.types import MAX_NODE_SCORE
from webhook.scheduler.plugins.noderesources.resource_allocation import Scorer
from webhook.scheduler.plugins.podtopologyspread.common import go_div

__all__ = ["least_requested_score", "least_resource_scorer"]


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """The weighted mean of least_requested_score over the resources the node has
    (allocatable > 0), truncated; 0 when it has none of them.

    Port of least_allocated.go: leastResourceScorer.
    """
    weights = tuple(r.weight for r in resources)

    def scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += least_requested_score(req, alloc) * weight
            weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_div(node_score, weight_sum)

    return scorer


def least_requested_score(requested: int, capacity: int) -> int:
    """(capacity - requested) * 100 / capacity, truncated; 0 when nothing fits.

    Port of least_allocated.go: leastRequestedScore.
    """
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)
