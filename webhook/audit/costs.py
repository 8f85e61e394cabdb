"""The deletion costs of the audit's workloads: which pods a ReplicaSet-owned workload
has, grouped by the ReplicaSet (or ReplicationController) that deletes them, each
group's costs from controllers.costs.

    costs = workload_costs(state, workload, settings)   # "ns/pod" -> cost
    every = all_costs(state, settings)                  # Workload -> its costs

A Deployment mid-rollout has several ReplicaSets: each deletes only its own pods, so
each gets its own costs, counted over the whole selector (the other ReplicaSets'
matching pods count as floors; with `pod-template-hash` in matchLabelKeys each
revision counts alone, as the scheduler counts it).
"""

from __future__ import annotations

from collections.abc import Iterable

from webhook.api.kube import RawObj, pod_namespace
from webhook.audit.inventory import ClusterState, Workload, controller_of
from webhook.config import Settings
from webhook.controllers.costs import replicaset_costs

__all__ = ["DELETING_CONTROLLERS", "all_costs", "workload_costs"]

# Controllers whose scale-down ranks pods by ActivePodsWithRanks (the pod-deletion-cost
# annotation): the ReplicaSet controller runs ReplicationControllers too.
DELETING_CONTROLLERS = frozenset({"ReplicaSet", "ReplicationController"})

_GroupKey = tuple[str, str, str]


def _groups(
    state: ClusterState, pods: Iterable[RawObj], only: Workload | None = None
) -> dict[Workload, dict[_GroupKey, list[RawObj]]]:
    out: dict[Workload, dict[_GroupKey, list[RawObj]]] = {}
    for pod in pods:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") not in DELETING_CONTROLLERS:
            continue
        workload = state.workload_of(pod)
        if only is not None and workload != only:
            continue
        key = (pod_namespace(pod), str(ref["kind"]), str(ref["name"]))
        out.setdefault(workload, {}).setdefault(key, []).append(pod)
    return out


def _costs(
    state: ClusterState, groups: dict[_GroupKey, list[RawObj]], settings: Settings
) -> dict[str, int]:
    out: dict[str, int] = {}
    for key in sorted(groups):
        out.update(replicaset_costs(groups[key], state.snapshot, settings.spread))
    return dict(sorted(out.items()))


def workload_costs(state: ClusterState, workload: Workload, settings: Settings) -> dict[str, int]:
    """The pod-deletion-cost each running pod of `workload` should carry ("ns/name" ->
    int32), for the pods of its ReplicaSets (and ReplicationControllers) whose pods
    carry topologySpreadConstraints; {} for any other workload."""
    groups = _groups(state, state.running, workload).get(workload, {})
    return _costs(state, groups, settings)


def all_costs(state: ClusterState, settings: Settings) -> dict[Workload, dict[str, int]]:
    """workload_costs for every workload that has costs, sorted by workload."""
    out: dict[Workload, dict[str, int]] = {}
    for workload, groups in sorted(_groups(state, state.running).items()):
        costs = _costs(state, groups, settings)
        if costs:
            out[workload] = costs
    return out
