"""`topospread simulate` and placement.simulate: output shapes, replicas, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.builders import DNS, HOSTNAME, SA, ZONE, make_node, make_pod, selector, workload
from webhook.cli.main import main
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Code
from webhook.scheduler.placement import place, simulate

DATA = paths.DATA / "snapshots"
SMALL = str(DATA / "small.json")
WEB = str(DATA / "web-pod.json")
# interfaces.md "Scheduler profile": the filter plugins in the scheduler's order, and
# the default score weights.
# v1.37's filter order (the offline default): NodeName before NodeUnschedulable.
PLUGINS = [
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    # On by default since v1.36 (GA in v1.37): appended last by applyFeatureGates.
    "NodeDeclaredFeatures",
]
WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_follows_the_spec(capsys: pytest.CaptureFixture[str]) -> None:
    """small.json: zone-a holds 3 web pods, zone-b 1 (node-c), node-e has no zone.

    Only zone-b passes (1 + 1 - 1 <= 1); node-d has no web pod, so the hostname
    score prefers it (raw 0 vs 1 -> 100 vs 0).
    """
    code, out, err = run(capsys, "--snapshot", SMALL, "-o", "json", WEB)
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc) == [
        "pod",
        "nodes",
        "selectedNode",
        "tiedNodes",
        "placements",
        "distribution",
        "preemption",
        "scaleUp",
        "kubernetesVersion",
    ]
    assert doc["kubernetesVersion"] == "1.37"  # offline: the newest
    assert doc["preemption"] is None
    assert doc["scaleUp"] == {}  # placed: nothing pending
    assert doc["pod"] == "default/web"
    assert [n["name"] for n in doc["nodes"]] == ["node-a", "node-b", "node-c", "node-d", "node-e"]
    for n in doc["nodes"]:
        assert list(n["filters"]) == PLUGINS
    by_name = {n["name"]: n for n in doc["nodes"]}
    assert by_name["node-a"]["feasible"] is False
    assert by_name["node-a"]["filters"]["PodTopologySpread"] == {
        "code": "Unschedulable",
        "reason": "node(s) didn't match pod topology spread constraints",
    }
    assert by_name["node-e"]["filters"]["PodTopologySpread"] == {
        "code": "UnschedulableAndUnresolvable",
        "reason": "node(s) didn't match pod topology spread constraints (missing required label)",
    }
    assert by_name["node-a"]["scores"] == {}
    assert "score" not in by_name["node-a"]
    assert by_name["node-c"]["scores"]["PodTopologySpread"] == 0
    assert by_name["node-d"]["scores"]["PodTopologySpread"] == 100
    for name in ("node-c", "node-d"):
        node = by_name[name]
        # Skipped plugins (no preferred affinity, no volumes) are absent and add nothing.
        assert set(node["scores"]) == {
            "TaintToleration",
            "NodeResourcesFit",
            "PodTopologySpread",
            "NodeResourcesBalancedAllocation",
            "ImageLocality",
        }
        assert node["score"] == sum(WEIGHTS[p] * s for p, s in node["scores"].items())
    assert doc["selectedNode"] == "node-d"
    assert doc["tiedNodes"] == ["node-d"]
    assert doc["placements"] == ["node-d"]
    # distribution is counted once the pod is placed
    assert doc["distribution"][ZONE] == {"zone-a": 3, "zone-b": 2}


def test_replicas_place_copies_one_after_another(capsys: pytest.CaptureFixture[str]) -> None:
    """Worked by hand: d (zone-b, empty node), c (tie c/d at 100, by name), b (zones
    even at 3/3; b and d score 100, by name), d (zone-b again, d has fewer)."""
    code, out, _ = run(capsys, "--snapshot", SMALL, "-o", "json", "--replicas", "4", WEB)
    assert code == 0
    doc = json.loads(out)
    assert doc["selectedNode"] == "node-d"
    assert doc["placements"] == ["node-d", "node-c", "node-b", "node-d"]
    assert doc["distribution"] == {
        ZONE: {"zone-a": 4, "zone-b": 4},
        HOSTNAME: {"node-a": 2, "node-b": 2, "node-c": 2, "node-d": 2, "node-e": 0},
    }


def test_table_output_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--snapshot", SMALL, "--replicas", "2", WEB)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "Pod default/web: 2/5 nodes feasible, selected node-d"
    assert lines[1].split() == ["NODE", "FEASIBLE", "SCORE", "DECIDED", "BY", "/", "WHY", "NOT"]
    # SCORE is the weighted sum; DECIDED BY the scores that differ between feasible nodes.
    node_d = lines[5].split()
    assert node_d[:2] == ["node-d*", "yes"]
    assert "PodTopologySpread=100," in node_d
    assert "TaintToleration" not in lines[5]  # every node scores the same: decides nothing
    assert "missing required label" in lines[6]
    assert "Placements (2/2 placed):" in out
    assert "topology.kubernetes.io/zone  (skew 0)" in out


def test_a_workload_file_stands_for_its_pod_template(tmp_path: Path, capsys) -> None:
    pod = json.loads(Path(WEB).read_text())
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(workload("Deployment", pod, name="web")))
    code, out, _ = run(capsys, "--snapshot", SMALL, "-o", "json", str(path))
    assert code == 0
    assert json.loads(out)["selectedNode"] == "node-d"


def test_invalid_pod_is_evaluated_with_warnings(tmp_path: Path, capsys) -> None:
    """maxSkew 0 is rejected by the API but simulate still evaluates it, as the scheduler would."""
    pod = (
        make_pod()
        .name("bad")
        .label("app", "web")
        .spread(0, ZONE, DNS, selector({"app": "web"}))
        .obj()
    )
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(pod))
    code, out, err = run(capsys, "--snapshot", SMALL, "-o", "json", str(path))
    assert code == 0
    assert "warning: spec.topologySpreadConstraints[0].maxSkew" in err
    # 0 + 1 - 1 > 0 in zone-b, worse elsewhere: no node passes.
    assert json.loads(out)["selectedNode"] is None


@pytest.mark.parametrize(
    ("files", "argv", "fragment"),
    [
        pytest.param(
            {"snap.json": json.dumps({"kind": "Pod"})},
            [],
            "must be one List",
            id="snapshot not a List",
        ),
        pytest.param({"pod.yaml": "metadata: {name: x}\n"}, [], "has no kind", id="no kind"),
        pytest.param(
            {"pod.yaml": "kind: Service\n"}, [], "cannot simulate a Service", id="not a pod"
        ),
        pytest.param(
            {"pod.yaml": "kind: Pod\nspec: [1]\n"}, [], "must be objects", id="spec a list"
        ),
        pytest.param({}, ["--replicas", "0"], "--replicas must be at least 1", id="zero replicas"),
        pytest.param({"pod.yaml": "kind: [\n"}, [], "not valid YAML", id="pod file unreadable"),
    ],
)
def test_bad_input_exits_2_without_traceback(tmp_path: Path, capsys, files, argv, fragment) -> None:
    snap, pod = SMALL, WEB
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        if name.startswith("snap"):
            snap = str(tmp_path / name)
        else:
            pod = str(tmp_path / name)
    code, out, err = run(capsys, "--snapshot", snap, *argv, pod)
    assert code == 2
    assert fragment in err
    assert "Traceback" not in err
    assert out == ""


def test_missing_snapshot_file_exits_2(tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "--snapshot", str(tmp_path / "none.json"), WEB)
    assert code == 2 and "no such file" in err


def _three_hosts() -> Snapshot:
    return Snapshot.from_objects([make_node().name(n).hostname().obj() for n in ("n1", "n2", "n3")])


def test_min_domains_blog_example_leaves_two_replicas_pending() -> None:
    """v1.27 blog: 3 nodes, minDomains 5: 3 pods go to 3 nodes, the other 2 wait."""
    pod = (
        make_pod()
        .name("p")
        .label("foo", "bar")
        .spread(1, HOSTNAME, DNS, selector({"foo": "bar"}), minDomains=5)
        .obj()
    )
    snap = _three_hosts()
    sim = simulate(pod, snap, replicas=5)
    assert sim.placements == ["n1", "n2", "n3", None, None]
    assert sim.distribution == {HOSTNAME: {"n1": 1, "n2": 1, "n3": 1}}
    assert snap.pod_count() == 0  # the caller's snapshot is untouched


def test_copies_get_distinct_names() -> None:
    """Each copy stays in the snapshot: were they all named "web", each would replace
    the one before and the third would go back to n1 ([n1, n2, n1])."""
    pod = (
        make_pod()
        .name("web")
        .label("foo", "bar")
        .spread(1, HOSTNAME, SA, selector({"foo": "bar"}))
        .obj()
    )
    sim = simulate(pod, _three_hosts(), replicas=3)
    assert sim.placements == ["n1", "n2", "n3"]
    assert sim.distribution == {HOSTNAME: {"n1": 1, "n2": 1, "n3": 1}}


def test_no_node_at_all_gives_no_selection() -> None:
    placement = place(make_pod().name("p").obj(), Snapshot())
    assert placement.selected_node is None and placement.nodes == []


def test_reasons_count_every_failing_plugin() -> None:
    """A node failing two plugins counts under both reasons."""
    objs = [
        make_node().name("a").unschedulable().obj(),
        make_node().name("b").zone("z").obj(),
    ]
    pod = (
        make_pod()
        .name("p")
        .label("foo", "bar")
        .spread(1, ZONE, DNS, selector({"foo": "bar"}))
        .obj()
    )
    placement = place(pod, Snapshot.from_objects(objs))
    assert placement.reasons == {
        "node(s) didn't match pod topology spread constraints (missing required label)": 1,
        "node(s) were unschedulable": 1,
    }
    assert placement.selected_node == "b"


def test_remembered_filter_verdicts_follow_node_changes() -> None:
    """A second decision for the same spec sees a node filled up, tainted, or
    deleted and re-added differently since the first."""
    pod = make_pod().name("p").requests(cpu="1").obj()
    snap = Snapshot.from_objects(
        [
            make_node().name("a").allocatable(cpu="1", pods="10").obj(),
            make_node().name("b").allocatable(cpu="2", pods="10").obj(),
        ]
    )
    assert [n.feasible for n in place(pod, snap).nodes] == [True, True]
    snap.upsert(make_pod().name("busy").node("a").requests(cpu="500m").obj())
    snap.upsert(make_node().name("b").allocatable(cpu="2", pods="10").taint("k", "v").obj())
    first = place(pod, snap)
    assert [n.feasible for n in first.nodes] == [False, False]
    assert first.nodes[0].filters["NodeResourcesFit"].reason == "Insufficient cpu"
    assert first.nodes[1].filters["TaintToleration"].code is Code.UNRESOLVABLE
    snap.delete({"kind": "Pod", "metadata": {"name": "busy", "namespace": "default"}})
    snap.delete({"kind": "Node", "metadata": {"name": "b"}})
    snap.upsert(make_node().name("b").allocatable(cpu="2", pods="10").obj())
    assert [n.feasible for n in place(pod, snap).nodes] == [True, True]


def test_simulate_reuses_nothing_stale_from_the_caller() -> None:
    """Verdicts remembered on the caller's snapshot carry into a simulation's copy
    only while valid: copies landing on a node are seen by the next copy."""
    pod = make_pod().name("p").requests(cpu="1").obj()
    snap = Snapshot.from_objects([make_node().name("a").allocatable(cpu="2", pods="10").obj()])
    place(pod, snap)  # remembers "a fits"
    assert simulate(pod, snap, replicas=3).placements == ["a", "a", None]
    assert place(pod, snap).selected_node == "a"  # the caller's snapshot is unchanged


def test_reasons_count_each_resource_shortfall_separately() -> None:
    """A node short of cpu and full of pods counts once under each reason, as FitError does."""
    from tests.builders import make_node, make_pod
    from webhook.scheduler.framework.snapshot import Snapshot
    from webhook.scheduler.placement import place

    full = make_node().name("full").allocatable(cpu="1", memory="1Gi", pods="1").obj()
    short = make_node().name("short").allocatable(cpu="1", memory="1Gi", pods="10").obj()
    resident = make_pod().name("resident").node("full").requests(cpu="100m").obj()
    pod = make_pod().name("new").requests(cpu="2").obj()
    placement = place(pod, Snapshot.from_objects([full, short, resident]))
    assert placement.reasons == {"Insufficient cpu": 2, "Too many pods": 1}
    fit = placement.nodes[0].filters["NodeResourcesFit"]
    assert fit.reason == "Too many pods, Insufficient cpu"


def test_a_node_changed_while_its_group_is_judged_spoils_no_other_verdict(monkeypatch) -> None:
    """Two nodes alike for the filters form one group, judged through its first node;
    when that node fills up during the decision (a concurrent update), the other
    node is still judged on its own state, then and in the next decision."""
    import webhook.scheduler.framework.runtime.filter as placement_module

    pod = make_pod().name("p").requests(cpu="1").obj()
    snap = Snapshot.from_objects(
        [make_node().name(n).allocatable(cpu="1", pods="10").obj() for n in ("a", "b")]
    )
    real = placement_module.passing
    calls = []

    def passing_during_an_update(prepared, infos):
        if not calls:
            snap.upsert(make_pod().name("busy").node("a").requests(cpu="500m").obj())
        calls.append(len(infos))
        return real(prepared, infos)

    monkeypatch.setattr(placement_module, "passing", passing_during_an_update)
    first = place(pod, snap)
    monkeypatch.setattr(placement_module, "passing", real)
    assert calls[0] == 1  # the group was judged through one node
    assert [n.feasible for n in first.nodes] == [False, True]
    assert [n.feasible for n in place(pod, snap).nodes] == [False, True]


# ---------------------------------------------------------------------------------------
# simulate on a multi-document render


CHART = str(paths.DATA / "render" / "chart.yaml")


def old_revision_snapshot(tmp_path: Path) -> str:
    """Zones a and b, one node each; three pods of web's previous revision on a1."""
    objs = [
        make_node().name("a1").zone("a").hostname().obj(),
        make_node().name("b1").zone("b").hostname().obj(),
        *(
            make_pod()
            .name(f"web-old-{i}")
            .namespace("shop")
            .labels({"app": "web", "pod-template-hash": "5d9c7b8f6"})
            .node("a1")
            .obj()
            for i in range(3)
        ),
    ]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return str(path)


