"""Snapshot: building from objects, incremental upsert/delete, counts, and load_snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.builders import ZONE, PodBuilder, make_node, make_pod, selector
from webhook.cluster.files import load_snapshot
from webhook.errors import InputError
from webhook.scheduler.framework.snapshot import Snapshot

DATA = paths.DATA / "snapshots"
FOO = selector({"foo": "bar"})


def foo_pod(name: str, node: str, ns: str = "default", **labels: str) -> dict:
    return make_pod().name(name).namespace(ns).labels({"foo": "bar", **labels}).node(node).obj()


def test_from_objects_keeps_nodes_bound_pods_and_workloads() -> None:
    """Nodes, bound pods and the four workload kinds are kept; other kinds are ignored."""
    svc = {"kind": "Service", "metadata": {"name": "s", "namespace": "ns1"}, "spec": {}}
    rs = {"kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "ns1"}, "spec": {}}
    ss = {"kind": "StatefulSet", "metadata": {"name": "t", "namespace": "ns2"}}
    rc = {"kind": "ReplicationController", "metadata": {"name": "c"}}
    cm = {"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns1"}}
    snap = Snapshot.from_objects(
        [
            make_node().name("n1").obj(),
            foo_pod("p", "n1"),
            make_pod().name("u").obj(),
            svc,
            rs,
            ss,
            rc,
            cm,
        ]
    )
    assert list(snap.nodes) == ["n1"]
    assert [p["metadata"]["name"] for p in snap.nodes["n1"].pods] == ["p"]
    assert snap.services == {"ns1": [svc]}
    assert snap.replicasets == {"ns1": [rs]}
    assert snap.statefulsets == {"ns2": [ss]}
    assert snap.replicationcontrollers == {"default": [rc]}


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Node"},
        {"kind": "Node", "metadata": None},
        {"kind": "Pod", "metadata": {"namespace": "x"}},
        {"kind": "Pod", "metadata": {"name": "p"}, "spec": None},
        {
            "kind": "Pod",
            "metadata": {"name": "p", "labels": ["not", "a", "map"]},
            "spec": {"nodeName": "n1"},
        },
        {
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1"},
            "status": {"phase": []},
        },
        {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": "x"},
        {"kind": None},
        "not an object",
        None,
    ],
)
def test_malformed_objects_never_raise(obj) -> None:
    """Objects missing fields are skipped or read with defaults, never an exception."""
    snap = Snapshot.from_objects([make_node().name("n1").obj(), obj])
    assert list(snap.nodes) == ["n1"]


def test_node_without_labels_has_empty_labels() -> None:
    snap = Snapshot.from_objects([{"kind": "Node", "metadata": {"name": "bare"}}])
    assert snap.nodes["bare"].labels == {}


def test_requested_sums_and_subtracts_pod_requests() -> None:
    """NodeInfo.requested follows pods as they come and go."""
    snap = Snapshot.from_objects([make_node().name("n1").obj()])
    snap.upsert(make_pod().name("a").node("n1").requests(cpu="500m", memory="1Gi").obj())
    snap.upsert(make_pod().name("b").node("n1").requests(cpu="250m").obj())
    assert snap.nodes["n1"].requested["cpu"] == 750
    assert snap.nodes["n1"].requested["memory"] == 2**30
    assert snap.nodes["n1"].requested["pods"] == 2
    snap.delete({"kind": "Pod", "metadata": {"name": "a", "namespace": "default"}})
    assert snap.nodes["n1"].requested["cpu"] == 250
    assert "memory" not in snap.nodes["n1"].requested
    assert [p["metadata"]["name"] for p in snap.nodes["n1"].pods] == ["b"]


MI = 2**20


def nothing(name: str) -> PodBuilder:
    """A pod on n1 with one container requesting nothing."""
    return make_pod().name(name).node("n1")


@pytest.mark.parametrize(
    ("upserts", "deleted", "want"),
    [
        pytest.param(
            [nothing("a").obj()],
            [],
            {"cpu": 100, "memory": 200 * MI},
            id="a container requesting nothing counts 100m and 200Mi",
        ),
        pytest.param(
            [make_pod().name("a").node("n1").requests(cpu="250m").obj()],
            [],
            {"cpu": 250, "memory": 200 * MI},
            id="a container requesting cpu only counts 200Mi of memory",
        ),
        pytest.param(
            [make_pod().name("a").node("n1").requests(cpu="0", memory="0").obj()],
            [],
            {"cpu": 0, "memory": 0},
            id="an explicit zero stays zero",
        ),
        pytest.param(
            [
                nothing("a").obj(),
                make_pod().name("b").node("n1").requests(cpu="500m", memory="1Gi").obj(),
            ],
            [],
            {"cpu": 600, "memory": 1024 * MI + 200 * MI},
            id="sums over the node's pods",
        ),
        pytest.param(
            [
                nothing("a").obj(),
                make_pod().name("b").node("n1").requests(cpu="500m", memory="1Gi").obj(),
            ],
            ["a"],
            {"cpu": 500, "memory": 1024 * MI},
            id="a deleted pod is subtracted",
        ),
        pytest.param(
            [nothing("a").obj(), nothing("a").requests(cpu="2").obj()],
            [],
            {"cpu": 2000, "memory": 200 * MI},
            id="an updated pod replaces what it counted",
        ),
        pytest.param(
            [nothing("a").obj(), nothing("b").phase("Succeeded").obj()],
            [],
            {"cpu": 100, "memory": 200 * MI},
            id="a pod in a terminal phase counts nothing",
        ),
        pytest.param(
            [nothing("a").terminating().obj()],
            [],
            {"cpu": 100, "memory": 200 * MI},
            id="a terminating pod still counts",
        ),
    ],
)
def test_non_zero_requested_follows_pods(
    upserts: list[dict[str, Any]], deleted: list[str], want: dict[str, int]
) -> None:
    """NodeInfo.non_zero_requested (upstream's NonZeroRequested): cpu and memory with
    100m / 200Mi for each container that requests none, kept as pods come and go,
    while requested keeps the plain requests."""
    snap = Snapshot.from_objects([make_node().name("n1").obj()])
    for pod in upserts:
        snap.upsert(pod)
    for name in deleted:
        snap.delete({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}})
    info = snap.nodes["n1"]
    assert {k: info.non_zero_requested.get(k, 0) for k in want} == want
    assert set(info.non_zero_requested) <= {"cpu", "memory"}
    rebuilt = Snapshot.from_objects(
        [
            make_node().name("n1").obj(),
            *[p for p in upserts if p["metadata"]["name"] not in deleted],
        ]
    )
    assert info.requested == rebuilt.nodes["n1"].requested


def test_copy_keeps_its_own_non_zero_requested() -> None:
    """A copy's NodeInfo sums its own pods: binding to the copy leaves the original."""
    snap = Snapshot.from_objects([make_node().name("n1").obj(), nothing("a").obj()])
    other = snap.copy()
    other.add_pod(make_pod().name("b").obj(), "n1")
    assert snap.nodes["n1"].non_zero_requested == {"cpu": 100, "memory": 200 * MI}
    assert other.nodes["n1"].non_zero_requested == {"cpu": 200, "memory": 400 * MI}


PV = {"kind": "PersistentVolume", "metadata": {"name": "pv"}, "spec": {}}
PDB = {"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"}}


