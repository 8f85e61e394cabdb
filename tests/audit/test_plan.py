"""`audit --plan`: the fewest feasible moves after which nothing checked is violated.

Legend of the case names: zones separated by "/", each zone's nodes by ",", each
node's pods of the workload as a number; "2,1/0" is zone a with nodes a1 (2 pods) and
a2 (1), zone b with node b1 (0).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.audit.planning import applied, brute_force, check_moves, planned, violations
from tests.builders import DNS, HOSTNAME, ZONE, make_node, make_pod, selector
from webhook.audit.plan.bounds import lower_bound
from webhook.cli.main import main

RawObj = dict[str, Any]
WEB = selector({"app": "web"})


def cluster(
    layout: str,
    *,
    zone_skew: int | None = 1,
    host_skew: int | None = None,
    owner: str = "ReplicaSet",
    node_edit: dict[str, Any] | None = None,
    pod_edit: Any = None,
) -> list[RawObj]:
    """Nodes and the workload's pods drawn by `layout` (see the legend). node_edit:
    node name -> a function of its builder; pod_edit: a function of each pod builder."""
    objects: list[RawObj] = []
    n = 0
    for z, zone in enumerate(layout.split("/")):
        for h, count in enumerate(zone.split(",")):
            name = f"{'abcdef'[z]}{h + 1}"
            builder = make_node().name(name).zone(f"zone-{'abcdef'[z]}").hostname()
            if node_edit and name in node_edit:
                builder = node_edit[name](builder)
            objects.append(builder.obj())
            for _ in range(int(count)):
                pod = make_pod().name(f"web-{n}").label("app", "web").node(name)
                if owner:
                    pod = pod.owner(owner, "web")
                if zone_skew is not None:
                    pod = pod.spread(zone_skew, ZONE, DNS, WEB)
                if host_skew is not None:
                    pod = pod.spread(host_skew, HOSTNAME, DNS, WEB)
                if pod_edit is not None:
                    pod = pod_edit(pod)
                objects.append(pod.obj())
                n += 1
    return objects


def bare(name: str, node: str, **requests: str) -> RawObj:
    pod = make_pod().name(name).label("app", "web").node(node)
    if requests:
        pod = pod.requests(**requests)
    return pod.obj()


# ---- one case per rule ---------------------------------------------------------------

MINIMAL = [
    # (layout, zone maxSkew, moves)
    ("3/1", 1, 1),
    ("4/0", 1, 2),
    ("5/2", 1, 1),
    ("0/1/5", 1, 3),
    ("8/7/0", 1, 5),
    ("2/6", 2, 1),
    ("2/1", 1, 0),
    ("0/1/3/5", 1, 3),
]


@pytest.mark.parametrize(("layout", "skew", "moves"), MINIMAL, ids=[c[0] for c in MINIMAL])
def test_plan_is_the_fewest_moves_that_fix_the_spread(layout: str, skew: int, moves: int) -> None:
    """The plan has exactly the counting lower bound's moves, and they fix the spread."""
    objects = cluster(layout, zone_skew=skew)
    _, spreads, plan = planned(objects)
    assert len(plan.moves) == moves
    counts = spreads[0].constraints[0].domains
    assert moves == lower_bound(counts, skew)
    assert plan.complete and plan.reasons == {}
    assert violations(applied(objects, plan)) == 0
    check_moves(objects, plan)


def test_a_move_never_goes_to_a_node_whose_taint_the_pod_does_not_tolerate() -> None:
    """4/0,0 with b1 tainted: both moves go to b2."""
    objects = cluster(
        "4/0,0", node_edit={"b1": lambda b: b.taint("dedicated", "gpu", "NoSchedule")}
    )
    _, _, plan = planned(objects)
    assert [m.to_node for m in plan.moves] == ["b2", "b2"]
    assert plan.complete
    check_moves(objects, plan)


