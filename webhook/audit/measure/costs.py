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

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from webhook.api.kube import RawObj, named_controller_of, pod_namespace, spec
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.config import Settings
from webhook.controllers.costs import replicaset_costs

__all__ = ["DELETING_CONTROLLERS", "all_costs", "costs_json", "render_costs_text", "workload_costs"]

# Controllers whose scale-down ranks pods by ActivePodsWithRanks (the pod-deletion-cost
# annotation): the ReplicaSet controller runs ReplicationControllers too.
DELETING_CONTROLLERS = frozenset({"ReplicaSet", "ReplicationController"})

_GroupKey = tuple[str, str, str]


def _groups(
    state: ClusterState, pods: Iterable[RawObj], only: Workload | None = None
) -> dict[Workload, dict[_GroupKey, list[RawObj]]]:
    by_controller: dict[_GroupKey, list[RawObj]] = {}
    for pod in pods:
        if not spec(pod).get("topologySpreadConstraints"):
            continue  # no costs for it (a ReplicaSet's pods share one template)
        ref = named_controller_of(pod)
        if ref is None or ref.get("kind") not in DELETING_CONTROLLERS:
            continue
        key = (pod_namespace(pod), str(ref["kind"]), str(ref["name"]))
        by_controller.setdefault(key, []).append(pod)
    out: dict[Workload, dict[_GroupKey, list[RawObj]]] = {}
    for key, members in by_controller.items():
        workload = state.workload_of(members[0])  # the same for every pod of its controller
        if only is None or workload == only:
            out.setdefault(workload, {})[key] = members
    return out


def _costs(
    state: ClusterState,
    groups: dict[_GroupKey, list[RawObj]],
    settings: Settings,
    eligible: dict[str, Any] | None = None,
) -> dict[str, int]:
    out: dict[str, int] = {}
    for key in sorted(groups):
        out.update(
            replicaset_costs(groups[key], state.snapshot, settings.spread, eligible_cache=eligible)
        )
    return dict(sorted(out.items()))


def workload_costs(state: ClusterState, workload: Workload, settings: Settings) -> dict[str, int]:
    """The pod-deletion-cost each running pod of `workload` should carry ("ns/name" ->
    int32), for the pods of its ReplicaSets (and ReplicationControllers) whose pods
    carry topologySpreadConstraints; {} for any other workload."""
    groups = _groups(state, state.running, workload).get(workload, {})
    return _costs(state, groups, settings)


def all_costs(
    state: ClusterState, settings: Settings, *, namespaces: Collection[str] | None = None
) -> dict[Workload, dict[str, int]]:
    """workload_costs for every workload that has costs (in `namespaces` only, when
    given), sorted by workload."""
    out: dict[Workload, dict[str, int]] = {}
    eligible: dict[str, Any] = {}  # nodes do not change during the call
    pods: Iterable[RawObj] = state.running
    if namespaces is not None:
        wanted = set(namespaces)
        pods = [p for p in state.running if pod_namespace(p) in wanted]
    for workload, groups in sorted(_groups(state, pods).items()):
        costs = _costs(state, groups, settings, eligible)
        if costs:
            out[workload] = costs
    return out


def costs_json(every: Mapping[Workload, Mapping[str, int]]) -> dict[str, int]:
    """The `deletionCosts` key of `audit -o json`: "ns/pod" -> cost, sorted by pod."""
    return dict(sorted((pod, cost) for costs in every.values() for pod, cost in costs.items()))


# Pods named per workload in the text, the first to go.
_FIRST_SHOWN = 3


def render_costs_text(every: Mapping[Workload, Mapping[str, int]]) -> str:
    """One line per workload: its pods with costs, how many distinct costs, and the
    first pods its ReplicaSet would delete (lowest cost; ties by name)."""
    if not every:
        return "deletion costs: no ReplicaSet-owned workload with topologySpreadConstraints\n"
    lines = ["deletion costs (controller.kubernetes.io/pod-deletion-cost, lowest goes first):"]
    for workload, costs in every.items():
        first = sorted(costs, key=lambda key: (costs[key], key))[:_FIRST_SHOWN]
        names = ", ".join(key.partition("/")[2] for key in first)
        more = ", ..." if len(costs) > len(first) else ""
        pods, distinct = len(costs), len(set(costs.values()))
        lines.append(
            f"  {workload}: {pods} pod{'' if pods == 1 else 's'}, {distinct} distinct "
            f"cost{'' if distinct == 1 else 's'}; first to go: {names}{more}"
        )
    return "\n".join(lines) + "\n"
