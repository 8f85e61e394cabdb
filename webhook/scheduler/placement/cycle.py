"""The scheduler's one public face: where would kube-scheduler put this pod?

`place` runs one scheduling cycle (schedule_one: find_nodes_that_fit_pod, every
filter plugin on every node with no short-circuit so every reason shows;
prioritize_nodes, the weighted scores of the feasible nodes; select_host, the highest
sum, ties broken by name) and reports it as a Placement; `feasible_nodes` is the
filter phase alone; `explain` says whether the pod's spreading is what leaves it no
node (the /validate foresight); `warm` builds what every decision reads; `simulate`
places copies one after another on a private copy of the snapshot.

The answer is the one a node-by-node evaluation gives (tests/scheduler/
test_properties.py holds it to that, for the spread-only model and the default
profile), but the work is done once per group of nodes that must get the same answer,
so a decision over thousands of nodes stays cheap. Where each part of that lives:
- framework/runtime/filter.py: the node-wise filters' outcomes remembered per pod
  spec, judged again only for the nodes the snapshot's journal says changed, under
  the time budget;
- framework/runtime/grouping.py: new outcomes judged once per group of nodes alike
  for every filter;
- schedule_one.py: class-wise filters (PodTopologySpread) judged once per distinct
  set of label values, and each node's key (its outcome and class-wise verdicts) with
  its status map, feasibility and reasons worked out per key (the Diagnosis);
- framework/runtime/score.py: each score plugin once per class of nodes it cannot
  tell apart, or its own column hook (PodTopologySpread), NormalizeScore over the
  distinct raw scores;
- framework/runtime/verdicts.py: nodes with the same outcome share one verdict row,
  and a decision whose rows are the previous one's reuses its verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from webhook.api.field import go_quote
from webhook.api.kube import RawObj, as_dict, pod_namespace, spec
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.budget import OutOfTime, checkpoint, within
from webhook.scheduler.framework.memo import adopt, memo_of
from webhook.scheduler.framework.preemption import Preemption, resolve_priority
from webhook.scheduler.framework.runtime.filter import kept_with, outcomes_of, outcomes_view
from webhook.scheduler.framework.runtime.framework import FilterCycle, run_filter_plugins
from webhook.scheduler.framework.sampling import Sampler
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    FILTER_OUTCOMES,
    Code,
    CycleState,
    FilterPlugin,
    NodeVerdict,
    Status,
)
from webhook.scheduler.plugins.defaultpreemption import carry_on
from webhook.scheduler.plugins.helper.spread import controller_reference, find_controller
from webhook.scheduler.plugins.podtopologyspread.common import (
    DEFAULT_ARGS,
    distribution,
    eligible_nodes,
)
from webhook.scheduler.plugins.podtopologyspread.common import (
    PLUGIN_NAME as SPREAD,
)
from webhook.scheduler.plugins.podtopologyspread.defaults import (
    default_constraints_for,
    defaults_for_args,
)
from webhook.scheduler.plugins.podtopologyspread.explain import (
    ConstraintBlock,
    blocked_constraints,
)
from webhook.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    filter_classes,
    filter_keys,
)
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.profile import READS, Framework, framework_of
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

PluginStatus = Status

# The scheduler's public face: code outside scheduler/ imports these (and
# framework.types, framework.snapshot, config), never the modules below
# (tests/test_layering.py holds it).
__all__ = [
    "READS",
    "ConstraintBlock",
    "Framework",
    "NodeVerdict",
    "NotScheduled",
    "OutOfTime",
    "Placement",
    "Preemption",
    "PluginStatus",
    "Sampler",
    "Sampling",
    "Simulation",
    "Unschedulable",
    "adopt",
    "admitted_nodes",
    "controller_reference",
    "default_constraints_for",
    "defaults_for_args",
    "explain",
    "feasible_nodes",
    "find_controller",
    "framework_of",
    "not_scheduled",
    "place",
    "pod_ref",
    "resolve_priority",
    "selected_node",
    "settle",
    "simulate",
    "spread_eligible_nodes",
    "spread_pre_filter",
    "warm",
    "within",
]


@dataclass(frozen=True, slots=True)
class NotScheduled:
    """Why this scheduler never runs a scheduling cycle for the pod (no Filter, Score or
    PostFilter: it never preempts either); the same words on every surface.

    reason: "OtherScheduler" (no profile schedules its spec.schedulerName: kube-scheduler
    leaves it to that scheduler), "SchedulingGated" (upstream's PodScheduled reason: a
    PreEnqueue plugin holds it) or "NotModelled" (DynamicResources: its claims are not
    modelled); plugin: the PreEnqueue plugin that holds it ("" for OtherScheduler);
    message: the plugin's status message, or for OtherScheduler which name.
    """

    reason: str
    message: str
    plugin: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.plugin:
            out["plugin"] = self.plugin
        return out

    def text(self) -> str:
        """One line for people: 'not placed by this scheduler: schedulerName "volcano"
        has no profile here', "not placed: gated: waiting for scheduling gates: [a]",
        "not placed: not modelled: DynamicResources"."""
        if self.reason == "OtherScheduler":
            return f"not placed by this scheduler: {self.message}"
        if self.reason == "SchedulingGated":
            return f"not placed: gated: {self.message}"
        return f"not placed: {self.message}"


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


@dataclass(frozen=True, slots=True)
class Sampling:
    """How a sampled cycle chose (framework/sampling.py).

    percentage: the percentageOfNodesToScore it ran with (0: adaptive);
    num_to_find: numFeasibleNodesToFind; start: where its scan began in the node
    tree's order; processed: the nodes it looked at; scored: the nodes it found and
    scored, in the order it met them; nominated: the pod's nominated node when that
    passed every filter and was taken without a scan ("" otherwise).
    """

    percentage: int
    num_to_find: int
    start: int
    processed: int
    scored: tuple[str, ...]
    nominated: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "percentageOfNodesToScore": self.percentage,
            "numFeasibleNodesToFind": self.num_to_find,
            "startIndex": self.start,
            "processedNodes": self.processed,
            "scoredNodes": list(self.scored),
        }
        if self.nominated:
            out["nominatedNode"] = self.nominated
        return out


@dataclass(frozen=True, slots=True)
class Placement:
    """The decision for one pod.

    pod: "namespace/name"; nodes: every node, sorted by name; selected_node: the
    feasible node with the highest weighted score (ties: first by name), None when
    no node is feasible; tied_nodes: every feasible node sharing that score, sorted
    (kube-scheduler picks one of them at random); reasons: failure reason -> number
    of nodes failing with it (a node failing two plugins counts under both);
    distribution: topology key -> domain -> matching pods, before this pod; error:
    what failed the scheduling cycle (a score plugin's error), None when nothing did;
    not_scheduled: why no cycle ran at all (then `nodes` is empty), None when one ran;
    preemption: when no node is feasible, the node DefaultPreemption nominates and the
    pods it evicts there (None when it fits somewhere or preempts nowhere);
    sampling: how a sampled cycle chose (None: every node filtered and scored, the
    best node first by name); then selected_node is the node drawn among the best of
    the nodes it scored, and tied_nodes those best ones.
    """

    pod: str
    nodes: list[NodeVerdict]
    selected_node: str | None
    reasons: dict[str, int]
    distribution: dict[str, dict[str, int]]
    tied_nodes: list[str] = field(default_factory=list)
    error: str | None = None
    not_scheduled: NotScheduled | None = None
    preemption: Preemption | None = None
    sampling: Sampling | None = None

    @property
    def feasible(self) -> list[NodeVerdict]:
        return [n for n in self.nodes if n.feasible]

    def to_json(self) -> dict[str, Any]:
        """The `simulate -o json` document for this one pod."""
        out: dict[str, Any] = {
            "pod": self.pod,
            "nodes": [n.to_json() for n in self.nodes],
            "selectedNode": self.selected_node,
            "tiedNodes": list(self.tied_nodes),
            "placements": [self.selected_node],
            "distribution": self.distribution,
            "preemption": self.preemption.to_json() if self.preemption is not None else None,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.not_scheduled is not None:
            out["notScheduled"] = self.not_scheduled.to_json()
        if self.sampling is not None:
            out["sampling"] = self.sampling.to_json()
        return out

    @classmethod
    def held(cls, pod: RawObj, why: NotScheduled) -> Placement:
        """The answer for a pod no scheduling cycle is run for."""
        return cls(pod_ref(pod), [], None, {}, {}, not_scheduled=why)


@dataclass(frozen=True, slots=True)
class Simulation:
    """N copies placed one after another.

    placements[i]: the node copy i went to, None when it fit nowhere (a copy that
    preempts goes to its nominated node, once its victims left); first: the full
    decision for the first copy; distribution: matching pods per domain once every
    copy is placed; preemptions[i]: copy i's preemption, None when it had none.
    """

    placements: list[str | None]
    first: Placement
    distribution: dict[str, dict[str, int]]
    preemptions: list[Preemption | None] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = self.first.to_json()
        out["placements"] = list(self.placements)
        out["distribution"] = self.distribution
        return out


def pod_ref(pod: RawObj) -> str:
    """ "namespace/name" of a pod (generateName stands in for a missing name)."""
    meta = as_dict(pod.get("metadata"))
    name = meta.get("name") or meta.get("generateName") or ""
    return f"{pod_namespace(pod)}/{name}"


def _framework(args: SpreadArgs) -> Framework:
    """kube-scheduler's default profile with these PodTopologySpread args."""
    return framework_of(None, None if args == DEFAULT_ARGS else args)


def _spread(fw: Framework) -> PodTopologySpread | None:
    """The profile's PodTopologySpread, None when it has none."""
    plugin = fw.plugin(SPREAD)
    return plugin if isinstance(plugin, PodTopologySpread) else None


def _distribution(pod: RawObj, snapshot: Snapshot, fw: Framework, state: CycleState) -> Any:
    """Matching pods per domain for each topology key the pod spreads over, from the
    constraints the cycle parsed (the default args' when the profile has no
    PodTopologySpread)."""
    spread = _spread(fw)
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
    must get the same answer (see the module docstring).

    `sampler`: the run this cycle belongs to, when it samples as kube-scheduler does
    (its percentage, else the profile's percentageOfNodesToScore): only the nodes
    its scan finds are scored, the node is drawn among the best of them, and
    preemption starts at a random offset (framework/sampling.py).
    """
    fw = framework if framework is not None else _framework(args)
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
        pod=pod_ref(pod),
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
        pod=pod_ref(pod),
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
    fw = framework if framework is not None else _framework(DEFAULT_ARGS)
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
    fw = framework if framework is not None else _framework(DEFAULT_ARGS)
    fit = find_nodes_that_fit_pod(pod, snapshot, fw)
    names = fit.table.names
    return [names[i] for i in fit.diagnosis.feasible]


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """Why no node can take a pod although some pass every other filter: its
    DoNotSchedule spread constraints rule each of them out.

    candidates: how many nodes pass every filter but PodTopologySpread; blocked: each
    constraint that rules out some of them (ConstraintBlock.index counts the pod's
    DoNotSchedule constraints, or the scheduler's defaults when it has none).
    """

    candidates: int
    blocked: list[ConstraintBlock]


def explain(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    *,
    framework: Framework | None = None,
) -> Unschedulable | None:
    """Whether the pod's spreading is what leaves it no node.

    None when some node passes every filter, when no node passes the other filters
    (spreading is not the cause), or when the pod has no DoNotSchedule constraint
    (nor a default one) or constraints PreFilter refuses (validation reports those).

    Kept cheap for the /validate foresight on a big cluster: the other filters'
    outcomes come from what earlier decisions remembered (filter_outcomes: only
    nodes that changed are judged again), the constraints' counts from the
    snapshot's per-selector indexes, and Filter runs once per node class. Under
    a time budget (framework.budget.within) it raises OutOfTime when the budget
    runs out; the outcomes judged so far are kept for the next call.
    """
    fw = framework if framework is not None else _framework(args)
    spread = _spread(fw)
    if spread is None or SPREAD not in fw.filter_names:
        return None
    prepared = fw.filters.prepare(pod, snapshot)
    checkpoint()
    table = snapshot.node_table()
    spec, outcome_ids = outcomes_of(prepared, snapshot, table)

    # Outcome 0: every other filter passes; kept with the spec, as the node classes
    # such nodes fall in (per topology keys) below.
    def passing_others() -> tuple[list[bool], bool, dict[Any, Any]]:
        passes = [outcome == 0 for outcome in outcome_ids]
        return passes, any(passes), {}

    others_pass, any_passes, candidate_classes_of = kept_with(
        spec, "explain", outcome_ids, passing_others
    )
    if not any_passes or SPREAD not in prepared.state:
        return None
    checkpoint()
    prepared.state[FILTER_OUTCOMES] = outcomes_view(prepared, table, spec, outcome_ids)
    state = spread.pre_filter_state(prepared.state)
    if not isinstance(state, PreFilterState) or not state.constraints:
        return None
    checkpoint()
    keys = filter_keys(state)
    classes = memo_of(snapshot).node_classes(keys, (False,) * len(keys), table)
    verdicts = filter_classes(state, keys, classes.values)
    known = candidate_classes_of.get(keys)
    if known is None or known[0] is not classes.of_node:
        known = candidate_classes_of[keys] = (
            classes.of_node,
            set(compress(classes.of_node, others_pass)),
        )
    if any(verdicts[k].ok for k in known[1]):
        return None
    candidates = list(compress(table.infos, others_pass))
    return Unschedulable(len(candidates), blocked_constraints(state, candidates))


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


def settle(decision: Placement, snapshot: Snapshot) -> tuple[str | None, tuple[str, ...]]:
    """Where a decided pod ends up, on `snapshot` (a private copy the caller then binds
    the pod in): (its selected node, ()); after a preemption (its nominated node, the
    victims, "namespace/name"), the victims gone from `snapshot`: the scheduler binds it
    there in a later cycle, once they left; (None, ()) when it stays pending."""
    if decision.preemption is not None:
        return carry_on(snapshot, decision.preemption), decision.preemption.victims
    return decision.selected_node, ()


def _copy_named(pod: RawObj, name: str) -> RawObj:
    return {**pod, "metadata": {**as_dict(pod.get("metadata")), "name": name}}


def simulate(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    replicas: int = 1,
    *,
    framework: Framework | None = None,
    sampler: Sampler | None = None,
) -> Simulation:
    """Place `replicas` copies of `pod` one by one, each seeing the ones before.

    Copies after the first get distinct names (name-2, name-3, ...). The
    caller's snapshot is left untouched. `sampler`: the run the copies' cycles
    belong to (see place()), its start index and draws carried from copy to copy.
    """
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    ns = pod_namespace(pod)
    meta = as_dict(pod.get("metadata"))
    base = meta.get("name") or str(meta.get("generateName") or "pod").rstrip("-") or "pod"
    fw = framework if framework is not None else _framework(args)
    # The first copy is decided on the caller's snapshot (deciding changes no object of
    # it, and the copy below holds the same until the first copy binds): what that
    # decision learns (filter outcomes, score classes) is kept with the caller's
    # snapshot, so every later simulation of it (another workload, another --runs run)
    # starts warm instead of working it out again on its own copy.
    first: Placement = place(_copy_named(pod, base), snapshot, framework=fw, sampler=sampler)
    work = snapshot.copy()
    adopt(work, snapshot)
    placements: list[str | None] = []
    preemptions: list[Preemption | None] = []
    for i in range(replicas):
        name = base if i == 0 else f"{base}-{i + 1}"
        while i > 0 and work.has_pod(ns, name):
            name += "-x"
        copy = _copy_named(pod, name)
        # The first copy's whole Placement is reported; the others need only the node.
        decision = first if i == 0 else None
        chosen = (
            selected_node(copy, work, framework=fw, sampler=sampler)
            if decision is None
            else decision
        )
        if isinstance(chosen, Placement):
            node, _ = settle(chosen, work)
            preemption = chosen.preemption
        else:
            node, preemption = chosen, None
        placements.append(node)
        preemptions.append(preemption)
        if node is not None:
            work.add_pod(copy, node)
    spread = _spread(fw)
    args = spread.args if spread is not None else DEFAULT_ARGS
    return Simulation(placements, first, distribution(pod, work, args), preemptions)


# ---- the plugins' own answers, for the audit ------------------------------------------


def _default_spread(args: SpreadArgs) -> PodTopologySpread:
    """PodTopologySpread of the default profile with `args` (it always has one)."""
    spread = _spread(_framework(args))
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
    fw = framework if framework is not None else _framework(DEFAULT_ARGS)
    chosen: list[FilterPlugin] = [fw.plugins[name] for name in plugins if name in fw.filter_names]
    prepared = FilterCycle(chosen).prepare(pod, snapshot)
    return {
        name
        for name, info in snapshot.nodes.items()
        if all(s.ok for s in run_filter_plugins(prepared, info).values())
    }
