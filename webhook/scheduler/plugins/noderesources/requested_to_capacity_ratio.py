"""The RequestedToCapacityRatio scoring strategy: a configured broken-linear function
of each resource's utilization
(pkg/scheduler/framework/plugins/noderesources/requested_to_capacity_ratio.go)."""

from __future__ import annotations

from collections.abc import Sequence

from webhook.scheduler.config.types import ResourceSpec, UtilizationShapePoint
from webhook.scheduler.framework.gomath import go_div, go_round
from webhook.scheduler.framework.types import MAX_NODE_SCORE
from webhook.scheduler.plugins.helper.shape_score import (
    FunctionShapePoint,
    build_broken_linear_function,
)
from webhook.scheduler.plugins.noderesources.resource_allocation import Scorer

__all__ = [
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MAX_UTILIZATION",
    "build_requested_to_capacity_ratio_scorer_function",
    "requested_to_capacity_ratio_scorer",
]

# Utilization runs over 0..MAX_UTILIZATION percent.
MAX_UTILIZATION = 100
# config.MaxCustomPriorityScore: shape scores lie in 0..10 and are scaled to 0..100.
MAX_CUSTOM_PRIORITY_SCORE = 10


def build_requested_to_capacity_ratio_scorer_function(
    shape: Sequence[FunctionShapePoint], resources: Sequence[ResourceSpec]
) -> Scorer:
    """Per resource the node has (allocatable > 0), f(requested * 100 / capacity) with
    f the broken-linear shape (f(100) when the request exceeds capacity); resources
    scoring 0 are left out of the weighted mean, which is rounded half away from
    zero (math.Round), not truncated.

    Port of requested_to_capacity_ratio.go: buildRequestedToCapacityRatioScorerFunction.
    """
    raw = build_broken_linear_function(shape)
    weights = tuple(r.weight for r in resources)

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(go_div(requested * MAX_UTILIZATION, capacity))

    def scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            score = resource_score(req, alloc)
            if score > 0:
                node_score += score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_round(node_score / weight_sum)

    return scorer


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[UtilizationShapePoint]
) -> Scorer:
    """The scorer for a configured shape, its 0..10 scores scaled to 0..MAX_NODE_SCORE.

    Port of requested_to_capacity_ratio.go: requestedToCapacityRatioScorer.
    """
    points = [
        FunctionShapePoint(
            p.utilization, p.score * go_div(MAX_NODE_SCORE, MAX_CUSTOM_PRIORITY_SCORE)
        )
        for p in shape
    ]
    return build_requested_to_capacity_ratio_scorer_function(points, resources)
