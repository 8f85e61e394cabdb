"""InterPodAffinity PreFilter and Filter: required pod affinity and anti-affinity.

PreFilter counts, once per decision, per (topology key, value):
- existing pods whose required anti-affinity terms match the incoming pod;
- existing pods matching every required affinity term of the incoming pod;
- existing pods matching each required anti-affinity term of the incoming pod.
Filter then judges a node with a few lookups of its own label values.

Port of kube-scheduler's interpodaffinity/filtering.go (newest release read).

CAVEAT: what is incremental and what is recomputed per decision.
- Existing pods' terms come from ExistingTermsIndex (common.py), kept in step
  with the snapshot node by node (only nodes whose generation changed are
  re-read); per decision PreFilter evaluates each *group* of alike terms once
  against the incoming pod and adds that group's per-value counts.
- Pods matching the incoming pod's own terms come from Snapshot.match_counts,
  the snapshot's per-(namespace, selector) counts maintained on every pod add and
  delete, plus the few terminating pods the index keeps aside. Per decision the
  cost is O(nodes holding matching pods) to turn node counts into topology
  values, never a walk over every pod.
- Filter reads only the node's values for the topology keys of the counts:
  O(#terms + #distinct keys of existing anti-affinity terms).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from webhook.api.kube import RawObj, pod_labels, pod_namespace
from webhook.scheduler.framework.snapshot import ABSENT, NodeInfo, Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.interpodaffinity.common import (
    NAME,
    REQUIRED_ANTI_AFFINITY,
    AffinityTerm,
    ExistingTermsIndex,
    all_namespaces,
    counts_by_topology,
    matching_pods_per_node,
    merge_namespace_selector,
    namespace_labels,
    parse_pod_terms,
    reads_all_namespaces,
)

__all__ = [
    "AFFINITY_NOT_MATCH",
    "ANTI_AFFINITY_NOT_MATCH",
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "EXISTING_ANTI_AFFINITY_NOT_MATCH",
    "PRE_FILTER_STATE_KEY",
    "PreFilterState",
    "add_pod",
    "filter_node",
    "filter_label_keys",
    "filter_node_key",
    "filter_pod_key",
    "pre_filter",
    "remove_pod",
    "remove_pods",
]

# The CycleState key (filtering.go preFilterStateKey).
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

# A node that no pod's affinity can ever be satisfied on stays so until pods or
# labels change: UnschedulableAndUnresolvable (preemption cannot help); anti-affinity
# may be resolved by evicting pods: Unschedulable (filtering.go Filter).
AFFINITY_NOT_MATCH: Final = Status(Code.UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI_AFFINITY_NOT_MATCH: Final = Status(
    Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH
)
EXISTING_ANTI_AFFINITY_NOT_MATCH: Final = Status(
    Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
)
_NO_STATE: Final = Status(
    Code.ERROR, f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
)

TopologyCounts = dict[tuple[str, str], int]


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """What PreFilter computed for one incoming pod (filtering.go preFilterState).

    existing_anti_affinity_counts: (topology key, value) -> existing pods whose
        required anti-affinity terms match the incoming pod, counted per term; only
        positive counts are present.
    affinity_counts: (key, value) -> existing pods matching *every* required
        affinity term of the incoming pod, added once per term under that term's key.
    anti_affinity_counts: (key, value) -> existing pods matching each required
        anti-affinity term of the incoming pod, per term.
    affinity_terms / anti_affinity_terms: the incoming pod's required terms, their
        namespaceSelector already unrolled into namespaces.
    self_match: the incoming pod matches all of its own affinity terms (the "first
        pod of a group" rule: only then may it land where no pod matches yet).
    existing_keys: the topology keys of existing_anti_affinity_counts.
    node_keys: every node label key Filter reads, in a fixed order.
    anti_blocked / existing_blocked: per topology key, the values whose count is
        positive in anti_affinity_counts / existing_anti_affinity_counts: a node
        carrying one of them fails (what Filter looks up, node after node).
    node_local: some key of node_keys has each value on one node only (a hostname):
        nodes are then told apart by their verdict, not by their label values.
    pod_key: what filter_pod_key answers.
    ns_labels: the labels of the incoming pod's namespace (what the existing pods'
        namespaceSelectors are matched against, kept for add_pod / remove_pod).
    snapshot: the snapshot PreFilter read (add_pod / remove_pod tell node-local keys
        by it); not part of the state's value.
    """

    existing_anti_affinity_counts: TopologyCounts
    affinity_counts: TopologyCounts
    anti_affinity_counts: TopologyCounts
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    self_match: bool
    existing_keys: tuple[str, ...]
    node_keys: tuple[str, ...]
    anti_blocked: tuple[tuple[str, frozenset[str]], ...] = ()
    existing_blocked: tuple[tuple[str, frozenset[str]], ...] = ()
    node_local: bool = False
    pod_key: tuple[object, ...] = ()
    ns_labels: tuple[tuple[str, str], ...] = ()
    snapshot: Snapshot | None = field(default=None, compare=False, repr=False)


def pod_matches_all_affinity_terms(
    terms: tuple[AffinityTerm, ...], namespace: str, labels: Mapping[str, str]
) -> bool:
    """Port of filtering.go: podMatchesAllAffinityTerms (false when there is no term).

    The terms' namespaceSelector is already unrolled, so namespace labels are not read.
    """
    if not terms:
        return False
    return all(t.matches(namespace, labels, {}) for t in terms)


def existing_anti_affinity_counts(
    index: ExistingTermsIndex,
    namespace: str,
    labels: Mapping[str, str],
    ns_labels: Mapping[str, str],
) -> TopologyCounts:
    """Port of filtering.go: getExistingAntiAffinityCounts, one term group at a time."""
    out: TopologyCounts = {}
    for group in index.matching(REQUIRED_ANTI_AFFINITY, namespace, labels, ns_labels):
        key = group.term.topology_key
        for value, count in group.counts.items():
            pair = (key, value)
            out[pair] = out.get(pair, 0) + count
    return out


def _conjunction(terms: tuple[AffinityTerm, ...]) -> RawObj | None:
    """One labelSelector selecting what every term's selector selects (None: nothing)."""
    if len(terms) == 1:
        return terms[0].selector
    exprs: list[RawObj] = []
    for t in terms:
        if t.selector is None:
            return None
        for k, v in (t.selector.get("matchLabels") or {}).items():
            exprs.append({"key": k, "operator": "In", "values": ["" if v is None else v]})
        exprs.extend(t.selector.get("matchExpressions") or [])
    return {"matchExpressions": exprs}


