"""What an audit reads of a cluster: the running pods, their workloads, and the model.

    state = ClusterState.from_objects(objects)        # a snapshot file's or a list's items
    for pod in state.running: state.workload_of(pod), movable(pod)

A pod is **unscheduled** when it has no spec.nodeName and is neither terminating nor
finished: no spread counts it, its controller does (kube-controller-manager's
FilterActivePods) and deletes it first on a scale-down.

A pod is **running** when its spec.nodeName names a Node of the snapshot, it has no
deletionTimestamp and its phase is neither Succeeded nor Failed: exactly the pods
kube-scheduler counts in a spread (its informer drops terminal pods; its counting
skips terminating ones; a pod on an unknown node lies in no domain).

Its **workload** is the top owner reachable through `controller: true` owner
references, following the owner objects the state holds (a ReplicaSet's Deployment, a
Job's CronJob); where an owner object is absent, its reference names the workload. A
pod without a controller is a workload of its own, of kind Pod.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import RawObj, as_dict, named_controller_of, pod_namespace
from webhook.api.kube import meta as meta_of
from webhook.api.pods import pod_key, ready_condition
from webhook.controllers.costs import COST_ANNOTATION, MARK_ANNOTATION
from webhook.scheduler.framework.snapshot import TERMINAL_PHASES, Snapshot, is_terminating

__all__ = [
    "CLUSTER_SCOPED_OWNERS",
    "ClusterState",
    "Collector",
    "audit_view",
    "Workload",
    "controller_of",
    "is_finished",
    "is_running",
    "is_unscheduled",
    "movable",
    "pod_key",
    "pod_signature",
    "unbound",
]

# Owner kinds with no namespace: a pod's reference to them is looked up cluster-wide.
CLUSTER_SCOPED_OWNERS = frozenset({"Node"})
# Controllers that never move a pod elsewhere: a DaemonSet's pod belongs to its node,
# a mirror pod (owned by its Node) is the kubelet's static pod.
NODE_BOUND_CONTROLLERS = frozenset({"DaemonSet", "Node"})
# Owner chains longer than this are cut (a loop of references in bad data).
_MAX_CHAIN = 16

OwnerKey = tuple[str, str, str]

# A pod's controller as the audit reads it (the reference must name its owner);
# the name kept for its importers.
controller_of = named_controller_of


@dataclass(frozen=True, order=True, slots=True)
class Workload:
    """A workload: the top controller of a group of pods (or a bare Pod)."""

    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def flag(self) -> str:
        """KIND/NAMESPACE/NAME, as `audit --scale` and `--rollout` take it."""
        return f"{self.kind.lower()}/{self.namespace}/{self.name}"


def movable(pod: RawObj) -> bool:
    """Whether evicting the pod makes its controller create it again elsewhere: it has a
    controller, and not one bound to nodes (DaemonSet, or the Node of a mirror pod)."""
    ref = named_controller_of(pod)
    return ref is not None and ref.get("kind") not in NODE_BOUND_CONTROLLERS


def unbound(pod: RawObj) -> RawObj:
    """The pod as its controller would create it again: not bound, no status."""
    out = {k: v for k, v in pod.items() if k != "status"}
    out["spec"] = {k: v for k, v in as_dict(pod.get("spec")).items() if k != "nodeName"}
    return out


def pod_signature(pod: RawObj) -> str:
    """Pods with the same signature (namespace, labels, spec but its node, controller)
    are interchangeable: the scheduling model answers the same for each on the same
    state, and a plan may move either."""
    ref = named_controller_of(pod)
    return json.dumps(
        [
            pod_namespace(pod),
            as_dict(meta_of(pod).get("labels")),
            {k: v for k, v in as_dict(pod.get("spec")).items() if k != "nodeName"},
            [ref.get("kind"), ref.get("name")] if ref is not None else None,
        ],
        sort_keys=True,
        default=str,
    )


def is_running(pod: RawObj, nodes: Mapping[str, Any]) -> bool:
    """Counted in spreads: bound to a known node, not terminating, not finished."""
    spec = as_dict(pod.get("spec"))
    node = spec.get("nodeName")
    if not isinstance(node, str) or node not in nodes:
        return False
    return not is_terminating(pod) and not is_finished(pod)


def is_unscheduled(pod: RawObj) -> bool:
    """Not bound yet (no spec.nodeName), neither terminating nor finished: a pod its
    controller counts as active and the scheduler has still to place."""
    node = as_dict(pod.get("spec")).get("nodeName")
    return not node and not is_terminating(pod) and not is_finished(pod)


def is_finished(pod: RawObj) -> bool:
    """Its phase is Succeeded or Failed: it runs no more and no controller counts it."""
    phase = as_dict(pod.get("status")).get("phase")
    return isinstance(phase, str) and phase in TERMINAL_PHASES


# What an audit keeps of a pod: what spreads count and group by, and what the
# scheduling model reads to place it again (a plan's move, a drill's re-placement).
_POD_META = (
    "name",
    "namespace",
    "uid",
    "labels",
    "ownerReferences",
    "deletionTimestamp",
    "creationTimestamp",
)
_CONTAINER = ("name", "image", "resources", "ports", "restartPolicy")
# The annotations kept: a pod's deletion cost and the keeper's mark (audit/act/keeper.py
# decides from them which pods need a write without reading every pod again).
_ANNOTATIONS = (COST_ANNOTATION, MARK_ANNOTATION)


def _containers(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [{k: c[k] for k in _CONTAINER if k in c} if isinstance(c, dict) else c for c in value]


def _trimmed_spec(spec: RawObj) -> RawObj:
    return {
        k: _containers(v) if k in ("containers", "initContainers") else v
        for k, v in spec.items()
        if k not in ("nodeName", "ephemeralContainers")
    }


def _light_meta(pod: RawObj, shared: Any = None) -> RawObj:
    """The metadata kept; `shared`: a (labels, ownerReferences) pair of a sibling pod,
    whose objects are taken instead of this pod's equal ones (they are never edited)."""
    meta = meta_of(pod)
    out = {k: meta[k] for k in _POD_META if k in meta}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and any(k in annotations for k in _ANNOTATIONS):
        # Interned: a workload's pods share a few hundred distinct costs at most.
        kept = {k: annotations[k] for k in _ANNOTATIONS if k in annotations}
        out["annotations"] = {
            k: sys.intern(v) if isinstance(v, str) else v for k, v in kept.items()
        }
    for k in ("namespace", "creationTimestamp"):
        if isinstance(out.get(k), str):
            out[k] = sys.intern(out[k])
    if shared is not None:
        labels, refs = shared
        if out.get("labels") == labels:
            out["labels"] = labels
        if out.get("ownerReferences") == refs:
            out["ownerReferences"] = refs
    return out


