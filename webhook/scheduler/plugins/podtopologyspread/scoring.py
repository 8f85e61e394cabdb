"""PodTopologySpread PreScore, Score and NormalizeScore: the ScheduleAnyway constraints.

A node's raw score sums, over the constraints whose key it carries,
    matching pods in its domain * log(number of domains + 2) + (maxSkew - 1)
rounded half away from zero; fewer matching pods is better, so NormalizeScore
maps the smallest raw score to 100 with Go's int64 arithmetic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.gomath import go_div, go_round
from webhook.scheduler.framework.memo import memo_of
from webhook.scheduler.framework.snapshot import ABSENT, ClassValues, NodeInfo, NodeTable, Snapshot
from webhook.scheduler.framework.types import MAX_NODE_SCORE, Status
from webhook.scheduler.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
    Constraint,
    NodeInclusion,
    PodConstraints,
    constraints_or_error,
    domain_match_counts,
    match_counts,
)

INT64_MAX = 2**63 - 1
# NormalizeScore's marker for ignored nodes. CAVEAT: upstream compares scores
# against it, so a node whose own raw score is -1 (only possible with an invalid
# maxSkew < 1) also ends at 0.
INVALID_SCORE = -1


@dataclass(frozen=True)
class PreScoreState:
    """What PreScore computed for one incoming pod and its feasible nodes.

    constraints: the pod's ScheduleAnyway constraints (or its defaults).
    ignored_nodes: feasible nodes lacking a topology key, scored 0 (never when
        the constraints are System defaults: those nodes still get hostname scores).
    tp_value_to_pod_counts[i]: for a non-hostname constraint i, domain value of a
        scored feasible node -> matching pods over all included nodes of that
        domain; empty for hostname constraints, counted per node at Score.
    weights[i]: log(number of those domains + 2); for hostname, the number of
        scored feasible nodes stands for the number of domains.
    node_counts[i]: node name -> matching pods on it, for constraint i.
    """

    constraints: tuple[Constraint, ...]
    ignored_nodes: frozenset[str]
    tp_value_to_pod_counts: tuple[dict[str, int], ...]
    weights: tuple[float, ...]
    node_counts: tuple[Mapping[str, int], ...]


def topology_normalizing_weight(size: int) -> float:
    """Port of scoring.go: topologyNormalizingWeight."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """Port of scoring.go: scoreForCount."""
    return count * weight + (max_skew - 1)


def pre_score(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs,
    feasible: Sequence[NodeInfo],
    inclusion: NodeInclusion | None = None,
) -> PreScoreState | Status | None:
    """PreScore: None when the plugin skips (no soft constraints, no nodes), a
    Status when the constraints cannot be parsed.

    Port of scoring.go: initPreScoreState.
    """
    if not snapshot.nodes:
        return None
    pc = constraints_or_error(pod, snapshot, args, SCHEDULE_ANYWAY)
    if isinstance(pc, Status):
        return pc
    constraints = pc.constraints
    if not constraints:
        return None
    # Only System defaults let nodes without every key be scored (hostname
    # spreading on zoneless nodes); such nodes fall in the "" domain of the
    # other keys, which counts towards their weight.
    require_all = not (pc.defaulted and pc.system_defaulted)
    inclusion = inclusion or NodeInclusion(pod)

    keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
    with_keys = snapshot.key_index(keys)[0] if require_all else None
    ignored: set[str] = set()
    per_domain: list[dict[str, int]] = [{} for _ in constraints]
    # (constraint index, position of its key) for the constraints counted per domain
    zonal = [
        (i, keys.index(c.topology_key))
        for i, c in enumerate(constraints)
        if c.topology_key != LABEL_HOSTNAME
    ]
    for info in feasible:
        if with_keys is not None:
            values = with_keys.get(info.name)
            if values is None:
                ignored.add(info.name)
                continue
        else:
            values = tuple(info.labels.get(k, "") for k in keys)
        for i, j in zonal:
            per_domain[i].setdefault(values[j], 0)
    weights = tuple(
        topology_normalizing_weight(
            len(feasible) - len(ignored) if c.topology_key == LABEL_HOSTNAME else len(per_domain[i])
        )
        for i, c in enumerate(constraints)
    )

    counts = tuple(match_counts(snapshot, pod, c) for c in constraints)
    _count_domains(snapshot, constraints, per_domain, counts, with_keys, inclusion)
    return PreScoreState(
        constraints=constraints,
        ignored_nodes=frozenset(ignored),
        tp_value_to_pod_counts=tuple(per_domain),
        weights=weights,
        node_counts=counts,
    )


def _count_domains(
    snapshot: Snapshot,
    constraints: Sequence[Constraint],
    per_domain: list[dict[str, int]],
    counts: Sequence[Mapping[str, int]],
    with_keys: Mapping[str, tuple[str, ...]] | None,
    inclusion: NodeInclusion,
    pod: RawObj | None = None,
    keys: tuple[str, ...] | None = None,
) -> None:
    """Fill per_domain[i] (its domains already present, at 0) with the matching pods
    over the included nodes of each domain, for the non-hostname constraints.
    with_keys: key_index(keys)'s nodes when only nodes carrying every key count; with
    the pod and those keys, the snapshot's per-domain counts serve."""
    nodes = snapshot.nodes
    for i, c in enumerate(constraints):
        domains = per_domain[i]
        if c.topology_key == LABEL_HOSTNAME or not domains:
            continue  # hostname counts are read per node at Score
        key, per_node = c.topology_key, counts[i]
        if pod is not None and keys is not None and inclusion.trivial(c):
            # Every node carrying the keys takes part: the snapshot's per-domain counts,
            # when no node lacking them counts (in the "" domain, System defaults only).
            by_domain: dict[Any, int] | None = None
            if with_keys is not None:
                by_domain = domain_match_counts(snapshot, pod, c, keys)[keys.index(key)]
            elif "" not in domains:
                by_domain = domain_match_counts(snapshot, pod, c, (key,))[0]
            if by_domain is not None:
                for value in domains:
                    domains[value] += by_domain.get(value, 0)
                continue
        candidates: list[tuple[str, NodeInfo | None]]
        if inclusion.trivial(c):
            # Every node (carrying the keys) takes part: walk only nodes with matches.
            candidates = [(name, nodes.get(name)) for name in per_node]
        else:
            candidates = list(nodes.items())
        for name, candidate in candidates:
            if candidate is None or (with_keys is not None and name not in with_keys):
                continue
            if not inclusion.includes(c, candidate):
                continue
            # A node without the key (System defaults only) falls in the "" domain.
            value = candidate.labels.get(key, "")
            if value in domains:
                domains[value] += per_node.get(name, 0)


