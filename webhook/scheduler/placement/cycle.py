"""One scheduling cycle, as the public face runs it: `place` (schedule_one:
find_nodes_that_fit_pod, every filter plugin on every node with no short-circuit so
every reason shows; prioritize_nodes, the weighted scores of the feasible nodes;
select_host, the highest sum, ties broken by name) reported as a Placement;
`selected_node`, its choice without every node's verdict; `feasible_nodes`, the filter
phase alone; `not_scheduled`, whether a cycle runs at all; `warm`, what every decision
reads, built ahead. The profile it runs is `default_framework`'s unless one is given.
"""

from __future__ import annotations

from typing import Any

from webhook.api.field import go_quote
from webhook.api.kube import RawObj, spec
from webhook.api.pods import pod_key
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.runtime.filter import outcomes_of
from webhook.scheduler.framework.sampling import Sampler
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import CycleState
from webhook.scheduler.placement.results import NotScheduled, Placement, Sampling
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS, distribution
from webhook.scheduler.plugins.podtopologyspread.common import PLUGIN_NAME as SPREAD
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.profile import Framework, framework_of
from webhook.scheduler.schedule_one import (
    FitResult,
    Sampled,
    find_nodes_that_fit_pod,
    prioritize_nodes,
    run_post_filter_plugins,
    sample,
    sampled_sums,
    select_best_host,
    select_host,
    select_sampled_host,
    with_nominated_pods,
)


def not_scheduled(pod: RawObj, framework: Framework | None) -> NotScheduled | None:
    """Whether the profile never schedules the pod, and why; None when it does.

    `framework` None: no profile of the configuration has the pod's schedulerName
    (Settings.framework_for answers None), so kube-scheduler's informer never hands it
    the pod. Else the profile's PreEnqueue plugins, in order (upstream's
    RunPreEnqueuePlugins): the first that rejects the pod keeps it out of the queue.
    """
    if framework is None:
        name = spec(pod).get("schedulerName")
        return NotScheduled(
            "OtherScheduler",
            f"schedulerName {go_quote(str(name or ''))} has no profile here",
        )
    for plugin in framework.pre_enqueue:
        status = plugin.pre_enqueue(pod)
        if not status.ok:
            reason = "SchedulingGated" if plugin.name == "SchedulingGates" else "NotModelled"
            return NotScheduled(reason, status.reason, plugin.name)
    return None


def default_framework(args: SpreadArgs) -> Framework:
    """kube-scheduler's default profile with these PodTopologySpread args."""
    return framework_of(None, None if args == DEFAULT_ARGS else args)


def spread_plugin(fw: Framework) -> PodTopologySpread | None:
    """The profile's PodTopologySpread, None when it has none."""
    plugin = fw.plugin(SPREAD)
    return plugin if isinstance(plugin, PodTopologySpread) else None


def _distribution(pod: RawObj, snapshot: Snapshot, fw: Framework, state: CycleState) -> Any:
    """Matching pods per domain for each topology key the pod spreads over, from the
    constraints the cycle parsed (the default args' when the profile has no
    PodTopologySpread)."""
    spread = spread_plugin(fw)
    if spread is None:
        return distribution(pod, snapshot, DEFAULT_ARGS)
    spread.cycle(state, pod, snapshot)
    return spread.distribution(state)


def place(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    *,
    framework: Framework | None = None,
    sampler: Sampler | None = None,
) -> Placement:
    """Run every filter on every node, score the feasible ones, pick a node.

    `framework`: the profile to run (default: kube-scheduler's default profile with
    `args` as PodTopologySpread's args); feasible_nodes() is the filter phase alone.
    The result is node for node what running each filter on each node and scoring the
    feasible ones would give; the filter work is done once per group of nodes that
    must get the same answer (see the package docstring, placement/__init__.py).

    `sampler`: the run this cycle belongs to, when it samples as kube-scheduler does
    (its percentage, else the profile's percentageOfNodesToScore): only the nodes
    its scan finds are scored, the node is drawn among the best of them, and
    preemption starts at a random offset (framework/sampling.py).
    """
    fw = framework if framework is not None else default_framework(args)
    held = not_scheduled(pod, fw)
    if held is not None:  # PreEnqueue keeps it out of the queue: no cycle, no PostFilter
        return Placement.held(pod, held)
    fit = with_nominated_pods(pod, snapshot, fw, find_nodes_that_fit_pod(pod, snapshot, fw))
    percentage = _sampling(fw, sampler)
    if sampler is not None and percentage is not None:
        return _place_sampled(pod, snapshot, fw, fit, sampler, percentage)
    priorities = prioritize_nodes(fw, snapshot, fit)
    last = select_host(fit, priorities)
    preemption = run_post_filter_plugins(pod, snapshot, fw, fit, last.verdicts)
    spread_over = _distribution(pod, snapshot, fw, fit.prepared.state)
    return Placement(
        pod=pod_key(pod),
        nodes=list(last.verdicts),
        selected_node=last.tied[0] if last.tied else None,
        reasons=dict(fit.diagnosis.reasons),
        distribution=spread_over,
        tied_nodes=list(last.tied),
        error=priorities.error,
        preemption=preemption,
    )


