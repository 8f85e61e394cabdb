"""The /mutate steps that read cluster state: default injection and dry-run placement.

    inject_defaults      a created Pod without topologySpreadConstraints gets the
                         constraints kube-scheduler would apply to it by default
                         (defaults.default_constraints_for), made explicit
    annotate_placement   a created Pod in a dry run (or asking for it) gets the
                         placement annotations (annotations.placement_annotations)

Both are pure steps of the mutation pipeline (webhook/mutation.py): they edit the
pipeline's private copy of the pod and return warnings. Both read the Snapshot the
caller holds under the cluster source's read lock (server.py), never fetch it.

Cluster state never blocks a pod: without a snapshot (no source, source not synced)
or when the model raises, a step changes nothing, says so in a warning and logs the
error; the other steps (the matchLabelKeys merge) still apply.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from webhook.admission.annotate import PLACEMENT, placement_annotations, wants_dry_run
from webhook.api.kube import RawObj

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.admission.mutation import MutationContext

__all__ = [
    "INJECT_ANNOTATION",
    "NAMESPACE_NAME_LABEL",
    "annotate_placement",
    "as_created",
    "inject_defaults",
    "injection_wanted",
    "namespace_labels",
]

log = logging.getLogger("topospread.inject")

# Per-pod opt-out: `topospread.io/inject: "false"` keeps the pod as written.
INJECT_ANNOTATION = "topospread.io/inject"
# kube-apiserver sets this label on every Namespace (v1.21+), to its name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

_CONSTRAINTS_PATH = "spec.topologySpreadConstraints"
_PLACEMENT_PATH = f"metadata.annotations[{PLACEMENT}]"
_NO_STATE = "no cluster state (the source has not synced yet, or none is configured)"


def _meta(obj: Any) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def _created_pod(pod: RawObj, ctx: MutationContext) -> bool:
    return ctx.operation == "CREATE" and pod.get("kind") == "Pod"


def as_created(pod: RawObj, namespace: str) -> RawObj:
    """The pod with metadata.namespace set to the request's namespace.

    A pod sent to /api/v1/namespaces/<ns>/pods may omit its namespace
    (kubernetes#88282); the model reads it from the object, so it is filled in on a
    shallow view, never on the pod being patched.
    """
    meta = _meta(pod)
    if not namespace or meta.get("namespace") == namespace:
        return pod
    return {**pod, "metadata": {**meta, "namespace": namespace}}


def namespace_labels(snapshot: Any, namespace: str) -> dict[str, str]:
    """The labels of `namespace` as far as the cluster state knows them.

    From the Snapshot's Namespace objects (`namespaces`, by name). A namespace
    the state does not hold (a snapshot file without Namespaces) still has the
    label kube-apiserver puts on every namespace, kubernetes.io/metadata.name.
    """
    known = getattr(snapshot, "namespaces", None)
    found = known.get(namespace) if isinstance(known, dict) else None
    labels = _meta(found).get("labels")
    out = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
    out.setdefault(NAMESPACE_NAME_LABEL, namespace)
    return out


def injection_wanted(pod: RawObj, ctx: MutationContext) -> bool:
    """Whether defaults may be injected into this pod, before looking at cluster state.

    Only a created Pod with no constraints of its own, injection on, defaults
    configured, no per-pod opt-out, and not bound at creation (a pod with
    spec.nodeName never passes through kube-scheduler, so no default applies).
    The namespace selector is checked later, as it needs the cluster state.
    """
    from webhook.scheduler.plugins.helper.spread import defaults_for_args

    if not _created_pod(pod, ctx) or not ctx.settings.inject_defaults:
        return False
    spec = pod.get("spec")
    if not isinstance(spec, dict) or spec.get("nodeName"):
        return False
    # Absent, null or [] all mean "none" to the scheduler; anything else is the pod's own
    # (or malformed, which validation reports): left alone.
    if spec.get("topologySpreadConstraints") not in (None, []):
        return False
    annotations = _meta(pod).get("annotations")
    if isinstance(annotations, dict) and annotations.get(INJECT_ANNOTATION) == "false":
        return False
    return bool(defaults_for_args(ctx.settings.spread))


def _namespace_selected(ctx: MutationContext, namespace: str) -> bool:
    from webhook.api.labels import selector_matches

    selector = ctx.settings.inject_namespace_selector
    if selector is None:
        return True
    return selector_matches(selector, namespace_labels(ctx.snapshot, namespace))


def inject_defaults(pod: RawObj, ctx: MutationContext) -> list[str]:
    """Write the default constraints kube-scheduler would apply into a created Pod.

    The constraints are defaults.default_constraints_for the pod as created (in the
    request's namespace), against the current Services and controllers. A pod
    DefaultSelector finds nothing for gets nothing, as upstream.
    """
    from webhook.scheduler.plugins.helper import spread as defaults

    if not injection_wanted(pod, ctx):
        return []
    if ctx.snapshot is None:
        return [f"{_CONSTRAINTS_PATH}: default constraints not injected: {_NO_STATE}"]
    view = as_created(pod, ctx.namespace)
    try:
        if not _namespace_selected(ctx, ctx.namespace or _meta(view).get("namespace") or "default"):
            return []
        constraints = defaults.default_constraints_for(view, ctx.snapshot, ctx.settings.spread)
    except Exception:
        log.exception("default constraints failed for pod %r", _meta(pod).get("name"))
        return [
            f"{_CONSTRAINTS_PATH}: default constraints not injected because of an "
            "internal error in the cluster model"
        ]
    if constraints:
        pod["spec"]["topologySpreadConstraints"] = constraints
    return []


def annotate_placement(pod: RawObj, ctx: MutationContext) -> list[str]:
    """Write topospread.io/selected-node and topospread.io/placement on a created Pod
    in a dry run (request.dryRun) or carrying topospread.io/dry-run: "true".

    The pod is placed as the earlier steps left it: defaults injected, selectors
    merged. Deterministic: a reinvoked webhook writes the same values.
    """
    from webhook.scheduler import placement

    if not _created_pod(pod, ctx) or not wants_dry_run(pod, ctx.dry_run):
        return []
    if ctx.snapshot is None:
        return [f"{_PLACEMENT_PATH}: placement annotations not written: {_NO_STATE}"]
    try:
        decision = placement.place(
            as_created(pod, ctx.namespace), ctx.snapshot, ctx.settings.spread
        )
        written = placement_annotations(decision)
    except Exception:
        log.exception("placement failed for pod %r", _meta(pod).get("name"))
        return [
            f"{_PLACEMENT_PATH}: placement annotations not written because of an "
            "internal error in the cluster model"
        ]
    meta = pod.get("metadata")
    if not isinstance(meta, dict):
        meta = pod["metadata"] = {}
    annotations = meta.get("annotations")
    if annotations is None:
        annotations = meta["annotations"] = {}
    if isinstance(annotations, dict):  # any other type is the API server's to reject
        annotations.update(written)
    return []
