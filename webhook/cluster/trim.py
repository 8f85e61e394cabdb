"""Trimming cluster objects down to the fields the scheduling model reads.

A full Pod from the API server weighs 5-20 KiB as JSON (managedFields, env,
probes, volumes, conditions); the model needs a few hundred bytes of it. What
stays, per kind (everything else is dropped; docs/cluster-state.md says which
plugin reads each field):

    every kind    kind, apiVersion, metadata.{name, namespace, uid, resourceVersion}
    Node          metadata.labels, spec.{taints, unschedulable}, status.allocatable,
                  status.images[].{names, sizeBytes}
    Pod           metadata.{labels, ownerReferences (controller fields), deletionTimestamp},
                  spec.{nodeName, overhead, resources (pod-level requests),
                  affinity.{podAffinity, podAntiAffinity},
                  volumes[] backed by a claim or a disk (VOLUME_SOURCES, their
                  identifying fields), containers[].{name, resources.requests,
                  ports[] with a hostPort: {hostPort, hostIP, protocol}},
                  initContainers[].{name, restartPolicy, resources.requests, ports
                  likewise}}, status.phase, and the in-place resize state that can
                  change a pod's requests (container statuses whose requests differ
                  from the spec's, the PodResizePending condition)
    Service       spec.selector
    Namespace     metadata.labels (injectNamespaceSelector, namespaceSelector of pod
                  affinity terms)
    ReplicaSet, StatefulSet, ReplicationController   spec.selector
    PersistentVolume   metadata.{labels, deletionTimestamp, the beta storage-class
                  annotation}, spec.{nodeAffinity, storageClassName, claimRef.{name,
                  namespace, uid}, accessModes, volumeMode, capacity.storage,
                  csi.{driver, volumeHandle}, the in-tree disk sources' identifying
                  fields}, status.phase
    PersistentVolumeClaim   metadata.{deletionTimestamp, ownerReferences (controller
                  fields), the annotations: beta storage-class, bind-completed,
                  selected-node}, spec.{volumeName, storageClassName, accessModes,
                  volumeMode, resources.requests.storage, selector}, status.phase
    StorageClass  provisioner, volumeBindingMode, allowedTopologies
    CSINode       spec.drivers[].{name, nodeID, allocatable.count, topologyKeys}
    PodDisruptionBudget   spec.{minAvailable, maxUnavailable, selector,
                  unhealthyPodEvictionPolicy}, status.{disruptionsAllowed,
                  currentHealthy, desiredHealthy, expectedPods, disruptedPods}
    PriorityClass value, globalDefault, preemptionPolicy

An existing pod's nodeSelector, node affinity and tolerations are not kept: the
model filters nodes for the incoming pod (read from the AdmissionReview); of the
pods already bound it reads labels, namespace, node, phase, requests, pod
(anti-)affinity terms, host ports and volumes.

Memory: strings that repeat across objects (namespaces, node names, label
keys and values, quantities, image names) are interned, so the many copies a
watch stream decodes collapse into one. Sharing whole sub-structures between
pods was tried and dropped: the Snapshot keeps its own light view of a pod, so
the trimmed pod is garbage once applied and sharing only cost CPU.
"""

from __future__ import annotations

import sys
from typing import Any

from webhook.api.kube import RawObj
from webhook.cluster.needs import CATALOG, NEEDED

__all__ = ["API_VERSIONS", "VOLUME_SOURCES", "trim"]

# The kinds a cluster source lists and watches (cluster/needs.py), with their apiVersion.
API_VERSIONS: dict[str, str] = {k.kind: k.api_version for k in NEEDED}
# Every kind trim knows, for an object that does not name its apiVersion.
_KNOWN_VERSIONS: dict[str, str] = {k.kind: k.api_version for k in CATALOG.values()}

_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller")
_META_FIELDS = ("name", "namespace", "uid", "resourceVersion")
_RESIZE_CONDITION = "PodResizePending"
# storage helpers GetPersistentVolumeClass / GetPersistentVolumeClaimClass read it first.
_BETA_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# A claim's annotations VolumeBinding reads: its class, whether the PV controller has
# finished binding it, and the node its provisioning was started for.
_CLAIM_ANNOTATIONS = (
    _BETA_CLASS_ANNOTATION,
    "pv.kubernetes.io/bind-completed",
    "volume.kubernetes.io/selected-node",
)

