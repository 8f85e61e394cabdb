"""The drill part of the audit page: a node drill's nodes, pending pods (with why and
whether a new node would help), blocked evictions, pods down for good and the
nodeTaintsPolicy: Honor comparison; the workload drills' (--scale, --rollout) changes,
verdicts and steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.render.cards import constraint_block
from webhook.render.kit import (
    NAMES_SHOWN,
    ROWS,
    ROWS_SHOWN,
    counts_of,
    dict_of,
    esc,
    int_of,
    list_of,
    name_list,
    plural,
    scale_up_text,
)
from webhook.render.wording import HONOR_HEADING, honor_verdict

__all__ = ["drill_section", "drill_verdict", "is_drill", "workload_changes"]


def _reasons_key(reasons: Any) -> str:
    """A pending pod's reasons as the text groups them: `N reason` by reason, `; `-joined."""
    counts = counts_of(reasons)
    return "; ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "no node"


def pending_section(doc: Mapping[str, Any]) -> str:
    """The pending pods grouped by their reasons, as the text groups them; under each
    group its pods (each with where a new node would take it) and the distinct
    scale-up sentences of its pods (`scaleUpReasons`); then the scale-up summary."""
    pending = [str(p) for p in list_of(doc.get("pending"))]
    reasons = dict_of(doc.get("pendingReasons"))
    scale_up = dict_of(doc.get("scaleUp"))
    why = dict_of(doc.get("scaleUpReasons"))
    groups: dict[str, list[str]] = {}
    for pod in pending:
        groups.setdefault(_reasons_key(reasons.get(pod)), []).append(pod)
    out = [f"<h2>{plural(len(pending), 'pending pod')}</h2>"]
    for key, pods in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        rows = "".join(
            f"<li><code>{esc(p)}</code> {scale_up_text(scale_up.get(p))}</li>"
            for p in pods[:NAMES_SHOWN]
        )
        if len(pods) > NAMES_SHOWN:
            rows += f'<li class="mute">and {len(pods) - NAMES_SHOWN:,} more</li>'
        helped = sum(1 for p in pods if list_of(scale_up.get(p)))
        diagnosis = ""
        if any(p in scale_up for p in pods):
            diagnosis = f"; {helped:,} of {len(pods):,} would fit on a new node"
        inner = f'<ul class="list">{rows}</ul>'
        if len(pods) > ROWS_SHOWN:
            inner = f"<details><summary>the pods</summary>{inner}</details>"
        # Twins pending for the same reasons mostly share one sentence: each said once.
        lines = dict.fromkeys(str(why[p]) for p in pods if p in why)
        said = "".join(f'<p class="scale-up-reason">{esc(line)}</p>' for line in lines)
        out.append(
            f'<section class="reason" data-pods="{len(pods)}"><h3>{esc(key)}</h3>'
            f'<p class="mute">{plural(len(pods), "pod")}{diagnosis}</p>{inner}{said}</section>'
        )
    out.extend(
        f'<p class="scale-up-summary">{esc(line)}</p>'
        for line in list_of(doc.get("scaleUpSummary"))
    )
    return "".join(out)


def honor_section(doc: Mapping[str, Any]) -> str:
    """After an outage, whether nodeTaintsPolicy: Honor would place each workload's
    pending pods (`withHonor`), in the text's words."""
    honor = dict_of(doc.get("withHonor"))
    if not honor:
        return ""
    rows = []
    for workload, raw in honor.items():
        h = dict_of(raw)
        pending, placed = int_of(h.get("pending")), int_of(h.get("placedWithHonor"))
        v = honor_verdict(pending, placed, h.get("changed", True) is not False)
        rows.append(
            f'<li data-workload="{esc(workload)}"><code>{esc(workload)}</code>: '
            f'<span class="{v.tone}">{esc(v.words)}</span>, '
            f"{placed:,} of {pending:,} pending placed</li>"
        )
    return (
        f"<h3>{esc(HONOR_HEADING[:1].upper() + HONOR_HEADING[1:])}</h3>"
        f'<ul class="list honor">{"".join(rows)}</ul>'
    )


