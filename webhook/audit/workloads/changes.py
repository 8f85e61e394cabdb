"""The workload drills: a scale (`--scale KIND/NAMESPACE/NAME=N`) or a Deployment's
rollout (`--rollout deployment/NAMESPACE/NAME[=FILE]`) as kube-controller-manager and
kube-scheduler play it: the controllers (webhook/controllers) decide which pods go and
which come, the drills' queue (whatif.Replacer) places the new ones through the
scheduler model, the audit tells the story.

    request = WorkloadRequest(scales=[(parse_target("deploy/shop/web"), 3)], now=now)
    drill = run_workloads(state, request, settings)     # a WhatIf of kind WORKLOAD

**Scale down**: a ReplicaSet or ReplicationController deletes `getPodsToDelete`'s
pods (ActivePodsWithRanks order, the rank counting the pods of every ReplicaSet of the
same Deployment on the pod's node); a Deployment not mid-rollout scales its one
ReplicaSet so; mid-rollout, its size change is split across its ReplicaSets by
proportional scaling (deployment.scale), then each ReplicaSet deletes its share; a
StatefulSet removes its highest ordinals. **Scale up**: the new pods are built by
controllers.pods.new_pod from the owner's template (else the one the newest pod was
made from), merged as the modelled API server (`server_version`) merges at creation,
and placed one after another in creation order.

**Rollout**: the new revision's template is the Deployment's own (a new revision, as
an image bump gives) or, with FILE, that of the Deployment in FILE (its strategy and
replicas too); its pods are built from it as a scale-up's are, so each carries its own
pod-template-hash only, on a cluster whose old pods' selectors the API server merged
(v1.34+) or not. RollingUpdate is played step by step: reconcileNewReplicaSet; if it did
not scale, reconcileOldReplicaSets (unhealthy old pods first, then old ReplicaSets
oldest first within maxUnavailable), each ReplicaSet's controller deleting or
creating pods to match, the waiting new pods tried again after deletions. A new pod is
Available once bound (minReadySeconds is not waited for); an old pod is Available
when Ready (podutil.IsPodReady: webhook/api/pods.py). Recreate deletes every
old pod, then creates the new ones. `stalled`: no step can progress (new pods pending
and the unavailability budget spent): the Deployment would exceed its progress
deadline.

**withSeparateRevisions** (the rollout's trap): a constraint of the new revision
without `pod-template-hash` in matchLabelKeys counts the old revision's pods too, so
the new pods pile where the old ones are few, and the old ones are then deleted by a
ranking blind to topology. The rollout is played again with the key added to every
such constraint of the new template, and its constraint entries reported beside.

**withDeletionCosts**: the drill played again with the changed workload's pods
carrying topospread's deletion costs (audit/measure/costs.py), its constraint entries
reported beside.

CAVEAT: new pods are named `<ReplicaSet>-<n>` (the controller would generate a random
suffix) and the new ReplicaSet `<Deployment>-<hash of the template>`; the pod template
hash is not kube-controller-manager's (an FNV hash of the template and collision
count). A controller counts its unscheduled pods (no node yet: ClusterState.unscheduled)
among its active ones and deletes them first, as it deletes the new pods the drill
made that still wait; the drill runs no scheduling cycle for a pod that was
unscheduled before it (CAVEAT: a deletion that frees room for one does not place it).
maxSurge and maxUnavailable unset on a RollingUpdate Deployment read as
the API server's default, 25%.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from webhook.api.kube import RawObj, as_dict, meta, named_controller_of, pod_namespace, spec
from webhook.api.pods import is_ready, pod_key
from webhook.audit.drills.outcome import WORKLOAD, Replacer, WhatIf
from webhook.audit.measure.costs import workload_costs
from webhook.audit.measure.spread import ConstraintSpread, evaluate
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.config import Settings
from webhook.controllers.deployment import (
    RECREATE,
    ROLLING,
    DeploymentSpec,
    ReplicaSetState,
    reconcile_new_replica_set,
    reconcile_old_replica_sets,
    scale,
    scale_down_old_replica_sets_for_recreate,
)
from webhook.controllers.gotime import parse_time
from webhook.controllers.pods import new_pod, template_of
from webhook.controllers.ranking import DELETION_COST
from webhook.controllers.replicaset import get_indirectly_related_pods, get_pods_to_delete
from webhook.controllers.statefulset import scale_statefulset

__all__ = [
    "KINDS",
    "Target",
    "WorkloadRequest",
    "check_target",
    "known_workloads",
    "needs_separate_revisions",
    "parse_rollout",
    "parse_scale",
    "parse_target",
    "run_workloads",
    "separated",
    "template_hash",
    "with_deletion_costs",
    "with_separate_revisions",
]

# KIND as the flags take it (case-insensitive; kubectl's short names) -> the kind.
KINDS = {
    "deployment": "Deployment",
    "deploy": "Deployment",
    "replicaset": "ReplicaSet",
    "rs": "ReplicaSet",
    "statefulset": "StatefulSet",
    "sts": "StatefulSet",
    "replicationcontroller": "ReplicationController",
    "rc": "ReplicationController",
}
# The kinds the drills scale.
_SCALED_KINDS = frozenset(KINDS.values())
TEMPLATE_HASH = "pod-template-hash"
# The labels the StatefulSet controller gives each pod.
POD_NAME = "statefulset.kubernetes.io/pod-name"
POD_INDEX = "apps.kubernetes.io/pod-index"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# The API server's default for an unset maxSurge / maxUnavailable.
DEFAULT_FENCEPOST = "25%"


# A workload named on the command line (Workload.flag is how the flags write it).
Target = Workload


@dataclass(frozen=True)
class WorkloadRequest:
    """What the flags ask: scales (target, replicas) in the order given, or one rollout
    (target, the Deployment read from FILE or None); `now`: the controllers' clock;
    `server_version`: the API server admitting the new pods (None: the newest)."""

    scales: list[tuple[Target, int]] = field(default_factory=list)
    rollout: tuple[Target, RawObj | None] | None = None
    now: datetime | None = None
    server_version: tuple[int, int] | None = None


def parse_target(text: str) -> Target:
    """KIND/NAMESPACE/NAME; ValueError saying what is wrong."""
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"{text!r}: expected KIND/NAMESPACE/NAME")
    kind = KINDS.get(parts[0].lower())
    if kind is None:
        raise ValueError(
            f"{text!r}: unknown kind {parts[0]!r} (deployment, replicaset, statefulset, "
            "replicationcontroller, or deploy, rs, sts, rc)"
        )
    return Workload(parts[1], kind, parts[2])


def parse_scale(text: str) -> tuple[Target, int]:
    """KIND/NAMESPACE/NAME=N with N >= 0; ValueError."""
    workload, sep, count = text.partition("=")
    if not sep:
        raise ValueError(f"{text!r}: expected KIND/NAMESPACE/NAME=N")
    target = parse_target(workload)
    if not count.isascii() or not count.isdigit():
        raise ValueError(f"{text!r}: N must be a whole number 0 or more, got {count!r}")
    return target, int(count)


def parse_rollout(text: str) -> tuple[Target, str | None]:
    """deployment/NAMESPACE/NAME[=FILE]; ValueError."""
    workload, sep, path = text.partition("=")
    target = parse_target(workload)
    if target.kind != "Deployment":
        raise ValueError(f"{text!r}: a rollout is a Deployment's (deployment/NAMESPACE/NAME)")
    if sep and not path:
        raise ValueError(f"{text!r}: FILE is empty")
    return target, path or None


def _owned_by(obj: RawObj, kind: str, name: str) -> bool:
    ref = named_controller_of(obj)
    return ref is not None and ref.get("kind") == kind and ref.get("name") == name


def known_workloads(state: ClusterState, namespace: str) -> list[str]:
    """The workloads of `namespace` the drills can scale, as the flags name them."""
    found: set[Target] = set()
    for kind, ns, name in state.owners:
        if ns == namespace and kind in _SCALED_KINDS:
            found.add(Workload(ns, kind, name))
    for pod in (*state.running, *state.unscheduled):
        if pod_namespace(pod) != namespace:
            continue
        w = state.workload_of(pod)
        if w.kind in _SCALED_KINDS:
            found.add(w)
    return [t.flag for t in sorted(found)]


def check_target(state: ClusterState, target: Target) -> None:
    """ValueError naming the namespace's workloads when `target` is not one of them."""
    if (target.kind, target.namespace, target.name) in state.owners:
        return
    known = known_workloads(state, target.namespace)
    if target.flag not in known:
        listed = ", ".join(known) if known else "none"
        raise ValueError(
            f"{target.flag}: no such workload; the workloads of namespace "
            f"{target.namespace!r}: {listed}"
        )


