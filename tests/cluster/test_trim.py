"""Trim keeps what the plugins read: a Snapshot of trimmed objects gives every plugin
the same answer as one of the full objects, for each kind and field the volume,
host-port, image and pod-affinity plugins read.

Legend: nodes n1 (zone a), n2 (zone a), n3 (zone b); every object is "dressed" as
the API server returns it (managedFields, last-applied annotation, conditions,
env, probes, mounts, configMap/projected volumes, container ports without a host
port). Each case names the field it is about: with that field deleted from the full
objects the answer changes (so the case really exercises it), with trimming it does
not.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import (
    HOSTNAME,
    ZONE,
    RawObj,
    affinity_term,
    csinode,
    make_node,
    namespace,
    pv,
    pvc,
    storage_class,
    with_claim,
    with_term,
    with_volume,
)
from webhook.cluster.needs import CATALOG
from webhook.cluster.source import snapshot_objects
from webhook.cluster.trim import API_VERSIONS, trim
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import CycleState, Status
from webhook.scheduler.plugins.imagelocality import ImageLocality
from webhook.scheduler.plugins.interpodaffinity.plugin import InterPodAffinity
from webhook.scheduler.plugins.nodeports import NodePorts
from webhook.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from webhook.scheduler.plugins.volumebinding import VolumeBinding
from webhook.scheduler.plugins.volumerestrictions import VolumeRestrictions
from webhook.scheduler.plugins.volumezone import VolumeZone

DRIVER = "ebs.csi.aws.com"
MB = 1024 * 1024
WEB = {"app": "web"}

# ---- the cluster, dressed as the API server returns it ---------------------------------


def dress(obj: RawObj) -> RawObj:
    """`obj` with the fields a real object carries and no plugin reads."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("uid", f"uid-{meta.get('name')}")
    meta["resourceVersion"] = "7"
    meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
    meta["managedFields"] = [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:a": {}}}]
    annotations = meta.setdefault("annotations", {})
    annotations["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(obj)
    meta.setdefault("finalizers", ["kubernetes.io/pvc-protection"])
    kind = obj.get("kind")
    if kind == "Pod":
        spec = obj.setdefault("spec", {})
        for c in spec.setdefault("containers", [{"name": "c"}]):
            c.setdefault("image", "registry.example/app:1")
            c["env"] = [{"name": "A", "value": "b"}]
            c["readinessProbe"] = {"httpGet": {"path": "/", "port": 80}}
            c["volumeMounts"] = [{"name": "token", "mountPath": "/var/run/secrets"}]
            c.setdefault("ports", []).append({"containerPort": 80, "protocol": "TCP"})
        spec.setdefault("volumes", []).extend(
            [
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {}}]}},
                {"name": "conf", "configMap": {"name": "conf"}},
            ]
        )
        spec["tolerations"] = [{"operator": "Exists"}]
        obj["status"] = {"phase": "Running", "podIP": "10.0.0.1",
                         "conditions": [{"type": "Ready", "status": "True"}]}
    elif kind == "Node":
        obj.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "True"}]
        obj["status"]["nodeInfo"] = {"kubeletVersion": "v1.34.0"}
        for image in obj["status"].get("images", []):
            image["extra"] = "dropped"
    elif kind in ("PersistentVolume", "PersistentVolumeClaim"):
        obj.setdefault("status", {}).setdefault("phase", "Bound")
        obj["spec"]["mountOptions"] = ["hard"]
    elif kind == "CSINode":
        obj["spec"]["drivers"] = [{**d, "topologyKeys": [ZONE]} for d in obj["spec"]["drivers"]]
    return obj


def node(name: str, zone: str, images: list[RawObj] | None = None) -> RawObj:
    builder = make_node().name(name).zone(zone).hostname()
    builder = builder.allocatable(cpu="4", memory="8Gi", pods="110")
    return (builder if images is None else builder.images(images)).obj()


NODES = [node("n1", "a"), node("n2", "a"), node("n3", "b")]


def pod(name: str, node_name: str = "", labels: dict[str, str] | None = None) -> RawObj:
    spec: RawObj = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                     "labels": dict(labels or {})},
        "spec": spec,
    }


