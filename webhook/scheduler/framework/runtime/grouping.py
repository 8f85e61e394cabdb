"""Groups of nodes the filter plugins cannot tell apart for a pod, so each group is
judged once.

Upstream has no such grouping: kube-scheduler runs every Filter on every node (or on a
sample of them, percentageOfNodesToScore). It is the node-side twin of the pod
signature (framework/runtime/framework.py: pod_inputs): nodes with equal keys for
every active plugin (FilterPlugin.node_key, and the optional hooks of
framework/types.py) get the same statuses. tests/scheduler/test_properties.py holds
every grouping to node-by-node evaluation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from operator import add
from typing import Any, cast

from webhook.api.kube import RawObj
from webhook.scheduler.framework.memo import (
    FilterMemo,
    NodeState,
    generations_of,
    memo_of,
    moved_since,
)
from webhook.scheduler.framework.runtime.framework import PreparedFilters
from webhook.scheduler.framework.snapshot import NodeTable, Snapshot
from webhook.scheduler.framework.types import (
    CycleState,
    FilterPlugin,
    NodeInfoLike,
    NodeKeysBatch,
    NodeLabelKeyed,
    NodeStateKeyed,
    implements,
)

__all__ = [
    "alike_nodes",
    "firsts",
    "groups_signature",
    "kept_classes",
    "node_groups",
    "node_keys",
    "stated_groups",
]


def alike_nodes(
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable, *, kept_only: bool = False
) -> tuple[list[int], dict[int, int], list[int]] | None:
    """Each node's group of nodes the filters cannot tell apart for this pod (equal
    FilterPlugin.node_key of every active plugin), the first node of each group, and
    each node's generation as its group was read; or None when nodes must be judged
    one by one (a plugin reads the node's name).

    The keys that do not depend on the pod are remembered per node (node_groups). Of
    the others, a plugin whose key is its verdict for the pod but that can say what
    its Filter reads of a node whatever the pod (`node_state_key`: NodeResourcesFit's
    allocatable, pod count and requests) joins those remembered groups when they are
    few (at most a quarter of the nodes: pods alike, requests alike; decided once per
    NodeTable, stated_groups), and is read node by node otherwise (every node's
    requests differ). A plugin that names
    the node labels its key reads for this pod (`node_label_keys`: NodeAffinity's
    nodeSelector and required terms) is grouped by the node classes of those labels
    (Memo.node_classes, kept until a node's labels change), the combination kept while
    both are unchanged; only the rest are read node by node. With `kept_only`, None
    instead of reading any node's key one by one: such a key costs about what judging
    the node does, and unlike a judged node it is not remembered when a time budget
    cuts the reading short.
    """
    shared = tuple(p for p in prepared.active if not p.node_key_reads_pod)
    own = tuple(p for p in prepared.active if p.node_key_reads_pod)
    stated = tuple(p for p in own if implements(p, NodeStateKeyed))
    kept = stated_groups(snapshot, table, prepared, shared, stated) if stated else None
    if kept is not None:
        own = tuple(p for p in own if p not in stated)
    else:
        stated = ()
        kept = node_groups(snapshot, table, prepared, shared)
    if kept is None:
        return None
    groups, generations = kept.ids, kept.generations
    state, pod = prepared.state, prepared.pod
    label_keys: list[str] = []
    by_node: list[FilterPlugin] = []
    for p in own:
        hooked = cast("NodeLabelKeyed", p) if implements(p, NodeLabelKeyed) else None
        keys = hooked.node_label_keys(state, pod) if hooked is not None else None
        if keys is None:
            by_node.append(p)
        else:
            label_keys.extend(keys)
    memo = memo_of(snapshot)
    what = (tuple(p.name for p in (*shared, *stated)), tuple(dict.fromkeys(label_keys)))
    try:
        if label_keys:
            keys = what[1]
            classes = memo.node_classes(keys, (False,) * len(keys), table)
            width = len(classes.values)
            labelled = groups

            def combine() -> list[int]:
                return list(map(add, map(width.__mul__, labelled), classes.of_node))

            groups = memo.combined(("groups", what), (labelled, classes.of_node), combine)
        if by_node:
            if kept_only:
                return None
            infos = table.infos
            columns = [node_keys(p, state, pod, infos) for p in by_node]
            if any(None in column for column in columns):
                return None
            combined: dict[Any, int] = {}
            keyed = zip(groups, *columns, strict=True)
            groups = [combined.setdefault(key, len(combined)) for key in keyed]
            return groups, firsts(groups), generations
    except TypeError:  # a value that cannot be hashed: no Node decoded from JSON has one
        return None
    final = groups
    return groups, memo.combined(("first", what), (final,), lambda: firsts(final)), generations


def node_keys(
    plugin: FilterPlugin, state: CycleState, pod: RawObj, infos: Sequence[NodeInfoLike]
) -> list[Hashable | None]:
    """The plugin's node_key of each node, in one call when it has the NodeKeysBatch
    hook."""
    if implements(plugin, NodeKeysBatch):
        return cast("NodeKeysBatch", plugin).node_keys(state, pod, infos)
    return [plugin.node_key(state, pod, info) for info in infos]


def firsts(groups: list[int]) -> dict[int, int]:
    """Group -> the position of its first node (reversed, so the first write of each
    group wins)."""
    return dict(zip(reversed(groups), range(len(groups) - 1, -1, -1), strict=True))


def node_groups(
    snapshot: Snapshot,
    table: NodeTable,
    prepared: PreparedFilters,
    plugins: tuple[FilterPlugin, ...],
    stated: tuple[FilterPlugin, ...] = (),
) -> NodeState | None:
    """The group of each node of `table` by the pod-independent node keys of `plugins`
    and the node state keys of `stated` (node_state_key). Regrouped only for nodes
    that changed."""
    memo = memo_of(snapshot).node_groups(groups_signature(plugins, stated))
    state, pod = prepared.state, prepared.pod
    readers: list[Callable[[NodeInfoLike], Hashable | None]]
    readers = [functools.partial(p.node_key, state, pod) for p in plugins]
    readers += [cast("NodeStateKeyed", p).node_state_key for p in stated]

    def key_of(info: NodeInfoLike) -> Hashable | None:
        key = tuple(read(info) for read in readers)
        return None if None in key else key

    return kept_classes(memo, snapshot, table, key_of)


def groups_signature(
    plugins: tuple[FilterPlugin, ...], stated: tuple[FilterPlugin, ...]
) -> tuple[str, ...]:
    """What names a set of node groups (Memo.node_groups)."""
    return (*(p.name for p in plugins), *(f"{p.name} state" for p in stated))


def stated_groups(
    snapshot: Snapshot,
    table: NodeTable,
    prepared: PreparedFilters,
    plugins: tuple[FilterPlugin, ...],
    stated: tuple[FilterPlugin, ...],
) -> NodeState | None:
    """The node groups of `plugins` and of the node state keys of `stated` (see alike_nodes)
    when they are few: at most a quarter as many groups as nodes, so judging one node
    per group costs less than reading a verdict key on every node. Decided once per
    NodeTable (until nodes come or go); groups that are not few are not kept."""
    memo = memo_of(snapshot)
    signature = groups_signature(plugins, stated)

    def decide() -> bool:
        kept = node_groups(snapshot, table, prepared, plugins, stated)
        few = kept is not None and len(set(kept.ids)) * 4 <= len(kept.ids)
        if not few:
            memo.forget_node_groups(signature)
        return few

    if not memo.combined(("few", signature), (table.names,), decide):
        return None
    return node_groups(snapshot, table, prepared, plugins, stated)


def kept_classes(
    memo: FilterMemo,
    snapshot: Snapshot,
    table: NodeTable,
    key_of: Callable[[NodeInfoLike], Hashable | None],
) -> NodeState | None:
    """The class of each node of `table` (nodes with equal `key_of(node)` share one), kept
    in `memo` and worked out again only for nodes that changed; None when a node has
    no key. The state's ids list is the very one of the last call while no node moved."""

    def group(info: NodeInfoLike) -> int | None:
        key = key_of(info)
        if key is None:
            return None
        hit = memo.lookup(key)
        return hit if hit is not None else memo.intern(key, None)

    state = memo.state
    mark = snapshot.journal_mark()
    moved = moved_since(snapshot, table, state)
    infos = table.infos
    if moved is None:
        generations = generations_of(table)
        fresh = list(map(group, infos))
        if None in fresh:
            return None
    elif moved:
        generations = list(state.generations)
        fresh = list(state.ids)
        for i in moved:
            generations[i] = infos[i].generation
            fresh[i] = group(infos[i])
            if fresh[i] is None:  # the others were read with a key
                return None
    else:
        if state.mark != mark:
            memo.state = state = state._replace(mark=mark)
        return state
    ids = cast("list[int]", fresh)  # no None left
    memo.state = state = NodeState(table.names, mark, generations, ids)
    return state
