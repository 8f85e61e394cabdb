"""The one entry point the CLI and /mutate call: where would kube-scheduler put this pod?

`place` runs the profile's filter plugins on every node (no short-circuit, so every
reason shows), scores the feasible nodes with its score plugins, and picks the
highest weighted sum, ties broken by name. `simulate` places copies one after another
on a private copy of the snapshot.

The answer is the one a node-by-node evaluation gives (property tests hold it to
that, for the spread-only model and the default profile), but the work is done once
per group of nodes that must get the same answer, so a decision over thousands of
nodes stays cheap:
- the filters' outcomes are remembered per pod spec, and judged again only for the
  nodes the snapshot's journal says changed (an unchanged cluster costs no pass over
  the nodes); new ones are judged once per group of nodes alike for every filter
  (pod-independent node keys kept per node, NodeAffinity's by the classes of the
  labels it reads, the combination kept while both are unchanged);
- PodTopologySpread's Filter reads only the node's values for the constraints'
  keys, so it runs once per distinct set of values (a zone, not each node);
- each node gets a key (its filters' outcome and PodTopologySpread verdict): the
  status maps, the feasible nodes and the reasons are worked out per key, and kept
  with the pod spec while the outcomes and verdicts are the same (updated on the
  moved nodes only when just they changed);
- PodTopologySpread's Score likewise runs once per set of values (hostname by
  presence), and one by one only for the nodes holding matching pods under a
  hostname constraint;
- every other score plugin runs once per class of nodes it cannot tell apart
  (_score_classes), raw scores remembered per class where they read only the node
  and a pod key, and NormalizeScore runs over the distinct raw scores;
- nodes with the same outcome share one status map and one score map; when the keys
  and scores are those of the previous decision its verdicts are the answer, else
  only the nodes whose verdict changed get a new one (_verdicts).
"""

from __future__ import annotations

import functools
import threading
from bisect import bisect_left, insort
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import add, itemgetter, ne
from typing import Any, NamedTuple, cast

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.budget import CHUNK, OutOfTime, budgeted, checkpoint, spent
from webhook.scheduler.framework.memo import (
    FilterMemo,
    NodeState,
    adopt,
    generations_of,
    memo_of,
    moved_since,
)
from webhook.scheduler.framework.preemption import Preemption
from webhook.scheduler.framework.runtime import (
    PreparedFilters,
    all_passing,
    passing,
    pod_inputs,
    run_filters,
)
from webhook.scheduler.framework.snapshot import NodeTable, Snapshot
from webhook.scheduler.framework.types import (
    SUCCESS,
    Code,
    CycleState,
    FilterPlugin,
    NodeInfoLike,
    ScorePlugin,
    Status,
)
from webhook.scheduler.plugins.defaultpreemption import carry_on, nominated, preempt
from webhook.scheduler.plugins.podtopologyspread.common import (
    DEFAULT_ARGS,
    PLUGIN_NAME,
    SCHEDULE_ANYWAY,
    NodeInclusion,
    PodConstraints,
    constraints_or_error,
    distribution,
    distribution_of,
)
from webhook.scheduler.plugins.podtopologyspread.explain import (
    ConstraintBlock,
    blocked_constraints,
)
from webhook.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    filter_classes,
    filter_keys,
    pre_filter,
)
from webhook.scheduler.plugins.podtopologyspread.scoring import score_classes
from webhook.scheduler.profile import Framework, default_framework

PluginStatus = Status

__all__ = [
    "NodeVerdict",
    "Placement",
    "Preemption",
    "PluginStatus",
    "Simulation",
    "Unschedulable",
    "explain",
    "feasible_nodes",
    "place",
    "pod_ref",
    "settle",
    "simulate",
    "warm",
]


class NodeVerdict(NamedTuple):
    """One node's outcome: every filter plugin's status, and scores when feasible.

    Immutable; a NamedTuple because a placement builds one per node (thousands).
    Nodes with the same outcome share the very same `filters` and `scores`
    dicts: read them, never edit them.
    """

    name: str
    feasible: bool
    filters: dict[str, Status]
    scores: dict[str, int]
    # The weighted sum of `scores` kube-scheduler ranks feasible nodes by.
    score: int = 0

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "feasible": self.feasible,
            "filters": {plugin: s.to_json() for plugin, s in self.filters.items()},
            "scores": dict(self.scores),
        }
        if self.feasible:
            out["score"] = self.score
        return out


@dataclass(frozen=True, slots=True)
class Placement:
    """The decision for one pod.

    pod: "namespace/name"; nodes: every node, sorted by name; selected_node: the
    feasible node with the highest weighted score (ties: first by name), None when
    no node is feasible; tied_nodes: every feasible node sharing that score, sorted
    (kube-scheduler picks one of them at random); reasons: failure reason -> number
    of nodes failing with it (a node failing two plugins counts under both);
    distribution: topology key -> domain -> matching pods, before this pod; error:
    what failed the scheduling cycle (a score plugin's error), None when nothing did;
    preemption: when no node is feasible, the node DefaultPreemption nominates and the
    pods it evicts there (None when it fits somewhere or preempts nowhere).
    """

    pod: str
    nodes: list[NodeVerdict]
    selected_node: str | None
    reasons: dict[str, int]
    distribution: dict[str, dict[str, int]]
    tied_nodes: list[str] = field(default_factory=list)
    error: str | None = None
    preemption: Preemption | None = None

    @property
    def feasible(self) -> list[NodeVerdict]:
        return [n for n in self.nodes if n.feasible]

    def to_json(self) -> dict[str, Any]:
        """The `simulate -o json` document for this one pod."""
        out: dict[str, Any] = {
            "pod": self.pod,
            "nodes": [n.to_json() for n in self.nodes],
            "selectedNode": self.selected_node,
            "tiedNodes": list(self.tied_nodes),
            "placements": [self.selected_node],
            "distribution": self.distribution,
            "preemption": self.preemption.to_json() if self.preemption is not None else None,
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True)
class Simulation:
    """N copies placed one after another.

    placements[i]: the node copy i went to, None when it fit nowhere (a copy that
    preempts goes to its nominated node, once its victims left); first: the full
    decision for the first copy; distribution: matching pods per domain once every
    copy is placed; preemptions[i]: copy i's preemption, None when it had none.
    """

    placements: list[str | None]
    first: Placement
    distribution: dict[str, dict[str, int]]
    preemptions: list[Preemption | None] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = self.first.to_json()
        out["placements"] = list(self.placements)
        out["distribution"] = self.distribution
        return out