@pytest.mark.parametrize(
    ("change", "moves"),
    [
        pytest.param(lambda s: s.upsert(PV), True, id="a PV comes"),
        pytest.param(lambda s: s.delete(PV), False, id="an unknown PV goes"),
        pytest.param(
            lambda s: s.upsert({"kind": "StorageClass", "metadata": {"name": "sc"}}),
            True,
            id="a StorageClass comes",
        ),
        pytest.param(
            lambda s: s.upsert(make_pod().name("a").node("n1").obj()), False, id="a pod is bound"
        ),
        pytest.param(lambda s: s.upsert(make_node().name("n2").obj()), False, id="a node comes"),
        pytest.param(lambda s: s.upsert(PDB), False, id="a PodDisruptionBudget comes"),
        pytest.param(
            lambda s: (s.upsert(PDB), s.delete(PDB)), False, id="a PodDisruptionBudget goes"
        ),
        pytest.param(
            lambda s: s.upsert({"kind": "PriorityClass", "metadata": {"name": "high"}}),
            False,
            id="a PriorityClass comes",
        ),
    ],
)
def test_objects_version_moves_with_the_volume_objects(change: Any, moves: bool) -> None:
    """objects_version (what the volume plugins' remembered verdicts are keyed by)
    changes with PVs, PVCs, StorageClasses and CSINodes only."""
    snap = Snapshot.from_objects([make_node().name("n1").obj()])
    before = snap.objects_version
    change(snap)
    assert (snap.objects_version != before) is moves
    assert snap.copy().objects_version == snap.objects_version