# One status dict per (phase, Ready condition status): what the audit reads of a pod's
# status (spreads skip finished pods; PodDisruptionBudgets count Ready ones).
_STATUSES: dict[Any, RawObj] = {}


def _ready_status(status: RawObj) -> str | None:
    """The status ("True", "False", "Unknown") of the pod's Ready condition, None
    when it reports none."""
    c = ready_condition({"status": status})
    value = c.get("status") if c is not None else None
    return value if isinstance(value, str) else None


def _restart_counts(status: RawObj) -> tuple[RawObj, ...]:
    """The container statuses' names and restart counts, those that restarted only
    (what a controller's deletion order reads)."""
    out: list[RawObj] = []
    for field_name in ("containerStatuses", "initContainerStatuses"):
        statuses = status.get(field_name)
        for c in statuses if isinstance(statuses, list) else ():
            n = c.get("restartCount") if isinstance(c, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                out.append({"field": field_name, "name": c.get("name"), "restartCount": n})
    return tuple(out)


def _ready_since(status: RawObj) -> str | None:
    c = ready_condition({"status": status})
    since = c.get("lastTransitionTime") if c is not None and c.get("status") == "True" else None
    return since if isinstance(since, str) else None


def _kept_status(status: RawObj) -> RawObj | None:
    phase = status.get("phase")
    ready = _ready_status(status)
    if phase is None and ready is None:
        return None
    if phase is not None and not isinstance(phase, str):
        return {"phase": phase}  # malformed: kept as read, never shared
    since = _ready_since(status)
    restarts = _restart_counts(status)
    key = (phase, ready)
    kept = _STATUSES.get(key) if since is None and not restarts else None
    if kept is None:
        kept = {} if phase is None else {"phase": sys.intern(phase)}
        if ready is not None:
            condition: RawObj = {"type": "Ready", "status": ready}
            if since is not None:
                # What a controller's deletion order reads: such a status is the pod's
                # own, not shared.
                condition["lastTransitionTime"] = since
            kept["conditions"] = [condition]
        for r in restarts:
            kept.setdefault(r["field"], []).append(
                {"name": r["name"], "restartCount": r["restartCount"]}
            )
        if since is None and not restarts:
            _STATUSES[key] = kept
    return kept


def audit_view(pod: RawObj, spec: RawObj | None = None, sibling: Any = None) -> RawObj:
    """A pod as the audit keeps it: its metadata's identity, labels and owners (and its
    deletion-cost annotations), its
    spec without what no scheduler plugin reads (env, probes, commands, mounts), its
    phase and Ready condition. `spec`: that trimmed spec when already at hand (shared by
    the replicas of one controller), without nodeName. A 150,000-pod cluster's full pods
    would not fit in memory."""
    full = as_dict(pod.get("spec"))
    shared = _trimmed_spec(full) if spec is None else spec
    node = full.get("nodeName")
    out: RawObj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _light_meta(pod, sibling),
        # A shallow copy: the replicas share every field's value but their node.
        "spec": {**shared, "nodeName": node} if node is not None else shared,
    }
    status = _kept_status(as_dict(pod.get("status")))
    if status is not None:
        out["status"] = status
    return out


