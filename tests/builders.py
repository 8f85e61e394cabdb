"""Small fluent builders for raw Kubernetes objects, after upstream's st.MakePod().

    make_pod().name("p").namespace("ns").label("foo", "").spread(1, ZONE, DNS, foo_exists).obj()
    make_node().name("n1").label(ZONE, "zone-a").taint("k", "v", "NoSchedule").obj()
    with_affinity(make_pod().obj(), "In", "service", "region", ["securityscan"])
    pod_with({"cpu": "1000", "memory": "2000"}, node="node1"); node_info(node, pods)

The one builder module of the tests. Every builder returns plain dicts, exactly
what the API server would send, except node_info / node_infos, which hold such
dicts in the scheduler's NodeInfo.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.scheduler.framework.snapshot import NodeInfo, bound_pod_requests

RawObj = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
REGION = "topology.kubernetes.io/region"
DNS = "DoNotSchedule"
SA = "ScheduleAnyway"


def selector(match_labels: dict[str, str] | None = None, *exprs: RawObj) -> RawObj:
    """A labelSelector from matchLabels and matchExpressions."""
    out: RawObj = {}
    if match_labels is not None:
        out["matchLabels"] = dict(match_labels)
    if exprs:
        out["matchExpressions"] = [dict(e) for e in exprs]
    return out


def expr(key: str, operator: str, *values: str) -> RawObj:
    """One label selector requirement; Exists/DoesNotExist take no values."""
    out: RawObj = {"key": key, "operator": operator}
    if operator in ("In", "NotIn") or values:
        out["values"] = list(values)
    return out


def exists(key: str) -> RawObj:
    """A labelSelector selecting every pod that has `key`."""
    return selector(None, expr(key, "Exists"))


def constraint(
    max_skew: Any = 1,
    topology_key: Any = ZONE,
    when: Any = DNS,
    label_selector: RawObj | None = None,
    **extra: Any,
) -> RawObj:
    """A topologySpreadConstraint; extra keys pass through as given (minDomains=..., ...)."""
    out: RawObj = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
    if label_selector is not None:
        out["labelSelector"] = label_selector
    out.update(extra)
    return out


class PodBuilder:
    def __init__(self) -> None:
        self._pod: RawObj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
        }

    def name(self, name: str) -> PodBuilder:
        self._pod["metadata"]["name"] = name
        return self

    def generate_name(self, prefix: str) -> PodBuilder:
        self._pod["metadata"].pop("name", None)
        self._pod["metadata"]["generateName"] = prefix
        return self

    def namespace(self, ns: str) -> PodBuilder:
        self._pod["metadata"]["namespace"] = ns
        return self

    def uid(self, uid: str) -> PodBuilder:
        self._pod["metadata"]["uid"] = uid
        return self

    def label(self, key: str, value: str = "") -> PodBuilder:
        self._pod["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> PodBuilder:
        self._pod["metadata"].setdefault("labels", {}).update(labels)
        return self

    def annotation(self, key: str, value: str) -> PodBuilder:
        self._pod["metadata"].setdefault("annotations", {})[key] = value
        return self

    def owner(self, kind: str, name: str, uid: str = "", controller: bool = True) -> PodBuilder:
        api = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1"}.get(kind, "v1")
        self._pod["metadata"].setdefault("ownerReferences", []).append(
            {
                "apiVersion": api,
                "kind": kind,
                "name": name,
                "uid": uid or f"uid-{name}",
                "controller": controller,
            }
        )
        return self

    def node(self, node_name: str) -> PodBuilder:
        self._pod["spec"]["nodeName"] = node_name
        return self

    def terminating(self, at: str = "2026-01-01T00:00:00Z") -> PodBuilder:
        self._pod["metadata"]["deletionTimestamp"] = at
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._pod.setdefault("status", {})["phase"] = phase
        return self

    def ready(self, status: str = "True") -> PodBuilder:
        """Running with a Ready condition of this status ("True", "False", "Unknown")."""
        st = self._pod.setdefault("status", {})
        st["phase"] = "Running"
        st["conditions"] = [{"type": "Ready", "status": status}]
        return self

    def toleration_seconds(
        self, key: str, effect: str, seconds: int | None, operator: str = "Exists"
    ) -> PodBuilder:
        """A toleration of `key` with `effect`, for `seconds` (None: forever)."""
        tol: RawObj = {"key": key, "operator": operator, "effect": effect}
        if seconds is not None:
            tol["tolerationSeconds"] = seconds
        self._pod["spec"].setdefault("tolerations", []).append(tol)
        return self

    def spread(
        self,
        max_skew: Any,
        topology_key: Any,
        when: Any,
        label_selector: RawObj | None = None,
        **extra: Any,
    ) -> PodBuilder:
        self._pod["spec"].setdefault("topologySpreadConstraints", []).append(
            constraint(max_skew, topology_key, when, label_selector, **extra)
        )
        return self

    def constraints(self, constraints: list[RawObj]) -> PodBuilder:
        self._pod["spec"]["topologySpreadConstraints"] = copy.deepcopy(constraints)
        return self

    def node_selector(self, selector_map: dict[str, str]) -> PodBuilder:
        self._pod["spec"]["nodeSelector"] = dict(selector_map)
        return self

    def node_affinity_in(self, key: str, *values: str) -> PodBuilder:
        """Add a required node affinity term `key In values` (ORed with earlier terms)."""
        terms = (
            self._pod["spec"]
            .setdefault("affinity", {})
            .setdefault("nodeAffinity", {})
            .setdefault(
                "requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []}
            )["nodeSelectorTerms"]
        )
        terms.append({"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]})
        return self

    def toleration(
        self, key: str, value: str = "", effect: str = "", operator: str = "Equal"
    ) -> PodBuilder:
        tol: RawObj = {"key": key, "operator": operator}
        if operator == "Equal":
            tol["value"] = value
        if effect:
            tol["effect"] = effect
        self._pod["spec"].setdefault("tolerations", []).append(tol)
        return self

    def priority(self, value: int) -> PodBuilder:
        """spec.priority, as the API server stores it (st.MakePod().Priority)."""
        self._pod["spec"]["priority"] = value
        return self

    def priority_class(self, name: str) -> PodBuilder:
        self._pod["spec"]["priorityClassName"] = name
        return self

    def preemption_policy(self, policy: str) -> PodBuilder:
        self._pod["spec"]["preemptionPolicy"] = policy
        return self

    def start_time(self, at: str) -> PodBuilder:
        self._pod.setdefault("status", {})["startTime"] = at
        return self

    def nominated_node(self, node_name: str) -> PodBuilder:
        self._pod.setdefault("status", {})["nominatedNodeName"] = node_name
        return self

    def condition(self, type_: str, status: str, reason: str = "") -> PodBuilder:
        self._pod.setdefault("status", {}).setdefault("conditions", []).append(
            {"type": type_, "status": status, "reason": reason}
        )
        return self

    def requests(self, **resources: str) -> PodBuilder:
        """Set requests on the first container: requests(cpu="500m", memory="1Gi")."""
        self._pod["spec"]["containers"][0].setdefault("resources", {})["requests"] = dict(resources)
        return self

    def scheduling_gates(self, *names: str) -> PodBuilder:
        """st.MakePod().SchedulingGates([...]): spec.schedulingGates by name."""
        self._pod["spec"]["schedulingGates"] = [{"name": n} for n in names]
        return self

    def scheduler_name(self, name: str) -> PodBuilder:
        self._pod["spec"]["schedulerName"] = name
        return self

    def resource_claim(self, name: str, template: str = "claim-template") -> PodBuilder:
        """A spec.resourceClaims entry made from a ResourceClaimTemplate (DRA)."""
        self._pod["spec"].setdefault("resourceClaims", []).append(
            {"name": name, "resourceClaimTemplateName": template}
        )
        return self

    def obj(self) -> RawObj:
        return copy.deepcopy(self._pod)


class NodeBuilder:
    def __init__(self) -> None:
        self._node: RawObj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}

    def name(self, name: str) -> NodeBuilder:
        self._node["metadata"]["name"] = name
        return self

    def label(self, key: str, value: str = "") -> NodeBuilder:
        self._node["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> NodeBuilder:
        self._node["metadata"].setdefault("labels", {}).update(labels)
        return self

    def zone(self, zone: str) -> NodeBuilder:
        return self.label(ZONE, zone)

    def hostname(self, hostname: str | None = None) -> NodeBuilder:
        return self.label(HOSTNAME, hostname or self._node["metadata"]["name"])

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        taint: RawObj = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self._node.setdefault("spec", {}).setdefault("taints", []).append(taint)
        return self

    def unschedulable(self) -> NodeBuilder:
        self._node.setdefault("spec", {})["unschedulable"] = True
        return self

    def allocatable(self, **resources: str) -> NodeBuilder:
        self._node.setdefault("status", {})["allocatable"] = dict(resources)
        return self

    def images(self, images: list[RawObj]) -> NodeBuilder:
        self._node.setdefault("status", {})["images"] = copy.deepcopy(images)
        return self

    def declared_features(self, *features: str) -> NodeBuilder:
        """st.MakeNode().DeclaredFeatures([...]): status.declaredFeatures."""
        self._node.setdefault("status", {})["declaredFeatures"] = list(features)
        return self

    def obj(self) -> RawObj:
        return copy.deepcopy(self._node)


def priority_class(
    name: str, value: int, global_default: bool = False, preemption_policy: str | None = None
) -> RawObj:
    out: RawObj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
    }
    if preemption_policy is not None:
        out["preemptionPolicy"] = preemption_policy
    return out


def make_pod() -> PodBuilder:
    return PodBuilder()


def make_node() -> NodeBuilder:
    return NodeBuilder()


def constrained_pod(*constraints: RawObj, labels: dict[str, str] | None = None) -> RawObj:
    """A pod labelled app=web (or exactly `labels`) carrying exactly `constraints`."""
    return (
        make_pod()
        .labels(labels if labels is not None else {"app": "web"})
        .constraints(list(constraints))
        .obj()
    )


def workload(kind: str, pod: RawObj, name: str = "w") -> RawObj:
    """Wrap a pod's metadata and spec into a workload of `kind` at its template path."""
    template = {
        "metadata": copy.deepcopy(pod.get("metadata", {})),
        "spec": copy.deepcopy(pod["spec"]),
    }
    template["metadata"].pop("name", None)
    template["metadata"].pop("namespace", None)
    api = {
        "Deployment": "apps/v1",
        "ReplicaSet": "apps/v1",
        "StatefulSet": "apps/v1",
        "DaemonSet": "apps/v1",
        "Job": "batch/v1",
        "CronJob": "batch/v1",
    }.get(kind, "v1")
    obj: RawObj = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": pod["metadata"].get("namespace", "default")},
    }
    if kind == "PodTemplate":
        obj["template"] = template
    elif kind == "CronJob":
        obj["spec"] = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}}
    else:
        obj["spec"] = {"template": template}
    return obj


