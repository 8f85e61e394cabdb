"""The workload drills (--scale, --rollout): parsing, the pods the controllers delete
and create, the rollout's steps and stall, the comparisons, and the CLI's exit codes,
usage errors and JSON keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from tests.builders import DNS, ZONE, make_node, make_pod, scaled, selector
from webhook.audit.state.inventory import ClusterState
from webhook.audit.workloads.changes import run_workloads, separated, with_deletion_costs
from webhook.audit.workloads.targets import (
    Target,
    WorkloadRequest,
    parse_rollout,
    parse_scale,
    parse_target,
)
from webhook.cli.main import main
from webhook.config import Settings
from webhook.controllers.deployment import DeploymentSpec, max_surge, max_unavailable

RawObj = dict[str, Any]
NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
EXAMPLE = paths.ROOT / "docs" / "examples" / "workloads.json"


def target(kind: str, namespace: str, name: str) -> Target:
    """A workload as the flags name it (KIND/NAMESPACE/NAME)."""
    return Target(kind=kind, namespace=namespace, name=name)


def example_state() -> ClusterState:
    return ClusterState.from_objects(json.loads(EXAMPLE.read_text())["items"])


def nodes(*zones: str, per_zone: int = 2, pods: str = "110") -> list[RawObj]:
    return [
        make_node()
        .name(f"{z}{i}")
        .hostname()
        .zone(z)
        .allocatable(cpu="4", memory="8Gi", pods=pods)
        .obj()
        for z in zones
        for i in range(1, per_zone + 1)
    ]


def deployment(name: str, replicas: int, strategy: RawObj | None = None) -> RawObj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
        "spec": {"replicas": replicas, "strategy": strategy or {"type": "RollingUpdate"}},
    }


def replica_set(name: str, owner: str, replicas: int, revision: int, created: str) -> RawObj:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": owner,
                    "uid": f"uid-{owner}",
                    "controller": True,
                }
            ],
        },
        "spec": {"replicas": replicas},
    }


def pod(
    name: str,
    owner: str,
    node: str,
    kind: str = "ReplicaSet",
    created: str = "2026-11-01T00:00:00Z",
) -> RawObj:
    out = (
        make_pod()
        .name(name)
        .namespace("shop")
        .uid(f"uid-{name}")
        .label("app", "web")
        .owner(kind, owner, f"uid-{owner}")
        .node(node)
        .ready()
        .spread(1, ZONE, DNS, selector({"app": "web"}))
        .obj()
    )
    out["metadata"]["creationTimestamp"] = created
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("deployment/shop/web", target("Deployment", "shop", "web")),
        ("Deploy/shop/web", target("Deployment", "shop", "web")),
        ("rs/shop/web-1", target("ReplicaSet", "shop", "web-1")),
        ("STS/db/pg", target("StatefulSet", "db", "pg")),
        ("rc/shop/legacy", target("ReplicationController", "shop", "legacy")),
        ("replicationcontroller/shop/legacy", target("ReplicationController", "shop", "legacy")),
    ],
)
def test_parse_target(text: str, expected: Target) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    "text",
    ["deployment/shop", "job/shop/x", "deployment//web", "deployment/shop/web/x", "x"],
)
def test_parse_target_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_target(text)


@pytest.mark.parametrize(
    ("text", "ok"),
    [("deploy/shop/web=0", True), ("deploy/shop/web=12", True), ("deploy/shop/web=-1", False),
     ("deploy/shop/web=", False), ("deploy/shop/web=1.5", False), ("deploy/shop/web", False)],
)  # fmt: skip
def test_parse_scale(text: str, ok: bool) -> None:
    if ok:
        assert parse_scale(text)[1] == int(text.rpartition("=")[2])
    else:
        with pytest.raises(ValueError):
            parse_scale(text)


def test_parse_rollout() -> None:
    assert parse_rollout("deploy/shop/web") == (target("Deployment", "shop", "web"), None)
    assert parse_rollout("deploy/shop/web=v2.yaml")[1] == "v2.yaml"
    with pytest.raises(ValueError):
        parse_rollout("sts/shop/web")


def test_scale_down_deletes_as_the_replicaset_controller_ranks() -> None:
    """9 -> 3 over three zones: the pods doubled up on node-a1 and node-b1 (rank 3)
    go first, and zone-c keeps its three: the spread ends 0-0-3."""
    drill = run_workloads(
        example_state(), WorkloadRequest(scales=[(parse_target("deploy/shop/web"), 3)], now=NOW)
    )
    (change,) = drill.workload_changes
    assert (change["from"], change["to"]) == (9, 3)
    assert [d["node"] for d in change["deleted"]] == ["node-a1"] * 3 + ["node-b1"] * 3
    left = sorted(str(p["spec"]["nodeName"]) for p in drill.state.running)
    assert left == ["node-c1", "node-c2", "node-c2"]
    assert drill.pending == [] and change["created"] == []


def rs_pod(name: str, node: str, phase: str, ready: str | None) -> RawObj:
    """A pod of ReplicaSet shop/rs (upstream's newPod), on `node` ("" unscheduled)."""
    b = make_pod().name(name).namespace("shop").uid(f"uid-{name}").label("app", "web")
    b = b.owner("ReplicaSet", "rs", "uid-rs").phase(phase)
    if node:
        b = b.node(node)
    out = b.obj()
    if ready is not None:
        out["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return out


UNSCHEDULED_PENDING = rs_pod("unscheduled-pending-pod", "", "Pending", None)
SCHEDULED_PENDING = rs_pod("scheduled-pending-pod", "fake-node", "Pending", None)
NOT_READY = rs_pod("scheduled-running-not-ready-pod", "fake-node", "Running", "False")
READY_ON_1 = rs_pod("scheduled-running-ready-pod-on-node-1", "fake-node-1", "Running", "True")
READY_ON_2 = rs_pod("scheduled-running-ready-pod-on-node-2", "fake-node-2", "Running", "True")

# Upstream's TestGetPodsToDelete (replica_set_test.go) cases whose pods are distinct,
# played as a cluster: ReplicaSet shop/rs with these pods scaled down by diff.
# name, pods, diff, deleted
SCALE_DOWN_CASES = [
    ("diff < len(pods)", [READY_ON_1, NOT_READY], 1, [NOT_READY]),
    ("scheduled vs unscheduled, diff < len(pods)",
     [SCHEDULED_PENDING, UNSCHEDULED_PENDING], 1, [UNSCHEDULED_PENDING]),
    ("pending vs running, diff < len(pods)", [SCHEDULED_PENDING, NOT_READY], 1,
     [SCHEDULED_PENDING]),
    ("various pod phases and conditions, diff < len(pods)",
     [READY_ON_1, READY_ON_2, NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING], 3,
     [UNSCHEDULED_PENDING, SCHEDULED_PENDING, NOT_READY]),
    # The cluster: one pod bound, one Pending without a node, 2 -> 1.
    ("a ReplicaSet of 2 with one pod unscheduled scaled to 1",
     [READY_ON_1, UNSCHEDULED_PENDING], 1, [UNSCHEDULED_PENDING]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pods", "diff", "deleted"),
    [case[1:] for case in SCALE_DOWN_CASES],
    ids=[case[0] for case in SCALE_DOWN_CASES],
)
def test_scale_down_counts_and_deletes_unscheduled_pods(
    pods: list[RawObj], diff: int, deleted: list[RawObj]
) -> None:
    """The drill's ReplicaSet counts its unscheduled pods among its active ones and
    deletes as getPodsToDelete ranks them: unassigned first."""
    owner = scaled("ReplicaSet", "rs", len(pods), "shop")
    names = ("fake-node", "fake-node-1", "fake-node-2")
    cluster = [make_node().name(n).hostname().obj() for n in names]
    state = ClusterState.from_objects([*cluster, owner, *pods])
    request = WorkloadRequest(scales=[(parse_target("rs/shop/rs"), len(pods) - diff)], now=NOW)
    (change,) = run_workloads(state, request).workload_changes
    assert change["from"] == len(pods)
    assert [d["pod"] for d in change["deleted"]] == [
        f"shop/{p['metadata']['name']}" for p in deleted
    ]
    unbound = [d["node"] for d in change["deleted"] if d["pod"] == "shop/unscheduled-pending-pod"]
    assert unbound in ([], [None])


def test_scale_up_counts_unscheduled_pods() -> None:
    """2 pods, one unscheduled, scaled to 3: the ReplicaSet creates one, not two."""
    owner = scaled("ReplicaSet", "rs", 2, "shop")
    state = ClusterState.from_objects(
        [make_node().name("fake-node-1").hostname().obj(), owner, READY_ON_1, UNSCHEDULED_PENDING]
    )
    request = WorkloadRequest(scales=[(parse_target("rs/shop/rs"), 3)], now=NOW)
    (change,) = run_workloads(state, request).workload_changes
    assert (change["from"], len(change["created"]), change["deleted"]) == (2, 1, [])


def test_a_scale_down_after_a_scale_up_deletes_the_pods_still_pending_first() -> None:
    """rs/shop/rs 1 -> 3 on one node with room for 2: one new pod binds, one waits;
    then 3 -> 1: the waiting pod (unassigned) goes first, then the newer bound one."""
    node = make_node().name("fake-node-1").hostname().allocatable(pods="2").obj()
    owner = scaled("ReplicaSet", "rs", 1, "shop")
    state = ClusterState.from_objects([node, owner, READY_ON_1])
    target = parse_target("rs/shop/rs")
    drill = run_workloads(state, WorkloadRequest(scales=[(target, 3), (target, 1)], now=NOW))
    up, down = drill.workload_changes
    assert [c["node"] for c in up["created"]] == ["fake-node-1", None]
    assert [d["pod"] for d in down["deleted"]] == ["shop/rs-2", "shop/rs-1"]
    assert drill.pending == []


def test_deletion_costs_keep_the_spread() -> None:
    """With topospread's costs on the pods, the same scale-down leaves one pod a zone."""
    request = WorkloadRequest(scales=[(parse_target("deploy/shop/web"), 3)], now=NOW)
    out = with_deletion_costs(example_state(), request, Settings())
    (entry,) = out["Deployment shop/web"]
    assert entry["domains"] == {"zone-a": 1, "zone-b": 1, "zone-c": 1}
    assert not entry["violated"]


def test_scale_up_places_new_pods_in_creation_order() -> None:
    objects = [
        *nodes("a", "b"),
        deployment("web", 2),
        replica_set("web-1", "web", 2, 1, "2026-11-01T00:00:00Z"),
        pod("web-1-x", "web-1", "a1"),
        pod("web-1-y", "web-1", "a2"),
    ]
    state = ClusterState.from_objects(objects)
    drill = run_workloads(
        state, WorkloadRequest(scales=[(parse_target("deploy/shop/web"), 4)], now=NOW)
    )
    (change,) = drill.workload_changes
    assert [c["pod"] for c in change["created"]] == ["shop/web-1-1", "shop/web-1-2"]
    # The spread puts both in zone b (a has 2, b 0).
    assert {c["node"][0] for c in change["created"]} == {"b"}
    assert change["deleted"] == []


def test_mid_rollout_scale_is_split_proportionally() -> None:
    """A Deployment with two ReplicaSets of 6 and 2 (max-replicas 8) scaled to 4: each
    loses in proportion, the leftover from the largest (sync.go: scale)."""
    objects = [
        *nodes("a", "b", per_zone=4),
        deployment(
            "web",
            8,
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
        ),
    ]
    old = replica_set("web-1", "web", 6, 1, "2026-11-01T00:00:00Z")
    new = replica_set("web-2", "web", 2, 2, "2026-11-02T00:00:00Z")
    for rs in (old, new):
        rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] = "8"
        rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] = "8"
    objects += [old, new]
    objects += [pod(f"web-1-{i}", "web-1", f"{'ab'[i % 2]}{i // 2 + 1}") for i in range(6)]
    objects += [pod(f"web-2-{i}", "web-2", f"{'ab'[i % 2]}4") for i in range(2)]
    drill = run_workloads(
        ClusterState.from_objects(objects),
        WorkloadRequest(scales=[(parse_target("deploy/shop/web"), 4)], now=NOW),
    )
    by_rs: dict[str, int] = {}
    for p in drill.state.running:
        rs_name = p["metadata"]["ownerReferences"][0]["name"]
        by_rs[rs_name] = by_rs.get(rs_name, 0) + 1
    # 6 -> round(6*4/8) = 3, 2 -> round(2*4/8) = 1.
    assert by_rs == {"web-1": 3, "web-2": 1}


def test_statefulset_scale_removes_highest_ordinals_and_adds_next() -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop", "uid": "uid-db"},
        "spec": {"replicas": 3},
    }
    objects = [*nodes("a", "b"), sts] + [
        pod(f"db-{i}", "db", "a1", kind="StatefulSet") for i in range(3)
    ]
    state = ClusterState.from_objects(objects)
    down = run_workloads(state, WorkloadRequest(scales=[(parse_target("sts/shop/db"), 1)], now=NOW))
    assert [d["pod"] for d in down.workload_changes[0]["deleted"]] == ["shop/db-2", "shop/db-1"]
    up = run_workloads(state, WorkloadRequest(scales=[(parse_target("sts/shop/db"), 5)], now=NOW))
    assert [c["pod"] for c in up.workload_changes[0]["created"]] == ["shop/db-3", "shop/db-4"]


def test_rollout_steps_respect_surge_and_unavailability() -> None:
    """Every step of the example's rollout stays within replicas + maxSurge pods and
    replicas - maxUnavailable available ones, and it ends with 9 new pods, no old."""
    drill = run_workloads(
        example_state(), WorkloadRequest(rollout=(parse_target("deploy/shop/web"), None), now=NOW)
    )
    d = DeploymentSpec(9, "RollingUpdate", "25%", "25%")
    assert drill.steps is not None and drill.stalled is None
    for step in drill.steps:
        assert step["newReplicas"] + step["oldReplicas"] <= 9 + max_surge(d)
    assert [s["newReplicas"] for s in drill.steps][0] == 3
    assert drill.steps[-1]["newReplicas"] == 9 and drill.steps[-1]["oldReplicas"] == 0
    assert len(drill.state.running) == 9
    assert all(
        p["metadata"]["labels"]["pod-template-hash"] != "6f7c9d" for p in drill.state.running
    )
    assert max_unavailable(d) == 2


def test_rollout_stalls_when_new_pods_fit_nowhere(tmp_path: Path) -> None:
    """A new template no node takes: the first surge stays pending, the unavailability
    budget is spent after the old pods it allows to go, and the rollout stalls."""
    state = example_state()
    file = json.loads(EXAMPLE.read_text())["items"][6]
    file = json.loads(json.dumps(file))
    file["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "none"}
    drill = run_workloads(
        state, WorkloadRequest(rollout=(parse_target("deploy/shop/web"), file), now=NOW)
    )
    assert drill.stalled is not None
    assert drill.stalled["pending"] == drill.pending and drill.pending
    # maxUnavailable 2: at most 2 old pods went.
    assert (
        len(
            [
                p
                for p in drill.state.running
                if p["metadata"]["labels"].get("pod-template-hash") == "6f7c9d"
            ]
        )
        == 7
    )


def test_recreate_deletes_every_old_pod_first() -> None:
    file = json.loads(json.dumps(json.loads(EXAMPLE.read_text())["items"][6]))
    file["spec"]["strategy"] = {"type": "Recreate"}
    drill = run_workloads(
        example_state(), WorkloadRequest(rollout=(parse_target("deploy/shop/web"), file), now=NOW)
    )
    assert drill.steps is not None
    first, second = drill.steps
    assert len(first["deleted"]) == 9 and first["created"] == []
    assert len(second["created"]) == 9 and second["newReplicas"] == 9


HASHED = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": DNS,
    "labelSelector": {"matchLabels": {"app": "web"}},
    "matchLabelKeys": ["pod-template-hash"],
}


def hashed_cluster(merged: bool) -> list[RawObj]:
    """Zones a (a roomy node), b (a small one) and c (a node full with its one pod);
    Deployment shop/web of 3 with pod-template-hash in matchLabelKeys, maxSurge 1 and
    maxUnavailable 1; its ReplicaSet web-old's pods one a zone, their selectors merged
    by the API server (v1.34+: `pod-template-hash In [old]`) or not (older clusters)."""
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
            "topologySpreadConstraints": [HASHED],
        },
    }
    web = deployment(
        "web", 3, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}
    )
    web["spec"]["template"] = template
    old = replica_set("web-old", "web", 3, 1, "2026-11-01T00:00:00Z")
    old["spec"]["template"] = {
        "metadata": {"labels": {"app": "web", "pod-template-hash": "old"}},
        "spec": template["spec"],
    }
    out = [
        make_node().name("a1").hostname().zone("a").allocatable(cpu="64", pods="110").obj(),
        make_node().name("b1").hostname().zone("b").allocatable(cpu="4", pods="110").obj(),
        make_node().name("c1").hostname().zone("c").allocatable(cpu="4", pods="1").obj(),
        web,
        old,
    ]
    for i, node in enumerate(["a1", "b1", "c1"]):
        p = (
            make_pod()
            .name(f"web-old-{i}")
            .namespace("shop")
            .uid(f"uid-web-old-{i}")
            .labels({"app": "web", "pod-template-hash": "old"})
            .owner("ReplicaSet", "web-old", "uid-web-old")
            .node(node)
            .ready()
            .requests(cpu="100m")
            .constraints([json.loads(json.dumps(HASHED))])
            .obj()
        )
        if merged:
            p["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] = [
                {"key": "pod-template-hash", "operator": "In", "values": ["old"]}
            ]
        out.append(p)
    return out


@pytest.mark.parametrize("merged", [True, False], ids=["v1.34+ merged selectors", "unmerged"])
def test_rollout_with_the_hash_in_match_label_keys_spreads_the_new_revision(merged: bool) -> None:
    """The new pods come from the Deployment's template, merged once with their own
    hash: they count the new revision alone, so no zone holds two of them while
    another holds none (the second new pod does not follow the first into the roomy
    zone a), and the constraint entry counts the 3 new pods under one hash."""
    state = ClusterState.from_objects(hashed_cluster(merged))
    drill = run_workloads(
        state, WorkloadRequest(rollout=(parse_target("deploy/shop/web"), None), now=NOW)
    )
    zone_of = {"a1": "a", "b1": "b", "c1": "c"}
    new = [p for p in drill.state.running if p["metadata"]["labels"]["pod-template-hash"] != "old"]
    assert len(new) == 3 and drill.stalled is None
    zones = sorted(zone_of[p["spec"]["nodeName"]] for p in new)
    assert zones == ["a", "b", "c"]
    for p in new:
        (c,) = p["spec"]["topologySpreadConstraints"]
        own = p["metadata"]["labels"]["pod-template-hash"]
        assert c["labelSelector"]["matchExpressions"] == [
            {"key": "pod-template-hash", "operator": "In", "values": [own]}
        ]


def test_cli_rollout_entry_counts_the_new_revision_under_one_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a v1.34+ cluster (selectors merged), the workload's constraint entry after the
    rollout counts its 3 new pods, one a zone, under a selector with its own hash only."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"kind": "List", "items": hashed_cluster(merged=True)}))
    argv = ["--snapshot", str(path), "--rollout", "deploy/shop/web"]
    code = main(["audit", *argv, "--now", "2026-11-27T12:00:00Z", "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    (web,) = [w for w in doc["workloads"] if w["name"] == "web"]
    (entry,) = web["constraints"]
    assert entry["domains"] == {"a": 1, "b": 1, "c": 1} and not entry["violated"]
    (expr,) = entry["labelSelector"]["matchExpressions"]
    assert expr["key"] == "pod-template-hash" and expr["values"] != ["old"]
    assert code == 0


@pytest.mark.parametrize(
    ("version", "merged"), [((1, 34), True), ((1, 33), False)], ids=["v1.34", "v1.33"]
)
def test_new_pods_are_merged_as_the_modelled_api_server_merges(
    version: tuple[int, int], merged: bool
) -> None:
    """--server-version 1.33 admits the new pods with matchLabelKeys unmerged (the
    scheduler merges when it reads them); 1.34 merges at creation."""
    state = ClusterState.from_objects(hashed_cluster(merged=False))
    request = WorkloadRequest(
        rollout=(parse_target("deploy/shop/web"), None), now=NOW, server_version=version
    )
    drill = run_workloads(state, request)
    new = [p for p in drill.state.running if p["metadata"]["labels"]["pod-template-hash"] != "old"]
    assert len(new) == 3
    for p in new:
        selector = p["spec"]["topologySpreadConstraints"][0]["labelSelector"]
        assert ("matchExpressions" in selector) == merged


def test_separated_adds_the_hash_once() -> None:
    template = {
        "spec": {
            "topologySpreadConstraints": [
                {"maxSkew": 1},
                {"maxSkew": 1, "matchLabelKeys": ["pod-template-hash"]},
            ]
        }
    }
    out, changed = separated(template)
    assert changed
    assert [c["matchLabelKeys"] for c in out["spec"]["topologySpreadConstraints"]] == [
        ["pod-template-hash"]
    ] * 2
    assert not separated(out)[1]


# ---- the CLI ---------------------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["audit", "--snapshot", str(EXAMPLE), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_scale_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["--scale", "deploy/shop/web=3", "--now", "2026-11-27T12:00:00Z", "-o", "json"], capsys
    )
    doc = json.loads(out)
    assert code == 1
    assert {"workloadChanges", "pending", "pendingReasons", "scaleUp", "withDeletionCosts"} <= set(
        doc
    )
    assert "steps" not in doc
    assert doc["workloads"][0]["constraints"][0]["before"] == {
        "zone-a": 3,
        "zone-b": 3,
        "zone-c": 3,
    }


def test_cli_rollout_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["--rollout", "deployment/shop/web", "--now", "2026-11-27T12:00:00Z", "-o", "json"], capsys
    )
    doc = json.loads(out)
    assert {"steps", "stalled", "withSeparateRevisions", "withDeletionCosts"} <= set(doc)
    assert doc["stalled"] is None
    revisions = doc["withSeparateRevisions"]["Deployment shop/web"]
    assert not any(c["violated"] for c in revisions["constraints"])
    assert code == (1 if doc["violations"] else 0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--scale", "deploy/shop/nope=3"],
            "the workloads of namespace 'shop': deployment/shop/web, replicaset/shop/web-6f7c9d",
        ),
        (
            ["--scale", "deploy/shop/web=-1"],
            "got '-1'; the workloads of namespace 'shop': deployment/shop/web",
        ),
        (["--scale", "job/shop/web=1"], "unknown kind"),
        (["--rollout", "sts/shop/web"], "a rollout is a Deployment's"),
        (["--now", "tomorrow", "--scale", "deploy/shop/web=1"], "--now"),
        (["--now", "2026-11-27T12:00:00Z"], "--now is the controllers' clock"),
    ],
)
def test_cli_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--scale", "deploy/shop/web=1", "--drain-nodes", "a=b"],
        ["--scale", "deploy/shop/web=1", "--rollout", "deploy/shop/web"],
        ["--rollout", "deploy/shop/web", "--without-nodes", "a=b"],
    ],
)
def test_cli_drills_are_exclusive(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        run(argv, capsys)
    assert exc.value.code == 2


def test_cli_text_says_whether_the_spread_holds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, _ = run(["--scale", "deploy/shop/web=3", "--now", "2026-11-27T12:00:00Z"], capsys)
    assert "scale Deployment shop/web: 9 -> 3" in out
    assert "the spread no longer holds: [0] skew 3 > maxSkew 1" in out
    assert "shop/web-6f7c9d-x4k2p (node-a1)" in out


def test_html_shows_the_change_escaped() -> None:
    """The page's section lists the pods with their nodes, the steps and the stall, every
    string from the cluster escaped."""
    from webhook.render.html import audit_page

    doc = {
        "workloads": [],
        "violations": 0,
        "pending": ["shop/<b>x</b>"],
        "pendingReasons": {},
        "scaleUp": {},
        "workloadChanges": [
            {
                "workload": "Deployment shop/<script>",
                "from": 9,
                "to": 3,
                "deleted": [{"pod": "shop/<i>p</i>", "node": "n<1>"}],
                "created": [{"pod": "shop/new", "node": None}],
            }
        ],
        "steps": [
            {"newReplicas": 3, "oldReplicas": 9, "created": [], "deleted": [], "pending": []}
        ],
        "stalled": {"reason": "<pending>", "pending": []},
        "withDeletionCosts": {"Deployment shop/<script>": [{"skew": 0, "violated": False}]},
    }
    page = audit_page(doc)
    assert "<script>" not in page and "<i>p</i>" not in page
    assert "Deployment shop/&lt;script&gt;" in page
    assert "shop/&lt;i&gt;p&lt;/i&gt; (n&lt;1&gt;)" in page
    assert "shop/new (pending)" in page
    assert "stalled: &lt;pending&gt;" in page
    assert "with deletion costs:" in page


def test_cli_rollout_from_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FILE supplies the new template, strategy and replicas: Recreate to 6 replicas."""
    file = json.loads(json.dumps(json.loads(EXAMPLE.read_text())["items"][6]))
    file["spec"]["replicas"] = 6
    file["spec"]["strategy"] = {"type": "Recreate"}
    path = tmp_path / "web-v2.json"
    path.write_text(json.dumps(file))
    code, out, _ = run(
        ["--rollout", f"deploy/shop/web={path}", "--now", "2026-11-27T12:00:00Z", "-o", "json"],
        capsys,
    )
    doc = json.loads(out)
    (change,) = doc["workloadChanges"]
    assert (change["from"], change["to"]) == (9, 6)
    assert len(change["deleted"]) == 9 and len(change["created"]) == 6
    assert [len(s["deleted"]) for s in doc["steps"]] == [9, 0]
    assert code == (1 if doc["violations"] else 0)


def test_cli_rollout_file_without_a_deployment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(make_pod().obj()))
    code, out, err = run(["--rollout", f"deploy/shop/web={path}"], capsys)
    assert code == 2 and out == "" and "holds no Deployment" in err
