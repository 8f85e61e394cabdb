"""The deletion costs that keep a spread: `controller.kubernetes.io/pod-deletion-cost`
values under which a ReplicaSet's scale-down, deleting the lowest costs first, leaves
its topology spread as even as any choice of the same number of pods could.

    costs = replicaset_costs(pods, snapshot, args)    # pod key "ns/name" -> int32 cost

No upstream counterpart: the ReplicaSet controller ranks pods blind to topology
(kubernetes#96748, #115911, #124149, #124306); the deletion cost is the one input of
its ranking a third party may set, and among Running Ready assigned pods it is read
first.

**Counting** is the scheduler's (placement.spread_pre_filter and
placement.spread_eligible_nodes): for each constraint of the ReplicaSet's oldest pod,
its eligible domains (the node inclusion policies and topology keys), the pods its
selector matches (matchLabelKeys merged) in the pod's namespace, pods of other
workloads and other ReplicaSets included: they count, but this ReplicaSet cannot
delete them (its **floor** in each domain).

**Levels.** Within one domain of one constraint the ReplicaSet's counted pods are
stacked oldest at the bottom (not Ready ones on top: the controller deletes them
first whatever their cost; then creationTimestamp, then name); a pod's level is the
domain's count at the moment the pod is the next to go: the domain's floor plus its
position in the stack (1-based). Deleting in non-increasing level order removes, at
every step, a pod of a fullest domain that still has a deletable pod: the
water-filling order. For every k, its first k deletions give the least majorized
count vector among all choices of k pods (box constraints: the floor and the count of
each domain), so they minimize the largest count and maximize the smallest at once,
hence the skew; with fewer eligible domains than minDomains the global minimum is 0
and the largest count alone is the skew, minimized the same way.

**Several constraints** are taken in priority order: DoNotSchedule ones, then
ScheduleAnyway ones, each in spec order. A pod's key is the tuple of its levels, one
per constraint, compared lexicographically (higher first deleted). The first
constraint gets the guarantee above for every k; a later one decides between pods
whose earlier levels are equal (pods in different domains of the earlier
constraints), the fullest of its domains first.

**Ties** are safe: two pods with equal keys lie in different domains of every
constraint (a domain's pods have distinct levels), so deleting either first leaves
the other's levels unchanged; any tie-break gives the same counts.

**Pods a constraint does not count** (a node outside its eligible domains, a pod its
selector does not match): deleting one changes none of that constraint's counts. Such
a pod goes after every counted pod above the constraint's global minimum m (the
least domain count, 0 below minDomains) and before every other: its level is m + 1/2.
Deleting the pods above m lowers the largest count without touching the smallest, so
the skew falls with each of them; once they are gone the skew is the least any choice
leaves (max(m, the highest floor) - m), and deleting an uncounted pod keeps it there,
where deleting a counted pod at m would lower the smallest count. So with u uncounted
pods and c counted pods above m, the first k deletions leave the least skew any k pods
could for every k <= c + u; beyond, the least among the choices that delete every
uncounted pod. No order does better for every k: zones 1-1 with one uncounted pod, k=1
is best served by the uncounted pod, k=2 by the two counted ones.

**Costs** encode the key so that a higher key is a lower cost: with n constraints,
each level (doubled, an uncounted pod's 2m + 1) gets 31 // n bits and cost = 2**31 - 1
- (the levels in that mixed radix). When a level does not fit its bits (CAVEAT: a
domain holding over 16,383 matching pods with two constraints, 511 with three), costs
fall back to the rank of the key among the ReplicaSet's distinct keys: still correct,
no longer stable.

**Stability.** A cost depends only on the pod's domains' floors and its position in
their stacks. A scale-up of k pods (newer than every pod already there) puts each new
pod on top of its stacks: k costs to write, no other pod's cost changes. A scale-down
by the costs removes pods from the tops of their stacks: nothing to write. A pod that
leaves from inside a stack (an eviction, a node lost) shifts the pods above it in
each of its domains down one level, as does a change of a floor (another workload's
matching pod added or removed in that domain); an uncounted pod's cost moves with the
constraint's global minimum. Costs come from the cluster state
alone, never from the costs already written, so an unchanged cluster gives the same
costs (a keeper pass writes nothing, also after a restart).

CAVEAT: the guarantee holds among Running, Ready, assigned pods (the controller
deletes unassigned, not Running and not Ready pods first, whatever their cost), and
when the ReplicaSet's pods share the oldest pod's constraints and node inclusion
inputs (a ReplicaSet's pods come from one template).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from webhook.api.constraint import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, node_inclusion_inputs
from webhook.api.kube import RawObj, meta, pod_namespace, spec
from webhook.api.pods import is_ready, pod_key
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Status
from webhook.scheduler.placement import spread_eligible_nodes, spread_pre_filter

__all__ = [
    "COST_ANNOTATION",
    "INT32_MAX",
    "MARK_ANNOTATION",
    "Counted",
    "costs_from_levels",
    "counted_constraints",
    "levels",
    "replicaset_costs",
    "stack_order",
]

COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
# The cost topospread's keeper wrote last: a cost equal to it is ours to change.
MARK_ANNOTATION = "topospread.io/deletion-cost"
INT32_MAX = 2**31 - 1
# Bits of the 31 a cost has (it stays >= 0) given to each constraint's level.
_BITS = 31

_DEFAULT_ARGS = SpreadArgs()


@dataclass(frozen=True)
class Counted:
    """One constraint as it counts one ReplicaSet's pods.

    domain_of: pod key -> its domain, for the ReplicaSet's pods the constraint counts
    (absent: not counted); floors: eligible domain -> the matching pods there that the
    ReplicaSet cannot delete (other workloads', other ReplicaSets'), at least for every
    domain of domain_of (absent: 0); least: the global minimum PreFilter computes, the
    least count over every eligible domain (0 below minDomains or with no domain):
    where the pods the constraint does not count go in the order (see the module
    docstring).
    """

    topology_key: str
    domain_of: Mapping[str, str]
    floors: Mapping[str, int]
    least: int = 0


def stack_order(pods: Iterable[RawObj]) -> list[str]:
    """The pods' keys from the bottom of a stack (kept longest) to its top (deleted
    first): Ready before not Ready, then older first (creationTimestamp, then name)."""
    return [mb.key for mb in sorted(_members(pods), key=lambda mb: mb.rank)]


def levels(order: Sequence[str], counted: Counted) -> dict[str, int | None]:
    """Each pod's level under one constraint: its domain's floor plus its 1-based
    position among the domain's counted pods in `order` (bottom first); None for a pod
    the constraint does not count."""
    seen: dict[str, int] = {}
    out: dict[str, int | None] = {}
    for key in order:
        domain = counted.domain_of.get(key)
        if domain is None:
            out[key] = None
            continue
        seen[domain] = seen.get(domain, 0) + 1
        out[key] = counted.floors.get(domain, 0) + seen[domain]
    return out


def costs_from_levels(
    per_constraint: Sequence[Mapping[str, int | None]], least: Sequence[int] | None = None
) -> dict[str, int]:
    """The cost of each pod from its levels (one mapping per constraint, in priority
    order, over the same pods): a higher tuple of levels, compared lexicographically,
    gets a lower cost; a None level (not counted) sits just above the constraint's
    global minimum `least[i]` (0 when not given): above the counted levels up to it,
    below the rest."""
    if not per_constraint:
        return {}
    n = len(per_constraint)
    floor_of = list(least) if least is not None else [0] * n
    if len(floor_of) != n:
        raise ValueError("one global minimum per constraint")
    # Doubled, so that an uncounted pod's m + 1/2 is a whole number.
    doubled = [
        {key: 2 * floor_of[i] + 1 if lv is None else 2 * lv for key, lv in m.items()}
        for i, m in enumerate(per_constraint)
    ]
    bits = _BITS // n
    top = (1 << bits) - 1
    keys = list(per_constraint[0])
    if all(lv < top for m in doubled for lv in m.values()):
        out: dict[str, int] = {}
        for key in keys:
            encoded = 0
            for m in doubled:
                encoded = (encoded << bits) | m[key]
            out[key] = INT32_MAX - encoded
        return out
    # CAVEAT: fallback when a level overflows its bits: the rank among distinct tuples.
    tuples = {key: tuple(m[key] for m in doubled) for key in keys}
    ranks = {t: r for r, t in enumerate(sorted(set(tuples.values())))}
    return {key: INT32_MAX - ranks[t] for key, t in tuples.items()}


def _constraints(pod: RawObj, action: str) -> list[RawObj]:
    raw = spec(pod).get("topologySpreadConstraints")
    if not isinstance(raw, list):
        return []
    return [c for c in raw if isinstance(c, dict) and c.get("whenUnsatisfiable") == action]


def _eligibility_key(asked: RawObj) -> str:
    """What decides the nodes a constraint group includes: the constraints but their
    selectors, and the pod's node inclusion inputs (not its labels or namespace)."""
    s = spec(asked)
    constraints = [
        {k: v for k, v in c.items() if k not in ("labelSelector", "matchLabelKeys")}
        for c in s.get("topologySpreadConstraints") or []
        if isinstance(c, dict)
    ]
    return json.dumps([constraints, *node_inclusion_inputs(s)], sort_keys=True, default=str)


