"""The outage and the drain drills, one case per rule; plans under budgets.

Legend: the cluster is drawn as zones of nodes, `a1 a2 | b1 b2 | c1 c2`, one pod of
Deployment web on each node unless a case says otherwise; the lost (or drained)
nodes are zone a's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    make_node,
    make_pod,
    pdb,
    scaled,
    selector,
    with_affinity,
)
from webhook.api.labels import parse_selector
from webhook.audit.drills.nodes import drain_nodes, tolerates_forever, unreachable_nodes, with_honor
from webhook.audit.drills.outcome import requeue_hint
from webhook.audit.measure.spread import evaluate
from webhook.audit.pipeline import run_audit
from webhook.audit.state.inventory import ClusterState
from webhook.config import Settings

RawObj = dict[str, Any]
APP = selector({"app": "web"})
ZONE_A = parse_selector(f"{ZONE}=a")
NODES = ("a1", "a2", "b1", "b2", "c1", "c2")


def node(name: str, pods: str = "10") -> RawObj:
    return (
        make_node()
        .name(name)
        .hostname()
        .zone(name[0])
        .allocatable(cpu="4", memory="8Gi", pods=pods)
        .obj()
    )


def web(
    name: str, on: str, *, owner: tuple[str, str] | None = ("ReplicaSet", "web"), **spread: Any
) -> RawObj:
    b = make_pod().name(name).label("app", "web").node(on).ready()
    if owner is not None:
        b = b.owner(*owner)
    if spread.pop("constrained", True):
        b = b.spread(
            spread.pop("max_skew", 1),
            spread.pop("key", ZONE),
            spread.pop("when", DNS),
            APP,
            **spread,
        )
    return b.obj()


def cluster(**spread: Any) -> list[RawObj]:
    """a1 a2 | b1 b2 | c1 c2, one web pod on each (web-a1 on a1, ...)."""
    return [*(node(n) for n in NODES), *(web(f"web-{n}", n, **spread) for n in NODES)]


def outage(objects: list[RawObj], sel: RawObj = ZONE_A) -> Any:
    return unreachable_nodes(ClusterState.from_objects(objects), sel)


def domains_after(drill: Any, include_soft: bool = False) -> dict[str, int]:
    [w] = evaluate(drill.state, include_soft=include_soft)
    return w.constraints[0].domains


# ---- the outage ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "spread", "pending", "domains"),
    [
        # The example: zone a stays a domain holding 0, so no replacement fits.
        (
            "nodeTaintsPolicy Ignore (default): spreads = [0/2/2], 2 pending",
            {},
            2,
            {"a": 0, "b": 2, "c": 2},
        ),
        (
            "nodeTaintsPolicy Ignore, stated",
            {"nodeTaintsPolicy": "Ignore"},
            2,
            {"a": 0, "b": 2, "c": 2},
        ),
        (
            "nodeTaintsPolicy Honor: spreads = [3/3], 0 pending",
            {"nodeTaintsPolicy": "Honor"},
            0,
            {"b": 3, "c": 3},
        ),
        # Two eligible domains left, fewer than minDomains: the global minimum is 0.
        (
            "minDomains 3 with a zone lost (Honor): spreads = [2/2], 2 pending",
            {"nodeTaintsPolicy": "Honor", "minDomains": 3},
            2,
            {"b": 2, "c": 2},
        ),
        (
            "minDomains 2 with a zone lost (Honor): 0 pending",
            {"nodeTaintsPolicy": "Honor", "minDomains": 2},
            0,
            {"b": 3, "c": 3},
        ),
        ("ScheduleAnyway: never a filter, 0 pending", {"when": SA}, 0, None),
        (
            "maxSkew 2: b or c at 3 against a's 0 is skew 3, 2 pending",
            {"max_skew": 2},
            2,
            {"a": 0, "b": 2, "c": 2},
        ),
        ("maxSkew 3 absorbs one per zone: 0 pending", {"max_skew": 3}, 0, {"a": 0, "b": 3, "c": 3}),
    ],
)
def test_outage_of_a_zone(
    name: str, spread: dict[str, Any], pending: int, domains: dict[str, int] | None
) -> None:
    drill = outage(cluster(**spread))
    assert drill.removed == ["a1", "a2"]
    assert drill.kind == "unreachable"
    assert sorted(k for k, _ in drill.disrupted) == ["default/web-a1", "default/web-a2"]
    assert len(drill.pending) == pending, name
    assert len(drill.placed) == 2 - pending
    if domains is not None:
        assert domains_after(drill) == domains


def test_lost_nodes_stay_tainted_and_not_ready() -> None:
    drill = outage(cluster())
    info = drill.state.snapshot.nodes["a1"]
    assert {(t["key"], t["effect"]) for t in info.node["spec"]["taints"]} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    }
    assert {"type": "Ready", "status": "Unknown"}.items() <= info.node["status"]["conditions"][
        0
    ].items()
    # The evicted pods stay, Terminating, where they were.
    assert [p["metadata"]["name"] for p in info.pods] == ["web-a1"]
    assert info.pods[0]["metadata"]["deletionTimestamp"]
    assert drill.state.snapshot.has_pod("default", "web-a1")


def test_the_pending_reasons_are_the_schedulers() -> None:
    drill = outage(cluster())
    assert drill.reasons["default/web-a1"] == {
        "node(s) didn't match pod topology spread constraints": 4,
        "node(s) had untolerated taint(s)": 2,
    }


@pytest.mark.parametrize(
    ("name", "spread", "pending", "domains"),
    [
        # a1 lost: its domain holds 0, every other node 1; one more anywhere is skew 2.
        (
            "hostname, Ignore: lost node still a domain, 1 pending",
            {},
            1,
            {"a1": 0, "a2": 1, "b1": 1, "b2": 1, "c1": 1, "c2": 1},
        ),
        ("hostname, Honor: lost node leaves, 0 pending", {"nodeTaintsPolicy": "Honor"}, 0, None),
    ],
)
def test_outage_of_one_node_under_a_hostname_spread(
    name: str, spread: dict[str, Any], pending: int, domains: dict[str, int] | None
) -> None:
    drill = outage(cluster(key=HOSTNAME, **spread), parse_selector(f"{HOSTNAME}=a1"))
    assert len(drill.pending) == pending, name
    if domains is not None:
        assert domains_after(drill) == domains


@pytest.mark.parametrize(
    ("affinity_policy", "taints_policy", "pending", "domains"),
    [
        # Pods may only run in zones a and b (required node affinity), 4 of them.
        ("Honor", "Ignore", 2, {"a": 0, "b": 2}),
        ("Honor", "Honor", 0, {"b": 4}),
        # Zone c joins the domains with 0 pods, but the pods cannot go there.
        ("Ignore", "Honor", 2, {"b": 2, "c": 0}),
    ],
)
def test_outage_under_each_node_inclusion_policy(
    affinity_policy: str, taints_policy: str, pending: int, domains: dict[str, int]
) -> None:
    pods = []
    for n in ("a1", "a2", "b1", "b2"):
        pod = web(f"web-{n}", n, nodeAffinityPolicy=affinity_policy, nodeTaintsPolicy=taints_policy)
        pod["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": ZONE, "operator": "In", "values": ["a", "b"]}
                            ]
                        }
                    ]
                }
            }
        }
        pods.append(pod)
    drill = outage([*(node(n) for n in NODES), *pods])
    assert len(drill.pending) == pending
    assert domains_after(drill) == domains


@pytest.mark.parametrize(
    ("name", "owner", "not_recreated", "queued"),
    [
        ("ReplicaSet: recreated", ("ReplicaSet", "web"), [], True),
        ("ReplicationController: recreated", ("ReplicationController", "web"), [], True),
        ("Job: recreated", ("Job", "batch"), [], True),
        (
            "StatefulSet: not while its predecessor is Terminating",
            ("StatefulSet", "db"),
            ["default/p"],
            False,
        ),
        ("bare pod: no controller", None, ["default/p"], False),
        ("DaemonSet: belongs to its node", ("DaemonSet", "agent"), [], False),
        ("mirror pod: belongs to its node", ("Node", "a1"), [], False),
    ],
)
def test_which_controllers_recreate_their_pods(
    name: str, owner: tuple[str, str] | None, not_recreated: list[str], queued: bool
) -> None:
    drill = outage([node("a1"), node("b1"), web("p", "a1", owner=owner, constrained=False)])
    assert drill.disrupted == [("default/p", "a1")], name
    assert drill.not_recreated == not_recreated
    assert ("default/p" in drill.placed) is queued
    assert drill.pending == []


def test_a_replacement_gets_a_new_name_beside_its_terminating_predecessor() -> None:
    drill = outage([node("a1"), node("b1"), web("p", "a1", constrained=False)])
    names = sorted(p["metadata"]["name"] for p in drill.state.running)
    assert names == ["p-new"]
    assert drill.placed == {"default/p": "b1"}


def test_a_replacement_preempted_later_in_the_drill_keeps_its_original_key() -> None:
    """a1 (zone a) is lost with three pods. `lead` (priority 1000, 3 cpu) needs a `db`
    pod in its zone and fits nowhere at first; `batch` (500, 3 cpu) binds on b1 as
    `batch-new`; `db` (100) binds on b2 (its nodeSelector); that wakes `lead`, which
    now has its db pod in zone b but no room: it preempts `batch-new` on b1. The
    victim is the replacement of default/batch: it leaves `placed`, comes back under
    that key and, fitting nowhere, is pending under it."""
    b1 = node("b1")
    b2 = make_node().name("b2").hostname().zone("b").allocatable(cpu="1", memory="8Gi", pods="10")
    lead = make_pod().name("lead").owner("ReplicaSet", "lead").node("a1").priority(1000)
    lead = with_affinity(lead.requests(cpu="3").obj(), "In", "role", ZONE, ["db"])
    batch = make_pod().name("batch").owner("ReplicaSet", "batch").node("a1").priority(500)
    db = make_pod().name("db").label("role", "db").owner("ReplicaSet", "db").node("a1")
    db = db.priority(100).requests(cpu="500m").node_selector({HOSTNAME: "b2"})
    drill = outage([node("a1"), b1, b2.obj(), lead, batch.requests(cpu="3").obj(), db.obj()])
    assert drill.preempted == ["default/batch-new"]
    assert drill.placed == {"default/lead": "b1", "default/db": "b2"}
    assert drill.pending == ["default/batch"]
    assert set(drill.replacements) == {"default/batch"}
    assert "default/batch" in drill.reasons and "default/batch-new" not in drill.reasons
    running = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in drill.state.running}
    assert running == {"lead-new": "b1", "db-new": "b2"}


@pytest.mark.parametrize(
    ("name", "seconds", "stays"),
    [
        ("tolerates unreachable:NoExecute forever: stays and counts", None, True),
        ("tolerates it for 300 s: evicted", 300, False),
        ("tolerates it for 0 s: evicted", 0, False),
    ],
)
def test_tolerating_the_unreachable_taint(name: str, seconds: int | None, stays: bool) -> None:
    pod = make_pod().name("p").label("app", "web").node("a1").owner("ReplicaSet", "web")
    pod = pod.toleration_seconds("node.kubernetes.io/unreachable", "NoExecute", seconds)
    drill = outage([node("a1"), node("b1"), pod.obj()])
    assert (drill.disrupted == []) is stays, name
    running = {(p["metadata"]["name"], p["spec"]["nodeName"]) for p in drill.state.running}
    assert running == ({("p", "a1")} if stays else {("p-new", "b1")})


def test_every_noexecute_taint_must_be_tolerated_forever() -> None:
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    other = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    forever = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    pod = make_pod().obj()
    pod["spec"]["tolerations"] = [forever]
    assert tolerates_forever(pod, [unreachable])
    assert not tolerates_forever(pod, [unreachable, other])
    pod["spec"]["tolerations"] = [forever, {"operator": "Exists", "tolerationSeconds": 60}]
    assert not tolerates_forever(pod, [unreachable])  # the shortest matching one decides


def test_nodes_nobody_uses_change_nothing() -> None:
    objects = [*cluster(), make_node().name("spare").hostname().zone("d").obj()]
    drill = outage(objects, parse_selector(f"{ZONE}=d"))
    assert (drill.disrupted, drill.pending, drill.placed) == ([], [], {})


def test_honor_comparison_of_the_pending_pods() -> None:
    drill = outage(cluster())
    [(workload, comparison)] = with_honor(drill).items()
    assert workload == "ReplicaSet default/web"
    assert (comparison.pending, comparison.placed, comparison.recovers) == (2, 2, True)


def test_honor_comparison_when_capacity_is_what_blocks() -> None:
    objects = [
        *(node(n, pods="1") for n in NODES),
        *(web(f"web-{n}", n) for n in NODES),
    ]
    drill = outage(objects)
    [comparison] = with_honor(drill).values()
    assert (comparison.pending, comparison.placed, comparison.recovers) == (2, 0, False)


# ---- the drain -----------------------------------------------------------------------------


def drain(objects: list[RawObj], sel: RawObj = ZONE_A) -> Any:
    return drain_nodes(ClusterState.from_objects(objects), sel)


def test_drain_cordons_evicts_in_order_and_places_replacements() -> None:
    drill = drain(cluster(nodeTaintsPolicy="Honor"))
    assert drill.disrupted == [("default/web-a1", "a1"), ("default/web-a2", "a2")]
    assert drill.drained == ["a1", "a2"] and drill.blocked == {}
    assert drill.state.snapshot.nodes["a1"].node["spec"]["unschedulable"] is True
    assert domains_after(drill) == {"b": 3, "c": 3}


def test_a_replacement_that_fits_nowhere_blocks_the_next_eviction() -> None:
    """maxUnavailable 1: web-a1 goes; its replacement fits nowhere (zone a, cordoned,
    stays a domain with 0), so it is not Ready and web-a2's eviction is refused."""
    drill = drain(
        [*cluster(), scaled("ReplicaSet", "web", 6), pdb("web", {"app": "web"}, max_unavailable=1)]
    )
    assert drill.disrupted == [("default/web-a1", "a1")]
    assert drill.pending == ["default/web-a1"]
    assert drill.blocked == {"default/web-a2": "default/web"}
    assert drill.drained == ["a1"]


