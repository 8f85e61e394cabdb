"""What an audit reads of a cluster: the running pods, their workloads, and the model.

    state = ClusterState.from_objects(objects)        # a snapshot file's or a list's items
    for pod in state.running: state.workload_of(pod), movable(pod)

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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.api.kube import meta as meta_of
from webhook.scheduler.framework.snapshot import TERMINAL_PHASES, Snapshot

__all__ = [
    "CLUSTER_SCOPED_OWNERS",
    "ClusterState",
    "Collector",
    "audit_view",
    "Workload",
    "controller_of",
    "is_running",
    "movable",
    "pod_key",
]

# Owner kinds with no namespace: a pod's reference to them is looked up cluster-wide.
CLUSTER_SCOPED_OWNERS = frozenset({"Node"})
# Controllers that never move a pod elsewhere: a DaemonSet's pod belongs to its node,
# a mirror pod (owned by its Node) is the kubelet's static pod.
NODE_BOUND_CONTROLLERS = frozenset({"DaemonSet", "Node"})
# Owner chains longer than this are cut (a loop of references in bad data).
_MAX_CHAIN = 16

OwnerKey = tuple[str, str, str]


@dataclass(frozen=True, order=True, slots=True)
class Workload:
    """A workload: the top controller of a group of pods (or a bare Pod)."""

    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def pod_key(pod: RawObj) -> str:
    """ "namespace/name" of a pod."""
    return f"{pod_namespace(pod)}/{meta_of(pod).get('name') or ''}"


def controller_of(obj: RawObj) -> RawObj | None:
    """The ownerReference with `controller: true`, None when there is none."""
    refs = meta_of(obj).get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            kind, name = ref.get("kind"), ref.get("name")
            if isinstance(kind, str) and kind and isinstance(name, str) and name:
                return ref
    return None


def movable(pod: RawObj) -> bool:
    """Whether evicting the pod makes its controller create it again elsewhere: it has a
    controller, and not one bound to nodes (DaemonSet, or the Node of a mirror pod)."""
    ref = controller_of(pod)
    return ref is not None and ref.get("kind") not in NODE_BOUND_CONTROLLERS


def is_running(pod: RawObj, nodes: Mapping[str, Any]) -> bool:
    """Counted in spreads: bound to a known node, not terminating, not finished."""
    spec = as_dict(pod.get("spec"))
    node = spec.get("nodeName")
    if not isinstance(node, str) or node not in nodes:
        return False
    if meta_of(pod).get("deletionTimestamp") is not None:
        return False
    phase = as_dict(pod.get("status")).get("phase")
    return not (isinstance(phase, str) and phase in TERMINAL_PHASES)


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


def _containers(value: Any) -> Any:
    if not isinstance(value, list):
        return value
    return [{k: c[k] for k in _CONTAINER if k in c} if isinstance(c, dict) else c for c in value]


def audit_view(pod: RawObj) -> RawObj:
    """A pod as the audit keeps it: its metadata's identity, labels and owners, its
    spec without what no scheduler plugin reads (env, probes, commands, mounts), its
    phase. A 150,000-pod cluster's full pods would not fit in memory."""
    meta = meta_of(pod)
    spec = {
        k: _containers(v) if k in ("containers", "initContainers") else v
        for k, v in as_dict(pod.get("spec")).items()
        if k != "ephemeralContainers"
    }
    out: RawObj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: meta[k] for k in _POD_META if k in meta},
        "spec": spec,
    }
    phase = as_dict(pod.get("status")).get("phase")
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def _owner_view(obj: RawObj) -> RawObj:
    meta = meta_of(obj)
    return {
        "kind": obj.get("kind"),
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "ownerReferences") if k in meta
        },
    }


@dataclass
class ClusterState:
    """The scheduling model's Snapshot, the running pods as the audit keeps them (with
    their specs), and the objects pods' owner chains lead through.

    running: the running pods, in the order read; owners: (kind, namespace, name) ->
    object (its identity and owner references) for every object that may own a pod or
    its owner (namespace "" for cluster-scoped kinds).
    """

    snapshot: Snapshot
    running: list[RawObj]
    owners: dict[OwnerKey, RawObj] = field(default_factory=dict)

    @classmethod
    def from_objects(cls, objects: Iterable[RawObj]) -> ClusterState:
        """Read a List's items (see Collector)."""
        collector = Collector()
        for obj in objects:
            collector.add(obj)
        return collector.state()

    def workload_of(self, pod: RawObj) -> Workload:
        """The top controller of `pod` (see the module docstring)."""
        ns = pod_namespace(pod)
        kind, name = "Pod", str(meta_of(pod).get("name") or "")
        obj: RawObj | None = pod
        seen: set[OwnerKey] = set()
        while obj is not None and len(seen) < _MAX_CHAIN:
            ref = controller_of(obj)
            if ref is None:
                break
            kind, name = str(ref["kind"]), str(ref["name"])
            key = (kind, "" if kind in CLUSTER_SCOPED_OWNERS else ns, name)
            if key in seen:
                break
            seen.add(key)
            obj = self.owners.get(key)
        return Workload(ns, kind, name)


class Collector:
    """Builds a ClusterState one object at a time (a snapshot file is read item by item):
    Nodes, Pods and the kinds the scheduler reads go into the Snapshot; pods are kept
    as audit_view; every other named object as an owner."""

    def __init__(self) -> None:
        self.snapshot = Snapshot()
        self.pods: list[RawObj] = []
        self.owners: dict[OwnerKey, RawObj] = {}

    def add(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        kind = obj.get("kind")
        self.snapshot.upsert(obj)
        if kind == "Pod":
            self.pods.append(audit_view(obj))
            return
        if kind == "Node":
            return
        name = meta_of(obj).get("name")
        if isinstance(kind, str) and isinstance(name, str) and name:
            ns = meta_of(obj).get("namespace")
            self.owners[(kind, ns if isinstance(ns, str) else "", name)] = _owner_view(obj)

    def state(self) -> ClusterState:
        nodes = self.snapshot.nodes
        running = [p for p in self.pods if is_running(p, nodes)]
        return ClusterState(self.snapshot, running, self.owners)
