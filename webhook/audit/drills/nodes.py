"""The outage and the drain, as kube-controller-manager, the controllers, the Eviction
API and kube-scheduler handle them, in that order.

    drill = unreachable_nodes(state, parse_selector("topology.kubernetes.io/zone=a"), settings)
    drill = drain_nodes(state, parse_selector("kubernetes.io/hostname=n1"), settings)
    with_honor(drill, settings)          # which pending workloads nodeTaintsPolicy: Honor saves

**unreachable_nodes** (a zone or node outage as it usually happens). The Node objects
stay. The node lifecycle controller marks them Ready Unknown and taints them
`node.kubernetes.io/unreachable` NoSchedule and NoExecute (pkg/controller/
nodelifecycle). Taint-based eviction then deletes every pod there unless it tolerates
every NoExecute taint of the node with tolerations that set no tolerationSeconds (the
default 300 s toleration only delays it; pkg/controller/tainteviction). The kubelet
never confirms, so the evicted pods stay Terminating: they no longer count in any
spread (the scheduler skips terminating pods) but stay where they are. The
controllers then act: a ReplicaSet, ReplicationController or Job recreates its pods
(each placed by the Replacer, whatif.py); a StatefulSet does not recreate a pod while
its predecessor of the same name is Terminating (pkg/controller/statefulset); a
DaemonSet's, a mirror and a bare pod are not recreated.

**drain_nodes** (`kubectl drain --ignore-daemonsets --delete-emptydir-data --force`,
staging/src/k8s.io/kubectl/pkg/drain). Every selected node is cordoned first
(spec.unschedulable, and the node.kubernetes.io/unschedulable:NoSchedule taint the
node lifecycle controller adds for it); then, node by node in name order, its pods in
namespace/name order are evicted through the Eviction API, DaemonSet and mirror pods
left alone. An eviction is allowed only while the budgets guarding the pod allow it
(budgets.py); an evicted pod's replacement is placed before the next step, and once
placed it is Ready again, which may allow an eviction refused before: refused pods
are retried after each later step, as kubectl retries a refused eviction. A pod
still refused when nothing more moves is `blocked`, and its node is not drained.
Bare pods are evicted (--force) and not recreated.

CAVEAT: replacement pods are named `<name>-new` in the outage drill's state (the
controller would generate a name). kubectl drain waits on a refused eviction of one
node before it starts the next (forever with its default --timeout of 0); the drill
goes on with the next node and reports the pod blocked, so one run answers for every
selected node. More than one budget on a pod: the Eviction API refuses it outright,
and `blocked` names them all.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from webhook.api.kube import RawObj, named_controller_of, spec
from webhook.api.kube import meta as meta_of
from webhook.api.labels import toleration_tolerates
from webhook.api.pods import pod_key
from webhook.audit.drills.outcome import (
    DRAIN,
    UNREACHABLE,
    Replacer,
    WhatIf,
    matching_nodes,
    node_bound,
    queue_order,
)
from webhook.audit.measure.budgets import Budgets
from webhook.audit.state.inventory import ClusterState
from webhook.config import Settings
from webhook.controllers.pods import recreated

__all__ = [
    "UNREACHABLE_TAINT",
    "HonorComparison",
    "drain_nodes",
    "tolerates_forever",
    "unreachable_nodes",
    "with_honor",
]

UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# Taint-based eviction sets this on the pods it deletes; their kubelet never confirms.
_EVICTED_AT = "1970-01-01T00:00:00Z"
NO_EXECUTE = "NoExecute"
# Controllers that do not bring a pod back while it is Terminating or gone for good.
_NOT_RECREATING = frozenset({"StatefulSet"})


def _with_taints(node: RawObj, taints: Iterable[RawObj]) -> RawObj:
    out = copy.deepcopy(node)
    node_spec = out.setdefault("spec", {})
    have = node_spec.get("taints") if isinstance(node_spec.get("taints"), list) else []
    kept = list(have)
    for taint in taints:
        if not any(
            isinstance(t, dict)
            and t.get("key") == taint["key"]
            and t.get("effect") == taint["effect"]
            for t in have
        ):
            kept.append(dict(taint))
    node_spec["taints"] = kept
    return out


def unreachable_node(node: RawObj) -> RawObj:
    """The Node as the node lifecycle controller leaves it when its kubelet stops
    reporting: Ready Unknown, tainted unreachable NoSchedule and NoExecute.

    Port of nodelifecycle/node_lifecycle_controller.go: tryUpdateNodeHealth (Ready
    Unknown) and doNoScheduleTaintingPass / doNoExecuteTaintingPass (the taints)."""
    out = _with_taints(
        node,
        (
            {"key": UNREACHABLE_TAINT, "effect": "NoSchedule"},
            {"key": UNREACHABLE_TAINT, "effect": NO_EXECUTE},
        ),
    )
    status = out.setdefault("status", {})
    conditions = [
        c
        for c in (status.get("conditions") if isinstance(status.get("conditions"), list) else [])
        if not (isinstance(c, dict) and c.get("type") == "Ready")
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
        }
    )
    status["conditions"] = conditions
    return out


def cordoned_node(node: RawObj) -> RawObj:
    """The Node after `kubectl cordon`: spec.unschedulable, and the unschedulable
    NoSchedule taint the node lifecycle controller adds for it (TaintNodesByCondition)."""
    out = _with_taints(node, ({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"},))
    out["spec"]["unschedulable"] = True
    return out


def tolerates_forever(pod: RawObj, node_taints: Iterable[RawObj]) -> bool:
    """Whether taint-based eviction leaves `pod` on a node with these taints for good:
    every NoExecute taint is tolerated, and no matching toleration sets
    tolerationSeconds.

    Port of tainteviction/taint_eviction.go: processPodOnNode (GetMatchingTolerations,
    getMinTolerationTime < 0).
    """
    tolerations = spec(pod).get("tolerations")
    tols = [t for t in tolerations if isinstance(t, dict)] if isinstance(tolerations, list) else []
    matching: list[RawObj] = []
    for taint in node_taints:
        if not isinstance(taint, dict) or taint.get("effect") != NO_EXECUTE:
            continue
        found = [t for t in tols if toleration_tolerates(t, taint)]
        if not found:
            return False
        matching.extend(found)
    if not matching:
        return False
    return all(t.get("tolerationSeconds") is None for t in matching)


def _recreated(pod: RawObj) -> bool:
    """Whether a controller creates a replacement while this pod is Terminating."""
    ref = named_controller_of(pod)
    return ref is not None and ref.get("kind") not in _NOT_RECREATING and not node_bound(pod)


def _replacement(pod: RawObj, taken: set[str]) -> RawObj:
    """The pod its controller creates to replace `pod`, unbound, under a fresh name."""
    name = str(meta_of(pod).get("name") or "")
    ns = str(meta_of(pod).get("namespace") or "default")
    new = f"{name}-new"
    while f"{ns}/{new}" in taken:
        new += "-new"
    taken.add(f"{ns}/{new}")
    return recreated(pod, new)


def unreachable_nodes(
    state: ClusterState, selector: RawObj, settings: Settings | None = None
) -> WhatIf:
    """The outage of the nodes `selector` matches (see the module docstring); the
    caller's state is left untouched."""
    settings = settings or Settings()
    lost = matching_nodes(state.snapshot, selector)
    work = state.snapshot.copy()
    taints: dict[str, list[RawObj]] = {}
    for name in lost:
        node = unreachable_node(work.nodes[name].node)
        work.upsert(node)
        taints[name] = node["spec"]["taints"]
    staying: list[RawObj] = []
    evicted: list[RawObj] = []
    for pod in state.running:
        node_name = spec(pod).get("nodeName")
        if node_name in taints and not tolerates_forever(pod, taints[str(node_name)]):
            evicted.append(pod)
        else:
            staying.append(pod)
    taken = {pod_key(p) for p in state.running}
    not_recreated: list[str] = []
    queue: list[tuple[RawObj, RawObj]] = []
    for pod in evicted:
        terminating = {**pod, "metadata": {**meta_of(pod), "deletionTimestamp": _EVICTED_AT}}
        work.upsert(terminating)
        if _recreated(pod):
            queue.append((pod, _replacement(pod, taken)))
        elif not node_bound(pod):
            not_recreated.append(pod_key(pod))
    queue.sort(key=lambda item: queue_order(item[0]))
    replacer = Replacer(work, settings, residents=staying)
    replacer.submit((pod_key(p), fresh) for p, fresh in queue)
    return replacer.outcome(
        lost,
        replacer.after(state, staying),
        kind=UNREACHABLE,
        not_recreated=sorted(not_recreated),
        disrupted=[(pod_key(p), str(spec(p).get("nodeName"))) for p in evicted],
        displaced={pod_key(p): state.workload_of(p) for p in evicted},
    )


