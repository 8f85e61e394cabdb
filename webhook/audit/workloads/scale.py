"""`audit --scale KIND/NAMESPACE/NAME=N`: each scale as its controller carries it out.

A ReplicaSet or ReplicationController deletes getPodsToDelete's pods or creates the
missing ones; a Deployment not mid-rollout scales its one ReplicaSet so, mid-rollout
its size change is split across its ReplicaSets by proportional scaling
(controllers.deployment.scale), each ReplicaSet then deleting or creating its share; a
StatefulSet removes its highest ordinals or creates the missing ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from webhook.api.kube import RawObj, as_dict, spec
from webhook.audit.drills.outcome import WhatIf
from webhook.audit.workloads.simulated import (
    POD_INDEX,
    POD_NAME,
    DrillCluster,
    change,
    deployment_spec,
    finish,
    owner_ref,
    replica_sets_of,
    replicas_of,
    revision_of,
    rs_state,
    sync_replica_set,
    template_for,
)
from webhook.audit.workloads.targets import Target, check_target
from webhook.controllers.deployment import scale
from webhook.controllers.replicaset import get_indirectly_related_pods
from webhook.controllers.statefulset import scale_statefulset

__all__ = ["scale_workloads"]


def _scale_deployment(cluster: DrillCluster, target: Target, want: int) -> None:
    owner = cluster.owners.get(("Deployment", target.namespace, target.name))
    rss = replica_sets_of(cluster, target)
    pods_by_rs = {name: cluster.pods_of("ReplicaSet", target.namespace, name) for name, _ in rss}
    related = [p for pods in pods_by_rs.values() for p in pods]
    active = [(n, o) for n, o in rss if pods_by_rs[n] or replicas_of(o, 0) > 0]
    if len(active) <= 1:
        if active:
            name, obj = active[0]
        elif rss:
            name, obj = max(rss, key=lambda item: revision_of(item[1]))
        else:
            raise ValueError(f"{target}: no ReplicaSet to scale")
        sync_replica_set(cluster, "ReplicaSet", target.namespace, name, want, related, obj)
        return
    states = {n: rs_state(n, o, pods_by_rs[n]) for n, o in active}
    newest = max(active, key=lambda item: revision_of(item[1]))[0]
    d = deployment_spec(owner, want, len(related))
    scale(d, states[newest], [s for n, s in states.items() if n != newest])
    # Each ReplicaSet's controller then deletes (first) or creates its share.
    for grow in (False, True):
        for name, obj in active:
            n = states[name].replicas
            if (n > len(pods_by_rs[name])) == grow:
                sync_replica_set(cluster, "ReplicaSet", target.namespace, name, n, related, obj)


def _scale_statefulset(cluster: DrillCluster, target: Target, want: int) -> None:
    owner = cluster.owners.get(("StatefulSet", target.namespace, target.name))
    pods = cluster.pods_of("StatefulSet", target.namespace, target.name)
    start = as_dict(spec(owner).get("ordinals")).get("start", 0) if owner is not None else 0
    gone, names = scale_statefulset(target.name, pods, want, start if isinstance(start, int) else 0)
    cluster.delete(gone)
    if names:
        base = template_for(pods, owner)
        if base is None:
            raise ValueError(f"{target}: no running pod and no template to create pods from")
        ref = owner_ref(cluster.state, "StatefulSet", target.namespace, target.name)
        fresh = []
        for name in names:
            cluster.taken.add(f"{target.namespace}/{name}")
            # The StatefulSet controller's own labels (stateful_set_utils.go).
            own = {POD_NAME: name, POD_INDEX: name.rpartition("-")[2]}
            fresh.append(cluster.new_pod(base, name, target.namespace, ref, own))
        cluster.create(fresh)


def _current(cluster: DrillCluster, target: Target) -> int:
    owner = cluster.owners.get((target.kind, target.namespace, target.name))
    if target.kind == "Deployment":
        rss = replica_sets_of(cluster, target)
        running = sum(len(cluster.pods_of("ReplicaSet", target.namespace, n)) for n, _ in rss)
        return replicas_of(owner, running)
    direct = len(cluster.pods_of(target.kind, target.namespace, target.name))
    return replicas_of(owner, direct)


def scale_workloads(cluster: DrillCluster, scales: Sequence[tuple[Target, int]]) -> WhatIf:
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
            sync_replica_set(
                cluster, target.kind, target.namespace, target.name, want, related, owner
            )
        cluster.set_replicas(target.kind, target.namespace, target.name, want)
        changes.append(change(cluster, target, before, want, since, made))
    finish(cluster, changes)
    return cluster.outcome(changes)
