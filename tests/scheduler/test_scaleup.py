"""Pending, diagnosed: node groups, their templates, and whether a new node would help.

Legend of the cluster drawings: `a1(a, g)[2/2cpu]` is node a1 in zone a, node group g,
holding pods that request 2 of its 2 cpu; `*` marks a node in no group, `!` one the
node lifecycle controller marked unreachable. Every pending pod below finds no node
in the cluster as drawn.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.builders import DNS, HOSTNAME, ZONE, make_node, make_pod, selector
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import feasible_nodes, place
from webhook.scheduler.profile import framework_of
from webhook.scheduler.scaleup import (
    CAPACITY,
    DEFAULT_GROUP_LABELS,
    NO_GROUP,
    OTHER,
    SELECTION,
    SPREAD,
    TAINTS,
    ZONE_UNCOVERED,
    Diagnosis,
    Pending,
    ScaleUp,
    diagnose,
    fresh_node,
    node_groups,
)

RawObj = dict[str, Any]
NODEGROUP = "eks.amazonaws.com/nodegroup"
WEB = {"app": "web"}
FRAMEWORK = framework_of()


def node(name: str, zone: str, group: str | None = "g", cpu: str = "2") -> Any:
    builder = make_node().name(name).hostname().zone(zone).allocatable(cpu=cpu, pods="110")
    return builder.label(NODEGROUP, group) if group else builder


def web(name: str, on: str, cpu: str = "2") -> RawObj:
    return make_pod().name(name).labels(WEB).node(on).requests(cpu=cpu).obj()


def daemon(name: str, on: str, cpu: str = "500m") -> RawObj:
    return (
        make_pod()
        .name(name)
        .namespace("kube-system")
        .owner("DaemonSet", "logs")
        .node(on)
        .requests(cpu=cpu)
        .obj()
    )


def pending(cpu: str = "1", spread: bool = False) -> Any:
    builder = make_pod().name("web-new").labels(WEB).requests(cpu=cpu)
    return builder.spread(1, ZONE, DNS, selector(WEB)) if spread else builder


def unreachable(builder: Any) -> RawObj:
    obj: RawObj = builder.taint("node.kubernetes.io/unreachable", effect="NoSchedule").obj()
    return obj


def judge(cluster: list[RawObj], pod: RawObj) -> Diagnosis:
    snapshot = Snapshot.from_objects(cluster)
    assert place(pod, snapshot, framework=FRAMEWORK).selected_node is None, "not pending"
    return diagnose([Pending("default/web-new", pod, FRAMEWORK)], snapshot)


def where(answer: ScaleUp) -> list[tuple[str, str]]:
    return [(t.group, t.zone) for t in answer.fits]


FULL_ABC = [
    node("a1", "a").obj(), node("b1", "b").obj(), node("c1", "c").obj(),
    web("w1", "a1"), web("w2", "b1"), web("w3", "c1"),
]  # fmt: skip

CASES = [
    # a1(a, g)[2/2] b1(b, g)[2/2] c1(c, g)[2/2]; 1 cpu, no spread: any new node.
    (
        "capacity in every zone",
        FULL_ABC,
        pending().obj(),
        [("g", "a"), ("g", "b"), ("g", "c")],
        CAPACITY,
        "fits on a new node of group g in zone a (also group g in zone b, group g in zone c)",
    ),
    # a1(a, g)[2 web] a2(a, g)[0, full] b1(b, g)[1 web] c1(c, g)[2 web]: zone maxSkew 1,
    # min 1 (b): a and c would reach 3 and 3; only b (1 + 1 - 1 = 1) stays within.
    (
        "only the zone the spread allows",
        [
            node("a1", "a", cpu="4").obj(),
            web("w1", "a1"),
            web("w2", "a1"),
            node("b1", "b").obj(),
            web("w3", "b1"),
            node("c1", "c", cpu="4").obj(),
            web("w4", "c1"),
            web("w5", "c1"),
        ],
        pending(spread=True).obj(),
        [("g", "b")],
        CAPACITY,
        "fits on a new node of group g in zone b",
    ),
    # a1(a, g, !)[0] b1(b, g)[1 web, full] c1(c, g)[1 web, full]: the unreachable zone a
    # still counts (nodeTaintsPolicy Ignore) with 0 pods: b and c would reach 2 - 0 > 1,
    # and no template is made from a lost node.
    (
        "no zone helps: skew against a lost domain",
        [
            unreachable(node("a1", "a")),
            node("b1", "b").obj(),
            node("c1", "c").obj(),
            web("w1", "b1"),
            web("w2", "c1"),
        ],
        pending(spread=True).obj(),
        [],
        SPREAD,
        "no new node would help: PodTopologySpread (node(s) didn't match pod topology "
        "spread constraints): the spread measures skew over topology.kubernetes.io/zone "
        "from a (0 matching pod(s)), a lost domain: its nodes are not ready or unreachable, "
        "so no new node in any zone a node group covers helps",
    ),
    # a1(a, *)[0, tainted] b1(b, g)[1 web, full] c1(c, g)[1 web, full]: zone a's only node
    # is in no group (and tainted, so nothing runs there): no new node can go to a.
    (
        "no zone helps: skew against an empty domain no group covers",
        [
            node("a1", "a", group=None).taint("dedicated", "infra").obj(),
            node("b1", "b").obj(),
            node("c1", "c").obj(),
            web("w1", "b1"),
            web("w2", "c1"),
        ],
        pending(spread=True).obj(),
        [],
        SPREAD,
        "no new node would help: PodTopologySpread (node(s) didn't match pod topology "
        "spread constraints): the spread measures skew over topology.kubernetes.io/zone "
        "from a (0 matching pod(s)), an empty domain for scale-up: its nodes belong to no "
        "node group, so no new node in any zone a node group covers helps",
    ),
    (
        "a selector no group satisfies",
        FULL_ABC,
        pending().node_selector({"disktype": "ssd"}).obj(),
        [],
        SELECTION,
        "no new node would help: NodeAffinity (node(s) didn't match Pod's node "
        "affinity/selector): its node selector or affinity matches no node group's labels",
    ),
    (
        "a zone no group covers",
        FULL_ABC,
        pending().node_affinity_in(ZONE, "d").obj(),
        [],
        ZONE_UNCOVERED,
        "no new node would help: NodeAffinity (node(s) didn't match Pod's node "
        "affinity/selector): it asks for zone d, which no node group covers (node groups "
        "have nodes in: a, b, c)",
    ),
    # gpu1(a, gpu, tainted)[2/2]: the template keeps the group's taint.
    (
        "taints copied to the template",
        [node("gpu1", "a", group="gpu").taint("nvidia.com/gpu", "true").obj(), web("w1", "gpu1")],
        pending().obj(),
        [],
        TAINTS,
        "no new node would help: TaintToleration (node(s) had untolerated taint(s)): "
        "it tolerates the taints of no node group",
    ),
    (
        "taints copied to the template, tolerated",
        [node("gpu1", "a", group="gpu").taint("nvidia.com/gpu", "true").obj(), web("w1", "gpu1")],
        pending().toleration("nvidia.com/gpu", "true", "NoSchedule").obj(),
        [("gpu", "a")],
        CAPACITY,
        "fits on a new node of group gpu in zone a",
    ),
    # A source node's transient taints (cordon's, the autoscaler's own) are not the group's.
    (
        "transient taints not copied",
        [
            node("a1", "a")
            .taint("ToBeDeletedByClusterAutoscaler", "1")
            .unschedulable()
            .taint("node.kubernetes.io/unschedulable")
            .obj(),
            web("w1", "a1"),
        ],
        pending().obj(),
        [("g", "a")],
        CAPACITY,
        "fits on a new node of group g in zone a",
    ),
    # a1(a, g)[logs 500m + web 1500m = 2/2]: a new node runs logs too: 1.6 cpu left 1.5.
    (
        "DaemonSet pods on the template counted",
        [node("a1", "a").obj(), daemon("logs-a1", "a1"), web("w1", "a1", cpu="1500m")],
        pending(cpu="1600m").obj(),
        [],
        OTHER,
        "no new node would help: NodeResourcesFit (Insufficient cpu): no node group's "
        "node would pass every filter",
    ),
    (
        "DaemonSet pods on the template counted, room left",
        [node("a1", "a").obj(), daemon("logs-a1", "a1"), web("w1", "a1", cpu="1500m")],
        pending(cpu="1500m").obj(),
        [("g", "a")],
        CAPACITY,
        "fits on a new node of group g in zone a",
    ),
    # Only the source node's DaemonSet pods: a bare pod there is not copied.
    (
        "other pods of the source node not copied",
        [node("a1", "a").obj(), web("w1", "a1", cpu="1900m")],
        pending(cpu="2").obj(),
        [("g", "a")],
        CAPACITY,
        "fits on a new node of group g in zone a",
    ),
    (
        "a node without any group label",
        [node("a1", "a", group=None).obj(), web("w1", "a1")],
        pending().obj(),
        [],
        NO_GROUP,
        "no new node would help: no node group to add a node from (no node carries any of "
        "the labels karpenter.sh/nodepool, eks.amazonaws.com/nodegroup, "
        "cloud.google.com/gke-nodepool, kubernetes.azure.com/agentpool, "
        "node.kubernetes.io/instance-type)",
    ),
]


@pytest.mark.parametrize(
    ("cluster", "pod", "fits", "cause", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_rule(
    cluster: list[RawObj], pod: RawObj, fits: list[tuple[str, str]], cause: str, line: str
) -> None:
    answer = judge(cluster, pod).verdicts["default/web-new"]
    assert where(answer) == fits
    assert answer.cause == cause
    assert answer.line() == line


@pytest.mark.parametrize("label", DEFAULT_GROUP_LABELS)
def test_groups_from_each_well_known_label(label: str) -> None:
    """Each well-known label names a group; a node without it is in none."""
    snapshot = Snapshot.from_objects(
        [node("a1", "a", group=None).label(label, "pool-1").obj(), node("b1", "b", None).obj()]
    )
    groups = node_groups(snapshot)
    assert [(t.group, t.zone, t.source) for t in groups.templates] == [("pool-1", "a", "a1")]
    assert groups.ungrouped == ["b1"]


def test_first_label_in_order_wins() -> None:
    """A Karpenter node also carries an instance type: its NodePool names the group."""
    snapshot = Snapshot.from_objects(
        [
            node("a1", "a", group=None)
            .labels({"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/nodepool": "p"})
            .obj()
        ]
    )
    assert [t.group for t in node_groups(snapshot).templates] == ["p"]


def test_node_group_labels_replace_the_list() -> None:
    """nodeGroupLabels replaces the well-known list: the instance type no longer groups."""
    cluster = [
        node("a1", "a", group=None).labels({"example.com/pool": "batch"}).obj(),
        node("b1", "b", group=None).labels({"node.kubernetes.io/instance-type": "m5"}).obj(),
    ]
    groups = node_groups(Snapshot.from_objects(cluster), ("example.com/pool",))
    assert [(t.group, t.zone) for t in groups.templates] == [("batch", "a")]
    assert groups.ungrouped == ["b1"]
    assert groups.ungrouped_line() == (
        "1 node(s) belong to no node group (none of the labels example.com/pool): b1"
    )


def test_one_template_per_group_and_zone() -> None:
    """a1 a2 (a, g), b1 (b, g), b2 (b, h): three templates, from the first node by name."""
    cluster = [
        node("a2", "a").obj(), node("a1", "a").obj(), node("b1", "b").obj(),
        node("b2", "b", group="h").obj(),
    ]  # fmt: skip
    groups = node_groups(Snapshot.from_objects(cluster))
    assert [(t.group, t.zone, t.source) for t in groups.templates] == [
        ("g", "a", "a1"),
        ("g", "b", "b1"),
        ("h", "b", "b2"),
    ]


def test_unreachable_nodes_make_no_template() -> None:
    cluster = [unreachable(node("a1", "a")), node("b1", "b").obj()]
    groups = node_groups(Snapshot.from_objects(cluster))
    assert [t.zone for t in groups.templates] == ["b"]
    assert groups.lost == ["a1"]


def test_fresh_node_is_a_sanitized_copy() -> None:
    """Same labels but the hostname, taints but the transient ones, allocatable and
    capacity; no unschedulable, no conditions, no providerID."""
    source = node("a1", "a").taint("team", "x").taint("node.kubernetes.io/not-ready").obj()
    source["spec"].update(unschedulable=True, providerID="aws:///a/i-1")
    source["status"].update(capacity={"cpu": "2"}, conditions=[{"type": "Ready", "status": "True"}])
    assert fresh_node(source, "t1") == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "t1",
            "labels": {HOSTNAME: "t1", ZONE: "a", NODEGROUP: "g"},
        },
        "spec": {"taints": [{"key": "team", "value": "x", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "2", "pods": "110"}, "capacity": {"cpu": "2"}},
    }


def test_template_holds_only_daemonset_pods_of_its_source() -> None:
    cluster = [
        node("a1", "a").obj(), node("a2", "a").obj(),
        daemon("logs-a1", "a1"), daemon("logs-a2", "a2"), web("w1", "a1"),
        daemon("old", "a1") | {"metadata": {**daemon("old", "a1")["metadata"],
                                            "deletionTimestamp": "2026-01-01T00:00:00Z"}},
    ]  # fmt: skip
    (template,) = node_groups(Snapshot.from_objects(cluster)).templates
    assert template.daemon_pods == (("kube-system", "logs-a1"),)


def test_caller_snapshot_untouched_and_pods_alike_share_an_answer() -> None:
    snapshot = Snapshot.from_objects(FULL_ABC)
    before = (snapshot.node_names(), snapshot.pod_count())
    pods = [
        Pending(
            f"default/web-{i}",
            make_pod().name(f"web-{i}").labels(WEB).requests(cpu="1").obj(),
            FRAMEWORK,
        )
        for i in range(3)
    ]
    diagnosis = diagnose(pods, snapshot)
    assert (snapshot.node_names(), snapshot.pod_count()) == before
    assert list(diagnosis.verdicts) == ["default/web-0", "default/web-1", "default/web-2"]
    assert {len(v.fits) for v in diagnosis.verdicts.values()} == {3}
    assert diagnosis.to_json()["default/web-2"] == [
        {"group": "g", "zone": "a"},
        {"group": "g", "zone": "b"},
        {"group": "g", "zone": "c"},
    ]


def test_summary_counts_placed_and_not_by_cause() -> None:
    snapshot = Snapshot.from_objects([*FULL_ABC, node("x1", "a", group=None).obj()])
    big = make_pod().name("big").labels(WEB).requests(cpu="1").obj()
    picky = make_pod().name("picky").node_selector({"disktype": "ssd"}).obj()
    diagnosis = diagnose(
        [Pending("default/big", big, FRAMEWORK), Pending("default/picky", picky, FRAMEWORK)],
        snapshot,
    )
    assert diagnosis.summary() == (
        "scale-up: a new node would place 1 of 2 pending pod(s) (group g in zone a: 1, "
        "group g in zone b: 1, group g in zone c: 1); 1 would stay pending: 1 with a node "
        "selector or affinity no node group satisfies; 1 node(s) in no node group"
    )


def test_placed_copies_count_before_the_template() -> None:
    """A simulation's placed copies are in the state the pending copy is judged on:
    a1(a)[1 web, 1 of 8 cpu] b1(b)[1 web, full]: a new node in a or b keeps the skew
    within 1; with a copy placed on a1 (zone a holds 2), only b does."""
    snapshot = Snapshot.from_objects(
        [node("a1", "a", cpu="8").obj(), web("w0", "a1", cpu="1"), node("b1", "b").obj(),
         web("w1", "b1")]
    )  # fmt: skip
    pod = pending(spread=True).obj()
    item = Pending("default/web-new", pod, FRAMEWORK)
    placed = [(make_pod().name("web-2").labels(WEB).requests(cpu="1").obj(), "a1")]
    assert where(diagnose([item], snapshot).verdicts[item.ref]) == [("g", "a"), ("g", "b")]
    assert where(diagnose([item], snapshot, placed=placed).verdicts[item.ref]) == [("g", "b")]


# ---- properties -----------------------------------------------------------------------

ZONES = ("a", "b", "c")


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[RawObj], RawObj]:
    """1-5 nodes in zones a-c, groups g/h/none, 1-4 cpu, some tainted, some holding a
    DaemonSet pod and web pods; a pending web pod with a zone spread, a nodeSelector
    or neither."""
    objs: list[RawObj] = []
    for i in range(draw(st.integers(1, 5))):
        name = f"n{i}"
        builder = node(
            name,
            draw(st.sampled_from(ZONES)),
            draw(st.sampled_from(["g", "h", None])),
            cpu=str(draw(st.integers(1, 4))),
        )
        if draw(st.booleans()) and draw(st.booleans()):
            builder = builder.taint("dedicated", "x")
        if draw(st.booleans()):
            builder = builder.label("disktype", "ssd")
        objs.append(builder.obj())
        if draw(st.booleans()):
            objs.append(daemon(f"logs-{name}", name, cpu=draw(st.sampled_from(["0", "500m"]))))
        for j in range(draw(st.integers(0, 2))):
            objs.append(web(f"w-{name}-{j}", name, cpu=draw(st.sampled_from(["500m", "1"]))))
    pod = pending(cpu=draw(st.sampled_from(["500m", "1", "2", "3"])), spread=draw(st.booleans()))
    if draw(st.booleans()):
        pod = pod.node_selector({"disktype": "ssd"})
    if draw(st.booleans()):
        pod = pod.toleration("dedicated", "x", "NoSchedule")
    return objs, pod.obj()


def _with_templates(cluster: list[RawObj], templates: list[Any], snapshot: Snapshot) -> Snapshot:
    """The cluster with one node like each template added (its DaemonSet pods too)."""
    grown = Snapshot.from_objects(cluster)
    for i, t in enumerate(templates):
        name = f"added-{i}"
        grown.upsert(fresh_node(t.node, name))
        for ns, pod in t.daemon_pods:
            assert grown.copy_pod(ns, pod, f"{pod}-{name}", name)
    return grown


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_fit_means_a_node_like_the_template_takes_the_pod(
    case: tuple[list[RawObj], RawObj],
) -> None:
    """Each template reported as fitting: with one node like it added, the model places
    the pod on it; with none fitting, one node of every template added leaves it pending."""
    cluster, pod = case
    snapshot = Snapshot.from_objects(cluster)
    assume(place(pod, snapshot, framework=FRAMEWORK).selected_node is None)
    diagnosis = diagnose([Pending("default/web-new", pod, FRAMEWORK)], snapshot)
    answer = diagnosis.verdicts["default/web-new"]
    for template in answer.fits:
        grown = _with_templates(cluster, [template], snapshot)
        assert "added-0" in feasible_nodes(pod, grown, framework=FRAMEWORK)
    if not answer.fits:
        grown = _with_templates(cluster, diagnosis.groups.templates, snapshot)
        assert place(pod, grown, framework=FRAMEWORK).selected_node is None
