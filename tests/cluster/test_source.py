"""Cluster sources without a server: trimming, StaticSource, FileSource, the read lock."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import Configuration

from tests.builders import ZONE, make_node, make_pod, workload
from webhook.api.resources import pod_requests
from webhook.cluster.informer import LiveSource
from webhook.cluster.source import (
    ClusterSource,
    FileSource,
    ReadWriteLock,
    StaticSource,
    read_snapshot,
    snapshot_objects,
)
from webhook.cluster.trim import trim
from webhook.errors import InputError
from webhook.scheduler.framework.snapshot import Snapshot

RawObj = dict[str, Any]

# ---- trim ----------------------------------------------------------------------------


def full_pod() -> RawObj:
    """A pod as the API server returns it, with much the model never reads."""
    pod = (
        make_pod()
        .name("web-1")
        .namespace("shop")
        .uid("u-1")
        .label("app", "web")
        .owner("ReplicaSet", "web-abc")
        .node("n1")
        .annotation("note", "x")
        .node_selector({"disk": "ssd"})
        .toleration("k", "v", "NoSchedule")
        .requests(cpu="250m", memory="64Mi")
        .phase("Running")
        .obj()
    )
    pod["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = True
    pod["metadata"]["resourceVersion"] = "42"
    pod["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    pod["metadata"]["generateName"] = "web-"
    container = pod["spec"]["containers"][0]
    container["env"] = [{"name": "A", "value": "1"}]
    container["resources"]["limits"] = {"memory": "128Mi"}
    pod["spec"]["affinity"] = {"podAntiAffinity": {}}
    pod["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    pod["status"]["conditions"] = [
        {"type": "Ready", "status": "True"},
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible", "message": "m"},
    ]
    pod["status"]["podIP"] = "10.0.0.1"
    return pod


def test_trim_pod_keeps_what_counting_and_requests_read() -> None:
    """Labels, owners, node, requests, phase, resize state stay; the rest goes."""
    assert trim(full_pod()) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "42",
            "labels": {"app": "web"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-abc",
                    "uid": "uid-web-abc",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": "n1",
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
        },
    }


def test_trim_pod_keeps_init_containers_overhead_pod_requests_and_deletion() -> None:
    pod = make_pod().name("p").terminating("2026-01-02T00:00:00Z").obj()
    pod["spec"]["initContainers"] = [
        {
            "name": "side",
            "image": "i",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "1"}},
        },
        {"name": "init", "image": "i", "command": ["sh"]},
    ]
    pod["spec"]["overhead"] = {"cpu": "10m"}
    pod["spec"]["resources"] = {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    out = trim(pod)
    assert out["metadata"]["deletionTimestamp"] == "2026-01-02T00:00:00Z"
    assert out["spec"]["initContainers"] == [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "init"},
    ]
    assert out["spec"]["overhead"] == {"cpu": "10m"}
    assert out["spec"]["resources"] == {"requests": {"memory": "1Gi"}}


# status.containerStatuses[0] variants -> kept entry (None: dropped), spec requests cpu=1
STATUS_CASES: list[tuple[str, RawObj, RawObj | None]] = [
    ("no status resources: dropped", {"name": "c", "ready": True}, None),
    (
        "status equal to spec: dropped",
        {"name": "c", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "1"}},
        None,
    ),
    (
        "resized up: kept",
        {"name": "c", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "1"}},
        {"name": "c", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "1"}},
    ),
    (
        "allocated differs: kept",
        {"name": "c", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "3"}},
        {"name": "c", "resources": {"requests": {"cpu": "1"}}, "allocatedResources": {"cpu": "3"}},
    ),
    (
        "status resources without requests: kept (an infeasible resize reads them)",
        {"name": "c", "resources": {"limits": {"cpu": "1"}}},
        {"name": "c", "resources": {}},
    ),
]


@pytest.mark.parametrize(
    ("status", "kept"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES]
)
def test_trim_pod_container_status_kept_only_when_it_can_change_requests(
    status: RawObj, kept: RawObj | None
) -> None:
    pod = make_pod().requests(cpu="1").phase("Running").obj()
    pod["status"]["containerStatuses"] = [status]
    out = trim(pod)
    assert out["status"].get("containerStatuses") == ([kept] if kept else None)


def test_trim_node_keeps_labels_taints_unschedulable_allocatable_images() -> None:
    node = (
        make_node()
        .name("n1")
        .zone("a")
        .taint("dedicated", "batch", "NoSchedule")
        .unschedulable()
        .allocatable(cpu="4", memory="8Gi", pods="110")
        .obj()
    )
    node["metadata"]["annotations"] = {"a": "b"}
    node["spec"]["podCIDR"] = "10.0.0.0/24"
    node["status"]["capacity"] = {"cpu": "4"}
    node["status"]["images"] = [{"names": ["x", "x@sha256:00"], "sizeBytes": 1, "extra": 2}]
    node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert trim(node) == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "n1", "labels": {ZONE: "a"}},
        "spec": {
            "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}],
            "unschedulable": True,
        },
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "images": [{"names": ["x", "x@sha256:00"], "sizeBytes": 1}],
        },
    }


@pytest.mark.parametrize(
    ("kind", "selector"),
    [
        ("Service", {"app": "web"}),
        ("ReplicationController", {"app": "web"}),
        ("ReplicaSet", {"matchLabels": {"app": "web"}}),
        ("StatefulSet", {"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
    ],
)
def test_trim_selector_holders_keep_only_the_selector(kind: str, selector: RawObj) -> None:
    obj: RawObj = {
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ns", "labels": {"x": "y"}},
        "spec": {"selector": selector, "replicas": 3, "ports": [{"port": 80}]},
        "status": {"replicas": 3},
    }
    expected_api = "apps/v1" if kind in ("ReplicaSet", "StatefulSet") else "v1"
    assert trim(obj) == {
        "kind": kind,
        "apiVersion": expected_api,
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"selector": selector},
    }


@pytest.mark.parametrize(
    ("kind", "api_version"), [("Pod", "v1"), ("ReplicaSet", "apps/v1"), ("Node", "v1")]
)
def test_trim_list_item_without_kind_gets_the_kind_given(kind: str, api_version: str) -> None:
    out = trim({"metadata": {"name": "x"}}, kind)
    assert (out["kind"], out["apiVersion"]) == (kind, api_version)


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Pod", "metadata": ["not", "a", "map"], "spec": None},
        {"kind": "Pod", "metadata": {"labels": ["a"]}, "spec": {"containers": "c"}},
        {"kind": "Pod", "spec": {"containers": [1, None]}, "status": {"containerStatuses": 3}},
        {"kind": "Pod", "status": {"conditions": [None, {"type": "PodResizePending"}]}},
        {"kind": "Node", "spec": "x", "status": {"allocatable": "y"}},
        {"kind": "Service", "spec": []},
    ],
)
def test_trim_never_raises_on_wrong_types(obj: RawObj) -> None:
    assert trim(obj)["kind"] == obj["kind"]


def test_trim_does_not_modify_its_input() -> None:
    pod = full_pod()
    before = copy.deepcopy(pod)
    trim(pod)
    assert pod == before


def requests_cases() -> list[RawObj]:
    sidecar = make_pod().name("s").requests(cpu="500m").obj()
    sidecar["spec"]["initContainers"] = [
        {"name": "log", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}},
    ]
    sidecar["spec"]["overhead"] = {"cpu": "50m", "memory": "10Mi"}
    resized = make_pod().name("r").requests(cpu="1").phase("Running").obj()
    resized["status"]["containerStatuses"] = [
        {"name": "c", "resources": {"requests": {"cpu": "3"}}, "allocatedResources": {"cpu": "2"}}
    ]
    infeasible = copy.deepcopy(resized)
    infeasible["status"]["conditions"] = [
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
    ]
    pod_level = make_pod().name("l").requests(cpu="1").obj()
    pod_level["spec"]["resources"] = {"requests": {"cpu": "4"}}
    return [full_pod(), sidecar, resized, infeasible, pod_level]


@pytest.mark.parametrize(
    "pod", requests_cases(), ids=["plain", "sidecar", "resized", "infeasible", "pod-level"]
)
def test_trimmed_pod_has_the_requests_of_the_full_pod(pod: RawObj) -> None:
    """Trimming keeps every field the scheduler's request arithmetic reads."""
    assert pod_requests(trim(pod)) == pod_requests(pod)


