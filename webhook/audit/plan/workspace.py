"""The planner's working state: a private copy of the cluster where pods move, the
checked constraints tracked as counts per domain, and what a move may do.

    space = Workspace(state, spreads, settings, include_soft=False)
    targets = space.targets(pod_key)        # nodes the pod may move to, now
    space.move(pod_key, node); space.undo()

A **move** takes a running pod off its node in the copy and binds it to another with
Snapshot.add_pod. A node is a **target** when the pod, taken off its node, passes
every filter of the profile that schedules it there (placement.place on the copy,
NodeVerdict.feasible) and the node stays within its allocatable pods, cpu and memory
(checked here as well: a node already over its allocatable receives nothing).

Each checked constraint (one ConstraintSpread entry) is **tracked**: its eligible
nodes and their domain (asked of the scheduler's PodTopologySpread, whose node
inclusion PreFilter applies: every topology key of the pod's constraints of that
whenUnsatisfiable, nodeAffinityPolicy, nodeTaintsPolicy), its counts per domain,
kept up to date on every move of a pod its selector matches, and a histogram of
those counts (so skew after a move is cheap to work out for every target). The counts
are an estimate checked against the scheduler's own answer (spread.spread_of) after
each accepted move: `refresh`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from webhook.api.kube import RawObj, as_dict, pod_labels, pod_namespace, spec
from webhook.api.labels import compile_selector
from webhook.api.pods import pod_key
from webhook.api.resources import node_allocatable, pod_requests
from webhook.audit.measure.spread import (
    ConstraintSpread,
    WorkloadSpread,
    as_scheduled,
    evaluation_key,
    spread_of,
)
from webhook.audit.state.inventory import ClusterState, Workload, movable, unbound
from webhook.config import Settings
from webhook.scheduler.framework.types import Status
from webhook.scheduler.placement import (
    admitted_nodes,
    adopt,
    feasible_nodes,
    spread_eligible_nodes,
)

__all__ = ["CAPACITY_RESOURCES", "Tracked", "Workspace", "fits_allocatable"]

# The resources a receiving node must stay within (the spec's "allocatable pods, cpu
# and memory").
CAPACITY_RESOURCES = ("pods", "cpu", "memory")
# The filters whose verdicts admits() takes: what counting capacity needs of a node.
_ADMITTING = ("NodeUnschedulable", "TaintToleration", "NodeAffinity")
# targets() checks allocatable on every feasible node up to this many.
_CHECK_ALL = 200


def fits_allocatable(
    allocatable: Mapping[str, int] | None, requested: Mapping[str, int], asks: Mapping[str, int]
) -> bool:
    """Whether a node with `allocatable` (node_allocatable) holding `requested` can take
    a pod asking `asks` (pod_requests) within its allocatable pods, cpu and memory;
    never when it is already over any of them. A node reporting no allocatable is
    unlimited, as in the scheduling model."""
    if allocatable is None:
        return True
    for name in CAPACITY_RESOURCES:
        limit = allocatable.get(name, 0)
        held = requested.get(name, 0)
        if held > limit or held + asks.get(name, 0) > limit:
            return False
    return True


@dataclass
class Tracked:
    """One checked constraint entry, followed through the moves.

    spread: the entry as audited; workload: whose entry it is; namespace and matches:
    the pods it counts (the entry's selector, matchLabelKeys merged); node_domain:
    eligible node -> its domain; counts: domain -> matching pods (every eligible
    domain present); hist: count value -> how many domains hold it (only values held
    by some domain); min_domains: below this many eligible domains the global minimum
    is 0.
    """

    spread: ConstraintSpread
    workload: Workload
    namespace: str
    matches: Callable[[Mapping[str, str]], bool]
    node_domain: dict[str, str]
    counts: dict[str, int]
    hist: dict[int, int] = field(default_factory=dict)
    min_domains: int = 1
    # excess, worked out once per change of the counts (the planner reads it often)
    _excess: int | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.rehist()

    @property
    def max_skew(self) -> int:
        return self.spread.max_skew

    def rehist(self) -> None:
        hist: dict[int, int] = {}
        for n in self.counts.values():
            hist[n] = hist.get(n, 0) + 1
        self.hist = hist
        self._excess = None

    def skew_of(self, hist: Mapping[int, int]) -> int:
        if not hist:
            return 0
        top = max(hist)
        low = 0 if len(self.counts) < self.min_domains else min(hist)
        return top - low

    @property
    def skew(self) -> int:
        return self.skew_of(self.hist)

    @property
    def excess(self) -> int:
        hit = self._excess
        if hit is None:
            hit = self._excess = max(0, self.skew - self.max_skew)
        return hit

    @property
    def square(self) -> int:
        return sum(n * n for n in self.counts.values())

    def shifted(self, out_of: str | None, into: str | None) -> tuple[int, int]:
        """(excess, change of sum of squares) if one matching pod left domain `out_of`
        and joined `into` (None: a node outside the spread)."""
        if out_of == into:
            return self.excess, 0
        hist = dict(self.hist)
        dq = 0
        for domain, step in ((out_of, -1), (into, 1)):
            if domain is None:
                continue
            n = self.counts[domain]
            hist[n] -= 1
            if not hist[n]:
                del hist[n]
            hist[n + step] = hist.get(n + step, 0) + 1
            dq += 2 * n * step + 1
        return max(0, self.skew_of(hist) - self.max_skew), dq

    def shift(self, out_of: str | None, into: str | None) -> None:
        self._excess = None
        for domain, step in ((out_of, -1), (into, 1)):
            if domain is None:
                continue
            n = self.counts[domain]
            self.hist[n] -= 1
            if not self.hist[n]:
                del self.hist[n]
            self.counts[domain] = n + step
            self.hist[n + step] = self.hist.get(n + step, 0) + 1


class Workspace:
    """The copy of the cluster the plan is worked out on (see the module docstring).

    pods: pod key -> the pod as the audit keeps it, bound where it now is; where:
    pod key -> its node now; movers: the pods a plan may move (a controller recreates
    them, a profile schedules them, not moved yet); tracked: every checked entry;
    moves: (pod key, from, to) applied so far, in order.
    """

    def __init__(
        self,
        state: ClusterState,
        spreads: Iterable[WorkloadSpread],
        settings: Settings,
        *,
        include_soft: bool = False,
    ) -> None:
        self.state = state
        self.settings = settings
        self.include_soft = include_soft
        self.snapshot = state.snapshot.copy()
        adopt(self.snapshot, state.snapshot)
        self.tracked: list[Tracked] = []
        self._eligible: dict[tuple[tuple[str, ...] | None, int], dict[str, str]] = {}
        for w in spreads:
            for c in w.constraints:
                if c.error is None and c.domains is not None:
                    self.tracked.append(self._track(w.workload, c))
        by_ns: dict[str, list[int]] = {}
        for i, t in enumerate(self.tracked):
            by_ns.setdefault(t.namespace, []).append(i)
        self._by_ns = by_ns
        self.pods: dict[str, RawObj] = {}
        self.where: dict[str, str] = {}
        self.workload: dict[str, Workload] = {}
        self.movers: set[str] = set()
        # node -> the movable pods on it that no entry counts (they can make room)
        self.bystanders: dict[str, list[str]] = {}
        self._requests_by_spec: dict[int, dict[str, int]] = {}
        # entry -> the running pods it counts (movable or not), in the order read
        self.members: list[list[str]] = [[] for _ in self.tracked]
        self._affects: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[int, ...]] = {}
        self._affected: dict[str, tuple[int, ...]] = {}
        for pod in state.running:
            key = pod_key(pod)
            self.pods[key] = pod
            self.where[key] = str(spec(pod).get("nodeName"))
            touched = self.affected(key)
            for i in touched:
                self.members[i].append(key)
            if movable(pod) and settings.framework_for(pod) is not None:
                # A pod no entry counts may still move, to make room (the exact search
                # tries it on small problems).
                self.movers.add(key)
                self.workload[key] = state.workload_of(pod)
                if not touched:
                    self.bystanders.setdefault(self.where[key], []).append(key)
            elif touched:
                self.workload[key] = state.workload_of(pod)
        self.moves: list[tuple[str, str, str]] = []
        self.place_calls = 0
        self._allocatable: dict[str, dict[str, int] | None] = {}
        # (node, requests) -> how many more such pods it holds, before any move
        self.room: dict[tuple[str, tuple[tuple[str, int], ...]], int] = {}
        self._admits: dict[str, set[str]] = {}
        # Nodes over their allocatable pods, cpu or memory: they receive nothing.
        # A move never puts a node over, and a node a pod leaves stays in (checked
        # again by fits()), so this set only ever needs the start's nodes.
        self.over = {
            name
            for name, info in self.snapshot.nodes.items()
            if not fits_allocatable(self.allocatable(name), info.requested, {})
        }

    # ---- tracking ---------------------------------------------------------------

    def _track(self, workload: Workload, c: ConstraintSpread) -> Tracked:
        pod = c.pod
        key = (evaluation_key(pod, (c.when_unsatisfiable,)), c.index)
        node_domain = self._eligible.get(key)
        if node_domain is None:
            node_domain = self._eligible[key] = self._eligible_nodes(pod, c)
        min_domains = c.min_domains if isinstance(c.min_domains, int) else 1
        return Tracked(
            spread=c,
            workload=workload,
            namespace=pod_namespace(pod),
            matches=compile_selector(c.selector) if c.selector else (lambda _labels: False),
            node_domain=node_domain,
            counts=dict(c.domains),
            min_domains=min_domains,
        )

    def _eligible_nodes(self, pod: RawObj, c: ConstraintSpread) -> dict[str, str]:
        """The nodes taking part in entry c's spread -> their domain, as the scheduler's
        PodTopologySpread includes them (placement.spread_eligible_nodes), on the copy
        as the plan starts (nodes do not change while planning)."""
        scheduled = as_scheduled(pod, c.when_unsatisfiable)
        if scheduled is None:
            return {}
        picked, asked = scheduled
        eligible = spread_eligible_nodes(asked, self.snapshot, self.settings.spread)
        if isinstance(eligible, Status):  # not tracked: the audit reported its error
            return {}
        return eligible[[i for i, _ in picked].index(c.index)]

    def bystander_requests(self, node: str) -> dict[str, int]:
        """The summed requests of the movable pods on `node` that no entry counts (the
        room they hold could be freed). Replicas share their spec (inventory.Collector):
        requests are worked out once per spec."""
        total: dict[str, int] = {}
        for key in self.bystanders.get(node, ()):
            pod = self.pods[key]
            held = spec(pod)
            asks = self._requests_by_spec.get(id(held.get("containers")))
            if asks is None:
                asks = pod_requests(unbound(pod), use_status=False)
                self._requests_by_spec[id(held.get("containers"))] = asks
            for resource, value in asks.items():
                total[resource] = total.get(resource, 0) + value
        return total

    def affected(self, key: str) -> tuple[int, ...]:
        """The tracked entries counting pod `key` (its namespace, its labels match)."""
        hit = self._affected.get(key)
        if hit is not None:
            return hit
        pod = self.pods[key]
        labels = pod_labels(pod)
        sig = (pod_namespace(pod), tuple(sorted(labels.items())))
        hit = self._affects.get(sig)
        if hit is None:
            hit = tuple(
                i
                for i in self._by_ns.get(pod_namespace(pod), ())
                if self.tracked[i].matches(labels)
            )
            self._affects[sig] = hit
        self._affected[key] = hit
        return hit

    def potential(self, entries: Iterable[int] | None = None) -> tuple[int, int]:
        """(total excess of skew over maxSkew, total sum of squared counts) over the
        entries (default: all)."""
        picked = self.tracked if entries is None else [self.tracked[i] for i in entries]
        return sum(t.excess for t in picked), sum(t.square for t in picked)

    def refresh(self, entries: Iterable[int]) -> bool:
        """Take the scheduler's own counts for `entries` (spread.spread_of on the copy);
        True when they all equal the estimate."""
        same = True
        by_pod: dict[int, list[Tracked]] = {}
        for i in entries:
            t = self.tracked[i]
            by_pod.setdefault(id(t.spread.pod), []).append(t)
        for group in by_pod.values():
            fresh = spread_of(
                group[0].spread.pod,
                self.snapshot,
                include_soft=self.include_soft,
                args=self.settings.spread,
            )
            for t in group:
                for c in fresh:
                    if (
                        c.index == t.spread.index
                        and c.when_unsatisfiable == t.spread.when_unsatisfiable
                    ):
                        if c.domains != t.counts:
                            same = False
                            t.counts = dict(c.domains)
                            t.rehist()
        return same

    # ---- moving -------------------------------------------------------------------

    def _take(self, key: str) -> None:
        meta = as_dict(self.pods[key].get("metadata"))
        self.snapshot.delete({"kind": "Pod", "metadata": meta})

    def targets(self, key: str) -> list[str]:
        """The nodes pod `key` may move to now (see the module docstring)."""
        pod = self.pods[key]
        fresh = unbound(pod)
        framework = self.settings.framework_for(fresh)
        if framework is None:
            return []
        frm = self.where[key]
        asks = pod_requests(fresh, use_status=False)
        self._take(key)
        try:
            self.place_calls += 1
            nodes = self.snapshot.nodes
            over = self.over
            found = [
                n
                for n in feasible_nodes(fresh, self.snapshot, framework=framework)
                if n not in over
            ]
            if len(found) <= _CHECK_ALL:
                found = [
                    n
                    for n in found
                    if fits_allocatable(self.allocatable(n), nodes[n].requested, asks)
                ]
            return [n for n in found if n != frm]
        finally:
            self.snapshot.add_pod(pod, frm)

    def fits(self, key: str, node: str) -> bool:
        """The explicit allocatable check of a target (targets() makes it on every
        node of small clusters; on large ones the planner makes it on the node it
        picks)."""
        asks = pod_requests(unbound(self.pods[key]), use_status=False)
        return fits_allocatable(self.allocatable(node), self.snapshot.nodes[node].requested, asks)

    def admits(self, pod: RawObj) -> set[str]:
        """Nodes whose static filters let the pod in: the verdicts of the pod's profile's
        NodeUnschedulable, TaintToleration and NodeAffinity (what counting capacity
        needs; a move is still checked by place())."""
        s = spec(pod)
        tolerations = s.get("tolerations")
        required = as_dict(as_dict(s.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        sig = json.dumps(
            [s.get("schedulerName"), s.get("nodeSelector"), required, tolerations],
            sort_keys=True,
        )
        hit = self._admits.get(sig)
        if hit is None:
            framework = self.settings.framework_for(unbound(pod))
            hit = admitted_nodes(pod, self.snapshot, _ADMITTING, framework=framework)
            self._admits[sig] = hit
        return hit

    def allocatable(self, node: str) -> dict[str, int] | None:
        """node_allocatable of a node (nodes do not change while planning)."""
        if node not in self._allocatable:
            self._allocatable[node] = node_allocatable(self.snapshot.nodes[node].node)
        return self._allocatable[node]

    def move(self, key: str, to: str) -> None:
        """Move pod `key` to node `to` in the copy; tracked counts follow."""
        frm = self.where[key]
        self._take(key)
        self.snapshot.add_pod(self.pods[key], to)
        self.pods[key] = {**self.pods[key], "spec": {**spec(self.pods[key]), "nodeName": to}}
        self.where[key] = to
        self._shift(key, frm, to)
        self.moves.append((key, frm, to))
        self.movers.discard(key)

    def undo(self) -> None:
        """Take back the last move."""
        key, frm, to = self.moves.pop()
        self._take(key)
        self.snapshot.add_pod(self.pods[key], frm)
        self.pods[key] = {**self.pods[key], "spec": {**spec(self.pods[key]), "nodeName": frm}}
        self.where[key] = frm
        self._shift(key, to, frm)
        self.movers.add(key)

    def _shift(self, key: str, frm: str, to: str) -> None:
        for i in self.affected(key):
            t = self.tracked[i]
            t.shift(t.node_domain.get(frm), t.node_domain.get(to))
