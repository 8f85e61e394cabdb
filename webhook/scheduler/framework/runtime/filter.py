"""RunFilterPlugins over a node table, remembered across decisions: each node's filter
outcome kept per pod spec (the pod's filter inputs) and judged again only for the nodes
that changed, under the decision's time budget (framework.budget).

Upstream judges every node at every cycle (schedule_one.go: findNodesThatPassFilters);
remembering outcomes is ours, held to node-by-node evaluation by
tests/scheduler/test_properties.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from webhook.scheduler.framework.budget import CHUNK, OutOfTime, budgeted, spent
from webhook.scheduler.framework.memo import (
    FilterMemo,
    NodeState,
    generations_of,
    memo_of,
    moved_since,
)
from webhook.scheduler.framework.runtime.framework import (
    PreparedFilters,
    all_passing,
    passing,
    pod_inputs,
    run_node_wise,
)
from webhook.scheduler.framework.runtime.grouping import alike_nodes
from webhook.scheduler.framework.snapshot import NodeTable, Snapshot
from webhook.scheduler.framework.types import (
    FilterOutcomes,
    NodeInfoLike,
)

__all__ = ["UNJUDGED", "filter_outcomes", "kept_with", "outcomes_of", "outcomes_view", "passes_of"]


# The generation recorded for a node whose outcome was not worked out (the budget ran
# out first): node generations count up from 1, so it never matches and the node is
# judged at the next call.
UNJUDGED = -1


def filter_outcomes(
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
    group of nodes the filters cannot tell apart (equal plugin node keys, alike_nodes).
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
                    statuses = run_node_wise(prepared, infos[i])
                    key = tuple((s.code, s.reason, s.parts) for s in statuses.values())
                    ids[i] = spec.intern(key, statuses)
        return ids, len(infos)

    def keep_partial(ids: list[int], generations: list[int], unjudged: Iterable[int]) -> None:
        """Remember what was judged before the budget ran out, the other nodes
        marked as never judged (a generation no node has, and no journal mark, so
        the next call compares generations and finds them), and give up."""
        kept = list(generations)
        for i in unjudged:
            kept[i] = UNJUDGED
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
        alike = (
            alike_nodes(prepared, snapshot, table, kept_only=True) if len(moved) > CHUNK else None
        )
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
    elif (alike := alike_nodes(prepared, snapshot, table, kept_only=budgeted())) is not None:
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


def outcomes_of(
    prepared: PreparedFilters, snapshot: Snapshot, table: NodeTable
) -> tuple[FilterMemo, list[int]]:
    """The memo of the pod's filter inputs and each node's outcome (filter_outcomes)."""
    spec = memo_of(snapshot).filter_verdicts(pod_inputs(prepared), all_passing(prepared))
    return spec, filter_outcomes(prepared, snapshot, table, spec)


def kept_with(spec: FilterMemo, name: Hashable, ids: list[int], make: Callable[[], Any]) -> Any:
    """make(), derived from the spec's outcome list `ids` and kept with the spec while
    its outcomes are that very list (replaced whole when a node's outcome moves)."""
    hit = spec.shared.get(name)
    if hit is None or hit[0] is not ids:
        hit = spec.shared[name] = (ids, make())
    return hit[1]


def passes_of(spec: FilterMemo, ids: list[int], name: str) -> list[bool]:
    """Whether the filter plugin `name` passes each node, from the outcomes remembered
    in `spec` (`ids`: each node's outcome), kept with them."""

    def make() -> list[bool]:
        passed = [outcome[name].ok for outcome in spec.outcomes]
        return list(map(passed.__getitem__, ids))

    matches: list[bool] = kept_with(spec, ("passes", name), ids, make)
    return matches


def outcomes_view(
    prepared: PreparedFilters, table: NodeTable, spec: FilterMemo, ids: list[int]
) -> FilterOutcomes:
    """The remembered outcomes (`ids`: each node of `table`'s outcome in `spec`) as
    class-wise plugins read them (types.FILTER_OUTCOMES). It holds the names of the
    active plugins, not `prepared`: it is kept in prepared.state, and a cycle through
    it would outlive the decision wherever cyclic GC is off (the CLI turns it off)."""
    active = frozenset(p.name for p in prepared.active)
    return FilterOutcomes(table, functools.partial(_passing, active, spec, ids))


def _passing(
    active: frozenset[str], spec: FilterMemo, ids: list[int], name: str
) -> list[bool] | None:
    """Whether each node passes the node-wise filter `name`, from the remembered
    outcomes; None when its Filter does not run for this pod."""
    if name not in active:
        return None
    return passes_of(spec, ids, name)
