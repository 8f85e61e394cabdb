"""Builders for pod (anti-)affinity terms, Namespaces and the volume kinds, after upstream's
st.MakePod().PodAffinityIn(...) and st.MakePersistentVolume() wrappers.

    with_affinity(make_pod().obj(), "In", "service", "region", ["securityscan"])
    with_affinity(pod, "Exists", "foo", "zone", anti=True, required=False, weight=5)

Every helper returns plain dicts; with_* helpers edit and return the pod they get.
"""

from __future__ import annotations

from typing import Any

RawObj = dict[str, Any]


def affinity_term(
    operator: str, key: str, topology_key: str, values: list[str] | None = None, **extra: Any
) -> RawObj:
    """A PodAffinityTerm selecting `key <operator> values` over `topology_key`."""
    requirement: RawObj = {"key": key, "operator": operator}
    if operator in ("In", "NotIn"):
        requirement["values"] = list(values or [])
    out: RawObj = {
        "labelSelector": {"matchExpressions": [requirement]},
        "topologyKey": topology_key,
    }
    out.update(extra)
    return out


def with_term(
    pod: RawObj, term: RawObj, *, anti: bool = False, required: bool = True, weight: int = 1
) -> RawObj:
    """Append one term to the pod's podAffinity (or podAntiAffinity), required or preferred."""
    side = "podAntiAffinity" if anti else "podAffinity"
    affinity = pod.setdefault("spec", {}).setdefault("affinity", {}).setdefault(side, {})
    if required:
        affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
    else:
        affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
            {"weight": weight, "podAffinityTerm": term}
        )
    return pod


def with_affinity(
    pod: RawObj,
    operator: str,
    key: str,
    topology_key: str,
    values: list[str] | None = None,
    *,
    anti: bool = False,
    required: bool = True,
    weight: int = 1,
    **extra: Any,
) -> RawObj:
    """st.PodAffinityIn / NotIn / Exists and their anti-affinity twins."""
    term = affinity_term(operator, key, topology_key, values, **extra)
    return with_term(pod, term, anti=anti, required=required, weight=weight)


def namespace(name: str, labels: dict[str, str] | None = None) -> RawObj:
    meta: RawObj = {"name": name}
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def node(name: str, labels: dict[str, str] | None = None) -> RawObj:
    """A Node with exactly these labels (no hostname label added)."""
    meta: RawObj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta}


def pvc(
    name: str,
    *,
    volume: str = "",
    storage_class: str | None = None,
    modes: list[str] | None = None,
    size: str = "1Gi",
    ns: str = "default",
) -> RawObj:
    """A PersistentVolumeClaim, bound when `volume` names a PV."""
    spec: RawObj = {
        "accessModes": modes or ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    if volume:
        spec["volumeName"] = volume
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def pv(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    node_in: tuple[str, list[str]] | None = None,
    storage_class: str = "",
    size: str = "1Gi",
    csi: tuple[str, str] | None = None,
    claim: str | None = None,
) -> RawObj:
    """A PersistentVolume; node_in=(key, values) sets a required node affinity."""
    spec: RawObj = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
    }
    if node_in is not None:
        key, values = node_in
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": values}]}
                ]
            }
        }
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    if claim is not None:
        spec["claimRef"] = {"name": claim, "namespace": "default"}
    meta: RawObj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def storage_class(
    name: str,
    *,
    mode: str = "Immediate",
    provisioner: str = "csi.example.com",
    zones: list[str] | None = None,
) -> RawObj:
    obj: RawObj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones is not None:
        obj["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": zones}]}
        ]
    return obj


def csinode(name: str, limits: dict[str, int]) -> RawObj:
    drivers = [{"name": d, "nodeID": name, "allocatable": {"count": c}} for d, c in limits.items()]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": drivers},
    }


def with_volume(pod: RawObj, volume: RawObj) -> RawObj:
    pod.setdefault("spec", {}).setdefault("volumes", []).append(volume)
    return pod


def with_claim(pod: RawObj, claim: str, name: str | None = None) -> RawObj:
    return with_volume(pod, {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}})
