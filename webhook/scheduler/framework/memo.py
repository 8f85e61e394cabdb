"""Per-snapshot caches beside the runtime: what a decision learns and the next reuses.

The Snapshot is the read-only store (readers never modify it); what decisions remember
lives here, one Memo per Snapshot (`memo_of`), each entry checked against what it was
computed from (node generations, the NodeTable, the snapshot's topology version), so
a stale entry is never used:

- filter outcomes per pod spec (`filter_verdicts`), by node generation;
- the groups of nodes the filters cannot tell apart (`node_groups`), by generation;
- nodes grouped by their values for some topology keys (`node_classes`), by topology
  version;
- the classes of nodes a score plugin cannot tell apart whatever the pod
  (`score_classes`), by node generation, and the raw score of each class per pod
  score key (`raw_by_class`);
- lists combined from other kept lists (`combined`: the filters' node groups with
  label classes, each group's first node), while those are the very same objects;
- what decisions hand out again and again (`shared`: status and score maps, the
  previous decision's verdicts), whatever the pod.

Whether something kept per node still holds is asked of the snapshot's journal of node
changes (`moved_since`): a decision on an unchanged cluster reads no node to know it,
and one after a few changes rereads only those nodes. A state taken against another
snapshot (a simulation's copy) or older than the journal keeps falls back to comparing
every node's generation.

A simulation works on a copy of the snapshot; `adopt` gives the copy a copy of the
original's Memo (copied nodes keep their generations, so what was learnt holds).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from itertools import compress
from operator import attrgetter, ne
from typing import Any, NamedTuple

from webhook.scheduler.framework.snapshot import ABSENT, ClassValues, NodeTable, Snapshot

__all__ = [
    "EMPTY_STATE",
    "FilterMemo",
    "Memo",
    "NodeClasses",
    "NodeState",
    "adopt",
    "generations_of",
    "memo_of",
    "moved_since",
]

# Topology key sets grouped at once; all are dropped on any Node change anyway.
MAX_KEY_INDEXES = 64
# Pod specs whose node filter verdicts are remembered, least recently used dropped.
MAX_FILTER_SPECS = 2
# Groups of nodes alike for the filters remembered, per node, before starting afresh.
MAX_NODE_GROUPS = 2
# Sets of plugins whose node groups (or a score plugin's classes) are kept at once.
MAX_NODE_GROUP_SETS = 32
# (score plugin, pod score key) pairs whose raw scores per class are remembered.
MAX_SCORE_KEYS = 64
# Values a FilterMemo shares out before starting afresh: the status and score maps
# of a snapshot's decisions, one score map per distinct row of scores (up to one per
# feasible node with the whole profile), so a few decisions' worth on a large cluster.
MAX_SHARED = 16384
# Combinations of node groups and label classes (Memo.combined) kept at once.
MAX_COMBINED = 16


class NodeClasses(NamedTuple):
    """Nodes grouped by what they carry for some topology keys.

    of_node[i]: the class of the i-th node of the NodeTable; values[c]: what the
    nodes of class c carry for each key (ClassValues). A decision judges a class
    once and applies the outcome to its nodes.
    """

    of_node: list[int]
    values: list[ClassValues]


class NodeState(NamedTuple):
    """One value per node of a NodeTable, with what tells whether it still holds.

    names: the NodeTable.names list it was taken against (compared by identity);
    mark: Snapshot.journal_mark() taken before any node was read; generations[i]: the
    generation of node i as read; ids[i]: its value. Replaced whole, never edited, so
    a reader sees one consistent set.
    """

    names: list[str] | None
    mark: tuple[int, int] | None
    generations: list[int]
    ids: list[int]


EMPTY_STATE = NodeState(None, None, [], [])

_generation = attrgetter("generation")


def moved_since(snapshot: Snapshot, table: NodeTable, state: NodeState) -> list[int] | None:
    """The positions in `table` of the nodes that changed since `state` was taken,
    ascending ([] when none did); None when `state` is of another NodeTable (every
    node must be read).

    Asks the snapshot's journal first; a mark it cannot answer (another snapshot's,
    or older than the journal keeps) falls back to comparing every node's generation.
    """
    if state.names is not table.names:
        return None
    changed = snapshot.changed_since(state.mark)
    if changed is None:
        generations = list(map(_generation, table.infos))
        return list(compress(range(len(generations)), map(ne, generations, state.generations)))
    if not changed:
        return []
    at = map(table.position.get, changed)
    return sorted(p for p in at if p is not None)


def generations_of(table: NodeTable) -> list[int]:
    """Each node's generation, in table order."""
    return list(map(_generation, table.infos))