def pod_ref(pod: RawObj) -> str:
    """ "namespace/name" of a pod (generateName stands in for a missing name)."""
    meta = as_dict(pod.get("metadata"))
    name = meta.get("name") or meta.get("generateName") or ""
    return f"{pod_namespace(pod)}/{name}"


def framework_for(args: SpreadArgs) -> Framework:
    """kube-scheduler's default profile with these PodTopologySpread args."""
    return default_framework(None if args == DEFAULT_ARGS else args)


def place(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    *,
    framework: Framework | None = None,
) -> Placement:
    """Run every filter on every node, score the feasible ones, pick a node.

    `framework`: the profile to run (default: kube-scheduler's default profile with
    `args` as PodTopologySpread's args); feasible_nodes() is the filter phase alone.
    The result is node for node what running each filter on each node and scoring the
    feasible ones would give; the filter work is done once per group of nodes that
    must get the same answer (see the module docstring).
    """
    fw = framework if framework is not None else framework_for(args)
    done = _filters(pod, snapshot, fw)
    grouped, table, shared = done.grouped, done.table, done.shared
    pre, soft = done.pre, done.soft
    spread_state = pre if fw.spread_filter else None
    blocked = nominated(pod, snapshot, done.prepared, fw.filter_names, spread_state)
    if blocked:
        grouped = _blocked(grouped, table, blocked)
    feasible = grouped.feasible

    scored: list[int] = []
    rows: list[Any] | None = None
    row_info: dict[Any, tuple[dict[str, int], int]] = {}
    error: str | None = None
    if feasible:
        spread_scores = None
        if fw.spread_weight is not None and not isinstance(soft, Status) and soft.constraints:
            spread_scores = score_classes(pod, snapshot, soft, table, feasible, done.inclusion)
        ranked = _score(fw, done.prepared, snapshot, table, feasible, spread_scores)
        if isinstance(ranked, str):
            error = ranked
        else:
            order, rows, full_rows, sum_of = ranked
            scored = feasible
            # Nodes with the same scores share one map, and so do later decisions.
            row_info = {
                row: (shared.share(("scores", order, full), _score_map, order, full), sum_of[row])
                for row, full in full_rows.items()
            }
    last = _verdicts(table.names, grouped, scored, rows, row_info, shared)
    preemption = None
    if not feasible and fw.post_filter is not None:
        preemption = preempt(
            fw.post_filter, pod, snapshot, done.prepared, fw.filter_names, spread_state,
            last.verdicts,
        )  # fmt: skip
    if isinstance(pre, Status) or isinstance(soft, Status):
        spread_over: dict[str, dict[str, int]] = {}
    else:
        spread_over = distribution_of(pod, snapshot, (*pre.constraints, *soft.constraints))
    return Placement(
        pod=pod_ref(pod),
        nodes=list(last.verdicts),
        selected_node=last.tied[0] if last.tied else None,
        reasons=dict(grouped.reasons),
        distribution=spread_over,
        tied_nodes=list(last.tied),
        error=error,
        preemption=preemption,
    )


def _blocked(
    grouped: _Grouped, table: NodeTable, blocked: dict[str, dict[str, Status]]
) -> _Grouped:
    """`grouped` with the nodes where pods nominated there leave this pod no room failing
    with the statuses given (each its own key, below the engine's, never remembered)."""
    keys, per_key = list(grouped.keys), dict(grouped.per_key)
    fresh = min(per_key, default=0)
    for name, statuses in blocked.items():
        i = table.position.get(name)
        if i is not None:
            fresh -= 1
            failed = tuple(r for s in statuses.values() if not s.ok for r in s.reasons)
            keys[i], per_key[fresh] = fresh, (False, statuses, failed)
    counts = dict(Counter(keys))
    per_key = {key: per_key[key] for key in counts}
    return grouped._replace(
        keys=keys,
        per_key=per_key,
        counts=counts,
        feasible=_positions(keys, per_key),
        reasons=_reasons(per_key, counts),
    )


class _Grouped(NamedTuple):
    """The filter phase of one decision by classes of nodes: each node's key (its
    filters' outcome and PodTopologySpread verdict), and per key what every node
    holding it gets. Kept with the pod spec's outcomes (FilterMemo.derived) and
    reused while what it was derived from is unchanged.

    ids, of_node, slots, spread_key, filter_names: what it was derived from (the
    outcome id per node, PodTopologySpread's node classes, the verdict slot of each
    class, each slot's verdict, the profile's filter order); keys[i]: node i's key;
    per_key: key -> (feasible, status map, the reasons its failures count under);
    counts: key -> nodes holding it; feasible: the positions of the feasible nodes;
    reasons: failure reason -> nodes, sorted.
    """

    ids: list[int]
    of_node: list[int] | None
    slots: list[int]
    spread_key: tuple[Any, ...]
    filter_names: tuple[str, ...]
    keys: list[int]
    per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]]
    counts: dict[int, int]
    feasible: list[int]
    reasons: dict[str, int]


class _Filtered(NamedTuple):
    """What the filter phase of one decision leaves for the score phase."""

    prepared: PreparedFilters
    table: NodeTable
    shared: FilterMemo
    inclusion: NodeInclusion
    pre: PreFilterState | Status
    soft: PodConstraints | Status
    grouped: _Grouped


