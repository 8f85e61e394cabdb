"""The LeastAllocated scoring strategy: nodes with more room left score higher
(pkg/scheduler/framework/plugins/noderesources/least_allocated.go)."""

from __future__ import annotations

from collections.abc import Sequence

from webhook.scheduler.config.types import ResourceSpec
from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.types import MAX_NODE_SCORE
from webhook.scheduler.plugins.noderesources.resource_allocation import (
    Scorer,
    weighted_mean_scorer,
)

__all__ = ["least_requested_score", "least_resource_scorer"]


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    """The weighted mean of least_requested_score over the resources the node has.

    Port of least_allocated.go: leastResourceScorer.
    """
    return weighted_mean_scorer(resources, least_requested_score)


def least_requested_score(requested: int, capacity: int) -> int:
    """(capacity - requested) * 100 / capacity, truncated; 0 when nothing fits.

    Port of least_allocated.go: leastRequestedScore.
    """
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)