# Volume source -> the fields of it a plugin reads: the claim a volume names
# (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits: claimName; an
# ephemeral volume's claim is "<pod>-<volume name>", so its presence is enough), the
# disk identity VolumeRestrictions compares (gcePersistentDisk, awsElasticBlockStore,
# rbd, iscsi, with readOnly where it matters), and what NodeVolumeLimits' CSI
# translation of an in-tree disk reads (azureDisk, cinder, csi driver).
VOLUME_SOURCES: dict[str, tuple[str, ...]] = {
    "persistentVolumeClaim": ("claimName",),
    "ephemeral": (),
    "csi": ("driver", "volumeHandle"),
    "gcePersistentDisk": ("pdName", "readOnly"),
    "awsElasticBlockStore": ("volumeID",),
    "azureDisk": ("diskName", "diskURI"),
    "cinder": ("volumeID",),
    "rbd": ("monitors", "pool", "image", "readOnly"),
    "iscsi": ("iqn", "readOnly"),
}
# Of those, the ones a PersistentVolume may carry (a claim is a pod's, not a PV's).
_PV_SOURCES = tuple(k for k in VOLUME_SOURCES if k not in ("persistentVolumeClaim", "ephemeral"))
_PORT_FIELDS = ("hostPort", "hostIP", "protocol")


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


def _picked(obj: Any, fields: tuple[str, ...]) -> RawObj:
    """The given fields of a mapping that are set (strings interned); {} for a non-mapping."""
    if not isinstance(obj, dict):
        return {}
    return {f: _intern(obj[f]) for f in fields if obj.get(f) is not None}


def _host_ports(ports: Any) -> list[RawObj]:
    """The ports that claim a host port (NodePorts reads hostPort, hostIP, protocol)."""
    if not isinstance(ports, list):
        return []
    return [_picked(p, _PORT_FIELDS) for p in ports if isinstance(p, dict) and p.get("hostPort")]


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
    ports = _host_ports(container.get("ports"))
    if ports:
        out["ports"] = ports
    return out


def _containers(containers: Any, init: bool) -> Any:
    if not isinstance(containers, list):
        return containers
    return [_container(c, init) for c in containers]


def _volume(volume: Any) -> RawObj | None:
    """A pod volume reduced to its name and the source a volume plugin reads; None for
    a volume none reads (configMap, secret, emptyDir, projected token, ...)."""
    if not isinstance(volume, dict):
        return None
    out: RawObj | None = None
    for source, fields in VOLUME_SOURCES.items():
        if source in volume:
            out = out or {"name": _intern(volume.get("name"))}
            value = volume[source]
            out[source] = _picked(value, fields) if isinstance(value, dict) else value
    return out


def _volumes(volumes: Any) -> list[RawObj]:
    if not isinstance(volumes, list):
        return []
    return [v for v in map(_volume, volumes) if v is not None]


def _pod_affinity(affinity: Any) -> RawObj | None:
    """spec.affinity without nodeAffinity: only the incoming pod's node affinity counts."""
    if not isinstance(affinity, dict):
        return None
    kept = {k: affinity[k] for k in ("podAffinity", "podAntiAffinity") if affinity.get(k)}
    return kept or None


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
        affinity = _pod_affinity(spec.get("affinity"))
        if affinity is not None:
            new_spec["affinity"] = affinity
        volumes = _volumes(spec.get("volumes"))
        if volumes:
            new_spec["volumes"] = volumes
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
    if isinstance(status, dict):
        new_status: RawObj = {}
        if status.get("allocatable") is not None:
            new_status["allocatable"] = _interned_map(status["allocatable"])
        images = _images(status.get("images"))
        if images:
            new_status["images"] = images
        if new_status:
            out["status"] = new_status


def _images(images: Any) -> list[RawObj]:
    """status.images as ImageLocality reads them: every name of an image, and its size."""
    if not isinstance(images, list):
        return []
    out = []
    for image in images:
        if not isinstance(image, dict):
            continue
        names = image.get("names")
        kept: RawObj = {"names": [_intern(n) for n in names] if isinstance(names, list) else names}
        if image.get("sizeBytes") is not None:
            kept["sizeBytes"] = image["sizeBytes"]
        out.append(kept)
    return out


def _annotations(meta: Any, out: RawObj, keys: tuple[str, ...]) -> None:
    """Keep these annotations (those present, whatever their value)."""
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return
    kept = {k: _intern(annotations[k]) for k in keys if annotations.get(k) is not None}
    if kept:
        out["metadata"]["annotations"] = kept


def _phase(obj: RawObj, out: RawObj) -> None:
    status = obj.get("status")
    if isinstance(status, dict) and status.get("phase") is not None:
        out["status"] = {"phase": _intern(status["phase"])}


def _deletion(meta: Any, out: RawObj) -> None:
    if isinstance(meta, dict) and meta.get("deletionTimestamp") is not None:
        out["metadata"]["deletionTimestamp"] = meta["deletionTimestamp"]


def _storage(value: Any) -> RawObj | None:
    """A resource list reduced to its storage quantity."""
    if isinstance(value, dict) and value.get("storage") is not None:
        return {"storage": _intern(value["storage"])}
    return None