def test_every_workload_of_a_render_with_its_replicas(tmp_path: Path, capsys) -> None:
    """Five documents, two workloads: each simulated with spec.replicas copies. web's new
    revision gets its own pod-template-hash, so matchLabelKeys leaves the three old pods
    out and the two new ones spread over both zones (counting the old ones would have put
    both in zone b)."""
    code, out, err = run(capsys, "--snapshot", old_revision_snapshot(tmp_path), "-o", "json", CHART)
    assert code == 0, err
    docs = json.loads(out)
    assert [(d["workload"], d["replicas"]) for d in docs] == [
        ("Deployment shop/web", 2),
        ("StatefulSet shop/cache", 3),
    ]
    web, cache = docs
    assert web["placements"] == ["a1", "b1"]
    assert web["distribution"][ZONE] == {"a": 1, "b": 1}
    assert sorted(cache["placements"][:2]) == ["a1", "b1"]
    assert len(cache["placements"]) == 3


def test_kind_and_name_choose_one_workload(tmp_path: Path, capsys) -> None:
    snap = old_revision_snapshot(tmp_path)
    code, out, _ = run(capsys, "--snapshot", snap, "-o", "json", "--kind", "statefulset", CHART)
    assert code == 0
    assert json.loads(out)["placements"][:2] in (["a1", "b1"], ["b1", "a1"])
    code, out, _ = run(capsys, "--snapshot", snap, "--name", "web", "--replicas", "1", CHART)
    assert code == 0
    assert out.splitlines()[0] == "Pod shop/web: 2/2 nodes feasible, selected a1"
    code, out, err = run(capsys, "--snapshot", snap, "--name", "api", CHART)
    assert code == 2
    assert "no workload matches --kind/--name; there are: Deployment/web, StatefulSet/cache" in err


