"""The drills' shared parts: what a drill reports, and the scheduler queue that places the
pods controllers recreate. The three drills: without_nodes (here), unreachable_nodes
and drain_nodes (drills.py).

    drill = without_nodes(state, parse_selector("topology.kubernetes.io/zone=a"), settings)
    drill.state, drill.pending, drill.reasons

**without_nodes**: the nodes the selector matches go, with every pod bound to them
(the Node objects deleted: the instances are gone and the cloud node controller
removed them; the pod garbage collector then deletes their pods). Their running pods
come back as their controllers would recreate them. Pods that do not come back
elsewhere are not re-placed: DaemonSet pods and mirror pods (owned by their Node)
belong to their node, and terminating pods were never running.

**The queue** (Replacer): each recreated pod is placed by the whole scheduler profile
that schedules it (Settings.framework_for), one at a time in kube-scheduler's queue
order (priority, highest first; then creation time, oldest first; then
namespace/name). A pod that fits nowhere waits, and the waiting pods are tried again,
in the same order, after each later placement (a placed pod can open a domain to a
spread or satisfy an affinity). A pod no node fits may preempt (DefaultPreemption):
its victims leave (`preempted`), those a controller recreates come back queued behind
it, the waiting pods are tried again (the victims freed room), and it binds on its
nominated node. A pod the scheduler never runs a cycle for (another scheduler's
schedulerName, resource claims: placement.not_scheduled) is listed apart in
`not_scheduled`, neither placed nor pending. After every drill, the pending pods are
diagnosed: would a new node of some node group take them (scheduler.scaleup)?
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import (
    RawObj,
    as_dict,
    meta,
    named_controller_of,
    pod_labels,
    pod_namespace,
    spec,
)
from webhook.api.labels import compile_selector
from webhook.api.pods import pod_key
from webhook.audit.state.inventory import (
    NODE_BOUND_CONTROLLERS,
    ClusterState,
    Workload,
    pod_signature,
)
from webhook.config import Settings
from webhook.controllers.pods import recreated
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import (
    Placement,
    not_scheduled,
    resolve_priority,
    selected_node,
    settle,
)
from webhook.scheduler.scaleup import Diagnosis, Pending, diagnose, node_groups

__all__ = [
    "WORKLOAD",
    "Replacer",
    "WhatIf",
    "diagnose_pending",
    "matching_nodes",
    "queue_order",
    "requeue_hint",
    "without_nodes",
]

WITHOUT = "without"
UNREACHABLE = "unreachable"
DRAIN = "drain"
# The workload drills (--scale, --rollout: webhook/audit/workloads/changes.py).
WORKLOAD = "workload"


@dataclass(frozen=True)
class WhatIf:
    """A drill's outcome.

    removed: the nodes the selector matched (sorted): deleted (without), unreachable,
    or cordoned and drained (drain); state: the cluster afterwards; placed: pod
    ("ns/name", its original name) -> the node its replacement went to; pending:
    recreated pods that fit nowhere, in queue order; reasons: pending pod -> failure
    reason -> nodes failing with it (its last attempt); kind: WITHOUT, UNREACHABLE or
    DRAIN; not_recreated: pods down that no controller brings back (StatefulSet pods
    behind an unreachable node, bare pods); blocked: pod -> the budget refusing its
    eviction (drain); drained: the nodes left with only DaemonSet and mirror pods
    (drain); disrupted: (pod, node) in the order the drill evicted them (drain: the
    Eviction API; the outage: taint-based eviction); displaced: pod -> its workload,
    for every pod the drill took down; replacements: pending pod -> the replacement
    as created (what a comparison re-places); not_scheduled: pod -> why this
    scheduler does not place it (placement.NotScheduled.text()); preempted: the pods
    preemptions evicted, in order; scale_up: whether a new node of some group would
    take each pending pod (diagnose_pending); workload_changes, steps, stalled: the
    workload drills' own report (workloads.py: `workloadChanges`, `steps`, `stalled`,
    as JSON).
    """

    removed: list[str]
    state: ClusterState
    placed: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    kind: str = WITHOUT
    not_recreated: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    drained: list[str] = field(default_factory=list)
    disrupted: list[tuple[str, str]] = field(default_factory=list)
    displaced: dict[str, Workload] = field(default_factory=dict)
    replacements: dict[str, RawObj] = field(default_factory=dict, repr=False)
    not_scheduled: dict[str, str] = field(default_factory=dict)
    preempted: list[str] = field(default_factory=list)
    scale_up: Diagnosis | None = None
    workload_changes: list[RawObj] = field(default_factory=list)
    steps: list[RawObj] | None = None
    stalled: RawObj | None = None


def diagnose_pending(
    state: ClusterState, pending: Mapping[str, RawObj], settings: Settings | None = None
) -> Diagnosis:
    """Would a new node help the pods a drill leaves pending (`pending`: key -> the
    replacement as created, unbound), against `state`, the cluster after the drill;
    node groups by settings.node_group_labels. A pod no scheduler profile schedules is
    left out: no node helps it."""
    settings = settings or Settings()
    items = []
    for key, pod in pending.items():
        framework = settings.framework_for(pod)
        if framework is not None:
            items.append(Pending(key, pod, framework))
    groups = node_groups(state.snapshot, settings.node_group_labels)
    return diagnose(items, state.snapshot, groups)


def queue_order(pod: RawObj) -> tuple[int, str, str]:
    """kube-scheduler's PrioritySort: higher priority first, then older first."""
    priority = spec(pod).get("priority")
    created = meta(pod).get("creationTimestamp")
    return (
        -(priority if isinstance(priority, int) and not isinstance(priority, bool) else 0),
        created if isinstance(created, str) else "",
        pod_key(pod),
    )


