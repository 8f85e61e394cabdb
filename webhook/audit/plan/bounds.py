"""What counting alone says about a plan: how many moves it needs at least, and whether
any state satisfies a workload's constraints together.

    lower_bound(counts, max_skew, min_domains)     # moves that one entry needs at least
    conflict(space, entries)                       # why no state satisfies them, or None

**Lower bound.** After a plan every count of an entry lies in a window [L, L+maxSkew]
(L the global minimum; 0 when there are fewer eligible domains than minDomains). A
move takes one pod out of one domain and puts it into one other, so reaching a window
takes at least E_L moves (the pods above it) and at least D_L (the room missing below
it): max(E_L, D_L), minimised over L. Moving a pod from a fullest domain to an
emptiest one lowers this bound by exactly one (plan.py's docstring), so the bound is
also what the greedy method spends when such moves are feasible.

**Conflict.** A state satisfies an entry when its counts fit one window; with node
capacities (how many more of the workload's pods each node takes, by allocatable pods,
cpu and memory and the pod's own static filters) and the pods that never move (they
hold their domain's count up), each domain's count ranges over an interval, and the
total is fixed. For one entry the check is exact on counts: some L leaves every
domain's interval non-empty and the total between the sums of the bounds. For two
entries of the same pods where one's domains nest in the other's (hostname within
zone), the fine windows bound each coarse domain's count from both sides; the same
sum test decides. CAVEAT: other combinations (two keys that cut across each other,
pod affinity) are only checked one entry at a time; a plan that then finds no move
reports the workload as stuck instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from webhook.api.resources import pod_requests
from webhook.audit.plan.workspace import CAPACITY_RESOURCES, Tracked, Workspace
from webhook.audit.state.inventory import unbound

__all__ = ["conflict", "lower_bound"]


def _window(values: Iterable[int], max_skew: int, fixed_zero: bool) -> range:
    counts = list(values)
    if fixed_zero:
        return range(0, 1)
    total, n = sum(counts), len(counts)
    if n == 0:
        return range(0, 1)
    low = max(0, -(-total // n) - max_skew)
    return range(low, total // n + 1)


def lower_bound(counts: Mapping[str, int], max_skew: int, min_domains: int = 1) -> int:
    """The fewest moves after which `counts` fit a window of width `max_skew`."""
    if not counts:
        return 0
    values = list(counts.values())
    if len(values) < min_domains:
        return sum(max(0, v - max_skew) for v in values)
    top, low = max(values), min(values)
    if top - low <= max_skew:
        return 0
    best = None
    for floor in range(low, top - max_skew + 1):
        above = sum(max(0, v - floor - max_skew) for v in values)
        below = sum(max(0, floor - v) for v in values)
        need = max(above, below)
        best = need if best is None else min(best, need)
    return best or 0


def _extra(
    allocatable: Mapping[str, int] | None,
    requested: Mapping[str, int],
    asks: Mapping[str, int],
    most: int,
) -> int:
    """How many more pods asking `asks` the node holds within allocatable (≤ most)."""
    if allocatable is None:
        return most
    fit = most
    for name in CAPACITY_RESOURCES:
        limit, held, ask = allocatable.get(name, 0), requested.get(name, 0), asks.get(name, 0)
        if held > limit:
            return 0
        if ask > 0:
            fit = min(fit, (limit - held) // ask)
    return max(0, fit)


def _per_node(space: Workspace, i: int) -> tuple[dict[str, int], dict[str, int], int]:
    """For entry i: per eligible node, the pods that never move and the most matching
    pods it can hold; and the total it counts."""
    t = space.tracked[i]
    total = sum(t.counts.values())
    on: dict[str, int] = {}
    fixed: dict[str, int] = {}
    for key in space.members[i]:
        node = space.where[key]
        if node not in t.node_domain:
            continue
        on[node] = on.get(node, 0) + 1
        if key not in space.movers:
            fixed[node] = fixed.get(node, 0) + 1
    pod = unbound(t.spread.pod)
    static = space.admits(pod)
    asks = pod_requests(pod, use_status=False)
    sig = tuple(sorted(asks.items()))
    cap: dict[str, int] = {}
    for name in t.node_domain:
        here = on.get(name, 0)
        room = 0
        if name in static:
            known = space.room.get((name, sig))
            if known is None:
                # Movable pods no entry counts could leave to make room: capacity is
                # counted without them, so a conflict is only claimed when even that
                # room does not suffice.
                held = dict(space.snapshot.nodes[name].requested)
                for resource, value in space.bystander_requests(name).items():
                    held[resource] = held.get(resource, 0) - value
                known = space.room[(name, sig)] = _extra(
                    space.allocatable(name), held, asks, 1 << 30
                )
            room = known
        cap[name] = min(total, here + room)
    return fixed, cap, total


def _single(t: Tracked, fixed: Mapping[str, int], cap: Mapping[str, int], total: int) -> bool:
    lo_of: dict[str, int] = {}
    hi_of: dict[str, int] = {}
    for node, domain in t.node_domain.items():
        lo_of[domain] = lo_of.get(domain, 0) + fixed.get(node, 0)
        hi_of[domain] = hi_of.get(domain, 0) + cap.get(node, 0)
    few = len(t.counts) < t.min_domains
    for floor in _window(t.counts.values(), t.max_skew, few):
        lows = [max(floor, lo_of.get(d, 0)) for d in t.counts]
        highs = [min(floor + t.max_skew, hi_of.get(d, 0)) for d in t.counts]
        if all(a <= b for a, b in zip(lows, highs, strict=True)) and (
            sum(lows) <= total <= sum(highs)
        ):
            return True
    return False


def _nested(
    coarse: Tracked,
    fine: Tracked,
    fixed: Mapping[str, int],
    cap: Mapping[str, int],
    total: int,
) -> bool | None:
    """Whether the two entries can be satisfied together; None when fine's domains do
    not nest in coarse's over the same nodes."""
    if coarse.node_domain.keys() != fine.node_domain.keys():
        return None
    parent: dict[str, str] = {}
    f_lo: dict[str, int] = {}
    f_hi: dict[str, int] = {}
    for node, g in fine.node_domain.items():
        z = coarse.node_domain[node]
        if parent.setdefault(g, z) != z:
            return None
        f_lo[g] = f_lo.get(g, 0) + fixed.get(node, 0)
        f_hi[g] = f_hi.get(g, 0) + cap.get(node, 0)
    # Fine domains alike in (fixed, capacity) within a coarse domain share one bound.
    groups: dict[str, dict[tuple[int, int], int]] = {}
    for g, z in parent.items():
        kind = groups.setdefault(z, {})
        kind[(f_lo[g], f_hi[g])] = kind.get((f_lo[g], f_hi[g]), 0) + 1
    fine_few = len(fine.counts) < fine.min_domains
    coarse_few = len(coarse.counts) < coarse.min_domains
    for m in _window(fine.counts.values(), fine.max_skew, fine_few):
        sums: dict[str, tuple[int, int]] = {}
        ok = True
        for z, kinds in groups.items():
            lo = hi = 0
            for (a, b), n in kinds.items():
                x, y = max(m, a), min(m + fine.max_skew, b)
                if x > y:
                    ok = False
                    break
                lo, hi = lo + n * x, hi + n * y
            if not ok:
                break
            sums[z] = (lo, hi)
        if not ok:
            continue
        for floor in _window(coarse.counts.values(), coarse.max_skew, coarse_few):
            lows = [max(floor, sums[z][0]) for z in coarse.counts]
            highs = [min(floor + coarse.max_skew, sums[z][1]) for z in coarse.counts]
            if all(a <= b for a, b in zip(lows, highs, strict=True)) and (
                sum(lows) <= total <= sum(highs)
            ):
                return True
    return False