def _term_namespaces(term: AffinityTerm, known: set[str]) -> set[str]:
    return set(known) if term.selects_all_namespaces else set(term.namespaces)


def incoming_affinity_counts(
    terms: tuple[AffinityTerm, ...], snapshot: Snapshot, index: ExistingTermsIndex, known: set[str]
) -> TopologyCounts:
    """Port of filtering.go: getIncomingAffinityAntiAffinityCounts, the affinity half:
    existing pods matching all terms, counted under each term's topology key."""
    out: TopologyCounts = {}
    if not terms:
        return out
    namespaces = _term_namespaces(terms[0], known)
    for t in terms[1:]:
        namespaces &= _term_namespaces(t, known)
    selector = _conjunction(terms)

    def matches_all(labels: Mapping[str, str]) -> bool:
        return all(t.matches_labels(labels) for t in terms)

    per_node = matching_pods_per_node(namespaces, selector, matches_all, snapshot, index)
    counts_by_topology(per_node, [t.topology_key for t in terms], snapshot, out)
    return out


def incoming_anti_affinity_counts(
    terms: tuple[AffinityTerm, ...], snapshot: Snapshot, index: ExistingTermsIndex, known: set[str]
) -> TopologyCounts:
    """Port of filtering.go: getIncomingAffinityAntiAffinityCounts, the anti-affinity
    half: existing pods matching each term, counted under that term's key."""
    out: TopologyCounts = {}
    for t in terms:
        per_node = matching_pods_per_node(
            _term_namespaces(t, known), t.selector, t.matches_labels, snapshot, index
        )
        counts_by_topology(per_node, (t.topology_key,), snapshot, out)
    return out


