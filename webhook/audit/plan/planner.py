"""The rebalancing plan: the fewest pod moves after which nothing checked is violated.

    plan = make_plan(state, spreads, settings)     # Plan(moves, complete, reasons)

Every move is feasible in order on a private copy of the cluster (moves.Workspace:
the pod passes every filter of its profile on the target, given the moves before it,
and the target stays within allocatable); only pods a controller recreates move, each
at most once (an evicted pod comes back under another name). Counts after each move
are the scheduler's own (spread.spread_of on the copy).

**Budgets.** Every move is an eviction, so a pod whose eviction a PodDisruptionBudget
refuses (budgets.py: the disruption controller's count, the Eviction API's rule) never
moves; a workload left violated because of it says which budget holds it. The moves
are carried out in order, each after the previous pod's replacement is placed, and
then every eviction is allowed at its turn (_hold_by_budgets says why).

First, a workload whose constraints no state satisfies (bounds.conflict: one window
per constraint does not fit the capacity and the pods that cannot move, or a zone
and a hostname constraint over nodes spread so unevenly that no count per node
satisfies both) gets a reason instead of moves.

**Small problems: the exact minimum.** With few movable pods and nodes the plan is
found by iterative deepening (IDA*) over sequences of moves of any movable pod (a pod
of another workload may move to make room; the conflict check counts the room such
pods hold as free, so it never calls a workload conflicting that moves could fix):
states are the nodes of the pods (pods alike in namespace, labels, spec and owner are
interchangeable), the depth bound grows from the largest bounds.lower_bound over the
violated entries (a bound no plan beats, so the first plan found is a shortest one), targets come
from placement.place in each state. A budget on placements ends the search; the
greedy method then takes over.

**Large problems: greedy, by a potential.** Potential Φ = (E, Q), compared
lexicographically: E = Σ over checked entries of max(0, skew - maxSkew), Q = Σ over
checked entries of Σ over domains of count². A move is made only when it lowers Φ
strictly, by the scheduler's own recount. Both parts are non-negative integers, so
the lexicographic order is well-founded and the plan ends: after finitely many moves
no entry is violated (E = 0) or no candidate lowers Φ (the workload is reported as
stuck). Each step takes the entry with the largest excess, the movable pods of its
fullest domains (those whose removal lowers Φ most first; a few candidates, one
placement each), and sends the pod to the feasible node that lowers Φ most, all of
the pod's entries at once (zone and hostname together: a move that fixes the zone
but overloads a node is worth less than one that does both, and a move that undoes
a previous one cannot lower Φ, so the descheduler's zone/hostname eviction loop,
descheduler #1219 #1032 PR #1918, cannot happen here).

**Never more moves than the descheduler's evictions, where those fix the
violation.** RemovePodsViolatingTopologySpreadConstraint balances one constraint:
the k pods it evicts fix it only if they land where the domains end up in one
window [L, L+maxSkew], and any k moves that do so number at least
bounds.lower_bound = min over L of max(E_L, D_L) (E_L pods above the window, D_L room
below it; a move lowers each by at most one). A move from a fullest domain (count M)
to an emptiest one (count m, M - m > maxSkew) lowers every max(E_L, D_L) with
m <= L <= M - maxSkew by exactly one (inside that range it takes one pod above the
window and fills one place below it; at L = m only E_L counts, at L = M - maxSkew
only D_L) and leaves L outside that range no better than its ends, so the bound
falls by exactly one. That move also lowers Φ most among this entry's moves (it lowers
the max and raises the min where either is unique, and Q by 2(M - m - 1)), so the
greedy step takes it whenever a node of an emptiest domain is feasible; the plan
then has exactly lower_bound <= k moves. CAVEAT: when no node of an emptiest domain
is feasible (taints, affinity, capacity) the step takes the next best move and the
bound no longer holds; the descheduler's count does not hold either then, since its
node-fit check is per pod, not cumulative.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from webhook.audit.measure.budgets import Budgets
from webhook.audit.measure.spread import WorkloadSpread
from webhook.audit.plan.bounds import conflict, lower_bound
from webhook.audit.plan.workspace import Workspace
from webhook.audit.state.inventory import ClusterState, pod_signature
from webhook.config import Settings

__all__ = ["EXACT_NODES", "EXACT_PODS", "Move", "Plan", "make_plan"]

# The exact search runs when the cluster has at most this many nodes and the violated
# workloads at most this many movable pods; within PLACEMENT_BUDGET placements.
EXACT_NODES = 12
EXACT_PODS = 16
PLACEMENT_BUDGET = 4000
# The greedy step tries this many source pods (one placement each) before it calls
# an entry stuck.
CANDIDATES = 4


@dataclass(frozen=True, slots=True)
class Move:
    """Evict `pod` ("namespace/name") from `from_node`; `to_node` can take it then.
    workload: the pod's workload, as str(Workload)."""

    pod: str
    from_node: str
    to_node: str
    workload: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "from": self.from_node, "to": self.to_node}


