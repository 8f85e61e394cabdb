"""Trimming cluster objects down to the fields the scheduling model reads.

A full Pod from the API server weighs 5-20 KiB as JSON (managedFields, env,
probes, volumes, conditions); the model needs a few hundred bytes of it. What
stays, per kind (everything else is dropped):

    every kind    kind, apiVersion, metadata.{name, namespace, uid, resourceVersion}
    Node          metadata.labels, spec.{taints, unschedulable}, status.allocatable
    Pod           metadata.{labels, ownerReferences (controller fields), deletionTimestamp},
                  spec.{nodeName, overhead, resources (pod-level requests),
                  containers[].{name, resources.requests},
                  initContainers[].{name, restartPolicy, resources.requests}},
                  status.phase, and the in-place resize state that can change a pod's
                  requests (container statuses whose requests differ from the spec's,
                  the PodResizePending condition)
    Service       spec.selector
    Namespace     metadata.labels (for injectNamespaceSelector)
    ReplicaSet, StatefulSet, ReplicationController   spec.selector

An existing pod's nodeSelector, affinity and tolerations are not kept: the
model filters nodes for the incoming pod (read from the AdmissionReview) and
only counts existing pods by labels, namespace, node and phase.

Memory: strings that repeat across objects (namespaces, node names, label
keys and values, quantities) are interned, so the many copies a watch stream
decodes collapse into one. Sharing whole sub-structures between pods was
tried and dropped: the Snapshot keeps its own light view of a pod, so the
trimmed pod is garbage once applied and sharing only cost CPU.
"""

from __future__ import annotations

import sys
from typing import Any

from webhook.api.kube import RawObj
from webhook.cluster.needs import NEEDED

# The kinds a cluster source lists and watches (cluster/needs.py), with their apiVersion.
API_VERSIONS: dict[str, str] = {k.kind: k.api_version for k in NEEDED}

_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller")
_META_FIELDS = ("name", "namespace", "uid", "resourceVersion")
_RESIZE_CONDITION = "PodResizePending"