def _describe(t: Tracked) -> str:
    c = t.spread
    extra = f", minDomains {t.min_domains}" if c.min_domains is not None else ""
    return f"{c.topology_key} maxSkew {c.max_skew}{extra} over {len(t.counts)} domain(s)"


def conflict(space: Workspace, entries: list[int]) -> str | None:
    """Why no state satisfies these entries (one workload's) together, or None when
    counting finds no reason (see the module docstring)."""
    bases: dict[int, tuple[dict[str, int], dict[str, int], int]] = {}
    for i in entries:
        t = space.tracked[i]
        if t.excess == 0:
            continue
        fixed, cap, total = bases[i] = _per_node(space, i)
        if not _single(t, fixed, cap, total):
            return (
                f"{_describe(t)}: no placement of its {total} matching pod(s) fits "
                "within the nodes' capacity and the pods that cannot move"
            )
    for i in entries:
        for j in entries:
            a, b = space.tracked[i], space.tracked[j]
            if i == j or (a.excess == 0 and b.excess == 0):
                continue
            if a.namespace != b.namespace or a.spread.selector != b.spread.selector:
                continue
            if len(b.counts) <= len(a.counts):
                continue
            base = bases.get(i) or bases.get(j) or _per_node(space, i)
            bases[i] = base
            if _nested(a, b, *base) is False:
                return (
                    f"{_describe(a)} and {_describe(b)} conflict: no placement of its "
                    f"{base[2]} matching pod(s) satisfies both"
                )
    return None