def pdb(
    name: str,
    match_labels: dict[str, str] | None,
    disruptions_allowed: int | None = None,
    namespace: str = "default",
    disrupted: Iterable[str] = (),
    *,
    min_available: Any = None,
    max_unavailable: Any = None,
    unhealthy_pod_eviction_policy: str | None = None,
) -> RawObj:
    """A policy/v1 PodDisruptionBudget selecting `match_labels` (None: a nil selector);
    with `disruptions_allowed`, the status as the disruption controller keeps it (what
    preemption reads), `disrupted` its disruptedPods."""
    spec: RawObj = {}
    if match_labels is not None:
        spec["selector"] = {"matchLabels": dict(match_labels)}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if unhealthy_pod_eviction_policy is not None:
        spec["unhealthyPodEvictionPolicy"] = unhealthy_pod_eviction_policy
    out: RawObj = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if disruptions_allowed is not None:
        out["status"] = {
            "disruptionsAllowed": disruptions_allowed,
            "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted},
        }
    return out


def scaled(
    kind: str,
    name: str,
    replicas: int | None,
    namespace: str = "default",
    *,
    owner: tuple[str, str, str] | None = None,
) -> RawObj:
    """A controller object (Deployment, ReplicaSet, StatefulSet, ...) with spec.replicas,
    as an audit snapshot holds it (its template is not read); `owner` (kind, name, uid):
    its controller, as a Deployment controls its ReplicaSets."""
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    if kind in ("Job", "CronJob"):
        api = "batch/v1"
    obj: RawObj = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {},
    }
    if replicas is not None:
        obj["spec"]["replicas"] = replicas
    if owner is not None:
        kind_, name_, uid = owner
        obj["metadata"]["ownerReferences"] = [
            {"kind": kind_, "name": name_, "uid": uid, "controller": True}
        ]
    return obj


