"""What a decision answers: the result types of the scheduling cycle (Placement, and
the Sampling and NotScheduled it may carry), of simulate (Simulation) and of explain
(Unschedulable), each naming its pod by api.pods.pod_key. Plain data, no decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import RawObj
from webhook.api.pods import pod_key
from webhook.scheduler.framework.preemption import Preemption
from webhook.scheduler.framework.types import NodeVerdict
from webhook.scheduler.plugins.podtopologyspread.explain import ConstraintBlock


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
        return cls(pod_key(pod), [], None, {}, {}, not_scheduled=why)


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