def host_port(p: RawObj, port: int, *, init_sidecar: bool = False, ip: str = "") -> RawObj:
    entry: RawObj = {"containerPort": port, "hostPort": port, "protocol": "TCP"}
    if ip:
        entry["hostIP"] = ip
    if init_sidecar:
        p["spec"].setdefault("initContainers", []).append(
            {"name": "side", "restartPolicy": "Always", "ports": [entry]}
        )
    else:
        p["spec"]["containers"][0].setdefault("ports", []).append(entry)
    return p


def volume(p: RawObj, source: str, value: RawObj, name: str = "disk") -> RawObj:
    return with_volume(p, {"name": name, source: value})


# ---- every plugin's answer for the incoming pod --------------------------------------

FILTERS: list[Callable[[], Any]] = [
    NodePorts, VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, InterPodAffinity,
]
SCORES: list[Callable[[], Any]] = [ImageLocality, InterPodAffinity]


def answers(incoming: RawObj, snapshot: Snapshot) -> dict[str, Any]:
    """Plugin -> its PreFilter status and each node's Filter status (or its Score)."""
    out: dict[str, Any] = {}
    for make in FILTERS:
        plugin = make()
        state = CycleState()
        pre = plugin.pre_filter(state, incoming, snapshot)
        nodes: dict[str, Status] = {}
        if pre.ok:
            nodes = {n: plugin.filter(state, incoming, i) for n, i in snapshot.nodes.items()}
        out[f"{plugin.name}/filter"] = (pre, nodes)
    infos = list(snapshot.nodes.values())
    for make in SCORES:
        plugin = make()
        state = CycleState()
        pre = plugin.pre_score(state, incoming, infos, snapshot)
        scores: dict[str, int] = {}
        if pre.ok:
            scores = {i.name: plugin.score(state, incoming, i)[0] for i in infos}
            plugin.normalize_score(state, incoming, scores)
        out[f"{plugin.name}/score"] = (pre, scores)
    return out


def trimmed(objects: list[RawObj]) -> list[RawObj]:
    """What a live source would hold: snapshot_objects for the kinds it lists today,
    trim() itself for the kinds the profile does not read yet."""
    listed = list(snapshot_objects(o for o in objects if o["kind"] in API_VERSIONS))
    return [*listed, *(trim(o) for o in objects if o["kind"] not in API_VERSIONS)]


def without(objects: list[RawObj], kind: str, path: str) -> list[RawObj]:
    """Copies of `objects` with `path` ("spec.volumes", "spec.containers[].ports",
    "metadata.annotations[a.b/c]" for a key holding dots) deleted from every object of
    `kind`."""
    out = copy.deepcopy(objects)

    def drop(node: Any, parts: list[str]) -> None:
        head, *rest = parts
        many = head.endswith("[]")
        key = head[1:-1] if head.startswith("[") else head.removesuffix("[]")
        if not isinstance(node, dict) or key not in node:
            return
        if not rest:
            del node[key]
        elif many:
            for item in node[key] if isinstance(node[key], list) else ():
                drop(item, rest)
        else:
            drop(node[key], rest)

    parts = re.findall(r"\[[^\]]+\]|[^.\[]+(?:\[\])?", path)
    for obj in out:
        if obj["kind"] == kind:
            drop(obj, parts)
    return out


# ---- cases: (name, kind, field under test, cluster objects, incoming pod) ------------

WFFC_LOCAL = storage_class("local", mode="WaitForFirstConsumer",
                           provisioner="kubernetes.io/no-provisioner")


def rwop_claim(name: str) -> RawObj:
    return pvc(name, volume=f"pv-{name}", modes=["ReadWriteOncePod"])


def csi_claim(name: str) -> list[RawObj]:
    return [pvc(name, volume=f"pv-{name}"), pv(f"pv-{name}", csi=(DRIVER, f"vol-{name}"))]


def ephemeral_claim(pod_name: str, vol: str, owner_uid: str) -> RawObj:
    claim = pvc(f"{pod_name}-{vol}", storage_class="wffc")
    claim["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": owner_uid,
         "controller": True, "blockOwnerDeletion": True}
    ]
    return claim


