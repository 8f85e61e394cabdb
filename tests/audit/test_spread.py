"""The audit's spread of running pods: one case per rule of the interface's `audit`
section (which pods count, how they group into workloads, eligible domains, skew)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import DNS, HOSTNAME, SA, ZONE, exists, make_node, make_pod, selector
from webhook.audit.measure.spread import document_entry_key, entry_key, evaluate
from webhook.audit.state.inventory import ClusterState, Workload

RawObj = dict[str, Any]
APP = selector({"app": "web"})


def zone_node(name: str, zone: str | None, **labels: str) -> RawObj:
    b = make_node().name(name).hostname()
    if zone is not None:
        b = b.zone(zone)
    return b.labels(labels).obj()


def web(name: str, node: str, *, owner: str = "web-rs", ns: str = "default", **kw: Any) -> RawObj:
    """A running pod of ReplicaSet `owner` with a zone DoNotSchedule constraint."""
    b = make_pod().name(name).namespace(ns).label("app", "web").node(node)
    if owner:
        b = b.owner("ReplicaSet", owner)
    return b.spread(
        kw.pop("max_skew", 1), kw.pop("key", ZONE), kw.pop("when", DNS), APP, **kw
    ).obj()


THREE_ZONES = [zone_node("a1", "a"), zone_node("b1", "b"), zone_node("c1", "c")]


def audit(*objects: RawObj, include_soft: bool = False) -> list[Any]:
    return evaluate(ClusterState.from_objects(objects), include_soft=include_soft)


def only(spreads: list[Any]) -> Any:
    assert len(spreads) == 1 and len(spreads[0].constraints) == 1, spreads
    return spreads[0].constraints[0]


def test_skew_is_largest_count_minus_global_minimum() -> None:
    c = only(
        audit(*THREE_ZONES, web("p1", "a1"), web("p2", "a1"), web("p3", "a1"), web("p4", "b1"))
    )
    assert c.domains == {"a": 3, "b": 1, "c": 0}
    assert (c.skew, c.violated) == (3, True)


def test_within_max_skew_is_not_violated() -> None:
    c = only(
        audit(*THREE_ZONES, web("p1", "a1"), web("p2", "b1"), web("p3", "c1"), web("p4", "a1"))
    )
    assert (c.skew, c.violated) == (1, False)


@pytest.mark.parametrize(
    ("min_domains", "skew"),
    [
        (None, 0),  # two eligible domains, both with 2: global minimum 2
        (2, 0),  # as many eligible domains as minDomains: the minimum counts
        (3, 2),  # fewer eligible domains than minDomains: global minimum 0
    ],
)
def test_min_domains_sets_the_global_minimum(min_domains: int | None, skew: int) -> None:
    extra = {} if min_domains is None else {"minDomains": min_domains}
    nodes = [zone_node("a1", "a"), zone_node("b1", "b")]
    pods = [web(f"p{i}", n, **extra) for i, n in enumerate(["a1", "a1", "b1", "b1"])]
    c = only(audit(*nodes, *pods))
    assert c.skew == skew and c.min_domains == min_domains


def _selected(pod: RawObj) -> RawObj:
    pod["spec"]["nodeSelector"] = {"pool": "main"}
    return pod


@pytest.mark.parametrize(
    ("policy", "domains"),
    [
        ("Honor", {"a": 2, "b": 0}),  # default: zone c's node fails the nodeSelector
        ("Ignore", {"a": 2, "b": 0, "c": 1}),
    ],
)
def test_node_affinity_policy(policy: str, domains: dict[str, int]) -> None:
    nodes = [
        zone_node("a1", "a", pool="main"),
        zone_node("b1", "b", pool="main"),
        zone_node("c1", "c", pool="other"),
    ]
    extra = {} if policy == "Honor" else {"nodeAffinityPolicy": policy}
    pods = [_selected(web(f"p{i}", n, **extra)) for i, n in enumerate(["a1", "a1", "c1"])]
    assert only(audit(*nodes, *pods)).domains == domains


@pytest.mark.parametrize(
    ("policy", "tolerate", "domains"),
    [
        (None, False, {"a": 1, "b": 0, "c": 2}),  # default Ignore: taints do not matter
        ("Honor", False, {"a": 1, "b": 0}),  # the untolerated taint takes c out
        ("Honor", True, {"a": 1, "b": 0, "c": 2}),  # tolerated: c counts again
    ],
)
def test_node_taints_policy(policy: str | None, tolerate: bool, domains: dict[str, int]) -> None:
    tainted = make_node().name("c1").hostname().zone("c").taint("dedicated", "x").obj()
    extra = {} if policy is None else {"nodeTaintsPolicy": policy}
    pods = [web(f"p{i}", n, **extra) for i, n in enumerate(["a1", "c1", "c1"])]
    if tolerate:
        for p in pods:
            p["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    assert only(audit(*THREE_ZONES[:2], tainted, *pods)).domains == domains


def test_node_without_the_topology_key_is_in_no_domain() -> None:
    pods = [web("p1", "a1"), web("p2", "nolabel"), web("p3", "nolabel")]
    c = only(audit(*THREE_ZONES, zone_node("nolabel", None), *pods))
    assert c.domains == {"a": 1, "b": 0, "c": 0}


def test_node_lacking_a_key_of_another_constraint_of_the_same_kind_is_excluded() -> None:
    # b1 has no region label: for a pod spreading over zone and region (both
    # DoNotSchedule) it is in no zone domain either.
    nodes = [zone_node("a1", "a", **{"topology.kubernetes.io/region": "r"}), zone_node("b1", "b")]
    pods = []
    for i, n in enumerate(["a1", "b1", "b1"]):
        p = web(f"p{i}", n)
        p["spec"]["topologySpreadConstraints"].append(
            {
                "maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/region",
                "whenUnsatisfiable": DNS,
                "labelSelector": APP,
            }
        )
        pods.append(p)
    [spread] = audit(*nodes, *pods)
    assert spread.constraints[0].domains == {"a": 1}


def test_soft_constraint_key_does_not_exclude_nodes_for_hard_ones() -> None:
    nodes = [zone_node("a1", "a", rack="r1"), zone_node("b1", "b")]
    pods = []
    for i, n in enumerate(["a1", "b1", "b1"]):
        p = web(f"p{i}", n)
        p["spec"]["topologySpreadConstraints"].append(
            {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": SA, "labelSelector": APP}
        )
        pods.append(p)
    [spread] = audit(*nodes, *pods)
    assert [c.index for c in spread.constraints] == [0]
    assert spread.constraints[0].domains == {"a": 1, "b": 2}


def test_schedule_anyway_is_checked_only_with_include_soft() -> None:
    pods = [web(f"p{i}", "a1", when=SA) for i in range(3)]
    assert audit(*THREE_ZONES, *pods) == []
    c = only(audit(*THREE_ZONES, *pods, include_soft=True))
    assert (c.when_unsatisfiable, c.skew, c.violated) == (SA, 3, True)


@pytest.mark.parametrize(
    "not_running",
    [
        make_pod().name("x").label("app", "web").node("b1").terminating().obj(),
        make_pod().name("x").label("app", "web").node("b1").phase("Failed").obj(),
        make_pod().name("x").label("app", "web").node("b1").phase("Succeeded").obj(),
        make_pod().name("x").label("app", "web").node("gone").obj(),  # unknown node
        make_pod().name("x").label("app", "web").obj(),  # not bound
        make_pod().name("x").namespace("other").label("app", "web").node("b1").obj(),
    ],
    ids=["terminating", "failed", "succeeded", "unknown-node", "pending", "other-namespace"],
)
def test_pods_that_do_not_count(not_running: RawObj) -> None:
    c = only(audit(*THREE_ZONES, web("p1", "a1"), web("p2", "a1"), not_running))
    assert c.domains == {"a": 2, "b": 0, "c": 0}


def test_running_phase_and_unknown_phase_count() -> None:
    running = make_pod().name("x").label("app", "web").node("b1").phase("Running").obj()
    c = only(audit(*THREE_ZONES, web("p1", "a1"), running))
    assert c.domains == {"a": 1, "b": 1, "c": 0}


def test_counts_are_per_namespace() -> None:
    spreads = audit(
        *THREE_ZONES,
        web("p1", "a1", ns="one"),
        web("p2", "a1", ns="one"),
        web("p3", "b1", ns="two", owner="other"),
    )
    assert [(s.workload.namespace, s.constraints[0].domains) for s in spreads] == [
        ("one", {"a": 2, "b": 0, "c": 0}),
        ("two", {"a": 0, "b": 1, "c": 0}),
    ]


def _owned(obj: RawObj, kind: str, name: str) -> RawObj:
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "name": name,
            "uid": f"u-{name}",
            "controller": True,
        }
    ]
    return obj


def _object(kind: str, name: str, ns: str = "default") -> RawObj:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns}}


@pytest.mark.parametrize(
    ("owners", "pod_owner", "workload"),
    [
        (
            [_owned(_object("ReplicaSet", "web-rs"), "Deployment", "web")],
            ("ReplicaSet", "web-rs"),
            ("Deployment", "web"),
        ),
        ([], ("ReplicaSet", "web-rs"), ("ReplicaSet", "web-rs")),  # owner object absent
        (
            [
                _owned(_object("Job", "nightly-1"), "CronJob", "nightly"),
                _object("CronJob", "nightly"),
            ],
            ("Job", "nightly-1"),
            ("CronJob", "nightly"),
        ),
        ([_object("StatefulSet", "db")], ("StatefulSet", "db"), ("StatefulSet", "db")),
        ([], None, ("Pod", "p1")),  # a bare pod is its own workload
    ],
    ids=["deployment", "absent-owner", "cronjob", "statefulset", "bare-pod"],
)
def test_workload_is_the_top_controller(
    owners: list[RawObj], pod_owner: tuple[str, str] | None, workload: tuple[str, str]
) -> None:
    pod = web("p1", "a1", owner="")
    if pod_owner is not None:
        _owned(pod, *pod_owner)
    [spread] = audit(*THREE_ZONES, *owners, pod)
    assert spread.workload == Workload("default", *workload)


def test_non_controller_owner_reference_is_not_followed() -> None:
    pod = web("p1", "a1", owner="")
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u", "controller": False}
    ]
    [spread] = audit(*THREE_ZONES, pod)
    assert spread.workload == Workload("default", "Pod", "p1")


def test_owner_loop_ends() -> None:
    rs = _owned(_object("ReplicaSet", "a"), "ReplicaSet", "b")
    rs2 = _owned(_object("ReplicaSet", "b"), "ReplicaSet", "a")
    [spread] = audit(*THREE_ZONES, rs, rs2, web("p1", "a1", owner="a"))
    assert spread.workload.kind == "ReplicaSet"


def test_match_label_keys_separate_replica_sets_of_one_deployment() -> None:
    rs_old = _owned(_object("ReplicaSet", "web-old"), "Deployment", "web")
    rs_new = _owned(_object("ReplicaSet", "web-new"), "Deployment", "web")
    pods = []
    for i, (node, rs, h) in enumerate(
        [
            ("a1", "web-old", "old"),
            ("a1", "web-old", "old"),
            ("a1", "web-new", "new"),
            ("b1", "web-new", "new"),
        ]
    ):
        p = web(f"p{i}", node, owner=rs, matchLabelKeys=["pod-template-hash"])
        p["metadata"]["labels"]["pod-template-hash"] = h
        pods.append(p)
    [spread] = audit(*THREE_ZONES, rs_old, rs_new, *pods)
    assert spread.workload == Workload("default", "Deployment", "web")
    assert spread.pods == 4
    by_hash = {
        c.selector["matchExpressions"][-1]["values"][0]: (c.domains, c.pods)
        for c in spread.constraints
    }
    assert by_hash == {
        "old": ({"a": 2, "b": 0, "c": 0}, 2),
        "new": ({"a": 1, "b": 1, "c": 0}, 2),
    }


def test_identical_evaluations_are_reported_once() -> None:
    pods = [web(f"p{i}", n) for i, n in enumerate(["a1", "b1", "c1"])]
    [spread] = audit(*THREE_ZONES, *pods)
    assert len(spread.constraints) == 1 and spread.constraints[0].pods == 3


def test_different_node_selectors_are_evaluated_separately() -> None:
    nodes = [
        zone_node("a1", "a", pool="x"),
        zone_node("b1", "b", pool="x"),
        zone_node("c1", "c", pool="y"),
    ]
    p1 = web("p1", "a1")
    p1["spec"]["nodeSelector"] = {"pool": "x"}
    p2 = web("p2", "c1")
    [spread] = audit(*nodes, p1, p2)
    assert sorted(tuple(c.domains) for c in spread.constraints) == [("a", "b"), ("a", "b", "c")]


def test_no_eligible_domain_means_no_skew() -> None:
    c = only(audit(zone_node("n1", None), web("p1", "n1"), web("p2", "n1")))
    assert (c.domains, c.skew, c.violated) == ({}, 0, False)


def test_constraint_the_scheduler_cannot_read_is_reported_not_violated() -> None:
    pod = web("p1", "a1")
    pod["spec"]["topologySpreadConstraints"][0]["labelSelector"] = {
        "matchExpressions": [{"key": "app", "operator": "Bogus"}]
    }
    c = only(audit(*THREE_ZONES, pod))
    assert c.error and not c.violated


def test_hostname_constraint_counts_per_node() -> None:
    pods = [web("p1", "a1", key=HOSTNAME), web("p2", "a1", key=HOSTNAME)]
    c = only(audit(*THREE_ZONES, *pods))
    assert c.domains == {"a1": 2, "b1": 0, "c1": 0} and c.skew == 2


def test_selector_matching_other_workloads_counts_them_too() -> None:
    # The scheduler counts every matching pod of the namespace, whoever owns it.
    other = make_pod().name("o1").label("app", "web").label("tier", "x").node("a1").obj()
    c = only(audit(*THREE_ZONES, web("p1", "a1"), other))
    assert c.domains["a"] == 2


def test_pods_without_constraints_are_not_listed() -> None:
    plain = make_pod().name("p").node("a1").owner("ReplicaSet", "x").obj()
    assert audit(*THREE_ZONES, plain) == []


def test_exists_selector_and_json_shape() -> None:
    pod = make_pod().name("p1").label("app", "web").node("a1").owner("ReplicaSet", "r")
    c = only(audit(*THREE_ZONES, pod.spread(1, ZONE, DNS, exists("app")).obj()))
    assert c.to_json() == {
        "index": 0,
        "topologyKey": ZONE,
        "whenUnsatisfiable": DNS,
        "maxSkew": 1,
        "minDomains": None,
        "skew": 1,
        "violated": False,
        "domains": {"a": 1, "b": 0, "c": 0},
        "labelSelector": exists("app"),
        "pods": 1,
    }


def test_an_entry_has_the_same_key_in_the_model_and_in_the_json_document() -> None:
    """entry_key (what drills and plans match entries by) and document_entry_key (what
    --runs matches the runs' documents by) name an entry alike, and tell apart a
    workload's entries of one index that differ in whenUnsatisfiable or selector."""
    pods = [
        web("p1", "a1"),
        web("p2", "b1", when=SA),
        web("p3", "c1", matchLabelKeys=["pod-template-hash"]),
    ]
    pods[2]["metadata"]["labels"]["pod-template-hash"] = "h3"
    spreads = audit(*THREE_ZONES, *pods, include_soft=True)
    keys = [
        (entry_key(str(w.workload), c), document_entry_key(w.to_json(), c.to_json()))
        for w in spreads
        for c in w.constraints
    ]
    assert len(spreads) == 1 and len(keys) == 3
    assert all(model == document for model, document in keys)
    assert len({model for model, _ in keys}) == 3