# What the workload drills read of a controller besides its scale: the Deployment
# controller's strategy and template, a ReplicaSet's age and revision annotations, a
# StatefulSet's template and ordinals (webhook/audit/workloads/simulated.py).
_OWNER_SPEC = {
    "Deployment": ("strategy", "template", "minReadySeconds"),
    "StatefulSet": ("template", "ordinals", "podManagementPolicy"),
    "ReplicaSet": ("template",),
    "ReplicationController": ("template",),
}
_OWNER_ANNOTATIONS = (
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
)


def _owner_view(obj: RawObj) -> RawObj:
    """An owner's identity, its owner references and its scale (spec.replicas: what the
    disruption controller reads as a controller's expected pods); for the workload
    controllers, what their drills read (_OWNER_SPEC)."""
    meta = meta_of(obj)
    out: RawObj = {
        "kind": obj.get("kind"),
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "ownerReferences", "creationTimestamp")
            if k in meta
        },
    }
    annotations = as_dict(meta.get("annotations"))
    kept = {k: annotations[k] for k in _OWNER_ANNOTATIONS if k in annotations}
    if kept:
        out["metadata"]["annotations"] = kept
    full = as_dict(obj.get("spec"))
    owner_spec: RawObj = {}
    replicas = full.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool):
        owner_spec["replicas"] = replicas
    for k in _OWNER_SPEC.get(str(obj.get("kind")), ()):
        if k in full:
            owner_spec[k] = full[k]
    if owner_spec:
        out["spec"] = owner_spec
    return out