def _filters(pod: RawObj, snapshot: Snapshot, fw: Framework) -> _Filtered:
    """Every filter of `fw` on every node (see place), grouped."""
    args = fw.spread_args
    prepared = fw.filters.prepare(pod, snapshot)
    table = snapshot.node_table()
    memo = memo_of(snapshot)
    spec, ids = _outcomes(prepared, snapshot, table)
    inclusion = NodeInclusion(pod)
    if prepared.is_active("NodeAffinity"):
        # Node inclusion honours the same node affinity the NodeAffinity filter
        # checks: take its remembered verdicts rather than match every node again.
        inclusion.know_affinity(table, _affinity_matches(spec, ids))
    pre = pre_filter(pod, snapshot, args, inclusion)
    # Upstream parses ScheduleAnyway constraints only at PreScore, where a parse
    # error fails the whole cycle; checking now lets every verdict say so.
    soft = constraints_or_error(pod, snapshot, args, SCHEDULE_ANYWAY)
    spread_error = pre if isinstance(pre, Status) else soft if isinstance(soft, Status) else None

    # PodTopologySpread's Filter reads only the node's values for the constraints'
    # keys: judge each distinct set of values once.
    spread: list[Status] = [SUCCESS]
    of_node: list[int] | None = None
    slots: list[int] = []
    if not fw.spread_filter:
        pass
    elif spread_error is not None:
        spread = [spread_error]
    elif not isinstance(pre, Status) and pre.constraints:
        hard_keys = filter_keys(pre)
        classes = memo.node_classes(hard_keys, (False,) * len(hard_keys), table)
        by_class = filter_classes(pre, hard_keys, classes.values)
        # The verdicts are a few shared Status objects: tell them apart by identity.
        identities = list(map(id, by_class))
        spread = list(dict(zip(identities, by_class, strict=True)).values())
        if len(spread) > 1:
            slot = {id(status): i for i, status in enumerate(spread)}
            slots = list(map(slot.__getitem__, identities))
            of_node = classes.of_node
    grouped = _grouped(fw, spec, memo.shared, ids, of_node, slots, spread)
    return _Filtered(prepared, table, memo.shared, inclusion, pre, soft, grouped)


def _grouped(
    fw: Framework,
    spec: FilterMemo,
    shared: FilterMemo,
    ids: list[int],
    of_node: list[int] | None,
    slots: list[int],
    spread: list[Status],
) -> _Grouped:
    """The filter phase's keys and what each key gets (see _Grouped): the spec's last
    one when nothing it reads changed, updated on the moved nodes only when just they
    did, else worked out afresh."""
    spread_key = tuple((s.code, s.reason, s.parts) for s in spread)
    last: _Grouped | None = spec.derived
    if (
        last is not None
        and last.of_node is of_node
        and last.spread_key == spread_key
        and last.filter_names == fw.filter_names
        and last.slots == slots
    ):
        if last.ids is ids:
            return last
        step = spec.step
        if step is not None and step[0] is last.ids:
            return _regrouped(last, ids, step[1], spec, shared, fw, spread)
    width = len(spread)
    keys: list[int]
    if of_node is None:
        keys = ids
    elif any(ids):
        keys = list(map(add, map(width.__mul__, ids), map(slots.__getitem__, of_node)))
    else:  # every node passes the other filters (outcome 0)
        keys = list(map(slots.__getitem__, of_node))
    counts = dict(Counter(keys))
    per_key = {key: _key_verdict(key, spec, shared, fw, spread) for key in counts}
    feasible = _positions(keys, per_key)
    made = _Grouped(
        ids,
        of_node,
        slots,
        spread_key,
        fw.filter_names,
        keys,
        per_key,
        counts,
        feasible,
        _reasons(per_key, counts),
    )
    spec.derived = made
    return made


def _regrouped(
    last: _Grouped,
    ids: list[int],
    moved: list[int],
    spec: FilterMemo,
    shared: FilterMemo,
    fw: Framework,
    spread: list[Status],
) -> _Grouped:
    """`last` with the keys of the `moved` nodes worked out again (their outcome ids
    changed; nothing else did)."""
    width, of_node, slots = len(spread), last.of_node, last.slots
    keys = list(last.keys)
    counts = dict(last.counts)
    per_key = dict(last.per_key)
    feasible = last.feasible
    for i in moved:
        old = keys[i]
        new = ids[i] * width + (slots[of_node[i]] if of_node is not None else 0)
        if new == old:
            continue
        keys[i] = new
        counts[old] -= 1
        if not counts[old]:
            del counts[old]
            del per_key[old]
        if new in counts:
            counts[new] += 1
        else:
            counts[new] = 1
            per_key[new] = _key_verdict(new, spec, shared, fw, spread)
        was, now = last.per_key[old][0], per_key[new][0]
        if was != now:
            if feasible is last.feasible:
                feasible = list(feasible)
            if now:
                insort(feasible, i)
            else:
                del feasible[bisect_left(feasible, i)]
    made = last._replace(
        ids=ids,
        keys=keys,
        per_key=per_key,
        counts=counts,
        feasible=feasible,
        reasons=_reasons(per_key, counts),
    )
    spec.derived = made
    return made


def _key_verdict(
    key: int, spec: FilterMemo, shared: FilterMemo, fw: Framework, spread: list[Status]
) -> tuple[bool, dict[str, Status], tuple[str, ...]]:
    """(feasible, status map, failure reasons) of the nodes holding `key`: one status
    map per (other filters' outcome, PodTopologySpread verdict), shared by every
    decision of the snapshot."""
    o, c = divmod(key, len(spread))
    outcome = spec.outcomes[o]
    result: tuple[bool, dict[str, Status], tuple[str, ...]] = shared.share(
        ("filters", fw.filter_names, _content(outcome), spread[c], spread[c].parts),
        _merged,
        fw,
        outcome,
        spread[c],
    )
    return result


def _positions(
    keys: list[int], per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]]
) -> list[int]:
    """The positions of the nodes whose key is feasible, ascending."""
    ok = {key: v[0] for key, v in per_key.items()}
    if all(ok.values()):
        return list(range(len(keys)))
    if not any(ok.values()):
        return []
    return list(compress(range(len(keys)), map(ok.__getitem__, keys)))


def _reasons(
    per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]], counts: dict[int, int]
) -> dict[str, int]:
    """Failure reason -> nodes failing with it (a node failing two plugins counts under
    both), sorted by reason."""
    reasons: dict[str, int] = {}
    for key, (_, _, failed) in per_key.items():
        for reason in failed:
            reasons[reason] = reasons.get(reason, 0) + counts[key]
    return dict(sorted(reasons.items()))


def _kept_with(spec: FilterMemo, name: str, ids: list[int], make: Callable[[], Any]) -> Any:
    """make(), derived from the spec's outcome list `ids` and kept with the spec while
    its outcomes are that very list (replaced whole when a node's outcome moves)."""
    hit = spec.shared.get(name)
    if hit is None or hit[0] is not ids:
        hit = spec.shared[name] = (ids, make())
    return hit[1]


def _affinity_matches(spec: FilterMemo, ids: list[int]) -> list[bool]:
    """Whether the NodeAffinity filter passes each node, from its remembered outcomes."""

    def make() -> list[bool]:
        passed = [outcome["NodeAffinity"].ok for outcome in spec.outcomes]
        return list(map(passed.__getitem__, ids))

    matches: list[bool] = _kept_with(spec, "affinity", ids, make)
    return matches


