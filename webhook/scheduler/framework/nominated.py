"""The profile's filters on one node that preemption changes: pods added or removed
(PreFilterExtensions) and the pods nominated to the node (two passes).

Port of pkg/scheduler/framework/runtime/framework.go: RunFilterPlugins (stopping at
the first failure), RunFilterPluginsWithNominatedPods, addGENominatedPods,
RunPreFilterExtensionAddPod, RunPreFilterExtensionRemovePod.

`FilterHandle` holds one pod's cycle after PreFilter: the plugins whose Filter runs,
those whose PreFilter rejected the pod, and the profile's filter order. A plugin
whose Filter reads nothing that adding or removing a pod changes (no "pods" nor
"requested" among its Reads.node_fields, no PreFilterExtensions) gives on a changed
copy of a node the status it gave on the node itself: when the cycle's statuses are
given (`known`), that one is taken instead of running it again. A property test holds
this to running every plugin.

Two more shortcuts serve preemption's dry run, both exact by what the plugins
declare: `fails_without` tells a node that fails with its victims gone from the
plugins whose Filter reads only their PreFilter state and the node's labels (no
"pods" nor "requested" read), on their state alone and without copying the node;
`node_filters` is what a reprieve runs when it changed only the node (no victim
counted in any PreFilter state: types.PreFilterExtensions, RemovePods): not the
Filters that read the node's pods only through their state
(`filter_reads_pods_through_state`, InterPodAffinity's), which passed before and see
nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.kube import RawObj, as_dict
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import (
    SUCCESS,
    Code,
    CycleState,
    PreFilterExtensions,
    RemovePods,
    Status,
    implements,
)

__all__ = ["NODE_DEPENDENT_FIELDS", "FilterHandle", "pod_key"]

# What a Filter must read for adding or removing a pod on the node to change its status.
NODE_DEPENDENT_FIELDS = frozenset({"pods", "requested"})


def pod_key(pod: RawObj) -> tuple[str, str]:
    """(namespace, name): what tells two pods apart here (a manifest's pod has no uid)."""
    meta = as_dict(pod.get("metadata"))
    return (meta.get("namespace") or "default", meta.get("name") or "")


def _reads_node_pods(plugin: Any) -> bool:
    reads = getattr(plugin, "reads", None)
    return bool(NODE_DEPENDENT_FIELDS.intersection(getattr(reads, "node_fields", ())))


def _pods_through_state(plugin: Any) -> bool:
    """Whether the plugin's Filter reads the node's pods only through its PreFilter state
    (declared by `filter_reads_pods_through_state`), which its PreFilterExtensions keep
    current: with that state unchanged and the node's labels too, its verdict is."""
    return bool(getattr(plugin, "filter_reads_pods_through_state", False)) and implements(
        plugin, PreFilterExtensions
    )


def _changes_with_pods(plugin: Any) -> bool:
    return _reads_node_pods(plugin) or implements(plugin, PreFilterExtensions)


def _remove_all(
    plugin: Any, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfo
) -> Status:
    """One extension plugin's RemovePod for each of `pods` (all on `node`): at once when
    it has the bulk hook (types.RemovePods), else one by one to the first failure."""
    if implements(plugin, RemovePods):
        status: Status = plugin.remove_pods(state, pod, pods, node)
        return status
    for other in pods:
        status = plugin.remove_pod(state, pod, other, node)
        if not status.ok:
            return status
    return SUCCESS


class FilterHandle:
    """One pod's filter cycle, run on changed copies of nodes (preemption.Handle).

    snapshot: the cluster state; pod: the incoming pod; priority: its priority;
    plugins: the filter plugins whose Filter runs, in profile order (each with
    `name`, `filter(state, pod, node)`, and optionally types.PreFilterExtensions and
RemovePods);
    rejected: plugin name -> the PreFilter failure it gives on every node; order: every
    filter plugin's name, in profile order; known: node name -> the cycle's status per
    plugin, or None to run every plugin on every node; priority_of: a pod's priority.
    """

    def __init__(
        self,
        snapshot: Snapshot,
        pod: RawObj,
        plugins: Sequence[Any],
        rejected: Mapping[str, Status],
        order: Sequence[str],
        priority_of: Any,
        known: Mapping[str, Mapping[str, Status]] | None = None,
    ) -> None:
        self.snapshot = snapshot
        self.pod = pod
        self.priority_of = priority_of
        self.priority: int = priority_of(pod)
        self.rejected = dict(rejected)
        by_name = {p.name: p for p in plugins}
        self.steps: list[tuple[str, Any]] = [
            (name, by_name.get(name)) for name in order if name in by_name or name in rejected
        ]
        self.extensions = [p for p in plugins if implements(p, PreFilterExtensions)]
        self.dynamic = frozenset(p.name for p in plugins if _changes_with_pods(p))
        self.known = known
        self._self_key = pod_key(pod)
        # The plugins whose Filter reads only their PreFilter state (kept current by
        # their PreFilterExtensions) and what pod removal leaves unchanged of a node.
        self._state_only = [
            plugin
            for name, plugin in self.steps
            if plugin is not None
            and implements(plugin, PreFilterExtensions)
            and not _reads_node_pods(plugin)
        ]
        # The Filter of each plugin whose status a changed copy of a node can change.
        self._dynamic_filters = [
            plugin.filter
            for name, plugin in self.steps
            if plugin is not None and name in self.dynamic
        ]
        state_only = {id(p) for p in self._state_only}
        # What a reprieve that left every PreFilter state as it was runs: the dynamic
        # Filters but those reading only their state and the node's labels, and those
        # reading the node's pods only through their state (_pods_through_state).
        self._node_filters = [
            plugin.filter
            for name, plugin in self.steps
            if plugin is not None
            and name in self.dynamic
            and id(plugin) not in state_only
            and not _pods_through_state(plugin)
        ]
        # Node name -> whether every other plugin passes there (from `known`).
        self._others_pass: dict[str, bool] = {}

    def run_filter_plugins(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        """Port of framework.go: RunFilterPlugins: the first failure in profile order (one
        neither Unschedulable nor UnschedulableAndUnresolvable, which a Filter is not
        meant to return, as an Error naming the plugin)."""
        known = self.known.get(node.name) if self.known is not None else None
        for name, plugin in self.steps:
            if plugin is None:
                return self.rejected[name]
            if known is not None and name not in self.dynamic:
                status = known.get(name, SUCCESS)
            else:
                status = plugin.filter(state, pod, node)
            if not status.ok:
                if status.code in (Code.UNSCHEDULABLE, Code.UNRESOLVABLE):
                    return status
                return Status(Code.ERROR, f'running "{name}" filter plugin: {status.reason}')
        return SUCCESS

    def fits_with_nominated_pods(
        self, state: CycleState, pod: RawObj, node: NodeInfo, states_unchanged: bool = False
    ) -> bool:
        """run_filter_plugins_with_nominated_pods(...).ok, for the dry run's reprieve loop:
        on a node no pod is nominated to, the plugins a changed copy cannot change are
        read once from `known`, the others run (no status is built).

        states_unchanged: the pod fitted before the last change, and that change left
        every PreFilter state as it was (the same objects): the plugins whose Filter
        reads only their state and the node's labels pass again and are not run."""
        if self.known is None or self.snapshot.nominated_pods(node.name):
            return self.run_filter_plugins_with_nominated_pods(state, pod, node).ok
        checks = self._node_filters if states_unchanged else self._dynamic_filters
        return self._others_pass_on(node) and all(
            check(state, pod, node).ok for check in checks
        )

    def node_filters(self, node: NodeInfo) -> list[Any] | None:
        """The Filters that tell whether the pod, which fitted on a changed copy of `node`,
        still fits after a change that left every PreFilter state as it was: those
        reading the node's pods or sums (each `filter(state, pod, node)`). None where
        fits_with_nominated_pods must decide (pods nominated there, no cycle statuses,
        or a plugin failing there whatever the change)."""
        if self.known is None or self.snapshot.nominated_pods(node.name):
            return None
        if not self._others_pass_on(node):
            return None
        return self._node_filters

    def _others_pass_on(self, node: NodeInfo) -> bool:
        """Whether every plugin a changed copy of `node` cannot change passes there (from
        the cycle's statuses, `known`), worked out once per node."""
        others = self._others_pass.get(node.name)
        if others is None:
            known = self.known.get(node.name, {}) if self.known is not None else {}
            others = self._others_pass[node.name] = not self.rejected and all(
                known.get(name, SUCCESS).ok
                for name, plugin in self.steps
                if plugin is not None and name not in self.dynamic
            )
        return others

    def fails_without(
        self, state: CycleState, pod: RawObj, node: NodeInfo, pods: Sequence[RawObj]
    ) -> bool:
        """Whether `pod` certainly fails on `node` once `pods` (all on it) are removed:
        some plugin whose Filter reads only its own PreFilter state and the node's
        labels fails on that state with `pods` removed. The node itself is left as it
        is (no copy is made); False says nothing.

        Exact for RunFilterPluginsWithNominatedPods's verdict, not its Status: a node
        fails there when either pass fails, and the second pass (or the only one) is
        on the node without nominated pods. Which plugin fails first is not known.
        """
        if not self._state_only:
            return False
        scratch = CycleState(state)
        for plugin in self._state_only:
            status = _remove_all(plugin, scratch, pod, pods, node)
            if not status.ok:
                return False  # the full dry run reports it
            if not plugin.filter(scratch, pod, node).ok:
                return True
        return False

    def run_all_filter_plugins(
        self, state: CycleState, pod: RawObj, node: NodeInfo
    ) -> dict[str, Status]:
        """Every filter plugin's status on `node` (no short-circuit), in profile order."""
        out: dict[str, Status] = {}
        known = self.known.get(node.name) if self.known is not None else None
        for name, plugin in self.steps:
            if plugin is None:
                out[name] = self.rejected[name]
            elif known is not None and name not in self.dynamic:
                out[name] = known.get(name, SUCCESS)
            else:
                out[name] = plugin.filter(state, pod, node)
        return out

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfo
    ) -> Status:
        """Port of framework.go: RunPreFilterExtensionAddPod."""
        return self._extensions("AddPod", state, pod, pod_to_add, node)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfo
    ) -> Status:
        """Port of framework.go: RunPreFilterExtensionRemovePod."""
        return self._extensions("RemovePod", state, pod, pod_to_remove, node)

    def run_pre_filter_extension_remove_pods(
        self, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfo
    ) -> Status:
        """RunPreFilterExtensionRemovePod for each of `pods` (all on `node`): a plugin
        with a `remove_pods` hook takes them at once (the same state, built once)."""
        for plugin in self.extensions:
            status = _remove_all(plugin, state, pod, pods, node)
            if not status.ok:
                return Status(
                    Code.ERROR,
                    f'running RemovePod on PreFilter plugin "{plugin.name}": {status.reason}',
                )
        return SUCCESS

    def _extensions(
        self, which: str, state: CycleState, pod: RawObj, other: RawObj, node: NodeInfo
    ) -> Status:
        """Each extension plugin's AddPod or RemovePod; the first failure as upstream
        wraps it."""
        for plugin in self.extensions:
            run = plugin.add_pod if which == "AddPod" else plugin.remove_pod
            status: Status = run(state, pod, other, node)
            if not status.ok:
                return Status(
                    Code.ERROR,
                    f'running {which} on PreFilter plugin "{plugin.name}": {status.reason}',
                )
        return SUCCESS

    def add_ge_nominated_pods(
        self, state: CycleState, pod: RawObj, node: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo] | Status:
        """Port of framework.go: addGENominatedPods: copies of the state and the node
        with the pods nominated to it of equal or higher priority (other than `pod`)."""
        nominated = self.snapshot.nominated_pods(node.name)
        if not nominated:
            return False, state, node
        chosen = [
            p
            for p in nominated
            if self.priority_of(p) >= self.priority and pod_key(p) != self._self_key
        ]
        if not chosen:
            return False, state, node
        node_out = node.snapshot()
        state_out = CycleState(state)
        for p in chosen:
            node_out.add_pod(p, *self.snapshot.requests_of(p))
            status = self.run_pre_filter_extension_add_pod(state_out, pod, p, node_out)
            if not status.ok:
                return status
        return True, state_out, node_out

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: RawObj, node: NodeInfo
    ) -> Status:
        """Port of framework.go: RunFilterPluginsWithNominatedPods: with the nominated
        pods of equal or higher priority counted on the node (the pod must not take
        room held for them), then, when that passes and some were added, without them
        (pod affinity may need them absent)."""
        added = self.add_ge_nominated_pods(state, pod, node)
        if isinstance(added, Status):
            return added
        pods_added, state_with, node_with = added
        status = self.run_filter_plugins(state_with, pod, node_with)
        if not pods_added or not status.ok:
            return status
        return self.run_filter_plugins(state, pod, node)

    def nominated_statuses(
        self, state: CycleState, names: Sequence[str]
    ) -> dict[str, dict[str, Status]]:
        """For the nodes `names` (those with nominated pods), every plugin's status with
        the nominated pods of equal or higher priority counted, where some plugin fails
        then: the first pass of RunFilterPluginsWithNominatedPods, whose failure is the
        node's (the second pass is the cycle's own verdict)."""
        out: dict[str, dict[str, Status]] = {}
        nodes = self.snapshot.nodes
        for name in names:
            info = nodes.get(name)
            if info is None:
                continue
            added = self.add_ge_nominated_pods(state, self.pod, info)
            if isinstance(added, Status):
                out[name] = {"": added}
                continue
            pods_added, state_with, node_with = added
            if not pods_added:
                continue
            statuses = self.run_all_filter_plugins(state_with, self.pod, node_with)
            if any(not s.ok for s in statuses.values()):
                out[name] = statuses
        return out