def test_table_output_heads_each_workload(tmp_path: Path, capsys) -> None:
    code, out, _ = run(capsys, "--snapshot", old_revision_snapshot(tmp_path), CHART)
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("== ")]
    assert heads == [
        "== Deployment shop/web (2 replicas)",
        "== StatefulSet shop/cache (3 replicas)",
    ]


@pytest.mark.parametrize(
    ("kind", "labels"),
    [
        ("Deployment", {"pod-template-hash"}),
        ("StatefulSet", {"controller-revision-hash"}),
        ("DaemonSet", {"controller-revision-hash", "pod-template-generation"}),
        (
            "Job",
            {
                "batch.kubernetes.io/controller-uid",
                "batch.kubernetes.io/job-name",
                "controller-uid",
                "job-name",
            },
        ),
        ("ReplicaSet", set()),
    ],
)
def test_the_controller_labels_are_synthesised(kind: str, labels: set[str]) -> None:
    from webhook.cli.common import CliConfig
    from webhook.cli.simulate import workload_pod

    obj = workload(kind, make_pod().label("app", "web").obj(), name="web")
    pod = workload_pod(obj, CliConfig(), "default")
    assert set(pod["metadata"]["labels"]) == {"app", *labels}
    # Stable for one template, different for another revision.
    assert workload_pod(obj, CliConfig(), "default") == pod
    other = workload(kind, make_pod().label("app", "web").label("v", "2").obj(), name="web")
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):  # revisioned controllers
        changed = workload_pod(other, CliConfig(), "default")["metadata"]["labels"]
        assert any(changed[k] != pod["metadata"]["labels"][k] for k in labels)