def raw_scores(state: PreScoreState, infos: Sequence[NodeInfo]) -> dict[str, int]:
    """Score for each node: the raw (not yet normalised) score, node name -> score.

    Per constraint, a node carrying the key earns count * weight + (maxSkew - 1),
    summed in constraint order as upstream adds its float64s, then rounded.
    """
    # (key, per-domain score or None, per-node counts or None, weight, maxSkew - 1)
    plan: list[tuple[str, dict[str, float] | None, Mapping[str, int] | None, float, int]] = []
    for i, c in enumerate(state.constraints):
        weight, rest = state.weights[i], c.max_skew - 1
        if c.topology_key == LABEL_HOSTNAME:
            plan.append((c.topology_key, None, state.node_counts[i], weight, rest))
        else:
            domain_scores = {
                value: score_for_count(count, c.max_skew, weight)
                for value, count in state.tp_value_to_pod_counts[i].items()
            }
            plan.append((c.topology_key, domain_scores, None, weight, rest))
    ignored = state.ignored_nodes
    rounded: dict[float, int] = {}
    out: dict[str, int] = {}
    for info in infos:
        name = info.name
        if name in ignored:
            out[name] = 0
            continue
        labels = info.labels
        score = 0.0
        for key, by_domain, per_node, weight, rest in plan:
            value = labels.get(key)
            if value is None:
                continue
            if per_node is not None:
                score += per_node.get(name, 0) * weight + rest
            elif by_domain is not None:
                score += by_domain.get(value, rest)
        hit = rounded.get(score)
        if hit is None:
            hit = rounded[score] = go_round(score)
        out[name] = hit
    return out


def score_node(state: PreScoreState, info: NodeInfo) -> int:
    """Score: the raw (not yet normalised) score of one feasible node.

    Port of scoring.go: Score.
    """
    return raw_scores(state, [info])[info.name]


