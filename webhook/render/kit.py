"""The HTML kit the pages are built from: escaping, the page frame (inline CSS, the
Content-Security-Policy), stat cells, name lists, SVG bars, domain rows, ranges over
sampled runs.

Every string of a document is escaped where it is written (`esc`): a value read from
a cluster never reaches the page as markup. Big clusters: past ROWS rows a list becomes
a summary (the fullest and emptiest ROWS_SHOWN domains and a histogram of the counts;
up to NAMES_SHOWN names, the rest counted), so a page grows with the number of
workloads, not with the number of nodes or domains.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

__all__ = [
    "CSP",
    "CSS",
    "NAMES_SHOWN",
    "OPEN_CARDS",
    "ROWS",
    "ROWS_SHOWN",
    "counts_of",
    "dict_of",
    "domain_rows",
    "esc",
    "html_page",
    "int_of",
    "list_of",
    "name_list",
    "plural",
    "range_rows",
    "range_text",
    "runs_head",
    "scale_up_text",
    "stat_cells",
    "svg_bar",
    "utc_now",
]

# Past this many rows (domains, nodes, placements), a summary: the text output's own
# threshold (cli/simulate.py TABLE_NODES).
ROWS = 50


# Rows a summary keeps at each end (fullest / emptiest domains, best nodes).
ROWS_SHOWN = 10


# Names listed in a collapsed list before "and N more" (keeps a 5,000-node page small).
NAMES_SHOWN = 50


# Workload cards shown open; the cards of workloads that violate nothing collapse past it.
OPEN_CARDS = 50


CSS = """
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


CSP = "default-src 'none'; style-src 'unsafe-inline'"


def esc(value: Any) -> str:
    """Any value of the document as escaped text."""
    return escape(value if isinstance(value, str) else str(value), quote=True)


def int_of(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def dict_of(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def list_of(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def counts_of(value: Any) -> dict[str, int]:
    return {str(k): int_of(v) for k, v in dict_of(value).items()}


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def html_page(title: str, body: Iterable[str]) -> str:
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width,initial-scale=1">',
            '<meta name="color-scheme" content="light dark">',
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
            *body,
            "</body></html>\n",
        ]
    )


def stat_cells(items: Sequence[tuple[int | str, str, str]]) -> str:
    cells = "".join(
        f'<li class="{cls}"><b>{esc(f"{v:,}" if isinstance(v, int) else v)}</b>{esc(label)}</li>'
        for v, label, cls in items
    )
    return f'<ul class="stats">{cells}</ul>'


def name_list(
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
    items = "".join(f"<li><code>{esc(n)}</code></li>" for n in shown)
    if len(names) > len(shown):
        items += f'<li class="mute">and {len(names) - len(shown):,} more</li>'
    inner = f'<ul class="list">{items}</ul>'
    if len(names) <= open_up_to:
        return inner
    head = summary if summary is not None else plural(len(names), what)
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<details{attr}><summary>{esc(head)}</summary>{inner}</details>"


def svg_bar(now: int, top: int, *, was: int | None = None, limit: int | None = None) -> str:
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


def domain_rows(
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
            f'<span class="name"><code>{esc(d)}</code></span>'
            f"{svg_bar(now, top, was=was, limit=limit)}"
            f'<span class="count">{count}</span></li>'
        )
    return summary + f'<ul class="domains">{"".join(rows)}</ul>'


def scale_up_text(options: Any) -> str:
    if not isinstance(options, list):
        return ""
    if not options:
        return '<span class="mute">no new node would help</span>'
    where = ", ".join(
        f"group {esc(dict_of(o).get('group', ''))} in zone {esc(dict_of(o).get('zone', ''))}"
        for o in options[:3]
    )
    more = f" (and {len(options) - 3} more)" if len(options) > 3 else ""
    return f'<span class="good">fits on a new node of {where}{more}</span>'


def range_text(value: Any) -> str:
    r = dict_of(value)
    low, high = r.get("min"), r.get("max")
    if low == high:
        return esc(low)
    return f'{esc(low)}&ndash;{esc(high)} <span class="mute">median {esc(r.get("median"))}</span>'


def range_rows(domains: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td><code>{esc(d)}</code></td><td>{range_text(r)}</td></tr>"
        for d, r in list(domains.items())[:ROWS]
    )
    more = len(domains) - ROWS
    tail = f'<p class="mute">and {more:,} more domains (-o json)</p>' if more > 0 else ""
    return f'<table class="ranges"><tr><th>domain</th><th>pods</th></tr>{rows}</table>{tail}'


def runs_head(runs: Mapping[str, Any], what: str) -> str:
    return (
        f"<h3>Over {esc(runs.get('count'))} sampled runs</h3>"
        f"<p>{what}: {range_text(runs.get('pending'))}</p>"
    )


def utc_now(at: float | None = None) -> str:
    """The time a report is made (`at`: Unix seconds; default now), as the page shows it."""
    moment = datetime.now(UTC) if at is None else datetime.fromtimestamp(at, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
