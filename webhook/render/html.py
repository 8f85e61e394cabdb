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

from webhook.render.audit_page import audit_page
from webhook.render.kit import NAMES_SHOWN, ROWS, ROWS_SHOWN, utc_now
from webhook.render.simulate_page import simulate_page

# The pages and the kit's limits, under the names their callers know (the pages:
# audit_page.py, drill_page.py, simulate_page.py; their parts: kit.py, cards.py).
__all__ = ["NAMES_SHOWN", "ROWS", "ROWS_SHOWN", "audit_page", "simulate_page", "utc_now"]