def _nodes_cluster(count: int) -> list[dict[str, Any]]:
    return [
        make_node().name(f"n{i:03d}").zone(f"z{i % 3}").allocatable(cpu="4", pods="110").obj()
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("nodes", "all_nodes", "rows"),
    [
        pytest.param(3, False, 3, id="small cluster: a row per node"),
        pytest.param(60, False, 10, id="big cluster: the 10 best"),
        pytest.param(60, True, 60, id="big cluster with --all-nodes: every node"),
    ],
)
def test_table_rows_follow_the_cluster_size(nodes: int, all_nodes: bool, rows: int) -> None:
    """Past 50 nodes the table summarises (the best nodes); --all-nodes shows every row."""
    from webhook.cli.simulate import render_table
    from webhook.scheduler.placement import simulate

    sim = simulate(make_pod().name("p").obj(), Snapshot.from_objects(_nodes_cluster(nodes)))
    table = render_table(sim, all_nodes=all_nodes)
    body = [line for line in table.splitlines() if line.startswith("n") and " yes " in line]
    assert len(body) == rows
    assert ("--all-nodes for all" in table) is (nodes > 50 and not all_nodes)


def test_table_says_when_nodes_tie() -> None:
    """Alike nodes tie: the table names them and says the pick among them is random."""
    from webhook.cli.simulate import render_table
    from webhook.scheduler.placement import simulate

    sim = simulate(make_pod().name("p").obj(), Snapshot.from_objects(_nodes_cluster(3)))
    assert sim.first.tied_nodes == ["n000", "n001", "n002"]
    table = render_table(sim)
    assert "3 nodes tie at score" in table
    assert "n000, n001, n002" in table
    assert "picks one of them at random" in table


