"""One scheduling cycle's decision: findNodesThatFitPod (with the pods nominated to a
node), prioritizeNodes, selectHost, the Diagnosis of the nodes that do not fit, and
RunPostFilterPlugins (DefaultPreemption) when none does.

Port of schedule_one.go: findNodesThatFitPod, prioritizeNodes, selectHost. Upstream
evaluates node by node; here the filter phase is worked out per key (a node's filter
outcome and each class-wise plugin's verdict), the status maps, feasible nodes and
reasons once per key, and kept with the pod spec while nothing they read changed.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from itertools import compress
from operator import add
from typing import Any, NamedTuple

from webhook.api.kube import RawObj
from webhook.scheduler.framework.memo import (
    FilterMemo,
    memo_of,
)
from webhook.scheduler.framework.preemption import (
    PREEMPT_NEVER,
    Preemption,
    pod_priority,
    resolve_priority,
)
from webhook.scheduler.framework.runtime.filter import outcomes_of, outcomes_view
from webhook.scheduler.framework.runtime.framework import PreparedFilters
from webhook.scheduler.framework.runtime.score import (
    best_position,
    run_score_plugins,
    score_map,
    sums_by_classes,
)
from webhook.scheduler.framework.runtime.verdicts import Last, node_verdicts
from webhook.scheduler.framework.sampling import Sampler, Scan
from webhook.scheduler.framework.snapshot import NodeTable, Snapshot
from webhook.scheduler.framework.types import (
    FILTER_OUTCOMES,
    SUCCESS,
    Code,
    NodeVerdict,
    Status,
)
from webhook.scheduler.plugins.defaultpreemption import nominated, preempt
from webhook.scheduler.profile import Framework

__all__ = [
    "Diagnosis",
    "FitResult",
    "Priorities",
    "Sampled",
    "find_nodes_that_fit_pod",
    "prioritize_nodes",
    "run_post_filter_plugins",
    "sample",
    "select_best_host",
    "select_host",
    "sampled_sums",
    "select_sampled_host",
    "with_nominated_pods",
]


class Diagnosis(NamedTuple):
    """upstream's Diagnosis (which plugin failed each node, and why), worked out by
    classes of nodes: each node's key (its node-wise filters' outcome and the
    class-wise plugins' verdicts), and per key what every node holding it gets. Kept
    with the pod spec's outcomes (FilterMemo.derived) and reused while what it was
    derived from is unchanged.

    ids, of_node, slots, class_key, filter_names: what it was derived from (the
    outcome id per node, the node classes of the labels class-wise plugins read, the
    verdict row of each class, the class-wise plugins' names and each row's verdicts,
    the profile's filter order); keys[i]: node i's key;
    per_key: key -> (feasible, status map, the reasons its failures count under);
    counts: key -> nodes holding it; feasible: the positions of the feasible nodes;
    reasons: failure reason -> nodes, sorted.
    """

    ids: list[int]
    of_node: list[int] | None
    slots: list[int]
    class_key: tuple[Any, ...]
    filter_names: tuple[str, ...]
    keys: list[int]
    per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]]
    counts: dict[int, int]
    feasible: list[int]
    reasons: dict[str, int]


class FitResult(NamedTuple):
    """What the filter phase of one decision leaves for the score phase."""

    prepared: PreparedFilters
    table: NodeTable
    shared: FilterMemo
    diagnosis: Diagnosis


def find_nodes_that_fit_pod(pod: RawObj, snapshot: Snapshot, fw: Framework) -> FitResult:
    """Every filter of `fw` on every node, no short-circuit, grouped: the node-wise
    plugins' outcomes remembered per pod spec (framework/runtime/filter.py), the
    class-wise plugins' (types.ClassFilter) judged once per node class of the labels
    they read, and both combined per key (Diagnosis).

    Port of schedule_one.go: findNodesThatFitPod (RunPreFilterPlugins, then
    findNodesThatPassFilters over every node).
    """
    prepared = fw.filters.prepare(pod, snapshot)
    table = snapshot.node_table()
    memo = memo_of(snapshot)
    spec, ids = outcomes_of(prepared, snapshot, table)
    # What the node-wise filters answered, for class-wise plugins whose PreFilter
    # reads the same rule (PodTopologySpread's node inclusion and node affinity).
    prepared.state[FILTER_OUTCOMES] = outcomes_view(prepared, table, spec, ids)
    # A class-wise plugin's Filter reads only the node's values for a few labels:
    # judge each distinct set of values once. rows[s]: one verdict per class-wise
    # plugin; slots[k]: the row of node class k.
    class_wise = prepared.class_wise
    rows: list[tuple[Status, ...]] = [(SUCCESS,) * len(class_wise)]
    of_node: list[int] | None = None
    slots: list[int] = []
    state = prepared.state
    label_keys = tuple(
        dict.fromkeys(k for plugin in class_wise for k in plugin.filter_label_keys(state))
    )
    if class_wise and not label_keys:
        # Nothing read of any node (a PreFilter state that fails every node alike).
        rows = [tuple(plugin.filter_classes(state, (), [()])[0] for plugin in class_wise)]
    elif class_wise:
        classes = memo.node_classes(label_keys, (False,) * len(label_keys), table)
        columns = [
            plugin.filter_classes(state, label_keys, classes.values) for plugin in class_wise
        ]
        # The verdicts are a few shared Status objects: tell them apart by identity.
        if len(columns) == 1:
            # One verdict per class (a class per node under a hostname constraint):
            # rows are made for the few distinct verdicts only.
            identities: list[Any] = list(map(id, columns[0]))
            distinct = dict(zip(identities, columns[0], strict=True))
            by_identity = {i: (status,) for i, status in distinct.items()}
        else:
            identities = [tuple(map(id, row)) for row in zip(*columns, strict=True)]
            by_identity = dict(zip(identities, zip(*columns, strict=True), strict=True))
        rows = list(by_identity.values())
        if len(rows) > 1:
            slot = {identity: i for i, identity in enumerate(by_identity)}
            slots = list(map(slot.__getitem__, identities))
            of_node = classes.of_node
    names = tuple(plugin.name for plugin in class_wise)
    diagnosis = _diagnose(fw, spec, memo.shared, ids, of_node, slots, names, rows)
    return FitResult(prepared, table, memo.shared, diagnosis)


def with_nominated_pods(
    pod: RawObj, snapshot: Snapshot, fw: Framework, fit: FitResult
) -> FitResult:
    """`fit` with the nodes where the pods nominated there (of equal or higher priority)
    leave this pod no room failing, each with every plugin's status once they are
    counted: the first pass of RunFilterPluginsWithNominatedPods (the second, without
    them, is `fit` itself). The changed Diagnosis is this decision's only, never kept.

    Port of runtime/framework.go: RunFilterPluginsWithNominatedPods.
    """
    blocked = nominated(pod, snapshot, fit.prepared, fw.filter_names)
    if not blocked:
        return fit
    diagnosis = fit.diagnosis
    keys, per_key = list(diagnosis.keys), dict(diagnosis.per_key)
    # Keys of their own, below every key the grouped runtime draws (those are >= 0).
    fresh = min(per_key, default=0)
    for name, statuses in blocked.items():
        i = fit.table.position.get(name)
        if i is not None:
            fresh -= 1
            failed = tuple(r for s in statuses.values() if not s.ok for r in s.reasons)
            keys[i], per_key[fresh] = fresh, (False, statuses, failed)
    counts = dict(Counter(keys))
    per_key = {key: per_key[key] for key in counts}
    return fit._replace(
        diagnosis=diagnosis._replace(
            keys=keys,
            per_key=per_key,
            counts=counts,
            feasible=_positions(keys, per_key),
            reasons=_reasons(per_key, counts),
        )
    )


def run_post_filter_plugins(
    pod: RawObj,
    snapshot: Snapshot,
    fw: Framework,
    fit: FitResult,
    verdicts: list[NodeVerdict],
    sampler: Sampler | None = None,
    shortcut: bool = True,
) -> Preemption | None:
    """DefaultPreemption's nomination and victims when no node fits the pod and the
    profile runs it; None otherwise (it fits, preempts nowhere, or may not preempt).
    sampler: a sampled run's (the nodes in its tree's order, its random offset).

    When no bound pod has a lower priority than the pod, no node has a victim and the
    answer is None at once (shortcut False: the whole dry run, the property tests'
    reference). Exact: SelectVictimsOnNode finds no victim on any node then; in a
    sampled run the offset the dry run would draw is drawn (see _no_victims).

    Port of schedule_one.go: schedulingCycle's RunPostFilterPlugins.
    """
    if fit.diagnosis.feasible or fw.post_filter is None:
        return None
    if shortcut and _no_victims(pod, snapshot, verdicts, sampler):
        return None
    if sampler is None:
        return preempt(fw.post_filter, pod, snapshot, fit.prepared, fw.filter_names, verdicts)
    return preempt(
        fw.post_filter,
        pod,
        snapshot,
        fit.prepared,
        fw.filter_names,
        verdicts,
        nodes=sampler.nodes_in_order(fit.table),
        offset=sampler.offset,
    )


def _no_victims(
    pod: RawObj, snapshot: Snapshot, verdicts: list[NodeVerdict], sampler: Sampler | None
) -> bool:
    """Whether preemption finds no victim anywhere without a dry run: every bound pod's
    priority is at least the pod's (the snapshot keeps the lowest). A sampled run's
    dry run would still draw its random offset over the potential nodes (those whose
    first failing filter says Unschedulable) when the pod may preempt: that draw is
    made here, so the run's draws stay those of the whole dry run; a pod nominated to a
    node takes the whole path (its eligibility reads that node)."""
    floor = snapshot.lowest_priority()
    if floor is None:
        return False
    lowest, defaulted = floor
    if defaulted:  # pods with the global default class's priority (0 without one)
        lowest = min(lowest, pod_priority({"spec": {}}, snapshot))
    priority, policy = resolve_priority(pod, snapshot)
    if lowest < priority:
        return False
    if sampler is None or policy == PREEMPT_NEVER:
        return True
    status = pod.get("status")
    if isinstance(status, dict) and status.get("nominatedNodeName"):
        return False
    potential = 0
    for v in verdicts:
        if not v.feasible:
            first = next((s for s in v.filters.values() if not s.ok), None)
            if first is not None and first.code is Code.UNSCHEDULABLE:
                potential += 1
    if potential:
        sampler.offset(potential)
    return True


def _diagnose(
    fw: Framework,
    spec: FilterMemo,
    shared: FilterMemo,
    ids: list[int],
    of_node: list[int] | None,
    slots: list[int],
    names: tuple[str, ...],
    rows: list[tuple[Status, ...]],
) -> Diagnosis:
    """The filter phase's keys and what each key gets (see Diagnosis): the spec's last
    one when nothing it reads changed, updated on the moved nodes only when just they
    did, else worked out afresh."""
    class_key = (names, tuple(tuple((s.code, s.reason, s.parts) for s in row) for row in rows))
    last: Diagnosis | None = spec.derived
    if (
        last is not None
        and last.of_node is of_node
        and last.class_key == class_key
        and last.filter_names == fw.filter_names
        and last.slots == slots
    ):
        if last.ids is ids:
            return last
        step = spec.step
        if step is not None and step[0] is last.ids:
            return _rediagnose(last, ids, step[1], spec, shared, fw, names, rows)
    width = len(rows)
    keys: list[int]
    if of_node is None:
        keys = ids
    elif any(ids):
        keys = list(map(add, map(width.__mul__, ids), map(slots.__getitem__, of_node)))
    else:  # every node passes the other filters (outcome 0)
        keys = list(map(slots.__getitem__, of_node))
    counts = dict(Counter(keys))
    per_key = {key: _key_verdict(key, spec, shared, fw, names, rows) for key in counts}
    feasible = _positions(keys, per_key)
    made = Diagnosis(
        ids,
        of_node,
        slots,
        class_key,
        fw.filter_names,
        keys,
        per_key,
        counts,
        feasible,
        _reasons(per_key, counts),
    )
    spec.derived = made
    return made


def _rediagnose(
    last: Diagnosis,
    ids: list[int],
    moved: list[int],
    spec: FilterMemo,
    shared: FilterMemo,
    fw: Framework,
    names: tuple[str, ...],
    rows: list[tuple[Status, ...]],
) -> Diagnosis:
    """`last` with the keys of the `moved` nodes worked out again (their outcome ids
    changed; nothing else did)."""
    width, of_node, slots = len(rows), last.of_node, last.slots
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
            per_key[new] = _key_verdict(new, spec, shared, fw, names, rows)
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
    key: int,
    spec: FilterMemo,
    shared: FilterMemo,
    fw: Framework,
    names: tuple[str, ...],
    rows: list[tuple[Status, ...]],
) -> tuple[bool, dict[str, Status], tuple[str, ...]]:
    """(feasible, status map, failure reasons) of the nodes holding `key`: one status
    map per (node-wise filters' outcome, class-wise plugins' verdicts), shared by every
    decision of the snapshot."""
    o, c = divmod(key, len(rows))
    outcome, row = spec.outcomes[o], rows[c]
    content = tuple((s.code, s.reason, s.parts) for s in row)
    result: tuple[bool, dict[str, Status], tuple[str, ...]] = shared.share(
        ("filters", fw.filter_names, _content(outcome), names, content),
        _merged,
        fw,
        outcome,
        dict(zip(names, row, strict=True)),
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


def _content(outcome: dict[str, Status]) -> tuple[Any, ...]:
    """What a filter outcome says, as a key (Status equality leaves `parts` out)."""
    return tuple((name, s.code, s.reason, s.parts) for name, s in outcome.items())


def _merged(
    fw: Framework, others: dict[str, Status], class_wise: dict[str, Status]
) -> tuple[bool, dict[str, Status], tuple[str, ...]]:
    """(feasible, the status map of a node in the profile's filter order, the reasons
    its failures count under)."""
    statuses = {name: class_wise.get(name) or others.get(name, SUCCESS) for name in fw.filter_names}
    failed = [s for s in statuses.values() if s.code is not Code.SUCCESS]
    return not failed, statuses, tuple(r for s in failed for r in s.reasons)


class Priorities(NamedTuple):
    """What prioritizeNodes leaves for selectHost.

    scored: the positions of the nodes with scores (the feasible ones; none when
    scoring failed); rows: each one's row of scores (None: the same for all);
    row_info: row -> (score map, weighted sum); error: what failed the cycle.
    """

    scored: list[int]
    rows: list[Any] | None
    row_info: dict[Any, tuple[dict[str, int], int]]
    error: str | None


def prioritize_nodes(
    fw: Framework, snapshot: Snapshot, fit: FitResult, nodes: list[int] | None = None
) -> Priorities:
    """Every score plugin's normalised score on each feasible node (or on `nodes`, the
    positions a sampled cycle found, ascending), and its weighted sum.

    Port of schedule_one.go: prioritizeNodes (RunPreScorePlugins, RunScorePlugins).
    """
    feasible = fit.diagnosis.feasible if nodes is None else nodes
    if not feasible:
        return Priorities([], None, {}, None)
    ranked = run_score_plugins(
        fw.scores, fw.score_names, fit.prepared, snapshot, fit.table, feasible
    )
    if isinstance(ranked, str):
        return Priorities([], None, {}, ranked)
    order, rows, full_rows, sum_of = ranked
    shared = fit.shared
    # Nodes with the same scores share one map, and so do later decisions.
    row_info = {
        row: (shared.share(("scores", order, full), score_map, order, full), sum_of[row])
        for row, full in full_rows.items()
    }
    return Priorities(feasible, rows, row_info, None)


def select_host(fit: FitResult, priorities: Priorities) -> Last:
    """Every node's verdict and the feasible nodes sharing the highest weighted sum,
    sorted (kube-scheduler picks one of them at random; the first is reported).

    Port of schedule_one.go: selectHost (ties kept, not sampled).
    """
    return node_verdicts(
        fit.table.names,
        fit.diagnosis.keys,
        fit.diagnosis.per_key,
        priorities.scored,
        priorities.rows,
        priorities.row_info,
        fit.shared,
    )


def select_best_host(fw: Framework, snapshot: Snapshot, fit: FitResult) -> str | None:
    """The node select_host reports first (the first feasible node, in table order,
    with the highest weighted sum): prioritizeNodes and selectHost without the score
    rows, score maps and verdicts, for a caller that needs only the chosen node. None
    when no node fits or scoring fails the cycle."""
    diagnosis = fit.diagnosis
    if not diagnosis.feasible:
        return None
    ok = {key: verdict[0] for key, verdict in diagnosis.per_key.items()}
    best = best_position(
        fw.scores, fit.prepared, snapshot, fit.table, diagnosis.feasible, diagnosis.keys, ok
    )
    if isinstance(best, str):
        return None
    return fit.table.names[best]


class Sampled(NamedTuple):
    """A sampled cycle's scan and choice (see framework/sampling.py).

    scan: what findNodesThatPassFilters did (None when the pod's nominated node fits:
    upstream tries it first and looks no further); scored: the positions scored,
    ascending; chosen: the node selectHost drew, None when none fits or scoring failed;
    nominated: the pod's status.nominatedNodeName when it was taken at once.
    """

    scan: Scan | None
    scored: list[int]
    chosen: str | None
    nominated: str | None = None


def sample(
    pod: RawObj,
    fit: FitResult,
    fw: Framework,
    sampler: Sampler,
    percentage: int,
    snapshot: Snapshot | None = None,
) -> Sampled:
    """The nodes a sampled cycle scores: the pod's nominated node alone when it passes
    every filter (evaluateNominatedNode, tried before any other and without moving the
    start index), else those findNodesThatPassFilters finds from the run's start index
    (the sampler's). `chosen` is set only when the answer needs no scores.

    Port of schedule_one.go: findNodesThatFitPod (the nominated node, then the scan)."""
    status = pod.get("status")
    nominated = status.get("nominatedNodeName") if isinstance(status, dict) else None
    table = fit.table
    feasible = fit.diagnosis.feasible
    if isinstance(nominated, str) and nominated:
        at = table.position.get(nominated)
        if at is not None and fit.diagnosis.per_key[fit.diagnosis.keys[at]][0]:
            return Sampled(None, [at], nominated, nominated)
    scan = sampler.find(table, feasible, percentage, bool(fw.scores), snapshot)
    scored = sorted(scan.found)
    # schedulePod: one feasible node is the answer, no score plugin runs.
    chosen = table.names[scan.found[0]] if len(scan.found) == 1 else None
    return Sampled(scan, scored, chosen)


def select_sampled_host(
    sampled: Sampled, names: list[str], sums: list[int], sampler: Sampler
) -> str | None:
    """The node selectHost picks among the scanned nodes (`sums`: the weighted sum of
    each of sampled.scored): one of the best at random, ties met in the scan's order.

    Port of schedule_one.go: selectHost."""
    if sampled.chosen is not None or sampled.scan is None or not sampled.scan.found:
        return sampled.chosen
    best = max(sums)
    scored = sampled.scored
    if sums.count(best) == 1:  # no tie, no draw
        return names[scored[sums.index(best)]]
    # The tied nodes in the order the scan met them, one drawn as Sampler.pick draws.
    tied = set(compress(scored, map(best.__eq__, sums)))
    met = list(filter(tied.__contains__, sampled.scan.found))
    return names[met[sampler.reservoir(len(met))]]


def sampled_sums(
    fw: Framework, snapshot: Snapshot, fit: FitResult, scored: list[int]
) -> list[int] | None:
    """The weighted sums of the scored nodes alone (select_best_host's fast path for a
    sampled cycle); None when scoring fails the cycle."""
    sums = sums_by_classes(fw.scores, fit.prepared, snapshot, fit.table, scored)
    return None if isinstance(sums, str) else list(sums)
