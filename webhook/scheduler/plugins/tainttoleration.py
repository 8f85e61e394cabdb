"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration): Filter on the
NoSchedule and NoExecute taints the pod does not tolerate; Score by how many
PreferNoSchedule taints it does not tolerate (fewer is better)."""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import ClassVar

from webhook.api.kube import RawObj
from webhook.api.labels import find_untolerated_taint, taint_tolerated
from webhook.scheduler.framework.nodefacts import node_facts
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLike,
    Reads,
    Status,
)
from webhook.scheduler.plugins.helper.normalize_score import default_normalize_score
from webhook.scheduler.plugins.nodeunschedulable import pod_tolerations

PREFER_NO_SCHEDULE = "PreferNoSchedule"
# Filter's reason in v1.35, v1.36 and v1.37 (taint_toleration.go: Filter).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"

__all__ = ["ERR_REASON_UNTOLERATED", "TaintToleration"]


class TaintToleration:
    """Filter and Score; the Filter's state is the pod's tolerations, the Score's those
    of them that can tolerate a PreferNoSchedule taint."""

    name: ClassVar[str] = "TaintToleration"
    node_key_reads_pod: ClassVar[bool] = False
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(pod_fields=("spec.tolerations",), node_fields=("spec.taints",))

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        state[self.name] = pod_tolerations(pod)
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of taint_toleration.go: Filter."""
        taints = node_facts(node).taints
        if not taints:
            return SUCCESS
        taint = find_untolerated_taint(taints, state[self.name])
        if taint is None:
            return SUCCESS
        # Every supported release (v1.35 on) words it generically, whichever taint it
        # was; v1.34 and before named the taint ("untolerated taint {key: value}").
        return Status(Code.UNRESOLVABLE, ERR_REASON_UNTOLERATED)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable:
        return _taints_key(node)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return json.dumps(state[self.name], sort_keys=True, default=str)

    # ---- score ----------------------------------------------------------------------

    def pre_score(
        self,
        state: CycleState,
        pod: RawObj,
        nodes: Sequence[NodeInfoLike],
        snapshot: Snapshot | None,
    ) -> Status:
        """Port of taint_toleration.go: PreScore (getAllTolerationPreferNoSchedule)."""
        state[self.name + "/score"] = [
            t for t in pod_tolerations(pod) if t.get("effect") in (None, "", PREFER_NO_SCHEDULE)
        ]
        return SUCCESS

    def score(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> tuple[int, Status]:
        """Port of taint_toleration.go: Score (countIntolerableTaintsPreferNoSchedule)."""
        taints = node_facts(node).taints
        if not taints or not isinstance(taints, list):
            return 0, SUCCESS
        tolerations = state[self.name + "/score"]
        count = sum(
            1
            for taint in taints
            if isinstance(taint, dict)
            and taint.get("effect") == PREFER_NO_SCHEDULE
            and not taint_tolerated(taint, tolerations)
        )
        return count, SUCCESS

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """Port of taint_toleration.go: NormalizeScore (reversed: fewer taints score more)."""
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def score_key(self, state: CycleState, pod: RawObj) -> Hashable:
        """What Score reads of the pod: the tolerations that can tolerate PreferNoSchedule."""
        return json.dumps(state[self.name + "/score"], sort_keys=True, default=str)

    def score_node_key(self, node: NodeInfoLike) -> Hashable:
        """What Score reads of a node, whatever the pod: its taints."""
        return _taints_key(node)


def _taints_key(node: NodeInfoLike) -> str:
    """The node's taints as a key ("" when it has none)."""
    taints = node_facts(node).taints
    return json.dumps(taints, sort_keys=True, default=str) if taints else ""
