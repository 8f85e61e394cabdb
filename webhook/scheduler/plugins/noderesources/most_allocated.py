"""The MostAllocated scoring strategy: fuller nodes score higher (bin packing)
(pkg/scheduler/framework/plugins/noderesources/most_allocated.go)."""

from __future__ import annotations

from collections.abc import Sequence

from webhook.scheduler.config.types import ResourceSpec
from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.types import MAX_NODE_SCORE
from webhook.scheduler.plugins.noderesources.resource_allocation import (
    Scorer,
    weighted_mean_scorer,
)

__all__ = ["most_requested_score", "most_resource_scorer"]


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """The weighted mean of most_requested_score over the resources the node has.

    Port of most_allocated.go: mostResourceScorer.
    """
    return weighted_mean_scorer(resources, most_requested_score)


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