def test_a_tolerated_taint_takes_moves() -> None:
    """4/0 with b1 tainted, pods tolerating it: the moves go to b1."""
    objects = cluster(
        "4/0",
        node_edit={"b1": lambda b: b.taint("dedicated", "gpu", "NoSchedule")},
        pod_edit=lambda p: p.toleration("dedicated", "gpu", "NoSchedule"),
    )
    _, _, plan = planned(objects)
    assert [m.to_node for m in plan.moves] == ["b1", "b1"]
    check_moves(objects, plan)


def test_a_move_follows_the_pods_required_node_affinity() -> None:
    """4/0,0 where only b2 carries disk=ssd and the pods require it (a1 carries it
    too): the moves go to b2."""
    objects = cluster(
        "4/0,0",
        node_edit={
            "a1": lambda b: b.label("disk", "ssd"),
            "b2": lambda b: b.label("disk", "ssd"),
        },
        pod_edit=lambda p: p.node_affinity_in("disk", "ssd"),
    )
    _, _, plan = planned(objects)
    assert [m.to_node for m in plan.moves] == ["b2", "b2"]
    check_moves(objects, plan)


def test_moves_stay_within_the_targets_resources() -> None:
    """4/0,0, pods asking 1 cpu; b1 has 1 cpu: one move goes to b1, one to b2."""
    objects = cluster(
        "4/0,0",
        node_edit={
            "b1": lambda b: b.allocatable(cpu="1", memory="8Gi", pods="10"),
            "b2": lambda b: b.allocatable(cpu="1", memory="8Gi", pods="10"),
        },
        pod_edit=lambda p: p.requests(cpu="1"),
    )
    _, _, plan = planned(objects)
    assert sorted(m.to_node for m in plan.moves) == ["b1", "b2"]
    check_moves(objects, plan)


def test_a_node_over_its_allocatable_receives_nothing() -> None:
    """4/0,0; b1 runs a bare pod asking 2 cpu of its 1: although the workload's pods ask
    no cpu (the resources filter lets them in), only b2 receives."""
    objects = cluster(
        "4/0,0",
        node_edit={"b1": lambda b: b.allocatable(cpu="1", memory="8Gi", pods="10")},
    )
    objects.append(make_pod().name("hog").node("b1").requests(cpu="2").obj())
    _, _, plan = planned(objects)
    assert [m.to_node for m in plan.moves] == ["b2", "b2"]
    check_moves(objects, plan)


def test_over_allocatable_alone_leaves_the_plan_incomplete() -> None:
    """4/0 where b1 already holds more pods than its allocatable allows: nothing can
    move there, no plan exists, and the reason says why."""
    objects = cluster("4/0", node_edit={"b1": lambda b: b.allocatable(pods="1")})
    objects += [make_pod().name("x1").node("b1").obj(), make_pod().name("x2").node("b1").obj()]
    _, _, plan = planned(objects)
    assert plan.moves == []
    assert not plan.complete
    assert "capacity" in plan.reasons["ReplicaSet default/web"]


@pytest.mark.parametrize("owner", ["", "DaemonSet", "Node"])
def test_pods_no_controller_recreates_elsewhere_never_move(owner: str) -> None:
    """4/0 where two of zone a's pods do not come back elsewhere when evicted (bare,
    DaemonSet, mirror pods) and two are a ReplicaSet's: the ReplicaSet's two move."""
    objects = cluster("2/0", owner=owner)
    for name in ("web-rs-1", "web-rs-2"):
        objects.append(
            make_pod()
            .name(name)
            .label("app", "web")
            .owner("ReplicaSet", "web")
            .node("a1")
            .spread(1, ZONE, DNS, WEB)
            .obj()
        )
    _, _, plan = planned(objects)
    assert sorted(m.pod for m in plan.moves) == ["default/web-rs-1", "default/web-rs-2"]
    assert plan.complete
    check_moves(objects, plan)


