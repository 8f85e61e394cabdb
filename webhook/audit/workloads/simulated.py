"""The drill's private copy of the cluster, and the workload controllers' moves on it: a
ReplicaSet's manageReplicas, a Deployment's ReplicaSets and their states, the pods a
controller creates (controllers.pods.new_pod) and deletes; the drill's queue
(drills.outcome.Replacer) places what is created.

    cluster = DrillCluster(state, settings, now, server_version)
    sync_replica_set(cluster, "ReplicaSet", ns, name, want, related, owner)
    cluster.outcome(changes)             # the drill's WhatIf
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from webhook.api.kube import RawObj, as_dict, meta, named_controller_of, pod_namespace, spec
from webhook.api.pods import is_ready, pod_key
from webhook.audit.drills.outcome import WORKLOAD, Replacer, WhatIf
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.audit.workloads.targets import Target
from webhook.config import Settings
from webhook.controllers.deployment import ROLLING, DeploymentSpec, ReplicaSetState
from webhook.controllers.gotime import parse_time
from webhook.controllers.pods import new_pod, template_of
from webhook.controllers.replicaset import get_pods_to_delete

__all__ = [
    "DEFAULT_FENCEPOST",
    "POD_INDEX",
    "POD_NAME",
    "TEMPLATE_HASH",
    "DrillCluster",
    "change",
    "deployment_spec",
    "entry",
    "finish",
    "owner_ref",
    "replica_sets_of",
    "replicas_of",
    "revision_of",
    "rs_state",
    "sync_replica_set",
    "template_for",
]

TEMPLATE_HASH = "pod-template-hash"
# The labels the StatefulSet controller gives each pod.
POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# The API server's default for an unset maxSurge / maxUnavailable.
DEFAULT_FENCEPOST = "25%"


def owned_by(obj: RawObj, kind: str, name: str) -> bool:
    ref = named_controller_of(obj)
    return ref is not None and ref.get("kind") == kind and ref.get("name") == name


class DrillCluster:
    """The drill's private copy of the cluster: the running pods by key, the queue that
    places new pods, and what was deleted and created, in order."""

    def __init__(
        self,
        state: ClusterState,
        settings: Settings,
        now: datetime | None,
        server_version: tuple[int, int] | None = None,
    ) -> None:
        self.state = state
        self.settings = settings
        self.now = now
        self.server_version = server_version
        self.work = state.snapshot.copy()
        self.alive: dict[str, RawObj] = {}
        # (namespace, controller kind, controller name) -> its live pods by key: what
        # each controller syncs against, without a scan of every pod.
        self.by_owner: dict[tuple[str, str, str], dict[str, RawObj]] = {}
        for p in state.running:
            self._add(pod_key(p), p)
        # Counted by their controllers, deleted first; the drill runs no scheduling
        # cycle for them (see the CAVEAT).
        for p in state.unscheduled:
            self._add(pod_key(p), p)
        self.replacer = Replacer(self.work, settings, self._placed, residents=state.running)
        self.deleted: list[tuple[str, str]] = []
        self.created: list[str] = []
        self.displaced: dict[str, Workload] = {}
        self.taken: set[str] = set(self.alive)
        # The owner objects after the drill (a rollout's new ReplicaSet added).
        self.owners = dict(state.owners)

    def set_replicas(self, kind: str, namespace: str, name: str, replicas: int) -> None:
        """Record a controller's new spec.replicas (a later --scale reads it)."""
        obj = self.owners.get((kind, namespace, name))
        if obj is not None:
            self.owners[(kind, namespace, name)] = {
                **obj,
                "spec": {**spec(obj), "replicas": replicas},
            }

    @staticmethod
    def _owner_key(pod: RawObj) -> tuple[str, str, str] | None:
        ref = named_controller_of(pod)
        if ref is None:
            return None
        return (pod_namespace(pod), str(ref["kind"]), str(ref["name"]))

    def _add(self, key: str, pod: RawObj) -> None:
        self.alive[key] = pod
        owner = self._owner_key(pod)
        if owner is not None:
            self.by_owner.setdefault(owner, {})[key] = pod

    def _placed(self, key: str, bound: RawObj) -> None:
        self._add(key, bound)

    def pods_of(self, kind: str, namespace: str, name: str) -> list[RawObj]:
        """The live pods `kind/name` controls (bound ones first as read, then new ones)."""
        return list(self.by_owner.get((namespace, kind, name), {}).values())

    def pending_of(self, kind: str, namespace: str, name: str) -> list[str]:
        return [
            k
            for k, p in self.replacer.pending_pods.items()
            if pod_namespace(p) == namespace and owned_by(p, kind, name)
        ]

    def active_of(self, kind: str, namespace: str, name: str) -> list[RawObj]:
        """What the controller `kind/name` counts as its active pods: the live ones
        (bound or unscheduled) and the ones it created that wait in the queue."""
        waiting = self.replacer.pending_pods
        return [
            *self.pods_of(kind, namespace, name),
            *(waiting[k] for k in self.pending_of(kind, namespace, name)),
        ]

    def delete(self, pods: Iterable[RawObj]) -> list[tuple[str, str]]:
        out = []
        for pod in pods:
            key = pod_key(pod)
            if key not in self.alive:
                # One the drill created that still waits: out of the queue (it never
                # ran, so it is not among the pods the drill took down).
                if self.replacer.withdraw(key) is not None:
                    out.append((key, ""))
                continue
            self.displaced[key] = self.state.workload_of(pod)
            del self.alive[key]
            owner = self._owner_key(pod)
            if owner is not None:
                self.by_owner.get(owner, {}).pop(key, None)
            node = str(spec(pod).get("nodeName") or "")
            if node:
                self.work.delete({"kind": "Pod", "metadata": meta(pod)})
            out.append((key, node))
        self.deleted.extend(out)
        return out

    def name(self, namespace: str, stem: str) -> str:
        n = 1
        while f"{namespace}/{stem}-{n}" in self.taken:
            n += 1
        self.taken.add(f"{namespace}/{stem}-{n}")
        return f"{stem}-{n}"

    def new_pod(
        self,
        template: RawObj,
        name: str,
        namespace: str,
        owner: RawObj,
        labels: Mapping[str, str] | None = None,
    ) -> RawObj:
        """A pod `owner` creates from `template` now, as the modelled API server admits
        it (controllers.pods.new_pod)."""
        return new_pod(
            template,
            name,
            namespace,
            owner,
            labels=labels,
            now=self.now,
            server_version=self.server_version,
        )

    def create(self, pods: Sequence[RawObj]) -> list[str]:
        """Submit new pods (unbound) in creation order; their keys."""
        keys = [pod_key(p) for p in pods]
        self.created.extend(keys)
        self.replacer.submit(list(zip(keys, pods, strict=True)))
        return keys

    def node_of(self, key: str) -> str | None:
        return self.replacer.placed.get(key)

    def running(self) -> list[RawObj]:
        # Preempted and not placed again since.
        gone = {k for k in self.replacer.preempted if k not in self.replacer.placed}
        return [p for k, p in self.alive.items() if k not in gone and spec(p).get("nodeName")]

    def unscheduled(self) -> list[RawObj]:
        """The pods unscheduled before the drill that are still there."""
        return [p for p in self.alive.values() if not spec(p).get("nodeName")]

    def outcome(
        self,
        changes: list[RawObj],
        steps: list[RawObj] | None = None,
        stalled: RawObj | None = None,
    ) -> WhatIf:
        return self.replacer.outcome(
            [],
            ClusterState(self.work, self.running(), self.owners, self.unscheduled()),
            kind=WORKLOAD,
            disrupted=list(self.deleted),
            displaced=dict(self.displaced),
            workload_changes=changes,
            steps=steps,
            stalled=stalled,
        )


