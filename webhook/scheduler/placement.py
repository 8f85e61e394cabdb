"""The one entry point the CLI and /mutate call: where would kube-scheduler put this pod?

`place` runs the profile's filter plugins on every node (no short-circuit, so every
reason shows), scores the feasible nodes with its score plugins, and picks the
highest weighted sum, ties broken by name. `simulate` places copies one after another
on a private copy of the snapshot.

The answer is the one a node-by-node evaluation gives (property tests hold it to
that, for the spread-only model and the default profile), but the work is done once
per group of nodes that must get the same answer, so a decision over thousands of
nodes stays cheap:
- the filters' outcomes are remembered per pod spec and node generation; new ones
  are judged once per group of nodes alike for every filter (pod-independent node
  keys kept per node, NodeAffinity's by the classes of the labels it reads);
- PodTopologySpread's Filter reads only the node's values for the constraints'
  keys, so it runs once per distinct set of values (a zone, not each node);
- its Score likewise runs once per set of values (hostname by presence), and
  one by one only for the nodes holding matching pods under a hostname
  constraint;
- every other score plugin runs once per class of nodes it cannot tell apart
  (_score_classes), raw scores remembered per class where they read only the node
  and a pod key, and NormalizeScore runs over the distinct raw scores;
- nodes with the same outcome share one status map and one score map, and a node
  whose maps did not change keeps its verdict object.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import add, attrgetter, is_not, mul, ne
from typing import Any, NamedTuple

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.budget import CHUNK, OutOfTime, checkpoint, spent
from webhook.scheduler.framework.memo import FilterMemo, adopt, memo_of
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
from webhook.scheduler.plugins.podtopologyspread.common import (
    DEFAULT_ARGS,
    PLUGIN_NAME,
    SCHEDULE_ANYWAY,
    NodeInclusion,
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
    "PluginStatus",
    "Simulation",
    "Unschedulable",
    "explain",
    "feasible_nodes",
    "place",
    "pod_ref",
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
    what failed the scheduling cycle (a score plugin's error), None when nothing did.
    """

    pod: str
    nodes: list[NodeVerdict]
    selected_node: str | None
    reasons: dict[str, int]
    distribution: dict[str, dict[str, int]]
    tied_nodes: list[str] = field(default_factory=list)
    error: str | None = None

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
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True)
class Simulation:
    """N copies placed one after another.

    placements[i]: the node copy i went to, None when it fit nowhere; first: the
    full decision for the first copy; distribution: matching pods per domain
    once every copy is placed.
    """

    placements: list[str | None]
    first: Placement
    distribution: dict[str, dict[str, int]]

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
    prepared, table, generations, shared = done.prepared, done.table, done.generations, done.shared
    inclusion, pre, soft = done.inclusion, done.pre, done.soft
    flags, feasible, statuses_of_node, reasons = (
        done.flags,
        done.feasible,
        done.statuses_of_node,
        done.reasons,
    )
    names = table.names

    none: dict[str, int] = shared.share("no score", dict)
    scores: list[dict[str, int]] = [none] * len(names)
    totals: list[int] = [0] * len(names)
    selected: str | None = None
    tied: list[str] = []
    error: str | None = None
    if feasible:
        spread_scores = None
        if fw.spread_weight is not None and not isinstance(soft, Status) and soft.constraints:
            spread_scores = score_classes(pod, snapshot, soft, table, feasible, inclusion)
        ranked = _score(fw, prepared, snapshot, table, feasible, generations, spread_scores)
        if isinstance(ranked, str):
            error = ranked
        else:
            order, rows, sums, full_rows = ranked
            # Nodes with the same scores share one map, and so do later decisions (a
            # verdict whose maps are the previous decision's is kept as it was).
            maps = {
                row: shared.share(("scores", order, full), _score_map, order, full)
                for row, full in full_rows.items()
            }
            if len(feasible) == len(names):
                scores, totals = list(map(maps.__getitem__, rows)), sums
            else:  # scatter onto the feasible positions, in C
                deque(map(scores.__setitem__, feasible, map(maps.__getitem__, rows)), 0)
                deque(map(totals.__setitem__, feasible, sums), 0)
            best = max(sums)
            tied = list(map(names.__getitem__, compress(feasible, map(best.__eq__, sums))))
            selected = tied[0]  # nodes are in name order: ties go to the first by name

    # A node whose status map and score map are the very ones of the previous
    # decision keeps its verdict object (fewer objects made, less for the GC).
    new = tuple.__new__
    last = shared.last
    if last is not None and last[0] is names:
        _, last_statuses, last_scores, last_totals, verdicts = last
        verdicts = list(verdicts)
        changed = set(compress(range(len(names)), map(is_not, statuses_of_node, last_statuses)))
        changed.update(compress(range(len(names)), map(is_not, scores, last_scores)))
        changed.update(compress(range(len(names)), map(ne, totals, last_totals)))
        for i in changed:
            verdicts[i] = new(
                NodeVerdict, (names[i], flags[i], statuses_of_node[i], scores[i], totals[i])
            )
    else:
        verdicts = [
            new(NodeVerdict, fields)
            for fields in zip(names, flags, statuses_of_node, scores, totals, strict=True)
        ]
    shared.last = (names, statuses_of_node, scores, totals, verdicts)
    if isinstance(pre, Status) or isinstance(soft, Status):
        spread_over: dict[str, dict[str, int]] = {}
    else:
        spread_over = distribution_of(pod, snapshot, (*pre.constraints, *soft.constraints))
    return Placement(
        pod=pod_ref(pod),
        nodes=list(verdicts),
        selected_node=selected,
        reasons=dict(sorted(reasons.items())),
        distribution=spread_over,
        tied_nodes=tied,
        error=error,
    )