class FilterMemo:
    """Something judged per node and remembered across decisions while the node is
    unchanged: the five filters' outcomes for one pod spec, or the group of
    nodes the filters cannot tell apart (Memo.node_groups).

    state: a NodeState whose ids are the outcomes' indexes. outcomes[k]: outcome k
    (outcomes[0] is `first`); they only grow. step: (the previous state's ids, the
    positions that moved) when the last update judged only moved nodes, else None,
    so what the caller derives from ids can be updated the same way. derived: what
    the caller last derived from the ids (its own record). shared: values the caller
    builds from outcomes and hands out again and again (cleared past MAX_SHARED
    entries); last: the caller's previous answer, to reuse what did not change (None
    at first).
    """

    __slots__ = (
        "state",
        "outcomes",
        "step",
        "derived",
        "shared",
        "last",
        "_lookup",
        "_lock",
    )

    def __init__(self, first: Any) -> None:
        self.state: NodeState = EMPTY_STATE
        self.outcomes: list[Any] = [first]
        self.step: tuple[list[int], list[int]] | None = None
        self.derived: Any = None
        self.shared: dict[Any, Any] = {}
        self.last: Any = None
        self._lookup: dict[Any, int] = {}
        self._lock = threading.Lock()

    def share(self, key: Any, make: Callable[..., Any], *args: Any) -> Any:
        """shared[key], made by make(*args) when missing."""
        hit = self.shared.get(key)
        if hit is None:
            if len(self.shared) >= MAX_SHARED:
                self.shared = {}
            hit = self.shared[key] = make(*args)
        return hit

    def lookup(self, key: Any) -> int | None:
        """The index of the outcome identified by `key`, None when not known."""
        return self._lookup.get(key)

    def intern(self, key: Any, outcome: Any) -> int:
        """The index of the outcome identified by `key`, added when new."""
        hit = self._lookup.get(key)
        if hit is None:
            with self._lock:
                hit = self._lookup.get(key)
                if hit is None:
                    self.outcomes.append(outcome)
                    hit = self._lookup[key] = len(self.outcomes) - 1
        return hit

    def copy(self) -> FilterMemo:
        other = FilterMemo(None)
        with self._lock:
            other.state = self.state
            other.step = self.step
            other.derived = self.derived
            other.outcomes = list(self.outcomes)
            other.shared = dict(self.shared)
            other.last = self.last
            other._lookup = dict(self._lookup)
        return other


