"""Raw Kubernetes JSON: the types we read and where each kind keeps its pod template.

Objects stay plain dicts (never client model classes: they drop unknown fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RawObj = dict[str, Any]

# Well-known node labels (k8s.io/api/core/v1 well_known_labels.go), defined once.
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
WELL_KNOWN_TOPOLOGY_KEYS = (HOSTNAME, ZONE, REGION)
# kube-apiserver sets this label on every Namespace (v1.21+), to its name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# Where each handled kind keeps its pod metadata and spec, as a list of keys
# from the object root. An empty tuple means the object itself is the pod.
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "PodTemplate": ("template",),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}

HANDLED_KINDS = frozenset(TEMPLATE_PATHS)


@dataclass(frozen=True)
class PodTemplate:
    """The pod part of an object: its metadata and spec dicts and where they live.

    `spec_path` is the dotted field path of the pod spec as kube-apiserver
    prints it ("spec" for a Pod, "spec.template.spec" for a Deployment);
    `pointer` is the JSON Pointer of the pod template root ("" for a Pod,
    "/spec/template" for a Deployment), for building patches.
    """

    kind: str
    metadata: RawObj
    spec: RawObj
    spec_path: str
    pointer: str


def pod_template(obj: RawObj) -> PodTemplate | None:
    """Locate the pod metadata and spec inside `obj`, or None when absent or malformed.

    A missing metadata or spec on the way reads as an empty dict; a value of
    the wrong type anywhere on the path returns None (the caller reports it).
    """
    if not isinstance(obj, dict):
        return None
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in TEMPLATE_PATHS:
        return None
    node: Any = obj
    for key in TEMPLATE_PATHS[kind]:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            node = {}
        if not isinstance(node, dict):
            return None
    return _template_in(node, kind, TEMPLATE_PATHS[kind])


def _template_in(node: RawObj, kind: str, path: tuple[str, ...]) -> PodTemplate | None:
    """The PodTemplate whose metadata and spec `node` (found at `path`) holds: an absent
    one reads as {}, one of the wrong type gives None."""
    metadata = node.get("metadata") if node.get("metadata") is not None else {}
    spec = node.get("spec") if node.get("spec") is not None else {}
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        return None
    return PodTemplate(
        kind=kind,
        metadata=metadata,
        spec=spec,
        spec_path=".".join((*path, "spec")),
        pointer="".join("/" + json_pointer_escape(k) for k in path),
    )


def json_pointer_escape(token: str) -> str:
    """Escape one JSON Pointer token (RFC 6901): '~' -> '~0', '/' -> '~1'."""
    return token.replace("~", "~0").replace("/", "~1")


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a dict, else an empty one: raw JSON read without trusting its types."""
    return value if isinstance(value, dict) else {}


def meta(obj: Any) -> dict[str, Any]:
    """An object's metadata, or {} when absent or not an object."""
    return as_dict(obj.get("metadata")) if isinstance(obj, dict) else {}


def spec(obj: Any) -> dict[str, Any]:
    """An object's spec, or {} when absent or not an object."""
    return as_dict(obj.get("spec")) if isinstance(obj, dict) else {}


def string_labels(labels: Any) -> dict[str, str]:
    """The usable string labels of a metadata.labels value; anything else reads as no label."""
    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def as_created(pod: RawObj, namespace: str) -> RawObj:
    """The pod with metadata.namespace set to the request's namespace.

    A pod sent to /api/v1/namespaces/<ns>/pods may omit its namespace
    (kubernetes#88282); the model reads it from the object, so it is filled in on a
    shallow view, never on the pod being patched.
    """
    m = meta(pod)
    if not namespace or m.get("namespace") == namespace:
        return pod
    return {**pod, "metadata": {**m, "namespace": namespace}}


def controller_of(obj: RawObj) -> dict[str, Any] | None:
    """The first ownerReference marked `controller: true`, None when there is none.

    Port of meta/v1/controller_ref.go: GetControllerOf.
    """
    refs = meta(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def named_controller_of(obj: RawObj) -> dict[str, Any] | None:
    """controller_of, when that reference names its owner (a non-empty kind and name);
    None otherwise.

    The audit keys a workload by its controller's kind and name: a reference naming
    neither (which no API server admits: ValidateOwnerReferences) leaves the pod a
    workload of its own rather than one named "None"."""
    ref = controller_of(obj)
    if ref is None:
        return None
    kind, name = ref.get("kind"), ref.get("name")
    if isinstance(kind, str) and kind and isinstance(name, str) and name:
        return ref
    return None


def pod_namespace(pod: RawObj) -> str:
    """The pod's namespace; a pod read from a file without one lives in "default"."""
    ns = meta(pod).get("namespace")
    return ns if isinstance(ns, str) and ns else "default"


def pod_labels(pod: RawObj) -> dict[str, str]:
    """The pod's labels, {} when absent or not a mapping."""
    labels = meta(pod).get("labels")
    return labels if isinstance(labels, dict) else {}


def pod_template_at(obj: RawObj, path: tuple[str, ...]) -> PodTemplate | None:
    """pod_template for a kind declared elsewhere (a custom workload) whose pod template
    sits at `path` (keys from the object root); None when absent or malformed."""
    if not isinstance(obj, dict) or not path:
        return None
    kind = obj.get("kind")
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return None
        if not isinstance(node, dict):
            return None
    return _template_in(node, str(kind), path)
