"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity): nodeSelector AND the
required node affinity terms.

CAVEAT: upstream's PreFilter narrows the node list when every required term names
nodes through matchFields metadata.name; here such nodes simply fail the Filter with
the NodeAffinity reason, which is the same verdict.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar

from webhook.api.kube import RawObj, spec
from webhook.api.labels import compile_node_affinity, required_node_affinity
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

__all__ = ["REASON_NODE_AFFINITY", "NodeAffinity", "affinity_label_keys"]

REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
_NODE_AFFINITY = Status(Code.UNRESOLVABLE, REASON_NODE_AFFINITY)


class NodeAffinity:
    """Filter. PreFilter skips a pod that constrains no node; its state is the compiled
    matcher (api.labels.compile_node_affinity)."""

    name: ClassVar[str] = "NodeAffinity"
    node_key_reads_pod: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        pod_fields=("spec.nodeSelector", "spec.affinity.nodeAffinity"),
        node_fields=("metadata.labels", "metadata.name"),
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        matcher = compile_node_affinity(pod) if isinstance(pod, dict) else None
        if matcher is None:
            return SKIP
        state[self.name] = matcher
        state[self.name + "/keys"] = affinity_label_keys(pod)
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of node_affinity.go: Filter (required terms and nodeSelector)."""
        return SUCCESS if state[self.name](node.node or {}) else _NODE_AFFINITY

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable | None:
        keys = state[self.name + "/keys"]
        if keys is None:
            return None  # a term reads the node's name (matchFields)
        get = node.labels.get
        return tuple([get(k) for k in keys])

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        s = spec(pod)
        return (repr(s.get("nodeSelector")), repr(required_node_affinity(s)))


def affinity_label_keys(pod: RawObj) -> tuple[str, ...] | None:
    """The node label keys the pod's nodeSelector and required node affinity read (the
    Filter reads nothing else of a node), or None when a term also reads the node's
    name (matchFields)."""
    s = spec(pod)
    keys: list[str] = []
    node_selector = s.get("nodeSelector")
    if isinstance(node_selector, dict):
        keys += [k for k in node_selector if isinstance(k, str)]
    required = required_node_affinity(s)
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for term in terms if isinstance(terms, list) else ():
        if not isinstance(term, dict):
            continue
        if term.get("matchFields"):
            return None
        expressions = term.get("matchExpressions")
        for e in expressions if isinstance(expressions, list) else ():
            if isinstance(e, dict) and isinstance(e.get("key"), str):
                keys.append(e["key"])
    return tuple(dict.fromkeys(keys))