def node_bound(pod: RawObj) -> bool:
    """A DaemonSet's pod or a mirror pod (owned by its Node): it belongs to its node."""
    ref = named_controller_of(pod)
    return ref is not None and ref.get("kind") in NODE_BOUND_CONTROLLERS


def matching_nodes(snapshot: Snapshot, selector: RawObj) -> list[str]:
    """The nodes a metav1.LabelSelector over node labels matches, sorted."""
    matches = compile_selector(selector)
    return sorted(name for name, info in snapshot.nodes.items() if matches(info.labels))


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A recreated pod in the queue: its place in the queue, its original key, the
    replacement (unbound), its signature (twins answer alike), its namespace, and its
    queueing hint for a pod add (any: every add may help it)."""

    seq: int
    key: str
    pod: RawObj
    signature: str
    wakes: Callable[[RawObj], bool]
    namespace: str
    any: bool


def _selectors(pod: RawObj) -> list[Callable[[Mapping[str, str]], bool]]:
    raw = spec(pod).get("topologySpreadConstraints")
    out = []
    for c in raw if isinstance(raw, list) else ():
        selector = c.get("labelSelector") if isinstance(c, dict) else None
        if isinstance(selector, dict):
            # Without matchLabelKeys' values: a wider selector wakes the pod more often,
            # never less.
            out.append(compile_selector(selector))
    return out


def requeue_hint(pod: RawObj) -> Callable[[RawObj], bool]:
    """Whether binding a pod (`added`) may make `pod`, which fits nowhere now, fit:
    kube-scheduler's queueing hints for a pod add. PodTopologySpread: the added pod is
    in its namespace and one of its constraints' selectors matches it; InterPodAffinity:
    it has a required pod affinity term (the added pod may satisfy it). Every other
    filter only gets stricter when a pod is added (resources, ports, anti-affinity).

    Port of podtopologyspread/plugin.go: isSchedulableAfterPodChange and
    interpodaffinity/plugin.go: isSchedulableAfterPodChange, for an added pod.
    """
    affinity = as_dict(as_dict(spec(pod).get("affinity")).get("podAffinity"))
    if affinity.get("requiredDuringSchedulingIgnoredDuringExecution"):
        return _always
    selectors = _selectors(pod)
    if not selectors:
        return _never
    namespace = pod_namespace(pod)

    def wakes(added: RawObj) -> bool:
        if pod_namespace(added) != namespace:
            return False
        labels = pod_labels(added)
        return any(matches(labels) for matches in selectors)

    return wakes


def _always(_added: RawObj) -> bool:
    return True


def _never(_added: RawObj) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class _Failed:
    """A pod that fit nowhere: key (whose reasons its twins share), draws (the random
    draws its cycle made), item (the waiting pod)."""

    key: str
    draws: list[int]
    item: _Waiting


class Replacer:
    """kube-scheduler's queue for the pods a drill's controllers recreate (see the module
    docstring), on the drill's private snapshot `work`.

    placed: original pod key -> node; reasons: pending pod -> reasons of its last
    attempt; bound: the replacements as bound; waiting: the pods that fit nowhere, in
    queue order; on_placed: told (original key, the replacement as bound) after each
    placement. A waiting pod is tried again only after a placement its queueing hint
    says may help (requeue_hint), as kube-scheduler moves a pod back from its
    unschedulable queue, and after a preemption (its victims freed room);
    not_scheduled: pod -> why no cycle runs for it; preempted: the victims, in order.
    `residents`: the running pods of the cluster by key, which a preemption may evict
    (those a controller recreates are queued again). A pod keeps the key it was
    submitted under through renames (an outage's replacement binds as `<name>-new`):
    placed, pending and reasons name it by that key, also once it is preempted and
    queued again; `preempted` names the pod evicted as the drill's state names it.
    """

    def __init__(
        self,
        work: Snapshot,
        settings: Settings,
        on_placed: Callable[[str, RawObj], None] | None = None,
        residents: Iterable[RawObj] = (),
    ) -> None:
        self.work = work
        self.settings = settings
        # One run of the scheduler: its sampling start index and draws carry over.
        self.sampler = settings.new_sampler()
        self.on_placed = on_placed
        self.not_scheduled: dict[str, str] = {}
        self.preempted: list[str] = []
        self._residents = {pod_key(p): p for p in residents}
        # A bound replacement's key in `work` -> the key the queue knows it by (an
        # outage's replacements are bound as `<name>-new`): one key per pod, so a
        # preempted replacement leaves `placed` and comes back under the same key.
        self._queued_as: dict[str, str] = {}
        self.placed: dict[str, str] = {}
        self.reasons: dict[str, dict[str, int]] = {}
        self.bound: list[RawObj] = []
        # The waiting pods by place in the queue; by namespace (a pod add wakes only
        # pods of its namespace) and those any add may wake (required pod affinity).
        self.waiting: dict[int, _Waiting] = {}
        self._by_ns: dict[str, dict[int, _Waiting]] = {}
        self._any: dict[int, _Waiting] = {}
        self._seq = 0
        # signature -> its queueing hint (twins share one)
        self._hints: dict[str, Callable[[RawObj], bool]] = {}
        # Signatures of pods that failed, with the key whose reasons they share and the
        # random draws their cycle made: nothing they depend on moved since (see
        # _forget), so their twins fail too, unasked.
        self._failed: dict[str, _Failed] = {}
        # The snapshot's version after this queue's last change: another one means the
        # drill changed it (a drain's eviction), which may undo any failure.
        self._seen = work.version

    @property
    def pending(self) -> list[str]:
        return [w.key for w in self.waiting.values()]

    @property
    def pending_pods(self) -> dict[str, RawObj]:
        """Pending pod -> its replacement, unbound."""
        return {w.key: w.pod for w in self.waiting.values()}

    def running(self, staying: Iterable[RawObj]) -> list[RawObj]:
        """The pods running after the drill: `staying` but those preempted, then the
        replacements bound."""
        gone = set(self.preempted)
        return [p for p in staying if pod_key(p) not in gone] + self.bound

    def after(self, state: ClusterState, staying: Iterable[RawObj]) -> ClusterState:
        """The cluster after a node drill on `state`: the work snapshot, `staying` as
        running() leaves it, the owners and unscheduled pods as they were."""
        return ClusterState(self.work, self.running(staying), state.owners, state.unscheduled)

    def outcome(self, removed: list[str], after: ClusterState, **report: Any) -> WhatIf:
        """Every drill's ending: its WhatIf on `after` with the queue's results (placed,
        pending and why, the pending replacements, the pods not scheduled and
        preempted) and the pending pods' scale-up diagnosis; `report`: the drill's own
        WhatIf fields (kind, disrupted, displaced, ...)."""
        pending = self.pending_pods
        return WhatIf(
            removed,
            after,
            dict(self.placed),
            self.pending,
            dict(self.reasons),
            replacements=pending,
            not_scheduled=dict(self.not_scheduled),
            preempted=list(self.preempted),
            scale_up=diagnose_pending(after, pending, self.settings),
            **report,
        )

    def _attempt(self, key: str, fresh: RawObj) -> RawObj | None:
        # Only the node it goes to is needed (not every node's verdict): a pod that fits
        # gets just that; one that fits nowhere, the whole decision (its reasons, and
        # the preemption that may follow).
        framework = self.settings.framework_for(fresh)
        got = selected_node(fresh, self.work, framework=framework, sampler=self.sampler)
        victims: tuple[str, ...] = ()
        reasons: dict[str, int] = {}
        if isinstance(got, Placement):
            node, victims = settle(got, self.work)
            reasons = got.reasons
        else:
            node = got
        if node is None:
            self.reasons[key] = dict(reasons)
            return None
        self.work.add_pod(fresh, node)
        self.placed[key] = node
        self.reasons.pop(key, None)
        bound = {**fresh, "spec": {**fresh["spec"], "nodeName": node}}
        self._queued_as[pod_key(bound)] = key
        self.bound.append(bound)
        if self.on_placed is not None:
            self.on_placed(key, bound)
        if victims:
            self._preempt(victims)
        return bound

    def _preempt(self, victims: Iterable[str]) -> None:
        """The victims of a preemption leave (settle took them off the snapshot): they no
        longer run, those a controller recreates are queued again, and every waiting pod
        is tried again (their room is free now)."""
        self._failed.clear()
        back: list[tuple[str, RawObj]] = []
        for ref in victims:
            self.preempted.append(ref)
            # A victim is a resident (its own key) or a replacement bound earlier in
            # this drill, known to the queue by its original key.
            key = self._queued_as.pop(ref, ref)
            self.placed.pop(key, None)
            pod = self._residents.pop(ref, None)
            if pod is None:  # a replacement bound earlier in this drill
                pod = next((b for b in self.bound if pod_key(b) == ref), None)
                self.bound = [b for b in self.bound if pod_key(b) != ref]
            if pod is not None and named_controller_of(pod) is not None and not node_bound(pod):
                back.append((key, recreated(pod)))
        self._try_waiting()
        self.submit(sorted(back, key=lambda kv: queue_order(kv[1])))

    def retry(self) -> None:
        """Try every waiting pod again, in queue order: pods left the cluster and freed
        room (kube-scheduler moves its unschedulable pods back on a pod delete)."""
        self._failed.clear()
        self._try_waiting()

    def _try_waiting(self) -> None:
        """Try each waiting pod once, in queue order (one placed meanwhile, woken by an
        earlier bind, is skipped)."""
        for item in list(self.waiting.values()):
            if item.seq in self.waiting:
                bound = self._try(item)
                if bound is not None:
                    self._placed(item)
                    self._wake(bound)

    # False: every pod is tried (the property tests' reference for the negative cache).
    negative_cache = True

    def _try(self, item: _Waiting) -> RawObj | None:
        if self.work.version != self._seen:
            self._failed.clear()
        twin = self._failed.get(item.signature)
        if twin is not None:
            self.reasons[item.key] = self.reasons[twin.key]
            self.sampler.replay(twin.draws)
            return None
        start = self.sampler.next_start
        self.sampler.draws = []
        bound = self._attempt(item.key, item.pod)
        self._seen = self.work.version
        draws, self.sampler.draws = self.sampler.draws, None
        if bound is not None:
            self._forget(bound)
            return bound
        # A failure that left the sampler's start index where it was found no node at
        # all (a scoring error after a scan would have moved it): its twins fail alike.
        if self.negative_cache and self.sampler.next_start == start:
            self._failed[item.signature] = _Failed(item.key, draws, item)
        return None

    def _forget(self, added: RawObj) -> None:
        """Forget the failures `added`, now bound, may undo: those its queueing hint says
        it may help (requeue_hint: every other filter only gets stricter when a pod is
        added), and those of a pod it could now be a victim of (a lower priority than a
        pod that may preempt)."""
        if not self._failed:
            return
        priority = resolve_priority(added, self.work)[0]
        for signature, failed in list(self._failed.items()):
            pod = failed.item.pod
            own, policy = resolve_priority(pod, self.work)
            if failed.item.wakes(added) or (priority < own and policy != "Never"):
                del self._failed[signature]

    def submit(self, items: Iterable[tuple[str, RawObj]]) -> None:
        """Place each (original key, unbound replacement) in the order given; after each
        placement, try again, in order, the waiting pods it may help (and so on for
        the pods those placements bind)."""
        for key, fresh in items:
            why = not_scheduled(fresh, self.settings.framework_for(fresh))
            if why is not None:  # no cycle runs for it: listed apart, not pending
                self.not_scheduled[key] = why.text()
                continue
            signature = pod_signature(fresh)
            hint = self._hints.get(signature)
            if hint is None:
                hint = self._hints[signature] = requeue_hint(fresh)
            self._seq += 1
            item = _Waiting(
                self._seq,
                key,
                fresh,
                signature,
                hint,
                pod_namespace(fresh),
                hint is _always,
            )
            bound = self._try(item)
            if bound is None:
                self._wait(item)
            else:
                self._wake(bound)

    def withdraw(self, key: str) -> RawObj | None:
        """Take a waiting pod out of the queue (its controller deleted it); the pod, or
        None when `key` is not waiting."""
        for item in list(self.waiting.values()):
            if item.key == key:
                self._placed(item)
                return item.pod
        return None

    def _wait(self, item: _Waiting) -> None:
        self.waiting[item.seq] = item
        (self._any if item.any else self._by_ns.setdefault(item.namespace, {}))[item.seq] = item

    def _placed(self, item: _Waiting) -> None:
        del self.waiting[item.seq]
        (self._any if item.any else self._by_ns[item.namespace]).pop(item.seq)

    def _wake(self, added: RawObj) -> None:
        """Try again, in queue order, the waiting pods `added` may help (those of its
        namespace its hint wakes, and those any add wakes), then likewise for each pod
        that this binds."""
        news = [added]
        while news and self.waiting:
            now = news.pop(0)
            near = self._by_ns.get(pod_namespace(now), {})
            # Twins share the hint's answer for one added pod.
            woken: dict[str, bool] = {}
            for seq in sorted({*near, *self._any}):
                item = self.waiting.get(seq)
                if item is None:
                    continue
                wakes = woken.get(item.signature)
                if wakes is None:
                    wakes = woken[item.signature] = item.wakes(now)
                if not wakes:
                    continue
                bound = self._try(item)
                if bound is not None:
                    self._placed(item)
                    news.append(bound)


def without_nodes(
    state: ClusterState, selector: RawObj, settings: Settings | None = None
) -> WhatIf:
    """Remove the nodes `selector` (a metav1.LabelSelector over node labels) matches and
    re-place their pods; the caller's state is left untouched."""
    settings = settings or Settings()
    removed = matching_nodes(state.snapshot, selector)
    gone = set(removed)
    work = state.snapshot.copy()
    displaced: list[RawObj] = []
    staying: list[RawObj] = []
    for pod in state.running:
        (displaced if spec(pod).get("nodeName") in gone else staying).append(pod)
    for name in removed:
        info = work.nodes[name]
        for light in list(info.pods):
            work.delete({"kind": "Pod", "metadata": light["metadata"]})
        work.delete({"kind": "Node", "metadata": {"name": name}})
    queue = sorted((p for p in displaced if not node_bound(p)), key=queue_order)
    replacer = Replacer(work, settings, residents=staying)
    replacer.submit((pod_key(p), recreated(p)) for p in queue)
    return replacer.outcome(
        removed,
        replacer.after(state, staying),
        displaced={pod_key(p): state.workload_of(p) for p in displaced},
    )
