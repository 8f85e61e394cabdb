"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration): NoSchedule and
NoExecute taints the pod does not tolerate."""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import ClassVar

from webhook.api.kube import RawObj
from webhook.api.labels import find_untolerated_taint
from webhook.scheduler.framework.nodefacts import node_facts
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLike,
    Reads,
    Status,
)
from webhook.scheduler.plugins.nodeunschedulable import pod_tolerations

__all__ = ["TaintToleration"]


class TaintToleration:
    """Filter; its state is the pod's tolerations."""

    name: ClassVar[str] = "TaintToleration"
    node_key_reads_pod: ClassVar[bool] = False
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
        key, value = taint.get("key") or "", taint.get("value") or ""
        return Status(Code.UNRESOLVABLE, f"node(s) had untolerated taint {{{key}: {value}}}")

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable:
        taints = node_facts(node).taints
        return json.dumps(taints, sort_keys=True, default=str) if taints else ""

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return json.dumps(state[self.name], sort_keys=True, default=str)
