"""`audit --rollout deployment/NAMESPACE/NAME[=FILE]`: a Deployment's rollout step by
step, as the Deployment controller plays RollingUpdate (reconcileNewReplicaSet, then
reconcileOldReplicaSets) or Recreate, each ReplicaSet's controller deleting or creating
pods to match (see workloads/changes.py for the whole story).
"""

from __future__ import annotations

import copy
import hashlib
import json

from webhook.api.kube import RawObj, as_dict, meta, spec
from webhook.api.pods import is_ready
from webhook.audit.drills.outcome import WhatIf
from webhook.audit.workloads.simulated import (
    TEMPLATE_HASH,
    DrillCluster,
    change,
    deployment_spec,
    entry,
    finish,
    replica_sets_of,
    replicas_of,
    rs_state,
    sync_replica_set,
    template_for,
)
from webhook.audit.workloads.targets import Target, check_target
from webhook.controllers.deployment import (
    RECREATE,
    ReplicaSetState,
    reconcile_new_replica_set,
    reconcile_old_replica_sets,
    scale_down_old_replica_sets_for_recreate,
)
from webhook.controllers.replicaset import get_pods_to_delete

__all__ = ["new_template", "rollout", "separated", "template_hash"]


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


def new_template(cluster: DrillCluster, target: Target, file: RawObj | None) -> RawObj:
    """The new revision's pod template (metadata + spec), pod-template-hash left out."""
    if file is not None:
        given = as_dict(spec(file).get("template"))
        if not given:
            raise ValueError(
                f"--rollout {target.flag}: the Deployment in FILE has no spec.template"
            )
        return copy.deepcopy(given)
    rss = replica_sets_of(cluster, target)
    pods = [p for name, _ in rss for p in cluster.pods_of("ReplicaSet", target.namespace, name)]
    owner = cluster.owners.get(("Deployment", target.namespace, target.name))
    template = template_for(pods, owner)
    if template is None:
        raise ValueError(f"{target}: no running pod and no template to roll out")
    labels = dict(as_dict(meta(template).get("labels")))
    labels.pop(TEMPLATE_HASH, None)
    # The same template under a new revision (as an image bump gives).
    return {"metadata": {"labels": labels}, "spec": copy.deepcopy(as_dict(template.get("spec")))}


def rollout(
    cluster: DrillCluster,
    target: Target,
    file: RawObj | None,
    separate: bool = False,
) -> WhatIf:
    check_target(cluster.state, target)
    owner = cluster.owners.get(("Deployment", target.namespace, target.name))
    rss = replica_sets_of(cluster, target)
    ns = target.namespace
    pods_by_rs = {name: cluster.pods_of("ReplicaSet", ns, name) for name, _ in rss}
    before = sum(len(p) for p in pods_by_rs.values())
    template = new_template(cluster, target, file)
    if separate:
        template, _ = separated(template)
    # Without FILE the template is the running one: the revision tells the new apart.
    digest = template_hash(template, "" if file is not None else "next revision")
    new_name = f"{target.name}-{digest}"
    labels = {**as_dict(meta(template).get("labels")), TEMPLATE_HASH: digest}
    model = {"metadata": {"labels": labels}, "spec": template.get("spec") or {}}
    wanted = replicas_of(owner, before)
    if file is not None:
        wanted = replicas_of(file, wanted)
    d = deployment_spec(file if file is not None else owner, wanted, before)
    olds = {n: rs_state(n, o, pods_by_rs[n]) for n, o in rss}
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
                "created": [entry(k, cluster.node_of(k)) for k in created],
                "deleted": [entry(k, n) for k, n in deleted],
                "pending": list(cluster.replacer.pending),
            }
        )

    def sync_olds() -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for name, s in olds.items():
            got, _ = sync_replica_set(
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
    changes = [change(cluster, target, before, d.replicas, 0, 0)]
    finish(cluster, changes)
    return cluster.outcome(changes, steps, stalled)
