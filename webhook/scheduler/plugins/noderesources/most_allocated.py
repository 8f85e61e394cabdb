"""The MostAllocated scoring strategy: fuller nodes score higher (bin packing)
(pkg/scheduler/framework/plugins/noderesources/most_allocated.go)."""

from __future__ import annotations

from collections.abc import Sequence

from webhook.scheduler.config.types import ResourceSpec
from webhook.scheduler.framework.types import MAX_NODE_SCORE
from webhook.scheduler.plugins.noderesources.resource_allocation import Scorer
from webhook.scheduler.plugins.podtopologyspread.common import go_div

__all__ = ["most_requested_score", "most_resource_scorer"]


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """The weighted mean of most_requested_score over the resources the node has
    (allocatable > 0), truncated; 0 when it has none of them.

    Port of most_allocated.go: mostResourceScorer.
    """
    weights = tuple(r.weight for r in resources)

    def scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += most_requested_score(req, alloc) * weight
            weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_div(node_score, weight_sum)

    return scorer


def most_requested_score(requested: int, capacity: int) -> int:
    """requested * 100 / capacity, truncated; a request over capacity counts as the
    capacity (pods without requests count the non-zero defaults, which may overflow
    a small node).

    Port of most_allocated.go: mostRequestedScore.
    """
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return go_div(requested * MAX_NODE_SCORE, capacity)
