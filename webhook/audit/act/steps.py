"""Carrying out a plan, the decisions: what each step predicts, what the cluster did,
whether they agree, and when to stop (pure; the I/O is apply.py and evictions.py).

    prediction = predict(state, spreads, move, settings)   # where the replacement goes, skews after
    answer = eviction_answer(status, body)                  # 201 / 429 / 404 ... as one outcome
    delays = backoff(first=1, cap=16, bound=60)            # waits between refused evictions
    stage, pod = replacement(before_uids, pods_now, workload, workload_of)
    differences = compare(prediction, observation)         # [] when the step went as planned
    busy = workloads_in_flight(pods, workload_of)          # never a second eviction there

A step is one eviction of the plan. It **predicts** two things, from the state seen
just before it: the domain the replacement lands in, for every checked constraint
that counts the pod (the domain of the plan's target node: the plan's target is a
feasible node, and the step is only as planned when the scheduler puts the
replacement in the same domain), and each such constraint's skew once the
replacement runs there (the scheduler's own count on the state with the move made).
After the step, the cluster is audited again and the **observation** (the node the
replacement was bound to, its domains, the skews) is compared entry by entry; any
difference stops the run: reality departed from the plan, so the rest of the plan,
worked out on the predicted state, no longer holds.

CAVEAT: for a hostname constraint the domain is the node itself: the scheduler
choosing another equally empty node is a difference, though the skew may be the
same; `--replan` continues from the state it then sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.api.kube import meta as meta_of
from webhook.api.pods import is_ready, pod_key
from webhook.audit.act.answers import CONFLICT, EVICTED, GONE, REFUSED, Answer, eviction_answer
from webhook.audit.measure.spread import WorkloadSpread, entry_key
from webhook.audit.plan.planner import Move
from webhook.audit.plan.workspace import Workspace
from webhook.audit.state.inventory import ClusterState, Workload, is_finished
from webhook.scheduler.framework.snapshot import is_terminating

__all__ = [
    "BLOCKED",
    "BUDGET",
    "COMPLETED",
    "CONFLICT",
    "DIFFERED",
    "DIFFERENCE",
    "ERROR",
    "EVICTED",
    "EXIT_CODES",
    "GONE",
    "MATCHED",
    "READY",
    "REFUSED",
    "STEP_OUTCOMES",
    "TIMEOUT",
    "Answer",
    "EntryPrediction",
    "Observation",
    "Prediction",
    "StepRecord",
    "backoff",
    "compare",
    "eviction_answer",
    "observe",
    "predict",
    "replacement",
    "step_line",
    "workloads_in_flight",
]

# How a run ends (ApplyResult.outcome) and the exit status of `audit --apply` for each:
# 0 and 2 keep their meaning for every command (done; usage, read or cluster error), 1
# stays "violated" (the audit's own status when the plan is printed and not carried
# out); a run that stopped gets a status of its own.
COMPLETED = "completed"
DIFFERENCE = "difference"
BUDGET = "budget"
ERROR = "error"
EXIT_CODES = {COMPLETED: 0, ERROR: 2, DIFFERENCE: 3, BUDGET: 4}

# A step's result (StepRecord.result): as predicted, a difference, its replacement not
# Ready in time, its workload not settled; GONE, BUDGET and ERROR are results too.
MATCHED = "matched"
DIFFERED = "differed"
TIMEOUT = "timeout"
BLOCKED = "blocked"
# The outcome of a run that stopped on a step of each result.
STEP_OUTCOMES = {
    DIFFERED: DIFFERENCE,
    TIMEOUT: DIFFERENCE,
    GONE: DIFFERENCE,
    BLOCKED: DIFFERENCE,
    BUDGET: BUDGET,
    ERROR: ERROR,
}

# Where the replacement is (replacement()).
NONE_YET = "not created"
UNBOUND = "not bound"
NOT_READY = "not Ready"
READY = "Ready"



def backoff(first: float, cap: float, bound: float) -> list[float]:
    """The waits between refused evictions: doubling from `first`, at most `cap` each,
    adding up to at most `bound` seconds (the last one shortened to reach it exactly)."""
    out: list[float] = []
    if first <= 0 or bound <= 0:
        return out
    total = 0.0
    wait = first
    while total < bound:
        step = min(wait, cap, bound - total)
        out.append(step)
        total += step
        wait *= 2
    return out


@dataclass(frozen=True)
class EntryPrediction:
    """One checked constraint the step's pod counts in: its entry (spread.entry_key),
    a label to print, its topology key, the domain the replacement should land in
    (None: the target node is in none of its domains) and the skew predicted after."""

    key: str
    label: str
    topology_key: str
    domain: str | None
    skew: int


@dataclass(frozen=True)
class Prediction:
    """A step of the plan and what it predicts (see the module docstring)."""

    move: Move
    entries: list[EntryPrediction]

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.move.to_node,
            "domains": {e.label: e.domain for e in self.entries},
            "skews": {e.label: e.skew for e in self.entries},
        }


def _label(workload: str, index: int, topology_key: str) -> str:
    return f"{workload} [{index}] {topology_key}"


def node_domain(state: ClusterState, node: str | None, topology_key: str) -> str | None:
    """The node's value of the topology key, None without one (or without a node)."""
    if node is None:
        return None
    info = state.snapshot.nodes.get(node)
    if info is None:
        return None
    labels = as_dict(meta_of(info.node).get("labels"))
    value = labels.get(topology_key)
    return value if isinstance(value, str) else None


