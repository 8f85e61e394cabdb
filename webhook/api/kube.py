"""Raw Kubernetes JSON: the types we read and where each kind keeps its pod template.

Objects stay plain dicts (never client model classes: they drop unknown fields).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RawObj = dict[str, Any]

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
    metadata = node.get("metadata") if node.get("metadata") is not None else {}
    spec = node.get("spec") if node.get("spec") is not None else {}
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        return None
    keys = TEMPLATE_PATHS[kind]
    spec_path = ".".join((*keys, "spec"))
    pointer = "".join("/" + k for k in keys)
    return PodTemplate(
        kind=kind, metadata=metadata, spec=spec, spec_path=spec_path, pointer=pointer
    )


def json_pointer_escape(token: str) -> str:
    """Escape one JSON Pointer token (RFC 6901): '~' -> '~0', '/' -> '~1'."""
    return token.replace("~", "~0").replace("/", "~1")
