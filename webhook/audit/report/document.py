"""The audit's answer: the JSON document of the interface (its text: report/text.py).

    report = AuditReport(spreads, plan=plan, drill=drill, before=before, honor=honor)
    json.dumps(report.to_json()); report.exit_code

Exit code: 1 when something is violated in the state reported, else 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webhook.audit.drills.nodes import HonorComparison
from webhook.audit.drills.outcome import UNREACHABLE, WITHOUT, WORKLOAD, WhatIf
from webhook.audit.measure.spread import WorkloadSpread, entry_key
from webhook.audit.plan.planner import Plan
from webhook.scheduler.scaleup import Diagnosis

__all__ = [
    "AuditReport",
    "not_recreated_reason",
    "scale_up_json",
    "scale_up_lines",
]

@dataclass(frozen=True)
class AuditReport:
    """spreads: every audited workload; plan: with --plan; drill: with a drill (then
    `spreads` are of the state after it); before: the spreads before the drill;
    honor: after an outage, per workload with pending pods, those pods placed again
    with nodeTaintsPolicy: Honor; deletion_costs, separate_revisions: a workload
    drill's comparisons (`withDeletionCosts`, `withSeparateRevisions`)."""

    spreads: list[WorkloadSpread]
    plan: Plan | None = None
    drill: WhatIf | None = None
    before: list[WorkloadSpread] | None = None
    honor: dict[str, HonorComparison] | None = None
    deletion_costs: dict[str, list[Any]] | None = None
    separate_revisions: dict[str, Any] | None = None

    def before_domains(self) -> dict[str, dict[str, int]]:
        """entry_key -> the entry's domains before the drill (the first such entry)."""
        out: dict[str, dict[str, int]] = {}
        for w in self.before or ():
            for c in w.constraints:
                out.setdefault(entry_key(str(w.workload), c), dict(c.domains))
        return out

    @property
    def violations(self) -> int:
        return sum(len(w.violated) for w in self.spreads)

    @property
    def checked(self) -> int:
        return sum(len(w.constraints) for w in self.spreads)

    @property
    def exit_code(self) -> int:
        return 1 if self.violations else 0

    def to_json(self) -> dict[str, Any]:
        workloads = [w.to_json() for w in self.spreads]
        if self.drill is not None:
            was = self.before_domains()
            for w, doc in zip(self.spreads, workloads, strict=True):
                for c, entry in zip(w.constraints, doc["constraints"], strict=True):
                    entry["before"] = was.get(entry_key(str(w.workload), c), {})
        out: dict[str, Any] = {"workloads": workloads, "violations": self.violations}
        if self.plan is not None:
            out["plan"] = [m.to_json() for m in self.plan.moves]
            out["planComplete"] = self.plan.complete
            out["planReasons"] = dict(self.plan.reasons)
        drill = self.drill
        if drill is not None:
            if drill.kind == WITHOUT:
                out["removedNodes"] = list(drill.removed)
            elif drill.kind == UNREACHABLE:
                out["unreachableNodes"] = list(drill.removed)
            elif drill.kind == WORKLOAD:
                out["workloadChanges"] = drill.workload_changes
                if drill.steps is not None:
                    out["steps"] = drill.steps
                    out["stalled"] = drill.stalled
            else:
                out["drainedNodes"] = list(drill.drained)
                out["blocked"] = dict(drill.blocked)
            out["pending"] = list(drill.pending)
            out["pendingReasons"] = {p: drill.reasons.get(p, {}) for p in drill.pending}
            out["notRecreated"] = list(drill.not_recreated)
            if drill.not_scheduled:
                out["notScheduled"] = dict(drill.not_scheduled)
            if drill.preempted:
                out["preempted"] = list(drill.preempted)
            if drill.not_recreated:
                out["notRecreatedReason"] = not_recreated_reason(drill.kind)
            out["scaleUp"] = scale_up_json(drill.pending, drill.scale_up)
            if drill.scale_up is not None and drill.pending:
                verdicts = drill.scale_up.verdicts
                out["scaleUpReasons"] = {
                    p: verdicts[p].line() for p in drill.pending if p in verdicts
                }
                out["scaleUpSummary"] = scale_up_lines(drill.scale_up)
            if self.honor is not None:
                out["withHonor"] = {
                    w: {**h.to_json(), "changed": h.changed} for w, h in self.honor.items()
                }
            if self.deletion_costs is not None:
                out["withDeletionCosts"] = self.deletion_costs
            if self.separate_revisions is not None:
                out["withSeparateRevisions"] = self.separate_revisions
        return out


def scale_up_json(pending: list[str], diagnosis: Diagnosis | None) -> dict[str, Any]:
    """The `scaleUp` JSON of a drill: every pending pod -> the templates where a new
    node would take it ([] when none would, or no profile schedules it)."""
    found = diagnosis.to_json() if diagnosis is not None else {}
    return {p: found.get(p, []) for p in pending}


def scale_up_lines(diagnosis: Diagnosis) -> list[str]:
    """The sentences closing a drill's scale-up diagnosis (`scaleUpSummary`): the nodes
    in no group, when some are, and the summary."""
    ungrouped = diagnosis.groups.ungrouped_line()
    return [*([ungrouped] if ungrouped else []), diagnosis.summary()]


def not_recreated_reason(kind: str) -> str:
    """Why a drill's `notRecreated` pods stay down (`notRecreatedReason`)."""
    if kind == UNREACHABLE:
        return (
            "StatefulSet pods wait for their Terminating predecessor; bare pods have no controller"
        )
    return "bare pods: no controller recreates them"
