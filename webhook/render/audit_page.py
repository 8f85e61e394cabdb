"""The audit page: every workload's spread per domain as cards (violating first), the
plan's evictions, a drill's outcome (render/drill_page.py), the ranges over sampled
runs and the deletion costs, from an `audit -o json` document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.render.cards import before_of, workload_card
from webhook.render.drill_page import drill_section, drill_verdict, is_drill, workload_changes
from webhook.render.kit import (
    NAMES_SHOWN,
    OPEN_CARDS,
    ROWS,
    counts_of,
    dict_of,
    esc,
    html_page,
    int_of,
    list_of,
    name_list,
    plural,
    range_rows,
    runs_head,
    stat_cells,
)

__all__ = ["audit_page"]


def _eviction(m: Mapping[str, Any]) -> str:
    return (
        f'<li class="eviction">evict <code>{esc(m.get("pod", ""))}</code> '
        f'<span class="mute">{esc(m.get("from", ""))} → {esc(m.get("to", ""))}</span></li>'
    )


def _plan(doc: Mapping[str, Any]) -> str:
    moves = [dict_of(m) for m in list_of(doc.get("plan"))]
    complete = doc.get("planComplete") is not False
    head = (
        f"<h2>Plan: {plural(len(moves), 'eviction')}"
        + ("" if complete else ' <span class="warn">(incomplete)</span>')
        + "</h2>"
    )
    reasons = dict_of(doc.get("planReasons"))
    why = "".join(
        f"<li><code>{esc(w)}</code>: {esc(r)}</li>" for w, r in list(reasons.items())[:NAMES_SHOWN]
    )
    items = "".join(_eviction(m) for m in moves)
    body = f'<ol class="plan">{items}</ol>' if moves else '<p class="mute">nothing to move</p>'
    if len(moves) > ROWS:
        body = f"<details><summary>{plural(len(moves), 'eviction')}</summary>{body}</details>"
    return head + (f'<ul class="list">{why}</ul>' if why else "") + body


def audit_runs(doc: Mapping[str, Any]) -> str:
    runs = dict_of(doc.get("runs"))
    out = ['<section class="runs">', runs_head(runs, "pending pods")]
    for w in list_of(doc.get("workloads")):
        w = dict_of(w)
        for c in list_of(w.get("constraints")):
            ranges = dict_of(dict_of(c).get("runs"))
            domains = dict_of(next(iter(dict_of(ranges.get("domains")).values()), {}))
            violated = int_of(ranges.get("violated"))
            varies = any(dict_of(r).get("min") != dict_of(r).get("max") for r in domains.values())
            if not violated and not varies:
                continue
            name = f"{w.get('kind', '')} {w.get('namespace', '')}/{w.get('name', '')}"
            out.append(
                f"<p><b>{esc(name)}</b> <code>{esc(dict_of(c).get('topologyKey', ''))}</code>: "
                f"violated in {violated:,} of {esc(runs.get('count'))} runs</p>"
                f"{range_rows(domains)}"
            )
    out.append("</section>")
    return "".join(out)


def audit_page(doc: Mapping[str, Any], *, generated: str | None = None) -> str:
    """The HTML page of an `audit -o json` document (`generated`: when it was audited)."""
    workloads = [dict_of(w) for w in list_of(doc.get("workloads"))]
    constraints = sum(len(list_of(w.get("constraints"))) for w in workloads)
    violations = int_of(doc.get("violations"))

    def s(count: int) -> str:
        return "" if count == 1 else "s"

    moves = len(list_of(doc.get("plan")))
    stats: list[tuple[int | str, str, str]] = [
        (len(workloads), f" workload{s(len(workloads))}", ""),
        (constraints, f" constraint{s(constraints)} checked", ""),
        (violations, " violated", "bad" if violations else "good"),
    ]
    if "plan" in doc:
        stats.append((moves, f" eviction{s(moves)} planned", ""))
    if "pending" in doc:
        stats.append((len(list_of(doc.get("pending"))), " pending", "warn"))
    body = [
        "<header><h1>topospread audit</h1>",
        f'<p class="mute">audited {esc(generated)}</p>' if generated else "",
        stat_cells(stats),
        "</header>",
    ]
    if doc.get("error"):
        body.append(f'<p class="bad">{esc(doc["error"])}</p>')
    if "workloadChanges" in doc:
        # The answer first: what the drill changed, its bars and verdicts.
        body.append(workload_changes(doc))
    # A drill's lists (nodes, pending pods, pods down) come after the workloads it left
    # violating or changed: the verdicts and their bars lead.
    details = drill_section(doc) if is_drill(doc) else ""
    if isinstance(doc.get("runs"), dict):
        body.append(audit_runs(doc))
    if "plan" in doc:
        body.append(_plan(doc))
    reasons = dict_of(doc.get("planReasons"))

    def violated(w: Mapping[str, Any]) -> bool:
        return any(dict_of(c).get("violated") is True for c in list_of(w.get("constraints")))

    def changed(w: Mapping[str, Any]) -> bool:
        """Whether a drill changed the workload's domains."""
        constraints = [dict_of(c) for c in list_of(w.get("constraints"))]
        return any(
            (before := before_of(w, c, i)) is not None and before != counts_of(c.get("domains"))
            for i, c in enumerate(constraints)
        )

    bad = [w for w in workloads if violated(w)]
    moved = [w for w in workloads if not violated(w) and changed(w)]
    fine = [w for w in workloads if not violated(w) and not changed(w)]

    def card(w: Mapping[str, Any]) -> str:
        ref = f"{w.get('kind', '')} {w.get('namespace', '')}/{w.get('name', '')}"
        return workload_card(w, reasons.get(ref))

    if details and "workloadChanges" not in doc:
        body.append(drill_verdict(doc, len(bad), len(moved)))
    body.append(f"<h2>{plural(len(bad), 'workload')} violating a constraint</h2>")
    body.append(f'<div class="cards">{"".join(card(w) for w in bad)}</div>')
    if moved:
        head = f"{plural(len(moved), 'workload')} changed by the drill, within maxSkew"
        body.append(f"<h2>{head}</h2>")
        body.append(f'<div class="cards">{"".join(card(w) for w in moved)}</div>')
    body.append(details)
    if fine:
        cards = f'<div class="cards">{"".join(card(w) for w in fine)}</div>'
        head = f"{plural(len(fine), 'workload')} within maxSkew"
        if moved:
            head += ", unchanged"
        if len(workloads) > OPEN_CARDS:
            body.append(f"<details><summary><h2>{head}</h2></summary>{cards}</details>")
        else:
            body.append(f"<h2>{head}</h2>{cards}")
    if "deletionCosts" in doc:
        body.append(_deletion_costs(doc))
    return html_page("topospread audit", body)


def _deletion_costs(doc: Mapping[str, Any]) -> str:
    """`audit --deletion-costs`: the pods, lowest cost (first deleted) first."""
    costs = {str(k): int_of(v) for k, v in dict_of(doc.get("deletionCosts")).items()}
    ordered = sorted(costs, key=lambda key: (costs[key], key))
    rows = [f"{k} {costs[k]}" for k in ordered]
    return f"<h2>Deletion costs</h2>{name_list(rows, 'pod', open_up_to=0)}"