def review(
    obj: RawObj,
    operation: str = "CREATE",
    *,
    uid: str = "705ab4f5-6393-11e8-b7cc-42010a800002",
    dry_run: bool = False,
    namespace: str | None = None,
    api_version: str = "admission.k8s.io/v1",
    old: RawObj | None = None,
) -> RawObj:
    """An AdmissionReview request for `obj`, as kube-apiserver sends it."""
    kind = obj.get("kind", "Pod")
    group, _, version = obj.get("apiVersion", "v1").rpartition("/")
    resource = {
        "Pod": "pods",
        "PodTemplate": "podtemplates",
        "CronJob": "cronjobs",
        "ReplicationController": "replicationcontrollers",
    }.get(kind, kind.lower() + "s")
    meta = obj.get("metadata", {})
    request: RawObj = {
        "uid": uid,
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": meta.get("name", ""),
        "namespace": namespace if namespace is not None else meta.get("namespace", "default"),
        "operation": operation,
        "userInfo": {"username": "admin", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    }
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


# ---- pod (anti-)affinity terms, Namespaces and the volume kinds -------------------
# After upstream's st.MakePod().PodAffinityIn(...) and st.MakePersistentVolume();
# with_* helpers edit and return the pod they get.
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
    builder = make_node().name(name)
    if labels:
        builder = builder.labels(labels)
    return builder.obj()


def pvc(
    name: str,
    *,
    volume: str = "",
    storage_class: str | None = None,
    modes: list[str] | None = None,
    size: str = "1Gi",
    ns: str = "default",
    prebound: bool = False,
    selected_node: str | None = None,
    phase: str | None = None,
) -> RawObj:
    """A PersistentVolumeClaim, bound when `volume` names a PV: spec.volumeName and the
    pv.kubernetes.io/bind-completed annotation, as the PV controller leaves a bound
    claim (prebound=True: spec.volumeName alone, a claim pre-bound by hand);
    selected_node: the volume.kubernetes.io/selected-node annotation; phase:
    status.phase."""
    spec: RawObj = {
        "accessModes": modes or ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    meta: RawObj = {"name": name, "namespace": ns}
    annotations: dict[str, str] = {}
    if volume:
        spec["volumeName"] = volume
        if not prebound:
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
    if selected_node is not None:
        annotations["volume.kubernetes.io/selected-node"] = selected_node
    if annotations:
        meta["annotations"] = annotations
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    out: RawObj = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
    }
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def pv(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    node_in: tuple[str, list[str]] | None = None,
    storage_class: str = "",
    size: str = "1Gi",
    csi: tuple[str, str] | None = None,
    claim: str | None = None,
    phase: str | None = "Available",
) -> RawObj:
    """A PersistentVolume; node_in=(key, values) sets a required node affinity; phase:
    status.phase (None: no status)."""
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
    out: RawObj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


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
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
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


# ---- pods with requests, nodes with capacity, NodeInfos -------------------------
# After upstream's st.MakePod().Req(...), st.MakeNode().Capacity(...) and the
# noderesources tests' makeNode(). Pods from pod_with have exactly one container per
# requests map given (none at all when none is given), as st.MakePod().Req() builds them.

_counter = iter(range(1, 10**9))


def pod_with(
    *requests: Mapping[str, str],
    node: str = "",
    name: str = "",
    namespace: str = "default",
    init: Iterable[Mapping[str, str]] = (),
) -> RawObj:
    """A pod with one container per `requests` map (st.MakePod().Req(...).Req(...))."""
    spec: RawObj = {
        "containers": [
            {"name": f"c{i}", "image": "pause", "resources": {"requests": dict(r)}}
            for i, r in enumerate(requests)
        ]
    }
    inits = [
        {"name": f"i{i}", "image": "pause", "resources": {"requests": dict(r)}}
        for i, r in enumerate(init)
    ]
    if inits:
        spec["initContainers"] = inits
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name or f"pod-{next(_counter)}", "namespace": namespace},
        "spec": spec,
    }


