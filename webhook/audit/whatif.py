"""The zone-loss drill: remove nodes, re-place their pods with the scheduler model.

    drill = without_nodes(state, parse_selector("topology.kubernetes.io/zone=a"), settings)
    drill.state, drill.pending, drill.reasons

The nodes the selector matches go, with every pod bound to them. Their running pods
come back as their controllers would recreate them, each placed by the whole
scheduler profile that schedules it (Settings.framework_for), one at a time in
kube-scheduler's queue order (priority, highest first; then creation time, oldest
first; then namespace/name). A pod that fits nowhere waits, and the waiting pods are
tried again, in the same order, after each later placement (a placed pod can open a
domain to a spread or satisfy an affinity). A pod no node fits may preempt
(DefaultPreemption): its victims leave (`evicted`) and come back like the displaced
pods, queued behind it, and it binds on its nominated node. Pods that do not come back
elsewhere are not re-placed: DaemonSet pods and mirror pods (owned by their Node)
belong to their node, and terminating pods were never running. A pod the scheduler
never runs a cycle for (another scheduler's schedulerName, resource claims:
placement.not_scheduled) is listed apart in `not_scheduled`, neither placed nor pending.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from webhook.api.kube import RawObj, meta, spec
from webhook.api.labels import compile_selector
from webhook.audit.inventory import (
    NODE_BOUND_CONTROLLERS,
    ClusterState,
    controller_of,
    pod_key,
    pod_signature,
    unbound,
)
from webhook.config import Settings
from webhook.scheduler.placement import not_scheduled, place, settle
from webhook.scheduler.scaleup import Diagnosis, Pending, diagnose, node_groups

__all__ = ["WhatIf", "diagnose_pending", "queue_order", "without_nodes"]


@dataclass(frozen=True)
class WhatIf:
    """removed: the nodes taken away (sorted); state: the cluster after re-placement;
    placed: pod ("ns/name", its original name) -> the node it went to; pending: pods
    that fit nowhere, in queue order; reasons: pending pod -> failure reason -> nodes
    failing with it (its last attempt); not_scheduled: pod -> why this scheduler does
    not place it (placement.NotScheduled.text()); evicted: pods preempted to make room,
    in order; scale_up: whether a new node of some group would take each pending pod
    (diagnose_pending)."""

    removed: list[str]
    state: ClusterState
    placed: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    not_scheduled: dict[str, str] = field(default_factory=dict)
    evicted: list[str] = field(default_factory=list)
    scale_up: Diagnosis | None = None


def diagnose_pending(
    state: ClusterState, pending: Iterable[RawObj], settings: Settings | None = None
) -> Diagnosis:
    """Would a new node help the pods a drill leaves pending (`pending`: the pods as
    they ran, reported by their original ns/name), against `state`, the cluster after
    the drill; node groups by settings.node_group_labels. A pod no scheduler profile
    schedules is left out: no node helps it."""
    settings = settings or Settings()
    items = []
    for pod in pending:
        fresh = unbound(pod)
        framework = settings.framework_for(fresh)
        if framework is not None:
            items.append(Pending(pod_key(pod), fresh, framework))
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


def _comes_back(pod: RawObj) -> bool:
    ref = controller_of(pod)
    return ref is None or ref.get("kind") not in NODE_BOUND_CONTROLLERS


def without_nodes(
    state: ClusterState, selector: RawObj, settings: Settings | None = None
) -> WhatIf:
    """Remove the nodes `selector` (a metav1.LabelSelector over node labels) matches and
    re-place their pods; the caller's state is left untouched."""
    settings = settings or Settings()
    matches = compile_selector(selector)
    removed = sorted(name for name, info in state.snapshot.nodes.items() if matches(info.labels))
    gone = set(removed)
    work = state.snapshot.copy()
    displaced: list[RawObj] = []
    staying: list[RawObj] = []
    for pod in state.running:
        (displaced if spec(pod).get("nodeName") in gone else staying).append(pod)
    for name in removed:
        info = work.nodes[name]
        for light in list(info.pods):
            work.delete({"kind": "Pod", "metadata": meta(light)})
        work.delete({"kind": "Node", "metadata": {"name": name}})
    queue = sorted((p for p in displaced if _comes_back(p)), key=queue_order)
    held = {pod_key(p): not_scheduled(unbound(p), settings.framework_for(p)) for p in queue}
    apart = {key: why.text() for key, why in held.items() if why is not None}
    queue = [p for p in queue if pod_key(p) not in apart]
    placed: dict[str, str] = {}
    bound: list[RawObj] = []
    waiting: list[RawObj] = []
    reasons: dict[str, dict[str, int]] = {}
    evicted: list[str] = []

    def evict(refs: tuple[str, ...]) -> None:
        """Preemption's victims leave the running pods and come back as displaced pods."""
        nonlocal staying, bound
        gone_now = set(refs)
        for pods in (staying, bound):
            for p in pods:
                if pod_key(p) in gone_now and _comes_back(p):
                    waiting.append(p)
        staying = [p for p in staying if pod_key(p) not in gone_now]
        bound = [p for p in bound if pod_key(p) not in gone_now]
        for ref in refs:
            placed.pop(ref, None)
        evicted.extend(refs)

    def attempt(pod: RawObj) -> bool:
        fresh = unbound(pod)
        decision = place(fresh, work, framework=settings.framework_for(fresh))
        node, victims = settle(decision, work)
        if node is None:
            reasons[pod_key(pod)] = dict(decision.reasons)
            return False
        work.add_pod(fresh, node)
        placed[pod_key(pod)] = node
        reasons.pop(pod_key(pod), None)
        bound.append({**fresh, "spec": {**fresh["spec"], "nodeName": node}})
        if victims:
            evict(victims)
        return True

    # Signatures of pods that failed since the last placement: the state has not moved
    # since, so their twins fail too (and share their reasons) without asking again.
    failed: dict[str, str] = {}

    def try_pod(pod: RawObj) -> bool:
        sig = pod_signature(pod)
        twin = failed.get(sig)
        if twin is not None:
            reasons[pod_key(pod)] = reasons[twin]
            return False
        if attempt(pod):
            failed.clear()
            return True
        failed[sig] = pod_key(pod)
        return False

    for pod in queue:
        if not try_pod(pod):
            waiting.append(pod)
            continue
        # Something moved: try the waiting pods again, in order, until none fits.
        while waiting:
            before = len(waiting)
            waiting = [p for p in waiting if not try_pod(p)]
            if len(waiting) == before:
                break
    running = staying + bound
    after = ClusterState(work, running, state.owners)
    scale_up = diagnose_pending(after, waiting, settings)
    pending = [pod_key(p) for p in waiting]
    return WhatIf(removed, after, placed, pending, reasons, apart, evicted, scale_up=scale_up)
