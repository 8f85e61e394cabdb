"""Preemption's evaluator: which node a pod that fits nowhere would free for itself, and
which pods it would evict there (kube-scheduler's PostFilter, DefaultPreemption).

Port of pkg/scheduler/framework/preemption/preemption.go (Evaluator: Preempt,
findCandidates, DryRunPreemption, SelectCandidate, pickOneNodeForPreemption) and of
the helpers it reads: corev1helpers.PodPriority, util.MoreImportantPod,
util.GetPodStartTime, util.GetEarliestPodStartTime. The evaluator knows the plugin
only through `Interface` (offset and number of candidates, eligibility,
SelectVictimsOnNode) and the profile only through `Handle` (Filter and the
PreFilterExtensions on one node), as upstream's Evaluator knows fwk.Handle.

Nothing is evicted: the answer is what the scheduler would do, a node to nominate
and its victims (`Preemption`).

Priorities are read as stored (spec.priority, which the API server sets from the
PriorityClass when a pod is created); a pod read from a manifest has none yet, so
its priorityClassName is resolved against the PriorityClasses of the cluster state
as the Priority admission plugin would (resolve_priority).

CAVEAT: upstream checks candidates in parallel and stops once enough are found, so
which nodes past the first few it dry-runs depends on timing; here they are checked
in order from the offset, which gives one of the answers upstream can give.
CAVEAT: upstream's extenders (callExtenders) are not modelled: there are none.

The dry run's failure statuses are shown only when no node is a candidate: until
then a node the plugin can tell fails without working out why carries FAILS
(select_victims_on_node with `exact` False), and the statuses are worked out exactly
only when they are shown. Which nodes are candidates, and their victims, are
upstream's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from webhook.api.kube import RawObj, as_dict
from webhook.api.pods import pod_key as pod_ref
from webhook.scheduler.framework.budget import checkpoint
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import Code, CycleState, Status

__all__ = [
    "DEFAULT_PRIORITY",
    "FAILS",
    "SYSTEM_PRIORITY_CLASSES",
    "Candidate",
    "Evaluator",
    "Handle",
    "Interface",
    "Preemption",
    "Victims",
    "earliest_pod_start_time",
    "more_important_pod",
    "pick_one_node_for_preemption",
    "pod_priority",
    "pod_ref",
    "pod_start_time",
    "resolve_priority",
]

# scheduling.DefaultPriorityWhenNoDefaultClassExists.
DEFAULT_PRIORITY = 0
# The classes every cluster has (scheduling.SystemPriorityClasses), for a pod read
# from a manifest when the cluster state holds no PriorityClass objects.
SYSTEM_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
PREEMPT_NEVER = "Never"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
# What PodDisruptionBudget / PriorityClass objects are stored as in the Snapshot.
PDB_KIND = "PodDisruptionBudget"
PRIORITY_CLASS_KIND = "PriorityClass"


def _default_class(snapshot: Snapshot | None) -> RawObj | None:
    """Port of admission/priority: getDefaultPriorityClass (of several global defaults,
    the one with the lowest value)."""
    best: RawObj | None = None
    for pc in snapshot.listed(PRIORITY_CLASS_KIND) if snapshot is not None else ():
        if pc.get("globalDefault") is True and isinstance(pc.get("value"), int):
            if best is None or pc["value"] < best["value"]:
                best = pc
    return best


def resolve_priority(pod: RawObj, snapshot: Snapshot | None) -> tuple[int, str]:
    """(priority, preemptionPolicy) of a pod as the API server stores it.

    spec.priority when set (and spec.preemptionPolicy, default PreemptLowerPriority);
    else, as the Priority admission plugin resolves it on create: the PriorityClass
    named by spec.priorityClassName, or the globalDefault class when none is named,
    else priority 0; the class's preemptionPolicy fills a missing one.

    Port of plugin/pkg/admission/priority/admission.go: admitPod.
    CAVEAT: a class the cluster state does not hold (nor a system class) resolves to
    0, where the API server would refuse the pod.
    """
    spec = as_dict(pod.get("spec"))
    policy = spec.get("preemptionPolicy")
    priority = spec.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool):
        return priority, policy if isinstance(policy, str) else PREEMPT_LOWER_PRIORITY
    name = spec.get("priorityClassName")
    pc: RawObj | None
    if isinstance(name, str) and name:
        pc = snapshot.get(PRIORITY_CLASS_KIND, "", name) if snapshot is not None else None
        if pc is None and name in SYSTEM_PRIORITY_CLASSES:
            pc = {"value": SYSTEM_PRIORITY_CLASSES[name]}
    else:
        pc = _default_class(snapshot)
    value = pc.get("value") if pc is not None else None
    if not isinstance(policy, str):
        from_class = pc.get("preemptionPolicy") if pc is not None else None
        policy = from_class if isinstance(from_class, str) else PREEMPT_LOWER_PRIORITY
    if not isinstance(value, int) or isinstance(value, bool):
        return DEFAULT_PRIORITY, policy
    return value, policy


def pod_priority(pod: RawObj, snapshot: Snapshot | None = None) -> int:
    """corev1helpers.PodPriority, with a manifest's class resolved (resolve_priority)."""
    return resolve_priority(pod, snapshot)[0]