@dataclass
class ClusterState:
    """The scheduling model's Snapshot, the running pods as the audit keeps them (with
    their specs), and the objects pods' owner chains lead through.

    running: the running pods, in the order read; owners: (kind, namespace, name) ->
    object (its identity and owner references) for every object that may own a pod or
    its owner (namespace "" for cluster-scoped kinds); unscheduled: the pods no node
    holds yet (no spec.nodeName), neither terminating nor finished, in the order read:
    no spread counts them, their controllers do (and delete them first).
    """

    snapshot: Snapshot
    running: list[RawObj]
    owners: dict[OwnerKey, RawObj] = field(default_factory=dict)
    unscheduled: list[RawObj] = field(default_factory=list)
    # (namespace, controller kind, name) -> the workload it leads to.
    _tops: dict[OwnerKey, Workload] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_objects(cls, objects: Iterable[RawObj]) -> ClusterState:
        """Read a List's items (see Collector)."""
        return Collector.of(objects).state()

    def workload_of(self, pod: RawObj) -> Workload:
        """The top controller of `pod` (see the module docstring)."""
        ns = pod_namespace(pod)
        ref = named_controller_of(pod)
        if ref is None:
            return Workload(ns, "Pod", str(meta_of(pod).get("name") or ""))
        start = (ns, str(ref["kind"]), str(ref["name"]))
        top = self._tops.get(start)
        if top is None:
            top = self._tops[start] = self._top(ns, ref)
        return top

    def _top(self, ns: str, ref: RawObj) -> Workload:
        seen: set[OwnerKey] = set()
        kind, name = str(ref["kind"]), str(ref["name"])
        while len(seen) < _MAX_CHAIN:
            key = (kind, "" if kind in CLUSTER_SCOPED_OWNERS else ns, name)
            seen.add(key)
            owner = self.owners.get(key)
            up = named_controller_of(owner) if owner is not None else None
            if up is None:
                break
            following = (
                str(up["kind"]),
                "" if up["kind"] in CLUSTER_SCOPED_OWNERS else ns,
                str(up["name"]),
            )
            if following in seen:
                break
            kind, name = following[0], following[2]
        return Workload(ns, kind, name)


class Collector:
    """Builds a ClusterState one object at a time (a snapshot file is read item by item):
    Nodes, Pods and the kinds the scheduler reads go into the Snapshot; pods are kept
    as audit_view, the replicas of one controller with equal specs sharing one trimmed
    spec; every other named object as an owner."""

    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.pods: list[RawObj] = []
        self.owners: dict[OwnerKey, RawObj] = {}
        # (namespace, controller kind, name) -> [(a spec as read, without nodeName; its
        # trimmed form)]: the distinct specs among a controller's pods, usually one.
        self._specs: dict[OwnerKey, list[tuple[RawObj, RawObj]]] = {}
        # The labels and ownerReferences of a controller's first pod, which its
        # replicas share when theirs are equal.
        self._siblings: dict[OwnerKey, tuple[Any, Any]] = {}

    @classmethod
    def of(cls, objects: Iterable[Any], check: Callable[[], None] | None = None) -> Collector:
        """A Collector holding `objects`; `check` runs before each is added (it raises to
        stop the read)."""
        collector = cls()
        for obj in objects:
            if check is not None:
                check()
            collector.add(obj)
        return collector

    def add(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        kind = obj.get("kind")
        self.snapshot.upsert(obj)
        if kind == "Pod":
            self.pods.append(self._pod(obj))
            return
        if kind == "Node":
            return
        name = meta_of(obj).get("name")
        if isinstance(kind, str) and isinstance(name, str) and name:
            ns = meta_of(obj).get("namespace")
            self.owners[(kind, ns if isinstance(ns, str) else "", name)] = _owner_view(obj)

    def _pod(self, pod: RawObj) -> RawObj:
        ref = named_controller_of(pod)
        if ref is None:
            return audit_view(pod)
        key = (pod_namespace(pod), str(ref["kind"]), str(ref["name"]))
        spec = as_dict(pod.get("spec"))
        unbound = {k: v for k, v in spec.items() if k != "nodeName"}
        known = self._specs.setdefault(key, [])
        meta = meta_of(pod)
        sibling = self._siblings.get(key)
        if sibling is None:
            sibling = self._siblings[key] = (meta.get("labels"), meta.get("ownerReferences"))
        for seen, trimmed in known:
            if seen == unbound:
                return audit_view(pod, trimmed, sibling)
        trimmed = _trimmed_spec(spec)
        known.append((unbound, trimmed))
        return audit_view(pod, trimmed, sibling)

    def state(self) -> ClusterState:
        nodes = self.snapshot.nodes
        running = [p for p in self.pods if is_running(p, nodes)]
        unscheduled = [p for p in self.pods if is_unscheduled(p)]
        self._specs.clear()
        self._siblings.clear()
        return ClusterState(self.snapshot, running, self.owners, unscheduled)