# ---- the cluster as the drill changes it ---------------------------------------------------


class _Cluster:
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
            if pod_namespace(p) == namespace and _owned_by(p, kind, name)
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


def _owner_ref(state: ClusterState, kind: str, namespace: str, name: str) -> RawObj:
    obj = state.owners.get((kind, namespace, name))
    uid = meta(obj).get("uid") if obj is not None else None
    return {"kind": kind, "name": name, "uid": uid if isinstance(uid, str) else ""}


def _template(pods: Sequence[RawObj], owner: RawObj | None) -> RawObj | None:
    """What new pods are made from: the owner's pod template, else the one its newest
    pod was made from (controllers.pods.template_of); None with neither."""
    template = as_dict(spec(owner).get("template")) if owner is not None else {}
    if template:
        return template
    if pods:
        newest = max(pods, key=lambda p: str(meta(p).get("creationTimestamp") or ""))
        return template_of(newest)
    return None


def _replicas(owner: RawObj | None, fallback: int) -> int:
    n = spec(owner).get("replicas") if owner is not None else None
    return n if isinstance(n, int) and not isinstance(n, bool) else fallback


def _entry(key: str, node: str | None) -> RawObj:
    """A pod and its node; None for a pod on none (unscheduled or pending)."""
    return {"pod": key, "node": node or None}