def container_pod(node: str = "", name: str = "") -> RawObj:
    """A pod with one container requesting nothing (st.MakePod().Container("c"))."""
    pod = pod_with(node=node, name=name)
    pod["spec"]["containers"] = [{"name": "container", "image": "pause"}]
    return pod


def node_with(name: str, images: Iterable[RawObj] = (), **allocatable: str) -> RawObj:
    """A Node whose capacity and allocatable are `allocatable` (st.MakeNode().Capacity);
    no status.allocatable at all when none is given."""
    node: RawObj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    status: RawObj = {}
    if allocatable:
        status["capacity"] = dict(allocatable)
        status["allocatable"] = dict(allocatable)
    images = list(images)
    if images:
        status["images"] = copy.deepcopy(images)
    if status:
        node["status"] = status
    return node


def resource_node(
    name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None
) -> RawObj:
    """The noderesources tests' makeNode(name, milliCPU, memory, extendedResource)."""
    alloc = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "32"}
    for key, value in (extended or {}).items():
        alloc[key] = str(value)
    return node_with(name, **alloc)


def node_info(node: RawObj, pods: Iterable[RawObj] = ()) -> NodeInfo:
    """A NodeInfo of `node` holding the pods bound to it (by spec.nodeName), with
    requested and non_zero_requested summed as the Snapshot sums them."""
    name = node["metadata"]["name"]
    info = NodeInfo(name, node)
    for pod in pods:
        if pod.get("spec", {}).get("nodeName") != name:
            continue
        meta = pod["metadata"]
        info._add((meta.get("namespace", "default"), meta["name"]), pod, *bound_pod_requests(pod))
    return info


def node_infos(nodes: Iterable[RawObj], pods: Iterable[RawObj] = ()) -> list[NodeInfo]:
    """node_info for each node, in order."""
    pods = list(pods)
    return [node_info(n, pods) for n in nodes]
