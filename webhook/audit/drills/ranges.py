"""The range of a drill's outcomes over several sampled runs (`audit --runs N`): per
workload constraint the pods per domain (min / median / max) and how many runs end
with it violated, and the pending pods per run.

Pure: it reads the `audit -o json` documents of the runs (the first run's document is
the one reported, and gains the ranges), so the runs may come from worker processes.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from webhook.audit.measure.spread import document_entry_key

__all__ = ["add_ranges", "range_lines", "value_range"]

Range = dict[str, int | float]


def value_range(values: Sequence[int]) -> Range:
    """{"min", "median", "max"} of some counts (the median of an even count may be x.5)."""
    middle = statistics.median(values)
    median: int | float = int(middle) if float(middle).is_integer() else float(middle)
    return {"min": min(values), "median": median, "max": max(values)}


def _constraints_by_key(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """spread.document_entry_key -> the constraint's entry, in one run."""
    return {
        document_entry_key(w, c): c
        for w in run.get("workloads", [])
        for c in w.get("constraints", [])
    }


def add_ranges(first: dict[str, Any], runs: Sequence[dict[str, Any]]) -> None:
    """Add the ranges over `runs` (the documents of every run, `first` among them) to
    `first`: top-level `runs` ({"count", "pending"}) and, on each
    constraint entry, `runs` ({"domains": {topologyKey: {domain: range}}, "violated":
    runs ending with it violated}). A constraint a run does not report (its workload
    had no pod running then) counts 0 pods in every domain, not violated."""
    by_run = [_constraints_by_key(run) for run in runs]
    for w in first.get("workloads", []):
        for c in w.get("constraints", []):
            key = document_entry_key(w, c)
            seen = [found.get(key) for found in by_run]
            domains = sorted({d for entry in seen if entry for d in entry.get("domains", {})})
            c["runs"] = {
                "domains": {
                    str(c.get("topologyKey")): {
                        d: value_range(
                            [int((entry or {}).get("domains", {}).get(d, 0)) for entry in seen]
                        )
                        for d in domains
                    }
                },
                "violated": sum(1 for entry in seen if entry and entry.get("violated")),
            }
    first["runs"] = {
        "count": len(runs),
        "pending": value_range([len(run.get("pending", [])) for run in runs]),
    }


def _text(r: Range) -> str:
    if r["min"] == r["max"]:
        return str(r["min"])
    return f"{r['min']}..{r['max']} (median {r['median']})"


# Constraints listed in the text; the JSON has them all.
TEXT_CONSTRAINTS = 20


def range_lines(doc: dict[str, Any], seed: int) -> list[str]:
    """The text of the ranges (the runs' seeds from `seed` on): the pending pods, then
    each constraint that ends violated in some run or whose counts vary, with its
    domains' ranges."""
    runs = doc.get("runs")
    if not runs:
        return []
    lines = [
        f"Over {runs['count']} runs (seeds {seed}..{seed + runs['count'] - 1}):",
        f"  pending pods  {_text(runs['pending'])}",
    ]
    shown = 0
    for w in doc.get("workloads", []):
        for c in w.get("constraints", []):
            ranges = c.get("runs")
            if not ranges:
                continue
            domains: dict[str, Range] = next(iter(ranges["domains"].values()), {})
            varies = any(r["min"] != r["max"] for r in domains.values())
            if not ranges["violated"] and not varies:
                continue
            shown += 1
            if shown > TEXT_CONSTRAINTS:
                continue
            name = f"{w.get('kind')} {w.get('namespace')}/{w.get('name')}"
            lines.append(
                f"  {name} {c.get('topologyKey')}: violated in {ranges['violated']} of "
                f"{runs['count']} runs"
            )
            lines.append("    " + ", ".join(f"{d} {_text(r)}" for d, r in domains.items()))
    if shown > TEXT_CONSTRAINTS:
        lines.append(f"  ... and {shown - TEXT_CONSTRAINTS} more constraints (-o json)")
    if not shown:
        lines.append("  every constraint ends the same in every run")
    return lines