def _sampling(fw: Framework, sampler: Sampler | None) -> int | None:
    """The percentageOfNodesToScore a cycle of `fw` samples with in `sampler`'s run;
    None: it filters and scores every node."""
    if sampler is None:
        return None
    return sampler.percentage_for(fw.percentage_of_nodes_to_score)


def _sampling_of(sampled: Sampled, names: list[str], percentage: int) -> Sampling:
    scan = sampled.scan
    if scan is None:  # the nominated node fits: no scan
        return Sampling(percentage, 0, 0, 1, (sampled.nominated or "",), sampled.nominated or "")
    scored = tuple(names[i] for i in scan.found)
    return Sampling(percentage, scan.num_to_find, scan.start, scan.processed, scored)


def _place_sampled(
    pod: RawObj,
    snapshot: Snapshot,
    fw: Framework,
    fit: FitResult,
    sampler: Sampler,
    percentage: int,
) -> Placement:
    """place() for a sampled cycle: the scan's nodes scored, one of the best drawn."""
    sampled = sample(pod, fit, fw, sampler, percentage, snapshot)
    names = fit.table.names
    priorities = prioritize_nodes(fw, snapshot, fit, sampled.scored)
    last = select_host(fit, priorities)
    chosen: str | None = None
    if priorities.error is None and sampled.scored:
        by_name = {v.name: v.score for v in last.verdicts}
        sums = [by_name[names[i]] for i in sampled.scored]
        chosen = select_sampled_host(sampled, names, sums, sampler)
    preemption = run_post_filter_plugins(pod, snapshot, fw, fit, last.verdicts, sampler)
    spread_over = _distribution(pod, snapshot, fw, fit.prepared.state)
    return Placement(
        pod=pod_key(pod),
        nodes=list(last.verdicts),
        selected_node=chosen,
        reasons=dict(fit.diagnosis.reasons),
        distribution=spread_over,
        tied_nodes=list(last.tied),
        error=priorities.error,
        preemption=preemption,
        sampling=_sampling_of(sampled, names, percentage),
    )


def selected_node(
    pod: RawObj,
    snapshot: Snapshot,
    *,
    framework: Framework | None = None,
    sampler: Sampler | None = None,
) -> str | None | Placement:
    """The node place() selects, without the verdicts of every node: the filter phase,
    then the weighted sums alone (select_best_host); None when no cycle places it (a
    scoring error). When the pod is held or fits nowhere (preemption reads every
    node's verdict) the answer is place()'s whole Placement. `sampler`: as place()'s,
    the same draws in the same order."""
    fw = framework if framework is not None else default_framework(DEFAULT_ARGS)
    if not_scheduled(pod, fw) is not None:
        return place(pod, snapshot, framework=fw, sampler=sampler)
    fit = with_nominated_pods(pod, snapshot, fw, find_nodes_that_fit_pod(pod, snapshot, fw))
    if not fit.diagnosis.feasible:
        return place(pod, snapshot, framework=fw, sampler=sampler)
    percentage = _sampling(fw, sampler)
    if sampler is None or percentage is None:
        return select_best_host(fw, snapshot, fit)
    sampled = sample(pod, fit, fw, sampler, percentage, snapshot)
    if sampled.chosen is not None:
        return sampled.chosen
    sums = sampled_sums(fw, snapshot, fit, sampled.scored)
    if sums is None:
        return None
    return select_sampled_host(sampled, fit.table.names, sums, sampler)


def feasible_nodes(
    pod: RawObj, snapshot: Snapshot, *, framework: Framework | None = None
) -> list[str]:
    """The nodes that pass every filter of the profile for `pod`, by name: place()'s
    feasible nodes without its scores or verdicts (for callers that choose the node
    themselves, such as a rebalancing plan)."""
    fw = framework if framework is not None else default_framework(DEFAULT_ARGS)
    fit = find_nodes_that_fit_pod(pod, snapshot, fw)
    names = fit.table.names
    return [names[i] for i in fit.diagnosis.feasible]


def warm(snapshot: Snapshot, framework: Framework) -> None:
    """Build what every decision of `framework` reads whatever the pod: the node
    table, the nodes' pod-independent filter groups and what the filters index of
    the existing pods (InterPodAffinity's terms), by running the filters once for a
    typical pod. Later decisions keep them up to date node by node."""
    # A pod as most are: requests, and the tolerations kube-apiserver adds to every pod
    # (the filters that look at those are the ones whose node groups get built).
    typical: RawObj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "topospread-warm-up", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "warm-up",
                    "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}},
                }
            ],
            "tolerations": [
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
            ],
        },
    }
    prepared = framework.filters.prepare(typical, snapshot)
    outcomes_of(prepared, snapshot, snapshot.node_table())