class _Filtered(NamedTuple):
    """What the filter phase of one decision leaves for the score phase."""

    prepared: PreparedFilters
    table: NodeTable
    generations: Any
    shared: Any
    inclusion: NodeInclusion
    pre: PreFilterState | Status
    soft: Any
    flags: list[bool]
    feasible: list[int]
    statuses_of_node: list[dict[str, Status]]
    reasons: dict[str, int]


def _filters(pod: RawObj, snapshot: Snapshot, fw: Framework) -> _Filtered:
    """Every filter of `fw` on every node (see place), grouped."""
    args = fw.spread_args
    prepared = fw.filters.prepare(pod, snapshot)
    table = snapshot.node_table()
    names = table.names
    outcome_ids, memo, generations = _filter_outcomes(prepared, snapshot, table)
    outcomes = memo.outcomes
    # Maps and verdicts are shared by every pod's decisions (status maps by content).
    shared = memo_of(snapshot).shared
    inclusion = NodeInclusion(pod)
    if prepared.is_active("NodeAffinity"):
        # Node inclusion honours the same node affinity the NodeAffinity filter
        # checks: take its remembered verdicts rather than match every node again.
        matches = [outcome["NodeAffinity"].ok for outcome in outcomes]
        inclusion.know_affinity(table, list(map(matches.__getitem__, outcome_ids)))
    pre = pre_filter(pod, snapshot, args, inclusion)
    # Upstream parses ScheduleAnyway constraints only at PreScore, where a parse
    # error fails the whole cycle; checking now lets every verdict say so.
    soft = constraints_or_error(pod, snapshot, args, SCHEDULE_ANYWAY)
    spread_error = pre if isinstance(pre, Status) else soft if isinstance(soft, Status) else None
    state: PreFilterState | None = None if isinstance(pre, Status) else pre

    # PodTopologySpread's Filter reads only the node's values for the constraints'
    # keys: judge each distinct set of values once.
    spread: list[Status]
    if not fw.spread_filter:
        spread, keys = [SUCCESS], outcome_ids
    elif spread_error is not None:
        spread, keys = [spread_error], outcome_ids
    elif state is None or not state.constraints:
        spread, keys = [SUCCESS], outcome_ids
    else:
        hard_keys = filter_keys(state)
        classes = memo_of(snapshot).node_classes(hard_keys, (False,) * len(hard_keys), table)
        by_class = filter_classes(state, hard_keys, classes.values)
        # The verdicts are a few shared Status objects: tell them apart by identity.
        ids = list(map(id, by_class))
        spread = list(dict(zip(ids, by_class, strict=True)).values())
        slot = {id(status): i for i, status in enumerate(spread)}
        codes = list(map(list(map(slot.__getitem__, ids)).__getitem__, classes.of_node))
        width = len(spread)
        if any(outcome_ids):
            keys = list(map(add, map(width.__mul__, outcome_ids), codes))
        else:  # every node passes the five filters (outcome 0)
            keys = codes

    # One status map per (five filters' outcome, PodTopologySpread verdict): nodes
    # sharing both share it, and so do later decisions.
    width = len(spread)
    feasible_of: dict[int, bool] = {}
    filters_of: dict[int, dict[str, Status]] = {}
    reasons: dict[str, int] = {}
    for key, count in Counter(keys).items():
        o, c = divmod(key, width)
        ok, statuses, failed = shared.share(
            ("filters", fw.filter_names, _content(outcomes[o]), spread[c], spread[c].parts),
            _merged,
            fw,
            outcomes[o],
            spread[c],
        )
        for reason in failed:
            reasons[reason] = reasons.get(reason, 0) + count
        feasible_of[key], filters_of[key] = ok, statuses
    flags = list(map(feasible_of.__getitem__, keys))
    feasible = list(compress(range(len(names)), flags))
    statuses_of_node = list(map(filters_of.__getitem__, keys))
    return _Filtered(
        prepared,
        table,
        generations,
        shared,
        inclusion,
        pre,
        soft,
        flags,
        feasible,
        statuses_of_node,
        reasons,
    )