@functools.lru_cache(maxsize=4096)
def _parse_rfc3339(value: str) -> float | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_start_time(pod: RawObj) -> float:
    """util.GetPodStartTime: status.startTime, else now (a pod not started yet is the
    newest of all: +inf here, so it compares after every real start time)."""
    status = pod.get("status")  # read directly: the dry run sorts every victim by it
    value = status.get("startTime") if type(status) is dict else None
    started = _parse_rfc3339(value) if isinstance(value, str) and value else None
    return math.inf if started is None else started


def more_important_pod(
    a: RawObj, b: RawObj, priority: Callable[[RawObj], int] = pod_priority
) -> bool:
    """Port of util.MoreImportantPod: higher priority, then the earlier start time."""
    pa, pb = priority(a), priority(b)
    if pa != pb:
        return pa > pb
    return pod_start_time(a) < pod_start_time(b)


@dataclass(frozen=True, slots=True)
class Victims:
    """extenderv1.Victims: the pods to evict on one node, most important first, and
    how many of them violate a PodDisruptionBudget; `priorities` holds each pod's."""

    pods: tuple[RawObj, ...]
    priorities: tuple[int, ...]
    num_pdb_violations: int


@dataclass(frozen=True, slots=True)
class Candidate:
    """preemption.Candidate: a node the pod could be nominated to, and its victims."""

    name: str
    victims: Victims


@dataclass(frozen=True, slots=True)
class Preemption:
    """The outcome of a PostFilter that found a node: the node the pod is nominated to
    and the pods evicted there ("namespace/name", most important first)."""

    node: str
    victims: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "victims": list(self.victims)}


class Handle(Protocol):
    """What the evaluator runs of the profile on one node (fwk.Handle's part of it)."""

    snapshot: Snapshot

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: RawObj, node: NodeInfo
    ) -> Status: ...

    def fits_with_nominated_pods(
        self, state: CycleState, pod: RawObj, node: NodeInfo, states_unchanged: bool = False
    ) -> bool: ...

    def fails_without(
        self, state: CycleState, pod: RawObj, node: NodeInfo, pods: Sequence[RawObj]
    ) -> bool: ...

    def node_filters(self, node: NodeInfo) -> list[Any] | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfo
    ) -> Status: ...

    def run_pre_filter_extension_remove_pods(
        self, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfo
    ) -> Status: ...