def owner_ref(state: ClusterState, kind: str, namespace: str, name: str) -> RawObj:
    obj = state.owners.get((kind, namespace, name))
    uid = meta(obj).get("uid") if obj is not None else None
    return {"kind": kind, "name": name, "uid": uid if isinstance(uid, str) else ""}


def template_for(pods: Sequence[RawObj], owner: RawObj | None) -> RawObj | None:
    """What new pods are made from: the owner's pod template, else the one its newest
    pod was made from (controllers.pods.template_of); None with neither."""
    template = as_dict(spec(owner).get("template")) if owner is not None else {}
    if template:
        return template
    if pods:
        newest = max(pods, key=lambda p: str(meta(p).get("creationTimestamp") or ""))
        return template_of(newest)
    return None


def replicas_of(owner: RawObj | None, fallback: int) -> int:
    n = spec(owner).get("replicas") if owner is not None else None
    return n if isinstance(n, int) and not isinstance(n, bool) else fallback


def entry(key: str, node: str | None) -> RawObj:
    """A pod and its node; None for a pod on none (unscheduled or pending)."""
    return {"pod": key, "node": node or None}


def replica_sets_of(cluster: DrillCluster, target: Target) -> list[tuple[str, RawObj]]:
    """A Deployment's ReplicaSets: (name, owner view), by name."""
    state = cluster.state
    out = {}
    for (kind, ns, name), obj in cluster.owners.items():
        if (
            kind == "ReplicaSet"
            and ns == target.namespace
            and owned_by(obj, "Deployment", target.name)
        ):
            out[name] = obj
    # ReplicaSets known only from their pods' references (an owner chain the state
    # reads to this Deployment).
    top = Workload(target.namespace, "Deployment", target.name)
    for (ns, kind, name), pods in cluster.by_owner.items():
        if kind != "ReplicaSet" or ns != target.namespace or name in out or not pods:
            continue
        if state.workload_of(next(iter(pods.values()))) == top:
            out[name] = {"kind": "ReplicaSet", "metadata": {"name": name}}
    return sorted(out.items())