# ---- StaticSource and FileSource -------------------------------------------------------


def cluster_objects() -> list[RawObj]:
    nodes = [make_node().name(f"n{i}").zone("ab"[i % 2]).obj() for i in range(2)]
    pods = [
        make_pod().name(f"p{i}").label("app", "web").node(f"n{i % 2}").requests(cpu="1").obj()
        for i in range(3)
    ]
    deployment = workload("Deployment", make_pod().label("app", "web").obj(), name="web")
    return [*nodes, *pods, deployment]


def test_static_source_is_synced_iff_it_has_a_snapshot() -> None:
    snap = Snapshot.from_objects([])
    empty = StaticSource(None)
    assert (empty.synced(), empty.snapshot(), empty.server_version()) == (False, None, None)
    full = StaticSource(snap, (1, 31))
    full.start()
    assert (full.synced(), full.snapshot(), full.server_version()) == (True, snap, (1, 31))
    full.replace(None)
    assert full.synced() is False
    full.stop()


def test_sources_satisfy_the_interface() -> None:
    live = LiveSource(configuration=Configuration(host="http://127.0.0.1:1"))
    for source in (StaticSource(None), FileSource("x.json"), live):
        assert isinstance(source, ClusterSource)


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_file_source_loads_a_list_file_on_start(tmp_path: Path, fmt: str) -> None:
    """Not synced before start(); after it, nodes and bound pods as in the file."""
    doc = {"apiVersion": "v1", "kind": "List", "items": cluster_objects()}
    path = tmp_path / f"snapshot.{fmt}"
    path.write_text(json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc))
    source = FileSource(path, version=(1, 30))
    assert source.synced() is False and source.snapshot() is None
    source.start()
    snap = source.snapshot()
    assert source.synced() is True and snap is not None
    assert sorted(snap.nodes) == ["n0", "n1"]
    assert sorted(p["metadata"]["name"] for p in snap.nodes["n0"].pods) == ["p0", "p2"]
    assert snap.nodes["n0"].requested["cpu"] == 2000
    assert source.server_version() == (1, 30)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ('{"kind": "List", "items": [', "not valid JSON"),
        (json.dumps(make_pod().obj()), "must be one List"),
    ],
    ids=["missing", "truncated JSON", "not a List"],
)
def test_file_source_unusable_file_is_an_input_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "snapshot.json"
    if content is not None:
        path.write_text(content)
    source = FileSource(path)
    with pytest.raises(InputError, match=message):
        source.start()
    assert source.synced() is False and source.snapshot() is None