def pre_filter(
    state: CycleState, pod: RawObj, snapshot: Snapshot, index: ExistingTermsIndex
) -> Status:
    """Port of filtering.go: PreFilter.

    A term whose selector does not parse rejects the pod on every node
    (UnschedulableAndUnresolvable "parsing pod: ..."); with no required term of its
    own and no existing pod's anti-affinity against it, the plugin Skips.
    """
    terms = parse_pod_terms(pod)
    if terms.errors:
        return Status(Code.UNRESOLVABLE, "parsing pod: " + terms.error_message())
    namespace = pod_namespace(pod)
    labels = pod_labels(pod)
    with index.lock:
        index.sync(snapshot)
        # Every namespace known: read only for the pod's own terms that select by
        # namespaceSelector or select them all.
        own = terms.required_affinity + terms.required_anti_affinity
        known = all_namespaces(snapshot, index) if reads_all_namespaces(own) else set()
        affinity = tuple(
            merge_namespace_selector(t, snapshot, known) for t in terms.required_affinity
        )
        anti = tuple(
            merge_namespace_selector(t, snapshot, known) for t in terms.required_anti_affinity
        )
        ns_labels = namespace_labels(snapshot, namespace)
        existing = existing_anti_affinity_counts(index, namespace, labels, ns_labels)
        if not existing and not affinity and not anti:
            return SKIP
        affinity_counts = incoming_affinity_counts(affinity, snapshot, index, known)
        anti_counts = incoming_anti_affinity_counts(anti, snapshot, index, known)
    existing_keys = tuple(dict.fromkeys(k for k, _ in existing))
    node_keys = tuple(
        dict.fromkeys(
            [t.topology_key for t in affinity]
            + [t.topology_key for t in anti]
            + list(existing_keys)
        )
    )
    local = frozenset(k for k in node_keys if _node_local(snapshot, k))
    counts = (existing, affinity_counts, anti_counts)
    state[PRE_FILTER_STATE_KEY] = PreFilterState(
        existing_anti_affinity_counts=existing,
        affinity_counts=affinity_counts,
        anti_affinity_counts=anti_counts,
        affinity_terms=affinity,
        anti_affinity_terms=anti,
        self_match=pod_matches_all_affinity_terms(affinity, namespace, labels),
        existing_keys=existing_keys,
        node_keys=node_keys,
        anti_blocked=_blocked([t.topology_key for t in anti], anti_counts),
        existing_blocked=_blocked(existing_keys, existing),
        node_local=bool(local),
        pod_key=_pod_key(namespace, labels, ns_labels, affinity, anti, counts, local),
        ns_labels=tuple(sorted(ns_labels.items())),
        snapshot=snapshot,
    )
    return SUCCESS


# ---- PreFilterExtensions ------------------------------------------------------------


def add_pod(state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfo) -> Status:
    """PreFilterExtensions.AddPod: the state as if `pod_to_add` were bound to `node`.

    Port of filtering.go: AddPod (updateWithPod with multiplier 1). The state is
    replaced, never changed in place, so a clone of the CycleState (a copy of the
    dict) is enough to keep the original.
    """
    return _update_with_pod(state, pod, pod_to_add, node, 1)


def remove_pod(state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfo) -> Status:
    """PreFilterExtensions.RemovePod: the state as if `pod_to_remove` left `node`.

    Port of filtering.go: RemovePod (updateWithPod with multiplier -1).
    """
    return _update_with_pod(state, pod, pod_to_remove, node, -1)


def _bump(counts: TopologyCounts, pair: tuple[str, str], delta: int) -> None:
    left = counts.get(pair, 0) + delta
    if left:
        counts[pair] = left
    else:
        counts.pop(pair, None)


def _incoming_term_matches(term: AffinityTerm, namespace: str, labels: Mapping[str, str]) -> bool:
    """AffinityTerm.Matches(pod, nil) for the incoming pod's terms, whose namespaceSelector
    PreFilter already unrolled (a {} selector still selects every namespace)."""
    selects = term.selects_all_namespaces or namespace in term.namespaces
    return selects and term.matches_labels(labels)