# ---------------------------------------------------------------------------------------
# pods no scheduling cycle is run for

VOLCANO = str(paths.DATA / "render" / "volcano.yaml")


def test_another_schedulers_workload_is_reported_and_the_rest_simulated(
    tmp_path: Path, capsys
) -> None:
    """A render with a Deployment for schedulerName volcano next to an ordinary one: the
    ordinary one is placed over both zones, volcano's is reported as not placed by this
    scheduler (kube-scheduler leaves it to volcano), exit 0."""
    snap = old_revision_snapshot(tmp_path)
    code, out, err = run(capsys, "--snapshot", snap, "-o", "json", VOLCANO)
    assert code == 0, err
    api, trainer = json.loads(out)
    assert (api["workload"], api["placements"]) == ("Deployment ml/api", ["a1", "b1"])
    assert "notScheduled" not in api
    assert trainer["workload"] == "Deployment ml/trainer"
    assert trainer["notScheduled"] == {
        "reason": "OtherScheduler",
        "message": 'schedulerName "volcano" has no profile here',
    }
    assert (trainer["nodes"], trainer["selectedNode"]) == ([], None)
    assert trainer["placements"] == [None, None, None]
    code, out, err = run(capsys, "--snapshot", snap, VOLCANO)
    assert code == 0, err
    lines = out.splitlines()
    assert "== Deployment ml/trainer (3 replicas)" in lines
    assert (
        'Pod ml/trainer: not placed by this scheduler: schedulerName "volcano" has no '
        "profile here" in lines
    )
    assert "Pod ml/api: 2/2 nodes feasible, selected a1" in lines