@pytest.mark.parametrize("owner", ["", "DaemonSet"])
def test_a_spread_only_unmovable_pods_could_fix_is_reported(owner: str) -> None:
    """3/0 of pods that never move: no moves, planComplete false, a reason."""
    objects = cluster("3/0", owner=owner)
    _, spreads, plan = planned(objects)
    assert plan.moves == [] and not plan.complete
    assert set(plan.reasons) == {str(w.workload) for w in spreads if w.violated}


# Zone maxSkew 1 over 3 zones and hostname maxSkew 1 over 7 nodes, zone a with one
# node: 9 pods need 3 per zone, so a1 holds 3 while b's and c's six nodes hold 6 in
# all, some node 1: hostname skew 2. No state satisfies both.
CONFLICTS = [
    ("zone-vs-hostname 1/2,2,1/1,1,1", "1/2,2,1/1,1,1", 1, 1),
    ("zone-vs-hostname 3/1,1,1/1,1,1", "3/1,1,1/1,1,1", 1, 1),
    ("zone needs more than capacity 5/0", "5/0", 1, None),
]


@pytest.mark.parametrize(
    ("layout", "zone", "host"), [c[1:] for c in CONFLICTS], ids=[c[0] for c in CONFLICTS]
)
def test_constraints_no_state_satisfies_get_a_reason_instead_of_moves(
    layout: str, zone: int, host: int | None
) -> None:
    """Conflicting constraints: planComplete false, no moves for the workload, one
    plain line saying why."""
    edit = {"b1": lambda b: b.allocatable(pods="1")} if host is None else None
    objects = cluster(layout, zone_skew=zone, host_skew=host, node_edit=edit)
    _, spreads, plan = planned(objects)
    assert not plan.complete and plan.moves == []
    reason = plan.reasons[str(spreads[0].workload)]
    assert "\n" not in reason and reason


def test_zone_and_hostname_together_converge_where_the_descheduler_loops() -> None:
    """3,1/0,0 with zone maxSkew 1 and hostname maxSkew 1 (descheduler #1219): the
    descheduler balances the zone first (its evictions land anywhere in zone b, maybe
    both on b1) and then the hostnames, one constraint at a time; the plan moves two
    pods from a1, one to each of b1 and b2, and both constraints hold after it."""
    objects = cluster("3,1/0,0", zone_skew=1, host_skew=1)
    _, _, plan = planned(objects)
    assert [(m.from_node, m.to_node) for m in plan.moves] == [("a1", "b1"), ("a1", "b2")]
    assert plan.complete
    assert violations(applied(objects, plan)) == 0
    check_moves(objects, plan)


def test_nothing_violated_means_an_empty_complete_plan() -> None:
    """2/1: nothing to do."""
    _, _, plan = planned(cluster("2/1"))
    assert plan.moves == [] and plan.complete and plan.reasons == {}


def test_soft_constraints_are_planned_only_with_include_soft() -> None:
    """4/0 with a ScheduleAnyway zone constraint: planned with include_soft only."""
    objects = cluster(
        "4/0", zone_skew=None, pod_edit=lambda p: p.spread(1, ZONE, "ScheduleAnyway", WEB)
    )
    assert planned(objects)[2].moves == []
    _, _, plan = planned(objects, include_soft=True)
    assert len(plan.moves) == 2 and plan.complete
    assert violations(applied(objects, plan), include_soft=True) == 0


# ---- the CLI --------------------------------------------------------------------------


def _snapshot(tmp_path: Path, objects: list[RawObj]) -> str:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def test_cli_audit_plan_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`audit --plan -o json` prints the plan and planComplete; the exit code is that
    of the current state (1: violated), also with --plan."""
    objects = cluster("4/0")
    code = main(["audit", "--snapshot", _snapshot(tmp_path, objects), "--plan", "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["violations"] == 1
    assert doc["planComplete"] is True
    assert len(doc["plan"]) == 2
    assert all(set(m) == {"pod", "from", "to"} and m["to"] == "b1" for m in doc["plan"])
    assert doc["planReasons"] == {}


def test_cli_audit_plan_balanced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing violated: exit 0, an empty complete plan."""
    code = main(
        ["audit", "--snapshot", _snapshot(tmp_path, cluster("1/1")), "--plan", "-o", "json"]
    )
    doc = json.loads(capsys.readouterr().out)
    assert (code, doc["plan"], doc["planComplete"]) == (0, [], True)