def feasible_nodes(
    pod: RawObj, snapshot: Snapshot, *, framework: Framework | None = None
) -> list[str]:
    """The nodes that pass every filter of the profile for `pod`, by name: place()'s
    feasible nodes without its scores or verdicts (for callers that choose the node
    themselves, such as a rebalancing plan)."""
    fw = framework if framework is not None else framework_for(DEFAULT_ARGS)
    done = _filters(pod, snapshot, fw)
    names = done.table.names
    return [names[i] for i in done.feasible]


def _score_map(order: tuple[str, ...], row: tuple[int, ...]) -> dict[str, int]:
    """A node's scores by plugin; `row` is the scores in `order`."""
    return dict(zip(order, row, strict=True))


def _score(
    fw: Framework,
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
    generations: list[int],
    spread_scores: list[int] | None,
) -> tuple[tuple[str, ...], list[Any], list[int], dict[Any, tuple[int, ...]]] | str:
    """Every score plugin's normalised score on each feasible node (positions of
    `table`): (the plugins scoring, in profile order; each node's row, a key for its
    scores; each node's weighted sum; row -> the scores in that order); or the error
    that fails the cycle.

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
        column = _column(plugin, state, pod, snapshot, table, feasible, generations)
        if isinstance(column, str):
            return column
        columns[plugin.name] = (weight, column)
    order = tuple(name for name in fw.score_names if name in columns)
    # A column giving every node the same score (a plugin nothing sets apart, as
    # TaintToleration on untainted nodes) stays out of the rows.
    constant = {name: column[0] for name, (_, column) in columns.items() if len(set(column)) == 1}
    varying = [name for name in order if name not in constant]
    rows: list[Any]
    if not varying:
        rows = [()] * len(feasible)
    elif len(varying) == 1:  # one plugin sets nodes apart: rows are its scores
        rows = columns[varying[0]][1]
    else:
        rows = list(zip(*(columns[name][1] for name in varying), strict=True))
    full_rows: dict[Any, tuple[int, ...]] = {}
    sum_of: dict[Any, int] = {}
    # One weighted sum and one row of every plugin's score per distinct row.
    for row in set(rows):
        values = dict(constant)
        values.update(zip(varying, row if len(varying) != 1 else (row,), strict=True))
        full = full_rows[row] = tuple(values[name] for name in order)
        sum_of[row] = sum(map(mul, (columns[name][0] for name in order), full))
    return order, rows, list(map(sum_of.__getitem__, rows)), full_rows


def _column(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
    generations: list[int],
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
    classes = _score_classes(plugin, state, pod, snapshot, table, generations) if grouped else None
    if classes is None:
        raws: list[int] = []
        for i in feasible:
            value, status = plugin.score(state, pod, infos[i])
            if not status.ok:
                return f"running Score plugin {plugin.name!r}: {status.reason}"
            raws.append(value)
        return _normalized(plugin, state, pod, raws, table.names, feasible)
    of_node, raw_of = classes
    of_feasible = list(map(of_node.__getitem__, feasible))
    missing = set(of_feasible).difference(raw_of)
    if missing:
        # class -> its first feasible node (reversed, so the first write of each wins)
        first = dict(zip(reversed(of_feasible), reversed(feasible), strict=True))
        for c in missing:
            i = first[c]
            value, status = plugin.score(state, pod, infos[i])
            if not status.ok:
                return f"running Score plugin {plugin.name!r}: {status.reason}"
            if infos[i].generation != generations[i]:
                # The node changed meanwhile (a concurrent update): its score need not
                # hold for the rest of its class.
                return _column(
                    plugin, state, pod, snapshot, table, feasible, generations, grouped=False
                )
            raw_of[c] = value
    raws = list(map(raw_of.__getitem__, of_feasible))
    return _normalized(plugin, state, pod, raws, table.names, feasible)


def _score_classes(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    snapshot: Snapshot,
    table: NodeTable,
    generations: list[int],
) -> tuple[list[int], dict[int, int]] | None:
    """The class of each node of `table` for this plugin's Score and the raw scores of
    the classes already known (for the caller to complete), or None when each node
    must be scored on its own.

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
            of_node = _classes(classes, table, generations, node_key_of)
            if of_node is not None:
                return of_node, memo.raw_by_class(plugin.name, key, classes)
    labels_of = getattr(plugin, "score_label_keys", None)
    keys = labels_of(state, pod) if labels_of is not None else None
    if keys is None:
        return None
    try:
        return memo.node_classes(keys, (False,) * len(keys), table).of_node, {}
    except TypeError:  # a label value that cannot be hashed: no Node decoded from JSON has one
        return None


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
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable
) -> tuple[list[int], FilterMemo, list[int]]:
    """The filters' outcome for each node of `table`: (outcome index per node, the memo
    holding the outcomes' status maps, each node's generation as read).

    The filters read only the node and a few fields of the pod (runtime.pod_inputs):
    their outcome for a node holds while the node is unchanged, for every pod
    with the same inputs (the replicas of one workload, its next revision, the
    copies of a simulation). Remembered per inputs and judged again only for
    nodes whose generation moved, found from the snapshot's journal of changed nodes
    (every generation is compared only when the journal cannot say). Inputs never
    seen are judged once per group of nodes the filters cannot tell apart (equal
    plugin node keys, _alike).

    Under a time budget (framework.budget) the judging stops when the budget runs
    out: what was judged is remembered (the rest marked unjudged) and OutOfTime is
    raised, so a later call carries on from there.
    """
    memo = memo_of(snapshot).filter_verdicts(pod_inputs(prepared), all_passing(prepared))

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
                    ids[i] = memo.intern(key, statuses)
        return ids, len(infos)

    def keep_partial(ids: list[int], unjudged: Iterable[int]) -> None:
        """Remember what was judged before the budget ran out, the other nodes
        marked as never judged (a generation no node has), and give up."""
        kept = list(generations)
        for i in unjudged:
            kept[i] = _UNJUDGED
        memo.state = (table.names, kept, ids)
        raise OutOfTime

    infos = table.infos
    # Taken before any generation is read: a change made while reading is seen next time.
    mark = snapshot.journal_mark()
    state = memo.state
    then_names, then_generations, ids = state
    known = memo.mark
    changed = (
        snapshot.changed_since(known[1])
        if known is not None and known[0] is state and then_names is table.names
        else None
    )
    if changed is not None:
        # Only the nodes the snapshot's journal names can have moved.
        if not changed:
            return ids, memo, then_generations
        position = table.position
        generations = list(then_generations)
        moved = []
        for at in sorted(a for a in map(position.get, changed) if a is not None):
            generations[at] = infos[at].generation
            if generations[at] != then_generations[at]:
                moved.append(at)
    else:
        generations = list(map(_generation, infos))
        moved = (
            list(compress(range(len(generations)), map(ne, generations, then_generations)))
            if then_names is table.names
            else []
        )
    if then_names is table.names:
        if not moved:
            memo.mark = (state, mark)
            return ids, memo, then_generations
        ids = list(ids)
        groups = _alike(prepared, snapshot, table, generations) if len(moved) > CHUNK else None
        if groups is not None:
            # Many nodes to judge again (a look that ran out of budget, a wave of
            # changes): one member of each group among them, as below.
            first: dict[int, int] = {}
            for i in moved:
                first.setdefault(groups[i], i)
            judged, done = judge([infos[i] for i in first.values()])
            if any(infos[i].generation != generations[i] for i in first.values()):
                groups = None  # a judged node changed meanwhile: judge one by one
            else:
                outcome_of = dict(zip(list(first)[:done], judged, strict=False))
                unjudged = [i for i in moved if groups[i] not in outcome_of]
                for i in moved:
                    ids[i] = outcome_of.get(groups[i], ids[i])
                if unjudged:
                    keep_partial(ids, unjudged)
        if groups is None:
            judged, done = judge([infos[i] for i in moved])
            for i, outcome in zip(moved[:done], judged, strict=False):
                ids[i] = outcome
            if done < len(moved):
                keep_partial(ids, moved[done:])
    elif (groups := _alike(prepared, snapshot, table, generations)) is not None:
        # Judge one member of each group of nodes the filters cannot tell apart:
        # group -> its first node (reversed, so the first write of each group wins)
        first = dict(zip(reversed(groups), range(len(groups) - 1, -1, -1), strict=True))
        judged, done = judge([infos[i] for i in first.values()])
        outcome_of = dict(zip(list(first)[:done], judged, strict=False))
        if any(infos[i].generation != generations[i] for i in first.values()):
            # A judged node changed meanwhile (a concurrent update): its verdict need
            # not hold for the rest of its group, which would keep it.
            ids, done = judge(infos)
            if done < len(infos):
                keep_partial(ids, range(done, len(infos)))
        elif done < len(first):
            ids = [outcome_of.get(g, 0) for g in groups]
            keep_partial(ids, (i for i, g in enumerate(groups) if g not in outcome_of))
        else:
            ids = list(map(outcome_of.__getitem__, groups))
    else:
        ids, done = judge(infos)
        if done < len(infos):
            keep_partial(ids, range(done, len(infos)))
    memo.state = state = (table.names, generations, ids)
    memo.mark = (state, mark)
    return ids, memo, generations


