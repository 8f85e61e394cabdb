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
