"""The broken-linear scoring function RequestedToCapacityRatio (and VolumeBinding's
capacity scoring) read from a utilization shape
(pkg/scheduler/framework/plugins/helper/shape_score.go)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from webhook.scheduler.framework.gomath import go_div

__all__ = ["FunctionShapePoint", "build_broken_linear_function"]


@dataclass(frozen=True, slots=True)
class FunctionShapePoint:
    """One point of a shape: at `utilization` (0..100) the function is `score`.

    Points are sorted by increasing utilization (validation guarantees it for a
    configured shape); scores are already on the scale the caller wants.
    """

    utilization: int
    score: int


def build_broken_linear_function(shape: Sequence[FunctionShapePoint]) -> Callable[[int], int]:
    """f(p): shape[0].score up to the first point, linear between neighbouring points
    (Go's truncating integer division), the last score past the last point.

    Port of shape_score.go: BuildBrokenLinearFunction.

    `shape` must not be empty (validation refuses an empty shape).
    """
    points = tuple(shape)

    def broken_linear(p: int) -> int:
        for i, point in enumerate(points):
            if p <= point.utilization:
                if i == 0:
                    return points[0].score
                prev = points[i - 1]
                return prev.score + go_div(
                    (point.score - prev.score) * (p - prev.utilization),
                    point.utilization - prev.utilization,
                )
        return points[-1].score

    return broken_linear
