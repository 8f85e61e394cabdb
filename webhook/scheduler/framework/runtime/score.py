"""RunPreScorePlugins, RunScorePlugins and NormalizeScore with weights, over classes of
nodes a score plugin cannot tell apart.

Port of runtime/framework.go: RunPreScorePlugins, RunScorePlugins. Each plugin's Score
runs once per class of feasible nodes it reads alike (the optional score hooks of
framework/types.py), its raw scores remembered per class where they read only the node
and a pod key, and NormalizeScore over the distinct raw scores where the plugin says it
reads only values; tests/scheduler/test_properties.py holds it to node-by-node scoring.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import compress
from operator import add, itemgetter
from typing import Any, cast, overload

from webhook.api.kube import RawObj
from webhook.scheduler.framework.memo import (
    memo_of,
)
from webhook.scheduler.framework.runtime.framework import PreparedFilters
from webhook.scheduler.framework.runtime.grouping import kept_classes
from webhook.scheduler.framework.snapshot import NodeTable, Snapshot
from webhook.scheduler.framework.types import (
    ClassScore,
    Code,
    ColumnScore,
    CycleState,
    NodeInfoLike,
    ScoreBatch,
    ScoreKeyed,
    ScoreLabelKeyed,
    ScorePlugin,
    ScoreView,
    ValueNormalizing,
    implements,
)

__all__ = [
    "best_position",
    "run_normalize_score",
    "run_score_plugins",
    "score_classes",
    "score_column",
    "score_columns",
    "score_map",
    "sums_by_classes",
    "weighted_sums",
]


def score_map(order: tuple[str, ...], row: tuple[int, ...]) -> dict[str, int]:
    """A node's scores by plugin; `row` is the scores in `order`."""
    return dict(zip(order, row, strict=True))