def normalize_scores(state: PreScoreState, raw: Mapping[str, int]) -> dict[str, int]:
    """NormalizeScore: raw scores of the feasible nodes -> 0..100, least crowded highest.

    Port of scoring.go: NormalizeScore.
    """
    ignored = state.ignored_nodes
    scores = {name: INVALID_SCORE if name in ignored else s for name, s in raw.items()}
    counted = [s for name, s in scores.items() if name not in ignored]
    min_score = min(counted, default=INT64_MAX)
    max_score = max(0, max(counted, default=0))
    if max_score == 0:
        return {name: 0 if s == INVALID_SCORE else MAX_NODE_SCORE for name, s in scores.items()}
    return {
        name: 0
        if s == INVALID_SCORE
        else go_div(MAX_NODE_SCORE * (max_score + min_score - s), max_score)
        for name, s in scores.items()
    }


def score_nodes(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs,
    feasible: Sequence[NodeInfo],
    inclusion: NodeInclusion | None = None,
) -> dict[str, int] | Status:
    """PreScore + Score + NormalizeScore over `feasible`: node name -> 0..100.

    When the plugin skips (no ScheduleAnyway constraint), it adds nothing to any
    node: every feasible node gets 0.
    """
    state = pre_score(pod, snapshot, args, feasible, inclusion)
    if isinstance(state, Status):
        return state
    if state is None:
        return {info.name: 0 for info in feasible}
    return normalize_scores(state, raw_scores(state, feasible))


class SoftClasses(NamedTuple):
    """The nodes PodTopologySpread's Score cannot tell apart, for one decision.

    of_node[i]: node i's class: its label class (the values of the constraints' keys,
    hostname by presence) when it holds no matching pod under a hostname constraint,
    else len(values) + an index of `held`; values[k]: label class k's values; held[h]:
    (label class, matching pods under each hostname constraint, in order) of the nodes
    of class len(values) + h; ignored: the label classes lacking a key (scored 0,
    unless the constraints are System defaults); counts[i]: node name -> matching
    pods, for constraint i; keys: the constraints' topology keys, once each, in order;
    constraints: the ScheduleAnyway constraints (or their defaults); pod: the incoming pod.
    """

    of_node: list[int]
    values: list[ClassValues]
    held: list[tuple[int, tuple[int, ...]]]
    ignored: frozenset[int]
    counts: tuple[Mapping[str, int], ...]
    keys: tuple[str, ...]
    constraints: PodConstraints
    pod: RawObj


def soft_classes(
    pod: RawObj, snapshot: Snapshot, pc: PodConstraints | Status, table: NodeTable
) -> SoftClasses | None:
    """The score classes of every node of `table` for the ScheduleAnyway constraints
    `pc`; None when the plugin gives every node 0 (no constraint, no node, or the
    constraints fail)."""
    if isinstance(pc, Status) or not snapshot.nodes or not pc.constraints:
        return None
    constraints = pc.constraints
    require_all = not (pc.defaulted and pc.system_defaulted)
    keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
    classes = memo_of(snapshot).node_classes(keys, tuple(k == LABEL_HOSTNAME for k in keys), table)
    of_node, values = classes.of_node, classes.values
    ignored = (
        frozenset(k for k, v in enumerate(values) if any(x is ABSENT for x in v))
        if require_all
        else frozenset()
    )
    counts = tuple(match_counts(snapshot, pod, c) for c in constraints)
    hostname = [counts[i] for i, c in enumerate(constraints) if c.topology_key == LABEL_HOSTNAME]
    # The nodes holding matching pods under a hostname constraint, by their counts.
    position, names, own = table.position, table.names, len(values)
    labels = of_node
    held: dict[tuple[int, tuple[int, ...]], int] = {}
    # node position -> its counts under each hostname constraint
    holding: dict[int, tuple[int, ...]]
    if len(hostname) == 1:
        holding = {
            p: (n,)
            for name, n in hostname[0].items()
            if n and (p := position.get(name)) is not None
        }
    else:
        holding = {
            p: tuple(per_node.get(names[p], 0) for per_node in hostname)
            for per_node in hostname
            for name, n in per_node.items()
            if n and (p := position.get(name)) is not None
        }
    if holding:
        of_node = list(labels)
        for p, on_node in holding.items():
            label = labels[p]
            if label in ignored:
                continue
            key = (label, on_node)
            k = held.get(key)
            if k is None:
                k = held[key] = own + len(held)
            of_node[p] = k
    return SoftClasses(of_node, values, list(held), ignored, counts, keys, pc, pod)