# ---- scale ---------------------------------------------------------------------------------


def _replica_sets_of(cluster: _Cluster, target: Target) -> list[tuple[str, RawObj]]:
    """A Deployment's ReplicaSets: (name, owner view), by name."""
    state = cluster.state
    out = {}
    for (kind, ns, name), obj in cluster.owners.items():
        if (
            kind == "ReplicaSet"
            and ns == target.namespace
            and _owned_by(obj, "Deployment", target.name)
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


def _int_annotation(obj: RawObj, key: str) -> int | None:
    value = as_dict(meta(obj).get("annotations")).get(key)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return None


def _rs_state(name: str, obj: RawObj, pods: Sequence[RawObj]) -> ReplicaSetState:
    return ReplicaSetState(
        name,
        _replicas(obj, len(pods)),
        sum(1 for p in pods if is_ready(p)),
        parse_time(meta(obj).get("creationTimestamp")),
        _int_annotation(obj, DESIRED),
        _int_annotation(obj, MAX_REPLICAS),
    )


def _revision(obj: RawObj) -> tuple[int, str]:
    return (_int_annotation(obj, REVISION) or 0, str(meta(obj).get("creationTimestamp") or ""))


def _sync_replica_set(
    cluster: _Cluster,
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
        base = model if model is not None else _template(pods, owner)
        if base is None:
            raise ValueError(
                f"{kind} {namespace}/{name}: no running pod and no template to create pods from"
            )
        ref = _owner_ref(cluster.state, kind, namespace, name)
        fresh = [
            cluster.new_pod(base, cluster.name(namespace, name), namespace, ref, labels)
            for _ in range(want - have)
        ]
        return [], cluster.create(fresh)
    return [], []


def _deployment_spec(obj: RawObj | None, replicas: int, status_replicas: int) -> DeploymentSpec:
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


def _scale_deployment(cluster: _Cluster, target: Target, want: int) -> None:
    owner = cluster.owners.get(("Deployment", target.namespace, target.name))
    rss = _replica_sets_of(cluster, target)
    pods_by_rs = {name: cluster.pods_of("ReplicaSet", target.namespace, name) for name, _ in rss}
    related = [p for pods in pods_by_rs.values() for p in pods]
    active = [(n, o) for n, o in rss if pods_by_rs[n] or _replicas(o, 0) > 0]
    if len(active) <= 1:
        if active:
            name, obj = active[0]
        elif rss:
            name, obj = max(rss, key=lambda item: _revision(item[1]))
        else:
            raise ValueError(f"{target}: no ReplicaSet to scale")
        _sync_replica_set(cluster, "ReplicaSet", target.namespace, name, want, related, obj)
        return
    states = {n: _rs_state(n, o, pods_by_rs[n]) for n, o in active}
    newest = max(active, key=lambda item: _revision(item[1]))[0]
    d = _deployment_spec(owner, want, len(related))
    scale(d, states[newest], [s for n, s in states.items() if n != newest])
    # Each ReplicaSet's controller then deletes (first) or creates its share.
    for grow in (False, True):
        for name, obj in active:
            n = states[name].replicas
            if (n > len(pods_by_rs[name])) == grow:
                _sync_replica_set(cluster, "ReplicaSet", target.namespace, name, n, related, obj)


def _scale_statefulset(cluster: _Cluster, target: Target, want: int) -> None:
    owner = cluster.owners.get(("StatefulSet", target.namespace, target.name))
    pods = cluster.pods_of("StatefulSet", target.namespace, target.name)
    start = as_dict(spec(owner).get("ordinals")).get("start", 0) if owner is not None else 0
    gone, names = scale_statefulset(target.name, pods, want, start if isinstance(start, int) else 0)
    cluster.delete(gone)
    if names:
        base = _template(pods, owner)
        if base is None:
            raise ValueError(f"{target}: no running pod and no template to create pods from")
        ref = _owner_ref(cluster.state, "StatefulSet", target.namespace, target.name)
        fresh = []
        for name in names:
            cluster.taken.add(f"{target.namespace}/{name}")
            # The StatefulSet controller's own labels (stateful_set_utils.go).
            own = {POD_NAME: name, POD_INDEX: name.rpartition("-")[2]}
            fresh.append(cluster.new_pod(base, name, target.namespace, ref, own))
        cluster.create(fresh)


def _current(cluster: _Cluster, target: Target) -> int:
    owner = cluster.owners.get((target.kind, target.namespace, target.name))
    if target.kind == "Deployment":
        rss = _replica_sets_of(cluster, target)
        running = sum(len(cluster.pods_of("ReplicaSet", target.namespace, n)) for n, _ in rss)
        return _replicas(owner, running)
    direct = len(cluster.pods_of(target.kind, target.namespace, target.name))
    return _replicas(owner, direct)


def _change(
    cluster: _Cluster, target: Target, before: int, to: int, since: int, made: int
) -> RawObj:
    """A workloadChanges entry: the pods deleted and created from these positions on."""
    return {
        "workload": str(target),
        "from": before,
        "to": to,
        "deleted": [_entry(k, n) for k, n in cluster.deleted[since:]],
        "created": [_entry(k, None) for k in cluster.created[made:]],
    }


def _finish(cluster: _Cluster, changes: list[RawObj]) -> None:
    for change in changes:
        for entry in change["created"]:
            entry["node"] = cluster.node_of(entry["pod"])


def _scale(cluster: _Cluster, scales: Sequence[tuple[Target, int]]) -> WhatIf:
    changes = []
    for target, want in scales:
        check_target(cluster.state, target)
        before = _current(cluster, target)
        since, made = len(cluster.deleted), len(cluster.created)
        if target.kind == "Deployment":
            _scale_deployment(cluster, target, want)
        elif target.kind == "StatefulSet":
            _scale_statefulset(cluster, target, want)
        else:
            owner = cluster.owners.get((target.kind, target.namespace, target.name))
            related: list[RawObj] = []
            if owner is not None and target.kind == "ReplicaSet":
                replica_sets = [o for (k, _, _), o in cluster.owners.items() if k == "ReplicaSet"]
                related = get_indirectly_related_pods(
                    owner, replica_sets, list(cluster.alive.values())
                )
            _sync_replica_set(
                cluster, target.kind, target.namespace, target.name, want, related, owner
            )
        cluster.set_replicas(target.kind, target.namespace, target.name, want)
        changes.append(_change(cluster, target, before, want, since, made))
    _finish(cluster, changes)
    return cluster.outcome(changes)


# ---- rollout -------------------------------------------------------------------------------


def template_hash(template: RawObj, revision: str = "") -> str:
    """A stable 10-character name for a template and a revision (see the CAVEAT)."""
    text = json.dumps([template, revision], sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).digest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphabet[b % len(alphabet)] for b in digest[:10])


def separated(template: RawObj) -> tuple[RawObj, bool]:
    """The template with pod-template-hash in every constraint's matchLabelKeys, and
    whether any lacked it."""
    out = copy.deepcopy(template)
    raw = as_dict(out.get("spec")).get("topologySpreadConstraints")
    changed = False
    for c in raw if isinstance(raw, list) else ():
        if not isinstance(c, dict):
            continue
        keys = c.get("matchLabelKeys")
        keys = list(keys) if isinstance(keys, list) else []
        if TEMPLATE_HASH not in keys:
            c["matchLabelKeys"] = [*keys, TEMPLATE_HASH]
            changed = True
    return out, changed


def _new_template(cluster: _Cluster, target: Target, file: RawObj | None) -> RawObj:
    """The new revision's pod template (metadata + spec), pod-template-hash left out."""
    if file is not None:
        given = as_dict(spec(file).get("template"))
        if not given:
            raise ValueError(
                f"--rollout {target.flag}: the Deployment in FILE has no spec.template"
            )
        return copy.deepcopy(given)
    rss = _replica_sets_of(cluster, target)
    pods = [p for name, _ in rss for p in cluster.pods_of("ReplicaSet", target.namespace, name)]
    owner = cluster.owners.get(("Deployment", target.namespace, target.name))
    template = _template(pods, owner)
    if template is None:
        raise ValueError(f"{target}: no running pod and no template to roll out")
    labels = dict(as_dict(meta(template).get("labels")))
    labels.pop(TEMPLATE_HASH, None)
    # The same template under a new revision (as an image bump gives).
    return {"metadata": {"labels": labels}, "spec": copy.deepcopy(as_dict(template.get("spec")))}


def _rollout(
    cluster: _Cluster,
    target: Target,
    file: RawObj | None,
    separate: bool = False,
) -> WhatIf:
    check_target(cluster.state, target)
    owner = cluster.owners.get(("Deployment", target.namespace, target.name))
    rss = _replica_sets_of(cluster, target)
    ns = target.namespace
    pods_by_rs = {name: cluster.pods_of("ReplicaSet", ns, name) for name, _ in rss}
    before = sum(len(p) for p in pods_by_rs.values())
    template = _new_template(cluster, target, file)
    if separate:
        template, _ = separated(template)
    # Without FILE the template is the running one: the revision tells the new apart.
    digest = template_hash(template, "" if file is not None else "next revision")
    new_name = f"{target.name}-{digest}"
    labels = {**as_dict(meta(template).get("labels")), TEMPLATE_HASH: digest}
    model = {"metadata": {"labels": labels}, "spec": template.get("spec") or {}}
    wanted = (
        _replicas(file, _replicas(owner, before)) if file is not None else _replicas(owner, before)
    )
    d = _deployment_spec(file if file is not None else owner, wanted, before)
    olds = {n: _rs_state(n, o, pods_by_rs[n]) for n, o in rss}
    old_objs = dict(rss)
    new = ReplicaSetState(new_name, 0, 0, cluster.now)
    new_ref = {"kind": "ReplicaSet", "name": new_name, "uid": f"drill-{ns}-{new_name}"}
    deployment_uid = meta(owner).get("uid") if owner is not None else None
    cluster.owners[("ReplicaSet", ns, new_name)] = {
        "kind": "ReplicaSet",
        "metadata": {
            "name": new_name,
            "namespace": ns,
            "uid": new_ref["uid"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": target.name,
                    "uid": deployment_uid or f"uid-{target.name}",
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": d.replicas},
    }
    steps: list[RawObj] = []

    def related() -> list[RawObj]:
        return [p for name in (*olds, new_name) for p in cluster.pods_of("ReplicaSet", ns, name)]

    def sync_new() -> tuple[list[tuple[str, str]], list[str]]:
        active = cluster.active_of("ReplicaSet", ns, new_name)
        have = len(active)
        if have > new.replicas:
            return cluster.delete(
                get_pods_to_delete(active, related(), have - new.replicas, cluster.now)
            ), []
        fresh = [
            cluster.new_pod(model, cluster.name(ns, new_name), ns, new_ref)
            for _ in range(new.replicas - have)
        ]
        return [], cluster.create(fresh)

    def refresh() -> None:
        new.available = len(cluster.pods_of("ReplicaSet", ns, new_name))
        for name, s in olds.items():
            s.available = sum(1 for p in cluster.pods_of("ReplicaSet", ns, name) if is_ready(p))

    def record(deleted: list[tuple[str, str]], created: list[str]) -> None:
        steps.append(
            {
                "newReplicas": new.replicas,
                "oldReplicas": sum(s.replicas for s in olds.values()),
                "created": [_entry(k, cluster.node_of(k)) for k in created],
                "deleted": [_entry(k, n) for k, n in deleted],
                "pending": list(cluster.replacer.pending),
            }
        )

    def sync_olds() -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for name, s in olds.items():
            got, _ = _sync_replica_set(
                cluster, "ReplicaSet", ns, name, s.replicas, related(), old_objs[name]
            )
            out.extend(got)
        return out

    guard = 4 * (d.replicas + before) + 8
    if d.strategy == RECREATE:
        if scale_down_old_replica_sets_for_recreate(list(olds.values()), d):
            record(sync_olds(), [])
        new.replicas = d.replicas
        _, created = sync_new()
        refresh()
        record([], created)
    else:
        while guard > 0:
            guard -= 1
            everything = [*olds.values(), new]
            if reconcile_new_replica_set(everything, new, d):
                deleted, created = sync_new()
                refresh()
                record(deleted, created)
                continue
            active = [s for s in olds.values() if s.replicas > 0]
            if reconcile_old_replica_sets(everything, active, new, d):
                deleted = sync_olds()
                cluster.replacer.retry()
                refresh()
                record(deleted, [])
                continue
            break
    refresh()
    complete = (
        new.replicas == d.replicas
        and new.available == d.replicas
        and all(s.replicas == 0 for s in olds.values())
    )
    stalled = None
    if not complete:
        pending = cluster.pending_of("ReplicaSet", ns, new_name)
        if d.strategy == RECREATE:
            reason = f"{len(pending)} new pod(s) pending; Recreate waits for every new pod"
        else:
            reason = (
                f"{len(pending)} new pod(s) pending and the unavailability budget "
                f"(maxUnavailable {d.max_unavailable}) is spent: no old pod may go"
            )
        stalled = {
            "reason": reason + "; the Deployment would exceed its progress deadline",
            "pending": pending,
        }
    change = {
        "workload": str(target),
        "from": before,
        "to": d.replicas,
        "deleted": [_entry(k, n) for k, n in cluster.deleted],
        "created": [_entry(k, None) for k in cluster.created],
    }
    _finish(cluster, [change])
    return cluster.outcome([change], steps, stalled)


def run_workloads(
    state: ClusterState, request: WorkloadRequest, settings: Settings | None = None
) -> WhatIf:
    """The drill `request` asks for; ValueError on a workload it cannot drill (the CLI
    reports it as a usage error). The caller's state is left untouched."""
    settings = settings or Settings()
    cluster = _Cluster(state, settings, request.now, request.server_version)
    if request.rollout is not None:
        target, file = request.rollout
        return _rollout(cluster, target, file)
    return _scale(cluster, request.scales)


# ---- the comparisons -------------------------------------------------------------------------


def _targets(request: WorkloadRequest) -> list[Target]:
    if request.rollout is not None:
        return [request.rollout[0]]
    return list(dict.fromkeys(t for t, _ in request.scales))


def _entries(
    state: ClusterState, workload: Target, include_soft: bool, settings: Settings
) -> list[ConstraintSpread]:
    pods = [p for p in state.running if state.workload_of(p) == workload]
    for spread in evaluate(state, include_soft=include_soft, args=settings.spread, pods=pods):
        if spread.workload == workload:
            return spread.constraints
    return []


def needs_separate_revisions(state: ClusterState, request: WorkloadRequest) -> bool:
    """A rollout whose new template has a constraint counting revisions together."""
    if request.rollout is None:
        return False
    target, file = request.rollout
    cluster = _Cluster(state, Settings(), request.now, request.server_version)
    try:
        template = _new_template(cluster, target, file)
    except ValueError:
        return False
    return separated(template)[1]


def with_separate_revisions(
    state: ClusterState, request: WorkloadRequest, settings: Settings, include_soft: bool = False
) -> dict[str, Any]:
    """The rollout played again with pod-template-hash in every constraint's
    matchLabelKeys: per rolled-out workload, its constraint entries as they would end,
    how many new pods would wait, and whether it would stall."""
    if request.rollout is None:
        return {}
    target, file = request.rollout
    cluster = _Cluster(state, settings, request.now, request.server_version)
    drill = _rollout(cluster, target, file, separate=True)
    return {
        str(target): {
            "constraints": [
                c.to_json() for c in _entries(drill.state, target, include_soft, settings)
            ],
            "pending": len(drill.pending),
            "stalled": drill.stalled is not None,
        }
    }


def _with_costs(state: ClusterState, costs: dict[str, int]) -> ClusterState:
    running = []
    for pod in state.running:
        cost = costs.get(pod_key(pod))
        if cost is not None:
            md = {
                **meta(pod),
                "annotations": {**as_dict(meta(pod).get("annotations")), DELETION_COST: str(cost)},
            }
            pod = {**pod, "metadata": md}
        running.append(pod)
    return ClusterState(state.snapshot, running, state.owners, state.unscheduled)


def with_deletion_costs(
    state: ClusterState,
    request: WorkloadRequest,
    settings: Settings,
    include_soft: bool = False,
    costs_of: Callable[[ClusterState, Workload, Settings], dict[str, int]] = workload_costs,
) -> dict[str, list[RawObj]]:
    """Per changed workload, its constraint entries as they would end had its pods
    carried topospread's deletion costs (audit/measure/costs.py)."""
    costs: dict[str, int] = {}
    for t in _targets(request):
        costs.update(costs_of(state, t, settings))
    drill = run_workloads(_with_costs(state, costs), request, settings)
    return {
        str(t): [c.to_json() for c in _entries(drill.state, t, include_soft, settings)]
        for t in _targets(request)
    }