def _alike(
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable, generations: list[int]
) -> list[int] | None:
    """Each node's group of nodes the filters cannot tell apart for this pod (equal
    FilterPlugin.node_key of every active plugin), or None when nodes must be judged
    one by one (a plugin reads the node's name).

    The keys that do not depend on the pod are remembered per node (_node_groups). Of
    the others, a plugin that names the node labels its key reads for this pod
    (`node_label_keys`: NodeAffinity's nodeSelector and required terms) is grouped by
    the node classes of those labels (Memo.node_classes, kept until a node's labels
    change); only the rest are read node by node.
    """
    shared = tuple(p for p in prepared.active if not p.node_key_reads_pod)
    own = tuple(p for p in prepared.active if p.node_key_reads_pod)
    groups = _node_groups(snapshot, table, generations, prepared, shared)
    if groups is None:
        return None
    if not own:
        return groups
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
    try:
        if label_keys:
            keys = tuple(dict.fromkeys(label_keys))
            classes = memo_of(snapshot).node_classes(keys, (False,) * len(keys), table)
            width = len(classes.values)
            groups = list(map(add, map(width.__mul__, groups), classes.of_node))
        if not by_node:
            return groups
        infos = table.infos
        columns = [[p.node_key(state, pod, info) for info in infos] for p in by_node]
        if any(None in column for column in columns):
            return None
        combined: dict[Any, int] = {}
        keyed = zip(groups, *columns, strict=True)
        return [combined.setdefault(key, len(combined)) for key in keyed]
    except TypeError:  # a value that cannot be hashed: no Node decoded from JSON has one
        return None