class _Contents:
    """Every distinct verdict content (feasible, status map, score map, sum) a
    snapshot's decisions handed out, numbered, so each node's verdict can be told by
    a small int and compared with the previous decision's in C. The maps are held
    here, so the identities the numbers are keyed by are never reused while it lives;
    past MAX_CONTENTS a new one starts with what the previous verdicts use (`kept`)."""

    __slots__ = ("ids", "values", "_lock")

    def __init__(self) -> None:
        self.ids: dict[tuple[bool, int, int, int], int] = {}
        self.values: list[tuple[bool, dict[str, Status], dict[str, int], int]] = []
        self._lock = threading.Lock()

    def number(
        self, feasible: bool, filters: dict[str, Status], scores: dict[str, int], total: int
    ) -> int:
        key = (feasible, id(filters), id(scores), total)
        hit = self.ids.get(key)
        if hit is None:
            with self._lock:
                hit = self.ids.get(key)
                if hit is None:
                    self.values.append((feasible, filters, scores, total))
                    hit = self.ids[key] = len(self.values) - 1
        return hit

    def kept(self, numbers: list[int]) -> tuple[_Contents, list[int]]:
        """A new numbering holding only the contents `numbers` use, and `numbers` in it."""
        other = _Contents()
        renumbered = {n: other.number(*self.values[n]) for n in set(numbers)}
        return other, list(map(renumbered.__getitem__, numbers))


MAX_CONTENTS = 16384


class _Last(NamedTuple):
    """The previous decision's verdicts and what they were built from (see
    _verdicts): one per snapshot, whatever the pod."""

    names: list[str]
    keys: list[int]
    per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]]
    scored: list[int]
    rows: list[Any] | None
    row_info: dict[Any, tuple[dict[str, int], int]]
    contents: _Contents
    numbers: list[int]
    verdicts: list[NodeVerdict]
    tied: list[str]


def _verdicts(
    names: list[str],
    grouped: _Grouped,
    scored: list[int],
    rows: list[Any] | None,
    row_info: dict[Any, tuple[dict[str, int], int]],
    shared: FilterMemo,
) -> _Last:
    """Every node's verdict, and the tied best nodes.

    scored: the positions of the nodes with scores (the feasible ones, none when
    scoring failed); rows: each one's row of scores (None: the same for all);
    row_info: row -> (score map, weighted sum).

    A node whose status map, score map and sum are the very ones of the previous
    decision keeps its verdict object (fewer objects made, less for the GC). When the
    keys and rows are those of the previous decision, its list is the answer without
    a pass over the nodes; else each node's verdict content is numbered (_Contents)
    and the numbers compared with the previous ones in C.
    """
    last: _Last | None = shared.last
    keys, per_key = grouped.keys, grouped.per_key
    if (
        last is not None
        and last.names is names
        and (last.keys is keys or last.keys == keys)
        and all(last.per_key.get(key) is v for key, v in per_key.items())
        and (last.scored is scored or last.scored == scored)
        and (last.rows is rows or last.rows == rows)
        and len(last.row_info) == len(row_info)
        and all(_same_row(last.row_info.get(row), info) for row, info in row_info.items())
    ):
        made = last._replace(keys=keys, per_key=per_key, scored=scored, rows=rows)
        shared.last = made = made._replace(row_info=row_info)
        return made
    if last is None:
        contents, before = _Contents(), None
    else:
        contents, before = last.contents, last.numbers if last.names is names else None
        if len(contents.values) > MAX_CONTENTS:
            # Start afresh with what the previous verdicts hold, so they still compare.
            contents, before = contents.kept(before or [])
    none: dict[str, int] = shared.share("no score", dict)
    numbered = {
        key: contents.number(ok, statuses, none, 0) for key, (ok, statuses, _) in per_key.items()
    }
    numbers = list(map(numbered.__getitem__, keys))
    best = max(map(itemgetter(1), row_info.values()), default=None)
    tied: list[str] = []
    if scored:
        # Every feasible node holds the one key of a plain pass (outcome 0 and
        # PodTopologySpread's Success): the runtime tells passing nodes no further apart.
        (statuses,) = [v[1] for v in per_key.values() if v[0]]
        number = contents.number
        of_row = {row: number(True, statuses, m, total) for row, (m, total) in row_info.items()}
        at = repeat(of_row[()]) if rows is None else map(of_row.__getitem__, rows)
        deque(map(numbers.__setitem__, scored, at), 0)
        if rows is None:
            tied = list(map(names.__getitem__, scored))
        else:
            top = {row for row, (_, total) in row_info.items() if total == best}
            tied = list(map(names.__getitem__, compress(scored, map(top.__contains__, rows))))
    values = contents.values
    new = tuple.__new__
    if last is not None and before is not None:
        verdicts = list(last.verdicts)
        for i in compress(range(len(names)), map(ne, numbers, before)):
            verdicts[i] = new(NodeVerdict, (names[i], *values[numbers[i]]))
    else:
        verdicts = [
            new(NodeVerdict, (name, *values[n])) for name, n in zip(names, numbers, strict=True)
        ]
    made = _Last(names, keys, per_key, scored, rows, row_info, contents, numbers, verdicts, tied)
    shared.last = made
    return made


def _same_row(was: tuple[dict[str, int], int] | None, now: tuple[dict[str, int], int]) -> bool:
    """Whether a row's (score map, sum) is the very one it was (the map by identity)."""
    return was is not None and was[0] is now[0] and was[1] == now[1]


def feasible_nodes(
    pod: RawObj, snapshot: Snapshot, *, framework: Framework | None = None
) -> list[str]:
    """The nodes that pass every filter of the profile for `pod`, by name: place()'s
    feasible nodes without its scores or verdicts (for callers that choose the node
    themselves, such as a rebalancing plan)."""
    fw = framework if framework is not None else framework_for(DEFAULT_ARGS)
    done = _filters(pod, snapshot, fw)
    names = done.table.names
    return [names[i] for i in done.grouped.feasible]


def _score_map(order: tuple[str, ...], row: tuple[int, ...]) -> dict[str, int]:
    """A node's scores by plugin; `row` is the scores in `order`."""
    return dict(zip(order, row, strict=True))