def test_a_placed_replacement_allows_the_next_eviction() -> None:
    objects = [*cluster(nodeTaintsPolicy="Honor"), scaled("ReplicaSet", "web", 6)]
    drill = drain([*objects, pdb("web", {"app": "web"}, max_unavailable=1)])
    assert [k for k, _ in drill.disrupted] == ["default/web-a1", "default/web-a2"]
    assert drill.blocked == {} and drill.drained == ["a1", "a2"]


def test_a_budget_allowing_nothing_blocks_the_drain() -> None:
    objects = [
        *cluster(),
        scaled("ReplicaSet", "web", 6),
        pdb("web", {"app": "web"}, min_available="100%"),
    ]
    drill = drain(objects)
    assert drill.disrupted == []
    assert drill.blocked == {"default/web-a1": "default/web", "default/web-a2": "default/web"}
    assert drill.drained == []


def test_drain_leaves_daemonset_and_mirror_pods_and_evicts_bare_pods() -> None:
    agent = make_pod().name("agent").node("a1").owner("DaemonSet", "agent").obj()
    mirror = make_pod().name("etcd").node("a1").owner("Node", "a1").obj()
    bare = make_pod().name("bare").node("a1").obj()
    drill = drain([node("a1"), node("b1"), agent, mirror, bare], parse_selector(f"{HOSTNAME}=a1"))
    assert drill.disrupted == [("default/bare", "a1")]
    assert drill.not_recreated == ["default/bare"]
    assert drill.drained == ["a1"]
    left = sorted(
        p["metadata"]["name"] for p in drill.state.running if p["spec"]["nodeName"] == "a1"
    )
    assert left == ["agent", "etcd"]