class Memo:
    """The caches of one Snapshot (see the module docstring)."""

    def __init__(self, snapshot: Snapshot) -> None:
        # Weakly: the Memo is the value of a WeakKeyDictionary keyed by the snapshot,
        # and a strong reference would keep the snapshot (a simulation's copy) alive.
        self._snapshot_ref = weakref.ref(snapshot)
        # (keys, presence) -> (NodeTable.names, topology version, the classes)
        self._classes: dict[
            tuple[tuple[str, ...], tuple[bool, ...]], tuple[list[str], int, NodeClasses]
        ] = {}
        self._filter_verdicts: OrderedDict[str, FilterMemo] = OrderedDict()
        self._node_groups: dict[tuple[str, ...], FilterMemo] = {}
        # (plugin name, pod score key) -> (the score_classes memo the classes are of,
        # class -> raw score)
        self._raw_by_class: OrderedDict[Any, tuple[FilterMemo, dict[int, int]]] = OrderedDict()
        # what -> (the lists it was combined from, the combination): see combined()
        self._combined: dict[Any, tuple[tuple[Any, ...], Any]] = {}
        # Status maps, score maps and the previous decision, shared by every pod.
        self.shared = FilterMemo(None)
        self._lock = threading.RLock()

    @property
    def _snapshot(self) -> Snapshot:
        snapshot = self._snapshot_ref()
        if snapshot is None:  # only a caller holding a Memo past its snapshot gets here
            raise ReferenceError("the snapshot of this Memo is gone")
        return snapshot

    def node_classes(
        self, keys: tuple[str, ...], presence: tuple[bool, ...], table: NodeTable
    ) -> NodeClasses:
        """The nodes of `table` (a node_table() answer) grouped by their values for `keys`.

        presence[j]: key j is read by presence only, as kubernetes.io/hostname is,
        where grouping by value would make one class per node. Cached until the
        next change to a node's labels or to the set of nodes.
        """
        snapshot = self._snapshot
        hit = self._classes.get((keys, presence))
        if hit is not None and hit[0] is table.names and hit[1] == snapshot.topology_version:
            return hit[2]
        version = snapshot.topology_version
        lookup: dict[ClassValues, int] = {}
        of_node: list[int] = []
        for info in table.infos:
            labels = info.labels
            values = tuple(
                ABSENT
                if k not in labels
                else (labels[k] is not None or None)
                if by_presence
                else labels[k]
                for k, by_presence in zip(keys, presence, strict=True)
            )
            c = lookup.get(values)
            if c is None:
                c = lookup[values] = len(lookup)
            of_node.append(c)
        classes = NodeClasses(of_node, list(lookup))
        with self._lock:
            # Keep it only if no node changed labels or came or went meanwhile.
            if snapshot.node_table() is table and snapshot.topology_version == version:
                if len(self._classes) >= MAX_KEY_INDEXES:
                    self._classes.clear()
                self._classes[(keys, presence)] = (table.names, version, classes)
        return classes

    def filter_verdicts(self, spec_key: str, first: Any) -> FilterMemo:
        """The remembered filter outcomes for one pod spec (new and empty when the spec
        is new; `first` is then its outcome 0). The caller fills and checks it."""
        with self._lock:
            memo = self._filter_verdicts.get(spec_key)
            if memo is None:
                memo = self._filter_verdicts[spec_key] = FilterMemo(first)
                if len(self._filter_verdicts) > MAX_FILTER_SPECS:
                    self._filter_verdicts.popitem(last=False)
            else:
                self._filter_verdicts.move_to_end(spec_key)
            return memo

    def node_groups(self, signature: tuple[str, ...]) -> FilterMemo:
        """Each node's group of nodes alike for the filter plugins named by `signature`
        (their pod-independent node keys), for the caller to fill and check (outcomes
        hold nothing but their number; 0 is unused).

        Groups only accumulate (pods come and go, so nodes keep moving to new
        ones): past MAX_NODE_GROUPS per node, all are forgotten and built anew.
        """
        memo = self._node_groups.get(signature)
        if memo is None or len(memo.outcomes) > MAX_NODE_GROUPS * max(1, len(self._snapshot.nodes)):
            if len(self._node_groups) >= MAX_NODE_GROUP_SETS:
                self._node_groups = {}
            memo = self._node_groups[signature] = FilterMemo(None)
        return memo

    def forget_node_groups(self, signature: tuple[str, ...]) -> None:
        """Drop the node groups of `signature` (a caller that will not use them)."""
        self._node_groups.pop(signature, None)

    def score_classes(self, plugin: str) -> FilterMemo:
        """Each node's class of nodes alike for one score plugin's Score whatever the pod
        (equal `score_node_key`), for the caller to fill and check as node_groups."""
        return self.node_groups(("score", plugin))

    def raw_by_class(self, plugin: str, key: Any, classes: FilterMemo) -> dict[int, int]:
        """The remembered raw scores of one score plugin for one pod score key
        (ScorePlugin.score_key), by class of `classes` (a score_classes memo): a class's
        raw score holds for as long as the class does. Empty when new; the caller adds."""
        with self._lock:
            hit = self._raw_by_class.get((plugin, key))
            if hit is not None and hit[0] is classes:
                self._raw_by_class.move_to_end((plugin, key))
                return hit[1]
            raw: dict[int, int] = {}
            self._raw_by_class[(plugin, key)] = (classes, raw)
            if len(self._raw_by_class) > MAX_SCORE_KEYS:
                self._raw_by_class.popitem(last=False)
            return raw

    def combined(self, what: Any, parts: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """make() for `what`, kept while every one of `parts` (lists kept elsewhere, each
        replaced whole on change, never edited) is the very object it was made from."""
        hit = self._combined.get(what)
        if hit is not None and all(map(_same, hit[0], parts)):
            return hit[1]
        value = make()
        if len(self._combined) >= MAX_COMBINED:
            self._combined = {}
        self._combined[what] = (parts, value)
        return value

    def copy_for(self, snapshot: Snapshot) -> Memo:
        """This memo's entries for a copy of its snapshot."""
        other = Memo(snapshot)
        with self._lock:
            other._classes = dict(self._classes)
            other._filter_verdicts = OrderedDict(
                (spec, memo.copy()) for spec, memo in self._filter_verdicts.items()
            )
            copies = {id(memo): memo.copy() for memo in self._node_groups.values()}
            other._node_groups = {sig: copies[id(memo)] for sig, memo in self._node_groups.items()}
            other._raw_by_class = OrderedDict(
                (key, (copies[id(classes)], dict(raw)))
                for key, (classes, raw) in self._raw_by_class.items()
                if id(classes) in copies and self._node_groups.get(("score", key[0])) is classes
            )
            other.shared = self.shared.copy()
            other._combined = dict(self._combined)
        return other


def _same(a: Any, b: Any) -> bool:
    return a is b


_MEMOS: weakref.WeakKeyDictionary[Snapshot, Memo] = weakref.WeakKeyDictionary()
_MEMOS_LOCK = threading.Lock()


def memo_of(snapshot: Snapshot) -> Memo:
    """The Memo of `snapshot`, made on first use; it goes when the snapshot goes."""
    memo = _MEMOS.get(snapshot)
    if memo is None:
        with _MEMOS_LOCK:
            memo = _MEMOS.get(snapshot)
            if memo is None:
                memo = _MEMOS[snapshot] = Memo(snapshot)
    return memo


def adopt(copy: Snapshot, original: Snapshot) -> None:
    """Give `copy` (original.copy()) what `original`'s decisions learnt."""
    with _MEMOS_LOCK:
        _MEMOS[copy] = memo_of_unlocked(original).copy_for(copy)


def memo_of_unlocked(snapshot: Snapshot) -> Memo:
    memo = _MEMOS.get(snapshot)
    if memo is None:
        memo = _MEMOS[snapshot] = Memo(snapshot)
    return memo