@dataclass(frozen=True)
class Plan:
    """moves: in order; complete: after them nothing checked is violated; reasons:
    workload ("Kind namespace/name") -> why it cannot be balanced (constraints that no
    state satisfies together, or no capacity, or no move that helps); placements: how
    many placement decisions the planner made (its cost)."""

    moves: list[Move]
    complete: bool
    reasons: dict[str, str] = field(default_factory=dict)
    placements: int = 0


class _Planner:
    def __init__(self, space: Workspace, active: list[int]) -> None:
        self.space = space
        # Entries the plan must fix (violated ones of workloads not in conflict) and
        # every entry the pods that may move touch.
        self.active = active
        self.signature: dict[str, str] = {}
        self.stuck: set[int] = set()

    def sig(self, key: str) -> str:
        hit = self.signature.get(key)
        if hit is None:
            hit = self.signature[key] = pod_signature(self.space.pods[key])
        return hit

    def candidates(self) -> list[str]:
        """Movable pods counted by an active entry."""
        wanted = set(self.active)
        return sorted(k for k in self.space.movers if wanted.intersection(self.space.affected(k)))

    def every_mover(self) -> list[str]:
        """Every movable pod, those no entry counts included (moving one can make room)."""
        return sorted(self.space.movers)

    # ---- exact ------------------------------------------------------------------

    def exact(self, budget: int) -> list[tuple[str, str, str]] | None:
        """A shortest plan fixing every active entry, or None (budget spent, or none).
        Every movable pod may move, those of other workloads too (to make room)."""
        space = self.space
        pods = self.every_mover()
        watched = sorted({i for k in pods for i in space.affected(k)} | set(self.active))
        start = space.place_calls
        targets: dict[tuple[Any, str], list[str]] = {}

        def h() -> int:
            return max(
                (
                    lower_bound(
                        space.tracked[i].counts,
                        space.tracked[i].max_skew,
                        space.tracked[i].min_domains,
                    )
                    for i in self.active
                ),
                default=0,
            )

        def solved() -> bool:
            return all(space.tracked[i].excess == 0 for i in watched)

        def state() -> Any:
            return tuple(sorted((self.sig(k), space.where[k], k in space.movers) for k in pods))

        best: dict[Any, int] = {}
        over: list[int] = []

        def dfs(g: int, bound: int) -> bool:
            f = g + h()
            if f > bound:
                over.append(f)
                return False
            if solved():
                return True
            if space.place_calls - start > budget:
                return False
            here = state()
            seen: set[tuple[str, str]] = set()
            for key in pods:
                if key not in space.movers:
                    continue
                group = (self.sig(key), space.where[key])
                if group in seen:
                    continue
                seen.add(group)
                found = targets.get((here, key))
                if found is None:
                    found = targets[(here, key)] = space.targets(key)
                for to in found:
                    space.move(key, to)
                    after = state()
                    if best.get(after, bound + 1) > g + 1:
                        best[after] = g + 1
                        if dfs(g + 1, bound):
                            return True
                    space.undo()
            return False

        bound = h()
        while True:
            best.clear()
            over.clear()
            best[state()] = 0
            mark = len(space.moves)
            if dfs(0, bound):
                return space.moves[mark:]
            if space.place_calls - start > budget or not over:
                return None
            bound = min(over)

    # ---- greedy -----------------------------------------------------------------

    def greedy(self) -> None:
        space = self.space
        active = set(self.active)
        while True:
            open_ = [i for i in active if space.tracked[i].excess > 0 and i not in self.stuck]
            if not open_:
                return
            i = max(open_, key=lambda j: (space.tracked[j].excess, -j))
            if not self.step(i):
                self.stuck.add(i)

    def _sources(self, i: int) -> list[str]:
        """Movable pods of entry i's fullest domains, best first (one per group of pods
        alike on one node): those whose removal lowers the potential most."""
        space = self.space
        t = space.tracked[i]
        top = max(t.hist)
        full = {d for d, n in t.counts.items() if n == top}
        groups: dict[tuple[str, str], str] = {}
        movers = space.movers
        for key in space.members[i]:
            node = space.where[key]
            if key not in movers or t.node_domain.get(node) not in full:
                continue
            group = (self.sig(key), node)
            if group not in groups or key < groups[group]:
                groups[group] = key

        # A removal's effect depends only on the entries counting the pod and its
        # node's domain in each: worked out once per such combination.
        effect: dict[tuple[Any, ...], tuple[int, int]] = {}

        def gain(key: str) -> tuple[int, int, str, str]:
            node = space.where[key]
            affected = space.affected(key)
            domains = tuple(space.tracked[j].node_domain.get(node) for j in affected)
            hit = effect.get((affected, domains))
            if hit is None:
                de = dq = 0
                for j, domain in zip(affected, domains, strict=True):
                    u = space.tracked[j]
                    excess, q = u.shifted(domain, None)
                    de += excess - u.excess
                    dq += q
                hit = effect[(affected, domains)] = (de, dq)
            return (*hit, node, key)

        return [g[3] for g in sorted(gain(k) for k in groups.values())]

    def _best_target(self, key: str, targets: list[str]) -> tuple[int, int, str] | None:
        """(change of E, change of Q, node) of the target lowering the potential most
        (ties: first by name). A target's effect depends only on its domain in each
        entry the pod counts in: worked out once per domain."""
        space = self.space
        frm = space.where[key]
        entries = [space.tracked[j] for j in space.affected(key)]
        sources = [t.node_domain.get(frm) for t in entries]
        excess = [t.excess for t in entries]
        # The first target by name of each combination of domains (thousands of nodes,
        # a few combinations): the others of a combination cannot beat it.
        combos: list[tuple[str | None, ...]] = (
            list(zip(*(map(t.node_domain.get, targets) for t in entries), strict=True))
            if entries
            else [()] * len(targets)
        )
        first: dict[tuple[str | None, ...], str] = {}
        for combo, to in zip(combos, targets, strict=True):
            seen = first.get(combo)
            if seen is None or to < seen:
                first[combo] = to
        best: tuple[int, int, str] | None = None
        for combo, to in first.items():
            de = dq = 0
            for n, t in enumerate(entries):
                e, q = t.shifted(sources[n], combo[n])
                de += e - excess[n]
                dq += q
            if best is None or (de, dq, to) < best:
                best = (de, dq, to)
        return best

    def step(self, i: int) -> bool:
        """Make one move that lowers the potential, for entry i; False when none of the
        candidates has one."""
        space = self.space
        for key in self._sources(i)[:CANDIDATES]:
            touched = space.affected(key)
            before = space.potential(touched)
            targets = space.targets(key)
            best = self._best_target(key, targets)
            while best is not None and not space.fits(key, best[2]):
                targets.remove(best[2])
                best = self._best_target(key, targets)
            if best is None or (best[0], best[1]) >= (0, 0):
                continue
            space.move(key, best[2])
            space.refresh(touched)
            if space.potential(touched) < before:
                self.stuck.difference_update(touched)
                return True
            space.undo()
            space.refresh(touched)
        return False


