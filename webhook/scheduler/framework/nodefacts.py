"""What the node filters read of a Node object, read once per object.

CAVEAT: node objects are read as immutable values: what the filters need from a node
(unschedulable, taints, name, allocatable) is cached by object identity, so an update
must replace the Node object, not edit it in place (the Snapshot and the informer do).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from webhook.api.kube import RawObj
from webhook.api.resources import node_allocatable
from webhook.scheduler.framework.types import NodeInfoLike

__all__ = ["NodeFacts", "node_facts"]


class NodeFacts(NamedTuple):
    """unschedulable: spec.unschedulable is true; taints: spec.taints (None when none);
    name: metadata.name ("" when absent); allocatable: resources.node_allocatable
    (None: the node reports no status.allocatable, read as unlimited)."""

    unschedulable: bool
    taints: Any
    name: str
    allocatable: dict[str, int] | None


# The object is kept in the entry so its id cannot be reused while the entry lives.
_CACHE: dict[int, tuple[RawObj, NodeFacts]] = {}
_CACHE_LIMIT = 50_000
_MISSING: Any = object()


def node_facts(node_info: NodeInfoLike) -> NodeFacts:
    """The facts of node_info.node, cached per node object."""
    node = node_info.node
    entry = _CACHE.get(id(node))
    if entry is not None and entry[0] is node:
        return entry[1]
    if not isinstance(node, dict):
        # A NodeInfo known only from its pods: nothing to read, nothing to cache.
        return NodeFacts(False, None, "", getattr(node_info, "allocatable", None))
    spec = node.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    metadata = node.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    allocatable = getattr(node_info, "allocatable", _MISSING)
    if allocatable is _MISSING:
        allocatable = node_allocatable(node)
    facts = NodeFacts(
        spec.get("unschedulable") is True,
        spec.get("taints") or None,
        name if isinstance(name, str) else "",
        allocatable,
    )
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[id(node)] = (node, facts)
    return facts