@pytest.mark.parametrize(
    ("pod", "not_scheduled", "line"),
    [
        (
            make_pod().name("web").scheduling_gates("example.com/quota").obj(),
            {
                "reason": "SchedulingGated",
                "message": "waiting for scheduling gates: [example.com/quota]",
                "plugin": "SchedulingGates",
            },
            "Pod default/web: not placed: gated: waiting for scheduling gates: "
            "[example.com/quota]",
        ),
        (
            make_pod().name("web").resource_claim("gpu").obj(),
            {
                "reason": "NotModelled",
                "message": "not modelled: DynamicResources",
                "plugin": "DynamicResources",
            },
            "Pod default/web: not placed: not modelled: DynamicResources",
        ),
    ],
    ids=["gated", "resource claims"],
)
def test_a_held_pod_is_reported_not_placed(
    tmp_path: Path, capsys, pod: Any, not_scheduled: Any, line: str
) -> None:
    """simulate JSON carries notScheduled (and no node), the table one line."""
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(pod))
    code, out, err = run(capsys, "--snapshot", SMALL, "-o", "json", "--replicas", "2", str(path))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["notScheduled"] == not_scheduled
    assert (doc["nodes"], doc["selectedNode"], doc["placements"]) == ([], None, [None, None])
    code, out, err = run(capsys, "--snapshot", SMALL, str(path))
    assert (code, out) == (0, line + "\n")


FULL = str(DATA / "full.json")
CRITICAL = str(DATA / "critical-pod.json")


