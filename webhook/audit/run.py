"""One audit, start to end: what the CLI runs once and the server runs on an interval.

report = run_audit(state, settings, include_soft=False, plan=True, without=None)
"""

from __future__ import annotations

from webhook.api.kube import RawObj
from webhook.audit.inventory import ClusterState
from webhook.audit.plan import make_plan
from webhook.audit.report import AuditReport
from webhook.audit.spread import evaluate
from webhook.audit.whatif import without_nodes
from webhook.config import Settings

__all__ = ["run_audit"]


def run_audit(
    state: ClusterState,
    settings: Settings,
    *,
    include_soft: bool = False,
    plan: bool = False,
    without: RawObj | None = None,
) -> AuditReport:
    """Evaluate every workload's spread (after removing the nodes `without` selects and
    re-placing their pods, when given) and, when asked, plan the moves that fix it."""
    drill = None
    if without is not None:
        drill = without_nodes(state, without, settings)
        state = drill.state
    spreads = evaluate(state, include_soft=include_soft, args=settings.spread)
    planned = make_plan(state, spreads, settings, include_soft=include_soft) if plan else None
    return AuditReport(spreads, plan=planned, drill=drill)