# ---- the report --------------------------------------------------------------------------


def test_json_of_the_outage_drill() -> None:
    report = run_audit(
        ClusterState.from_objects(cluster()), Settings(), drill=("unreachable", ZONE_A)
    )
    doc = report.to_json()
    assert doc["unreachableNodes"] == ["a1", "a2"]
    assert doc["pending"] == ["default/web-a1", "default/web-a2"]
    assert doc["notRecreated"] == []
    [entry] = doc["workloads"][0]["constraints"]
    assert entry["before"] == {"a": 2, "b": 2, "c": 2}
    assert entry["domains"] == {"a": 0, "b": 2, "c": 2}
    honor = {"ReplicaSet default/web": {"pending": 2, "placedWithHonor": 2, "changed": True}}
    assert doc["withHonor"] == honor
    assert "drainedNodes" not in doc and "removedNodes" not in doc


def test_json_of_the_drain_drill() -> None:
    objects = [
        *cluster(),
        scaled("ReplicaSet", "web", 6),
        pdb("web", {"app": "web"}, max_unavailable=1),
    ]
    doc = run_audit(
        ClusterState.from_objects(objects), Settings(), drill=("drain", ZONE_A)
    ).to_json()
    assert (doc["drainedNodes"], doc["blocked"]) == (["a1"], {"default/web-a2": "default/web"})
    assert "unreachableNodes" not in doc