def drain_nodes(state: ClusterState, selector: RawObj, settings: Settings | None = None) -> WhatIf:
    """`kubectl drain` of the nodes `selector` matches (see the module docstring); the
    caller's state is left untouched."""
    settings = settings or Settings()
    targets = matching_nodes(state.snapshot, selector)
    work = state.snapshot.copy()
    for name in targets:
        work.upsert(cordoned_node(work.nodes[name].node))
    budgets = Budgets.from_state(state)
    draining = set(targets)
    by_node: dict[str, list[RawObj]] = defaultdict(list)
    for pod in state.running:
        node_name = spec(pod).get("nodeName")
        if node_name in draining:
            by_node[str(node_name)].append(pod)
    order = [
        pod
        for name in targets
        for pod in sorted(by_node.get(name, ()), key=pod_key)
        if not node_bound(pod)
    ]

    def placed(_key: str, bound: RawObj) -> None:
        budgets.set_healthy(pod_key(bound), True)

    staying = [p for p in state.running if spec(p).get("nodeName") not in draining]
    replacer = Replacer(work, settings, on_placed=placed, residents=staying)
    evicted: list[tuple[str, str]] = []
    gone: set[str] = set()
    not_recreated: list[str] = []

    def evict(pod: RawObj) -> bool:
        if budgets.blocker(pod) is not None:
            return False
        key = pod_key(pod)
        work.delete({"kind": "Pod", "metadata": meta_of(pod)})
        budgets.remove(key)
        evicted.append((key, str(spec(pod).get("nodeName"))))
        gone.add(key)
        if named_controller_of(pod) is None:
            not_recreated.append(key)
            return True
        fresh = recreated(pod)
        budgets.add(fresh, healthy=False)
        replacer.submit([(key, fresh)])
        return True

    refused: list[RawObj] = []
    for pod in order:
        if not evict(pod):
            refused.append(pod)
            continue
        while refused:
            left = [p for p in refused if not evict(p)]
            if len(left) == len(refused):
                break
            refused = left
    blocked = {pod_key(p): budgets.blocker(p) or "" for p in refused}
    stuck = {str(spec(p).get("nodeName")) for p in refused}
    return replacer.outcome(
        targets,
        replacer.after(state, (p for p in state.running if pod_key(p) not in gone)),
        kind=DRAIN,
        not_recreated=sorted(not_recreated),
        blocked=blocked,
        drained=[n for n in targets if n not in stuck],
        disrupted=evicted,
        displaced={pod_key(p): state.workload_of(p) for p in order if pod_key(p) in gone},
    )


