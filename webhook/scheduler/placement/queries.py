"""The plugins' own answers, for the audit: PodTopologySpread's PreFilter state and
the nodes taking part in each of a pod's spreads, and the nodes that pass a chosen set
of filter plugins.
"""

from __future__ import annotations

from collections.abc import Sequence

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.runtime.framework import FilterCycle, run_filter_plugins
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Code, CycleState, FilterPlugin, Status
from webhook.scheduler.placement.cycle import default_framework, spread_plugin
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS, eligible_nodes
from webhook.scheduler.plugins.podtopologyspread.filtering import PreFilterState
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.profile import Framework


def _default_spread(args: SpreadArgs) -> PodTopologySpread:
    """PodTopologySpread of the default profile with `args` (it always has one)."""
    spread = spread_plugin(default_framework(args))
    if spread is None:  # kube-scheduler's default profile enables it: never happens
        raise RuntimeError("the default profile has no PodTopologySpread")
    return spread


def spread_pre_filter(
    pod: RawObj, snapshot: Snapshot, args: SpreadArgs = DEFAULT_ARGS
) -> PreFilterState | Status:
    """PodTopologySpread's PreFilter state for `pod`, as the plugin computes it: per
    DoNotSchedule constraint (or default), its eligible domains with their matching pods
    (`tp_value_to_match_num`), the global minimum (`global_min`) and the selector
    counted with; the Status of its PreFilter error."""
    spread = _default_spread(args)
    state = CycleState()
    status = spread.pre_filter(state, pod, snapshot)
    if not status.ok and status.code is not Code.SKIP:
        return status
    return spread.pre_filter_state(state)


def spread_eligible_nodes(
    pod: RawObj, snapshot: Snapshot, args: SpreadArgs = DEFAULT_ARGS
) -> list[dict[str, str]] | Status:
    """For each DoNotSchedule constraint of `pod` (or default), in order, every node
    taking part in its spread -> the node's domain, by the plugin's node inclusion (the
    constraints' keys, nodeAffinityPolicy, nodeTaintsPolicy); the Status of a PreFilter
    error."""
    spread = _default_spread(args)
    kept = spread.cycle(CycleState(), pod, snapshot)
    if isinstance(kept.hard, Status):
        return kept.hard
    return eligible_nodes(snapshot, kept.hard.constraints, kept.inclusion)


def admitted_nodes(
    pod: RawObj,
    snapshot: Snapshot,
    plugins: Sequence[str],
    *,
    framework: Framework | None = None,
) -> set[str]:
    """The nodes that pass every one of the named filter plugins of `framework`'s
    profile (default: kube-scheduler's default profile) for `pod`: their PreFilter and
    Filter, run by the runtime (a plugin the profile does not enable is left out)."""
    fw = framework if framework is not None else default_framework(DEFAULT_ARGS)
    chosen: list[FilterPlugin] = [fw.plugins[name] for name in plugins if name in fw.filter_names]
    prepared = FilterCycle(chosen).prepare(pod, snapshot)
    return {
        name
        for name, info in snapshot.nodes.items()
        if all(s.ok for s in run_filter_plugins(prepared, info).values())
    }
