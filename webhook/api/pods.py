"""What every layer asks of a pod, answered once: is it Ready, and its "namespace/name".

Pure, on raw JSON. The scheduler, the controllers' ports and the audit all use these
definitions; none of them writes its own.
"""

from __future__ import annotations

from webhook.api.kube import RawObj, as_dict

__all__ = ["is_ready", "ready_condition"]


def ready_condition(pod: RawObj) -> RawObj | None:
    """The pod's Ready condition, None when it reports none.

    Port of pkg/api/v1/pod/util.go: GetPodReadyCondition (the first condition of
    type Ready)."""
    conditions = as_dict(pod.get("status")).get("conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, dict) and c.get("type") == "Ready":
            return c
    return None


def is_ready(pod: RawObj) -> bool:
    """Its Ready condition's status is "True"; a pod reporting no Ready condition is not
    Ready, whatever its phase.

    Port of pkg/api/v1/pod/util.go: IsPodReady, which the ReplicaSet controller's
    deletion order (controller_utils.go), the disruption controller's healthy count
    (disruption.go: countHealthyPods) and the Eviction API (eviction.go) all read."""
    c = ready_condition(pod)
    return c is not None and c.get("status") == "True"