class Interface(Protocol):
    """preemption.Interface: what a preemption plugin decides."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: RawObj, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: RawObj,
        node: NodeInfo,
        pdbs: Sequence[RawObj],
        exact: bool = True,
    ) -> tuple[list[RawObj], int, Status]: ...


def earliest_pod_start_time(victims: Victims) -> float:
    """Port of util.GetEarliestPodStartTime: the earliest start time among the victims
    of the highest priority."""
    best_priority = victims.priorities[0]
    earliest = pod_start_time(victims.pods[0])
    for pod, priority in zip(victims.pods, victims.priorities, strict=True):
        if priority == best_priority:
            earliest = min(earliest, pod_start_time(pod))
        elif priority > best_priority:
            best_priority, earliest = priority, pod_start_time(pod)
    return earliest


# What select_victims_on_node(exact=False) returns for a node it can tell fails
# without working out which plugin fails first (that is worked out only when shown).
FAILS = Status(Code.UNSCHEDULABLE, "fails with every lower-priority pod removed")

# Added to every priority before summing, so that all are >= 0 (math.MaxInt32 + 1).
_PRIORITY_SHIFT = 2**31


def pick_one_node_for_preemption(nodes_to_victims: Mapping[str, Victims]) -> str:
    """The node to preempt on, by these criteria in order, each applied to the nodes
    tied on the ones before: fewest PodDisruptionBudget violations; lowest
    highest-priority victim; smallest sum of victim priorities; fewest victims; latest
    start time of the highest-priority victims; the first node left (in the order
    given: upstream's is that of a Go map, random).

    Port of preemption.go: pickOneNodeForPreemption (no OrderedScoreFuncs).
    """
    if not nodes_to_victims:
        return ""
    scores: tuple[Callable[[Victims], float], ...] = (
        lambda v: -v.num_pdb_violations,
        lambda v: -v.priorities[0],
        lambda v: -sum(p + _PRIORITY_SHIFT for p in v.priorities),
        lambda v: -len(v.pods),
        earliest_pod_start_time,
    )
    nodes = list(nodes_to_victims)
    for score in scores:
        of = {node: score(nodes_to_victims[node]) for node in nodes}
        best = max(of.values())
        nodes = [node for node in nodes if of[node] == best]
        if len(nodes) == 1:
            return nodes[0]
    return nodes[0]


class Evaluator:
    """preemption.Evaluator: finds candidates with the plugin's SelectVictimsOnNode and
    picks one."""

    def __init__(self, plugin_name: str, handle: Handle, interface: Interface) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface

    def preempt(
        self,
        state: CycleState,
        pod: RawObj,
        statuses: Mapping[str, Status],
        nodes: Sequence[NodeInfo] | None = None,
    ) -> tuple[Preemption | None, Status]:
        """Port of preemption.go: Preempt (the dry run: nothing is evicted).

        `statuses`: each node's filter status from the scheduling cycle (the first
        failing plugin's); `nodes`: every node in the snapshot's list order (default:
        by name; a sampled run gives its node tree's). (the nomination, Success) when a
        node is found; (None, the reason) when the pod may not preempt or preemption
        would not help.
        """
        nominated = as_dict(pod.get("status")).get("nominatedNodeName")
        nominated_status = statuses.get(nominated) if isinstance(nominated, str) else None
        ok, msg = self.interface.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg)
        snapshot = self.handle.snapshot
        all_nodes = snapshot.node_table().infos if nodes is None else nodes
        if not all_nodes:
            return None, Status(Code.ERROR, "no nodes available")
        candidates, node_statuses = self.find_candidates(state, all_nodes, pod, statuses)
        errors = [s.reason for s in node_statuses.values() if s.code is Code.ERROR]
        if errors and not candidates:
            # utilerrors.NewAggregate(errs).Error()
            return None, Status(
                Code.ERROR, errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            )
        if not candidates:
            return None, Status(Code.UNSCHEDULABLE, _fit_error(len(all_nodes), node_statuses))
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")
        return Preemption(best.name, tuple(map(pod_ref, best.victims.pods))), Status()

    def find_candidates(
        self,
        state: CycleState,
        all_nodes: Sequence[NodeInfo],
        pod: RawObj,
        statuses: Mapping[str, Status],
    ) -> tuple[list[Candidate], dict[str, Status]]:
        """Port of preemption.go: findCandidates: the nodes whose failure preemption
        may resolve (Unschedulable, not UnschedulableAndUnresolvable), dry-run from
        the plugin's offset."""
        potential = [
            info
            for info in all_nodes
            if (s := statuses.get(info.name)) is not None and s.code is Code.UNSCHEDULABLE
        ]
        if not potential:
            return [], {}
        pdbs = self.handle.snapshot.listed(PDB_KIND)
        offset, num = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: RawObj,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[RawObj],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], dict[str, Status]]:
        """Port of preemption.go: DryRunPreemption, node after node from `offset`
        (wrapping), stopping once some candidate violates no PodDisruptionBudget and
        there are `num_candidates`; candidates violating none come first.

        A node's failure status is shown only when no node is a candidate: until then
        the plugin may tell a node fails without working out its status (FAILS), and
        those statuses are worked out only then."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses: dict[str, Status] = {}
        undecided: dict[str, NodeInfo] = {}
        n = len(potential_nodes)
        for i in range(n):
            checkpoint()  # under a time budget (the /validate foresight), give up in time
            info = potential_nodes[(offset + i) % n]
            pods, violations, status = self.interface.select_victims_on_node(
                CycleState(state), pod, info, pdbs, exact=False
            )
            if status is FAILS:
                node_statuses[info.name] = status
                undecided[info.name] = info
                continue
            if status.ok and pods:
                priorities = tuple(pod_priority(p, self.handle.snapshot) for p in pods)
                c = Candidate(info.name, Victims(tuple(pods), priorities, violations))
                (violating if violations else non_violating).append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.ok:
                status = Status(
                    Code.ERROR, f'expected at least one victim pod on node "{info.name}"'
                )
            node_statuses[info.name] = status
        if undecided and not non_violating and not violating:
            for name, info in undecided.items():
                node_statuses[name] = self.interface.select_victims_on_node(
                    CycleState(state), pod, info, pdbs
                )[2]
        return non_violating[:num_candidates] + violating[:num_candidates], node_statuses

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """Port of preemption.go: SelectCandidate."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims = {c.name: c.victims for c in candidates}
        name = pick_one_node_for_preemption(victims)
        return Candidate(name, victims[name]) if name in victims else candidates[0]


def _fit_error(num_nodes: int, node_statuses: Mapping[str, Status]) -> str:
    """FitError.Error() for the nodes preemption looked at: "0/N nodes are available:
    <count> <reason>, ..." with the nodes it did not dry-run counted as "Preemption is
    not helpful for scheduling" (SetAbsentNodesStatus)."""
    counts: dict[str, int] = {}
    for status in node_statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    absent = num_nodes - len(node_statuses)
    if absent > 0:
        reason = "Preemption is not helpful for scheduling"
        counts[reason] = counts.get(reason, 0) + absent
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    return f"0/{num_nodes} nodes are available: {', '.join(parts)}."
