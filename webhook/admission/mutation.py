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
  inject_defaults          default constraints made explicit (inject.py)
  separate_revisions       pod-template-hash added to matchLabelKeys of a Deployment's
                           pods, with policy.separateRevisions (revisions.py)
  merge_match_label_keys   matchLabelKeys -> labelSelector, per matchLabelKeysMerge (merge.py)
  annotate_placement       dry-run placement annotations (annotate.py), last so
                           the pod is placed as it will be stored
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import jsonpatch

from webhook.admission.annotate import annotate_placement
from webhook.admission.context import MutationContext, MutationResult, Step
from webhook.admission.inject import inject_defaults
from webhook.admission.merge import merge_match_label_keys
from webhook.admission.revisions import separate_revisions
from webhook.api.field import FieldError
from webhook.api.kube import RawObj
from webhook.validation.rules import validate_object

__all__ = ["EDITED_PARTS", "STEPS", "mutate", "mutate_object"]


# ---------------------------------------------------------------------------------------
# What the API server does after the mutating webhooks


def _stored_errors(obj: RawObj, ctx: MutationContext) -> list[FieldError]:
    """The errors kube-apiserver would find in `obj` sent back by the webhook.

    A known API server is replayed by rules.validate_object: from v1.34 it merges a created
    Pod's matchLabelKeys itself first. An unknown one is assumed to merge nothing more: the
    object is validated as it stands.
    """
    if ctx.server_version is None:
        return validate_object(obj, old=ctx.old, merge=False)
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

STEPS: tuple[Step, ...] = (
    inject_defaults,
    separate_revisions,
    merge_match_label_keys,
    annotate_placement,
)

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