class _Member(NamedTuple):
    """What the counting and the stacking read of one pod, read once."""

    key: str
    pod: RawObj
    node: str | None
    namespace: str
    labels: Any
    rank: tuple[int, str, str]


def _members(pods: Iterable[RawObj]) -> list[_Member]:
    out = []
    for pod in pods:
        m = meta(pod)
        namespace = pod_namespace(pod)
        key = pod_key(pod)
        node = spec(pod).get("nodeName")
        created = m.get("creationTimestamp")
        rank = (0 if is_ready(pod) else 1, created if isinstance(created, str) else "", key)
        out.append(
            _Member(
                key, pod, node if isinstance(node, str) else None, namespace, m.get("labels"), rank
            )
        )
    return out


def _counted(
    members: Sequence[_Member],
    asked: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs,
    eligible_cache: dict[str, Any] | None,
) -> list[Counted] | None:
    """The constraints of `asked` (all DoNotSchedule), each counting the members; None
    when the scheduler cannot read them (its PreFilter error)."""
    state = spread_pre_filter(asked, snapshot, args)
    if isinstance(state, Status):
        return None
    cache_key = _eligibility_key(asked) if eligible_cache is not None else ""
    eligible = eligible_cache.get(cache_key) if eligible_cache is not None else None
    if eligible is None:
        eligible = spread_eligible_nodes(asked, snapshot, args)
        if eligible_cache is not None:
            eligible_cache[cache_key] = eligible
    if isinstance(eligible, Status):
        return None
    namespace = pod_namespace(asked)
    out: list[Counted] = []
    for j, c in enumerate(state.constraints):
        node_domain = eligible[j]
        counts = state.tp_value_to_match_num[j]
        domain_of: dict[str, str] = {}
        ours: dict[str, int] = {}
        # A ReplicaSet's pods share their labels' object (inventory): match it once.
        matched: dict[int, bool] = {}
        if c.counts_nothing:
            out.append(Counted(c.topology_key, domain_of, {}))
            continue
        # No eligible domain: nothing counted, every pod alike.
        least = state.global_min(j) if counts else 0
        for mb in members:
            domain = node_domain.get(mb.node) if mb.node is not None else None
            if domain is None or domain not in counts:
                continue
            hit = matched.get(id(mb.labels))
            if hit is None:
                hit = matched[id(mb.labels)] = mb.namespace == namespace and c.matches(
                    mb.labels if isinstance(mb.labels, dict) else {}
                )
            if not hit:
                continue
            domain_of[mb.key] = domain
            ours[domain] = ours.get(domain, 0) + 1
        # Only the domains holding its pods: a hostname constraint has thousands.
        floors = {d: max(0, counts[d] - n) for d, n in ours.items()}
        out.append(Counted(c.topology_key, domain_of, floors, least))
    return out


