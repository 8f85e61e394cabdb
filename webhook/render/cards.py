"""A workload's card: each checked constraint's domains drawn as bars (before -> after
after a drill, the maxSkew limit dashed), its selector and verdict; the audit page and
the workload drills' section draw constraints with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.render.kit import (
    counts_of,
    dict_of,
    domain_rows,
    esc,
    int_of,
    list_of,
    plural,
)

__all__ = ["before_of", "constraint_block", "workload_card"]


def _limit(c: Mapping[str, Any], domains: Mapping[str, int]) -> int | None:
    """The most pods a domain may hold within maxSkew: the global minimum plus maxSkew
    (the minimum is 0 while fewer domains than minDomains are eligible)."""
    if not domains:
        return None
    low = min(domains.values())
    min_domains = c.get("minDomains")
    if isinstance(min_domains, int) and len(domains) < min_domains:
        low = 0
    return low + int_of(c.get("maxSkew"))


def before_of(w: Mapping[str, Any], c: Mapping[str, Any], i: int) -> dict[str, int] | None:
    """The domains before a drill: the constraint entry's `before`; or the workload
    entry's, either a list parallel to `constraints` or one mapping for all of them."""
    if "before" in c:
        return counts_of(c["before"])
    before = w.get("before")
    if isinstance(before, list):
        return counts_of(before[i]) if i < len(before) else None
    if isinstance(before, dict):
        return counts_of(before)
    return None


def _selector(value: Any) -> str:
    """A labelSelector as kubectl's -l spells it."""
    if isinstance(value, str):
        return value
    sel = dict_of(value)
    parts = [f"{k}={v}" for k, v in dict_of(sel.get("matchLabels")).items()]
    for expr in list_of(sel.get("matchExpressions")):
        e = dict_of(expr)
        values = ",".join(str(v) for v in list_of(e.get("values")))
        op = str(e.get("operator", ""))
        key = str(e.get("key", ""))
        if op in ("In", "NotIn"):
            parts.append(f"{key} {op.lower()} ({values})")
        else:
            parts.append(key if op == "Exists" else f"!{key}")
    return ", ".join(parts)


def constraint_block(w: Mapping[str, Any], c: Mapping[str, Any], i: int) -> str:
    domains = counts_of(c.get("domains"))
    violated = c.get("violated") is True
    skew, max_skew = int_of(c.get("skew")), int_of(c.get("maxSkew"))
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
        extra += f" · minDomains {int_of(c['minDomains'])}"
    if isinstance(c.get("pods"), int):
        extra += f" · {plural(c['pods'], 'pod')}"
    error = f'<p class="bad">{esc(c["error"])}</p>' if c.get("error") else ""
    selector = _selector(c.get("labelSelector"))
    if selector:
        error += f'<p class="mute selector">selector <code>{esc(selector)}</code></p>'
    return (
        f'<div class="constraint{" violated" if violated else ""}" '
        f'data-key="{esc(c.get("topologyKey", ""))}" data-skew="{skew}" data-max-skew="{max_skew}">'
        f"<p><code>{esc(c.get('topologyKey', ''))}</code> "
        f'<span class="mute">{esc(c.get("whenUnsatisfiable", ""))}</span></p>'
        f"<p>{verdict}{esc(extra)}</p>{error}"
        + domain_rows(domains, before=before_of(w, c, i), limit=limit, violated=violated)
        + "</div>"
    )


def workload_card(w: Mapping[str, Any], reason: Any) -> str:
    constraints = [dict_of(c) for c in list_of(w.get("constraints"))]
    violated = any(c.get("violated") is True for c in constraints)
    ref = f"{w.get('namespace', '')}/{w.get('name', '')}"
    body = "".join(constraint_block(w, c, i) for i, c in enumerate(constraints))
    if reason:
        body += f'<p class="warn">no plan: {esc(reason)}</p>'
    return (
        f'<article class="card{" violated" if violated else ""}" data-workload="{esc(ref)}">'
        f"<h3>{esc(w.get('kind', ''))} <code>{esc(ref)}</code></h3>"
        f'<p class="mute">{plural(int_of(w.get("pods")), "running pod")}</p>{body}</article>'
    )