def run_score_plugins(
    plugins: Sequence[tuple[ScorePlugin, int]],
    score_names: tuple[str, ...],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> tuple[tuple[str, ...], list[Any] | None, dict[Any, tuple[int, ...]], dict[Any, int]] | str:
    """Every score plugin's normalised score on each feasible node (positions of
    `table`): (the plugins scoring, in profile order; each node's row, a key for its
    scores, None when every node has the same (the row is then ()); row -> the scores
    in that order; row -> its weighted sum); or the error that fails the cycle.

    Port of runtime/framework.go: RunPreScorePlugins, RunScorePlugins (score, normalise,
    weight). A plugin whose PreScore skips is left out; a plugin with the ColumnScore
    hook (PodTopologySpread) gives its whole column itself; the others' come from
    score_column.
    """
    columns = score_columns(plugins, prepared, snapshot, table, feasible)
    if isinstance(columns, str):
        return columns
    order = tuple(name for name in score_names if name in columns)
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


def score_columns(
    plugins: Sequence[tuple[ScorePlugin, int]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> dict[str, tuple[int, list[int]]] | str:
    """Plugin name -> (its weight, its normalised score on each feasible node), for the
    plugins whose PreScore does not skip, in profile order; or the error that fails the
    cycle. A plugin with the ColumnScore hook gives its whole column itself."""
    state, pod = prepared.state, prepared.pod
    columns: dict[str, tuple[int, list[int]]] = {}
    infos = list(map(table.infos.__getitem__, feasible)) if plugins else []
    for plugin, weight in plugins:
        pre = _pre_score(plugin, state, pod, infos, snapshot)
        if isinstance(pre, str):
            return pre
        if not pre:
            continue
        column = _column(plugin, state, pod, snapshot, table, feasible)
        if isinstance(column, str):
            return column
        columns[plugin.name] = (weight, column)
    return columns


def _pre_score(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    nodes: Sequence[NodeInfoLike],
    snapshot: Snapshot,
) -> bool | str:
    """The plugin's PreScore: True when it scores, False when it skips, or the error
    that fails the cycle."""
    status = plugin.pre_score(state, pod, nodes, snapshot)
    if status.code is Code.SKIP:
        return False
    if not status.ok:
        return f"running PreScore plugin {plugin.name!r}: {status.reason}"
    return True


def _column(
    plugin: ScorePlugin,
    state: CycleState,
    pod: RawObj,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> list[int] | str:
    """The plugin's normalised score on each feasible node: its own whole column
    (ColumnScore) or score_column's; or the error that fails the cycle."""
    if implements(plugin, ColumnScore):
        return cast("ColumnScore", plugin).score_column(state, pod, snapshot, table, feasible)
    return score_column(plugin, state, pod, snapshot, table, feasible)


def weighted_sums(
    plugins: Sequence[tuple[ScorePlugin, int]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> list[int] | str:
    """Each feasible node's weighted sum of normalised scores (what run_score_plugins
    sums per row), without the rows and score maps a verdict needs; or the error that
    fails the cycle. For a caller that needs only the best node."""
    columns = score_columns(plugins, prepared, snapshot, table, feasible)
    if isinstance(columns, str):
        return columns
    sums = [0] * len(feasible)
    for weight, column in columns.values():
        sums = list(map(add, sums, map(weight.__mul__, column)))
    return sums


def sums_by_classes(
    plugins: Sequence[tuple[ScorePlugin, int]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    scored: list[int],
) -> list[int] | str:
    """weighted_sums worked out by classes, for a sampled cycle's scanned nodes
    (`scored`, ascending): each plugin with a ScoreView scores once per class among
    them (its classes of every node read, not made, per decision), the others give
    their column; or the error that fails the cycle. weighted_sums is its plain twin
    (tests/scheduler/test_properties.py)."""
    split = _views_and_columns(plugins, prepared, snapshot, table, scored)
    if isinstance(split, str):
        return split
    return _sums(*split, prepared, snapshot, table, scored)


def _views_and_columns(
    plugins: Sequence[tuple[ScorePlugin, int]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> tuple[list[tuple[int, ScorePlugin, ScoreView]], list[tuple[int, list[int]]]] | str:
    """Each plugin's PreScore over the feasible nodes, then (weight, plugin, its
    ScoreView) for those with one and (weight, its column) for the others, a plugin
    whose PreScore skips left out; or the error that fails the cycle."""
    state, pod = prepared.state, prepared.pod
    infos = FeasibleNodes(table.infos, feasible)
    views: list[tuple[int, ScorePlugin, ScoreView]] = []
    columns: list[tuple[int, list[int]]] = []
    for plugin, weight in plugins:
        pre = _pre_score(plugin, state, pod, infos, snapshot)
        if isinstance(pre, str):
            return pre
        if not pre:
            continue
        view = _view(plugin, state, pod, snapshot, table)
        if view is not None:
            views.append((weight, plugin, view))
            continue
        column = _column(plugin, state, pod, snapshot, table, feasible)
        if isinstance(column, str):
            return column
        columns.append((weight, column))
    return views, columns


def best_position(
    plugins: Sequence[tuple[ScorePlugin, int]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
    keys: list[int],
    feasible_key: Mapping[int, bool],
) -> int | str:
    """The first feasible node (a position of `table`) with the highest weighted sum of
    normalised scores, what `feasible[sums.index(max(sums))]` gives over weighted_sums;
    or the error that fails the cycle. `feasible` is not empty; keys[i]: node i's filter
    key (Diagnosis.keys); feasible_key: whether a key's nodes are feasible.

    Worked out by classes of nodes rather than node by node: every plugin scores by
    classes (ScoreView); nodes with the same filter key and the same class for every
    plugin form one joint class with one weighted sum, and the answer is the first
    position of the best joint class. Then a decision costs a few passes over the
    nodes in C and Python work per joint class, whatever the number of plugins. A
    plugin without a ScoreView takes the decision node by node (_best_by_columns).
    """
    split = _views_and_columns(plugins, prepared, snapshot, table, feasible)
    if isinstance(split, str):
        return split
    views, columns = split
    if columns:
        return _best_by_columns(views, columns, prepared, snapshot, table, feasible)
    # A plugin giving every node one class adds the same to every sum: scored once
    # (its error still fails the cycle), and left out of the joint classes.
    varying: list[tuple[int, ScorePlugin, ScoreView]] = []
    for weight, plugin, view in views:
        of_node = view.of_node
        if of_node and of_node.count(of_node[0]) == len(of_node):
            c = of_node[0]
            alone = view.scores({c: feasible[0]}, {c: len(feasible)}, len(feasible))
            if alone is None:
                return _best_by_columns(views, [], prepared, snapshot, table, feasible)
            if isinstance(alone, str):
                return alone
        else:
            varying.append((weight, plugin, view))
    views = varying
    # The joint classes over every node, each with its first position; the feasible
    # ones (live) in the order of those positions.
    columns_of = [keys, *(view.of_node for _, _, view in views)]
    backwards = zip(*map(reversed, columns_of), strict=True)
    first = dict(zip(backwards, range(len(keys) - 1, -1, -1), strict=True))
    live = sorted(
        compress(first, map(feasible_key.__getitem__, map(itemgetter(0), first))),
        key=first.__getitem__,
    )
    positions = list(map(first.__getitem__, live))
    held: Counter[tuple[int, ...]] | None = None
    totals = [0] * len(live)
    for i, (weight, _, view) in enumerate(views, start=1):
        classes = list(map(itemgetter(i), live))
        # class -> its first feasible position (the first write of each wins)
        present = dict(zip(reversed(classes), reversed(positions), strict=True))
        counts: dict[int, int] = {}
        if view.counted:
            if held is None:
                held = Counter(zip(*columns_of, strict=True))
            for c, n in zip(classes, map(held.__getitem__, live), strict=True):
                counts[c] = counts.get(c, 0) + n
        scores = view.scores(present, counts, len(feasible))
        if scores is None:  # a node changed meanwhile
            return _best_by_columns(views, [], prepared, snapshot, table, feasible)
        if isinstance(scores, str):
            return scores
        totals = list(map(add, totals, map(weight.__mul__, map(scores.__getitem__, classes))))
    return positions[totals.index(max(totals))]


class FeasibleNodes(Sequence[NodeInfoLike]):
    """The feasible nodes as PreScore takes them, read on demand: the nodes of `infos`
    (a NodeTable's) at `positions`. The default plugins' PreScore reads the pod and the
    snapshot; a list of thousands of nodes made for every decision would go unread."""

    __slots__ = ("_infos", "_positions")

    def __init__(self, infos: Sequence[NodeInfoLike], positions: Sequence[int]) -> None:
        self._infos = infos
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, i: int) -> NodeInfoLike: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[NodeInfoLike]: ...

    def __getitem__(self, i: int | slice) -> NodeInfoLike | Sequence[NodeInfoLike]:
        if isinstance(i, slice):
            return [self._infos[p] for p in self._positions[i]]
        return self._infos[self._positions[i]]


def _view(
    plugin: ScorePlugin, state: CycleState, pod: RawObj, snapshot: Snapshot, table: NodeTable
) -> ScoreView | None:
    """The plugin's ScoreView (after its PreScore): its own (ClassScore), or one from the
    classes score_column scores by (score_classes) when its NormalizeScore reads values
    only; None when it scores node by node."""
    if implements(plugin, ClassScore):
        return cast("ClassScore", plugin).score_view(state, pod, snapshot, table)
    if not (
        implements(plugin, ValueNormalizing)
        and cast("ValueNormalizing", plugin).normalize_reads_values
    ):
        return None
    classes = score_classes(plugin, state, pod, snapshot, table)
    if classes is None:
        return None
    of_node, unchanged, raw_of = classes
    infos = table.infos

    def scores(
        present: Mapping[int, int], _: Mapping[int, int], __: int
    ) -> dict[int, int] | str | None:
        # score_column's steps: a raw score per class (its first feasible node scored),
        # normalised over the distinct raw scores.
        missing = [c for c in present if c not in raw_of]
        if missing:
            values = _raw_scores(plugin, state, pod, [infos[present[c]] for c in missing])
            if isinstance(values, str):
                return values
            if not unchanged([present[c] for c in missing]):
                return None
            raw_of.update(zip(missing, values, strict=True))
        raws = list(map(raw_of.__getitem__, present))
        normalized = run_normalize_score(plugin, state, pod, raws, [], [])
        if isinstance(normalized, str):
            return normalized
        return dict(zip(present, normalized, strict=True))

    return ScoreView(of_node, scores)


def _best_by_columns(
    views: list[tuple[int, ScorePlugin, ScoreView]],
    columns: list[tuple[int, list[int]]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> int | str:
    """best_position node by node: each view's scores spread over the feasible nodes
    (or, where a node changed under it, its plugin's Score on every node), added to the
    `columns` of the plugins without one, weighted; the first best node."""
    sums = _sums(views, columns, prepared, snapshot, table, feasible)
    if isinstance(sums, str):
        return sums
    return feasible[sums.index(max(sums))]


def _sums(
    views: list[tuple[int, ScorePlugin, ScoreView]],
    columns: list[tuple[int, list[int]]],
    prepared: PreparedFilters,
    snapshot: Snapshot,
    table: NodeTable,
    feasible: list[int],
) -> list[int] | str:
    """Each feasible node's weighted sum: each view's weighted score per class spread
    over the feasible nodes (or, where a node changed under it, its plugin's Score on
    every node), added to the `columns` of the plugins without one, weighted; or the
    error. A view holding every feasible node in one class adds one number to all."""
    base = 0
    # (each feasible node's class, class -> its weighted score) of the other views
    spread: list[tuple[list[int], dict[int, int]]] = []
    columns = list(columns)
    for weight, plugin, view in views:
        of_feasible = list(map(view.of_node.__getitem__, feasible))
        c = of_feasible[0]
        alone = of_feasible.count(c) == len(of_feasible)
        if alone:
            first = {c: feasible[0]}
            counts: Mapping[int, int] = {c: len(feasible)}
        else:
            first = dict(zip(reversed(of_feasible), reversed(feasible), strict=True))
            counts = Counter(of_feasible) if view.counted else {}
        scores = view.scores(first, counts, len(feasible))
        if scores is None:
            column = score_column(
                plugin, prepared.state, prepared.pod, snapshot, table, feasible, grouped=False
            )
            if isinstance(column, str):
                return column
            columns.append((weight, column))
        elif isinstance(scores, str):
            return scores
        elif alone:
            base += weight * scores[c]
        else:
            spread.append((of_feasible, {k: weight * v for k, v in scores.items()}))
    sums = [base] * len(feasible)
    for of_feasible, weighted in spread:
        sums = list(map(add, sums, map(weighted.__getitem__, of_feasible)))
    for weight, column in columns:
        sums = list(map(add, sums, map(weight.__mul__, column)))
    return sums


def _raw_scores(
    plugin: ScorePlugin, state: CycleState, pod: RawObj, nodes: list[NodeInfoLike]
) -> list[int] | str:
    """Score on each of `nodes`, in one call when the plugin has the ScoreBatch hook;
    or the error of the first that fails."""
    if implements(plugin, ScoreBatch):
        values, status = cast("ScoreBatch", plugin).score_nodes(state, pod, nodes)
        if not status.ok:
            return f"running Score plugin {plugin.name!r}: {status.reason}"
        return values
    raws: list[int] = []
    for info in nodes:
        value, status = plugin.score(state, pod, info)
        if not status.ok:
            return f"running Score plugin {plugin.name!r}: {status.reason}"
        raws.append(value)
    return raws


def score_column(
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

    Score runs once per class of nodes the plugin cannot tell apart (score_classes)
    on one member of it; the raw score of a class that does not depend on the pod's
    other fields is remembered across decisions. Plugins that cannot say what they
    read run on every node.
    """
    infos = table.infos
    classes = score_classes(plugin, state, pod, snapshot, table) if grouped else None
    if classes is None:
        every = _raw_scores(plugin, state, pod, list(map(infos.__getitem__, feasible)))
        if isinstance(every, str):
            return every
        return run_normalize_score(plugin, state, pod, every, table.names, feasible)
    of_node, unchanged, raw_of = classes
    if len(feasible) == len(of_node):
        of_feasible = of_node
    else:
        of_feasible = list(map(of_node.__getitem__, feasible))
    missing = set(of_feasible).difference(raw_of)
    if missing:
        # class -> its first feasible node (reversed, so the first write of each wins)
        first = dict(zip(reversed(of_feasible), reversed(feasible), strict=True))
        wanted = list(missing)
        values = _raw_scores(plugin, state, pod, [infos[first[c]] for c in wanted])
        if isinstance(values, str):
            return values
        scored = dict(zip(wanted, values, strict=True))
        if not unchanged([first[c] for c in scored]):
            # A node changed meanwhile (a concurrent update): its score need not hold
            # for the rest of its class.
            return score_column(plugin, state, pod, snapshot, table, feasible, grouped=False)
        raw_of.update(scored)
    raws = list(map(raw_of.__getitem__, of_feasible))
    return run_normalize_score(plugin, state, pod, raws, table.names, feasible)


def score_classes(
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
    if implements(plugin, ScoreKeyed):
        keyed = cast("ScoreKeyed", plugin)
        key = keyed.score_key(state, pod)
        if key is not None:
            classes = memo.score_classes(plugin.name)
            kept = kept_classes(classes, snapshot, table, keyed.score_node_key)
            if kept is not None:
                raw_of = memo.raw_by_class(plugin.name, key, classes)
                return kept.ids, functools.partial(as_read, table, kept.generations), raw_of
    labelled = cast("ScoreLabelKeyed", plugin) if implements(plugin, ScoreLabelKeyed) else None
    keys = labelled.score_label_keys(state, pod) if labelled is not None else None
    if keys is None:
        return None
    mark = snapshot.journal_mark()
    try:
        of_node = memo.node_classes(keys, (False,) * len(keys), table).of_node
    except TypeError:  # a label value that cannot be hashed: no Node decoded from JSON has one
        return None
    return of_node, functools.partial(unchanged_since, snapshot, table, mark), {}


def as_read(table: NodeTable, generations: list[int], positions: list[int]) -> bool:
    """Whether the nodes at `positions` still have the generations they were read at."""
    infos = table.infos
    return all(infos[i].generation == generations[i] for i in positions)


def unchanged_since(
    snapshot: Snapshot, table: NodeTable, mark: tuple[int, int], positions: list[int]
) -> bool:
    """Whether no node at `positions` changed since `mark` (a journal_mark)."""
    changed = snapshot.changed_since(mark)
    if changed is None:
        return False
    names = table.names
    return not any(names[i] in changed for i in positions)


def run_normalize_score(
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
    if (
        implements(plugin, ValueNormalizing)
        and cast("ValueNormalizing", plugin).normalize_reads_values
    ):
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
