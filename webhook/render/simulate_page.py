"""The simulate page: where a pod (or each of several replicas) would go, every node's
verdict (the best-scored feasible nodes, the failure reasons), ties, preemption, the
scale-up question and the ranges over sampled runs, from a `simulate -o json` document.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.render.kit import (
    NAMES_SHOWN,
    ROWS,
    ROWS_SHOWN,
    counts_of,
    dict_of,
    domain_rows,
    esc,
    html_page,
    int_of,
    list_of,
    name_list,
    plural,
    range_rows,
    runs_head,
    scale_up_text,
    stat_cells,
)

__all__ = ["simulate_page"]


def _deciding(feasible: Sequence[Mapping[str, Any]]) -> list[str]:
    """Score plugins whose scores differ between feasible nodes (as cli/simulate.py)."""
    seen: dict[str, set[Any]] = {}
    for n in feasible:
        for plugin, score in dict_of(n.get("scores")).items():
            seen.setdefault(plugin, set()).add(score)
    return [p for p, values in seen.items() if len(values) > 1]


def _why_not(n: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for plugin, status in dict_of(n.get("filters")).items():
        s = dict_of(status)
        if s.get("code") not in (None, "Success"):
            out.append((str(plugin), str(s.get("reason") or s.get("code"))))
    return out


def _node_table(nodes: Sequence[Mapping[str, Any]], selected: Any) -> str:
    feasible = [n for n in nodes if n.get("feasible") is True]
    deciding = _deciding(feasible)
    rows = list(nodes)
    out = []
    if len(nodes) > ROWS:
        rows = sorted(feasible, key=lambda n: (-int_of(n.get("score")), str(n.get("name"))))
        rows = rows[:ROWS_SHOWN]
        out.append(
            f'<p class="mute">{len(nodes):,} nodes: the {len(rows)} best of '
            f"{len(feasible):,} feasible are listed, the others by reason below</p>"
        )
    cells = []
    for n in rows:
        name = n.get("name", "")
        if n.get("feasible") is True:
            scores = dict_of(n.get("scores"))
            detail = ", ".join(f"{esc(p)}={esc(scores[p])}" for p in deciding if p in scores)
            verdict, score = '<span class="good">yes</span>', esc(int_of(n.get("score")))
        else:
            detail = "; ".join(f"{esc(p)}: {esc(r)}" for p, r in _why_not(n))
            verdict, score = '<span class="bad">no</span>', "–"
        cls = ' class="selected"' if name == selected else ""
        cells.append(
            f'<tr{cls} data-node="{esc(name)}"><td><code>{esc(name)}</code>'
            f"{' ★' if name == selected else ''}</td><td>{verdict}</td>"
            f'<td class="num">{score}</td><td>{detail}</td></tr>'
        )
    out.append(
        '<div class="table"><table class="nodes"><thead><tr><th>node</th><th>feasible</th>'
        "<th>score</th><th>decided by / why not</th></tr></thead>"
        f"<tbody>{''.join(cells)}</tbody></table></div>"
    )
    if len(nodes) > ROWS:
        by_reason: dict[str, list[str]] = {}
        for n in nodes:
            for plugin, reason in _why_not(n):
                by_reason.setdefault(f"{plugin}: {reason}", []).append(str(n.get("name", "")))
        for reason, names in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            out.append(
                f'<section class="reason" data-nodes="{len(names)}"><h3>{esc(reason)}</h3>'
                f"<details><summary>{plural(len(names), 'node')}</summary>"
                f"{name_list(names, 'node', open_up_to=NAMES_SHOWN)}</details></section>"
            )
    return "".join(out)


def _placements(placements: Sequence[Any]) -> str:
    placed = [p for p in placements if p is not None]
    head = f"<h3>Placements: {len(placed):,} of {len(placements):,} placed</h3>"
    if len(placements) <= ROWS:
        items = "".join(
            '<li class="bad">unschedulable</li>' if p is None else f"<li><code>{esc(p)}</code></li>"
            for p in placements
        )
        return head + f'<ol class="plan">{items}</ol>'
    per_node = Counter(str(p) for p in placed)
    rows = "".join(
        f'<tr><td><code>{esc(n)}</code></td><td class="num">{c:,}</td></tr>'
        for n, c in per_node.most_common(NAMES_SHOWN)
    )
    return head + (
        f"<details><summary>copies per node ({len(per_node):,} nodes)</summary>"
        f'<div class="table"><table><tbody>{rows}</tbody></table></div></details>'
    )


def _simulation(doc: Mapping[str, Any], title: str | None) -> str:
    nodes = [dict_of(n) for n in list_of(doc.get("nodes"))]
    feasible = sum(1 for n in nodes if n.get("feasible") is True)
    selected = doc.get("selectedNode")
    pod = str(doc.get("pod", ""))
    out = [f'<section class="simulation" data-pod="{esc(pod)}">']
    out.append(f"<h2>{esc(title or pod)}</h2>")
    stats: list[tuple[int | str, str, str]] = [
        (feasible, f" of {len(nodes):,} nodes feasible", "good" if feasible else "bad"),
        (str(selected) if selected else "none", " selected", ""),
    ]
    out.append(stat_cells(stats))
    if doc.get("error"):
        out.append(f'<p class="bad">{esc(doc["error"])}</p>')
    sampling = dict_of(doc.get("sampling"))
    if sampling:
        scored = list_of(sampling.get("scoredNodes"))
        out.append(
            f"<p>Sampled as kube-scheduler: {len(scored):,} of {len(nodes):,} nodes scored "
            f"(numFeasibleNodesToFind {esc(sampling.get('numFeasibleNodesToFind'))}, from "
            f"index {esc(sampling.get('startIndex'))} of the node tree's order)</p>"
        )
    tied = list_of(doc.get("tiedNodes"))
    if len(tied) > 1:
        how = "drawn at random from the seed" if sampling else "kube-scheduler picks one at random"
        out.append(
            f"<p>{len(tied):,} nodes tie at the best score ({how}):</p>{name_list(tied, 'node')}"
        )
    preemption = doc.get("preemption")
    if isinstance(preemption, dict):
        victims = list_of(preemption.get("victims"))
        out.append(
            f'<section class="preemption"><h3>Preempts {plural(len(victims), "pod")} on '
            f"<code>{esc(preemption.get('node', ''))}</code></h3>"
            f"{name_list(victims, 'victim')}</section>"
        )
    scale_up = doc.get("scaleUp")
    if isinstance(scale_up, dict) and scale_up:
        items = "".join(
            f"<li><code>{esc(p)}</code> {scale_up_text(o)}</li>"
            for p, o in list(scale_up.items())[:NAMES_SHOWN]
        )
        out.append(f'<h3>More nodes?</h3><ul class="list scale-up">{items}</ul>')
    elif isinstance(scale_up, list):
        out.append(f"<h3>More nodes?</h3><p>{scale_up_text(scale_up)}</p>")
    out.append(_node_table(nodes, selected))
    placements = list_of(doc.get("placements"))
    if len(placements) > 1:
        out.append(_placements(placements))
    distribution = dict_of(doc.get("distribution"))
    if distribution:
        out.append("<h3>Distribution of matching pods (after placement)</h3>")
        for key, domains in distribution.items():
            counts = counts_of(domains)
            skew = max(counts.values()) - min(counts.values()) if counts else 0
            out.append(
                f'<div class="constraint" data-key="{esc(key)}"><p><code>{esc(key)}</code> '
                f'<span class="mute">skew {skew:,}</span></p>{domain_rows(counts)}</div>'
            )
    if isinstance(doc.get("runs"), dict):
        out.append(simulation_runs(dict_of(doc["runs"])))
    out.append("</section>")
    return "".join(out)


def simulation_runs(runs: Mapping[str, Any]) -> str:
    out = ['<section class="runs">', runs_head(runs, "pending copies")]
    for key, domains in dict_of(runs.get("domains")).items():
        out.append(f"<p><code>{esc(key)}</code></p>{range_rows(dict_of(domains))}")
    chosen = counts_of(runs.get("selectedNodes"))
    if chosen:
        out.append("<p>The first copy went to:</p>")
        out.append(name_list([f"{node} \u00d7{n}" for node, n in chosen.items()], "node"))
    out.append("</section>")
    return "".join(out)


def simulate_page(doc: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """The HTML page of a `simulate -o json` document: one simulation, or the list of
    them (each with `workload` and `replicas`) that several workloads print."""
    sims = [dict_of(d) for d in doc] if isinstance(doc, list) else [dict_of(doc)]
    body = ["<header><h1>topospread simulate</h1></header>"]
    for sim in sims:
        title = None
        if "workload" in sim:
            title = f"{sim['workload']} ({plural(int_of(sim.get('replicas')), 'replica')})"
        body.append(_simulation(sim, title))
    return html_page("topospread simulate", body)