# ---- what nodeTaintsPolicy: Honor would change ------------------------------------------


@dataclass(frozen=True, slots=True)
class HonorComparison:
    """One workload's pending pods, placed again with nodeTaintsPolicy: Honor on their
    DoNotSchedule constraints. pending: its pods pending after the drill; placed: how
    many of them Honor places; changed: whether any constraint had a policy to change
    (unset or Ignore)."""

    pending: int
    placed: int
    changed: bool

    @property
    def recovers(self) -> bool:
        return self.changed and self.placed == self.pending

    def to_json(self) -> dict[str, int | bool]:
        return {"pending": self.pending, "placedWithHonor": self.placed}


def honored(pod: RawObj) -> tuple[RawObj, bool]:
    """The pod with nodeTaintsPolicy: Honor on each DoNotSchedule constraint that had it
    unset or Ignore, and whether any had."""
    raw = spec(pod).get("topologySpreadConstraints")
    if not isinstance(raw, list):
        return pod, False
    changed = False
    out = []
    for c in raw:
        if (
            isinstance(c, dict)
            and c.get("whenUnsatisfiable") == "DoNotSchedule"
            and c.get("nodeTaintsPolicy") in (None, "Ignore")
        ):
            c = {**c, "nodeTaintsPolicy": "Honor"}
            changed = True
        out.append(c)
    return {**pod, "spec": {**spec(pod), "topologySpreadConstraints": out}}, changed


def with_honor(drill: WhatIf, settings: Settings | None = None) -> dict[str, HonorComparison]:
    """Per workload with pending pods (str(Workload)): the drill's pending pods placed
    again, in queue order, on the drill's final state, each with nodeTaintsPolicy:
    Honor (the comparison the outage drill prints)."""
    settings = settings or Settings()
    if not drill.pending:
        return {}
    work = drill.state.snapshot.copy()
    replacer = Replacer(work, settings)
    changed: dict[str, bool] = {}
    items = []
    for key in drill.pending:
        pod, did = honored(drill.replacements[key])
        workload = str(drill.displaced.get(key, key))
        changed[workload] = changed.get(workload, False) or did
        items.append((key, pod))
    replacer.submit(items)
    out: dict[str, HonorComparison] = {}
    counts: dict[str, list[int]] = {}
    for key in drill.pending:
        workload = str(drill.displaced.get(key, key))
        n = counts.setdefault(workload, [0, 0])
        n[0] += 1
        n[1] += key in replacer.placed
    for workload, (pending, placed_) in sorted(counts.items()):
        out[workload] = HonorComparison(pending, placed_, changed[workload])
    return out
