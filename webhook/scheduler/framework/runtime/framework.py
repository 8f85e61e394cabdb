"""The framework runtime: runs a profile's filter plugins on a pod, node by node or by
groups of nodes the plugins cannot tell apart.

The runtime knows plugins only through framework/types.py. `prepare` runs every
PreFilter once; `run_filter_plugins` then gives each plugin's Status on one node (a plugin
whose PreFilter skipped reports Success, one whose PreFilter failed reports that
failure on every node), `passes` / `passing` say whether all pass, stopping at the
first failure. Every filter rule is written once, in its plugin's `filter`.

Grouping: a plugin's `node_key` is what it reads of a node for this pod, so nodes
whose keys are equal for every active plugin get the same statuses (placement groups
nodes so, None meaning some plugin must see each node on its own), and `pod_inputs` is
what the plugins read of the pod, so pods with equal inputs get the same statuses on
every node (placement remembers outcomes by it across decisions).

Optional hooks a plugin may add (found with getattr; upstream has no such points):
- filter `pod_key(state, pod)`: what its Filter reads of the pod (else the whole spec);
- filter `node_label_keys(state, pod)`: the node labels its node_key reads for this
  pod, None when it reads more (nodes are then grouped by Memo.node_classes of those
  labels instead of reading node_key node by node);
- filter `node_state_key(node)`, for a plugin whose node_key reads the pod: what its
  Filter reads of a node whatever the pod (equal keys, equal statuses for every pod),
  so nodes can be grouped once per node generation when those groups are few;
- score `score_key(state, pod)` with `score_node_key(node)`: what Score reads of the
  pod and, whatever the pod, of a node (equal pairs give equal raw scores);
- score `score_label_keys(state, pod)`: the node labels Score reads for this pod,
  None when it reads more;
- score `normalize_reads_values`: NormalizeScore maps each raw score by a function of
  that score and the set of raw scores (not names, not multiplicity).
Each grouping is held to node-by-node evaluation by tests/scheduler/test_properties.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webhook.api.kube import RawObj
from webhook.scheduler.framework.types import (
    SUCCESS,
    Code,
    CycleState,
    FilterPlugin,
    NodeInfoLike,
    Status,
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
    names: every filter plugin of the profile, in profile order; active: the plugins
    whose Filter runs (PreFilter neither skipped nor failed), in profile order;
    rejected: plugin name -> the PreFilter failure it reports on every node.
    """

    pod: RawObj
    state: CycleState
    names: tuple[str, ...]
    active: tuple[FilterPlugin, ...]
    rejected: dict[str, Status]

    def is_active(self, name: str) -> bool:
        return any(p.name == name for p in self.active)


class FilterCycle:
    """The filter plugins of one profile, built once; `prepare` starts a cycle per pod."""

    def __init__(self, plugins: Sequence[FilterPlugin]) -> None:
        self.plugins = tuple(plugins)
        self.names = tuple(p.name for p in self.plugins)

    def prepare(self, pod: RawObj, snapshot: Snapshot | None = None) -> PreparedFilters:
        """Run each plugin's PreFilter (when it has one) on `pod`."""
        state = CycleState()
        active: list[FilterPlugin] = []
        rejected: dict[str, Status] = {}
        for plugin in self.plugins:
            pre = getattr(plugin, "pre_filter", None)
            status: Status = SUCCESS if pre is None else pre(state, pod, snapshot)
            if status.code is Code.SKIP:
                continue
            if status.ok:
                active.append(plugin)
            else:
                rejected[plugin.name] = status
        return PreparedFilters(pod, state, self.names, tuple(active), rejected)


def run_filter_plugins(prepared: PreparedFilters, node: NodeInfoLike) -> dict[str, Status]:
    """Each filter plugin's Status on `node`, in profile order. The dict is new on every
    call: callers may add to it."""
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
    """Whether every filter passes on `node`, stopping at the first failure."""
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
    """Everything of the pod the filter plugins read, as one string: pods with the same
    string get the same Status from each plugin on every node, whatever else differs
    (image, labels, name), so outcomes can be remembered by it."""
    state, pod = prepared.state, prepared.pod
    rejected = sorted((name, s.code.value, s.reason) for name, s in prepared.rejected.items())
    parts: list[Any] = [rejected, prepared.names]
    for plugin in prepared.active:
        key_of = getattr(plugin, "pod_key", None)
        parts.append([plugin.name, key_of(state, pod) if key_of else pod.get("spec")])
    return json.dumps(parts, sort_keys=True, separators=(",", ":"), default=repr)