def _score(
    fw: Framework,
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
    spread_scores: list[int] | None,
) -> tuple[tuple[str, ...], list[Any] | None, dict[Any, tuple[int, ...]], dict[Any, int]] | str:
    """Every score plugin's normalised score on each feasible node (positions of
    `table`): (the plugins scoring, in profile order; each node's row, a key for its
    scores, None when every node has the same (the row is then ()); row -> the scores
    in that order; row -> its weighted sum); or the error that fails the cycle.

    Port of runtime/framework.go: RunPreScorePlugins, RunScorePlugins (score, normalise,
    weight). A plugin whose PreScore skips is left out; PodTopologySpread's scores come
    from its grouped engine (`spread_scores`, None when it skips); the others' from
    _column.
    """
    state, pod = prepared.state, prepared.pod
    columns: dict[str, tuple[int, list[int]]] = {}
    if spread_scores is not None and fw.spread_weight is not None:
        columns[PLUGIN_NAME] = (fw.spread_weight, spread_scores)
    infos = list(map(table.infos.__getitem__, feasible)) if fw.scores else []
    for plugin, weight in fw.scores:
        status = plugin.pre_score(state, pod, infos, snapshot)
        if status.code is Code.SKIP:
            continue
        if not status.ok:
            return f"running PreScore plugin {plugin.name!r}: {status.reason}"
        column = _column(plugin, state, pod, snapshot, table, feasible)
        if isinstance(column, str):
            return column
        columns[plugin.name] = (weight, column)
    order = tuple(name for name in fw.score_names if name in columns)
    # A column giving every node the same score (a plugin nothing sets apart, as
    # TaintToleration on untainted nodes) stays out of the rows.
    constant = {
        name: column[0]
        for name, (_, column) in columns.items()
        if column.count(column[0]) == len(column)
    }
    varying = [name for name in order if name not in constant]
    weight_of = {name: w for name, (w, _) in columns.items()}
    base = sum(weight_of[name] * value for name, value in constant.items())
    if not varying:
        full = tuple(constant[name] for name in order)
        return order, None, {(): full}, {(): base}
    # The weighted sums node by node, column by column in C.
    sums = [base] * len(feasible)
    for name in varying:
        sums = list(map(add, sums, map(weight_of[name].__mul__, columns[name][1])))
    rows: list[Any]
    # Each distinct row, as the tuple of its varying scores.
    rows_of: list[tuple[int, ...]]
    if len(varying) == 1:  # one plugin sets nodes apart: rows are its scores
        rows = columns[varying[0]][1]
        rows_of = [(row,) for row in set(rows)]
    else:
        rows = list(zip(*(columns[name][1] for name in varying), strict=True))
        rows_of = list(set(rows))
    sum_of = dict(zip(rows, sums, strict=True))
    # Each distinct row's scores in profile order: the varying ones from the row, the
    # constant ones after them, put in place by one itemgetter.
    at = {name: i for i, name in enumerate((*varying, *constant))}
    pick = itemgetter(*(at[name] for name in order))
    tail = tuple(constant.values())
    full_rows: dict[Any, tuple[int, ...]]
    if len(order) == 1:
        full_rows = {row[0]: row for row in rows_of}
    elif len(varying) == 1:
        full_rows = {row[0]: pick(row + tail) for row in rows_of}
    else:
        full_rows = {row: pick(row + tail) for row in rows_of}
    return order, rows, full_rows, sum_of


def _column(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
    *,
    grouped: bool = True,
) -> list[int] | str:
    """One plugin's Score on each feasible node, normalised; or the error.

    Score runs once per class of nodes the plugin cannot tell apart (_score_classes)
    on one member of it; the raw score of a class that does not depend on the pod's
    other fields is remembered across decisions. Plugins that cannot say what they
    read run on every node.
    """
    infos = table.infos
    classes = _score_classes(plugin, state, pod, snapshot, table) if grouped else None
    if classes is None:
        raws: list[int] = []
        for i in feasible:
            value, status = plugin.score(state, pod, infos[i])
            if not status.ok:
                return f"running Score plugin {plugin.name!r}: {status.reason}"
            raws.append(value)
        return _normalized(plugin, state, pod, raws, table.names, feasible)
    of_node, unchanged, raw_of = classes
    if len(feasible) == len(of_node):
        of_feasible = of_node
    else:
        of_feasible = list(map(of_node.__getitem__, feasible))
    missing = set(of_feasible).difference(raw_of)
    if missing:
        # class -> its first feasible node (reversed, so the first write of each wins)
        first = dict(zip(reversed(of_feasible), reversed(feasible), strict=True))
        scored: dict[int, int] = {}
        for c in missing:
            value, status = plugin.score(state, pod, infos[first[c]])
            if not status.ok:
                return f"running Score plugin {plugin.name!r}: {status.reason}"
            scored[c] = value
        if not unchanged([first[c] for c in scored]):
            # A node changed meanwhile (a concurrent update): its score need not hold
            # for the rest of its class.
            return _column(plugin, state, pod, snapshot, table, feasible, grouped=False)
        raw_of.update(scored)
    raws = list(map(raw_of.__getitem__, of_feasible))
    return _normalized(plugin, state, pod, raws, table.names, feasible)


def _score_classes(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    snapshot: Snapshot,
    table: NodeTable,
) -> tuple[list[int], Callable[[list[int]], bool], dict[int, int]] | None:
    """The class of each node of `table` for this plugin's Score, a check that nodes
    (positions) are unchanged since their classes were read, and the raw scores of the
    classes already known (for the caller to complete); or None when each node must
    be scored on its own.

    Two ways to say what Score reads of a node: `score_node_key(node)`, the same for
    every pod (the node's taints, its resources, its images), with `score_key(state,
    pod)` what it reads of the pod: classes are kept per node generation and their raw
    scores per score key, across decisions; or `score_label_keys(state, pod)`, the node
    labels it reads for this pod (preferred node affinity, InterPodAffinity's topology
    keys): the node classes of those labels (Memo.node_classes), scored afresh per
    decision.
    """
    memo = memo_of(snapshot)
    key_of = getattr(plugin, "score_key", None)
    node_key_of = getattr(plugin, "score_node_key", None)
    if key_of is not None and node_key_of is not None:
        key = key_of(state, pod)
        if key is not None:
            classes = memo.score_classes(plugin.name)
            kept = _classes(classes, snapshot, table, node_key_of)
            if kept is not None:
                raw_of = memo.raw_by_class(plugin.name, key, classes)
                return kept.ids, functools.partial(_as_read, table, kept.generations), raw_of
    labels_of = getattr(plugin, "score_label_keys", None)
    keys = labels_of(state, pod) if labels_of is not None else None
    if keys is None:
        return None
    mark = snapshot.journal_mark()
    try:
        of_node = memo.node_classes(keys, (False,) * len(keys), table).of_node
    except TypeError:  # a label value that cannot be hashed: no Node decoded from JSON has one
        return None
    return of_node, functools.partial(_unchanged_since, snapshot, table, mark), {}


