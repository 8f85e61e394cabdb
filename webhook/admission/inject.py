"""The default-constraint injection step of /mutate.

A created Pod without topologySpreadConstraints gets the constraints kube-scheduler
would apply to it by default (PodTopologySpread's default_constraints_for), made
explicit. A pure step of the mutation pipeline (mutation.py): it edits the
pipeline's private copy of the pod and returns warnings, and reads the Snapshot the
caller holds under the cluster source's read lock, never fetches it.

Cluster state never blocks a pod: without a snapshot (no source, source not synced)
or when the model raises, the step changes nothing, says so in a warning and logs the
error; the other steps (the matchLabelKeys merge) still apply.
"""

from __future__ import annotations

import logging
from typing import Any

from webhook.admission.annotate import NO_STATE
from webhook.admission.context import MutationContext
from webhook.api.kube import NAMESPACE_NAME_LABEL, RawObj, as_created, meta
from webhook.api.labels import selector_matches
from webhook.scheduler.placement import (
    controller_reference,
    default_constraints_for,
    defaults_for_args,
    find_controller,
)

__all__ = [
    "INJECT_ANNOTATION",
    "awaited_controller",
    "inject_defaults",
    "injection_wanted",
    "namespace_labels",
]

log = logging.getLogger("topospread.inject")

# Per-pod opt-out: `topospread.io/inject: "false"` keeps the pod as written.
INJECT_ANNOTATION = "topospread.io/inject"

_CONSTRAINTS_PATH = "spec.topologySpreadConstraints"


def namespace_labels(snapshot: Any, namespace: str) -> dict[str, str]:
    """The labels of `namespace` as far as the cluster state knows them.

    From the Snapshot's Namespace objects (`namespaces`, by name). A namespace
    the state does not hold (a snapshot file without Namespaces) still has the
    label kube-apiserver puts on every namespace, kubernetes.io/metadata.name.
    """
    known = getattr(snapshot, "namespaces", None)
    found = known.get(namespace) if isinstance(known, dict) else None
    labels = meta(found).get("labels")
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
    if not ctx.created_pod(pod) or not ctx.settings.inject_defaults:
        return False
    spec = pod.get("spec")
    if not isinstance(spec, dict) or spec.get("nodeName"):
        return False
    # Absent, null or [] all mean "none" to the scheduler; anything else is the pod's own
    # (or malformed, which validation reports): left alone.
    if spec.get("topologySpreadConstraints") not in (None, []):
        return False
    annotations = meta(pod).get("annotations")
    if isinstance(annotations, dict) and annotations.get(INJECT_ANNOTATION) == "false":
        return False
    return bool(defaults_for_args(ctx.settings.spread))


def awaited_controller(pod: RawObj, ctx: MutationContext) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the controller whose selector the defaults of this pod
    would read (helper.DefaultSelector), when defaults may be injected; else None.

    A ReplicaSet's first pods reach /mutate moments after the ReplicaSet itself was
    created, possibly before the webhook's watch has delivered it: the server waits a
    moment for it (server.app) rather than work out defaults without its selector.
    """
    if not injection_wanted(pod, ctx):
        return None
    return controller_reference(as_created(pod, ctx.namespace))


def _namespace_selected(ctx: MutationContext, namespace: str) -> bool:
    selector = ctx.settings.inject_namespace_selector
    if selector is None:
        return True
    return selector_matches(selector, namespace_labels(ctx.snapshot, namespace))


def inject_defaults(pod: RawObj, ctx: MutationContext) -> list[str]:
    """Write the default constraints kube-scheduler would apply into a created Pod.

    The constraints are default_constraints_for the pod as created (in the
    request's namespace), against the current Services and controllers. A pod
    DefaultSelector finds nothing for gets nothing, as upstream.
    """
    if not injection_wanted(pod, ctx):
        return []
    if ctx.snapshot is None:
        return [f"{_CONSTRAINTS_PATH}: default constraints not injected: {NO_STATE}"]
    view = as_created(pod, ctx.namespace)
    try:
        if not _namespace_selected(ctx, ctx.namespace or meta(view).get("namespace") or "default"):
            return []
        constraints = default_constraints_for(view, ctx.snapshot, ctx.settings.spread)
        missing = controller_reference(view)
        if find_controller(view, ctx.snapshot) is not None:
            missing = None
    except Exception:
        log.exception("default constraints failed for pod %r", meta(pod).get("name"))
        return [
            f"{_CONSTRAINTS_PATH}: default constraints not injected because of an "
            "internal error in the cluster model"
        ]
    if constraints:
        pod["spec"]["topologySpreadConstraints"] = constraints
    if missing is not None:
        kind, _, name = missing
        return [
            f"{_CONSTRAINTS_PATH}: default constraints worked out without the selector of "
            f"the pod's {kind} {name!r}: the cluster state does not hold it (yet)"
        ]
    return []
