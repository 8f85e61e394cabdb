"""InterPodAffinity PreScore, Score and NormalizeScore: preferred terms both ways.

PreScore sums, per (topology key, value):
- +weight for each existing pod matching a preferred affinity term of the incoming
  pod, -weight for each matching one of its preferred anti-affinity terms;
- +hardPodAffinityWeight for each required affinity term of an existing pod the
  incoming pod matches, +weight / -weight for each preferred affinity /
  anti-affinity term of an existing pod it matches.
Score adds up the sums of the node's values; NormalizeScore maps the scores
linearly onto 0..100 between their minimum and maximum.

Port of kube-scheduler's interpodaffinity/scoring.go (newest release read).

CAVEAT: as for Filter (filtering.py), existing pods' terms come from the
incremental ExistingTermsIndex, evaluated once per group of alike terms, and pods
matching the incoming pod's preferred terms from the snapshot's incremental
selector counts: a decision never walks every pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from webhook.api.kube import RawObj, as_dict, pod_labels, pod_namespace
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Status,
)
from webhook.scheduler.plugins.interpodaffinity.common import (
    NAME,
    PREFERRED_AFFINITY,
    PREFERRED_ANTI_AFFINITY,
    REQUIRED_AFFINITY,
    AffinityTerm,
    ExistingTermsIndex,
    all_namespaces,
    matching_pods_per_node,
    merge_namespace_selector,
    namespace_labels,
    parse_pod_terms,
    reads_all_namespaces,
)

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "PreScoreState",
    "normalize_score",
    "pre_score",
    "score_label_keys",
    "score_node",
]

# The CycleState key (scoring.go preScoreStateKey).
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

# framework.MaxInt64 / MinInt64, NormalizeScore's starting points.
_INT64_MAX: Final = 2**63 - 1
_INT64_MIN: Final = -(2**63)

ScoreMap = dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """What PreScore computed (scoring.go preScoreState).

    topology_score: topology key -> value -> summed weight; a key is present as soon
        as one term matched a pod on a node carrying it (even when the sums cancel
        out to 0), and PreScore Skips when no key is present.
    """

    topology_score: ScoreMap


def _add(score: ScoreMap, key: str, value: str, amount: int) -> None:
    by_value = score.setdefault(key, {})
    by_value[value] = by_value.get(value, 0) + amount


def _incoming_term(
    score: ScoreMap,
    term: AffinityTerm,
    sign: int,
    snapshot: Snapshot,
    index: ExistingTermsIndex,
    known: set[str],
) -> None:
    """Port of scoring.go: processTerm for one term of the incoming pod over every
    existing pod (the term's namespaceSelector already unrolled)."""
    namespaces = set(known) if term.selects_all_namespaces else set(term.namespaces)
    per_node = matching_pods_per_node(
        namespaces, term.selector, term.matches_labels, snapshot, index
    )
    key = term.topology_key
    nodes = snapshot.nodes
    for node, count in per_node.items():
        info = nodes.get(node)
        if info is None or not count or key not in info.labels:
            continue
        value = info.labels[key]
        if isinstance(value, str):
            _add(score, key, value, sign * term.weight * count)


def _existing_groups(
    score: ScoreMap,
    index: ExistingTermsIndex,
    kind: str,
    weight: int | None,
    sign: int,
    namespace: str,
    labels: Mapping[str, str],
    ns_labels: Mapping[str, str],
) -> None:
    """Port of scoring.go: processExistingPod for one kind of the existing pods' terms
    (`weight` None: each term's own weight)."""
    for group in index.matching(kind, namespace, labels, ns_labels):
        term = group.term
        amount = sign * (term.weight if weight is None else weight)
        for value, count in group.counts.items():
            _add(score, term.topology_key, value, amount * count)


def _has_preferred_terms(pod: RawObj) -> bool:
    affinity = as_dict(as_dict(pod.get("spec")).get("affinity"))
    return any(
        as_dict(affinity.get(side)).get("preferredDuringSchedulingIgnoredDuringExecution")
        for side in ("podAffinity", "podAntiAffinity")
    )


def pre_score(
    state: CycleState,
    pod: RawObj,
    snapshot: Snapshot,
    index: ExistingTermsIndex,
    hard_pod_affinity_weight: int,
    ignore_preferred_terms_of_existing_pods: bool,
) -> Status:
    """Port of scoring.go: PreScore (Skip when nothing adds to any node's score)."""
    if ignore_preferred_terms_of_existing_pods and not _has_preferred_terms(pod):
        return SKIP
    terms = parse_pod_terms(pod)
    if terms.errors:
        # Ideally never reached: PreFilter rejects the pod first.
        return Status(Code.ERROR, "failed to parse pod: " + terms.error_message())
    namespace = pod_namespace(pod)
    labels = pod_labels(pod)
    score: ScoreMap = {}
    with index.lock:
        index.sync(snapshot)
        own = terms.preferred_affinity + terms.preferred_anti_affinity
        known = all_namespaces(snapshot, index) if reads_all_namespaces(own) else set()
        for t in terms.preferred_affinity:
            _incoming_term(
                score, merge_namespace_selector(t, snapshot, known), 1, snapshot, index, known
            )
        for t in terms.preferred_anti_affinity:
            _incoming_term(
                score, merge_namespace_selector(t, snapshot, known), -1, snapshot, index, known
            )
        ns_labels = namespace_labels(snapshot, namespace)
        if hard_pod_affinity_weight > 0:
            _existing_groups(
                score,
                index,
                REQUIRED_AFFINITY,
                hard_pod_affinity_weight,
                1,
                namespace,
                labels,
                ns_labels,
            )
        _existing_groups(score, index, PREFERRED_AFFINITY, None, 1, namespace, labels, ns_labels)
        _existing_groups(
            score, index, PREFERRED_ANTI_AFFINITY, None, -1, namespace, labels, ns_labels
        )
    if not score:
        return SKIP
    state[PRE_SCORE_STATE_KEY] = PreScoreState(score)
    return SUCCESS


def score_node(state: CycleState, node: NodeInfo) -> tuple[int, Status]:
    """Port of scoring.go: Score (positive for affinity, negative for anti-affinity)."""
    s = state.get(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return 0, Status(
            Code.ERROR, f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found'
        )
    labels = node.labels
    total = 0
    for key, by_value in s.topology_score.items():
        if key in labels:
            total += by_value.get(labels[key], 0)
    return total, SUCCESS


def score_label_keys(state: CycleState) -> tuple[str, ...] | None:
    """The node labels score_node reads (the keys PreScore summed weights for), None
    before PreScore."""
    s = state.get(PRE_SCORE_STATE_KEY)
    return tuple(s.topology_score) if isinstance(s, PreScoreState) else None


def normalize_score(state: CycleState, scores: dict[str, int]) -> Status:
    """Port of scoring.go: NormalizeScore: MAX_NODE_SCORE * (s - min) / (max - min),
    truncated as Go's int64(float64) does; all 0 when every score is equal."""
    s = state.get(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return Status(
            Code.ERROR, f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found'
        )
    if not s.topology_score:
        return SUCCESS
    min_count, max_count = _INT64_MAX, _INT64_MIN
    for value in scores.values():
        max_count = max(max_count, value)
        min_count = min(min_count, value)
    diff = max_count - min_count
    for name, value in scores.items():
        f_score = 0.0
        if diff > 0:
            f_score = float(MAX_NODE_SCORE) * (float(value - min_count) / float(diff))
        scores[name] = int(f_score)
    return SUCCESS
