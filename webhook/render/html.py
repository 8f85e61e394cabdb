"""The HTML report: one self-contained page rendered from the JSON documents.

    page = audit_page(report.to_json(), generated="2026-11-26 14:10 UTC")
    page = simulate_page(sim.to_json())          # or the list `simulate -o json` prints

The page is rendered from the very dicts `audit -o json` and `simulate -o json` print,
not from the objects behind them, so a key the JSON gains shows up here as soon as it
is present, and a document saved by CI renders the same way later. Keys read when
present: audit `workloads` (per constraint `domains`, and `before` from a drill),
`violations`, `plan`, `planComplete`, `planReasons`, `removedNodes`,
`unreachableNodes`, `drainedNodes`, `pending`, `pendingReasons`, `scaleUp`,
`scaleUpReasons`, `scaleUpSummary`, `notScheduled`, `preempted`, `notRecreated`,
`notRecreatedReason`, `blocked`, `withHonor`, `error`, `runs` (and each constraint's
`runs`); simulate `nodes`, `selectedNode`, `tiedNodes`, `placements`, `distribution`,
`preemption`, `scaleUp`, `error`, `sampling`, `runs`.

One file, inline CSS and SVG, no script and no external asset (a Content-Security-Policy
meta says so to the browser too), light and dark (prefers-color-scheme), printable,
readable at 320 px. Every string of the document is escaped where it is written.

Big clusters: as the text output does past TABLE_NODES nodes, past ROWS rows a list
becomes a summary: a constraint's domains show the fullest and emptiest ROWS_SHOWN and
a histogram of the counts; a node table shows the best-scored feasible nodes and the
failure reasons with up to NAMES_SHOWN node names each; long name lists collapse into
<details>. The page's size therefore grows with the number of workloads, not with the
number of nodes or domains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from webhook.render.wording import HONOR_HEADING, honor_verdict

__all__ = ["ROWS", "audit_page", "simulate_page", "utc_now"]

# Past this many rows (domains, nodes, placements), a summary: the text output's own
# threshold (cli/simulate.py TABLE_NODES).
ROWS = 50
# Rows a summary keeps at each end (fullest / emptiest domains, best nodes).
ROWS_SHOWN = 10
# Names listed in a collapsed list before "and N more" (keeps a 5,000-node page small).
NAMES_SHOWN = 50
# Workload cards shown open; the cards of workloads that violate nothing collapse past it.
OPEN_CARDS = 50

_CSS = """
:root{--bg:#fff;--fg:#1b1f24;--mute:#5b636e;--line:#d5dae0;--card:#f6f8fa;--bar:#3b6fd8;
--over:#c62828;--ok:#2e7d32;--before:#9aa4b1;--warn:#a35c00}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--fg:#e6e9ed;--mute:#9aa4b1;
--line:#2c333b;--card:#171b21;--bar:#6d9cf5;--over:#ff6b6b;--ok:#66bb6a;--before:#5b636e;
--warn:#f0a647}}
*{box-sizing:border-box}
body{margin:0;padding:1rem;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;overflow-wrap:anywhere}
h1{font-size:1.35rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
h3{font-size:1rem;margin:0 0 .35rem}
.mute{color:var(--mute)}.bad{color:var(--over)}.good{color:var(--ok)}.warn{color:var(--warn)}
code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
.stats{display:flex;flex-wrap:wrap;gap:.5rem;margin:.75rem 0;padding:0;list-style:none}
.stats li{background:var(--card);border:1px solid var(--line);border-radius:6px;
padding:.35rem .6rem}.stats b{font-size:1.1rem;margin-right:.25rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,22rem),1fr));gap:.75rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.75rem;
min-width:0;break-inside:avoid}
.card.violated{border-left:4px solid var(--over)}
.constraint{margin:.5rem 0 0}.constraint p{margin:.1rem 0}
ul.domains{list-style:none;margin:.35rem 0;padding:0}
ul.domains li{display:grid;grid-template-columns:minmax(0,9rem) minmax(3rem,1fr) auto;
gap:.4rem;align-items:center;font-size:13px}
ul.domains li.over .name,ul.domains li.over .count{color:var(--over);font-weight:600}
svg.bar{width:100%;height:12px;display:block}
svg.bar .now{fill:var(--bar)}li.over svg.bar .now{fill:var(--over)}
svg.bar .was{fill:var(--before)}svg.bar .limit{stroke:var(--fg);stroke-width:.6;
stroke-dasharray:1.5 1}
.table{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:.25rem .4rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.selected td{font-weight:600}
details{margin:.4rem 0}summary{cursor:pointer}
.workload-change .answer{max-width:40rem}.drill-verdict{font-weight:600}
ol.plan,ul.list{padding-left:1.25rem;margin:.35rem 0}
@media print{:root{--bg:#fff;--fg:#000;--mute:#444;--card:#fff;--line:#999}
body{padding:0}.card{border-color:#999}}
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'"


# ---- small pieces ----------------------------------------------------------------------


def _e(value: Any) -> str:
    """Any value of the document as escaped text."""
    return escape(value if isinstance(value, str) else str(value), quote=True)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _counts(value: Any) -> dict[str, int]:
    return {str(k): _int(v) for k, v in _dict(value).items()}


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _page(title: str, body: Iterable[str]) -> str:
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
            '<meta name="viewport" content="width=device-width,initial-scale=1">',
            '<meta name="color-scheme" content="light dark">',
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
            *body,
            "</body></html>\n",
        ]
    )


def _stats(items: Sequence[tuple[int | str, str, str]]) -> str:
    cells = "".join(
        f'<li class="{cls}"><b>{_e(f"{v:,}" if isinstance(v, int) else v)}</b>{_e(label)}</li>'
        for v, label, cls in items
    )
    return f'<ul class="stats">{cells}</ul>'


def _names(
    names: Sequence[Any],
    what: str,
    *,
    open_up_to: int = ROWS_SHOWN,
    summary: str | None = None,
    cls: str = "",
) -> str:
    """A list of names: inline when short, collapsed past `open_up_to` (behind
    `summary`, by default the count of `what`; `cls`: the details' classes), capped at
    NAMES_SHOWN with a count of the rest."""
    if not names:
        return ""
    shown = names[:NAMES_SHOWN]
    items = "".join(f"<li><code>{_e(n)}</code></li>" for n in shown)
    if len(names) > len(shown):
        items += f'<li class="mute">and {len(names) - len(shown):,} more</li>'
    inner = f'<ul class="list">{items}</ul>'
    if len(names) <= open_up_to:
        return inner
    head = summary if summary is not None else _n(len(names), what)
    attr = f' class="{_e(cls)}"' if cls else ""
    return f"<details{attr}><summary>{_e(head)}</summary>{inner}</details>"


def _bar(now: int, top: int, *, was: int | None = None, limit: int | None = None) -> str:
    """An inline SVG bar of `now` out of `top` (with `was` above it after a drill and a
    dashed line at `limit`, the most a domain may hold within maxSkew)."""
    scale = 100 / max(top, 1)
    parts = []
    if was is None:
        parts.append(f'<rect class="now" y="1" height="10" width="{now * scale:.1f}"/>')
    else:
        parts.append(f'<rect class="was" y="0" height="4" width="{was * scale:.1f}"/>')
        parts.append(f'<rect class="now" y="5" height="7" width="{now * scale:.1f}"/>')
    if limit is not None and 0 < limit < top:
        x = f"{limit * scale:.1f}"
        parts.append(f'<line class="limit" x1="{x}" x2="{x}" y1="0" y2="12"/>')
    return (
        '<svg class="bar" viewBox="0 0 100 12" preserveAspectRatio="none" aria-hidden="true">'
        + "".join(parts)
        + "</svg>"
    )


def _domain_rows(
    domains: Mapping[str, int],
    *,
    before: Mapping[str, int] | None = None,
    limit: int | None = None,
    violated: bool = False,
) -> str:
    """One row per domain (its bar, its count, before -> after after a drill); past ROWS
    domains the fullest and emptiest ROWS_SHOWN and a histogram of the counts."""
    if not domains and not before:
        return '<p class="mute">no eligible domain</p>'
    names = list(domains) + [d for d in (before or {}) if d not in domains]
    top = max([*domains.values(), *(before or {}).values(), 1])
    shown = names
    summary = ""
    if len(names) > ROWS:
        ranked = sorted(names, key=lambda d: (-domains.get(d, 0), d))
        shown = ranked[:ROWS_SHOWN] + ranked[-ROWS_SHOWN:]
        histogram = Counter(domains.get(d, 0) for d in names)
        cells = "".join(
            f'<tr><td class="num">{count:,}</td><td class="num">{n:,}</td></tr>'
            for count, n in sorted(histogram.items())
        )
        summary = (
            f'<p class="mute">{len(names):,} domains: the {ROWS_SHOWN} fullest and the '
            f"{ROWS_SHOWN} emptiest are drawn (every count is in -o json)</p>"
            f"<details><summary>domains by pod count</summary>"
            f'<div class="table"><table><thead><tr><th>pods</th><th>domains</th></tr></thead>'
            f"<tbody>{cells}</tbody></table></div></details>"
        )
    rows = []
    for d in shown:
        now = domains.get(d, 0)
        over = violated and limit is not None and now > limit
        was = None if before is None else before.get(d, 0)
        count = f"{now:,}" if was is None else f"{was:,} → {now:,}"
        rows.append(
            f'<li class="domain{" over" if over else ""}">'
            f'<span class="name"><code>{_e(d)}</code></span>'
            f"{_bar(now, top, was=was, limit=limit)}"
            f'<span class="count">{count}</span></li>'
        )
    return summary + f'<ul class="domains">{"".join(rows)}</ul>'


# ---- audit ------------------------------------------------------------------------------


def _limit(c: Mapping[str, Any], domains: Mapping[str, int]) -> int | None:
    """The most pods a domain may hold within maxSkew: the global minimum plus maxSkew
    (the minimum is 0 while fewer domains than minDomains are eligible)."""
    if not domains:
        return None
    low = min(domains.values())
    min_domains = c.get("minDomains")
    if isinstance(min_domains, int) and len(domains) < min_domains:
        low = 0
    return low + _int(c.get("maxSkew"))


def _before_of(w: Mapping[str, Any], c: Mapping[str, Any], i: int) -> dict[str, int] | None:
    """The domains before a drill: the constraint entry's `before`; or the workload
    entry's, either a list parallel to `constraints` or one mapping for all of them."""
    if "before" in c:
        return _counts(c["before"])
    before = w.get("before")
    if isinstance(before, list):
        return _counts(before[i]) if i < len(before) else None
    if isinstance(before, dict):
        return _counts(before)
    return None


def _selector(value: Any) -> str:
    """A labelSelector as kubectl's -l spells it."""
    if isinstance(value, str):
        return value
    sel = _dict(value)
    parts = [f"{k}={v}" for k, v in _dict(sel.get("matchLabels")).items()]
    for expr in _list(sel.get("matchExpressions")):
        e = _dict(expr)
        values = ",".join(str(v) for v in _list(e.get("values")))
        op = str(e.get("operator", ""))
        key = str(e.get("key", ""))
        if op in ("In", "NotIn"):
            parts.append(f"{key} {op.lower()} ({values})")
        else:
            parts.append(key if op == "Exists" else f"!{key}")
    return ", ".join(parts)


def _constraint(w: Mapping[str, Any], c: Mapping[str, Any], i: int) -> str:
    domains = _counts(c.get("domains"))
    violated = c.get("violated") is True
    skew, max_skew = _int(c.get("skew")), _int(c.get("maxSkew"))
    verdict = (
        f'<span class="bad">skew {skew:,} &gt; maxSkew {max_skew:,}</span>'
        if violated
        else f'<span class="good">skew {skew:,} ≤ maxSkew {max_skew:,}</span>'
    )
    limit = _limit(c, domains)
    extra = ""
    if limit is not None and violated:
        extra += f" · at most {limit:,} per domain (dashed)"
    if isinstance(c.get("minDomains"), int):
        extra += f" · minDomains {_int(c['minDomains'])}"
    if isinstance(c.get("pods"), int):
        extra += f" · {_n(c['pods'], 'pod')}"
    error = f'<p class="bad">{_e(c["error"])}</p>' if c.get("error") else ""
    selector = _selector(c.get("labelSelector"))
    if selector:
        error += f'<p class="mute selector">selector <code>{_e(selector)}</code></p>'
    return (
        f'<div class="constraint{" violated" if violated else ""}" '
        f'data-key="{_e(c.get("topologyKey", ""))}" data-skew="{skew}" data-max-skew="{max_skew}">'
        f"<p><code>{_e(c.get('topologyKey', ''))}</code> "
        f'<span class="mute">{_e(c.get("whenUnsatisfiable", ""))}</span></p>'
        f"<p>{verdict}{_e(extra)}</p>{error}"
        + _domain_rows(domains, before=_before_of(w, c, i), limit=limit, violated=violated)
        + "</div>"
    )


def _card(w: Mapping[str, Any], reason: Any) -> str:
    constraints = [_dict(c) for c in _list(w.get("constraints"))]
    violated = any(c.get("violated") is True for c in constraints)
    ref = f"{w.get('namespace', '')}/{w.get('name', '')}"
    body = "".join(_constraint(w, c, i) for i, c in enumerate(constraints))
    if reason:
        body += f'<p class="warn">no plan: {_e(reason)}</p>'
    return (
        f'<article class="card{" violated" if violated else ""}" data-workload="{_e(ref)}">'
        f"<h3>{_e(w.get('kind', ''))} <code>{_e(ref)}</code></h3>"
        f'<p class="mute">{_n(_int(w.get("pods")), "running pod")}</p>{body}</article>'
    )


def _eviction(m: Mapping[str, Any]) -> str:
    return (
        f'<li class="eviction">evict <code>{_e(m.get("pod", ""))}</code> '
        f'<span class="mute">{_e(m.get("from", ""))} → {_e(m.get("to", ""))}</span></li>'
    )


def _scale_up_text(options: Any) -> str:
    if not isinstance(options, list):
        return ""
    if not options:
        return '<span class="mute">no new node would help</span>'
    where = ", ".join(
        f"group {_e(_dict(o).get('group', ''))} in zone {_e(_dict(o).get('zone', ''))}"
        for o in options[:3]
    )
    more = f" (and {len(options) - 3} more)" if len(options) > 3 else ""
    return f'<span class="good">fits on a new node of {where}{more}</span>'


def _reasons_key(reasons: Any) -> str:
    """A pending pod's reasons as the text groups them: `N reason` by reason, `; `-joined."""
    counts = _counts(reasons)
    return "; ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "no node"


def _pending(doc: Mapping[str, Any]) -> str:
    """The pending pods grouped by their reasons, as the text groups them; under each
    group its pods (each with where a new node would take it) and the distinct
    scale-up sentences of its pods (`scaleUpReasons`); then the scale-up summary."""
    pending = [str(p) for p in _list(doc.get("pending"))]
    reasons = _dict(doc.get("pendingReasons"))
    scale_up = _dict(doc.get("scaleUp"))
    why = _dict(doc.get("scaleUpReasons"))
    groups: dict[str, list[str]] = {}
    for pod in pending:
        groups.setdefault(_reasons_key(reasons.get(pod)), []).append(pod)
    out = [f"<h2>{_n(len(pending), 'pending pod')}</h2>"]
    for key, pods in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        rows = "".join(
            f"<li><code>{_e(p)}</code> {_scale_up_text(scale_up.get(p))}</li>"
            for p in pods[:NAMES_SHOWN]
        )
        if len(pods) > NAMES_SHOWN:
            rows += f'<li class="mute">and {len(pods) - NAMES_SHOWN:,} more</li>'
        helped = sum(1 for p in pods if _list(scale_up.get(p)))
        diagnosis = ""
        if any(p in scale_up for p in pods):
            diagnosis = f"; {helped:,} of {len(pods):,} would fit on a new node"
        inner = f'<ul class="list">{rows}</ul>'
        if len(pods) > ROWS_SHOWN:
            inner = f"<details><summary>the pods</summary>{inner}</details>"
        # Twins pending for the same reasons mostly share one sentence: each said once.
        lines = dict.fromkeys(str(why[p]) for p in pods if p in why)
        said = "".join(f'<p class="scale-up-reason">{_e(line)}</p>' for line in lines)
        out.append(
            f'<section class="reason" data-pods="{len(pods)}"><h3>{_e(key)}</h3>'
            f'<p class="mute">{_n(len(pods), "pod")}{diagnosis}</p>{inner}{said}</section>'
        )
    out.extend(
        f'<p class="scale-up-summary">{_e(line)}</p>'
        for line in _list(doc.get("scaleUpSummary"))
    )
    return "".join(out)


def _honor(doc: Mapping[str, Any]) -> str:
    """After an outage, whether nodeTaintsPolicy: Honor would place each workload's
    pending pods (`withHonor`), in the text's words."""
    honor = _dict(doc.get("withHonor"))
    if not honor:
        return ""
    rows = []
    for workload, raw in honor.items():
        h = _dict(raw)
        pending, placed = _int(h.get("pending")), _int(h.get("placedWithHonor"))
        v = honor_verdict(pending, placed, h.get("changed", True) is not False)
        rows.append(
            f'<li data-workload="{_e(workload)}"><code>{_e(workload)}</code>: '
            f'<span class="{v.tone}">{_e(v.words)}</span>, '
            f"{placed:,} of {pending:,} pending placed</li>"
        )
    return (
        f"<h3>{_e(HONOR_HEADING[:1].upper() + HONOR_HEADING[1:])}</h3>"
        f'<ul class="list honor">{"".join(rows)}</ul>'
    )


def _drill(doc: Mapping[str, Any]) -> str:
    out = ["<h2>Drill</h2>"]
    for key, what in (
        ("removedNodes", "removed node"),
        ("unreachableNodes", "unreachable node"),
        ("drainedNodes", "drained node"),
    ):
        if key in doc:
            nodes = _list(doc.get(key))
            out.append(f'<p class="drill-nodes" data-key="{key}">{_n(len(nodes), what)}</p>')
            out.append(_names(nodes, what))
    blocked = _dict(doc.get("blocked"))
    if blocked:
        rows = "".join(
            f"<tr><td><code>{_e(p)}</code></td><td><code>{_e(b)}</code></td></tr>"
            for p, b in list(blocked.items())[:NAMES_SHOWN]
        )
        out.append(
            f"<h3>{_n(len(blocked), 'eviction')} blocked by a PodDisruptionBudget</h3>"
            f'<div class="table"><table><thead><tr><th>pod</th><th>budget</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>"
        )
    if "pending" in doc:
        out.append(_pending(doc))
    not_scheduled = _dict(doc.get("notScheduled"))
    if not_scheduled:
        rows = "".join(
            f"<li><code>{_e(p)}</code>: {_e(why)}</li>"
            for p, why in list(not_scheduled.items())[:NAMES_SHOWN]
        )
        out.append(
            f"<h3>{_n(len(not_scheduled), 'pod')} this scheduler does not place</h3>"
            f'<ul class="list not-scheduled">{rows}</ul>'
        )
    preempted = _list(doc.get("preempted"))
    if preempted:
        head = f"{_n(len(preempted), 'pod')} preempted by higher-priority replacements"
        out.append(
            f'<section class="preempted" data-pods="{len(preempted)}"><h3>{head}</h3>'
            f'{_names(preempted, "pod")}</section>'
        )
    if "notRecreated" in doc:
        down = _list(doc.get("notRecreated"))
        why = doc.get("notRecreatedReason") if down else None
        out.append(
            f'<section class="not-recreated" data-pods="{len(down)}">'
            f"<h2>{_n(len(down), 'pod')} down and not coming back</h2>"
            + (f'<p class="not-recreated-reason">{_e(why)}</p>' if why else "")
            + f'{_names(down, "pod")}</section>'
        )
    out.append(_honor(doc))
    return "".join(out)


def _is_drill(doc: Mapping[str, Any]) -> bool:
    keys = ("pending", "removedNodes", "unreachableNodes", "drainedNodes", "notRecreated")
    return any(k in doc for k in keys)


def _plan(doc: Mapping[str, Any]) -> str:
    moves = [_dict(m) for m in _list(doc.get("plan"))]
    complete = doc.get("planComplete") is not False
    head = (
        f"<h2>Plan: {_n(len(moves), 'eviction')}"
        + ("" if complete else ' <span class="warn">(incomplete)</span>')
        + "</h2>"
    )
    reasons = _dict(doc.get("planReasons"))
    why = "".join(
        f"<li><code>{_e(w)}</code>: {_e(r)}</li>" for w, r in list(reasons.items())[:NAMES_SHOWN]
    )
    items = "".join(_eviction(m) for m in moves)
    body = f'<ol class="plan">{items}</ol>' if moves else '<p class="mute">nothing to move</p>'
    if len(moves) > ROWS:
        body = f"<details><summary>{_n(len(moves), 'eviction')}</summary>{body}</details>"
    return head + (f'<ul class="list">{why}</ul>' if why else "") + body


# ---- outcome ranges over sampled runs (--runs) ---------------------------------------------


def _range(value: Any) -> str:
    r = _dict(value)
    low, high = r.get("min"), r.get("max")
    if low == high:
        return _e(low)
    return f'{_e(low)}&ndash;{_e(high)} <span class="mute">median {_e(r.get("median"))}</span>'


def _range_rows(domains: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td><code>{_e(d)}</code></td><td>{_range(r)}</td></tr>"
        for d, r in list(domains.items())[:ROWS]
    )
    more = len(domains) - ROWS
    tail = f'<p class="mute">and {more:,} more domains (-o json)</p>' if more > 0 else ""
    return f'<table class="ranges"><tr><th>domain</th><th>pods</th></tr>{rows}</table>{tail}'


def _runs_head(runs: Mapping[str, Any], what: str) -> str:
    return (
        f"<h3>Over {_e(runs.get('count'))} sampled runs</h3>"
        f"<p>{what}: {_range(runs.get('pending'))}</p>"
    )


def _simulation_runs(runs: Mapping[str, Any]) -> str:
    out = ['<section class="runs">', _runs_head(runs, "pending copies")]
    for key, domains in _dict(runs.get("domains")).items():
        out.append(f"<p><code>{_e(key)}</code></p>{_range_rows(_dict(domains))}")
    chosen = _counts(runs.get("selectedNodes"))
    if chosen:
        out.append("<p>The first copy went to:</p>")
        out.append(_names([f"{node} \u00d7{n}" for node, n in chosen.items()], "node"))
    out.append("</section>")
    return "".join(out)


def _audit_runs(doc: Mapping[str, Any]) -> str:
    runs = _dict(doc.get("runs"))
    out = ['<section class="runs">', _runs_head(runs, "pending pods")]
    for w in _list(doc.get("workloads")):
        w = _dict(w)
        for c in _list(w.get("constraints")):
            ranges = _dict(_dict(c).get("runs"))
            domains = _dict(next(iter(_dict(ranges.get("domains")).values()), {}))
            violated = _int(ranges.get("violated"))
            varies = any(_dict(r).get("min") != _dict(r).get("max") for r in domains.values())
            if not violated and not varies:
                continue
            name = f"{w.get('kind', '')} {w.get('namespace', '')}/{w.get('name', '')}"
            out.append(
                f"<p><b>{_e(name)}</b> <code>{_e(_dict(c).get('topologyKey', ''))}</code>: "
                f"violated in {violated:,} of {_e(runs.get('count'))} runs</p>"
                f"{_range_rows(domains)}"
            )
    out.append("</section>")
    return "".join(out)


def audit_page(doc: Mapping[str, Any], *, generated: str | None = None) -> str:
    """The HTML page of an `audit -o json` document (`generated`: when it was audited)."""
    workloads = [_dict(w) for w in _list(doc.get("workloads"))]
    constraints = sum(len(_list(w.get("constraints"))) for w in workloads)
    violations = _int(doc.get("violations"))

    def s(count: int) -> str:
        return "" if count == 1 else "s"

    moves = len(_list(doc.get("plan")))
    stats: list[tuple[int | str, str, str]] = [
        (len(workloads), f" workload{s(len(workloads))}", ""),
        (constraints, f" constraint{s(constraints)} checked", ""),
        (violations, " violated", "bad" if violations else "good"),
    ]
    if "plan" in doc:
        stats.append((moves, f" eviction{s(moves)} planned", ""))
    if "pending" in doc:
        stats.append((len(_list(doc.get("pending"))), " pending", "warn"))
    body = [
        "<header><h1>topospread audit</h1>",
        f'<p class="mute">audited {_e(generated)}</p>' if generated else "",
        _stats(stats),
        "</header>",
    ]
    if doc.get("error"):
        body.append(f'<p class="bad">{_e(doc["error"])}</p>')
    if "workloadChanges" in doc:
        # The answer first: what the drill changed, its bars and verdicts.
        body.append(_workload_changes(doc))
    # A drill's lists (nodes, pending pods, pods down) come after the workloads it left
    # violating or changed: the verdicts and their bars lead.
    details = _drill(doc) if _is_drill(doc) else ""
    if isinstance(doc.get("runs"), dict):
        body.append(_audit_runs(doc))
    if "plan" in doc:
        body.append(_plan(doc))
    reasons = _dict(doc.get("planReasons"))

    def violated(w: Mapping[str, Any]) -> bool:
        return any(_dict(c).get("violated") is True for c in _list(w.get("constraints")))

    def changed(w: Mapping[str, Any]) -> bool:
        """Whether a drill changed the workload's domains."""
        constraints = [_dict(c) for c in _list(w.get("constraints"))]
        return any(
            (before := _before_of(w, c, i)) is not None and before != _counts(c.get("domains"))
            for i, c in enumerate(constraints)
        )

    bad = [w for w in workloads if violated(w)]
    moved = [w for w in workloads if not violated(w) and changed(w)]
    fine = [w for w in workloads if not violated(w) and not changed(w)]

    def card(w: Mapping[str, Any]) -> str:
        ref = f"{w.get('kind', '')} {w.get('namespace', '')}/{w.get('name', '')}"
        return _card(w, reasons.get(ref))

    if details and "workloadChanges" not in doc:
        body.append(_drill_verdict(doc, len(bad), len(moved)))
    body.append(f"<h2>{_n(len(bad), 'workload')} violating a constraint</h2>")
    body.append(f'<div class="cards">{"".join(card(w) for w in bad)}</div>')
    if moved:
        body.append(f"<h2>{_n(len(moved), 'workload')} changed by the drill, within maxSkew</h2>")
        body.append(f'<div class="cards">{"".join(card(w) for w in moved)}</div>')
    body.append(details)
    if fine:
        cards = f'<div class="cards">{"".join(card(w) for w in fine)}</div>'
        head = f"{_n(len(fine), 'workload')} within maxSkew"
        if moved:
            head += ", unchanged"
        if len(workloads) > OPEN_CARDS:
            body.append(f"<details><summary><h2>{head}</h2></summary>{cards}</details>")
        else:
            body.append(f"<h2>{head}</h2>{cards}")
    if "deletionCosts" in doc:
        body.append(_deletion_costs(doc))
    return _page("topospread audit", body)


def _drill_verdict(doc: Mapping[str, Any], bad: int, moved: int) -> str:
    """A node drill's answer in one line, above the cards that draw it."""
    pending = len(_list(doc.get("pending")))
    down = len(_list(doc.get("notRecreated")))
    parts = [
        f'<span class="{"bad" if bad else "good"}">{_n(bad, "workload")} violating</span>',
        f"{_n(moved, 'workload')} changed within maxSkew",
        f'<span class="{"warn" if pending else "good"}">{_n(pending, "pod")} pending</span>',
    ]
    if "notRecreated" in doc:
        parts.append(f"{_n(down, 'pod')} down for good")
    return f'<p class="drill-verdict">after the drill: {" · ".join(parts)}</p>'


def _verdict(entries: Any) -> str:
    held = not any(_dict(e).get("violated") is True for e in _list(entries))
    skew = max((_int(_dict(e).get("skew")) for e in _list(entries)), default=0)
    word = '<span class="good">holds</span>' if held else '<span class="bad">violated</span>'
    return f"{word} (largest skew {skew})"


def _folded(rows: Sequence[str], what: str) -> str:
    """A list of pods behind its count (`what`: "deleted", "created")."""
    head = f"{_n(len(rows), 'pod')} {what}"
    return _names(rows, "pod", open_up_to=0, summary=head, cls=f"pods {what}")


def _workload_changes(doc: Mapping[str, Any]) -> str:
    """The workload drills (--scale, --rollout), the answer first: per changed workload
    its constraints' domains before -> after with their verdicts, a rollout's stall,
    the comparisons; then, folded, the pods deleted and created and a rollout's
    steps."""
    rollout = "steps" in doc
    out = [f"<h2>{'Rollout' if rollout else 'Scale'}</h2>"]
    costs = _dict(doc.get("withDeletionCosts"))
    revisions = _dict(doc.get("withSeparateRevisions"))
    by_name = {
        f"{w.get('kind', '')} {w.get('namespace', '')}/{w.get('name', '')}": w
        for w in (_dict(x) for x in _list(doc.get("workloads")))
    }
    stalled = doc.get("stalled")
    for raw in _list(doc.get("workloadChanges")):
        change = _dict(raw)
        name = str(change.get("workload", ""))
        out.append(
            f'<section class="workload-change"><h3><code>{_e(name)}</code>: '
            f"{_int(change.get('from'))} → {_int(change.get('to'))}</h3>"
        )
        w = by_name.get(name)
        entries = [_dict(c) for c in _list(w.get("constraints"))] if w is not None else []
        if entries and w is not None:
            bars = "".join(_constraint(w, c, i) for i, c in enumerate(entries))
            out.append(f'<div class="answer">{bars}</div>')
        elif w is None:
            out.append('<p class="mute">no running pod of this workload is left</p>')
        else:
            out.append('<p class="mute">no constraint of this workload is checked</p>')
        if rollout and isinstance(stalled, dict):
            out.append(f'<p class="bad">stalled: {_e(stalled.get("reason", ""))}</p>')
        if name in costs:
            out.append(f"<p>with deletion costs: {_verdict(costs[name])}</p>")
        if name in revisions:
            entry = _dict(revisions[name])
            stalls = ", stalls" if entry.get("stalled") is True else ""
            out.append(
                "<p>with <code>pod-template-hash</code> in matchLabelKeys: "
                f"{_verdict(entry.get('constraints'))}{stalls}</p>"
            )
        for key in ("deleted", "created"):
            rows = [
                f"{_dict(e).get('pod', '')} ({_dict(e).get('node') or 'pending'})"
                for e in _list(change.get(key))
            ]
            out.append(_folded(rows, key))
        out.append("</section>")
    if rollout:
        steps = _list(doc.get("steps"))
        table = "".join(
            "<tr>"
            + "".join(
                f"<td>{v}</td>"
                for v in (
                    i + 1,
                    _int(_dict(st).get("newReplicas")),
                    _int(_dict(st).get("oldReplicas")),
                    len(_list(_dict(st).get("created"))),
                    len(_list(_dict(st).get("deleted"))),
                    len(_list(_dict(st).get("pending"))),
                )
            )
            + "</tr>"
            for i, st in enumerate(steps[:ROWS])
        )
        out.append(
            f'<details class="steps"><summary>{_n(len(steps), "step")}</summary>'
            '<div class="table"><table><thead><tr><th>step</th><th>new</th><th>old</th>'
            "<th>created</th><th>deleted</th><th>pending</th></tr></thead>"
            f"<tbody>{table}</tbody></table></div></details>"
        )
    return "".join(out)


def _deletion_costs(doc: Mapping[str, Any]) -> str:
    """`audit --deletion-costs`: the pods, lowest cost (first deleted) first."""
    costs = {str(k): _int(v) for k, v in _dict(doc.get("deletionCosts")).items()}
    ordered = sorted(costs, key=lambda key: (costs[key], key))
    rows = [f"{k} {costs[k]}" for k in ordered]
    return f"<h2>Deletion costs</h2>{_names(rows, 'pod', open_up_to=0)}"


# ---- simulate ---------------------------------------------------------------------------


def _deciding(feasible: Sequence[Mapping[str, Any]]) -> list[str]:
    """Score plugins whose scores differ between feasible nodes (as cli/simulate.py)."""
    seen: dict[str, set[Any]] = {}
    for n in feasible:
        for plugin, score in _dict(n.get("scores")).items():
            seen.setdefault(plugin, set()).add(score)
    return [p for p, values in seen.items() if len(values) > 1]


def _why_not(n: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for plugin, status in _dict(n.get("filters")).items():
        s = _dict(status)
        if s.get("code") not in (None, "Success"):
            out.append((str(plugin), str(s.get("reason") or s.get("code"))))
    return out


def _node_table(nodes: Sequence[Mapping[str, Any]], selected: Any) -> str:
    feasible = [n for n in nodes if n.get("feasible") is True]
    deciding = _deciding(feasible)
    rows = list(nodes)
    out = []
    if len(nodes) > ROWS:
        rows = sorted(feasible, key=lambda n: (-_int(n.get("score")), str(n.get("name"))))
        rows = rows[:ROWS_SHOWN]
        out.append(
            f'<p class="mute">{len(nodes):,} nodes: the {len(rows)} best of '
            f"{len(feasible):,} feasible are listed, the others by reason below</p>"
        )
    cells = []
    for n in rows:
        name = n.get("name", "")
        if n.get("feasible") is True:
            scores = _dict(n.get("scores"))
            detail = ", ".join(f"{_e(p)}={_e(scores[p])}" for p in deciding if p in scores)
            verdict, score = '<span class="good">yes</span>', _e(_int(n.get("score")))
        else:
            detail = "; ".join(f"{_e(p)}: {_e(r)}" for p, r in _why_not(n))
            verdict, score = '<span class="bad">no</span>', "–"
        cls = ' class="selected"' if name == selected else ""
        cells.append(
            f'<tr{cls} data-node="{_e(name)}"><td><code>{_e(name)}</code>'
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
                f'<section class="reason" data-nodes="{len(names)}"><h3>{_e(reason)}</h3>'
                f"<details><summary>{_n(len(names), 'node')}</summary>"
                f"{_names(names, 'node', open_up_to=NAMES_SHOWN)}</details></section>"
            )
    return "".join(out)


def _placements(placements: Sequence[Any]) -> str:
    placed = [p for p in placements if p is not None]
    head = f"<h3>Placements: {len(placed):,} of {len(placements):,} placed</h3>"
    if len(placements) <= ROWS:
        items = "".join(
            '<li class="bad">unschedulable</li>' if p is None else f"<li><code>{_e(p)}</code></li>"
            for p in placements
        )
        return head + f'<ol class="plan">{items}</ol>'
    per_node = Counter(str(p) for p in placed)
    rows = "".join(
        f'<tr><td><code>{_e(n)}</code></td><td class="num">{c:,}</td></tr>'
        for n, c in per_node.most_common(NAMES_SHOWN)
    )
    return head + (
        f"<details><summary>copies per node ({len(per_node):,} nodes)</summary>"
        f'<div class="table"><table><tbody>{rows}</tbody></table></div></details>'
    )


def _simulation(doc: Mapping[str, Any], title: str | None) -> str:
    nodes = [_dict(n) for n in _list(doc.get("nodes"))]
    feasible = sum(1 for n in nodes if n.get("feasible") is True)
    selected = doc.get("selectedNode")
    pod = str(doc.get("pod", ""))
    out = [f'<section class="simulation" data-pod="{_e(pod)}">']
    out.append(f"<h2>{_e(title or pod)}</h2>")
    stats: list[tuple[int | str, str, str]] = [
        (feasible, f" of {len(nodes):,} nodes feasible", "good" if feasible else "bad"),
        (str(selected) if selected else "none", " selected", ""),
    ]
    out.append(_stats(stats))
    if doc.get("error"):
        out.append(f'<p class="bad">{_e(doc["error"])}</p>')
    sampling = _dict(doc.get("sampling"))
    if sampling:
        scored = _list(sampling.get("scoredNodes"))
        out.append(
            f"<p>Sampled as kube-scheduler: {len(scored):,} of {len(nodes):,} nodes scored "
            f"(numFeasibleNodesToFind {_e(sampling.get('numFeasibleNodesToFind'))}, from "
            f"index {_e(sampling.get('startIndex'))} of the node tree's order)</p>"
        )
    tied = _list(doc.get("tiedNodes"))
    if len(tied) > 1:
        how = "drawn at random from the seed" if sampling else "kube-scheduler picks one at random"
        out.append(
            f"<p>{len(tied):,} nodes tie at the best score ({how}):</p>{_names(tied, 'node')}"
        )
    preemption = doc.get("preemption")
    if isinstance(preemption, dict):
        victims = _list(preemption.get("victims"))
        out.append(
            f'<section class="preemption"><h3>Preempts {_n(len(victims), "pod")} on '
            f"<code>{_e(preemption.get('node', ''))}</code></h3>"
            f"{_names(victims, 'victim')}</section>"
        )
    scale_up = doc.get("scaleUp")
    if isinstance(scale_up, dict) and scale_up:
        items = "".join(
            f"<li><code>{_e(p)}</code> {_scale_up_text(o)}</li>"
            for p, o in list(scale_up.items())[:NAMES_SHOWN]
        )
        out.append(f'<h3>More nodes?</h3><ul class="list scale-up">{items}</ul>')
    elif isinstance(scale_up, list):
        out.append(f"<h3>More nodes?</h3><p>{_scale_up_text(scale_up)}</p>")
    out.append(_node_table(nodes, selected))
    placements = _list(doc.get("placements"))
    if len(placements) > 1:
        out.append(_placements(placements))
    distribution = _dict(doc.get("distribution"))
    if distribution:
        out.append("<h3>Distribution of matching pods (after placement)</h3>")
        for key, domains in distribution.items():
            counts = _counts(domains)
            skew = max(counts.values()) - min(counts.values()) if counts else 0
            out.append(
                f'<div class="constraint" data-key="{_e(key)}"><p><code>{_e(key)}</code> '
                f'<span class="mute">skew {skew:,}</span></p>{_domain_rows(counts)}</div>'
            )
    if isinstance(doc.get("runs"), dict):
        out.append(_simulation_runs(_dict(doc["runs"])))
    out.append("</section>")
    return "".join(out)


def simulate_page(doc: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """The HTML page of a `simulate -o json` document: one simulation, or the list of
    them (each with `workload` and `replicas`) that several workloads print."""
    sims = [_dict(d) for d in doc] if isinstance(doc, list) else [_dict(doc)]
    body = ["<header><h1>topospread simulate</h1></header>"]
    for sim in sims:
        title = None
        if "workload" in sim:
            title = f"{sim['workload']} ({_n(_int(sim.get('replicas')), 'replica')})"
        body.append(_simulation(sim, title))
    return _page("topospread simulate", body)


def utc_now(at: float | None = None) -> str:
    """The time a report is made (`at`: Unix seconds; default now), as the page shows it."""
    moment = datetime.now(UTC) if at is None else datetime.fromtimestamp(at, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
