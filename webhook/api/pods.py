"""What every layer asks of a pod, answered once: is it Ready, and its "namespace/name".

Pure, on raw JSON. The scheduler, the controllers' ports and the audit all use these
definitions; none of them writes its own.
"""

from __future__ import annotations

from webhook.api.kube import RawObj, as_dict, meta, pod_namespace

__all__ = ["is_ready", "pod_key", "ready_condition"]


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


def pod_key(pod: RawObj) -> str:
    """ "namespace/name" of a pod: how every report, log line and key names one (a pod
    read from a file without a namespace lives in "default"). A pod not created yet
    has no name: its generateName stands in (what admission sees of a controller's
    pod)."""
    m = meta(pod)
    name = m.get("name") or m.get("generateName") or ""
    return f"{pod_namespace(pod)}/{name}"