def test_preemption_worked_example(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/simulate.md's example: three full nodes; payments (PriorityClass critical,
    resolved from the cluster state) evicts batch-1 on node-a, the one node where one
    pod of priority 0 within its budget makes room."""
    code, out, err = run(capsys, "--snapshot", FULL, CRITICAL)
    assert code == 0, err
    assert out.splitlines()[:2] == [
        "Pod shop/payments: 0/3 nodes feasible, selected none",
        "Preemption: would evict 1 pod(s) on node-a (shop/batch-1); the pod is nominated "
        "there and binds once they are gone",
    ]
    code, out, err = run(capsys, "--snapshot", FULL, "-o", "json", CRITICAL)
    doc = json.loads(out)
    assert doc["selectedNode"] is None
    assert doc["placements"] == ["node-a"]
    assert doc["preemption"] == {"node": "node-a", "victims": ["shop/batch-1"]}


def test_preempting_replicas_carry_on(capsys: pytest.CaptureFixture[str]) -> None:
    """Each copy's victims leave and it binds on its nominated node; the second copy
    then evicts a web pod: node-c's web-4 started after node-a's web-1."""
    code, out, err = run(capsys, "--snapshot", FULL, "--replicas", "3", CRITICAL)
    assert code == 0, err
    assert out.splitlines()[-4:] == [
        "Placements (3/3 placed):",
        "     1  node-a  (after preempting 1)",
        "     2  node-c  (after preempting 1)",
        "     3  node-a  (after preempting 1)",
    ]
    snap = Snapshot.from_objects(json.loads(Path(FULL).read_text())["items"])
    sim = simulate(json.loads(Path(CRITICAL).read_text()), snap, replicas=3)
    assert [p.victims if p else None for p in sim.preemptions] == [
        ("shop/batch-1",),
        ("shop/web-4",),
        ("shop/web-1",),
    ]


def test_unplaced_copies_say_whether_a_new_node_would_help(tmp_path: Path, capsys) -> None:
    """a1(a, general) b1(b, general) c1(c, no group), 2 cpu each, web 1.5 cpu per copy with
    a zone spread: three copies fill a zone each; the fourth fits nowhere, and a new node
    of general (zones a and b) would take it."""
    nodes = [
        make_node().name(n).hostname().zone(z).allocatable(cpu="2", pods="110").obj()
        for n, z in (("a1", "a"), ("b1", "b"), ("c1", "c"))
    ]
    for n in nodes[:2]:
        n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] = "general"
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    pod = (
        make_pod().name("web").labels({"app": "web"}).requests(cpu="1500m")
        .spread(1, "topology.kubernetes.io/zone", "DoNotSchedule", {"matchLabels": {"app": "web"}})
        .obj()
    )  # fmt: skip
    pod_file = tmp_path / "pod.json"
    pod_file.write_text(json.dumps(pod))
    argv = ["--snapshot", str(cluster), "--replicas", "5", str(pod_file)]
    code, out, _ = run(capsys, *argv, "-o", "json")
    doc = json.loads(out)
    assert doc["placements"][3:] == [None, None]
    fits = [{"group": "general", "zone": "a"}, {"group": "general", "zone": "b"}]
    assert doc["scaleUp"] == {"default/web-4": fits, "default/web-5": fits}
    code, out, _ = run(capsys, *argv)
    assert out.splitlines()[-4:] == [
        "Pending default/web-4: fits on a new node of group general in zone a (also group "
        "general in zone b)",
        "Pending default/web-5: fits on a new node of group general in zone a (also group "
        "general in zone b)",
        "1 node(s) belong to no node group (none of the labels karpenter.sh/nodepool, "
        "eks.amazonaws.com/nodegroup, cloud.google.com/gke-nodepool, "
        "kubernetes.azure.com/agentpool, node.kubernetes.io/instance-type): c1",
        "Scale-up: a new node would place 2 of 2 pending pod(s) (group general in zone a: 2, "
        "group general in zone b: 2); 1 node(s) in no node group",
    ]


def test_node_group_labels_from_the_config(tmp_path: Path, capsys) -> None:
    """--config's nodeGroupLabels names the groups: a1's pool, not its EKS node group."""
    node = make_node().name("a1").hostname().zone("a").allocatable(cpu="1", pods="110")
    node = node.labels({"eks.amazonaws.com/nodegroup": "general", "example.com/pool": "batch"})
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node.obj()]}))
    config = tmp_path / "config.yaml"
    config.write_text("nodeGroupLabels: [example.com/pool]\n")
    pod_file = tmp_path / "pod.json"
    pod_file.write_text(json.dumps(make_pod().name("big").requests(cpu="800m").obj()))
    argv = ["--snapshot", str(cluster), "--replicas", "2", "-o", "json", str(pod_file)]
    code, out, _ = run(capsys, *argv)
    assert json.loads(out)["scaleUp"] == {"default/big-2": [{"group": "general", "zone": "a"}]}
    code, out, _ = run(capsys, "--config", str(config), *argv)
    assert json.loads(out)["scaleUp"] == {"default/big-2": [{"group": "batch", "zone": "a"}]}