def predict(
    state: ClusterState,
    spreads: list[WorkloadSpread],
    move: Move,
    settings: Any,
    *,
    include_soft: bool = False,
) -> Prediction:
    """What the step `move` leads to on `state`: every checked entry counting the pod,
    with the target node's domain and its skew once the pod runs there (the planner's
    working copy, recounted by the scheduler's PodTopologySpread)."""
    # Only entries of the pod's namespace can count it, and they count only pods of that
    # namespace: the copy keeps the whole model (the counting runs on it) but follows
    # only that namespace's pods and entries.
    namespace = move.pod.partition("/")[0]
    mine = [w for w in spreads if w.workload.namespace == namespace]
    running = [p for p in state.running if pod_namespace(p) == namespace]
    view = ClusterState(state.snapshot, running, state.owners, state.unscheduled)
    space = Workspace(view, mine, settings, include_soft=include_soft)
    touched = space.affected(move.pod)
    space.move(move.pod, move.to_node)
    space.refresh(touched)
    entries = []
    for i in touched:
        t = space.tracked[i]
        workload = str(t.workload)
        entries.append(
            EntryPrediction(
                entry_key(workload, t.spread),
                _label(workload, t.spread.index, t.spread.topology_key),
                t.spread.topology_key,
                node_domain(state, move.to_node, t.spread.topology_key),
                t.skew,
            )
        )
    return Prediction(move, entries)


@dataclass(frozen=True)
class Observation:
    """What the cluster did: the replacement (ns/name) and its node, its domain per
    predicted entry, and the entries' skews as the audit after the step counts them
    (an entry the audit no longer has is absent)."""

    pod: str | None
    node: str | None
    domains: dict[str, str | None] = field(default_factory=dict)
    skews: dict[str, int] = field(default_factory=dict)

    def to_json(self, prediction: Prediction) -> dict[str, Any]:
        labels = {e.key: e.label for e in prediction.entries}
        return {
            "pod": self.pod,
            "node": self.node,
            "domains": {labels[k]: v for k, v in self.domains.items() if k in labels},
            "skews": {labels[k]: v for k, v in self.skews.items() if k in labels},
        }


def observe(
    prediction: Prediction,
    after: ClusterState,
    spreads: Iterable[WorkloadSpread],
    pod: str | None,
    node: str | None,
) -> Observation:
    """The observation of a step: the replacement `pod` bound to `node`, and the audit
    `spreads` of the state `after` it."""
    skews: dict[str, int] = {}
    for w in spreads:
        for c in w.constraints:
            skews.setdefault(entry_key(str(w.workload), c), c.skew)
    wanted = {e.key for e in prediction.entries}
    domains = {e.key: node_domain(after, node, e.topology_key) for e in prediction.entries}
    return Observation(pod, node, domains, {k: v for k, v in skews.items() if k in wanted})


def compare(prediction: Prediction, observed: Observation) -> list[str]:
    """The differences between a step's prediction and what the cluster did, one
    sentence each; [] when the step went as planned."""
    out: list[str] = []
    for e in prediction.entries:
        got = observed.domains.get(e.key)
        if got != e.domain:
            out.append(
                f"the replacement {observed.pod} landed on {observed.node}: {e.topology_key} "
                f"{_domain(got)}, not {_domain(e.domain)} as planned"
            )
        if e.key not in observed.skews:
            out.append(f"{e.label}: no longer audited after the step")
        elif observed.skews[e.key] != e.skew:
            out.append(
                f"{e.label}: skew {observed.skews[e.key]} after the step, {e.skew} predicted"
            )
    return list(dict.fromkeys(out))