def gold(p: RawObj) -> RawObj:
    p["metadata"]["labels"] = {"tier": "gold"}
    return p


def with_selector(claim: RawObj, labels: dict[str, str]) -> RawObj:
    claim["spec"]["selector"] = {"matchLabels": labels}
    return claim


def with_mode(claim: RawObj, mode: str) -> RawObj:
    claim["spec"]["volumeMode"] = mode
    return claim


def beta_class(claim: RawObj, cls: str) -> RawObj:
    claim["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": cls}
    return claim


def deleting(claim: RawObj) -> RawObj:
    claim["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return claim


# The claim "data", bound to a PV of zone a.
BOUND_IN_ZONE_A = [*NODES, pvc("data", volume="pv-a"), pv("pv-a", node_in=(ZONE, ["a"]))]
IMAGE = "registry.example/big:1"
INCOMING_WEB = pod("incoming", labels=WEB)

CASES: list[tuple[str, str, str, list[RawObj], RawObj]] = [
    # ---- Node
    (
        "node images decide ImageLocality",
        "Node", "status.images",
        [node("n1", "a", [{"names": [IMAGE], "sizeBytes": 500 * MB}]), *NODES[1:]],
        {**pod("incoming"), "spec": {"containers": [{"name": "c", "image": IMAGE}]}},
    ),
    # ---- Pod: pod (anti-)affinity of existing pods
    (
        "existing required anti-affinity over zone blocks zone a",
        "Pod", "spec.affinity",
        [*NODES, with_term(pod("guard", "n1"), affinity_term("In", "app", ZONE, ["web"]),
                           anti=True)],
        INCOMING_WEB,
    ),
    (
        "existing preferred affinity scores zone a",
        "Pod", "spec.affinity",
        [*NODES, with_term(pod("fan", "n3"), affinity_term("In", "app", ZONE, ["web"]),
                           required=False, weight=50)],
        INCOMING_WEB,
    ),
    (
        "existing anti-affinity through a namespaceSelector",
        "Pod", "spec.affinity",
        [*NODES, namespace("default", {"team": "x"}),
         with_term(pod("guard", "n3"),
                   affinity_term("In", "app", HOSTNAME, ["web"],
                                 namespaceSelector={"matchLabels": {"team": "x"}}),
                   anti=True)],
        INCOMING_WEB,
    ),
    # ---- Pod: host ports
    (
        "existing container host port",
        "Pod", "spec.containers[].ports",
        [*NODES, host_port(pod("proxy", "n1"), 8080)],
        host_port(pod("incoming"), 8080),
    ),
    (
        "existing host port on one address",
        "Pod", "spec.containers[].ports",
        [*NODES, host_port(pod("proxy", "n2"), 8080, ip="10.0.0.2")],
        host_port(pod("incoming"), 8080, ip="10.0.0.2"),
    ),
    (
        "existing sidecar init container host port",
        "Pod", "spec.initContainers[].restartPolicy",
        [*NODES, host_port(pod("proxy", "n2"), 9090, init_sidecar=True)],
        host_port(pod("incoming"), 9090),
    ),
    # ---- Pod: volumes
    *[
        (
            f"existing in-tree disk {source}",
            "Pod", "spec.volumes",
            [*NODES, volume(pod("db", "n1"), source, value)],
            volume(pod("incoming"), source, value),
        )
        for source, value in [
            ("gcePersistentDisk", {"pdName": "pd-1", "fsType": "ext4"}),
            ("awsElasticBlockStore", {"volumeID": "vol-1", "fsType": "ext4"}),
            ("rbd", {"monitors": ["m1", "m2"], "pool": "p", "image": "i", "user": "admin",
                     "secretRef": {"name": "ceph"}}),
            ("iscsi", {"targetPortal": "10.0.0.9:3260", "iqn": "iqn.2016-12.x:t1", "lun": 0}),
        ]
    ],
    (
        "read-only gcePersistentDisk mounted read-only elsewhere",
        "Pod", "spec.volumes[].gcePersistentDisk.readOnly",
        [*NODES, volume(pod("db", "n1"), "gcePersistentDisk", {"pdName": "pd", "readOnly": True})],
        volume(pod("incoming"), "gcePersistentDisk", {"pdName": "pd", "readOnly": True}),
    ),
    (
        "ReadWriteOncePod claim already in use",
        "Pod", "spec.volumes",
        [*NODES, rwop_claim("solo"), pv("pv-solo"), with_claim(pod("holder", "n3"), "solo")],
        with_claim(pod("incoming"), "solo"),
    ),
    (
        "attached CSI volumes count against the CSINode limit",
        "Pod", "spec.volumes",
        [*NODES, csinode("n1", {DRIVER: 1}), csinode("n3", {DRIVER: 1}),
         *csi_claim("old"), *csi_claim("new"), with_claim(pod("user", "n1"), "old")],
        with_claim(pod("incoming"), "new"),
    ),
    # ---- PersistentVolume
    (
        "bound PV node affinity",
        "PersistentVolume", "spec.nodeAffinity", BOUND_IN_ZONE_A,
        with_claim(pod("incoming"), "data"),
    ),
    (
        "bound PV zone labels",
        "PersistentVolume", "metadata.labels",
        [*NODES, pvc("data", volume="pv-b"), pv("pv-b", labels={ZONE: "b"})],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "bound PV's CSI driver counted",
        "PersistentVolume", "spec.csi",
        [*NODES, csinode("n2", {DRIVER: 0}), *csi_claim("new")],
        with_claim(pod("incoming"), "new"),
    ),
    (
        "static binding: class, capacity and node affinity of available PVs",
        "PersistentVolume", "spec.capacity",
        [*NODES, WFFC_LOCAL, pvc("data", storage_class="local", size="5Gi"),
         pv("small-a", storage_class="local", size="1Gi", node_in=(ZONE, ["a"])),
         pv("big-b", storage_class="local", size="10Gi", node_in=(ZONE, ["b"]))],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "static binding: the PV's class",
        "PersistentVolume", "spec.storageClassName",
        [*NODES, WFFC_LOCAL, pvc("data", storage_class="local"),
         pv("b", storage_class="local", node_in=(ZONE, ["b"]))],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "static binding: the PV's access modes",
        "PersistentVolume", "spec.accessModes",
        [*NODES, WFFC_LOCAL, pvc("data", storage_class="local", modes=["ReadWriteMany"]),
         {**pv("rwx-b", storage_class="local", node_in=(ZONE, ["b"])),
          "spec": {**pv("rwx-b", storage_class="local", node_in=(ZONE, ["b"]))["spec"],
                   "accessModes": ["ReadWriteMany"]}}],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "static binding: a PV pre-bound to another claim",
        "PersistentVolume", "spec.claimRef",
        [*NODES, WFFC_LOCAL, pvc("data", storage_class="local"),
         pv("taken-b", storage_class="local", node_in=(ZONE, ["b"]), claim="other")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "static binding: the claim's selector over PV labels",
        "PersistentVolume", "metadata.labels",
        [*NODES, WFFC_LOCAL, with_selector(pvc("data", storage_class="local"), {"tier": "gold"}),
         gold(pv("gold-b", storage_class="local", node_in=(ZONE, ["b"]))),
         pv("plain-a", storage_class="local", node_in=(ZONE, ["a"]))],
        with_claim(pod("incoming"), "data"),
    ),
    # ---- PersistentVolumeClaim
    (
        "claim being deleted",
        "PersistentVolumeClaim", "metadata.deletionTimestamp",
        [*NODES, deleting(pvc("data", volume="pv-a")), pv("pv-a")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "bound claim's volumeName",
        "PersistentVolumeClaim", "spec.volumeName",
        [*NODES, storage_class("fast"), pvc("data", volume="pv-a", storage_class="fast"),
         pv("pv-a", node_in=(ZONE, ["a"]))],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "bound claim's bind-completed annotation (without it: pre-bound, not bound)",
        "PersistentVolumeClaim", "metadata.annotations[pv.kubernetes.io/bind-completed]",
        BOUND_IN_ZONE_A, with_claim(pod("incoming"), "data"),
    ),
    (
        "claim's selected node",
        "PersistentVolumeClaim", "metadata.annotations[volume.kubernetes.io/selected-node]",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer"),
         pvc("data", storage_class="wffc", selected_node="n2")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "claim Lost: its PV is gone",
        "PersistentVolumeClaim", "status.phase",
        [*NODES, pvc("data", volume="pv-gone", phase="Lost")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "claim's storage class binds WaitForFirstConsumer",
        "PersistentVolumeClaim", "spec.storageClassName",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer", zones=["b"]),
         pvc("data", storage_class="wffc")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "claim's class from the beta annotation",
        "PersistentVolumeClaim", "metadata.annotations",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer", zones=["b"]),
         beta_class(pvc("data"), "wffc")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "claim's requested size",
        "PersistentVolumeClaim", "spec.resources",
        [*NODES, WFFC_LOCAL, pvc("data", storage_class="local", size="5Gi"),
         pv("small-a", storage_class="local", size="1Gi", node_in=(ZONE, ["a"]))],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "claim's volume mode",
        "PersistentVolumeClaim", "spec.volumeMode",
        [*NODES, WFFC_LOCAL, with_mode(pvc("data", storage_class="local"), "Block"),
         pv("fs-a", storage_class="local", node_in=(ZONE, ["a"]))],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "claim's ReadWriteOncePod access mode",
        "PersistentVolumeClaim", "spec.accessModes",
        [*NODES, rwop_claim("solo"), pv("pv-solo"), with_claim(pod("holder", "n3"), "solo")],
        with_claim(pod("incoming"), "solo"),
    ),
    (
        "ephemeral claim not controlled by the pod",
        "PersistentVolumeClaim", "metadata.ownerReferences",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer"),
         ephemeral_claim("incoming", "scratch", "uid-incoming")],
        volume(pod("incoming"), "ephemeral", {"volumeClaimTemplate": {"spec": {}}}, "scratch"),
    ),
    # ---- StorageClass
    (
        "class allowedTopologies limit provisioning",
        "StorageClass", "allowedTopologies",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer", zones=["a"]),
         pvc("data", storage_class="wffc")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "class volumeBindingMode",
        "StorageClass", "volumeBindingMode",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer"),
         pvc("data", storage_class="wffc")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        # Without its provisioner the class provisions nothing (as kubernetes.io/no-provisioner).
        "class whose provisioner provisions",
        "StorageClass", "provisioner",
        [*NODES, storage_class("wffc", mode="WaitForFirstConsumer", provisioner=DRIVER),
         pvc("data", storage_class="wffc")],
        with_claim(pod("incoming"), "data"),
    ),
    (
        "unbound claim counted by its class's provisioner",
        "StorageClass", "provisioner",
        [*NODES, csinode("n1", {DRIVER: 1}),
         storage_class("ebs", mode="WaitForFirstConsumer", provisioner=DRIVER),
         pvc("old", storage_class="ebs"), pvc("new", storage_class="ebs"),
         with_claim(pod("user", "n1"), "old")],
        with_claim(pod("incoming"), "new"),
    ),
    # ---- CSINode
    (
        "CSINode allocatable count",
        "CSINode", "spec.drivers[].allocatable",
        [*NODES, csinode("n1", {DRIVER: 1}), csinode("n2", {DRIVER: 5}),
         *csi_claim("old"), *csi_claim("new"), with_claim(pod("user", "n1"), "old")],
        with_claim(pod("incoming"), "new"),
    ),
]


@pytest.mark.parametrize(
    ("name", "kind", "path", "objects", "incoming"), CASES, ids=[c[0] for c in CASES]
)
def test_trimmed_objects_give_the_plugins_the_same_answer(
    name: str, kind: str, path: str, objects: list[RawObj], incoming: RawObj
) -> None:
    """Full and trimmed objects: equal answers from every plugin; the field matters."""
    full = [dress(o) for o in objects]
    want = answers(incoming, Snapshot.from_objects(full))
    assert answers(incoming, Snapshot.from_objects(trimmed(full))) == want
    assert answers(incoming, Snapshot.from_objects(without(full, kind, path))) != want


def test_every_kind_has_a_case() -> None:
    """Each kind the volume and affinity plugins read is covered above."""
    assert {c[1] for c in CASES} == {
        "Node", "Pod", "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "CSINode",
    }


# ---- what each new kind keeps, exactly -------------------------------------------------


def test_trim_persistent_volume() -> None:
    full = dress(gold(pv("pv-1", storage_class="fast", size="10Gi", node_in=(ZONE, ["a"]),
                         csi=(DRIVER, "vol-1"), claim="data")))
    full["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"] = "fast"
    full["spec"]["volumeMode"] = "Filesystem"
    full["spec"]["capacity"]["ephemeral"] = "1"
    full["spec"]["csi"]["volumeAttributes"] = {"a": "b"}
    full["spec"]["claimRef"].update(uid="uid-data", resourceVersion="3", kind="Claim")
    full["spec"]["persistentVolumeReclaimPolicy"] = "Delete"
    full["status"]["phase"] = "Available"
    assert trim(full) == {
        "kind": "PersistentVolume",
        "apiVersion": "v1",
        "metadata": {
            "name": "pv-1", "uid": "uid-pv-1", "resourceVersion": "7",
            "labels": {"tier": "gold"},
            "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"},
        },
        "spec": {
            "nodeAffinity": full["spec"]["nodeAffinity"],
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
            "volumeMode": "Filesystem",
            "claimRef": {"name": "data", "namespace": "default", "uid": "uid-data"},
            "capacity": {"storage": "10Gi"},
            "csi": {"driver": DRIVER, "volumeHandle": "vol-1"},
        },
        "status": {"phase": "Available"},
    }


def test_trim_persistent_volume_in_tree_source() -> None:
    full = pv("pv-1")
    full["spec"]["gcePersistentDisk"] = {"pdName": "pd-1", "fsType": "ext4", "partition": 1}
    assert trim(full)["spec"]["gcePersistentDisk"] == {"pdName": "pd-1"}


def test_trim_persistent_volume_claim() -> None:
    full = dress(deleting(with_selector(pvc("data", volume="pv-1", storage_class="fast",
                                             modes=["ReadWriteOncePod"], size="5Gi"),
                                         {"tier": "gold"})))
    full["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": True},
        {"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "v"},
    ]
    full["spec"]["volumeMode"] = "Block"
    full["spec"]["resources"]["limits"] = {"storage": "9Gi"}
    full["status"]["capacity"] = {"storage": "5Gi"}
    full["status"]["accessModes"] = ["ReadWriteOncePod"]
    full["metadata"]["annotations"].update({
        "volume.kubernetes.io/selected-node": "n1",
        "volume.kubernetes.io/storage-provisioner": DRIVER,
        "pv.kubernetes.io/bound-by-controller": "yes",
    })
    assert trim(full) == {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "metadata": {
            "name": "data", "namespace": "default", "uid": "uid-data", "resourceVersion": "7",
            "deletionTimestamp": "2026-01-02T00:00:00Z",
            "annotations": {
                "pv.kubernetes.io/bind-completed": "yes",
                "volume.kubernetes.io/selected-node": "n1",
            },
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": True}
            ],
        },
        "spec": {
            "volumeName": "pv-1",
            "storageClassName": "fast",
            "volumeMode": "Block",
            "accessModes": ["ReadWriteOncePod"],
            "selector": {"matchLabels": {"tier": "gold"}},
            "resources": {"requests": {"storage": "5Gi"}},
        },
        "status": {"phase": "Bound"},
    }


def test_trim_storage_class() -> None:
    full = dress(storage_class("wffc", mode="WaitForFirstConsumer", zones=["a"]))
    full.update(parameters={"type": "gp3"}, reclaimPolicy="Delete", allowVolumeExpansion=True)
    assert trim(full) == {
        "kind": "StorageClass",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": "wffc", "uid": "uid-wffc", "resourceVersion": "7"},
        "provisioner": "csi.example.com",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": full["allowedTopologies"],
    }


def test_trim_csi_node() -> None:
    full = dress(csinode("n1", {DRIVER: 25}))
    full["metadata"]["ownerReferences"] = [{"kind": "Node", "name": "n1", "uid": "x"}]
    assert trim(full) == {
        "kind": "CSINode",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": "n1", "uid": "uid-n1", "resourceVersion": "7"},
        "spec": {"drivers": [{"name": DRIVER, "nodeID": "n1", "allocatable": {"count": 25},
                              "topologyKeys": [ZONE]}]},
    }


def test_trim_pod_disruption_budget() -> None:
    """The budget's spec and what the disruption controller last wrote to its status."""
    selector = {"matchLabels": {"app": "web"}}
    full = {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u", "generation": 3,
                     "annotations": {"a": "b"}},
        "spec": {"minAvailable": "50%", "selector": selector,
                 "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2,
                   "expectedPods": 4, "disruptedPods": {"web-1": "2026-01-01T00:00:00Z"},
                   "observedGeneration": 3, "conditions": [{"type": "DisruptionAllowed"}]},
    }
    assert trim(full) == {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u"},
        "spec": {"minAvailable": "50%", "selector": selector,
                 "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2,
                   "expectedPods": 4, "disruptedPods": {"web-1": "2026-01-01T00:00:00Z"}},
    }
    assert trim({**full, "spec": {"maxUnavailable": 0}, "status": None})["spec"] == {
        "maxUnavailable": 0
    }