def test_light_pods_share_one_affinity_per_content() -> None:
    """Bound pods with the same (anti-)affinity hold one dict (a Deployment's replicas),
    equal to what they carry; a pod with other terms keeps its own."""

    def with_anti(name: str, app: str) -> dict[str, Any]:
        pod = make_pod().name(name).node("n1").obj()
        pod["spec"]["affinity"] = {
            "nodeAffinity": {"x": 1},
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": ZONE}
                ]
            },
        }
        return pod

    pods = [with_anti("a", "web"), with_anti("b", "web"), with_anti("c", "db")]
    snap = Snapshot.from_objects([make_node().name("n1").obj(), *pods])
    held = {p["metadata"]["name"]: p["spec"]["affinity"] for p in snap.nodes["n1"].pods}
    assert held["a"] is held["b"] is not held["c"]
    for pod in pods:
        want = {"podAntiAffinity": pod["spec"]["affinity"]["podAntiAffinity"]}
        assert held[pod["metadata"]["name"]] == want


def test_terminating_pod_holds_resources_but_is_not_counted() -> None:
    """Bypass terminating pods in counts (kubernetes#87621); they still use the node."""
    snap = Snapshot.from_objects(
        [
            make_node().name("n1").obj(),
            make_pod().name("t").label("foo", "bar").node("n1").terminating().obj(),
        ]
    )
    assert len(snap.nodes["n1"].pods) == 1
    assert snap.match_counts("default", FOO) == {}


def test_finished_pods_are_dropped() -> None:
    """Succeeded and Failed pods are gone from the scheduler's view."""
    snap = Snapshot.from_objects(
        [
            make_node().name("n1").obj(),
            make_pod().name("s").node("n1").phase("Succeeded").obj(),
            make_pod().name("f").node("n1").phase("Failed").obj(),
            make_pod().name("r").node("n1").phase("Running").obj(),
        ]
    )
    assert [p["metadata"]["name"] for p in snap.nodes["n1"].pods] == ["r"]


def test_counts_follow_upserts_and_deletes() -> None:
    """An index built once is kept right through adds, label changes, moves and deletes."""
    snap = Snapshot.from_objects(
        [make_node().name("n1").obj(), make_node().name("n2").obj(), foo_pod("a", "n1")]
    )
    assert snap.match_counts("default", FOO) == {"n1": 1}
    snap.upsert(foo_pod("b", "n1"))
    snap.upsert(foo_pod("c", "n2"))
    assert snap.match_counts("default", FOO) == {"n1": 2, "n2": 1}
    snap.upsert(make_pod().name("b").label("foo", "other").node("n1").obj())  # relabelled
    assert snap.match_counts("default", FOO) == {"n1": 1, "n2": 1}
    snap.upsert(foo_pod("a", "n2"))  # moved
    assert snap.match_counts("default", FOO) == {"n2": 2}
    snap.delete(foo_pod("c", "n2"))
    snap.upsert(foo_pod("d", "n1", ns="other"))
    assert snap.match_counts("default", FOO) == {"n2": 1}
    assert snap.match_counts("other", FOO) == {"n1": 1}


def test_pods_seen_before_their_node_attach_when_it_arrives() -> None:
    """A pod bound to an unknown node waits; the node brings it along when added."""
    snap = Snapshot.from_objects([foo_pod("a", "late")])
    assert snap.nodes == {}
    snap.upsert(make_node().name("late").zone("z").obj())
    assert [p["metadata"]["name"] for p in snap.nodes["late"].pods] == ["a"]


def test_deleting_a_node_keeps_its_pods_for_when_it_returns() -> None:
    snap = Snapshot.from_objects([make_node().name("n1").obj(), foo_pod("a", "n1")])
    snap.delete({"kind": "Node", "metadata": {"name": "n1"}})
    assert snap.nodes == {}
    snap.upsert(make_node().name("n1").obj())
    assert len(snap.nodes["n1"].pods) == 1


