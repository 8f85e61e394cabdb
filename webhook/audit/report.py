"""The audit's answer: the JSON document of the interface, and the text a person reads.

    report = AuditReport(spreads, plan=plan, drill=drill)
    json.dumps(report.to_json()); render_text(report, colour=False); report.exit_code

Text: one block per violated workload (each domain's count as a bar, the skew
against maxSkew, the plan's moves as kubectl lines), the pending pods of a drill,
then one summary line. Exit code: 1 when something is violated in the state
reported, else 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.audit.plan import Plan
from webhook.audit.spread import ConstraintSpread, WorkloadSpread
from webhook.audit.whatif import WhatIf
from webhook.scheduler.scaleup import Diagnosis

__all__ = ["BAR_WIDTH", "AuditReport", "render_text", "scale_up_json", "scale_up_text"]

BAR_WIDTH = 30


@dataclass(frozen=True)
class AuditReport:
    """spreads: every audited workload; plan: with --plan; drill: with --without-nodes
    (then `spreads` are of the state after re-placement)."""

    spreads: list[WorkloadSpread]
    plan: Plan | None = None
    drill: WhatIf | None = None

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
        out: dict[str, Any] = {
            "workloads": [w.to_json() for w in self.spreads],
            "violations": self.violations,
        }
        if self.plan is not None:
            out["plan"] = [m.to_json() for m in self.plan.moves]
            out["planComplete"] = self.plan.complete
            out["planReasons"] = dict(self.plan.reasons)
        if self.drill is not None:
            out["removedNodes"] = list(self.drill.removed)
            out["pending"] = list(self.drill.pending)
            out["pendingReasons"] = {p: self.drill.reasons.get(p, {}) for p in self.drill.pending}
            if self.drill.not_scheduled:
                out["notScheduled"] = dict(self.drill.not_scheduled)
            out["scaleUp"] = scale_up_json(self.drill.pending, self.drill.scale_up)
        return out


def scale_up_json(pending: list[str], diagnosis: Diagnosis | None) -> dict[str, Any]:
    """The `scaleUp` JSON of a drill: every pending pod -> the templates where a new
    node would take it ([] when none would, or no profile schedules it)."""
    found = diagnosis.to_json() if diagnosis is not None else {}
    return {p: found.get(p, []) for p in pending}


def scale_up_text(pending: list[str], diagnosis: Diagnosis | None, paint: Paint) -> list[str]:
    """The text of a drill's scale-up diagnosis: the nodes in no group, and the summary
    line (each pod's own line is printed under it by render_text)."""
    if diagnosis is None or not pending:
        return []
    out = []
    ungrouped = diagnosis.groups.ungrouped_line()
    if ungrouped:
        out.append(f"  {ungrouped}")
    out.append(f"  {paint(diagnosis.summary(), 'bold')}")
    return out


Paint = Callable[[str, str], str]


def _plain(text: str, _style: str) -> str:
    return text


def _bars(c: ConstraintSpread, paint: Paint) -> list[str]:
    if not c.domains:
        return ["      (no eligible domain)"]
    width = max(len(d) for d in c.domains)
    top = max(c.domains.values()) or 1
    low = min(c.domains.values())
    lines = []
    for domain, count in c.domains.items():
        bar = "█" * max(round(count * BAR_WIDTH / top), 1 if count else 0)
        style = "red" if c.violated and count == top else "dim" if count == low else ""
        drawn = paint(bar, style) if style and bar else bar
        lines.append(f"      {domain:<{width}}  {drawn} {count}")
    return lines


def _constraint_line(c: ConstraintSpread, paint: Paint) -> str:
    verdict = (
        paint(f"skew {c.skew} > maxSkew {c.max_skew}", "red")
        if c.violated
        else f"skew {c.skew} <= maxSkew {c.max_skew}"
    )
    extra = f"  minDomains {c.min_domains}" if c.min_domains is not None else ""
    return f"  [{c.index}] {c.topology_key}  {c.when_unsatisfiable}  {verdict}{extra}"


def _move_line(pod: str, from_node: str, to_node: str) -> str:
    ns, _, name = pod.partition("/")
    return f"  kubectl delete pod -n {ns} {name}   # {from_node} -> {to_node}"


def render_text(report: AuditReport, paint: Paint = _plain) -> str:
    """The report for a terminal or a CI log (paint: colour, or none)."""
    out: list[str] = []
    if report.drill is not None:
        drill = report.drill
        out.append(
            f"without {len(drill.removed)} node(s): {', '.join(drill.removed) or '(none matched)'}"
        )
        out.append(f"  re-placed {len(drill.placed)} pod(s), {len(drill.pending)} pending")
        verdicts = drill.scale_up.verdicts if drill.scale_up is not None else {}
        for pod in drill.pending:
            why = "; ".join(f"{n} {r}" for r, n in drill.reasons.get(pod, {}).items())
            out.append(f"  {paint('pending', 'yellow')} {pod}: {why or 'no node'}")
            if pod in verdicts:
                out.append(f"    {verdicts[pod].line()}")
        for pod, why_not in drill.not_scheduled.items():
            out.append(f"  {pod}: {why_not}")
        out.extend(scale_up_text(drill.pending, drill.scale_up, paint))
        out.append("")
    moves_by_workload: dict[str, list[str]] = {}
    if report.plan is not None:
        for m in report.plan.moves:
            moves_by_workload.setdefault(m.workload, []).append(
                _move_line(m.pod, m.from_node, m.to_node)
            )
    for w in report.spreads:
        if not w.violated:
            continue
        out.append(paint(f"{w.workload}", "bold") + f"  ({w.pods} running pods)")
        for c in w.violated:
            out.append(_constraint_line(c, paint))
            out.extend(_bars(c, paint))
        reason = report.plan.reasons.get(str(w.workload)) if report.plan is not None else None
        if reason:
            out.append(f"  no plan: {reason}")
        out.extend(moves_by_workload.pop(str(w.workload), []))
        out.append("")
    leftover = [line for lines in moves_by_workload.values() for line in lines]
    if leftover:
        out.append("other moves of the plan:")
        out.extend(leftover)
        out.append("")
    summary = (
        f"{len(report.spreads)} workloads, {report.checked} constraints checked, "
        f"{report.violations} violated"
    )
    if report.plan is not None:
        summary += f", {len(report.plan.moves)} moves"
        if not report.plan.complete:
            summary += " (plan incomplete)"
    if report.drill is not None:
        summary += f", {len(report.drill.pending)} pending"
    colour = "red" if report.violations else "green"
    out.append(paint(summary, colour))
    return "\n".join(out) + "\n"