def _domain(value: str | None) -> str:
    return value if value is not None else "no domain"


# ---- the pods of a workload while a step runs ------------------------------------------


def _stage(pod: RawObj) -> str:
    node = as_dict(pod.get("spec")).get("nodeName")
    if not isinstance(node, str) or not node:
        return UNBOUND
    return READY if is_ready(pod) else NOT_READY


def _uid(pod: RawObj) -> str:
    uid = meta_of(pod).get("uid")
    return uid if isinstance(uid, str) else ""


def replacement(
    before: Iterable[str],
    pods: Iterable[RawObj],
    workload: Workload,
    workload_of: Callable[[RawObj], Workload],
) -> tuple[str, RawObj | None]:
    """Where the replacement of an evicted pod of `workload` is: (NONE_YET, None), or
    its stage (UNBOUND, NOT_READY, READY) and the pod. The replacement is a pod of the
    workload whose uid was not among `before` (the uids seen before the eviction; a
    StatefulSet's keeps the name, never the uid), not terminating, not finished; with
    several, the furthest along, then by name."""
    seen = set(before)
    rank = {UNBOUND: 2, NOT_READY: 1, READY: 0}
    found = sorted(
        (rank[_stage(pod)], pod_key(pod), pod)
        for pod in pods
        if _uid(pod) not in seen
        and not is_terminating(pod)
        and not is_finished(pod)
        and workload_of(pod) == workload
    )
    if not found:
        return NONE_YET, None
    return _stage(found[0][2]), found[0][2]


def workloads_in_flight(
    pods: Iterable[RawObj], workload_of: Callable[[RawObj], Workload]
) -> dict[Workload, str]:
    """Workloads a step must not touch now, and why: one of their pods is terminating
    (an eviction in flight: its replacement may not exist yet), or not bound, or bound
    and not Ready (a pending pod; a replacement not Ready yet). Finished pods and bare
    pods do not count."""
    out: dict[Workload, str] = {}
    for pod in sorted(pods, key=pod_key):
        if is_finished(pod):
            continue
        workload = workload_of(pod)
        if workload.kind == "Pod" or workload in out:
            continue
        if is_terminating(pod):
            out[workload] = f"pod {pod_key(pod)} is terminating (an eviction in flight)"
            continue
        stage = _stage(pod)
        if stage != READY:
            out[workload] = f"pod {pod_key(pod)} is {stage}"
    return out


# ---- the record -------------------------------------------------------------------------


@dataclass
class StepRecord:
    """One step as carried out: its number, the move, the eviction request, the answers
    (429s included), where the replacement went, what was predicted and observed, and
    the step's result: "matched", "differed", "budget", "timeout", "gone", "blocked",
    "error"."""

    number: int
    move: Move
    request: RawObj
    answers: list[Answer] = field(default_factory=list)
    prediction: Prediction | None = None
    observation: Observation | None = None
    result: str = ""
    differences: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.number,
            "pod": self.move.pod,
            "from": self.move.from_node,
            "to": self.move.to_node,
            "workload": self.move.workload,
            "request": self.request,
            "answers": [a.to_json() for a in self.answers],
            "result": self.result,
            "differences": list(self.differences),
            "seconds": round(self.seconds, 3),
        }
        if self.prediction is not None:
            out["predicted"] = self.prediction.to_json()
            if self.observation is not None:
                out["observed"] = self.observation.to_json(self.prediction)
        return out


def step_line(record: StepRecord, total: int) -> str:
    """The text line of a step: ✓ when it went as predicted, else ✗ and what happened."""
    move = record.move
    head = f"{record.number}/{total} evict {move.pod} ({move.from_node} -> {move.to_node})"
    if record.result == MATCHED:
        obs = record.observation
        where = f"{obs.pod} on {obs.node}" if obs is not None else "replacement Ready"
        skews = ", ".join(
            f"{e.topology_key} skew {e.skew}"
            for e in (record.prediction or Prediction(move, [])).entries
        )
        return f"✓ {head}: {where}" + (f"; {skews} as predicted" if skews else "")
    return f"✗ {head}: " + "; ".join(record.differences or [record.result])