def counted_constraints(
    pods: Sequence[RawObj],
    snapshot: Snapshot,
    args: SpreadArgs = _DEFAULT_ARGS,
    *,
    eligible_cache: dict[str, Any] | None = None,
) -> list[Counted]:
    """The constraints of the ReplicaSet's oldest pod in priority order (DoNotSchedule,
    then ScheduleAnyway, each in spec order), each counting `pods` as the scheduler
    counts for one more such pod. A group the scheduler cannot read is left out.
    `eligible_cache`: a dict kept across calls on one snapshot (the eligible nodes of
    equal node inclusion inputs are asked once)."""
    return _counted_constraints(_members(pods), snapshot, args, eligible_cache)


def _counted_constraints(
    members: Sequence[_Member],
    snapshot: Snapshot,
    args: SpreadArgs,
    eligible_cache: dict[str, Any] | None,
) -> list[Counted]:
    if not members:
        return []
    first = min(members, key=lambda mb: (mb.rank[1], mb.key)).pod
    out: list[Counted] = []
    for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        picked = _constraints(first, action)
        if not picked:
            continue
        asked: dict[str, Any] = {
            **first,
            "spec": {
                **spec(first),
                "topologySpreadConstraints": [
                    {**c, "whenUnsatisfiable": DO_NOT_SCHEDULE} for c in picked
                ],
            },
        }
        group = _counted(members, asked, snapshot, args, eligible_cache)
        if group is not None:
            out.extend(group)
    return out


def replicaset_costs(
    pods: Sequence[RawObj],
    snapshot: Snapshot,
    args: SpreadArgs = _DEFAULT_ARGS,
    *,
    eligible_cache: dict[str, Any] | None = None,
) -> dict[str, int]:
    """The deletion cost of each of one ReplicaSet's running pods (see the module
    docstring); {} when its pods carry no topologySpreadConstraints. `eligible_cache`:
    as counted_constraints'."""
    members = _members(pods)
    counted = _counted_constraints(members, snapshot, args, eligible_cache)
    if not counted:
        return {}
    order = [mb.key for mb in sorted(members, key=lambda mb: mb.rank)]
    return costs_from_levels([levels(order, c) for c in counted], [c.least for c in counted])
