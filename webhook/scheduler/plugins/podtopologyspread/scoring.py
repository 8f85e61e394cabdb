"""PodTopologySpread PreScore, Score and NormalizeScore: the ScheduleAnyway constraints.

A node's raw score sums, over the constraints whose key it carries,
    matching pods in its domain * log(number of domains + 2) + (maxSkew - 1)
rounded half away from zero; fewer matching pods is better, so NormalizeScore
maps the smallest raw score to 100 with Go's int64 arithmetic.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
) -> None:
    """Fill per_domain[i] (its domains already present, at 0) with the matching pods
    over the included nodes of each domain, for the non-hostname constraints."""
    nodes = snapshot.nodes
    for i, c in enumerate(constraints):
        domains = per_domain[i]
        if c.topology_key == LABEL_HOSTNAME or not domains:
            continue  # hostname counts are read per node at Score
        key, per_node = c.topology_key, counts[i]
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

    The same arithmetic as pre_score, raw_scores and normalize_scores, done once
    per node class (the values of the constraints' keys, hostname by presence)
    rather than per node: a node's score depends on nothing else but its own
    matching pods under hostname constraints, so only the few nodes holding
    such pods are scored one by one.
    """
    if isinstance(pc, Status) or not snapshot.nodes or not pc.constraints or not feasible:
        return [0] * len(feasible)
    constraints = pc.constraints
    require_all = not (pc.defaulted and pc.system_defaulted)
    keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
    classes = memo_of(snapshot).node_classes(keys, tuple(k == LABEL_HOSTNAME for k in keys), table)
    of_node, class_values = classes.of_node, classes.values

    # class -> how many feasible nodes it holds, classes in the order first met
    members = Counter(map(of_node.__getitem__, feasible))
    ignored = (
        {k for k in members if any(v is ABSENT for v in class_values[k])} if require_all else set()
    )
    per_domain: list[dict[str, int]] = [{} for _ in constraints]
    zonal = [
        (i, keys.index(c.topology_key))
        for i, c in enumerate(constraints)
        if c.topology_key != LABEL_HOSTNAME
    ]
    for k in members:
        if k not in ignored:
            values = class_values[k]
            for i, j in zonal:
                # A node without the key (System defaults only) falls in the "" domain.
                per_domain[i].setdefault("" if values[j] is ABSENT else values[j], 0)
    scored = len(feasible) - sum(members[k] for k in ignored)
    weights = [
        topology_normalizing_weight(
            scored if c.topology_key == LABEL_HOSTNAME else len(per_domain[i])
        )
        for i, c in enumerate(constraints)
    ]
    counts = tuple(match_counts(snapshot, pod, c) for c in constraints)
    with_keys = snapshot.key_index(keys)[0] if require_all else None
    _count_domains(snapshot, constraints, per_domain, counts, with_keys, inclusion)

    # (key position, per-node counts (hostname) or per-domain scores, weight, maxSkew - 1)
    plan: list[tuple[int, Mapping[str, int] | None, dict[str, float], float, int]] = []
    for i, c in enumerate(constraints):
        weight, rest = weights[i], c.max_skew - 1
        j = keys.index(c.topology_key)
        if c.topology_key == LABEL_HOSTNAME:
            plan.append((j, counts[i], {}, weight, rest))
        else:
            by_domain = {
                value: score_for_count(count, c.max_skew, weight)
                for value, count in per_domain[i].items()
            }
            plan.append((j, None, by_domain, weight, rest))

    def raw(values: ClassValues, name: str | None) -> int:
        # raw_scores for one node: terms added in constraint order, as float64s.
        score = 0.0
        for j, per_node, by_domain, weight, rest in plan:
            value = values[j]
            if per_node is not None:
                if value is True:  # the hostname label is there, not null
                    score += (per_node.get(name, 0) if name else 0) * weight + rest
            elif value is not ABSENT and value is not None:
                score += by_domain.get(value, rest)
        return go_round(score)

    # Nodes holding matching pods under a hostname constraint are scored alone.
    names, position = table.names, table.position
    feasible_set = set(feasible)
    alone: dict[int, int] = {}
    for i, c in enumerate(constraints):
        if c.topology_key == LABEL_HOSTNAME:
            for name, n in counts[i].items():
                p = position.get(name)
                if n and p in feasible_set and p not in alone and of_node[p] not in ignored:
                    alone[p] = raw(class_values[of_node[p]], names[p])
    alone_per_class = Counter(of_node[p] for p in alone)
    # Every other node of a class scores as one holding no matching pod.
    class_raw = {k: raw(class_values[k], None) for k in members if k not in ignored}
    counted = [s for k, s in class_raw.items() if members[k] > alone_per_class[k]]
    counted += alone.values()
    min_score = min(counted, default=INT64_MAX)
    max_score = max(0, max(counted, default=0))

    def normalized(s: int) -> int:
        if s == INVALID_SCORE:
            return 0
        if max_score == 0:
            return MAX_NODE_SCORE
        return go_div(MAX_NODE_SCORE * (max_score + min_score - s), max_score)

    by_class = [0] * len(class_values)  # ignored classes stay at 0
    for k, s in class_raw.items():
        by_class[k] = normalized(s)
    out = list(map(by_class.__getitem__, map(of_node.__getitem__, feasible)))
    for p, s in alone.items():
        out[bisect_left(feasible, p)] = normalized(s)
    return out