def _hold_by_budgets(space: Workspace, budgets: Budgets) -> dict[str, str]:
    """Keep in place every pod whose eviction a PodDisruptionBudget refuses now; workload
    -> the first such budget, described.

    A move is an eviction whose replacement is placed (and Ready) before the next one,
    so along a plan each budget's healthy count never falls, and whether an eviction
    is allowed (budgets.Budgets.blocker) only grows with it: a pod allowed to go now is
    allowed at its turn, whatever the order. CAVEAT: a pod refused now stays refused,
    even where moving an unready pod of its budget first would have made room.
    """
    if not budgets:
        return {}
    held: dict[str, str] = {}
    for key in sorted(space.movers):
        budget = budgets.blocker(space.pods[key])
        if budget is None:
            continue
        space.movers.discard(key)
        node = space.where[key]
        if key in space.bystanders.get(node, ()):
            space.bystanders[node].remove(key)
        workload = str(space.workload.get(key, ""))
        held.setdefault(workload, budgets.describe(budget.split(", ")[0]))
    return held


def _by_workload(space: Workspace, entries: Iterable[int]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i in entries:
        out.setdefault(str(space.tracked[i].workload), []).append(i)
    return out


def make_plan(
    state: ClusterState,
    spreads: list[WorkloadSpread],
    settings: Settings,
    *,
    include_soft: bool = False,
) -> Plan:
    """The fewest moves after which no constraint of `spreads` is violated (see the
    module docstring); the caller's state is left untouched."""
    space = Workspace(state, spreads, settings, include_soft=include_soft)
    violated = [i for i, t in enumerate(space.tracked) if t.excess > 0]
    if not violated:
        return Plan([], True)
    held = _hold_by_budgets(space, Budgets.from_state(state))
    reasons: dict[str, str] = {}
    own = _by_workload(space, range(len(space.tracked)))
    active: list[int] = []
    for name, entries in _by_workload(space, violated).items():
        why = conflict(space, own[name])
        if why is not None:
            reasons[name] = why
        else:
            active.extend(entries)
    planner = _Planner(space, sorted(active))
    if active:
        movers = len(planner.every_mover())
        small = len(space.snapshot.nodes) <= EXACT_NODES and movers <= EXACT_PODS
        found = planner.exact(PLACEMENT_BUDGET) if small else None
        if found is None:
            planner.greedy()
    moved = {i for key, _, _ in space.moves for i in space.affected(key)}
    space.refresh(moved)
    left = [i for i, t in enumerate(space.tracked) if t.excess > 0]
    for name, entries in _by_workload(space, left).items():
        if name not in reasons:
            t = space.tracked[entries[0]]
            reasons[name] = (
                f"{t.spread.topology_key} maxSkew {t.max_skew}: no feasible move lowers the "
                f"skew further (skew {t.skew} after this plan)"
            )
        budget = held.get(name)
        if budget is not None:
            reasons[name] = (
                f"{budget}: no eviction of its pods is allowed, so no order of evictions "
                f"that respects it fixes this ({reasons[name]})"
            )
    moves = [Move(key, frm, to, str(space.workload.get(key, ""))) for key, frm, to in space.moves]
    return Plan(moves, not left, reasons, space.place_calls)