def _node_groups(
    snapshot: Snapshot,
    table: NodeTable,
    generations: list[int],
    prepared: PreparedFilters,
    plugins: tuple[FilterPlugin, ...],
) -> list[int] | None:
    """The group of each node of `table` by the pod-independent node keys of `plugins`.
    Regrouped only for nodes whose generation moved."""
    memo = memo_of(snapshot).node_groups(tuple(p.name for p in plugins))
    state, pod = prepared.state, prepared.pod

    def key_of(info: NodeInfoLike) -> Hashable | None:
        key = tuple(p.node_key(state, pod, info) for p in plugins)
        return None if None in key else key

    return _classes(memo, table, generations, key_of)


def _classes(
    memo: FilterMemo,
    table: NodeTable,
    generations: list[int],
    key_of: Callable[[NodeInfoLike], Hashable | None],
) -> list[int] | None:
    """The class of each node of `table` (nodes with equal `key_of(node)` share one), kept
    in `memo` and worked out again only for nodes whose generation moved; None when a
    node has no key."""

    def group(i: int) -> int | None:
        key = key_of(table.infos[i])
        if key is None:
            return None
        hit = memo.lookup(key)
        return hit if hit is not None else memo.intern(key, None)

    then_names, then_generations, ids = memo.state
    if then_names is not table.names:
        fresh = [group(i) for i in range(len(generations))]
    elif generations != then_generations:
        fresh = list(ids)
        for i in compress(range(len(generations)), map(ne, generations, then_generations)):
            fresh[i] = group(i)
    else:
        return ids
    if None in fresh:
        return None
    ids = [i for i in fresh if i is not None]
    memo.state = (table.names, generations, ids)
    return ids


