"""The revisions step of /mutate: a Deployment's pods spread apart from other revisions.

During a rolling update a constraint whose labelSelector matches the pods of every
revision counts old and new pods together: the new pods are placed to balance the
sum, then the ReplicaSet controller deletes old pods by its own topology-blind
ranking, and the new revision is left skewed (under DoNotSchedule a surge pod may
stay Pending and stall the rollout). `pod-template-hash` in matchLabelKeys makes each
pod count only the pods of its own ReplicaSet, as upstream's documentation advises.

With `policy.separateRevisions` on, this step adds that key to the constraints of a
created pod of a Deployment's ReplicaSet. It only writes matchLabelKeys: the merge
step after it (merge.py) then treats the key like any other, in the form the API
server needs (a v1.34+ API server merges it once itself; an older one gets the
webhook's merge, the key moved and recorded).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission.context import MutationContext
from webhook.api.kube import RawObj, controller_of
from webhook.api.names import validate_label_selector
from webhook.validation.advice import REVISION_LABEL, counts_revisions_together

__all__ = ["deployment_pod", "separate_revisions"]


def deployment_pod(pod: RawObj) -> bool:
    """Whether `pod` was made by a Deployment's ReplicaSet: it carries a
    pod-template-hash label (string) and its controller owner is a ReplicaSet of the
    apps group (ownerReference with `controller: true`)."""
    meta = pod.get("metadata")
    if not isinstance(meta, dict):
        return False
    labels = meta.get("labels")
    if not isinstance(labels, dict) or not isinstance(labels.get(REVISION_LABEL), str):
        return False
    ref = controller_of(pod)
    return (
        ref is not None
        and ref.get("kind") == "ReplicaSet"
        and isinstance(ref.get("apiVersion"), str)
        and ref["apiVersion"].startswith("apps/")
    )


def _wants_key(constraint: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether pod-template-hash should be added to this constraint's matchLabelKeys.

    Not when the key is already there; not when labelSelector is null or malformed
    (a nil selector counts no pod, and the API forbids matchLabelKeys without one);
    not when labelSelector already names the key (the revisions are the author's
    choice, or the webhook's merge already moved it there; adding it again would be
    rejected as "exists in both"); not when the selector does not select the pod's own
    labels: such a constraint counts other workloads, and narrowing it to this pod's
    revision would leave it counting nothing.
    """
    keys = constraint.get("matchLabelKeys")
    if keys is not None and not isinstance(keys, list):
        return False
    selector = constraint.get("labelSelector")
    if not isinstance(selector, dict):
        return False
    if validate_label_selector(selector, ""):
        # A selector the API rejects is validation's to report; left as written.
        return False
    return counts_revisions_together(constraint, labels)


def separate_revisions(pod: RawObj, ctx: MutationContext) -> list[str]:
    """Append pod-template-hash to the matchLabelKeys of each constraint of a created
    pod of a Deployment's ReplicaSet that lacks it (policy.separateRevisions).

    The constraints the pod was created with and those the injection step made
    explicit alike; only on Pod CREATE (constraints are immutable afterwards). Idempotent:
    a second call finds the key in matchLabelKeys, or in labelSelector once merged.
    """
    if not ctx.settings.separate_revisions or not ctx.created_pod(pod):
        return []
    if not deployment_pod(pod):
        return []
    spec = pod.get("spec")
    constraints = spec.get("topologySpreadConstraints") if isinstance(spec, dict) else None
    if not isinstance(constraints, list):
        return []
    labels = {
        str(k): v for k, v in pod["metadata"]["labels"].items() if isinstance(v, str)
    }
    for constraint in constraints:
        if isinstance(constraint, dict) and _wants_key(constraint, labels):
            keys = constraint.get("matchLabelKeys")
            constraint["matchLabelKeys"] = [*(keys or []), REVISION_LABEL]
    return []