# Parsed required anti-affinity terms of the pods add_pod / remove_pod see, by the pod
# object (light pods are long-lived and shared): id -> (the pod, its terms).
_TERMS: dict[int, tuple[RawObj, tuple[AffinityTerm, ...]]] = {}
_TERMS_LIMIT = 65536


def _anti_terms_of(pod: RawObj) -> tuple[AffinityTerm, ...]:
    """The pod's required anti-affinity terms (parse_pod_terms), parsed once per pod."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not spec.get("affinity"):
        return ()
    hit = _TERMS.get(id(pod))
    if hit is None or hit[0] is not pod:
        if len(_TERMS) >= _TERMS_LIMIT:
            _TERMS.clear()
        hit = _TERMS[id(pod)] = (pod, parse_pod_terms(pod).required_anti_affinity)
    return hit[1]


def remove_pods(state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfo) -> Status:
    """remove_pod for each of `pods`, all on `node`, with the state rebuilt once (what
    preemption's first step asks: every potential victim of a node removed)."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return SUCCESS
    bumps: list[tuple[list[tuple[str, str]], ...]] = []
    terms = (*s.affinity_terms, *s.anti_affinity_terms)
    # When no term selects every namespace, a pod without affinity of its own outside
    # the terms' namespaces counts nowhere: told by one lookup, no term matched.
    spaces: frozenset[str] | None = None
    if not any(t.selects_all_namespaces for t in terms):
        spaces = frozenset().union(*(t.namespaces for t in terms))
    for other in pods:
        if spaces is not None:
            spec, meta = other.get("spec"), other.get("metadata")
            if (
                type(spec) is dict
                and type(meta) is dict
                and not spec.get("affinity")
                and (meta.get("namespace") or "default") not in spaces
            ):
                continue
        if _counts_nowhere(terms, other):
            continue
        found = _bumps(s, pod, other, node)
        if found is not None and any(found):
            bumps.append(found)
    if bumps:
        _apply(state, s, pod, bumps, -1)
    return SUCCESS


def _counts_nowhere(terms: Sequence[AffinityTerm], other: RawObj) -> bool:
    """Whether `other` has no affinity of its own and none of the incoming pod's
    `terms` selects it: then it moves no count (the common case, told cheaply)."""
    spec, meta = other.get("spec"), other.get("metadata")
    if type(spec) is dict and type(meta) is dict and not spec.get("affinity"):
        ns, labels = meta.get("namespace") or "default", meta.get("labels") or {}
        return not any(_incoming_term_matches(t, ns, labels) for t in terms)
    return False


def _update_with_pod(
    state: CycleState, pod: RawObj, updated: RawObj, node: NodeInfo, delta: int
) -> Status:
    """Port of filtering.go: preFilterState.updateWithPod (updateWithAntiAffinityTerms,
    updateWithAffinityTerms), the derived lookups rebuilt from the new counts."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return SUCCESS  # PreFilter skipped: nothing to update (upstream's nil state)
    if _counts_nowhere((*s.affinity_terms, *s.anti_affinity_terms), updated):
        return SUCCESS
    found = _bumps(s, pod, updated, node)
    if found is not None and any(found):
        _apply(state, s, pod, [found], delta)
    return SUCCESS


def _bumps(
    s: PreFilterState, pod: RawObj, updated: RawObj, node: NodeInfo
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]] | None:
    """The (key, value) pairs `updated` on `node` counts under, in the existing pods'
    anti-affinity counts, the incoming pod's affinity counts and its anti-affinity
    counts; None when it counts under none."""
    own_terms = _anti_terms_of(updated)
    if not own_terms and not s.affinity_terms and not s.anti_affinity_terms:
        return None  # nothing of this pod is counted
    labels_of_node = node.labels
    meta = updated.get("metadata")
    if type(meta) is dict and type(meta.get("namespace")) is str and meta["namespace"]:
        labels_ = meta.get("labels")
        upd_ns, upd_labels = meta["namespace"], labels_ if type(labels_) is dict else {}
    else:
        upd_ns, upd_labels = pod_namespace(updated), pod_labels(updated)
    if not own_terms and not any(
        _incoming_term_matches(t, upd_ns, upd_labels)
        for t in (*s.affinity_terms, *s.anti_affinity_terms)
    ):
        return None  # the incoming pod's terms do not select it, nor its terms the pod

    def on_node(key: str) -> tuple[str, str] | None:
        value = labels_of_node.get(key)
        return (key, value) if isinstance(value, str) else None

    # The updated pod's own required anti-affinity terms against the incoming pod.
    existing_bumps: list[tuple[str, str]] = []
    if own_terms:
        namespace, labels, ns_labels = pod_namespace(pod), pod_labels(pod), dict(s.ns_labels)
        existing_bumps = [
            pair
            for term in own_terms
            if (pair := on_node(term.topology_key)) is not None
            and term.matches(namespace, labels, ns_labels)
        ]
    # The incoming pod's affinity terms: counted when the updated pod matches them all.
    affinity_bumps: list[tuple[str, str]] = []
    if s.affinity_terms and all(
        _incoming_term_matches(t, upd_ns, upd_labels) for t in s.affinity_terms
    ):
        affinity_bumps = [
            pair for t in s.affinity_terms if (pair := on_node(t.topology_key)) is not None
        ]
    # The incoming pod's anti-affinity terms, each on its own.
    anti_bumps = [
        pair
        for t in s.anti_affinity_terms
        if (pair := on_node(t.topology_key)) is not None
        and _incoming_term_matches(t, upd_ns, upd_labels)
    ]
    if not (existing_bumps or affinity_bumps or anti_bumps):
        return None
    return existing_bumps, affinity_bumps, anti_bumps


def _apply(
    state: CycleState,
    s: PreFilterState,
    pod: RawObj,
    found: Sequence[tuple[list[tuple[str, str]], ...]],
    delta: int,
) -> None:
    """A new state with the counts moved by `delta` at each pair found, its lookups
    rebuilt."""
    existing = dict(s.existing_anti_affinity_counts)
    affinity = dict(s.affinity_counts)
    anti = dict(s.anti_affinity_counts)
    for existing_bumps, affinity_bumps, anti_bumps in found:
        for counts, bumps in (
            (existing, existing_bumps),
            (affinity, affinity_bumps),
            (anti, anti_bumps),
        ):
            for pair in bumps:
                _bump(counts, pair, delta)
    namespace, labels, ns_labels = pod_namespace(pod), pod_labels(pod), dict(s.ns_labels)
    existing_keys = tuple(dict.fromkeys(k for k, _ in existing))
    affinity_keys = [t.topology_key for t in s.affinity_terms]
    anti_keys = [t.topology_key for t in s.anti_affinity_terms]
    node_keys = tuple(dict.fromkeys(affinity_keys + anti_keys + list(existing_keys)))
    snapshot = s.snapshot
    local = frozenset(
        k for k in node_keys if snapshot is not None and _node_local(snapshot, k)
    )
    state[PRE_FILTER_STATE_KEY] = replace(
        s,
        existing_anti_affinity_counts=existing,
        affinity_counts=affinity,
        anti_affinity_counts=anti,
        existing_keys=existing_keys,
        node_keys=node_keys,
        node_local=bool(local),
        anti_blocked=_blocked(anti_keys, anti),
        existing_blocked=_blocked(existing_keys, existing),
        pod_key=_pod_key(
            namespace,
            labels,
            ns_labels,
            s.affinity_terms,
            s.anti_affinity_terms,
            (existing, affinity, anti),
            local,
        ),
    )


def _blocked(keys: Iterable[str], counts: TopologyCounts) -> tuple[tuple[str, frozenset[str]], ...]:
    """Per distinct key of `keys`, the values with a positive count."""
    return tuple(
        (key, frozenset(v for (k, v), n in counts.items() if k == key and n > 0))
        for key in dict.fromkeys(keys)
    )


def _node_local(snapshot: Snapshot, key: str) -> bool:
    """Every value of `key` is carried by one node only (Snapshot.key_index: the nodes
    carrying the key, and its distinct values)."""
    carriers, domains = snapshot.key_index((key,))
    return len(domains[0]) == len(carriers)


def filter_pod_key(state: CycleState) -> Hashable | None:
    """What Filter reads besides the node, for any node (after PreFilter), as plain
    values: a remembered verdict is reused only for a pod with an equal key.

    The verdict on a node reads the counts at that node's own values. They are made
    from the pod's namespace, labels and terms, its namespace's labels, and the bound
    pods: the first four are in the key. Under a node-local key (each value on one
    node) the bound pods counted are the node's own, which its generation covers:
    those counts stay out, so the key of the next replica of a hostname
    anti-affinity workload is unchanged. Under any other key (a zone) a pod bound
    elsewhere changes the verdict of nodes that did not change: those counts are in.
    """
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return None
    return s.pod_key


def _pod_key(
    namespace: str,
    labels: Mapping[str, str],
    ns_labels: Mapping[str, str],
    affinity: tuple[AffinityTerm, ...],
    anti: tuple[AffinityTerm, ...],
    counts: tuple[TopologyCounts, TopologyCounts, TopologyCounts],
    local: frozenset[str],
) -> tuple[object, ...]:
    """filter_pod_key's value, computed once in PreFilter."""

    def terms(ts: tuple[AffinityTerm, ...]) -> list[object]:
        return [
            [t.topology_key, t.selector, sorted(t.namespaces), t.selects_all_namespaces] for t in ts
        ]

    return (
        namespace,
        sorted(labels.items()),
        sorted(ns_labels.items()),
        terms(affinity),
        terms(anti),
        sorted(local),
        bool(counts[1]),
        [sorted([k, v, n] for (k, v), n in c.items() if k not in local) for c in counts],
    )


def satisfy_existing_pods_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    """Port of filtering.go: satisfyExistingPodsAntiAffinity (by the counted keys,
    not by every label of the node: the same pairs are looked up)."""
    return not any(labels.get(key, ABSENT) in values for key, values in s.existing_blocked)


def satisfy_pod_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    """Port of filtering.go: satisfyPodAntiAffinity."""
    return not any(labels.get(key, ABSENT) in values for key, values in s.anti_blocked)


def satisfy_pod_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    """Port of filtering.go: satisfyPodAffinity.

    Every term's topology key must be on the node. Where some term has no matching
    pod in the node's domain, the node still passes when no pod anywhere matches the
    terms and the pod matches its own terms: the first pod of a group that has
    affinity to itself must not stay pending forever.
    """
    pods_exist = True
    counts = s.affinity_counts
    for term in s.affinity_terms:
        key = term.topology_key
        if key not in labels:
            return False
        if counts.get((key, labels[key]), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        return not counts and s.self_match
    return True


def filter_node(state: CycleState, node: NodeInfo) -> Status:
    """Port of filtering.go: Filter (affinity first, then the pod's anti-affinity, then
    the existing pods' anti-affinity; the last two inlined, as they run on every node)."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return _NO_STATE
    labels = node.labels
    if s.affinity_terms and not satisfy_pod_affinity(s, labels):
        return AFFINITY_NOT_MATCH
    for key, values in s.anti_blocked:
        if labels.get(key, ABSENT) in values:
            return ANTI_AFFINITY_NOT_MATCH
    for key, values in s.existing_blocked:
        if labels.get(key, ABSENT) in values:
            return EXISTING_ANTI_AFFINITY_NOT_MATCH
    return SUCCESS


def filter_node_key(state: CycleState, node: NodeInfo) -> Hashable | None:
    """The node's verdict, by its reason ("" when it passes; each failure has its own):
    nodes with equal keys get the same Status, and under a hostname key, where every
    node's label values differ, the nodes still fall into a few groups."""
    if not isinstance(state.get(PRE_FILTER_STATE_KEY), PreFilterState):
        return None
    return filter_node(state, node).reason


def filter_label_keys(state: CycleState) -> tuple[str, ...] | None:
    """The node labels Filter reads, when nodes are best grouped by their values for
    them (no key with a value per node); None otherwise (filter_node_key, node by node)."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState) or s.node_local:
        return None
    return s.node_keys