def drill_section(doc: Mapping[str, Any]) -> str:
    out = ["<h2>Drill</h2>"]
    for key, what in (
        ("removedNodes", "removed node"),
        ("unreachableNodes", "unreachable node"),
        ("drainedNodes", "drained node"),
    ):
        if key in doc:
            nodes = list_of(doc.get(key))
            out.append(f'<p class="drill-nodes" data-key="{key}">{plural(len(nodes), what)}</p>')
            out.append(name_list(nodes, what))
    blocked = dict_of(doc.get("blocked"))
    if blocked:
        rows = "".join(
            f"<tr><td><code>{esc(p)}</code></td><td><code>{esc(b)}</code></td></tr>"
            for p, b in list(blocked.items())[:NAMES_SHOWN]
        )
        out.append(
            f"<h3>{plural(len(blocked), 'eviction')} blocked by a PodDisruptionBudget</h3>"
            f'<div class="table"><table><thead><tr><th>pod</th><th>budget</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )
    if "pending" in doc:
        out.append(pending_section(doc))
    not_scheduled = dict_of(doc.get("notScheduled"))
    if not_scheduled:
        rows = "".join(
            f"<li><code>{esc(p)}</code>: {esc(why)}</li>"
            for p, why in list(not_scheduled.items())[:NAMES_SHOWN]
        )
        out.append(
            f"<h3>{plural(len(not_scheduled), 'pod')} this scheduler does not place</h3>"
            f'<ul class="list not-scheduled">{rows}</ul>'
        )
    preempted = list_of(doc.get("preempted"))
    if preempted:
        head = f"{plural(len(preempted), 'pod')} preempted by higher-priority replacements"
        out.append(
            f'<section class="preempted" data-pods="{len(preempted)}"><h3>{head}</h3>'
            f'{name_list(preempted, "pod")}</section>'
        )
    if "notRecreated" in doc:
        down = list_of(doc.get("notRecreated"))
        why = doc.get("notRecreatedReason") if down else None
        out.append(
            f'<section class="not-recreated" data-pods="{len(down)}">'
            f"<h2>{plural(len(down), 'pod')} down and not coming back</h2>"
            + (f'<p class="not-recreated-reason">{esc(why)}</p>' if why else "")
            + f'{name_list(down, "pod")}</section>'
        )
    out.append(honor_section(doc))
    return "".join(out)


def is_drill(doc: Mapping[str, Any]) -> bool:
    keys = ("pending", "removedNodes", "unreachableNodes", "drainedNodes", "notRecreated")
    return any(k in doc for k in keys)


def drill_verdict(doc: Mapping[str, Any], bad: int, moved: int) -> str:
    """A node drill's answer in one line, above the cards that draw it."""
    pending = len(list_of(doc.get("pending")))
    down = len(list_of(doc.get("notRecreated")))
    parts = [
        f'<span class="{"bad" if bad else "good"}">{plural(bad, "workload")} violating</span>',
        f"{plural(moved, 'workload')} changed within maxSkew",
        f'<span class="{"warn" if pending else "good"}">{plural(pending, "pod")} pending</span>',
    ]
    if "notRecreated" in doc:
        parts.append(f"{plural(down, 'pod')} down for good")
    return f'<p class="drill-verdict">after the drill: {" · ".join(parts)}</p>'


def _verdict(entries: Any) -> str:
    held = not any(dict_of(e).get("violated") is True for e in list_of(entries))
    skew = max((int_of(dict_of(e).get("skew")) for e in list_of(entries)), default=0)
    word = '<span class="good">holds</span>' if held else '<span class="bad">violated</span>'
    return f"{word} (largest skew {skew})"


def _folded(rows: Sequence[str], what: str) -> str:
    """A list of pods behind its count (`what`: "deleted", "created")."""
    head = f"{plural(len(rows), 'pod')} {what}"
    return name_list(rows, "pod", open_up_to=0, summary=head, cls=f"pods {what}")


def workload_changes(doc: Mapping[str, Any]) -> str:
    """The workload drills (--scale, --rollout), the answer first: per changed workload
    its constraints' domains before -> after with their verdicts, a rollout's stall,
    the comparisons; then, folded, the pods deleted and created and a rollout's
    steps."""
    rollout = "steps" in doc
    out = [f"<h2>{'Rollout' if rollout else 'Scale'}</h2>"]
    costs = dict_of(doc.get("withDeletionCosts"))
    revisions = dict_of(doc.get("withSeparateRevisions"))
    by_name = {
        f"{w.get('kind', '')} {w.get('namespace', '')}/{w.get('name', '')}": w
        for w in (dict_of(x) for x in list_of(doc.get("workloads")))
    }
    stalled = doc.get("stalled")
    for raw in list_of(doc.get("workloadChanges")):
        change = dict_of(raw)
        name = str(change.get("workload", ""))
        out.append(
            f'<section class="workload-change"><h3><code>{esc(name)}</code>: '
            f"{int_of(change.get('from'))} → {int_of(change.get('to'))}</h3>"
        )
        w = by_name.get(name)
        entries = [dict_of(c) for c in list_of(w.get("constraints"))] if w is not None else []
        if entries and w is not None:
            bars = "".join(constraint_block(w, c, i) for i, c in enumerate(entries))
            out.append(f'<div class="answer">{bars}</div>')
        elif w is None:
            out.append('<p class="mute">no running pod of this workload is left</p>')
        else:
            out.append('<p class="mute">no constraint of this workload is checked</p>')
        if rollout and isinstance(stalled, dict):
            out.append(f'<p class="bad">stalled: {esc(stalled.get("reason", ""))}</p>')
        if name in costs:
            out.append(f"<p>with deletion costs: {_verdict(costs[name])}</p>")
        if name in revisions:
            entry = dict_of(revisions[name])
            stalls = ", stalls" if entry.get("stalled") is True else ""
            out.append(
                "<p>with <code>pod-template-hash</code> in matchLabelKeys: "
                f"{_verdict(entry.get('constraints'))}{stalls}</p>"
            )
        for key in ("deleted", "created"):
            rows = [
                f"{dict_of(e).get('pod', '')} ({dict_of(e).get('node') or 'pending'})"
                for e in list_of(change.get(key))
            ]
            out.append(_folded(rows, key))
        out.append("</section>")
    if rollout:
        steps = list_of(doc.get("steps"))
        table = "".join(
            "<tr>"
            + "".join(
                f"<td>{v}</td>"
                for v in (
                    i + 1,
                    int_of(dict_of(st).get("newReplicas")),
                    int_of(dict_of(st).get("oldReplicas")),
                    len(list_of(dict_of(st).get("created"))),
                    len(list_of(dict_of(st).get("deleted"))),
                    len(list_of(dict_of(st).get("pending"))),
                )
            )
            + "</tr>"
            for i, st in enumerate(steps[:ROWS])
        )
        out.append(
            f'<details class="steps"><summary>{plural(len(steps), "step")}</summary>'
            '<div class="table"><table><thead><tr><th>step</th><th>new</th><th>old</th>'
            "<th>created</th><th>deleted</th><th>pending</th></tr></thead>"
            f"<tbody>{table}</tbody></table></div></details>"
        )
    return "".join(out)
