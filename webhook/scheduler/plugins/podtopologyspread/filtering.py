"""PodTopologySpread PreFilter and Filter: the DoNotSchedule constraints.

PreFilter counts, once per decision, the matching pods of every eligible domain;
Filter then judges each node with
    matching pods in the node's domain + self-match - global minimum <= maxSkew
where the global minimum is taken over eligible domains and read as 0 while
there are fewer eligible domains than minDomains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import compress, repeat
from operator import itemgetter
from typing import Any

from webhook.api.kube import RawObj, pod_labels, pod_namespace
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.memo import memo_of
from webhook.scheduler.framework.snapshot import (
    ABSENT,
    ClassValues,
    NodeInfo,
    Snapshot,
    is_terminating,
)
from webhook.scheduler.framework.types import SUCCESS, Status
from webhook.scheduler.plugins.podtopologyspread.common import (
    CONSTRAINTS_NOT_MATCH,
    DEFAULT_ARGS,
    DO_NOT_SCHEDULE,
    INT32_MAX,
    NODE_LABEL_NOT_MATCH,
    Constraint,
    NodeInclusion,
    PodConstraints,
    constraints_or_error,
    domain_match_counts,
    match_counts,
)


@dataclass(frozen=True)
class PreFilterState:
    """What PreFilter computed for one incoming pod.

    constraints: the pod's DoNotSchedule constraints (or its defaults), in order.
    tp_value_to_match_num[i]: for constraint i, eligible domain value -> matching
        pods; a domain is present (maybe with 0) iff at least one eligible node
        carries it, so len() is the number of eligible domains.
    min_match_num[i]: the smallest count in tp_value_to_match_num[i]
        (INT32_MAX when there is no eligible domain, as upstream's empty critical path).
    self_match[i]: the incoming pod matches constraint i's selector itself.
    namespace: the incoming pod's namespace (only its pods are counted);
    inclusion: the node inclusion checks PreFilter used (add_pod / remove_pod apply
        the same); not part of the state's value.
    """

    constraints: tuple[Constraint, ...]
    tp_value_to_match_num: tuple[dict[str, int], ...]
    min_match_num: tuple[int, ...]
    self_match: tuple[bool, ...]
    namespace: str = ""
    inclusion: NodeInclusion | None = field(default=None, compare=False, repr=False)

    def global_min(self, i: int) -> int:
        """minMatchNum: the global minimum, 0 while fewer eligible domains than minDomains.

        Port of filtering.go: minMatchNum.
        """
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.min_match_num[i]

    @cached_property
    def checks(self) -> tuple[tuple[str, int, dict[str, int], int], ...]:
        """Per constraint (key, maxSkew, domain counts, self-match - global minimum):
        what Filter compares on every node, worked out once."""
        return tuple(
            (
                c.topology_key,
                c.max_skew,
                self.tp_value_to_match_num[i],
                int(self.self_match[i]) - self.global_min(i),
            )
            for i, c in enumerate(self.constraints)
        )


def _counts_without(
    snapshot: Snapshot,
    pod: RawObj,
    c: Constraint,
    keys: tuple[str, ...],
    j: int,
    left_out: frozenset[str],
) -> dict[str, int]:
    """Matching pods per domain of keys[j] over the nodes carrying `keys` less those in
    `left_out`: the snapshot's per-domain counts without the domains left with no node,
    less the matching pods of the nodes left out of the other domains."""
    kept, partial = snapshot.exclusion(keys, left_out)[j]
    per_domain = dict.fromkeys(kept, 0)
    for domain, n in domain_match_counts(snapshot, pod, c, keys)[j].items():
        if domain in per_domain:
            per_domain[domain] = n
    if partial:
        per_node = match_counts(snapshot, pod, c)
        if len(per_node) < len(partial):
            for name, n in per_node.items():
                domain = partial.get(name)
                if domain is not None:
                    per_domain[domain] -= n
        else:
            for name, domain in partial.items():
                per_domain[domain] -= per_node.get(name, 0)
    return per_domain


def pre_filter(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    inclusion: NodeInclusion | None = None,
    parsed: PodConstraints | Status | None = None,
) -> PreFilterState | Status:
    """calPreFilterState over every node of the snapshot; a Status when the pod's
    constraints cannot be used (upstream's PreFilter error, which fails every node).
    `parsed`: the pod's DoNotSchedule constraints when already parsed.

    Port of filtering.go: calPreFilterState.
    """
    pc = (
        parsed if parsed is not None else constraints_or_error(pod, snapshot, args, DO_NOT_SCHEDULE)
    )
    if isinstance(pc, Status):
        return pc
    constraints = pc.constraints
    if not constraints:
        return PreFilterState((), (), (), ())
    inclusion = inclusion or NodeInclusion(pod)
    # A node is eligible when it carries every constraint's key (and passes the
    # constraint's inclusion policies).
    keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
    eligible, domain_values = snapshot.key_index(keys)
    domains: list[dict[str, int]] = []
    for c in constraints:
        j = keys.index(c.topology_key)
        if inclusion.trivial(c):
            # Every node carrying the keys takes part: the snapshot's per-domain counts.
            per_domain = dict.fromkeys(domain_values[j], 0)
            per_domain.update(domain_match_counts(snapshot, pod, c, keys)[j])
            domains.append(per_domain)
            continue
        if inclusion.taints_only(c):
            # All of them but the nodes with a taint the pod does not tolerate.
            domains.append(
                _counts_without(snapshot, pod, c, keys, j, inclusion.untolerated(snapshot))
            )
            continue
        per_node = match_counts(snapshot, pod, c)
        if (known := inclusion.known_affinity(c)) is not None:
            # Node affinity alone decides and is known for every node: the domains
            # are those of the node classes holding an included node; counts come
            # from the nodes with matches.
            table, included = known
            classes = memo_of(snapshot).node_classes(keys, (False,) * len(keys), table)
            per_domain = {}
            for k in set(compress(classes.of_node, included)):
                carried = classes.values[k]
                if not any(v is ABSENT for v in carried):
                    per_domain[carried[j]] = 0
            position = table.position
            for name, n in per_node.items():
                values = eligible.get(name)
                p = position.get(name)
                if values is not None and p is not None and included[p]:
                    per_domain[values[j]] += n
        else:
            per_domain = {}
            nodes = snapshot.nodes
            for name, values in eligible.items():
                info = nodes.get(name)
                if info is not None and inclusion.includes(c, info):
                    per_domain[values[j]] = per_domain.get(values[j], 0) + per_node.get(name, 0)
        domains.append(per_domain)
    labels = pod_labels(pod)
    return PreFilterState(
        constraints=constraints,
        tp_value_to_match_num=tuple(domains),
        min_match_num=tuple(min(d.values(), default=INT32_MAX) for d in domains),
        self_match=tuple(bool(c.matches(labels)) for c in constraints),
        namespace=pod_namespace(pod),
        inclusion=inclusion,
    )


# ---- PreFilterExtensions ------------------------------------------------------------
#
# Each returns the state as it is once pods are added or removed: a new PreFilterState
# when a count moved, `s` itself when none did (PodTopologySpread.add_pod / remove_pod
# / remove_pods keep it in the cycle's entry; a state is never changed in place, so a
# copy of the CycleState keeps the original).


def with_pod(s: PreFilterState, updated: RawObj, node: NodeInfo, delta: int) -> PreFilterState:
    """The state with `updated` added to `node` (delta 1) or removed from it (-1).

    Port of filtering.go: AddPod / RemovePod (updateWithPod). The global minimum is
    kept exact (upstream keeps the two smallest counts, criticalPaths, which can lose
    the minimum after several additions): it is looked up again only when the one
    domain holding it grows.

    CAVEAT: a terminating pod is not counted here, as PreFilter does not count it
    (countPodsMatchSelector bypasses it, #87621); upstream's updateWithPod does not
    check, so removing a terminating victim there lowers a count it never raised.
    """
    if not s.constraints or _namespace_of(updated) != s.namespace or is_terminating(updated):
        return s
    labels = node.labels
    if any(c.topology_key not in labels for c in s.constraints):
        return s  # nodeLabelsMatchSpreadConstraints
    inclusion = s.inclusion
    pod_labels_ = pod_labels(updated)
    counts = list(s.tp_value_to_match_num)
    minimums = list(s.min_match_num)
    for i, c in enumerate(s.constraints):
        if c.counts_nothing or not c.matches(pod_labels_):
            continue
        if inclusion is not None and not inclusion.includes(c, node):
            continue
        value = labels[c.topology_key]
        domains = counts[i] = dict(counts[i])
        was = domains.get(value, 0)
        now = domains[value] = was + delta
        if now < minimums[i]:
            minimums[i] = now
        elif was == minimums[i] and delta > 0:
            minimums[i] = min(domains.values())
    if counts == list(s.tp_value_to_match_num):
        return s
    return replace(s, tp_value_to_match_num=tuple(counts), min_match_num=tuple(minimums))


# The labels of the pods of one namespace that count, by the tuple of pods they were
# read from (a dry run hands the same tuple of a node's potential victims to every
# decision while the node is unchanged): id -> (that tuple, the namespace, labels).
_COUNTED: dict[int, tuple[tuple[RawObj, ...], str, list[dict[str, str]]]] = {}
_COUNTED_LIMIT = 65536


def _counted_labels(pods: Sequence[RawObj], namespace: str) -> list[dict[str, str]]:
    """The labels of those of `pods` in `namespace` and not terminating, in order;
    remembered for a tuple of pods (immutable, kept alive by the entry)."""
    kept = type(pods) is tuple
    if kept:
        hit = _COUNTED.get(id(pods))
        if hit is not None and hit[0] is pods and hit[1] == namespace:
            return hit[2]
    counted = []
    if type(namespace) is str and namespace and namespace != "default":
        # Only a pod whose metadata names this very namespace is in it (no default to
        # fall back on): told apart in one pass.
        for p in pods:
            meta = p.get("metadata")
            if type(meta) is dict and meta.get("namespace") == namespace:
                if meta.get("deletionTimestamp") is None:
                    counted.append(pod_labels(p))
    else:
        for p in pods:
            # _namespace_of inlined: this runs for every pod of every node dry-run.
            meta = p.get("metadata")
            ns = meta.get("namespace") if type(meta) is dict else None
            if ns != namespace and ((type(ns) is str and ns) or _namespace_of(p) != namespace):
                continue
            if not is_terminating(p):
                counted.append(pod_labels(p))
    if kept:
        if len(_COUNTED) >= _COUNTED_LIMIT:
            _COUNTED.clear()
        _COUNTED[id(pods)] = (pods, namespace, counted)  # type: ignore[assignment]
    return counted


def without_pods(s: PreFilterState, pods: Sequence[RawObj], node: NodeInfo) -> PreFilterState:
    """with_pod(..., -1) for each of `pods`, all on `node`, as one new state: the node's
    inclusion and domain looked up once, each constraint's count moved once."""
    if not s.constraints:
        return s
    labels = node.labels
    if any(c.topology_key not in labels for c in s.constraints):
        return s  # nodeLabelsMatchSpreadConstraints
    counted = _counted_labels(pods, s.namespace)
    if not counted:
        return s
    inclusion = s.inclusion
    counts = list(s.tp_value_to_match_num)
    minimums = list(s.min_match_num)
    for i, c in enumerate(s.constraints):
        if c.counts_nothing or (inclusion is not None and not inclusion.includes(c, node)):
            continue
        gone = sum(1 for pod_labels_ in counted if c.matches(pod_labels_))
        if gone:
            value = labels[c.topology_key]
            domains = counts[i] = dict(counts[i])
            domains[value] = domains.get(value, 0) - gone
            minimums[i] = min(minimums[i], domains[value])
    if counts == list(s.tp_value_to_match_num):
        return s
    return replace(s, tp_value_to_match_num=tuple(counts), min_match_num=tuple(minimums))


def _namespace_of(pod: RawObj) -> str:
    """pod_namespace, read directly off a light pod's metadata (what preemption hands
    here, tens of thousands of times per decision)."""
    meta = pod.get("metadata")
    if type(meta) is dict:
        ns = meta.get("namespace")
        if type(ns) is str and ns:
            return ns
    return pod_namespace(pod)


def filter_node(state: PreFilterState, info: NodeInfo) -> Status:
    """Filter: may the pod go to `info` without breaking a DoNotSchedule constraint?

    Port of filtering.go: Filter.
    """
    return filter_labels(state, info.labels)


def filter_labels(state: PreFilterState, labels: Mapping[str, str]) -> Status:
    """Filter for a node carrying `labels`: the verdict reads nothing else of the node,
    so nodes with the same values for the constraints' keys share it."""
    for key, max_skew, domains, offset in state.checks:
        value = labels.get(key)
        if value is None:
            return NODE_LABEL_NOT_MATCH
        if domains.get(value, 0) + offset > max_skew:
            return CONSTRAINTS_NOT_MATCH
    return SUCCESS


def filter_keys(state: PreFilterState) -> tuple[str, ...]:
    """The topology keys Filter reads, each once, in constraint order."""
    return tuple(dict.fromkeys(c.topology_key for c in state.constraints))


def filter_classes(
    state: PreFilterState, keys: tuple[str, ...], classes: Sequence[ClassValues]
) -> list[Status]:
    """Filter once per node class (memo.NodeClasses.values for `keys`): the
    verdict of every node of that class, as filter_labels gives it."""
    # (position of the key in a class's values, maxSkew, domain counts, offset)
    plan = [
        (keys.index(key), max_skew, domains, offset)
        for key, max_skew, domains, offset in state.checks
    ]
    if len(plan) == 1:
        # One key (a hostname constraint: one class per node): each value's verdict is
        # looked up, values without matching pods sharing one.
        j, max_skew, domains, offset = plan[0]
        verdict: dict[Any, Status] = {
            value: CONSTRAINTS_NOT_MATCH if domains[value] + offset > max_skew else SUCCESS
            for value in compress(domains, domains.values())  # the domains counting pods
        }
        verdict[ABSENT] = verdict[None] = NODE_LABEL_NOT_MATCH
        rest = CONSTRAINTS_NOT_MATCH if offset > max_skew else SUCCESS
        return list(map(verdict.get, map(itemgetter(j), classes), repeat(rest)))
    out: list[Status] = []
    append = out.append
    for values in classes:
        for j, max_skew, domains, offset in plan:
            value = values[j]
            if value is ABSENT or value is None:
                append(NODE_LABEL_NOT_MATCH)
                break
            if domains.get(value, 0) + offset > max_skew:
                append(CONSTRAINTS_NOT_MATCH)
                break
        else:
            append(SUCCESS)
    return out