def test_cli_audit_plan_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The text report shows the moves as evictions (never `kubectl delete pod`, which
    bypasses PodDisruptionBudgets)."""
    code = main(["audit", "--snapshot", _snapshot(tmp_path, cluster("3/1")), "--plan"])
    out = capsys.readouterr().out
    assert code == 1
    assert "  evict default/web-" in out and "a1 -> b1" in out
    assert "Eviction API" in out and "kubectl delete pod -n" not in out
    assert "1 moves" in out


# ---- properties on small random clusters -----------------------------------------------


@st.composite
def small_clusters(draw: st.DrawFn) -> list[RawObj]:
    """≤ 6 nodes over ≤ 3 zones, ≤ 12 pods: a ReplicaSet's pods with a zone constraint
    (and maybe a hostname one), some pods that never move, some nodes with little
    room or a taint."""
    n_nodes = draw(st.integers(2, 6))
    zones = draw(st.lists(st.integers(0, 2), min_size=n_nodes, max_size=n_nodes))
    objects: list[RawObj] = []
    for i, z in enumerate(zones):
        builder = make_node().name(f"n{i}").zone(f"zone-{z}").hostname()
        room = draw(st.sampled_from([None, None, 2, 3, 4]))
        if room is not None:
            builder = builder.allocatable(pods=str(room), cpu="4", memory="8Gi")
        if draw(st.integers(0, 9)) == 0:
            builder = builder.taint("dedicated", "x", "NoSchedule")
        objects.append(builder.obj())
    zone_skew = draw(st.integers(1, 2))
    host_skew = draw(st.sampled_from([None, None, 1, 2]))
    n_pods = draw(st.integers(1, 10))
    # Pods crowd on one node often enough that spreads are violated.
    hot = draw(st.integers(0, n_nodes - 1))
    for p in range(n_pods):
        node = draw(st.sampled_from([hot, hot, *range(n_nodes)]))
        kind = draw(st.sampled_from(["ReplicaSet"] * 4 + [""]))
        pod = make_pod().name(f"web-{p}").label("app", "web").node(f"n{node}")
        pod = pod.spread(zone_skew, ZONE, DNS, WEB)
        if host_skew is not None:
            pod = pod.spread(host_skew, HOSTNAME, DNS, WEB)
        if kind:
            pod = pod.owner(kind, "web")
        objects.append(pod.obj())
    for p in range(draw(st.integers(0, 2))):
        node = draw(st.integers(0, n_nodes - 1))
        objects.append(
            make_pod().name(f"other-{p}").owner("ReplicaSet", "other").node(f"n{node}").obj()
        )
    return objects


PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(small_clusters())
def test_a_complete_plan_leaves_nothing_violated(objects: list[RawObj]) -> None:
    """Re-auditing the cluster with a complete plan's moves carried out: 0 violations."""
    _, _, plan = planned(objects)
    if plan.complete:
        assert violations(applied(objects, plan)) == 0
    else:
        assert plan.reasons


@PROPERTY
@given(small_clusters())
def test_each_move_is_feasible_in_order(objects: list[RawObj]) -> None:
    """Checked independently with place() on a snapshot built from the objects."""
    _, _, plan = planned(objects)
    check_moves(objects, plan)


@PROPERTY
@given(small_clusters())
def test_the_plan_is_no_longer_than_a_brute_force_minimum(objects: list[RawObj]) -> None:
    """A complete plan is as short as the shortest found by exhaustive search; an
    incomplete one has no short plan (3 moves or fewer) it missed."""
    _, _, plan = planned(objects)
    if plan.complete:
        assert brute_force(objects, len(plan.moves)) == len(plan.moves)
    else:
        assert brute_force(objects, 3) is None
