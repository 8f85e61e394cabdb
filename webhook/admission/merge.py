"""The matchLabelKeys merge step: matchLabelKeys -> labelSelector, per matchLabelKeysMerge.

The merge itself is the API's (webhook.api.constraint.apply_match_label_keys); this
step decides whether and in which form the webhook applies it for the API server it
serves, keeps it idempotent under reinvocation, and records keys it moved out.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from webhook.admission.context import MutationContext
from webhook.api.constraint import match_label_requirements, requirement
from webhook.api.kube import RawObj

__all__ = [
    "MERGED_KEYS_ANNOTATION",
    "SELECTOR_MERGE_SINCE",
    "merge_form",
    "merge_match_label_keys",
]

MERGED_KEYS_ANNOTATION = "topospread.io/merged-match-label-keys"

# kube-apiserver merges matchLabelKeys into labelSelector itself on Pod create from this
# version (MatchLabelKeysInPodTopologySpreadSelectorMerge, beta and on by default).
SELECTOR_MERGE_SINCE = (1, 34)

MergeForm = Literal["none", "keep-keys", "move-keys"]


def merge_form(mode: str, server_version: tuple[int, int] | None) -> MergeForm:
    """How the webhook merges matchLabelKeys for this mode and API server.

    keep-keys: the v1.34 result (requirements appended, matchLabelKeys kept);
    move-keys: requirements appended and the merged keys moved out of matchLabelKeys,
               because an API server before v1.34 rejects a key found in both;
    none:      the webhook leaves matchLabelKeys alone.
    """
    if mode == "apiserver":
        return "none"
    if server_version is None:
        return "keep-keys"
    if server_version >= SELECTOR_MERGE_SINCE:
        # The API server merges right after us and does not de-duplicate: merging here too
        # would put each key in twice, which its validation rejects.
        return "none" if mode == "auto" else "keep-keys"
    return "move-keys"


def _requirement_pairs(exprs: list[Any]) -> set[tuple[str, str]]:
    """(key, value) of each entry of `exprs` equal to a `key In [value]` requirement, so
    that looking one up is a set lookup rather than a scan of the list."""
    pairs: set[tuple[str, str]] = set()
    for expr in exprs:
        if not isinstance(expr, dict) or len(expr) != 3 or expr.get("operator") != "In":
            continue
        key, values = expr.get("key"), expr.get("values")
        if (
            isinstance(key, str)
            and isinstance(values, list)
            and len(values) == 1
            and isinstance(values[0], str)
        ):
            pairs.add((key, values[0]))
    return pairs


def _pod_parts(pod: RawObj) -> tuple[dict[str, Any], list[Any]] | None:
    meta = pod.get("metadata")
    spec = pod.get("spec")
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return None
    labels = meta.get("labels")
    constraints = spec.get("topologySpreadConstraints")
    if not isinstance(labels, dict) or not isinstance(constraints, list):
        return None
    return labels, constraints


def _merged_before(pod: RawObj) -> dict[str, list[str]]:
    meta = pod.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    raw = annotations.get(MERGED_KEYS_ANNOTATION) if isinstance(annotations, dict) else None
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {
        str(k): [x for x in v if isinstance(x, str)]
        for k, v in parsed.items()
        if isinstance(v, list)
    }


def merge_match_label_keys(pod: RawObj, ctx: MutationContext) -> list[str]:
    """Merge each constraint's matchLabelKeys into its labelSelector, on Pod create.

    kube-apiserver's rule (pkg/registry/core/pod/strategy.go, v1.34, the requirements of
    api.constraint.match_label_requirements): for each key of
    matchLabelKeys the pod has as a label, append `key In [value]` to
    labelSelector.matchExpressions; keys the pod lacks are skipped; a constraint without
    labelSelector is left alone (a nil selector matches nothing). Unlike the API server
    this is idempotent: a requirement already there is not appended again, so a second
    call (reinvocationPolicy IfNeeded) changes nothing.
    """
    if ctx.operation != "CREATE" or pod.get("kind") != "Pod":
        return []
    form = merge_form(ctx.settings.match_label_keys_merge, ctx.server_version)
    parts = _pod_parts(pod)
    if form == "none" or parts is None:
        return []
    labels, constraints = parts
    moved: dict[str, list[str]] = {}
    merged_at: list[int] = []
    for i, constraint in enumerate(constraints):
        if not isinstance(constraint, dict):
            continue
        keys = constraint.get("matchLabelKeys")
        selector = constraint.get("labelSelector")
        if not isinstance(keys, list) or not keys or not isinstance(selector, dict):
            continue
        exprs = selector.get("matchExpressions")
        if exprs is None:
            exprs = []
        if not isinstance(exprs, list):
            continue
        present = _requirement_pairs(exprs)
        merged: list[str] = []
        for key, value in match_label_requirements(keys, labels):
            if (key, value) not in present:
                exprs.append(requirement(key, value))
                present.add((key, value))
            merged.append(key)
        if merged:
            merged_at.append(i)
        if exprs:
            selector["matchExpressions"] = exprs
        if form == "move-keys" and merged:
            merged_keys = set(merged)
            rest = [k for k in keys if not (isinstance(k, str) and k in merged_keys)]
            if rest:
                constraint["matchLabelKeys"] = rest
            else:
                del constraint["matchLabelKeys"]
            moved[str(i)] = merged
    if moved:
        record = _merged_before(pod)
        for index, keys in moved.items():
            known = record.get(index, [])
            known_keys = set(known)
            record[index] = known + [k for k in keys if k not in known_keys]
        annotations = pod["metadata"].get("annotations")
        if not isinstance(annotations, dict):
            annotations = pod["metadata"]["annotations"] = {}
        annotations[MERGED_KEYS_ANNOTATION] = json.dumps(
            # Numeric order of the constraint indexes ("2" before "10").
            dict(sorted(record.items(), key=lambda kv: (len(kv[0]), kv[0]))),
            separators=(",", ":"),
        )
    if ctx.server_version is None and merged_at:
        return [
            f"spec.topologySpreadConstraints[{merged_at[0]}].matchLabelKeys: merged into "
            "labelSelector as kube-apiserver v1.34 does, assuming no API server merges after "
            "the webhook (version unknown; use matchLabelKeysMerge: apiserver unless connected "
            "to the cluster)"
        ]
    return []
