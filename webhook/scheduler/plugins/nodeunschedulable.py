"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable).

A node with spec.unschedulable fails, unless the pod tolerates the
node.kubernetes.io/unschedulable:NoSchedule taint.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from webhook.api.kube import RawObj
from webhook.api.labels import taint_tolerated
from webhook.scheduler.framework.nodefacts import node_facts
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLike,
    Reads,
    Status,
)

__all__ = ["REASON_UNSCHEDULABLE", "UNSCHEDULABLE_TAINT", "NodeUnschedulable"]

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT: RawObj = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_UNSCHEDULABLE = Status(Code.UNRESOLVABLE, REASON_UNSCHEDULABLE)


class NodeUnschedulable:
    """Filter only. PreFilter skips a pod that tolerates the unschedulable taint."""

    name: ClassVar[str] = "NodeUnschedulable"
    node_key_reads_pod: ClassVar[bool] = False
    reads: ClassVar[Reads] = Reads(
        pod_fields=("spec.tolerations",), node_fields=("spec.unschedulable",)
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        """Port of node_unschedulable.go: Filter's toleration check, hoisted per pod."""
        return SKIP if taint_tolerated(UNSCHEDULABLE_TAINT, pod_tolerations(pod)) else SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of node_unschedulable.go: Filter."""
        return _UNSCHEDULABLE if node_facts(node).unschedulable else SUCCESS

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable:
        return node_facts(node).unschedulable

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return None  # what it reads of the pod decided PreFilter: nothing more per node


def pod_tolerations(pod: RawObj) -> list[RawObj]:
    """spec.tolerations as given, only the object entries."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    raw = spec.get("tolerations") if isinstance(spec, dict) else None
    return [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []
