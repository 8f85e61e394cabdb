"""`topospread audit` end to end: inputs, output formats, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from tests.builders import DNS, HOSTNAME, ZONE, make_node, make_pod, selector
from webhook.cli.main import main

RawObj = dict[str, Any]


def node(name: str, zone: str) -> RawObj:
    return make_node().name(name).hostname().zone(zone).obj()


def web(name: str, on: str) -> RawObj:
    return (
        make_pod()
        .name(name)
        .namespace("shop")
        .label("app", "web")
        .node(on)
        .owner("ReplicaSet", "web-5d9c")
        .spread(1, ZONE, DNS, selector({"app": "web"}))
        .obj()
    )


REPLICA_SET: RawObj = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {
        "name": "web-5d9c",
        "namespace": "shop",
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "uid": "u",
                "controller": True,
            }
        ],
    },
    "spec": {"selector": {"matchLabels": {"app": "web"}}},
}
NODES = [
    node("node-a1", "eu-west-1a"),
    node("node-b1", "eu-west-1b"),
    node("node-c1", "eu-west-1c"),
]
SKEWED = [
    *NODES,
    REPLICA_SET,
    *(web(f"web-{i}", "node-a1") for i in range(4)),
    web("web-b", "node-b1"),
    web("web-c", "node-c1"),
]
BALANCED = [*NODES, REPLICA_SET, web("web-a", "node-a1"), web("web-b", "node-b1")]


def snapshot(tmp_path: Path, objects: list[RawObj], name: str = "c.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv], prog="topospread")
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_document_of_a_violated_workload(tmp_path: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "--snapshot", snapshot(tmp_path, SKEWED), "-o", "json")
    doc = json.loads(out)
    assert code == 1
    assert doc["violations"] == 1
    [w] = doc["workloads"]
    assert (w["kind"], w["namespace"], w["name"], w["pods"]) == ("Deployment", "shop", "web", 6)
    [c] = w["constraints"]
    assert {
        k: c[k]
        for k in (
            "index",
            "topologyKey",
            "whenUnsatisfiable",
            "maxSkew",
            "minDomains",
            "skew",
            "violated",
            "domains",
        )
    } == {
        "index": 0,
        "topologyKey": ZONE,
        "whenUnsatisfiable": DNS,
        "maxSkew": 1,
        "minDomains": None,
        "skew": 3,
        "violated": True,
        "domains": {"eu-west-1a": 4, "eu-west-1b": 1, "eu-west-1c": 1},
    }
    assert "plan" not in doc and "pending" not in doc


def test_nothing_violated_exits_zero(tmp_path: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "--snapshot", snapshot(tmp_path, BALANCED), "-o", "json")
    assert code == 0 and json.loads(out)["violations"] == 0


def test_text_draws_bars_and_a_summary(tmp_path: Path, capsys: Any) -> None:
    code, out, _ = run(capsys, "--snapshot", snapshot(tmp_path, SKEWED))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("Deployment shop/web") and "6 running pods" in lines[0]
    assert "skew 3 > maxSkew 1" in lines[1]
    bars = {line.split()[0]: line for line in lines[2:5]}
    assert bars["eu-west-1a"].count("█") == 30 and bars["eu-west-1a"].endswith(" 4")
    assert bars["eu-west-1b"].count("█") == 8 and bars["eu-west-1b"].endswith(" 1")
    assert lines[-1] == "1 workloads, 1 constraints checked, 1 violated"
    assert "\033[" not in out  # no colour off a terminal


def test_yaml_snapshot_and_stdin(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    import io

    import yaml

    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": SKEWED})
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "--snapshot", "-", "-o", "json")
    assert code == 1 and json.loads(out)["violations"] == 1


def test_without_nodes_reports_the_state_after_replacement(tmp_path: Path, capsys: Any) -> None:
    path = snapshot(tmp_path, SKEWED)
    code, out, _ = run(
        capsys, "--snapshot", path, "--without-nodes", f"{ZONE}=eu-west-1a", "-o", "json"
    )
    doc = json.loads(out)
    assert doc["removedNodes"] == ["node-a1"]
    # Four pods come back into b and c (1 each already): 3 and 3, balanced.
    assert doc["workloads"][0]["constraints"][0]["domains"] == {"eu-west-1b": 3, "eu-west-1c": 3}
    assert (doc["pending"], doc["pendingReasons"], doc["violations"], code) == ([], {}, 0, 0)


def test_without_nodes_pending_pods_and_reasons(tmp_path: Path, capsys: Any) -> None:
    full = make_node().name("node-b1").hostname().zone("eu-west-1b").allocatable(pods="1").obj()
    objects = [NODES[0], full, REPLICA_SET, web("web-0", "node-a1"), web("web-b", "node-b1")]
    code, out, _ = run(
        capsys,
        "--snapshot",
        snapshot(tmp_path, objects),
        "--without-nodes",
        f"{ZONE}=eu-west-1a",
        "-o",
        "json",
    )
    doc = json.loads(out)
    assert doc["pending"] == ["shop/web-0"]
    assert doc["pendingReasons"] == {"shop/web-0": {"Too many pods": 1}}
    code, out, _ = run(
        capsys, "--snapshot", snapshot(tmp_path, objects), "--without-nodes", f"{ZONE}=eu-west-1a"
    )
    # Pending pods are grouped by their reasons, the pods named under each group.
    assert "  1 pending: 1 Too many pods\n    shop/web-0\n" in out
    assert out.splitlines()[-1].endswith(", 1 pending")


def test_without_nodes_says_whether_a_new_node_would_help(tmp_path: Path, capsys: Any) -> None:
    """scaleUp per pending pod; in the text, the diagnosis under its group of pending
    pods, then the summary."""
    full = make_node().name("node-b1").hostname().zone("eu-west-1b").allocatable(pods="1")
    full = full.label("karpenter.sh/nodepool", "default")
    objects = [NODES[0], full.obj(), REPLICA_SET, web("web-0", "node-a1"), web("web-b", "node-b1")]
    argv = ["--snapshot", snapshot(tmp_path, objects), "--without-nodes", f"{ZONE}=eu-west-1a"]
    _, out, _ = run(capsys, *argv, "-o", "json")
    assert json.loads(out)["scaleUp"] == {
        "shop/web-0": [{"group": "default", "zone": "eu-west-1b"}]
    }
    _, out, _ = run(capsys, *argv)
    lines = out.splitlines()
    at = lines.index("  1 pending: 1 Too many pods")
    assert lines[at + 1 : at + 4] == [
        "    shop/web-0",
        "    fits on a new node of group default in zone eu-west-1b",
        "  scale-up: a new node would place 1 of 1 pending pod(s) (group default in zone "
        "eu-west-1b: 1)",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--snapshot", "/nonexistent/c.json"], "no such file"),
        (["--without-nodes", "a b c"], "--without-nodes: cannot parse"),
        (["--without-nodes=-bad=x"], "name part must consist of"),
    ],
)
def test_usage_and_read_errors_exit_two(
    tmp_path: Path, capsys: Any, argv: list[str], message: str
) -> None:
    if "--snapshot" not in argv:
        argv = ["--snapshot", snapshot(tmp_path, BALANCED), *argv]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_not_a_list_exits_two(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(web("x", "node-a1")))
    code, _, err = run(capsys, "--snapshot", str(path))
    assert code == 2 and "must be one List" in err


def test_unreachable_cluster_exits_two(tmp_path: Path, capsys: Any) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    code, _, err = run(capsys, "--kubeconfig", str(kubeconfig), "--request-timeout", "2")
    assert code == 2 and "cannot reach the cluster" in err


def test_without_nodes_lists_pods_no_cycle_runs_for_apart(tmp_path: Path, capsys: Any) -> None:
    """JSON key notScheduled (pod -> why), and a line per pod in the text."""
    volcano = web("web-v", "node-a1")
    volcano["spec"]["schedulerName"] = "volcano"
    path = snapshot(tmp_path, [*NODES, REPLICA_SET, volcano, web("web-0", "node-a1")])
    argv = ("--snapshot", path, "--without-nodes", f"{ZONE}=eu-west-1a")
    code, out, _ = run(capsys, *argv, "-o", "json")
    doc = json.loads(out)
    why = 'not placed by this scheduler: schedulerName "volcano" has no profile here'
    assert doc["notScheduled"] == {"shop/web-v": why}
    assert doc["pending"] == []
    code, out, _ = run(capsys, *argv)
    assert f"  shop/web-v: {why}" in out.splitlines()


# ---- the drills on docs/audit.md's cluster -------------------------------------------------

OUTAGE = str(paths.ROOT / "docs" / "examples" / "zone-outage.json")


def with_honor(tmp_path: Path) -> str:
    """docs/audit.md's cluster with web's constraint saying nodeTaintsPolicy: Honor."""
    doc = json.loads(Path(OUTAGE).read_text())
    for obj in doc["items"]:
        spec = obj.get("spec", {})
        spec = spec.get("template", {}).get("spec", spec)
        if "web" in json.dumps(spec.get("topologySpreadConstraints", [])):
            spec["topologySpreadConstraints"][0]["nodeTaintsPolicy"] = "Honor"
    out = tmp_path / "honor.json"
    out.write_text(json.dumps(doc))
    return str(out)


def test_the_zone_outage_leaves_two_pending_with_the_default_policy(capsys: Any) -> None:
    code, out, _ = run(
        capsys, "--snapshot", OUTAGE, "--unreachable-nodes", f"{ZONE}=zone-a", "-o", "json"
    )
    doc = json.loads(out)
    assert code == 1
    assert doc["unreachableNodes"] == ["node-a1", "node-a2"]
    assert doc["pending"] == ["shop/web-6f7c-a1", "shop/web-6f7c-a2"]
    assert doc["notRecreated"] == ["shop/db-0"]
    honor = {"Deployment shop/web": {"pending": 2, "placedWithHonor": 2, "changed": True}}
    assert doc["withHonor"] == honor
    assert doc["notRecreatedReason"] == (
        "StatefulSet pods wait for their Terminating predecessor; bare pods have no controller"
    )
    web = next(w for w in doc["workloads"] if w["name"] == "web")
    assert web["constraints"][0]["before"] == {"zone-a": 2, "zone-b": 2, "zone-c": 2}
    assert web["constraints"][0]["domains"] == {"zone-a": 0, "zone-b": 2, "zone-c": 2}


def test_the_zone_outage_leaves_none_pending_with_honor(tmp_path: Path, capsys: Any) -> None:
    code, out, _ = run(
        capsys,
        "--snapshot",
        with_honor(tmp_path),
        "--unreachable-nodes",
        f"{ZONE}=zone-a",
        "-o",
        "json",
    )
    doc = json.loads(out)
    assert (code, doc["pending"], doc["notRecreated"]) == (0, [], ["shop/db-0"])
    web = next(w for w in doc["workloads"] if w["name"] == "web")
    assert web["constraints"][0]["domains"] == {"zone-b": 3, "zone-c": 3}


def test_the_drills_text_reads_at_a_glance(capsys: Any) -> None:
    code, out, _ = run(capsys, "--snapshot", OUTAGE, "--unreachable-nodes", f"{ZONE}=zone-a")
    assert "      zone-a  ███████████████   2 ->   0\n" in out
    assert "  2 pending: 4 node(s) didn't match pod topology spread constraints; " in out
    assert "    shop/db-0\n" in out
    assert "    Deployment shop/web: recovers, 2 of 2 pending placed\n" in out
    code, out, _ = run(capsys, "--snapshot", OUTAGE, "--drain-nodes", f"{ZONE}=zone-a")
    assert "  blocked shop/web-6f7c-a2: eviction refused by PodDisruptionBudget shop/web\n" in out
    assert out.splitlines()[-1].endswith(", 2 pending, 1 blocked")


@pytest.mark.parametrize("flag", ["--unreachable-nodes", "--drain-nodes"])
def test_a_bad_drill_selector_is_a_usage_error(flag: str, capsys: Any) -> None:
    code, _, err = run(capsys, "--snapshot", OUTAGE, flag, "zone in (a")
    assert code == 2 and flag in err


def test_one_drill_per_run(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        run(capsys, "--snapshot", OUTAGE, "--drain-nodes", "a=b", "--unreachable-nodes", "a=b")
    assert exc.value.code == 2


@pytest.mark.parametrize(
    "selector, present",
    [
        (f"{ZONE}=eu-west-1a", f"{ZONE}: zone-a, zone-b, zone-c"),
        (f"{ZONE} in (eu-west-1a,eu-west-1b)", f"{ZONE}: zone-a, zone-b, zone-c"),
        ("pool=spot", "no node has the label pool"),
        (f"pool=spot,{ZONE}=zone-a", f"no node has the label pool; {ZONE}: zone-a, zone-b, zone-c"),
        (f"!{HOSTNAME}", f"{HOSTNAME}: node-a1, node-a2, node-b1, node-b2, node-c1, node-c2"),
    ],
)
@pytest.mark.parametrize("flag", ["--without-nodes", "--unreachable-nodes", "--drain-nodes"])
def test_a_drill_selector_that_matches_no_node_is_a_usage_error(
    flag: str, selector: str, present: str, capsys: Any
) -> None:
    code, out, err = run(capsys, "--snapshot", OUTAGE, flag, selector, "-o", "json")
    assert (code, out) == (2, "")
    assert f"{flag}: no node matches {selector} ({present})\n" in err
    assert "Traceback" not in err


def test_the_values_named_for_an_unmatched_selector_are_capped(tmp_path: Path, capsys: Any) -> None:
    nodes = [node(f"n{i:02}", "zone-a") for i in range(25)]
    path = snapshot(tmp_path, nodes)
    code, _, err = run(capsys, "--snapshot", path, "--drain-nodes", f"{HOSTNAME}=elsewhere")
    shown = ", ".join(f"n{i:02}" for i in range(20))
    assert code == 2
    assert f"no node matches {HOSTNAME}=elsewhere ({HOSTNAME}: {shown} and 5 more)\n" in err