_generation = attrgetter("generation")
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
    outcome_ids, memo, _ = _filter_outcomes(prepared, snapshot, table)
    # Outcome 0: every other filter passes.
    others_pass = list(map((0).__eq__, outcome_ids))
    if not any(others_pass):
        return None
    checkpoint()
    inclusion = NodeInclusion(pod)
    if prepared.is_active("NodeAffinity"):
        matches = [outcome["NodeAffinity"].ok for outcome in memo.outcomes]
        inclusion.know_affinity(table, list(map(matches.__getitem__, outcome_ids)))
    state = pre_filter(pod, snapshot, fw.spread_args, inclusion)
    if not isinstance(state, PreFilterState) or not state.constraints:
        return None
    checkpoint()
    keys = filter_keys(state)
    classes = memo_of(snapshot).node_classes(keys, (False,) * len(keys), table)
    verdicts = filter_classes(state, keys, classes.values)
    candidate_classes = set(compress(classes.of_node, others_pass))
    if any(verdicts[k].ok for k in candidate_classes):
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
    _filter_outcomes(prepared, snapshot, snapshot.node_table())


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
    first: Placement | None = None
    for i in range(replicas):
        name = base if i == 0 else f"{base}-{i + 1}"
        while i > 0 and work.has_pod(ns, name):
            name += "-x"
        copy = _copy_named(pod, name)
        decision = place(copy, work, args, framework=framework)
        if first is None:
            first = decision
        placements.append(decision.selected_node)
        if decision.selected_node is not None:
            work.add_pod(copy, decision.selected_node)
    assert first is not None
    fw = framework if framework is not None else framework_for(args)
    return Simulation(placements, first, distribution(pod, work, fw.spread_args))