def test_snapshot_objects_trims_and_skips_kinds_the_model_does_not_read() -> None:
    kinds = [o["kind"] for o in snapshot_objects(cluster_objects())]
    assert kinds == ["Node", "Node", "Pod", "Pod", "Pod"]


def test_trimmed_snapshot_equals_the_full_one() -> None:
    """Snapshot from trimmed objects: same nodes, same pods per node, same requests."""
    objs = [*cluster_objects(), *requests_cases()]
    for i, pod in enumerate(objs[-5:]):
        pod["spec"]["nodeName"] = f"n{i % 2}"
    full, trimmed = Snapshot.from_objects(objs), Snapshot.from_objects(snapshot_objects(objs))

    def view(s: Snapshot) -> dict[str, Any]:
        return {
            name: (sorted(p["metadata"]["name"] for p in info.pods), info.requested, info.labels)
            for name, info in s.nodes.items()
        }

    assert view(trimmed) == view(full)


# ---- reading -------------------------------------------------------------------------


def test_read_snapshot_works_with_sources_without_reading() -> None:
    snap = Snapshot.from_objects([])

    class Bare:
        def snapshot(self) -> Snapshot:
            return snap

    with read_snapshot(Bare()) as got:  # type: ignore[arg-type]
        assert got is snap
    with read_snapshot(StaticSource(snap)) as got:
        assert got is snap


def test_writer_waits_for_readers() -> None:
    lock = ReadWriteLock()
    written = threading.Event()

    def write() -> None:
        with lock.write():
            written.set()

    with lock.read():
        writer = threading.Thread(target=write)
        writer.start()
        assert not written.wait(0.2)
    assert written.wait(5)
    writer.join(5)


def test_waiting_writer_holds_back_new_readers_but_not_nested_reads() -> None:
    """Writer preference, with re-entrant reads so a reader cannot deadlock itself."""
    lock = ReadWriteLock()
    order: list[str] = []
    writer_waiting = threading.Event()

    def write() -> None:
        writer_waiting.set()
        with lock.write():
            order.append("write")

    def read() -> None:
        with lock.read():
            order.append("late read")

    with lock.read():
        writer = threading.Thread(target=write)
        writer.start()
        writer_waiting.wait(5)
        while not lock._writers_waiting:  # the writer is queued on the condition
            threading.Event().wait(0.001)
        late = threading.Thread(target=read)
        late.start()
        with lock.read():  # nested: must not wait behind the queued writer
            order.append("nested read")
    writer.join(5)
    late.join(5)
    assert order == ["nested read", "write", "late read"]