def int_annotation(obj: RawObj, key: str) -> int | None:
    value = as_dict(meta(obj).get("annotations")).get(key)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def rs_state(name: str, obj: RawObj, pods: Sequence[RawObj]) -> ReplicaSetState:
    return ReplicaSetState(
        name,
        replicas_of(obj, len(pods)),
        sum(1 for p in pods if is_ready(p)),
        parse_time(meta(obj).get("creationTimestamp")),
        int_annotation(obj, DESIRED),
        int_annotation(obj, MAX_REPLICAS),
    )


def revision_of(obj: RawObj) -> tuple[int, str]:
    return (int_annotation(obj, REVISION) or 0, str(meta(obj).get("creationTimestamp") or ""))


def sync_replica_set(
    cluster: DrillCluster,
    kind: str,
    namespace: str,
    name: str,
    want: int,
    related: Sequence[RawObj],
    owner: RawObj | None,
    labels: dict[str, str] | None = None,
    model: RawObj | None = None,
) -> tuple[list[tuple[str, str]], list[str]]:
    """The ReplicaSet (or ReplicationController) controller's manageReplicas: delete
    getPodsToDelete's pods or create the missing ones; (deleted, created keys)."""
    pods = cluster.pods_of(kind, namespace, name)
    active = cluster.active_of(kind, namespace, name)
    have = len(active)
    cluster.set_replicas(kind, namespace, name, want)
    if have > want:
        doomed = get_pods_to_delete(active, related, have - want, cluster.now)
        return cluster.delete(doomed), []
    if have < want:
        base = model if model is not None else template_for(pods, owner)
        if base is None:
            raise ValueError(
                f"{kind} {namespace}/{name}: no running pod and no template to create pods from"
            )
        ref = owner_ref(cluster.state, kind, namespace, name)
        fresh = [
            cluster.new_pod(base, cluster.name(namespace, name), namespace, ref, labels)
            for _ in range(want - have)
        ]
        return [], cluster.create(fresh)
    return [], []


def deployment_spec(obj: RawObj | None, replicas: int, status_replicas: int) -> DeploymentSpec:
    strategy = as_dict(spec(obj).get("strategy")) if obj is not None else {}
    kind = strategy.get("type") or ROLLING
    rolling = as_dict(strategy.get("rollingUpdate"))
    surge = rolling.get("maxSurge", DEFAULT_FENCEPOST)
    unavailable = rolling.get("maxUnavailable", DEFAULT_FENCEPOST)
    return DeploymentSpec(
        replicas,
        str(kind),
        surge if kind == ROLLING else None,
        unavailable if kind == ROLLING else None,
        status_replicas,
    )


def change(
    cluster: DrillCluster, target: Target, before: int, to: int, since: int, made: int
) -> RawObj:
    """A workloadChanges entry: the pods deleted and created from these positions on."""
    return {
        "workload": str(target),
        "from": before,
        "to": to,
        "deleted": [entry(k, n) for k, n in cluster.deleted[since:]],
        "created": [entry(k, None) for k in cluster.created[made:]],
    }


def finish(cluster: DrillCluster, changes: list[RawObj]) -> None:
    """Each created pod's node, once the queue has placed what it could."""
    for done in changes:
        for created in done["created"]:
            created["node"] = cluster.node_of(created["pod"])
