"""helper.DefaultSelector (pkg/scheduler/framework/plugins/helper/spread.go).

The selector kube-scheduler gives default topology spread constraints: the merged
selectors of the Services in the pod's namespace that select the pod, plus the
selector of the pod's controller when it is a ReplicationController, ReplicaSet or
StatefulSet found in the same namespace. A pod that selector leaves empty (no such
Service nor controller) gets no default at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from webhook.api.kube import RawObj, controller_of, meta, pod_namespace, spec
from webhook.api.labels import selector_from_set, selector_requirements
from webhook.scheduler.framework.types import Reads

__all__ = [
    "READS",
    "WorkloadSnapshot",
    "controller_reference",
    "default_selector",
    "find_controller",
]

# What DefaultSelector lists: the Services and the controllers whose selectors it merges.
READS = Reads(kinds=("Service", "ReplicationController", "ReplicaSet", "StatefulSet"))

# The owner kinds DefaultSelector reads, by (apiVersion, kind) of the controller
# reference, and the Snapshot attribute listing them.
_OWNER_KINDS = {
    ("v1", "ReplicationController"): "replicationcontrollers",
    ("apps/v1", "ReplicaSet"): "replicasets",
    ("apps/v1", "StatefulSet"): "statefulsets",
}
_ATTRIBUTES = {kind: attribute for (_, kind), attribute in _OWNER_KINDS.items()}


class WorkloadSnapshot(Protocol):
    """What DefaultSelector reads from snapshot.Snapshot: objects by namespace."""

    services: dict[str, list[RawObj]]
    replicasets: dict[str, list[RawObj]]
    statefulsets: dict[str, list[RawObj]]
    replicationcontrollers: dict[str, list[RawObj]]


def _string_map(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    out = {k: "" if v is None else v for k, v in value.items()}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in out.items()):
        return None  # not a map of strings: read as no selector
    return out


def _inpod_namespace(snapshot: Any, attribute: str, namespace: str) -> Iterable[RawObj]:
    by_namespace = getattr(snapshot, attribute, None)
    if not isinstance(by_namespace, dict):
        return ()
    objects = by_namespace.get(namespace)
    return objects if isinstance(objects, list) else ()


def _services_label_set(pod: RawObj, snapshot: Any) -> dict[str, str]:
    """Merged spec.selector of the Services in the pod's namespace that select it.

    Port of helper/spread.go: GetPodServices (their selectors merged).
    """
    pod_labels = meta(pod).get("labels")
    labels = pod_labels if isinstance(pod_labels, dict) else {}
    merged: dict[str, str] = {}
    for service in _inpod_namespace(snapshot, "services", pod_namespace(pod)):
        selector = _string_map(spec(service).get("selector"))
        # A Service without a selector selects nothing, not everything.
        if selector is None:
            continue
        if selector_from_set(selector)(labels):
            merged.update(selector)
    return merged


def _find(objects: Iterable[RawObj], name: str) -> RawObj | None:
    for obj in objects:
        if meta(obj).get("name") == name:
            return obj
    return None


def controller_reference(pod: RawObj) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the pod's controller when DefaultSelector reads its
    selector (a ReplicationController, ReplicaSet or StatefulSet); None otherwise."""
    owner = controller_of(pod)
    if owner is None:
        return None
    api_version, kind, name = owner.get("apiVersion"), owner.get("kind"), owner.get("name")
    if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
        return None
    if (api_version, kind) not in _OWNER_KINDS:
        return None
    return kind, pod_namespace(pod), name


def find_controller(
    pod: RawObj, snapshot: WorkloadSnapshot | Any
) -> tuple[str, RawObj] | None:
    """The kind of the pod's controller and the controller as the snapshot holds it,
    when DefaultSelector reads it; None when it reads none or the snapshot lacks it."""
    reference = controller_reference(pod)
    if reference is None:
        return None
    kind, namespace, name = reference
    found = _find(_inpod_namespace(snapshot, _ATTRIBUTES[kind], namespace), name)
    return None if found is None else (kind, found)


def default_selector(pod: RawObj, snapshot: WorkloadSnapshot | Any) -> RawObj | None:
    """helper.DefaultSelector as a metav1.LabelSelector; None when it selects nothing.

    matchLabels holds the Service and ReplicationController selectors (merged,
    later ones winning a shared key, as labels.Merge); the ReplicaSet or
    StatefulSet selector adds its requirements, kept as matchLabels when they do
    not collide with a key already there, otherwise as matchExpressions.

    Port of helper/spread.go: DefaultSelector.
    """
    if not isinstance(pod, dict):
        return None
    match_labels = _services_label_set(pod, snapshot)
    expressions: list[RawObj] = []
    found = find_controller(pod, snapshot)
    if found is not None:
        kind, controller = found
        if kind == "ReplicationController":
            rc_selector = _string_map(spec(controller).get("selector"))
            match_labels.update(rc_selector or {})
        else:
            # LabelSelectorAsSelector; a nil or malformed selector adds nothing.
            requirements = selector_requirements(spec(controller).get("selector"))
            for key, operator, values in requirements or ():
                if operator == "In" and len(values) == 1 and key not in match_labels:
                    match_labels[key] = values[0]
                    continue
                expression: RawObj = {"key": key, "operator": operator}
                if operator in ("In", "NotIn"):
                    expression["values"] = list(values)
                expressions.append(expression)
    if not match_labels and not expressions:
        return None
    selector: RawObj = {}
    if match_labels:
        selector["matchLabels"] = dict(sorted(match_labels.items()))
    if expressions:
        selector["matchExpressions"] = expressions
    return selector
