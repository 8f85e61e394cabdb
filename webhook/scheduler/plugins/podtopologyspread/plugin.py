"""The PodTopologySpread plugin as a profile holds it and the runtime runs it (plugin.go):
New resolves the args' defaults once; PreFilter, Filter, its PreFilterExtensions
(AddPod, RemovePod and the bulk RemovePods of framework/types.py, on the cycle's
PreFilterState: preemption's dry run and nominated pods), PreScore, Score and
NormalizeScore node by node as upstream, and the two hooks the runtime uses on a big
cluster (framework/types.py): ClassFilter (Filter once per node class of the
constraints' keys) and ColumnScore / ClassScore (Score and NormalizeScore once per node
class, hostname by presence). tests/scheduler/test_properties.py holds the hooks to the
node-by-node phases.

CAVEAT: upstream parses the ScheduleAnyway constraints at PreScore, where an error
fails the scheduling cycle; PreFilter parses them too and Filter reports the error on
every node, so every node's verdict says so (and PreScore then skips).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, cast

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import NodeInfo, NodeTable, Snapshot
from webhook.scheduler.framework.types import (
    FILTER_OUTCOMES,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    FilterOutcomes,
    NodeInfoLike,
    Reads,
    ScoreView,
    Status,
)
from webhook.scheduler.plugins.podtopologyspread import filtering, scoring
from webhook.scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    PLUGIN_NAME,
    READS,
    SCHEDULE_ANYWAY,
    NodeInclusion,
    PodConstraints,
    constraints_or_error,
    distribution_of,
)
from webhook.scheduler.plugins.podtopologyspread.defaults import defaults_for_args

__all__ = ["PodTopologySpread", "SpreadCycle"]


def _info(node: NodeInfoLike) -> NodeInfo:
    """The extensions read a node's labels and its taints (node inclusion): what
    NodeInfoLike has; typed as the NodeInfo the filtering module names."""
    return cast(NodeInfo, node)


@dataclass
class SpreadCycle:
    """What one scheduling cycle of the plugin keeps in its CycleState entry.

    pod, snapshot: what the cycle evaluates; hard / soft: the DoNotSchedule and
    ScheduleAnyway constraints (or the defaults), parsed once, or the Status their
    parse error amounts to; inclusion: node inclusion for this pod, shared by PreFilter
    and PreScore (told the NodeAffinity filter's remembered verdicts when the runtime
    leaves them, FILTER_OUTCOMES); pre: calPreFilterState, worked out on first use
    (after the runtime has left those verdicts); feasible / pre_score: the nodes
    PreScore was given and initPreScoreState over them, worked out on the first Score.
    """

    pod: RawObj
    snapshot: Snapshot
    hard: PodConstraints | Status
    soft: PodConstraints | Status
    inclusion: NodeInclusion
    pre: filtering.PreFilterState | Status | None = None
    feasible: Sequence[NodeInfoLike] = ()
    pre_score: scoring.PreScoreState | Status | None = field(default=None)
    told: bool = False


class PodTopologySpread:
    """One profile's PodTopologySpread: args, and the default constraints they resolve to."""

    name: ClassVar[str] = PLUGIN_NAME
    reads: ClassVar[Reads] = READS
    # node_key reads the pod's constraints' keys.
    node_key_reads_pod: ClassVar[bool] = True

    def __init__(self, args: SpreadArgs | None = None) -> None:
        """Port of plugin.go: New."""
        self.args = args if args is not None else SpreadArgs()
        self.default_constraints: tuple[RawObj, ...] = defaults_for_args(self.args)

    # ---- the cycle state ----------------------------------------------------------------

    def cycle(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> SpreadCycle:
        """This cycle's entry, made on first use (PreFilter, or PreScore when the plugin
        only scores)."""
        kept: SpreadCycle | None = state.get(self.name)
        if kept is None:
            kept = state[self.name] = SpreadCycle(
                pod,
                snapshot,
                constraints_or_error(pod, snapshot, self.args, DO_NOT_SCHEDULE),
                constraints_or_error(pod, snapshot, self.args, SCHEDULE_ANYWAY),
                NodeInclusion(pod),
            )
        return kept

    def _inclusion(self, state: CycleState, kept: SpreadCycle) -> NodeInclusion:
        """Node inclusion, told the NodeAffinity filter's remembered verdicts once the
        runtime has left them: the policy nodeAffinityPolicy Honor checks the very same."""
        if not kept.told:
            outcomes: FilterOutcomes | None = state.get(FILTER_OUTCOMES)
            if outcomes is not None:
                kept.told = True
                matches = outcomes.passing("NodeAffinity")
                if matches is not None:
                    kept.inclusion.know_affinity(outcomes.table, matches)
        return kept.inclusion

    def pre_filter_state(self, state: CycleState) -> filtering.PreFilterState | Status:
        """calPreFilterState for this cycle (after PreFilter), worked out once."""
        kept: SpreadCycle = state[self.name]
        if kept.pre is None:
            inclusion = self._inclusion(state, kept)
            kept.pre = filtering.pre_filter(
                kept.pod, kept.snapshot, self.args, inclusion, parsed=kept.hard
            )
        return kept.pre

    # ---- filter -------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        """Port of filtering.go: PreFilter (Skip without DoNotSchedule constraints)."""
        kept = self.cycle(state, pod, snapshot)
        if isinstance(kept.hard, Status):
            return kept.hard
        if isinstance(kept.soft, Status):
            return SUCCESS  # Filter reports it on every node
        return SUCCESS if kept.hard.constraints else SKIP

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of filtering.go: Filter."""
        soft = state[self.name].soft
        if isinstance(soft, Status):
            return soft
        pre = self.pre_filter_state(state)
        if isinstance(pre, Status):
            return pre
        return filtering.filter_labels(pre, node.labels)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable | None:
        """The node's values for the constraints' keys: all Filter reads of it."""
        get = node.labels.get
        return tuple([get(k) for k in self.filter_label_keys(state)])

    def filter_label_keys(self, state: CycleState) -> tuple[str, ...]:
        if isinstance(state[self.name].soft, Status):
            return ()
        pre = self.pre_filter_state(state)
        return () if isinstance(pre, Status) else filtering.filter_keys(pre)

    def filter_classes(
        self, state: CycleState, keys: tuple[str, ...], classes: Sequence[tuple[Any, ...]]
    ) -> list[Status]:
        soft = state[self.name].soft
        pre = soft if isinstance(soft, Status) else self.pre_filter_state(state)
        if isinstance(pre, Status):
            return [pre] * len(classes)
        return filtering.filter_classes(pre, keys, classes)

    # ---- PreFilterExtensions -------------------------------------------------------------

    def add_pod(
        self, state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfoLike
    ) -> Status:
        """Port of filtering.go: AddPod: the cycle's state as if `pod_to_add` were bound
        to `node` (preemption's dry run, nominated pods)."""
        return self._extend(state, lambda s: filtering.with_pod(s, pod_to_add, _info(node), 1))

    def remove_pod(
        self, state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfoLike
    ) -> Status:
        """Port of filtering.go: RemovePod: the cycle's state as if `pod_to_remove` left
        `node`."""
        return self._extend(state, lambda s: filtering.with_pod(s, pod_to_remove, _info(node), -1))

    def remove_pods(
        self, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfoLike
    ) -> Status:
        """remove_pod for each of `pods` (all on `node`), one new state."""
        return self._extend(state, lambda s: filtering.without_pods(s, pods, _info(node)))

    def _extend(
        self,
        state: CycleState,
        change: Callable[[filtering.PreFilterState], filtering.PreFilterState],
    ) -> Status:
        """The cycle's entry with its PreFilterState changed: a new SpreadCycle when the
        state moved (an entry is never changed in place, so a copy of the CycleState
        keeps the original), the very same entry when it did not."""
        kept: SpreadCycle | None = state.get(self.name)
        if kept is None:
            return SUCCESS  # PreFilter did not run: nothing to update (upstream's nil)
        pre = self.pre_filter_state(state)
        if isinstance(pre, Status):
            return SUCCESS
        moved = change(pre)
        if moved is not pre:
            state[self.name] = replace(kept, pre=moved)
        return SUCCESS

    # ---- score --------------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfoLike], snapshot: Snapshot
    ) -> Status:
        """Port of scoring.go: PreScore (Skip without ScheduleAnyway constraints; also
        when they cannot be parsed, which PreFilter has reported on every node)."""
        kept = self.cycle(state, pod, snapshot)
        if not snapshot.nodes or isinstance(kept.soft, Status) or not kept.soft.constraints:
            return SKIP
        kept.feasible = nodes
        kept.pre_score = None
        return SUCCESS

    def _pre_score_state(self, state: CycleState) -> scoring.PreScoreState | Status:
        """initPreScoreState over the nodes PreScore was given, worked out on first use;
        an Error status when PreScore did not run (upstream: reading the state fails)."""
        kept: SpreadCycle | None = state.get(self.name)
        if kept is None:
            return Status(Code.ERROR, f"reading {self.name!r} from cycleState: not found")
        if kept.pre_score is None:
            nodes: Any = kept.feasible
            kept.pre_score = scoring.pre_score(
                kept.pod, kept.snapshot, self.args, nodes, self._inclusion(state, kept)
            )
        if isinstance(kept.pre_score, scoring.PreScoreState):
            return kept.pre_score
        return Status(Code.ERROR, f"{self.name}: PreScore did not leave a state to score with")

    def score(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> tuple[int, Status]:
        """Port of scoring.go: Score."""
        pre = self._pre_score_state(state)
        if isinstance(pre, Status):
            return 0, pre
        info: Any = node
        return scoring.score_node(pre, info), SUCCESS

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """Port of scoring.go: NormalizeScore."""
        pre = self._pre_score_state(state)
        if isinstance(pre, Status):
            return pre
        scores.update(scoring.normalize_scores(pre, scores))
        return SUCCESS

    def score_column(
        self,
        state: CycleState,
        pod: RawObj,
        snapshot: Snapshot,
        table: NodeTable,
        feasible: list[int],
    ) -> list[int]:
        """PreScore's, Score's and NormalizeScore's answer for every feasible node at
        once, once per node class (scoring.score_classes)."""
        kept: SpreadCycle = state[self.name]
        inclusion = self._inclusion(state, kept)
        return scoring.score_classes(pod, snapshot, kept.soft, table, feasible, inclusion)

    def score_view(
        self, state: CycleState, pod: RawObj, snapshot: Snapshot, table: NodeTable
    ) -> ScoreView | None:
        """score_column by classes (scoring.soft_classes, scoring.soft_scores)."""
        kept: SpreadCycle = state[self.name]
        soft = scoring.soft_classes(pod, snapshot, kept.soft, table)
        if soft is None:
            return None
        inclusion = self._inclusion(state, kept)

        def scores(
            present: Mapping[int, int], counts: Mapping[int, int], total: int
        ) -> dict[int, int]:
            return scoring.soft_scores(soft, snapshot, present, counts, total, inclusion)

        # Per-class counts matter only for the nodes of ignored classes (scored 0).
        return ScoreView(soft.of_node, scores, counted=bool(soft.ignored))

    # ---- what placement reports ---------------------------------------------------------

    def distribution(self, state: CycleState) -> dict[str, dict[str, int]]:
        """Matching pods per domain for each topology key the pod spreads over (see
        common.distribution), from this cycle's parsed constraints."""
        kept: SpreadCycle = state[self.name]
        if isinstance(kept.hard, Status) or isinstance(kept.soft, Status):
            return {}
        both = (*kept.hard.constraints, *kept.soft.constraints)
        return distribution_of(kept.pod, kept.snapshot, both)
