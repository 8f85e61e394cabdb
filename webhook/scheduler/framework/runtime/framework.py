"""The framework runtime proper: a profile's filter plugins run on a pod, PreFilter once
and Filter per node, and the pod signature the runtime remembers outcomes by.

Port of runtime/framework.go: RunPreFilterPlugins, RunFilterPlugins (every plugin on
every node, no short-circuit, so every reason shows). The runtime knows plugins only
through framework/types.py. `prepare` runs every PreFilter once; a plugin whose
PreFilter skipped reports Success, one whose PreFilter failed reports that failure on
every node. Every filter rule is written once, in its plugin's `filter`.

Two kinds of filter plugin, told apart once when the profile is built:
- node-wise (every plugin but the ClassFilter ones): a plugin's `node_key` is what it
  reads of a node for this pod, so nodes whose keys are equal for every active plugin
  get the same statuses (grouping.py), and `pod_inputs` is what they read of the pod,
  so pods with equal inputs get the same statuses on every node (filter.py remembers
  their outcomes by it across decisions);
- class-wise (types.ClassFilter: PodTopologySpread): its verdict reads only the node's
  values for a few labels and changes with every pod bound, so it is judged once per
  node class at every decision (schedule_one.py), never remembered.
`run_filter_plugins` runs both node by node: the reference the groupings are held to.
The scores: score.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from webhook.api.kube import RawObj
from webhook.scheduler.framework.types import (
    SUCCESS,
    ClassFilter,
    Code,
    CycleState,
    FilterPlugin,
    NodeInfoLike,
    PodKeyed,
    Status,
    implements,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.scheduler.framework.snapshot import Snapshot

__all__ = [
    "FilterCycle",
    "PreparedFilters",
    "all_passing",
    "passes",
    "passing",
    "pod_inputs",
    "run_filter_plugins",
]


@dataclass(frozen=True, slots=True)
class PreparedFilters:
    """One pod's filter cycle after PreFilter.

    pod: the pod as given; state: what the PreFilters left for their Filters;
    names: every filter plugin of the profile, in profile order; active: the node-wise
    plugins whose Filter runs (PreFilter neither skipped nor failed), in profile order;
    class_wise: the class-wise ones (types.ClassFilter) whose Filter runs;
    rejected: plugin name -> the PreFilter failure it reports on every node.
    """

    pod: RawObj
    state: CycleState
    names: tuple[str, ...]
    active: tuple[FilterPlugin, ...]
    class_wise: tuple[Any, ...]
    rejected: dict[str, Status]

    def is_active(self, name: str) -> bool:
        return any(p.name == name for p in (*self.active, *self.class_wise))


class FilterCycle:
    """The filter plugins of one profile, built once; `prepare` starts a cycle per pod."""

    def __init__(self, plugins: Sequence[FilterPlugin]) -> None:
        self.plugins = tuple(plugins)
        self.names = tuple(p.name for p in self.plugins)
        # Decided once: which plugins are judged per node class (types.ClassFilter) and
        # which have a PreFilter.
        self._class_wise = frozenset(p.name for p in self.plugins if implements(p, ClassFilter))
        self._pre = frozenset(p.name for p in self.plugins if hasattr(p, "pre_filter"))

    def prepare(self, pod: RawObj, snapshot: Snapshot | None = None) -> PreparedFilters:
        """Port of runtime/framework.go: RunPreFilterPlugins (each plugin's PreFilter, when
        it has one, on `pod`; every one runs, whatever the others answer)."""
        state = CycleState()
        active: list[FilterPlugin] = []
        class_wise: list[Any] = []
        rejected: dict[str, Status] = {}
        for plugin in self.plugins:
            status: Status = SUCCESS
            if plugin.name in self._pre:
                status = plugin.pre_filter(state, pod, snapshot)  # type: ignore[attr-defined]
            if status.code is Code.SKIP:
                continue
            if not status.ok:
                rejected[plugin.name] = status
            elif plugin.name in self._class_wise:
                class_wise.append(plugin)
            else:
                active.append(plugin)
        return PreparedFilters(pod, state, self.names, tuple(active), tuple(class_wise), rejected)


def run_filter_plugins(prepared: PreparedFilters, node: NodeInfoLike) -> dict[str, Status]:
    """Each filter plugin's Status on `node`, in profile order, class-wise plugins
    included. The dict is new on every call: callers may add to it.

    Port of runtime/framework.go: RunFilterPlugins (without its short-circuit).
    """
    out = run_node_wise(prepared, node)
    state, pod = prepared.state, prepared.pod
    for plugin in prepared.class_wise:
        out[plugin.name] = plugin.filter(state, pod, node)
    return out


def run_node_wise(prepared: PreparedFilters, node: NodeInfoLike) -> dict[str, Status]:
    """run_filter_plugins with the class-wise plugins left at Success: the outcome the
    runtime remembers per pod spec and node."""
    out = dict.fromkeys(prepared.names, SUCCESS)
    out.update(prepared.rejected)
    state, pod = prepared.state, prepared.pod
    for plugin in prepared.active:
        out[plugin.name] = plugin.filter(state, pod, node)
    return out


def all_passing(prepared: PreparedFilters) -> dict[str, Status]:
    """What run_filter_plugins answers for a node every plugin passes."""
    return dict.fromkeys(prepared.names, SUCCESS)


def passes(prepared: PreparedFilters, node: NodeInfoLike) -> bool:
    """Whether every node-wise filter passes on `node` (none rejected the pod at
    PreFilter), stopping at the first failure: what the runtime remembers per node."""
    if prepared.rejected:
        return False
    state, pod = prepared.state, prepared.pod
    return all(plugin.filter(state, pod, node).ok for plugin in prepared.active)


def passing(prepared: PreparedFilters, infos: Sequence[NodeInfoLike]) -> list[bool]:
    """passes for each node, in one pass."""
    if prepared.rejected:
        return [False] * len(infos)
    state, pod = prepared.state, prepared.pod
    checks = [plugin.filter for plugin in prepared.active]
    return [all(check(state, pod, info).ok for check in checks) for info in infos]


def pod_inputs(prepared: PreparedFilters) -> str:
    """Everything of the pod the node-wise filter plugins read, as one string: pods with
    the same string get the same Status from each of them on every node, whatever else
    differs (image, labels, name), so outcomes can be remembered by it."""
    state, pod = prepared.state, prepared.pod
    rejected = sorted((name, s.code.value, s.reason) for name, s in prepared.rejected.items())
    parts: list[Any] = [rejected, prepared.names]
    for plugin in prepared.active:
        key = (
            cast("PodKeyed", plugin).pod_key(state, pod)
            if implements(plugin, PodKeyed)
            else pod.get("spec")
        )
        parts.append([plugin.name, key])
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