def test_trim_priority_class() -> None:
    """value, globalDefault (false kept) and preemptionPolicy; the description goes."""
    full = {
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "metadata": {"name": "batch", "uid": "u"},
        "value": -10,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "best effort",
    }
    assert trim(full) == {
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "metadata": {"name": "batch", "uid": "u"},
        "value": -10,
        "globalDefault": False,
        "preemptionPolicy": "Never",
    }


def test_trim_pod_keeps_affinity_volumes_and_host_ports() -> None:
    """Of a dressed pod: pod (anti-)affinity, claim and disk volumes, host ports."""
    full = with_term(host_port(host_port(pod("p", "n1"), 8080, ip="10.0.0.1"), 9090,
                               init_sidecar=True),
                     affinity_term("In", "app", ZONE, ["web"]), anti=True)
    full["spec"]["affinity"]["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "Exists"}]}]}}
    with_claim(full, "data")
    volume(full, "ephemeral", {"volumeClaimTemplate": {"spec": {"accessModes": ["x"]}}}, "eph")
    volume(full, "csi", {"driver": DRIVER, "volumeAttributes": {"a": "b"}}, "inline")
    volume(full, "azureDisk", {"diskName": "d", "diskURI": "u", "cachingMode": "None"}, "az")
    volume(full, "cinder", {"volumeID": "c", "fsType": "ext4"}, "ci")
    spec = trim(dress(full))["spec"]
    assert spec["affinity"] == {"podAntiAffinity": full["spec"]["affinity"]["podAntiAffinity"]}
    assert spec["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "eph", "ephemeral": {}},
        {"name": "inline", "csi": {"driver": DRIVER}},
        {"name": "az", "azureDisk": {"diskName": "d", "diskURI": "u"}},
        {"name": "ci", "cinder": {"volumeID": "c"}},
    ]
    assert spec["containers"] == [{
        "name": "c",
        "resources": {"requests": {"cpu": "100m"}},
        "ports": [{"hostPort": 8080, "hostIP": "10.0.0.1", "protocol": "TCP"}],
    }]
    assert spec["initContainers"] == [{
        "name": "side", "restartPolicy": "Always",
        "ports": [{"hostPort": 9090, "protocol": "TCP"}],
    }]


def test_trim_knows_the_api_version_of_every_catalogued_kind() -> None:
    """A List item names no kind nor apiVersion: trim supplies the catalogue's."""
    for kind, entry in CATALOG.items():
        assert trim({"metadata": {"name": "x"}}, kind)["apiVersion"] == entry.api_version
