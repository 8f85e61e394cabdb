"""One audit, start to end: what the CLI runs once and the server runs on an interval.

report = run_audit(state, settings, include_soft=False, plan=True, drill=("unreachable", sel))

With a drill, the spreads reported are those of the state after it, each entry with
the domains it had before (`before`); the outage drill also places its pending pods
again with nodeTaintsPolicy: Honor (drills.with_honor). The workload drills
(`workloads`: --scale, --rollout) also play the drill again with topospread's
deletion costs on the changed workloads' pods (withDeletionCosts) and, for a rollout
whose constraints count revisions together, with pod-template-hash in their
matchLabelKeys (withSeparateRevisions).
"""

from __future__ import annotations

from webhook.api.kube import RawObj
from webhook.audit.drills.nodes import drain_nodes, unreachable_nodes, with_honor
from webhook.audit.drills.outcome import DRAIN, UNREACHABLE, WITHOUT, without_nodes
from webhook.audit.measure.spread import evaluate
from webhook.audit.plan.planner import make_plan
from webhook.audit.report.document import AuditReport
from webhook.audit.state.inventory import ClusterState
from webhook.audit.workloads.changes import (
    needs_separate_revisions,
    run_workloads,
    with_deletion_costs,
    with_separate_revisions,
)
from webhook.audit.workloads.targets import WorkloadRequest
from webhook.config import Settings

__all__ = ["DRILLS", "run_audit"]

# The drills by name: the nodes deleted, unreachable, or drained.
DRILLS = {WITHOUT: without_nodes, UNREACHABLE: unreachable_nodes, DRAIN: drain_nodes}


def run_audit(
    state: ClusterState,
    settings: Settings,
    *,
    include_soft: bool = False,
    plan: bool = False,
    without: RawObj | None = None,
    drill: tuple[str, RawObj] | None = None,
    workloads: WorkloadRequest | None = None,
) -> AuditReport:
    """Evaluate every workload's spread (after the drill, when given: `without` is the
    --without-nodes drill's selector, `drill` any drill's (name, selector)) and, when
    asked, plan the moves that fix it. `workloads`: a workload drill instead (ValueError
    on a workload it cannot drill)."""
    if without is not None:
        drill = (WITHOUT, without)
    outcome = None
    before = None
    honor = None
    if drill is not None:
        name, selector = drill
        before = evaluate(state, include_soft=include_soft, args=settings.spread)
        outcome = DRILLS[name](state, selector, settings)
        state = outcome.state
        if name == UNREACHABLE:
            honor = with_honor(outcome, settings)
    costs = None
    revisions = None
    if workloads is not None:
        before = evaluate(state, include_soft=include_soft, args=settings.spread)
        outcome = run_workloads(state, workloads, settings)
        costs = with_deletion_costs(state, workloads, settings, include_soft)
        if needs_separate_revisions(state, workloads):
            revisions = with_separate_revisions(state, workloads, settings, include_soft)
        state = outcome.state
    spreads = evaluate(state, include_soft=include_soft, args=settings.spread)
    planned = make_plan(state, spreads, settings, include_soft=include_soft) if plan else None
    return AuditReport(
        spreads,
        plan=planned,
        drill=outcome,
        before=before,
        honor=honor,
        deletion_costs=costs,
        separate_revisions=revisions,
    )
