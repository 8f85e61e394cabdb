"""NodeName (pkg/scheduler/framework/plugins/nodename): spec.nodeName must name the node."""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from webhook.api.kube import RawObj, spec
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

__all__ = ["REASON_NODE_NAME", "NodeName"]

REASON_NODE_NAME = "node(s) didn't match the requested node name"
_NODE_NAME = Status(Code.UNRESOLVABLE, REASON_NODE_NAME)


class NodeName:
    """Filter only. PreFilter skips a pod that names no node."""

    name: ClassVar[str] = "NodeName"
    node_key_reads_pod: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(pod_fields=("spec.nodeName",), node_fields=("name",))

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        wanted = spec(pod).get("nodeName")
        if not isinstance(wanted, str) or not wanted:
            return SKIP
        state[self.name] = wanted
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of node_name.go: Fits."""
        return SUCCESS if node_facts(node).name == state[self.name] else _NODE_NAME

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable | None:
        return None  # reads the node's name: every node is judged on its own

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return str(state.get(self.name, ""))
