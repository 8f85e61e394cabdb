"""The audit's answer as text, for a terminal or a CI log (paint: colour, or none).

    render_text(report, paint)

With a drill, first what it did (nodes, evictions, pods down), then per affected
workload each domain's count before -> after as bars, the pending pods grouped by
reason, the pods not coming back, budgets that blocked a drain, and after an outage
which workloads nodeTaintsPolicy: Honor would let recover. Then one block per
violated workload (each domain's count as a bar, the skew against maxSkew, the plan's
evictions), then one summary line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.audit.drills.outcome import DRAIN, UNREACHABLE, WITHOUT, WORKLOAD, WhatIf
from webhook.audit.measure.spread import ConstraintSpread, entry_key
from webhook.audit.report.document import AuditReport, not_recreated_reason, scale_up_lines
from webhook.render.wording import HONOR_HEADING, honor_verdict
from webhook.scheduler.scaleup import Diagnosis

__all__ = ["BAR_WIDTH", "Paint", "render_text", "scale_up_text"]

BAR_WIDTH = 30


# Each domain's bar in the before -> after view of a drill.
DRILL_BAR_WIDTH = 15
# Pending pods named per group of reasons; the rest are counted.
NAMED_PENDING = 5


Paint = Callable[[str, str], str]
# The colour a terminal gives each tone of a verdict (render.wording.Verdict).
_TONE_COLOURS = {"good": "green", "bad": "red"}


def scale_up_text(pending: list[str], diagnosis: Diagnosis | None, paint: Paint) -> list[str]:
    """The text of a drill's scale-up diagnosis: the nodes in no group, and the summary
    line (each pod's own line is printed under it by render_text)."""
    if diagnosis is None or not pending:
        return []
    *notes, summary = scale_up_lines(diagnosis)
    return [*(f"  {n}" for n in notes), f"  {paint(summary, 'bold')}"]


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
    return f"  evict {pod}   # {from_node} -> {to_node}"


# Said once above a plan's moves: how to carry them out without bypassing budgets.
EVICTION_NOTE = (
    "moves are evictions through the Eviction API (as kubectl drain makes them, so "
    "PodDisruptionBudgets apply), in this order, each once the previous pod's "
    "replacement runs; kubectl delete pod would bypass the budgets"
)


def _bar(count: int, top: int) -> str:
    return "█" * max(round(count * DRILL_BAR_WIDTH / top), 1 if count else 0) if top else ""


def _drill_entry(c: ConstraintSpread, after: dict[str, int] | None, paint: Paint) -> list[str]:
    """One entry's domains before -> after; a domain no longer eligible shows '-'."""
    now = after if after is not None else {}
    domains = sorted(set(c.domains) | set(now))
    if not domains:
        return ["      (no eligible domain)"]
    width = max(len(d) for d in domains)
    top = max([*c.domains.values(), *now.values(), 1])
    lines = [
        f"  [{c.index}] {c.topology_key}  {c.when_unsatisfiable}  maxSkew {c.max_skew}"
        + (f"  minDomains {c.min_domains}" if c.min_domains is not None else "")
    ]
    for d in domains:
        was = c.domains.get(d)
        is_ = now.get(d)
        left = f"{_bar(was or 0, top):<{DRILL_BAR_WIDTH}} {'-' if was is None else was:>3}"
        right = f"{'-' if is_ is None else is_:>3} {_bar(is_ or 0, top)}"
        line = f"      {d:<{width}}  {left} -> {right}".rstrip()
        lines.append(paint(line, "yellow") if was != is_ else line)
    return lines


def _pending_groups(drill: WhatIf) -> list[tuple[str, list[str]]]:
    """Pending pods grouped by their reasons (the groups in the order first met)."""
    groups: dict[str, list[str]] = {}
    for pod in drill.pending:
        reasons = drill.reasons.get(pod, {})
        why = "; ".join(f"{n} {r}" for r, n in sorted(reasons.items())) or "no node"
        groups.setdefault(why, []).append(pod)
    return list(groups.items())


def _named(pods: list[str]) -> str:
    shown = ", ".join(pods[:NAMED_PENDING])
    return shown + (f" and {len(pods) - NAMED_PENDING} more" if len(pods) > NAMED_PENDING else "")


def _drill_head(drill: WhatIf) -> list[str]:
    nodes = ", ".join(drill.removed) or "(none matched)"
    if drill.kind == WITHOUT:
        return [
            f"without {len(drill.removed)} node(s): {nodes}",
            f"  re-placed {len(drill.placed)} pod(s), {len(drill.pending)} pending",
        ]
    if drill.kind == UNREACHABLE:
        return [
            f"unreachable {len(drill.removed)} node(s): {nodes}",
            "  (Ready Unknown, tainted node.kubernetes.io/unreachable NoSchedule and "
            "NoExecute; evicted pods stay Terminating)",
            f"  evicted {len(drill.disrupted)} pod(s); recreated and placed "
            f"{len(drill.placed)}, pending {len(drill.pending)}, not recreated "
            f"{len(drill.not_recreated)}",
        ]
    drained = ", ".join(drill.drained) or "none"
    return [
        f"drain {len(drill.removed)} node(s): {nodes}",
        "  (cordoned, then evicted through the Eviction API in namespace/name order; "
        "DaemonSet and mirror pods left alone)",
        f"  evicted {len(drill.disrupted)} pod(s); replacements placed {len(drill.placed)}, "
        f"pending {len(drill.pending)}; blocked {len(drill.blocked)}; drained: {drained}",
    ]


def _pod_list(entries: list[Any]) -> str:
    shown = [f"{e['pod']} ({e['node'] or 'pending'})" for e in entries[:NAMED_PENDING]]
    more = len(entries) - NAMED_PENDING
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _workload_text(report: AuditReport, drill: WhatIf, paint: Paint) -> list[str]:
    """A workload drill: per changed workload what went and came, its constraints'
    domains before -> after, and whether its spread still holds."""
    out: list[str] = []
    after: dict[str, list[ConstraintSpread]] = {
        str(w.workload): w.constraints for w in report.spreads
    }
    before = {str(w.workload): w for w in report.before or ()}
    verb = "rollout" if drill.steps is not None else "scale"
    for change in drill.workload_changes:
        name = change["workload"]
        if out:
            out.append("")
        out.append(paint(f"{verb} {name}: {change['from']} -> {change['to']}", "bold"))
        if change["deleted"]:
            out.append(f"  deleted {len(change['deleted'])}: {_pod_list(change['deleted'])}")
        if change["created"]:
            out.append(f"  created {len(change['created'])}: {_pod_list(change['created'])}")
        now = {entry_key(name, c): dict(c.domains) for c in after.get(name, [])}
        was = before.get(name)
        for c in was.constraints if was is not None else after.get(name, []):
            out.extend(_drill_entry(c, now.get(entry_key(name, c)), paint))
        broken = [c for c in after.get(name, []) if c.violated]
        if broken:
            worst = ", ".join(f"[{c.index}] skew {c.skew} > maxSkew {c.max_skew}" for c in broken)
            out.append(f"  {paint('the spread no longer holds', 'red')}: {worst}")
        elif after.get(name):
            out.append(f"  {paint('the spread still holds', 'green')}")
        else:
            out.append("  no constraint of this workload is checked")
        costs = (report.deletion_costs or {}).get(name)
        if costs is not None:
            worst_skew = max((e["skew"] for e in costs), default=0)
            held = not any(e["violated"] for e in costs)
            out.append(
                f"  with deletion costs: {'holds' if held else 'violated'} "
                f"(largest skew {worst_skew})"
            )
        revisions = (report.separate_revisions or {}).get(name)
        if revisions is not None:
            entries = revisions["constraints"]
            held = not any(e["violated"] for e in entries)
            out.append(
                f"  with pod-template-hash in matchLabelKeys: {'holds' if held else 'violated'}"
                + (", stalls" if revisions["stalled"] else "")
            )
    if drill.steps is not None:
        out.append(f"  {len(drill.steps)} step(s)")
        if drill.stalled is not None:
            out.append(f"  {paint('stalled', 'red')}: {drill.stalled['reason']}")
    return out


def _drill_text(report: AuditReport, drill: WhatIf, paint: Paint) -> list[str]:
    if drill.kind == WORKLOAD:
        out = _workload_text(report, drill, paint)
    else:
        out = _drill_head(drill)
        out.append("")
    after: dict[str, dict[str, int]] = {}
    for w in report.spreads:
        for c in w.constraints:
            after.setdefault(entry_key(str(w.workload), c), dict(c.domains))
    down: dict[str, int] = {}
    for workload in drill.displaced.values():
        down[str(workload)] = down.get(str(workload), 0) + 1
    for w in report.before or ():
        name = str(w.workload)
        if drill.kind == WORKLOAD or name not in down or not w.constraints:
            continue
        out.append(paint(name, "bold") + f"  ({down[name]} pod(s) down)")
        for c in w.constraints:
            out.extend(_drill_entry(c, after.get(entry_key(name, c)), paint))
        out.append("")
    verdicts = drill.scale_up.verdicts if drill.scale_up is not None else {}
    for why, pods in _pending_groups(drill):
        out.append(f"  {paint(f'{len(pods)} pending', 'yellow')}: {why}")
        out.append(f"    {_named(pods)}")
        # Pods pending for the same reasons are mostly one workload's twins: one
        # diagnosis line per distinct answer.
        lines = dict.fromkeys(verdicts[p].line() for p in pods if p in verdicts)
        out.extend(f"    {line}" for line in lines)
    for pod, why_not in drill.not_scheduled.items():
        out.append(f"  {pod}: {why_not}")
    if drill.preempted:
        out.append(f"  {len(drill.preempted)} preempted by higher-priority replacements:")
        out.append(f"    {_named(drill.preempted)}")
    if drill.not_recreated:
        what = not_recreated_reason(drill.kind)
        out.append(f"  {len(drill.not_recreated)} not recreated ({what}):")
        out.append(f"    {_named(drill.not_recreated)}")
    for pod, budget in drill.blocked.items():
        out.append(
            f"  {paint('blocked', 'red')} {pod}: eviction refused by PodDisruptionBudget {budget}"
        )
    if report.honor:
        out.append(f"  {HONOR_HEADING}:")
        for name, h in report.honor.items():
            v = honor_verdict(h.pending, h.placed, h.changed)
            colour = _TONE_COLOURS.get(v.tone)
            said = (paint(v.head, colour) if colour else v.head) + v.rest
            out.append(f"    {name}: {said}, {h.placed} of {h.pending} pending placed")
    out.extend(scale_up_text(drill.pending, drill.scale_up, paint))
    out.append("")
    return out


def render_text(report: AuditReport, paint: Paint = _plain) -> str:
    """The report for a terminal or a CI log (paint: colour, or none)."""
    out: list[str] = []
    if report.drill is not None:
        out.extend(_drill_text(report, report.drill, paint))
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
    if report.plan is not None and report.plan.moves:
        out.append(EVICTION_NOTE)
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
        if report.drill.kind == DRAIN:
            summary += f", {len(report.drill.blocked)} blocked"
    colour = "red" if report.violations else "green"
    out.append(paint(summary, colour))
    return "\n".join(out) + "\n"