def _as_read(table: NodeTable, generations: list[int], positions: list[int]) -> bool:
    """Whether the nodes at `positions` still have the generations they were read at."""
    infos = table.infos
    return all(infos[i].generation == generations[i] for i in positions)


def _unchanged_since(
    snapshot: Snapshot, table: NodeTable, mark: tuple[int, int], positions: list[int]
) -> bool:
    """Whether no node at `positions` changed since `mark` (a journal_mark)."""
    changed = snapshot.changed_since(mark)
    if changed is None:
        return False
    names = table.names
    return not any(names[i] in changed for i in positions)


def _normalized(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    raws: list[int],
    all_names: list[str],
    feasible: list[int],
) -> list[int] | str:
    """NormalizeScore over the raw scores of the feasible nodes (positions of
    `all_names`): the normalised scores in the same order, or the error.

    A plugin declaring `normalize_reads_values` (its NormalizeScore maps each raw score
    by a function of that score and of the set of raw scores, reading neither names nor
    how many nodes share a score, as DefaultNormalizeScore does) normalises the
    distinct raw scores only.
    """
    if getattr(plugin, "normalize_reads_values", False):
        distinct = list(set(raws))
        scores = {str(k): v for k, v in enumerate(distinct)}
        status = plugin.normalize_score(state, pod, scores)
        if not status.ok:
            return f"running Normalize on Score plugins: {status.reason}"
        if all(scores[str(k)] == v for k, v in enumerate(distinct)):
            return raws  # left as they were (no NormalizeScore, or nothing to scale)
        to = {v: scores[str(k)] for k, v in enumerate(distinct)}
        return list(map(to.__getitem__, raws))
    names = [all_names[i] for i in feasible]
    by_name = dict(zip(names, raws, strict=True))
    status = plugin.normalize_score(state, pod, by_name)
    if not status.ok:
        return f"running Normalize on Score plugins: {status.reason}"
    return list(map(by_name.__getitem__, names))


def _content(outcome: dict[str, Status]) -> tuple[Any, ...]:
    """What a filter outcome says, as a key (Status equality leaves `parts` out)."""
    return tuple((name, s.code, s.reason, s.parts) for name, s in outcome.items())


def _merged(
    fw: Framework, others: dict[str, Status], spread: Status
) -> tuple[bool, dict[str, Status], tuple[str, ...]]:
    """(feasible, the status map of a node in the profile's filter order, the reasons
    its failures count under)."""
    statuses = {
        name: spread if name == PLUGIN_NAME else others.get(name, SUCCESS)
        for name in fw.filter_names
    }
    failed = [s for s in statuses.values() if s.code is not Code.SUCCESS]
    return not failed, statuses, tuple(r for s in failed for r in s.reasons)


def _filter_outcomes(
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable, spec: FilterMemo
) -> list[int]:
    """The filters' outcome for each node of `table`, as indexes into `spec.outcomes`
    (spec: the memo of the pod's filter inputs, Memo.filter_verdicts).

    The filters read only the node and a few fields of the pod (runtime.pod_inputs):
    their outcome for a node holds while the node is unchanged, for every pod
    with the same inputs (the replicas of one workload, its next revision, the
    copies of a simulation). Remembered per inputs and judged again only for
    nodes that changed (memo.moved_since: an unchanged cluster costs no pass over
    the nodes; every generation is compared only when the snapshot's journal cannot
    say). Inputs never seen, and many changed nodes at once, are judged once per
    group of nodes the filters cannot tell apart (equal plugin node keys, _alike).
    The list returned is the very one of the last decision when nothing moved, so
    what is derived from it can be kept by identity.

    Under a time budget (framework.budget) the judging stops when the budget runs
    out: what was judged is remembered (the rest marked unjudged) and OutOfTime is
    raised, so a later call carries on from there.
    """

    def judge(infos: Sequence[NodeInfoLike]) -> tuple[list[int], int]:
        """(each node's outcome index, how many of `infos` were judged: all unless
        the time budget ran out first, budget.spent() being asked between chunks)."""
        ids = [0] * len(infos)
        for start in range(0, len(infos), CHUNK):
            if spent():
                return ids, start
            chunk = infos[start : start + CHUNK]
            for i, ok in enumerate(passing(prepared, chunk), start):
                if not ok:
                    statuses = run_filters(prepared, infos[i])
                    key = tuple((s.code, s.reason, s.parts) for s in statuses.values())
                    ids[i] = spec.intern(key, statuses)
        return ids, len(infos)

    def keep_partial(ids: list[int], generations: list[int], unjudged: Iterable[int]) -> None:
        """Remember what was judged before the budget ran out, the other nodes
        marked as never judged (a generation no node has, and no journal mark, so
        the next call compares generations and finds them), and give up."""
        kept = list(generations)
        for i in unjudged:
            kept[i] = _UNJUDGED
        spec.state = NodeState(table.names, None, kept, ids)
        spec.step = None
        raise OutOfTime

    state = spec.state
    # Taken before any node is read: a change made while reading is seen next time.
    mark = snapshot.journal_mark()
    moved = moved_since(snapshot, table, state)
    infos = table.infos
    if moved is not None:
        if not moved:
            if state.mark != mark:
                spec.state = state._replace(mark=mark)
            return state.ids
        generations = list(state.generations)
        for i in moved:
            generations[i] = infos[i].generation
        ids = list(state.ids)
        alike = _alike(prepared, snapshot, table, kept_only=True) if len(moved) > CHUNK else None
        if alike is not None:
            # Many nodes to judge again (a look that ran out of budget, a wave of
            # changes): one member of each group among them, as below.
            groups, _, read = alike
            first: dict[int, int] = {}
            for i in moved:
                first.setdefault(groups[i], i)
            judged, done = judge([infos[i] for i in first.values()])
            if any(infos[i].generation != read[i] for i in first.values()):
                alike = None  # a judged node changed meanwhile: judge one by one
            else:
                outcome_of = dict(zip(list(first)[:done], judged, strict=False))
                for i in moved:
                    ids[i] = outcome_of.get(groups[i], ids[i])
                unjudged = [i for i in moved if groups[i] not in outcome_of]
                if unjudged:
                    keep_partial(ids, generations, unjudged)
        if alike is None:
            judged, done = judge([infos[i] for i in moved])
            for i, outcome in zip(moved[:done], judged, strict=False):
                ids[i] = outcome
            if done < len(moved):
                keep_partial(ids, generations, moved[done:])
        spec.step = (state.ids, moved)
    elif (alike := _alike(prepared, snapshot, table, kept_only=budgeted())) is not None:
        groups, first, generations = alike
        # Judge one member of each group of nodes the filters cannot tell apart.
        judged, done = judge([infos[i] for i in first.values()])
        outcome_of = dict(zip(list(first)[:done], judged, strict=False))
        if any(infos[i].generation != generations[i] for i in first.values()):
            # A judged node changed meanwhile (a concurrent update): its verdict need
            # not hold for the rest of its group, which would keep it.
            ids, done = judge(infos)
            if done < len(infos):
                keep_partial(ids, generations, range(done, len(infos)))
        elif done < len(first):
            ids = [outcome_of.get(g, 0) for g in groups]
            keep_partial(ids, generations, (i for i, g in enumerate(groups) if g not in outcome_of))
        else:
            ids = list(map(outcome_of.__getitem__, groups))
        spec.step = None
    else:
        generations = generations_of(table)
        ids, done = judge(infos)
        if done < len(infos):
            keep_partial(ids, generations, range(done, len(infos)))
        spec.step = None
    spec.state = NodeState(table.names, mark, generations, ids)
    return ids