def test_node_relabel_updates_key_index() -> None:
    """Changing a node's zone label changes the domains at the next decision."""
    snap = Snapshot.from_objects([make_node().name("n1").zone("a").obj()])
    assert snap.key_index((ZONE,)) == ({"n1": ("a",)}, (("a",),))
    snap.upsert(make_node().name("n1").zone("b").obj())
    assert snap.key_index((ZONE,)) == ({"n1": ("b",)}, (("b",),))


def test_workload_upsert_replaces_by_name_and_delete_removes() -> None:
    svc = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"selector": {"a": "1"}},
    }
    svc2 = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"selector": {"a": "2"}},
    }
    snap = Snapshot.from_objects([svc])
    snap.upsert(svc2)
    assert snap.services == {"ns": [svc2]}
    snap.delete(svc2)
    assert snap.services == {}


def test_add_pod_binds_a_copy() -> None:
    pod = make_pod().name("x").label("foo", "bar").obj()
    snap = Snapshot.from_objects([make_node().name("n1").obj()])
    snap.add_pod(pod, "n1")
    assert "nodeName" not in pod["spec"]
    assert snap.match_counts("default", FOO) == {"n1": 1}


def test_copy_pod_binds_a_copy_with_its_labels_and_requests() -> None:
    """copy_pod: the stored pod again on another node under a new name, counted and
    holding its requests there; the original stays; an unknown pod is not copied."""
    ds = (
        make_pod().name("logs-1").namespace("kube-system").label("foo", "bar")
        .owner("DaemonSet", "logs").node("n1").requests(cpu="200m").obj()
    )  # fmt: skip
    snap = Snapshot.from_objects([make_node().name("n1").obj(), make_node().name("n2").obj(), ds])
    assert snap.copy_pod("kube-system", "logs-1", "logs-1-n2", "n2")
    assert snap.match_counts("kube-system", FOO) == {"n1": 1, "n2": 1}
    held = {"cpu": 200, "memory": 0, "pods": 1}
    assert snap.nodes["n2"].requested == snap.nodes["n1"].requested == held
    [copied] = snap.nodes["n2"].pods
    assert copied["metadata"]["name"] == "logs-1-n2" and copied["spec"]["nodeName"] == "n2"
    assert copied["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert not snap.copy_pod("kube-system", "absent", "x", "n2")
    snap.delete({"kind": "Pod", "metadata": {"namespace": "kube-system", "name": "logs-1-n2"}})
    assert snap.nodes["n2"].requested == {} and snap.nodes["n1"].requested == held


@pytest.mark.parametrize(
    ("kind", "kept"), [("DaemonSet", True), ("ReplicaSet", False)], ids=["DaemonSet", "other"]
)
def test_light_pods_keep_only_a_daemonset_controller_reference(kind: str, kept: bool) -> None:
    """What a template node copies is the DaemonSet pods of its source node."""
    pod = make_pod().name("p").owner(kind, "owner").node("n1").obj()
    snap = Snapshot.from_objects([make_node().name("n1").obj(), pod])
    [light] = snap.nodes["n1"].pods
    assert ("ownerReferences" in light["metadata"]) is kept


def test_copy_is_independent() -> None:
    """Changing a copy leaves the original untouched, indexes included."""
    snap = Snapshot.from_objects([make_node().name("n1").obj(), foo_pod("a", "n1")])
    assert snap.match_counts("default", FOO) == {"n1": 1}
    other = snap.copy()
    other.upsert(foo_pod("b", "n1"))
    other.upsert(make_node().name("n2").obj())
    assert snap.match_counts("default", FOO) == {"n1": 1}
    assert len(snap.nodes["n1"].pods) == 1
    assert snap.node_names() == ["n1"]
    assert other.match_counts("default", FOO) == {"n1": 2}
    assert other.node_names() == ["n1", "n2"]


# ---- load_snapshot ----------------------------------------------------------------


def _items() -> list[dict]:
    return [make_node().name("n1").zone("a").obj(), foo_pod("a", "n1")]


def test_load_snapshot_json_list(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": _items(), "metadata": {}})
    )
    snap = load_snapshot(path)
    assert list(snap.nodes) == ["n1"] and snap.pod_count() == 1


def test_load_snapshot_json_with_kind_after_items_and_nested_values(tmp_path: Path) -> None:
    """Field order does not matter; the items are streamed one by one."""
    items = json.dumps(_items())
    text = '{"items": ' + items + ', "metadata": {"a": [1, {"b": "]"}]}, "kind": "List"}'
    path = tmp_path / "s.json"
    path.write_text(text)
    assert load_snapshot(path).pod_count() == 1


def test_load_snapshot_yaml_list(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": _items()}))
    assert load_snapshot(path).pod_count() == 1


def test_load_snapshot_shipped_example() -> None:
    snap = load_snapshot(DATA / "small.json")
    assert snap.node_names() == ["node-a", "node-b", "node-c", "node-d", "node-e"]


def test_load_snapshot_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_snapshot(tmp_path / "absent.json")


# ---- the journal of node changes ------------------------------------------------


def _journal_cluster() -> Snapshot:
    return Snapshot.from_objects(
        [make_node().name(n).zone("a").obj() for n in ("n1", "n2", "n3")]
        + [make_pod().name("p1").node("n1").obj()]
    )


def test_changed_since_names_the_nodes_changed_after_the_mark() -> None:
    snap = _journal_cluster()
    mark = snap.journal_mark()
    assert snap.changed_since(mark) == set()
    snap.upsert(make_pod().name("p2").node("n2").obj())  # a pod added
    snap.delete(make_pod().name("p1").obj())  # a pod removed
    snap.upsert(make_node().name("n3").zone("b").obj())  # a Node updated
    assert snap.changed_since(mark) == {"n1", "n2", "n3"}
    later = snap.journal_mark()
    snap.delete({"kind": "Node", "metadata": {"name": "n3"}})
    assert snap.changed_since(later) == {"n3"}


def test_changed_since_does_not_know_other_snapshots_or_old_marks(monkeypatch: Any) -> None:
    from webhook.scheduler.framework import snapshot as module

    snap = _journal_cluster()
    assert snap.changed_since(None) is None
    assert snap.copy().changed_since(snap.journal_mark()) is None
    monkeypatch.setattr(module, "_JOURNAL_KEEP", 4)
    mark = snap.journal_mark()
    for i in range(6):
        snap.upsert(make_pod().name(f"q{i}").node("n2").obj())
    assert snap.changed_since(mark) is None  # the journal no longer reaches back
    assert snap.changed_since(snap.journal_mark()) == set()


def test_budgets_and_priority_classes_are_held_by_namespace_and_name() -> None:
    """A PodDisruptionBudget is namespaced, a PriorityClass cluster-scoped; a copy has
    both, and deleting one from the copy leaves the original alone."""
    high = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    snap = Snapshot.from_objects([PDB, high])
    assert snap.get("PodDisruptionBudget", "shop", "web") is PDB
    assert snap.get("PodDisruptionBudget", "default", "web") is None
    assert snap.get("PriorityClass", "any-namespace", "high") is high
    other = snap.copy()
    other.delete(PDB)
    assert other.listed("PodDisruptionBudget") == []
    assert snap.listed("PodDisruptionBudget") == [PDB]


# ---- memory: what light pods share ------------------------------------------------


def test_replicas_share_one_labels_dict_and_each_node_one_spec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods with equal labels hold one labels dict; pods that keep only their node hold
    one spec per node; a full cache starts afresh and still holds equal contents."""
    from webhook.scheduler.framework import snapshot as module

    snap = Snapshot()
    for node in ("n1", "n2"):
        snap.upsert(make_node().name(node).obj())
    for name, node in (("a", "n1"), ("b", "n1"), ("c", "n2")):
        snap.upsert(foo_pod(name, node))
    snap.upsert(foo_pod("d", "n2", tier="web"))
    a, b = snap.nodes["n1"].pods
    c, d = snap.nodes["n2"].pods
    assert a["metadata"]["labels"] is b["metadata"]["labels"] is c["metadata"]["labels"]
    assert d["metadata"]["labels"] == {"foo": "bar", "tier": "web"}
    assert a["spec"] is b["spec"] and a["spec"] == {"nodeName": "n1"}
    assert c["spec"] is d["spec"] and c["spec"] == {"nodeName": "n2"}
    monkeypatch.setattr(module, "MAX_SHARED_LABELS", 1)
    snap.upsert(foo_pod("e", "n2"))
    e = snap.nodes["n2"].pods[-1]
    assert e["metadata"]["labels"] == a["metadata"]["labels"]
    assert snap.match_counts("default", FOO) == {"n1": 2, "n2": 3}