def _intern(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _interned_map(value: Any) -> Any:
    """A string map (labels, selectors, resource lists) with keys and values interned."""
    if not isinstance(value, dict):
        return value
    return {_intern(k): _intern(v) for k, v in value.items()}


def _metadata(meta: Any) -> RawObj:
    if not isinstance(meta, dict):
        return {}
    out: RawObj = {}
    for key in _META_FIELDS:
        value = meta.get(key)
        if value is not None:
            out[key] = value
    if "namespace" in out:
        out["namespace"] = _intern(out["namespace"])
    return out


def _requests(resources: Any) -> RawObj | None:
    if not isinstance(resources, dict):
        return None
    requests = resources.get("requests")
    if not isinstance(requests, dict) or not requests:
        return None
    return {"requests": _interned_map(requests)}


def _container(container: Any, init: bool) -> Any:
    if not isinstance(container, dict):
        return container
    out: RawObj = {}
    if "name" in container:
        out["name"] = _intern(container["name"])
    if init and container.get("restartPolicy") is not None:
        out["restartPolicy"] = _intern(container["restartPolicy"])
    resources = _requests(container.get("resources"))
    if resources is not None:
        out["resources"] = resources
    return out


def _containers(containers: Any, init: bool) -> Any:
    if not isinstance(containers, list):
        return containers
    return [_container(c, init) for c in containers]


def _status_requests(status: Any) -> tuple[RawObj | None, RawObj | None]:
    """The requests and allocatedResources a container status reports, if any."""
    if not isinstance(status, dict):
        return None, None
    resources = status.get("resources")
    requests = resources.get("requests") if isinstance(resources, dict) else None
    allocated = status.get("allocatedResources")
    return (
        requests if isinstance(requests, dict) else None,
        allocated if isinstance(allocated, dict) else None,
    )


def _resize_statuses(statuses: Any, containers: Any) -> list[RawObj]:
    """Container statuses that can change a pod's requests after an in-place resize.

    kube-scheduler takes, per container, the larger of the spec requests and
    the status' requests and allocatedResources (or only the status ones when
    the resize is infeasible). A status reporting exactly the spec's requests
    changes nothing and is dropped; the others are kept in their API shape.
    """
    if not isinstance(statuses, list):
        return []
    spec_requests: dict[Any, Any] = {}
    if isinstance(containers, list):
        for c in containers:
            if isinstance(c, dict):
                res = c.get("resources")
                req = res.get("requests") if isinstance(res, dict) else None
                spec_requests[c.get("name")] = req or {}
    kept: list[RawObj] = []
    for status in statuses:
        if not isinstance(status, dict) or not isinstance(status.get("resources"), dict):
            continue  # no status resources: the scheduler reads the spec alone
        requests, allocated = _status_requests(status)
        spec = spec_requests.get(status.get("name"), {})
        if (requests or {}) == spec and (allocated is None or allocated == spec):
            continue  # max(spec, spec, spec) is the spec, resize infeasible or not
        out: RawObj = {"name": _intern(status.get("name"))}
        out["resources"] = {"requests": _interned_map(requests)} if requests else {}
        if allocated is not None:
            out["allocatedResources"] = _interned_map(allocated)
        kept.append(out)
    return kept


def _pod(obj: RawObj, out: RawObj) -> None:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        labels = meta.get("labels")
        if labels:
            out["metadata"]["labels"] = _interned_map(labels)
        owners = meta.get("ownerReferences")
        if isinstance(owners, list) and owners:
            trimmed = [
                {k: _intern(o[k]) for k in _OWNER_FIELDS if k in o} if isinstance(o, dict) else o
                for o in owners
            ]
            out["metadata"]["ownerReferences"] = trimmed
        if meta.get("deletionTimestamp") is not None:
            out["metadata"]["deletionTimestamp"] = meta["deletionTimestamp"]

    spec = obj.get("spec")
    new_spec: RawObj = {}
    if isinstance(spec, dict):
        if spec.get("nodeName"):
            new_spec["nodeName"] = _intern(spec["nodeName"])
        for key, init in (("containers", False), ("initContainers", True)):
            if spec.get(key):
                new_spec[key] = _containers(spec[key], init)
        if spec.get("overhead"):
            new_spec["overhead"] = _interned_map(spec["overhead"])
        pod_level = _requests(spec.get("resources"))
        if pod_level is not None:
            new_spec["resources"] = pod_level
    out["spec"] = new_spec

    status = obj.get("status")
    if isinstance(status, dict):
        new_status: RawObj = {}
        if status.get("phase") is not None:
            new_status["phase"] = _intern(status["phase"])
        for key, spec_key in (
            ("containerStatuses", "containers"),
            ("initContainerStatuses", "initContainers"),
        ):
            specs = spec.get(spec_key) if isinstance(spec, dict) else None
            kept = _resize_statuses(status.get(key), specs)
            if kept:
                new_status[key] = kept
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            resize = [
                {"type": c["type"], "status": c.get("status"), "reason": c.get("reason")}
                for c in conditions
                if isinstance(c, dict) and c.get("type") == _RESIZE_CONDITION
            ]
            if resize:
                new_status["conditions"] = resize
        if new_status:
            out["status"] = new_status


def _node(obj: RawObj, out: RawObj) -> None:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("labels"):
        out["metadata"]["labels"] = _interned_map(meta["labels"])
    spec = obj.get("spec")
    if isinstance(spec, dict):
        new_spec: RawObj = {}
        if spec.get("taints"):
            new_spec["taints"] = spec["taints"]
        if spec.get("unschedulable") is not None:
            new_spec["unschedulable"] = spec["unschedulable"]
        if new_spec:
            out["spec"] = new_spec
    status = obj.get("status")
    if isinstance(status, dict) and status.get("allocatable") is not None:
        out["status"] = {"allocatable": _interned_map(status["allocatable"])}


def _selector_holder(obj: RawObj, out: RawObj, kind: str) -> None:
    spec = obj.get("spec")
    selector = spec.get("selector") if isinstance(spec, dict) else None
    if selector is None:
        out["spec"] = {}
        return
    if kind in ("Service", "ReplicationController"):
        # A plain string map for these two kinds; a LabelSelector for the apps kinds.
        selector = _interned_map(selector)
    out["spec"] = {"selector": selector}


def trim(obj: RawObj, kind: str | None = None) -> RawObj:
    """Return a new, smaller object with only the fields the model reads.

    `kind` names the kind when the object lacks it (items of a List response
    carry no kind); `kind` and `apiVersion` are always set on the result.
    The input is not modified. Values of the wrong type are kept as they are:
    the model is robust to them and trimming must never raise.
    """
    kind = kind or obj.get("kind")
    out: RawObj = {
        "kind": _intern(kind) if kind else kind,
        "apiVersion": _intern(obj.get("apiVersion") or API_VERSIONS.get(kind or "", "v1")),
        "metadata": _metadata(obj.get("metadata")),
    }
    if kind == "Pod":
        _pod(obj, out)
    elif kind == "Node":
        _node(obj, out)
    elif kind == "Namespace":
        meta = obj.get("metadata")
        if isinstance(meta, dict) and meta.get("labels"):
            out["metadata"]["labels"] = _interned_map(meta["labels"])
    elif kind in ("Service", "ReplicaSet", "StatefulSet", "ReplicationController"):
        _selector_holder(obj, out, kind)
    return out