def _outcomes(
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable
) -> tuple[FilterMemo, list[int]]:
    """The memo of the pod's filter inputs and each node's outcome (_filter_outcomes)."""
    spec = memo_of(snapshot).filter_verdicts(pod_inputs(prepared), all_passing(prepared))
    return spec, _filter_outcomes(prepared, snapshot, table, spec)


def _alike(
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable, *, kept_only: bool = False
) -> tuple[list[int], dict[int, int], list[int]] | None:
    """Each node's group of nodes the filters cannot tell apart for this pod (equal
    FilterPlugin.node_key of every active plugin), the first node of each group, and
    each node's generation as its group was read; or None when nodes must be judged
    one by one (a plugin reads the node's name).

    The keys that do not depend on the pod are remembered per node (_node_groups). Of
    the others, a plugin whose key is its verdict for the pod but that can say what
    its Filter reads of a node whatever the pod (`node_state_key`: NodeResourcesFit's
    allocatable, pod count and requests) joins those remembered groups when they are
    few (at most a quarter of the nodes: pods alike, requests alike; decided once per
    NodeTable, _stated_groups), and is read node by node otherwise (every node's
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
    stated = tuple(p for p in own if getattr(p, "node_state_key", None) is not None)
    kept = _stated_groups(snapshot, table, prepared, shared, stated) if stated else None
    if kept is not None:
        own = tuple(p for p in own if p not in stated)
    else:
        stated = ()
        kept = _node_groups(snapshot, table, prepared, shared)
    if kept is None:
        return None
    groups, generations = kept.ids, kept.generations
    state, pod = prepared.state, prepared.pod
    label_keys: list[str] = []
    by_node: list[FilterPlugin] = []
    for p in own:
        keys_of = getattr(p, "node_label_keys", None)
        keys = keys_of(state, pod) if keys_of is not None else None
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
            columns = [[p.node_key(state, pod, info) for info in infos] for p in by_node]
            if any(None in column for column in columns):
                return None
            combined: dict[Any, int] = {}
            keyed = zip(groups, *columns, strict=True)
            groups = [combined.setdefault(key, len(combined)) for key in keyed]
            return groups, _firsts(groups), generations
    except TypeError:  # a value that cannot be hashed: no Node decoded from JSON has one
        return None
    final = groups
    return groups, memo.combined(("first", what), (final,), lambda: _firsts(final)), generations


def _firsts(groups: list[int]) -> dict[int, int]:
    """Group -> the position of its first node (reversed, so the first write of each
    group wins)."""
    return dict(zip(reversed(groups), range(len(groups) - 1, -1, -1), strict=True))


def _node_groups(
    snapshot: Snapshot,
    table: NodeTable,
    prepared: PreparedFilters,
    plugins: tuple[FilterPlugin, ...],
    stated: tuple[FilterPlugin, ...] = (),
) -> NodeState | None:
    """The group of each node of `table` by the pod-independent node keys of `plugins`
    and the node state keys of `stated` (node_state_key). Regrouped only for nodes
    that changed."""
    memo = memo_of(snapshot).node_groups(_signature(plugins, stated))
    state, pod = prepared.state, prepared.pod
    readers = [functools.partial(p.node_key, state, pod) for p in plugins]
    readers += [p.node_state_key for p in stated]  # type: ignore[attr-defined]

    def key_of(info: NodeInfoLike) -> Hashable | None:
        key = tuple(read(info) for read in readers)
        return None if None in key else key

    return _classes(memo, snapshot, table, key_of)


def _signature(
    plugins: tuple[FilterPlugin, ...], stated: tuple[FilterPlugin, ...]
) -> tuple[str, ...]:
    """What names a set of node groups (Memo.node_groups)."""
    return (*(p.name for p in plugins), *(f"{p.name} state" for p in stated))


def _stated_groups(
    snapshot: Snapshot,
    table: NodeTable,
    prepared: PreparedFilters,
    plugins: tuple[FilterPlugin, ...],
    stated: tuple[FilterPlugin, ...],
) -> NodeState | None:
    """The node groups of `plugins` and of the node state keys of `stated` (see _alike)
    when they are few: at most a quarter as many groups as nodes, so judging one node
    per group costs less than reading a verdict key on every node. Decided once per
    NodeTable (until nodes come or go); groups that are not few are not kept."""
    memo = memo_of(snapshot)
    signature = _signature(plugins, stated)

    def decide() -> bool:
        kept = _node_groups(snapshot, table, prepared, plugins, stated)
        few = kept is not None and len(set(kept.ids)) * 4 <= len(kept.ids)
        if not few:
            memo.forget_node_groups(signature)
        return few

    if not memo.combined(("few", signature), (table.names,), decide):
        return None
    return _node_groups(snapshot, table, prepared, plugins, stated)


def _classes(
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
    elif moved:
        generations = list(state.generations)
        fresh = list(state.ids)
        for i in moved:
            generations[i] = infos[i].generation
            fresh[i] = group(infos[i])
    else:
        if state.mark != mark:
            memo.state = state = state._replace(mark=mark)
        return state
    if None in fresh:
        return None
    ids = cast("list[int]", fresh)  # no None left
    memo.state = state = NodeState(table.names, mark, generations, ids)
    return state


# The generation recorded for a node whose outcome was not worked out (the budget ran
# out first): node generations count up from 1, so it never matches and the node is
# judged at the next call.
_UNJUDGED = -1


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """Why no node can take a pod although some pass every other filter: its
    DoNotSchedule spread constraints rule each of them out.

    candidates: how many nodes pass every filter but PodTopologySpread; blocked: each
    constraint that rules out some of them (ConstraintBlock.index counts the pod's
    DoNotSchedule constraints, or the scheduler's defaults when it has none).
    """

    candidates: int
    blocked: list[ConstraintBlock]


def explain(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    *,
    framework: Framework | None = None,
) -> Unschedulable | None:
    """Whether the pod's spreading is what leaves it no node.

    None when some node passes every filter, when no node passes the other filters
    (spreading is not the cause), or when the pod has no DoNotSchedule constraint
    (nor a default one) or constraints PreFilter refuses (validation reports those).

    Kept cheap for the /validate foresight on a big cluster: the other filters'
    outcomes come from what earlier decisions remembered (_filter_outcomes: only
    nodes that changed are judged again), the constraints' counts from the
    snapshot's per-selector indexes, and Filter runs once per node class. Under
    a time budget (framework.budget.within) it raises OutOfTime when the budget
    runs out; the outcomes judged so far are kept for the next call.
    """
    fw = framework if framework is not None else framework_for(args)
    if not fw.spread_filter:
        return None
    prepared = fw.filters.prepare(pod, snapshot)
    checkpoint()
    table = snapshot.node_table()
    spec, outcome_ids = _outcomes(prepared, snapshot, table)

    # Outcome 0: every other filter passes; kept with the spec, as the node classes
    # such nodes fall in (per topology keys) below.
    def passing_others() -> tuple[list[bool], bool, dict[Any, Any]]:
        passes = list(map((0).__eq__, outcome_ids))
        return passes, any(passes), {}

    others_pass, any_passes, candidate_classes_of = _kept_with(
        spec, "explain", outcome_ids, passing_others
    )
    if not any_passes:
        return None
    checkpoint()
    inclusion = NodeInclusion(pod)
    if prepared.is_active("NodeAffinity"):
        inclusion.know_affinity(table, _affinity_matches(spec, outcome_ids))
    state = pre_filter(pod, snapshot, fw.spread_args, inclusion)
    if not isinstance(state, PreFilterState) or not state.constraints:
        return None
    checkpoint()
    keys = filter_keys(state)
    classes = memo_of(snapshot).node_classes(keys, (False,) * len(keys), table)
    verdicts = filter_classes(state, keys, classes.values)
    known = candidate_classes_of.get(keys)
    if known is None or known[0] is not classes.of_node:
        known = candidate_classes_of[keys] = (
            classes.of_node,
            set(compress(classes.of_node, others_pass)),
        )
    if any(verdicts[k].ok for k in known[1]):
        return None
    candidates = list(compress(table.infos, others_pass))
    return Unschedulable(len(candidates), blocked_constraints(state, candidates))


def warm(snapshot: Snapshot, framework: Framework) -> None:
    """Build what every decision of `framework` reads whatever the pod: the node
    table, the nodes' pod-independent filter groups and what the filters index of
    the existing pods (InterPodAffinity's terms), by running the filters once for a
    typical pod. Later decisions keep them up to date node by node."""
    # A pod as most are: requests, and the tolerations kube-apiserver adds to every pod
    # (the filters that look at those are the ones whose node groups get built).
    typical: RawObj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "topospread-warm-up", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "warm-up",
                    "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}},
                }
            ],
            "tolerations": [
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
            ],
        },
    }
    prepared = framework.filters.prepare(typical, snapshot)
    _outcomes(prepared, snapshot, snapshot.node_table())


def settle(decision: Placement, snapshot: Snapshot) -> tuple[str | None, tuple[str, ...]]:
    """Where a decided pod ends up, on `snapshot` (a private copy the caller then binds
    the pod in): (its selected node, ()); after a preemption (its nominated node, the
    victims, "namespace/name"), the victims gone from `snapshot`: the scheduler binds it
    there in a later cycle, once they left; (None, ()) when it stays pending."""
    if decision.preemption is not None:
        return carry_on(snapshot, decision.preemption), decision.preemption.victims
    return decision.selected_node, ()


def _copy_named(pod: RawObj, name: str) -> RawObj:
    return {**pod, "metadata": {**as_dict(pod.get("metadata")), "name": name}}


def simulate(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    replicas: int = 1,
    *,
    framework: Framework | None = None,
) -> Simulation:
    """Place `replicas` copies of `pod` one by one, each seeing the ones before.

    Copies after the first get distinct names (name-2, name-3, ...). The
    caller's snapshot is left untouched.
    """
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    work = snapshot.copy()
    adopt(work, snapshot)
    ns = pod_namespace(pod)
    meta = as_dict(pod.get("metadata"))
    base = meta.get("name") or str(meta.get("generateName") or "pod").rstrip("-") or "pod"
    placements: list[str | None] = []
    preemptions: list[Preemption | None] = []
    first: Placement | None = None
    for i in range(replicas):
        name = base if i == 0 else f"{base}-{i + 1}"
        while i > 0 and work.has_pod(ns, name):
            name += "-x"
        copy = _copy_named(pod, name)
        decision = place(copy, work, args, framework=framework)
        if first is None:
            first = decision
        node, _ = settle(decision, work)
        placements.append(node)
        preemptions.append(decision.preemption)
        if node is not None:
            work.add_pod(copy, node)
    assert first is not None
    fw = framework if framework is not None else framework_for(args)
    return Simulation(placements, first, distribution(pod, work, fw.spread_args), preemptions)