def _persistent_volume(obj: RawObj, out: RawObj) -> None:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get("labels"):
        out["metadata"]["labels"] = _interned_map(meta["labels"])
    _deletion(meta, out)
    _annotations(meta, out, (_BETA_CLASS_ANNOTATION,))
    spec = obj.get("spec")
    new_spec: RawObj = {}
    if isinstance(spec, dict):
        for key in ("nodeAffinity", "accessModes"):
            if spec.get(key) is not None:
                new_spec[key] = spec[key]
        for key in ("storageClassName", "volumeMode"):
            if spec.get(key) is not None:
                new_spec[key] = _intern(spec[key])
        ref = _picked(spec.get("claimRef"), ("name", "namespace", "uid"))
        if ref:
            new_spec["claimRef"] = ref
        capacity = _storage(spec.get("capacity"))
        if capacity is not None:
            new_spec["capacity"] = capacity
        for source in _PV_SOURCES:
            if isinstance(spec.get(source), dict):
                new_spec[source] = _picked(spec[source], VOLUME_SOURCES[source])
    out["spec"] = new_spec
    _phase(obj, out)


def _persistent_volume_claim(obj: RawObj, out: RawObj) -> None:
    meta = obj.get("metadata")
    _deletion(meta, out)
    _annotations(meta, out, _CLAIM_ANNOTATIONS)
    owners = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if isinstance(owners, list):
        # An ephemeral volume's claim must be controlled by its pod (VolumeBinding).
        controller = [
            _picked(o, _OWNER_FIELDS) for o in owners if isinstance(o, dict) and o.get("controller")
        ]
        if controller:
            out["metadata"]["ownerReferences"] = controller
    spec = obj.get("spec")
    new_spec: RawObj = {}
    if isinstance(spec, dict):
        for key in ("volumeName", "storageClassName", "volumeMode"):
            if spec.get(key) is not None:
                new_spec[key] = _intern(spec[key])
        for key in ("accessModes", "selector"):
            if spec.get(key) is not None:
                new_spec[key] = spec[key]
        resources = spec.get("resources")
        requests = _storage(resources.get("requests")) if isinstance(resources, dict) else None
        if requests is not None:
            new_spec["resources"] = {"requests": requests}
    out["spec"] = new_spec
    # Lost: bound to a PV that no longer exists (VolumeBinding's PreFilter).
    _phase(obj, out)


def _storage_class(obj: RawObj, out: RawObj) -> None:
    # StorageClass keeps its fields at the top level (it has no spec).
    for key in ("provisioner", "volumeBindingMode"):
        if obj.get(key) is not None:
            out[key] = _intern(obj[key])
    if obj.get("allowedTopologies") is not None:
        out["allowedTopologies"] = obj["allowedTopologies"]


def _csi_node(obj: RawObj, out: RawObj) -> None:
    spec = obj.get("spec")
    drivers = spec.get("drivers") if isinstance(spec, dict) else None
    kept = []
    for driver in drivers if isinstance(drivers, list) else ():
        if not isinstance(driver, dict):
            continue
        d = _picked(driver, ("name", "nodeID"))
        allocatable = driver.get("allocatable")
        if isinstance(allocatable, dict) and allocatable.get("count") is not None:
            d["allocatable"] = {"count": allocatable["count"]}
        keys = driver.get("topologyKeys")
        if isinstance(keys, list):
            d["topologyKeys"] = [_intern(k) for k in keys]
        kept.append(d)
    out["spec"] = {"drivers": kept}


_BUDGET_SPEC = ("minAvailable", "maxUnavailable", "selector", "unhealthyPodEvictionPolicy")
# What the disruption controller last wrote: preemption reads disruptionsAllowed and
# disruptedPods as upstream's filterPodsWithPDBViolation does; the drills recompute the
# rest from the pods.
_BUDGET_STATUS = (
    "disruptionsAllowed",
    "currentHealthy",
    "desiredHealthy",
    "expectedPods",
    "disruptedPods",
)


def _budget(obj: RawObj, out: RawObj) -> None:
    out["spec"] = _picked(obj.get("spec"), _BUDGET_SPEC)
    if isinstance(obj.get("status"), dict):
        out["status"] = _picked(obj["status"], _BUDGET_STATUS)


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
        "apiVersion": _intern(obj.get("apiVersion") or _KNOWN_VERSIONS.get(kind or "", "v1")),
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
    elif kind == "PersistentVolume":
        _persistent_volume(obj, out)
    elif kind == "PersistentVolumeClaim":
        _persistent_volume_claim(obj, out)
    elif kind == "StorageClass":
        _storage_class(obj, out)
    elif kind == "CSINode":
        _csi_node(obj, out)
    elif kind == "PodDisruptionBudget":
        _budget(obj, out)
    elif kind == "PriorityClass":
        out.update(_picked(obj, ("value", "globalDefault", "preemptionPolicy")))
    return out
