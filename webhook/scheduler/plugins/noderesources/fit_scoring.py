"""NodeResourcesFit's PreScore and Score: the scoring strategy chosen by
NodeResourcesFitArgs.scoringStrategy (the scoring half of
pkg/scheduler/framework/plugins/noderesources/fit.go; the filter half lives with
the plugin class).

LeastAllocated (the default, cpu and memory weight 1) favours free nodes,
MostAllocated full ones, RequestedToCapacityRatio follows a configured shape. All
count cpu and memory with the non-zero defaults (resource_allocation.py). The
plugin has no NormalizeScore: its scores are already 0..MAX_NODE_SCORE.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import (
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    ScoringStrategyType,
)
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SUCCESS, CycleState, Status
from webhook.scheduler.plugins.noderesources.least_allocated import least_resource_scorer
from webhook.scheduler.plugins.noderesources.most_allocated import most_resource_scorer
from webhook.scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    requested_to_capacity_ratio_scorer,
)
from webhook.scheduler.plugins.noderesources.resource_allocation import (
    ResourceAllocationScorer,
    Scorer,
)

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "STRATEGY_SCORERS",
    "FitPreScoreState",
    "FitScoring",
    "score_for",
]

PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesFit"


def _rtcr(strategy: ScoringStrategy) -> Scorer:
    return requested_to_capacity_ratio_scorer(strategy.resources, strategy.shape or ())


# nodeResourceStrategyTypeMap: strategy type -> the function of its resources.
STRATEGY_SCORERS: dict[ScoringStrategyType, Callable[[ScoringStrategy], Scorer]] = {
    "LeastAllocated": lambda s: least_resource_scorer(s.resources),
    "MostAllocated": lambda s: most_resource_scorer(s.resources),
    "RequestedToCapacityRatio": _rtcr,
}


def score_for(strategy: ScoringStrategy) -> ResourceAllocationScorer:
    """The scorer a (validated) scoring strategy configures.

    Port of fit.go: nodeResourceStrategyTypeMap.
    """
    resources: tuple[ResourceSpec, ...] = tuple(strategy.resources)
    return ResourceAllocationScorer(
        strategy.type, STRATEGY_SCORERS[strategy.type](strategy), resources
    )


@dataclass(frozen=True)
class FitPreScoreState:
    """What PreScore leaves for Score.

    pod_requests: the pod's non-zero request of each strategy resource, in the
    order of scoringStrategy.resources.
    """

    pod_requests: tuple[int, ...]


class FitScoring:
    """NodeResourcesFit's score extension points, for the plugin class to delegate to.

    Port of fit.go: Fit.PreScore, Fit.Score (with NewFit's scorer choice).
    """

    def __init__(self, args: NodeResourcesFitArgs | None = None) -> None:
        self.args = args if args is not None else NodeResourcesFitArgs()
        self.scorer = score_for(self.args.scoring_strategy)

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status:
        """The pod's requests into `state` (never Skip, unlike BalancedAllocation).

        Port of fit.go: Fit.PreScore.
        """
        state[PRE_SCORE_STATE_KEY] = FitPreScoreState(self.scorer.pod_request_list(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: RawObj, node: NodeInfo) -> tuple[int, Status]:
        """The node's score under the strategy, 0..MAX_NODE_SCORE.

        Port of fit.go: Fit.Score.
        """
        return self.scorer.score(self._requests(state, pod), node)

    def score_nodes(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        """score() of each of `nodes`, in order, in one call."""
        return self.scorer.score_many(self._requests(state, pod), nodes)

    def _requests(self, state: CycleState, pod: RawObj) -> tuple[int, ...]:
        """The pod's requests PreScore left, or computed here without it."""
        pre = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(pre, FitPreScoreState):
            return pre.pod_requests
        return self.scorer.pod_request_list(pod)

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """No normalisation (ScoreExtensions nil)."""
        return SUCCESS

    def score_key(self, state: CycleState) -> tuple[int, ...] | None:
        """The pod's requests PreScore left (None before PreScore)."""
        pre = state.get(PRE_SCORE_STATE_KEY)
        return pre.pod_requests if isinstance(pre, FitPreScoreState) else None
