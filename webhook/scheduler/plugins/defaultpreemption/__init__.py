"""DefaultPreemption (PostFilter) and the nominated-pod pass, wired to one pod's cycle.

`post_filter` is what the scheduling cycle runs when no node fits: the Evaluator
(framework/preemption.py) with this plugin's decisions (plugin.py) and a
FilterHandle (framework/nominated.py) over the profile's filter plugins, node-wise
and class-wise (PodTopologySpread) alike. `nominated_failures`
is the first pass of RunFilterPluginsWithNominatedPods on the nodes pods are
nominated to.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from webhook.api.kube import RawObj
from webhook.scheduler.framework.nominated import FilterHandle
from webhook.scheduler.framework.preemption import Evaluator, Preemption, resolve_priority
from webhook.scheduler.framework.runtime.framework import PreparedFilters
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SUCCESS, CycleState, Status
from webhook.scheduler.plugins.defaultpreemption.plugin import (
    NAME,
    CyclePreemption,
    DefaultPreemption,
    filter_pods_with_pdb_violation,
)

__all__ = [
    "NAME",
    "DefaultPreemption",
    "Preemption",
    "carry_on",
    "cycle_handle",
    "filter_pods_with_pdb_violation",
    "first_failures",
    "nominated",
    "nominated_failures",
    "post_filter",
    "preempt",
]


def cycle_handle(
    pod: RawObj,
    snapshot: Snapshot,
    prepared: PreparedFilters,
    filter_names: Sequence[str],
    known: Mapping[str, Mapping[str, Status]] | None = None,
) -> tuple[FilterHandle, CycleState]:
    """A FilterHandle over one pod's cycle, and the CycleState it starts from.

    Every plugin whose Filter runs in the cycle, node-wise and class-wise alike (their
    PreFilterExtensions keep their own state entries current); known: the cycle's
    status per node and plugin, taken for the plugins that adding or removing pods
    cannot change (None: run them all).
    """
    plugins: list[Any] = [*prepared.active, *prepared.class_wise]
    state = CycleState(prepared.state)

    def priority_of(p: RawObj) -> int:
        return resolve_priority(p, snapshot)[0]

    handle = FilterHandle(
        snapshot, pod, plugins, prepared.rejected, filter_names, priority_of, known
    )
    return handle, state


def first_failures(verdicts: Sequence[Any]) -> dict[str, Status]:
    """Node name -> its first failing filter status in profile order (what upstream's
    RunFilterPlugins records for it), for each node that fails (`verdicts`: NodeVerdicts)."""
    out: dict[str, Status] = {}
    for v in verdicts:
        if v.feasible:
            continue
        for status in v.filters.values():
            if not status.ok:
                out[v.name] = status
                break
    return out


def post_filter(
    plugin: DefaultPreemption,
    handle: FilterHandle,
    state: CycleState,
    pod: RawObj,
    statuses: Mapping[str, Status],
    shortcuts: bool = True,
    *,
    nodes: Sequence[NodeInfo] | None = None,
    offset: Callable[[int], int] | None = None,
) -> tuple[Preemption | None, Status]:
    """Port of default_preemption.go: PostFilter (the dry run): the nomination and its
    victims, or why there is none ("preemption: ..." as upstream words it).
    shortcuts: see CyclePreemption (False: every step as upstream, for a reference);
    nodes: every node in the snapshot's list order (default: by name); offset: draws
    the first candidate from the number of potential nodes (default: 0)."""
    cycle = CyclePreemption(plugin, handle, shortcuts, offset)
    result, status = Evaluator(NAME, handle, cycle).preempt(state, pod, statuses, nodes)
    if status.reason:
        return result, Status(status.code, "preemption: " + status.reason)
    return result, status


def nominated_failures(
    handle: FilterHandle, state: CycleState, filter_names: Sequence[str]
) -> dict[str, dict[str, Status]]:
    """Node name -> every filter plugin's status there (profile order) with the pods
    nominated to it of equal or higher priority counted, for the nodes where some
    plugin then fails: such a node fails for the pod (RunFilterPluginsWithNominatedPods)."""
    failing = handle.nominated_statuses(state, handle.snapshot.nominated_nodes())
    return {
        name: {n: statuses.get(n, SUCCESS) for n in filter_names}
        | {n: s for n, s in statuses.items() if n not in filter_names}
        for name, statuses in failing.items()
    }


def preempt(
    plugin: DefaultPreemption,
    pod: RawObj,
    snapshot: Snapshot,
    prepared: PreparedFilters,
    filter_names: Sequence[str],
    verdicts: Sequence[Any],
    *,
    nodes: Sequence[NodeInfo] | None = None,
    offset: Callable[[int], int] | None = None,
) -> Preemption | None:
    """PostFilter for a pod no node fits (`verdicts`: the cycle's NodeVerdicts): the
    nomination and its victims, None when the pod may not or need not preempt.
    nodes, offset: see post_filter (a sampled run's list order and random offset)."""
    known = {v.name: v.filters for v in verdicts}
    handle, state = cycle_handle(pod, snapshot, prepared, filter_names, known)
    failures = first_failures(verdicts)
    return post_filter(plugin, handle, state, pod, failures, nodes=nodes, offset=offset)[0]


def nominated(
    pod: RawObj,
    snapshot: Snapshot,
    prepared: PreparedFilters,
    filter_names: Sequence[str],
) -> dict[str, dict[str, Status]]:
    """nominated_failures for one pod's cycle ({} when no pod is nominated anywhere)."""
    if not snapshot.nominated_nodes():
        return {}
    handle, state = cycle_handle(pod, snapshot, prepared, filter_names)
    return nominated_failures(handle, state, filter_names)


def carry_on(snapshot: Snapshot, preemption: Preemption) -> str:
    """What follows a preemption, on a private snapshot: the victims leave, and the
    nominated node is where the pod binds in a later cycle (returned)."""
    for ref in preemption.victims:
        namespace, _, name = ref.partition("/")
        snapshot.delete({"kind": "Pod", "metadata": {"namespace": namespace, "name": name}})
    return preemption.node
