"""What /mutate changes, as a JSONPatch computed on the raw object.

A mutation is a pipeline of pure steps. Each step edits a copy of the object in
place and returns warnings; after the last step one diff (`jsonpatch`) against the
object exactly as received gives the patch, so nothing the webhook does not own can
change (no field dropped, reordered or defaulted on the way). The steps only edit
EDITED_PARTS (each pod's annotations and topologySpreadConstraints): only those are
copied and diffed.

Before a patch is returned it is checked: applied to the received object, followed
by what kube-apiserver does next (its own matchLabelKeys merge from v1.34, then
validation at that version). A patch the API server would reject is dropped and
replaced by a warning: under failurePolicy Ignore a failed webhook call is
forgiven, but a patch that makes the object invalid still blocks the pod.

Steps, in order (each sees what the previous ones did):
  inject_defaults          default constraints made explicit (webhook/inject.py)
  merge_match_label_keys   matchLabelKeys -> labelSelector, per matchLabelKeysMerge
  annotate_placement       dry-run placement annotations (webhook/inject.py), last so
                           the pod is placed as it will be stored
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonpatch

from webhook.admission.inject import annotate_placement, inject_defaults
from webhook.api.field import FieldError
from webhook.api.kube import RawObj
from webhook.config import Settings

__all__ = [
    "MERGED_KEYS_ANNOTATION",
    "SELECTOR_MERGE_SINCE",
    "STEPS",
    "MutationContext",
    "MutationResult",
    "Step",
    "merge_form",
    "merge_match_label_keys",
    "mutate",
    "mutate_object",
]

MERGED_KEYS_ANNOTATION = "topospread.io/merged-match-label-keys"

# kube-apiserver merges matchLabelKeys into labelSelector itself on Pod create from this
# version (MatchLabelKeysInPodTopologySpreadSelectorMerge, beta and on by default).
SELECTOR_MERGE_SINCE = (1, 34)

MergeForm = Literal["none", "keep-keys", "move-keys"]


@dataclass(frozen=True)
class MutationContext:
    """What a step may look at besides the object itself."""

    operation: str = "CREATE"
    # request.namespace: the object's own may be absent (kubernetes#88282).
    namespace: str = ""
    dry_run: bool = False
    settings: Settings = field(default_factory=Settings)
    # (major, minor) of the kube-apiserver that will store the object, None when unknown.
    server_version: tuple[int, int] | None = None
    # webhook.scheduler.framework.snapshot.Snapshot, None without cluster state.
    snapshot: Any = None
    # The object before an UPDATE (request.oldObject), None on CREATE.
    old: RawObj | None = None


@dataclass(frozen=True)
class MutationResult:
    """The patch to return, the warnings to show, and the object once patched."""

    patch: list[RawObj]
    warnings: list[str]
    mutated: RawObj
    # A step raised: nothing was changed and the warnings say so.
    failed: bool = False


# A step edits the object (a private copy of what it may edit) in place and returns warnings.
Step = Callable[[RawObj, MutationContext], list[str]]


# ---------------------------------------------------------------------------------------
# matchLabelKeys merge


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


def _requirement(key: str, value: str) -> RawObj:
    return {"key": key, "operator": "In", "values": [value]}


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

    kube-apiserver's rule (pkg/registry/core/pod/strategy.go, v1.34): for each key of
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
        for key in keys:
            value = labels.get(key) if isinstance(key, str) else None
            if not isinstance(value, str):
                continue
            if (key, value) not in present:
                exprs.append(_requirement(key, value))
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


# ---------------------------------------------------------------------------------------
# What the API server does after the mutating webhooks


def _stored_errors(obj: RawObj, ctx: MutationContext) -> list[FieldError]:
    """The errors kube-apiserver would find in `obj` sent back by the webhook.

    A known API server is replayed by rules.validate_object: from v1.34 it merges a created
    Pod's matchLabelKeys itself first. An unknown one is assumed to merge nothing more: the
    object is validated as it stands.
    """
    from webhook.admission.review import validate_stored
    from webhook.validation.rules import validate_object

    if ctx.server_version is None:
        return validate_stored(obj, old=ctx.old)
    return validate_object(obj, old=ctx.old, server_version=ctx.server_version)


def _rejection(
    original: RawObj, patch: list[RawObj], ctx: MutationContext, *, scoped: bool = False
) -> str | None:
    """A warning when the API server would reject the patched object for a reason the
    received object does not have; None when the patch is safe.

    `scoped`: the patch only touches EDITED_PARTS, so only those are copied to apply it.
    """
    if scoped:
        patched = jsonpatch.apply_patch(_editable_copy(original), patch, in_place=True)
    else:
        patched = jsonpatch.apply_patch(original, patch)
    before = set(_stored_errors(original, ctx))
    new = [e for e in _stored_errors(patched, ctx) if e not in before]
    if not new:
        return None
    version = ctx.server_version
    server = f"kube-apiserver v{version[0]}.{version[1]}" if version else "kube-apiserver"
    return (
        f"{new[0].field}: topospread left the object unchanged: its patch would make "
        f"{server} reject it ({new[0].body()})"
    )


# ---------------------------------------------------------------------------------------
# The pipeline

STEPS: tuple[Step, ...] = (inject_defaults, merge_match_label_keys, annotate_placement)

# The only parts of an object STEPS edit, as (parent, child): the whole parent when it is
# not an object. Everything else of the copy they work on is shared with the received
# object, and only these parts are diffed: the work per request follows what the steps
# may change, not the size of the object.
EDITED_PARTS: tuple[tuple[str, str], ...] = (
    ("metadata", "annotations"),
    ("spec", "topologySpreadConstraints"),
)


def _copy_json(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists and immutable scalars), without
    copy.deepcopy's bookkeeping."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _editable_copy(obj: RawObj) -> RawObj:
    """`obj` with EDITED_PARTS copied deeply and everything else shared."""
    out = dict(obj)
    for parent, child in EDITED_PARTS:
        part = obj.get(parent)
        if isinstance(part, dict):
            part = dict(part)
            if child in part:
                part[child] = _copy_json(part[child])
            out[parent] = part
        elif parent in obj:
            out[parent] = _copy_json(part)
    return out


def _changed_members(src: Any, dst: Any) -> tuple[Any, Any]:
    """`src` and `dst` cut down to the members that differ, when both are objects or
    both lists of one length: a list becomes an object keyed by index, whose diff has
    the same paths ("/3/..."). Anything else is returned whole."""
    if isinstance(src, dict) and isinstance(dst, dict):
        keys = [k for k in src if k not in dst or dst[k] is not src[k]]
        keys += [k for k in dst if k not in src]
        return {k: src[k] for k in keys if k in src}, {k: dst[k] for k in keys if k in dst}
    if isinstance(src, list) and isinstance(dst, list) and len(src) == len(dst):
        changed = [i for i, (a, b) in enumerate(zip(src, dst, strict=True)) if a != b]
        return {str(i): src[i] for i in changed}, {str(i): dst[i] for i in changed}
    return src, dst


def _edited_views(obj: RawObj, mutated: RawObj) -> tuple[RawObj, RawObj]:
    """EDITED_PARTS of both objects, at their own paths and cut down to what differs: the
    diff of the two views is the diff of the objects, which differ nowhere else."""
    before: RawObj = {}
    after: RawObj = {}
    for parent, child in EDITED_PARTS:
        src, dst = obj.get(parent), mutated.get(parent)
        if src is dst:
            continue
        if isinstance(src, dict) and isinstance(dst, dict):
            before[parent], after[parent] = {}, {}
            if child in src and child in dst:
                before[parent][child], after[parent][child] = _changed_members(
                    src[child], dst[child]
                )
            else:
                if child in src:
                    before[parent][child] = src[child]
                if child in dst:
                    after[parent][child] = dst[child]
        else:
            if parent in obj:
                before[parent] = src
            if parent in mutated:
                after[parent] = dst
    return before, after


def mutate(
    obj: RawObj, ctx: MutationContext, steps: Sequence[Step] | None = None
) -> MutationResult:
    """Run the steps (default STEPS) on a copy of `obj`, diff once, check the patch.

    STEPS get a copy of EDITED_PARTS only and only those are diffed; other steps get a
    deep copy of the whole object, diffed whole.
    """
    warnings: list[str] = []
    if steps is None:
        mutated = _editable_copy(obj)
        for step in STEPS:
            warnings.extend(step(mutated, ctx))
        before, after = _edited_views(obj, mutated)
        # Most reviews change nothing: an equality test in C settles those.
        patch: list[RawObj] = [] if before == after else jsonpatch.make_patch(before, after).patch
    else:
        mutated = copy.deepcopy(obj)
        for step in steps:
            warnings.extend(step(mutated, ctx))
        patch = jsonpatch.make_patch(obj, mutated).patch
    if not patch:
        return MutationResult([], warnings, obj)
    rejected = _rejection(obj, patch, ctx, scoped=steps is None)
    if rejected is not None:
        # The steps' own warnings describe changes that are no longer made.
        return MutationResult([], [rejected], obj)
    return MutationResult(patch, warnings, mutated)


def mutate_object(obj: RawObj, ctx: MutationContext) -> list[RawObj]:
    """The JSONPatch operations /mutate returns for `obj` (empty when nothing changes)."""
    return mutate(obj, ctx).patch