def soft_scores(
    soft: SoftClasses,
    snapshot: Snapshot,
    members: Iterable[int],
    counts_of: Mapping[int, int],
    total: int,
    inclusion: NodeInclusion,
) -> dict[int, int]:
    """PreScore, Score and NormalizeScore once per class: class -> the normalised score of
    its nodes, for the classes of `members` (those holding feasible nodes); total: the
    feasible nodes; counts_of: how many each class holds (read for ignored classes only).

    The same arithmetic as pre_score, raw_scores and normalize_scores: a node's score
    depends on nothing but its label class and, under hostname constraints, its own
    matching pods.
    """
    constraints, keys = soft.constraints.constraints, soft.keys
    values, ignored, held = soft.values, soft.ignored, soft.held
    own = len(values)
    members = list(members)
    # the label classes holding feasible nodes
    per_label = dict.fromkeys(k if k < own else held[k - own][0] for k in members)
    scored = total - sum(
        counts_of[k] for k in members if (k if k < own else held[k - own][0]) in ignored
    )
    per_domain: list[dict[str, int]] = [{} for _ in constraints]
    zonal = [
        (i, keys.index(c.topology_key))
        for i, c in enumerate(constraints)
        if c.topology_key != LABEL_HOSTNAME
    ]
    for k in per_label:
        if k not in ignored:
            vals = values[k]
            for i, j in zonal:
                # A node without the key (System defaults only) falls in the "" domain.
                per_domain[i].setdefault("" if vals[j] is ABSENT else vals[j], 0)
    weights = [
        topology_normalizing_weight(
            scored if c.topology_key == LABEL_HOSTNAME else len(per_domain[i])
        )
        for i, c in enumerate(constraints)
    ]
    counts = soft.counts
    require_all = not (soft.constraints.defaulted and soft.constraints.system_defaulted)
    with_keys = snapshot.key_index(keys)[0] if require_all else None
    _count_domains(snapshot, constraints, per_domain, counts, with_keys, inclusion, soft.pod, keys)

    # (key position, the hostname constraint's place among them or -1, per-domain
    # scores, weight, maxSkew - 1)
    plan: list[tuple[int, int, dict[str, float], float, int]] = []
    for i, c in enumerate(constraints):
        weight, rest = weights[i], c.max_skew - 1
        j = keys.index(c.topology_key)
        if c.topology_key == LABEL_HOSTNAME:
            plan.append(
                (
                    j,
                    sum(1 for d in constraints[:i] if d.topology_key == LABEL_HOSTNAME),
                    {},
                    weight,
                    rest,
                )
            )
        else:
            by_domain = {
                value: score_for_count(count, c.max_skew, weight)
                for value, count in per_domain[i].items()
            }
            plan.append((j, -1, by_domain, weight, rest))
    none = (0,) * sum(1 for c in constraints if c.topology_key == LABEL_HOSTNAME)

    def raw(vals: ClassValues, on_node: tuple[int, ...]) -> int:
        # raw_scores for one node: terms added in constraint order, as float64s.
        score = 0.0
        for j, h, by_domain, weight, rest in plan:
            value = vals[j]
            if h >= 0:
                if value is True:  # the hostname label is there, not null
                    score += on_node[h] * weight + rest
            elif value is not ABSENT and value is not None:
                score += by_domain.get(value, rest)
        return go_round(score)

    raws: dict[int, int] = {}
    for k in members:
        if k >= own:
            label, on_node = held[k - own]
            raws[k] = raw(values[label], on_node)
        elif k not in ignored:
            raws[k] = raw(values[k], none)
    min_score = min(raws.values(), default=INT64_MAX)
    max_score = max(0, max(raws.values(), default=0))

    def normalized(s: int) -> int:
        if s == INVALID_SCORE:
            return 0
        if max_score == 0:
            return MAX_NODE_SCORE
        return go_div(MAX_NODE_SCORE * (max_score + min_score - s), max_score)

    # ignored classes score 0
    return {k: normalized(raws[k]) if k in raws else 0 for k in members}


def score_classes(
    pod: RawObj,
    snapshot: Snapshot,
    pc: PodConstraints | Status,
    table: NodeTable,
    feasible: Sequence[int],
    inclusion: NodeInclusion,
) -> list[int]:
    """score_nodes for the nodes at positions `feasible` (ascending) of `table`, as a
    list in that order; 0 for each when the plugin skips or its constraints fail.
    Worked out once per class (soft_classes, soft_scores)."""
    soft = soft_classes(pod, snapshot, pc, table)
    if soft is None or not feasible:
        return [0] * len(feasible)
    of_node = soft.of_node
    members = Counter(map(of_node.__getitem__, feasible))
    scores = soft_scores(soft, snapshot, members, members, len(feasible), inclusion)
    return list(map(scores.__getitem__, map(of_node.__getitem__, feasible)))
