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

from collections.abc import Callable
from typing import Any

from webhook.api.kube import RawObj, as_dict, meta
from webhook.api.pods import pod_key
from webhook.audit.drills.outcome import WhatIf
from webhook.audit.measure.costs import workload_costs
from webhook.audit.measure.spread import ConstraintSpread, evaluate
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.audit.workloads.rollout import new_template, rollout, separated, template_hash
from webhook.audit.workloads.scale import scale_workloads
from webhook.audit.workloads.simulated import DrillCluster
from webhook.audit.workloads.targets import Target, WorkloadRequest
from webhook.config import Settings
from webhook.controllers.ranking import DELETION_COST

__all__ = [
    "needs_separate_revisions",
    "run_workloads",
    "separated",
    "template_hash",
    "with_deletion_costs",
    "with_separate_revisions",
]


def run_workloads(
    state: ClusterState, request: WorkloadRequest, settings: Settings | None = None
) -> WhatIf:
    """The drill `request` asks for; ValueError on a workload it cannot drill (the CLI
    reports it as a usage error). The caller's state is left untouched."""
    settings = settings or Settings()
    cluster = DrillCluster(state, settings, request.now, request.server_version)
    if request.rollout is not None:
        target, file = request.rollout
        return rollout(cluster, target, file)
    return scale_workloads(cluster, request.scales)


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
    cluster = DrillCluster(state, Settings(), request.now, request.server_version)
    try:
        template = new_template(cluster, target, file)
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
    cluster = DrillCluster(state, settings, request.now, request.server_version)
    drill = rollout(cluster, target, file, separate=True)
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
