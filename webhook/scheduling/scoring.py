"""PodTopologySpread PreScore, Score and NormalizeScore: the ScheduleAnyway constraints.

A node's raw score sums, over the constraints whose key it carries,
    matching pods in its domain * log(number of domains + 2) + (maxSkew - 1)
rounded half away from zero; fewer matching pods is better, so NormalizeScore
maps the smallest raw score to 100 with Go's int64 arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from webhook.config import SpreadArgs
from webhook.kube import RawObj
from webhook.scheduling.common import (
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
    Constraint,
    NodeInclusion,
    constraints_or_error,
    go_div,
    go_round,
    match_counts,
)
from webhook.scheduling.snapshot import NodeInfo, Snapshot
from webhook.scheduling.status import MAX_NODE_SCORE, Status

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
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    return count * weight + (max_skew - 1)


def pre_score(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs,
    feasible: Sequence[NodeInfo],
    inclusion: NodeInclusion | None = None,
) -> PreScoreState | Status | None:
    """PreScore: None when the plugin skips (no soft constraints, no nodes), a
    Status when the constraints cannot be parsed."""
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
    return PreScoreState(
        constraints=constraints,
        ignored_nodes=frozenset(ignored),
        tp_value_to_pod_counts=tuple(per_domain),
        weights=weights,
        node_counts=counts,
    )


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
    """Score: the raw (not yet normalised) score of one feasible node."""
    return raw_scores(state, [info])[info.name]


def normalize_scores(state: PreScoreState, raw: Mapping[str, int]) -> dict[str, int]:
    """NormalizeScore: raw scores of the feasible nodes -> 0..100, least crowded highest."""
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