# ---- plans under budgets -----------------------------------------------------------------


def skewed(*extra: RawObj) -> list[RawObj]:
    """a1 | b1: three web pods on a1, one on b1 (skew 2 > maxSkew 1)."""
    pods = [web(f"web-{i}", "a1") for i in range(3)] + [web("web-3", "b1")]
    return [node("a1"), node("b1"), scaled("ReplicaSet", "web", 4), *pods, *extra]


def test_a_plan_an_all_blocking_budget_cannot_satisfy() -> None:
    objects = skewed(pdb("web", {"app": "web"}, max_unavailable=0))
    report = run_audit(ClusterState.from_objects(objects), Settings(), plan=True)
    assert report.plan is not None
    assert (report.plan.moves, report.plan.complete) == ([], False)
    assert report.plan.reasons["ReplicaSet default/web"].startswith(
        "PodDisruptionBudget default/web needs 4 healthy pod(s) and has 4: 0 disruption(s) allowed"
    )


def test_a_budget_allowing_one_disruption_still_gets_the_plan() -> None:
    """Each eviction's replacement runs before the next: one disruption at a time is
    enough for any number of moves."""
    objects = skewed(pdb("web", {"app": "web"}, max_unavailable=1))
    report = run_audit(ClusterState.from_objects(objects), Settings(), plan=True)
    assert report.plan is not None and report.plan.complete
    assert len(report.plan.moves) == 1


# ---- the queue's hints -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "added", "wakes"),
    [
        ("a pod its selector matches, same namespace", make_pod().label("app", "web").obj(), True),
        ("another namespace", make_pod().namespace("other").label("app", "web").obj(), False),
        ("labels its selector does not match", make_pod().label("app", "db").obj(), False),
    ],
)
def test_a_waiting_spread_pod_wakes_on_a_pod_it_counts(
    name: str, added: RawObj, wakes: bool
) -> None:
    waiting = web("w", "a1", constrained=True)
    assert requeue_hint(waiting)(added) is wakes, name


def test_a_waiting_pod_without_spread_or_affinity_never_wakes_on_an_add() -> None:
    """Resources, ports and anti-affinity only get stricter when a pod is added."""
    assert requeue_hint(web("w", "a1", constrained=False))(make_pod().obj()) is False
