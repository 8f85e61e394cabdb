"""The descheduler's own table (kubernetes-sigs/descheduler,
pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint/
topologyspreadconstraint_test.go, TestTopologySpreadConstraint) translated case by
case: what our audit says (violations) and how many moves our plan makes, beside the
descheduler's eviction count.

Translation: BuildTestNode(name, milliCPU, memory, pods) is a node with that
allocatable; createTestPods' pods are pod-0, pod-1, ... in ns1, asking 100m cpu, owned
by ReplicaSet replicaset-1. The descheduler's fixture gives that ownerReference no
`controller: true` (its evictor only asks that some owner exists); the API server
sets it on a ReplicaSet's pods, and our plan moves only pods a controller recreates,
so here it is a controller reference. `args.Constraints` with ScheduleAnyway is
include_soft. Its other args (the eviction LabelSelector, Namespaces,
TopologyBalanceNodeFit) and the evictor's NodeFit have no counterpart: the plan
always checks that every move fits, cumulatively, and covers every pod.

Where we differ, deliberately (the `why` column):
- capacity: the descheduler evicts without a cumulative fit check (or with none when
  TopologyBalanceNodeFit is off, "to force scale-up"); our moves must each fit, so a
  spread the nodes cannot hold gets a reason, not evictions that end up Pending;
- stuck: pods pinned by nodeSelector count but cannot go where the spread needs them;
  we make the moves that help and report the rest;
- no eviction filter: its LabelSelector arg limits which pods it evicts; the plan
  lists every move and a person picks.
TestSortDomains and TestCheckIdenticalConstraints test the descheduler's internal
helpers (its domain sort order and constraint de-duplication): nothing of ours
corresponds, so they are not translated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.audit.planning import applied, check_moves, planned, violations
from tests.builders import DNS, SA, make_node, make_pod, selector

RawObj = dict[str, Any]
FOO = selector({"foo": "bar"})
HASH = "pod-template-hash"
ARCH = "kubernetes.io/arch"


def node(name: str, cpu: int = 2000, memory: int = 3000, pods: int = 10, **labels: str) -> RawObj:
    """test.BuildTestNode with labels (keys with '/' passed through `labels=`)."""
    builder = make_node().name(name).allocatable(cpu=f"{cpu}m", memory=str(memory), pods=str(pods))
    for key, value in labels.items():
        builder = builder.label(key.replace("__", "/"), value)
    return builder.obj()


def tainted(obj: RawObj, key: str, value: str = "", effect: str = "NoSchedule") -> RawObj:
    taint: RawObj = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    obj.setdefault("spec", {}).setdefault("taints", []).append(taint)
    return obj


def tsc(max_skew: int = 1, key: str = "zone", when: str = DNS, **extra: Any) -> RawObj:
    """getDefaultTopologyConstraints: foo=bar over `key`."""
    out: RawObj = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    out["labelSelector"] = FOO
    out.update(extra)
    return out


@dataclass
class Group:
    """testPodList: `count` pods on `node`."""

    count: int
    node: str
    labels: dict[str, str] = field(default_factory=lambda: {"foo": "bar"})
    constraints: list[RawObj] = field(default_factory=list)
    node_selector: dict[str, str] | None = None
    affinity: RawObj | None = None
    tolerations: list[RawObj] | None = None
    no_owners: bool = False
    terminating: bool = False


def pods(*groups: Group) -> list[RawObj]:
    """createTestPods."""
    out: list[RawObj] = []
    n = 0
    for g in groups:
        for _ in range(g.count):
            b = make_pod().name(f"pod-{n}").namespace("ns1").labels(g.labels).node(g.node)
            b = b.requests(cpu="100m", memory="0").constraints(g.constraints)
            if not g.no_owners:
                b = b.owner("ReplicaSet", "replicaset-1")
            if g.terminating:
                b = b.terminating()
            pod = b.obj()
            if g.node_selector is not None:
                pod["spec"]["nodeSelector"] = dict(g.node_selector)
            if g.affinity is not None:
                pod["spec"]["affinity"] = g.affinity
            if g.tolerations is not None:
                pod["spec"]["tolerations"] = g.tolerations
            out.append(pod)
            n += 1
    return out


def zones(*spec: tuple[str, str], **kw: Any) -> list[RawObj]:
    return [node(name, **kw, zone=zone) for name, zone in spec]


TWO = zones(("n1", "zoneA"), ("n2", "zoneB"))
THREE = zones(("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC"))
LINUX_WINDOWS = [
    node(f"n{i + 1}", node=f"{os}Node{c}", os=("linux" if os == "lin" else "windows"))
    for i, (os, c) in enumerate(
        [("lin", "A"), ("lin", "B"), ("lin", "C"), ("win", "A"), ("win", "B"), ("win", "C")]
    )
]
WIN_D = node("n7", node="winNodeD", os="windows")
AFFINITY_FOO = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}
            ]
        }
    }
}
APP_SERVICE = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "app_service", "operator": "Exists"}]}
            ]
        }
    }
}
TOLERATE = [{"key": "taint-test", "value": "test", "operator": "Equal", "effect": "NoSchedule"}]
WHOAMI = [
    {
        "labelSelector": {"matchLabels": {"app": "whoami"}},
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": SA,
    },
    {
        "labelSelector": {"matchLabels": {"app": "whoami"}},
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": DNS,
    },
]


def six_two_zones() -> list[RawObj]:
    return [
        node(f"n{i}", **{"topology.kubernetes.io__zone": z, "kubernetes.io__hostname": f"n{i}"})
        for i, z in zip(range(1, 7), ["zoneA"] * 3 + ["zoneB"] * 3, strict=True)
    ]


def issue_839() -> list[RawObj]:
    return [
        tainted(
            tainted(
                node("controlplane1", zone="zoneA", **{"kubernetes.io__hostname": "cp-1"}),
                "node-role.kubernetes.io/controlplane",
                "true",
            ),
            "node-role.kubernetes.io/etcd",
            "true",
        ),
        tainted(
            node(
                "infraservices1",
                zone="zoneA",
                infra_service="true",
                **{"kubernetes.io__hostname": "infra-1"},
            ),
            "infra_service",
        ),
        node("app1", zone="zoneA", app_service="true", **{"kubernetes.io__hostname": "app-1"}),
        node("app2", zone="zoneB", app_service="true", **{"kubernetes.io__hostname": "app-2"}),
    ]


HOST_SERVICE = [
    {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": DNS,
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "service"}},
    }
]


@dataclass
class Case:
    """name: the descheduler's; evicted: its expectedEvictedCount; violations, moves,
    complete: ours; why: where we differ (empty when we agree)."""

    name: str
    nodes: list[RawObj]
    pods: list[RawObj]
    evicted: int
    violations: int
    moves: int
    complete: bool = True
    soft: bool = False
    why: str = ""


CASES = [
    Case(
        "2 domains, sizes [2,1], maxSkew=1, move 0 pods",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(1, "n1"), Group(1, "n2")),
        0,
        0,
        0,
    ),
    Case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2]",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(2, "n1"), Group(1, "n2")),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (both constraints)",
        TWO,
        pods(Group(1, "n1", constraints=[tsc(when=SA)]), Group(2, "n1"), Group(1, "n2")),
        1,
        1,
        1,
        soft=True,
    ),
    Case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2] (soft constraints)",
        TWO,
        pods(Group(1, "n1", constraints=[tsc(when=SA)]), Group(2, "n1"), Group(1, "n2")),
        1,
        1,
        1,
        soft=True,
    ),
    Case(
        "2 domains, sizes [3,1], maxSkew=1, no pods eligible, move 0 pods",
        TWO,
        pods(
            Group(1, "n1", constraints=[tsc()], no_owners=True),
            Group(2, "n1", no_owners=True),
            Group(1, "n2", no_owners=True),
        ),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we also say the spread is violated and that only pods "
        "that never move could fix it",
    ),
    Case(
        "2 domains, sizes [3,1], maxSkew=1, move 1 pod to achieve [2,2], exclude kube-system",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(2, "n1"), Group(1, "n2")),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [5,2], maxSkew=1, move 1 pod to achieve [4,3]",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(4, "n1"), Group(2, "n2")),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [4,0], maxSkew=1, move 2 pods to achieve [2,2]",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(3, "n1")),
        2,
        1,
        2,
    ),
    Case(
        "2 domains, sizes [4,0], maxSkew=1, only move 1 pod since pods with nodeSelector "
        "and nodeAffinity aren't evicted",
        TWO,
        pods(
            Group(1, "n1", constraints=[tsc()], node_selector={"zone": "zoneA"}),
            Group(1, "n1", constraints=[tsc()], node_selector={"zone": "zoneA"}),
            Group(1, "n1", constraints=[tsc()], affinity=AFFINITY_FOO),
            Group(1, "n1", constraints=[tsc()]),
        ),
        1,
        1,
        1,
        complete=False,
        why="stuck: the one free pod moves ([3,1]); the pinned ones cannot, and we say "
        "the spread stays violated",
    ),
    Case(
        "6 domains, sizes [0,0,0,3,3,2], maxSkew=1, No pod is evicted since topology is balanced",
        LINUX_WINDOWS,
        pods(
            *(
                Group(n, f"n{i}", constraints=[tsc(key="node")], node_selector={"os": "windows"})
                for n, i in ((3, 4), (3, 5), (2, 6))
            )
        ),
        0,
        0,
        0,
    ),
    Case(
        "7 domains, sizes [0,0,0,3,3,2], maxSkew=1, two pods are evicted and moved to new "
        "node added",
        [*LINUX_WINDOWS, WIN_D],
        pods(
            *(
                Group(n, f"n{i}", constraints=[tsc(key="node")], node_selector={"os": "windows"})
                for n, i in ((3, 4), (3, 5), (2, 6))
            )
        ),
        2,
        1,
        2,
    ),
    Case(
        "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 1 pod is evicted from node 4",
        LINUX_WINDOWS,
        pods(
            *(
                Group(n, f"n{i}", constraints=[tsc(key="node")], node_selector={"os": "windows"})
                for n, i in ((4, 4), (3, 5), (1, 6))
            )
        ),
        1,
        1,
        1,
    ),
    Case(
        "6 domains, sizes [0,0,0,4,3,1], maxSkew=1, 0 pod is evicted as pods of "
        "node:winNodeA can only be scheduled on this node and nodeFit is true",
        LINUX_WINDOWS,
        pods(
            Group(4, "n4", constraints=[tsc(key="node")], node_selector={"node": "winNodeA"}),
            Group(3, "n5", constraints=[tsc(key="node")], node_selector={"os": "windows"}),
            Group(1, "n6", constraints=[tsc(key="node")], node_selector={"os": "windows"}),
        ),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say the spread stays violated",
    ),
    Case(
        "2 domains, sizes [4,0], maxSkew=1, move 2 pods since selector matches multiple nodes",
        zones(("n1", "zoneA"), ("n2", "zoneB"), region="boston"),
        pods(
            Group(1, "n1", constraints=[tsc()], node_selector={"region": "boston"}),
            Group(3, "n1", node_selector={"region": "boston"}),
        ),
        2,
        1,
        2,
    ),
    Case(
        "3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]",
        THREE,
        pods(Group(1, "n2", constraints=[tsc()]), Group(100, "n3")),
        66,
        1,
        0,
        complete=False,
        why="capacity: each node holds 10 pods, so [34, 33, 34] does not fit; its 66 "
        "evictions would mostly stay Pending",
    ),
    Case(
        "4 domains, sizes [0, 1, 3, 5], should move 3 to get [2, 2, 3, 2]",
        zones(("n1", "zoneA"), ("n2", "zoneB"), ("n3", "zoneC"), ("n4", "zoneD")),
        pods(Group(1, "n2", constraints=[tsc()]), Group(3, "n3"), Group(5, "n4")),
        3,
        1,
        3,
    ),
    Case(
        "2 domains size [2 6], maxSkew=2, should move 1 to get [3 5]",
        TWO,
        pods(Group(1, "n1", constraints=[tsc(2)]), Group(1, "n1"), Group(6, "n2")),
        1,
        1,
        1,
    ),
    Case(
        "2 domains size [2 6], maxSkew=2, can't move any because of node taints",
        [tainted(node("n1", zone="zoneA"), "hardware", "gpu"), node("n2", zone="zoneB")],
        pods(Group(1, "n1", constraints=[tsc(2)]), Group(1, "n1"), Group(6, "n2")),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say why (zone A takes no more pods)",
    ),
    Case(
        "2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU",
        [node("n1", cpu=200, zone="zoneA"), node("n2", zone="zoneB")],
        pods(Group(1, "n1", constraints=[tsc(2)]), Group(1, "n1"), Group(6, "n2")),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say why",
    ),
    Case(
        "Multiple constraints (6 nodes/2 zones, 4 pods)",
        six_two_zones(),
        pods(
            *(Group(1, f"n{i}", labels={"app": "whoami"}, constraints=WHOAMI) for i in range(1, 5))
        ),
        1,
        1,
        1,
        soft=True,
    ),
    Case(
        "3 domains size [8 7 0], maxSkew=1, should move 5 to get [5 5 5]",
        THREE,
        pods(Group(8, "n1", constraints=[tsc()]), Group(7, "n2", constraints=[tsc()])),
        5,
        1,
        5,
    ),
    Case(
        "3 domains size [5 5 5], maxSkew=1, should move 0 to retain [5 5 5]",
        THREE,
        pods(*(Group(5, f"n{i}", constraints=[tsc()]) for i in (1, 2, 3))),
        0,
        0,
        0,
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod since pod tolerates the node with taint",
        [node("n1", zone="zoneA"), tainted(node("n2", zone="zoneB"), "taint-test", "test")],
        pods(
            Group(1, "n1", constraints=[tsc()], tolerations=TOLERATE),
            Group(1, "n1", node_selector={"zone": "zoneA"}),
        ),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the "
        "tainted node",
        [node("n1", zone="zoneA"), tainted(node("n2", zone="zoneB"), "taint-test", "test")],
        pods(
            Group(1, "n1", constraints=[tsc()]),
            Group(1, "n1", node_selector={"zone": "zoneA"}),
        ),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say why",
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods since pod does not tolerate the "
        "tainted node, and NodeFit is enabled",
        [node("n1", zone="zoneA"), tainted(node("n2", zone="zoneB"), "taint-test", "test")],
        pods(
            Group(1, "n1", constraints=[tsc()]),
            Group(1, "n1", node_selector={"zone": "zoneA"}),
        ),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say why",
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with PreferNoSchedule Taint",
        [
            node("n1", zone="zoneA"),
            tainted(node("n2", zone="zoneB"), "taint-test", "test", "PreferNoSchedule"),
        ],
        pods(
            Group(1, "n1", constraints=[tsc()]),
            Group(1, "n1", node_selector={"zone": "zoneA"}),
        ),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pod for node with unmatched label filtering",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(1, "n1")),
        0,
        1,
        1,
        why="no eviction filter: its LabelSelector foo In (baz) excludes every pod; the "
        "plan lists the one move that fixes the spread",
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label filtering",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(1, "n1")),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pod for node with matched label "
        "filtering (NotIn op)",
        TWO,
        pods(Group(1, "n1", constraints=[tsc()]), Group(1, "n1")),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 1 pods given matchLabelKeys on same replicaset",
        TWO,
        pods(
            *(
                Group(
                    1,
                    "n1",
                    labels={"foo": "bar", HASH: "foo"},
                    constraints=[tsc(matchLabelKeys=[HASH])],
                )
                for _ in range(2)
            )
        ),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [2,0], maxSkew=1, move 0 pods given matchLabelKeys on two "
        "different replicasets",
        TWO,
        pods(
            *(
                Group(
                    1,
                    "n1",
                    labels={"foo": "bar", HASH: h},
                    constraints=[tsc(matchLabelKeys=[HASH])],
                )
                for h in ("foo", "bar")
            )
        ),
        0,
        0,
        0,
    ),
    Case(
        "2 domains, sizes [4,2], maxSkew=1, 2 pods in termination; nothing should be moved",
        TWO,
        pods(
            Group(2, "n1", constraints=[tsc()]),
            Group(2, "n1", constraints=[tsc()], terminating=True),
            Group(2, "n2", constraints=[tsc()]),
        ),
        0,
        0,
        0,
    ),
    Case(
        "3 domains, sizes [2,3,4], maxSkew=1, NodeFit is enabled, and not enough cpu on "
        "zoneA; nothing should be moved",
        [
            node("n1", cpu=250, memory=2000, pods=9, zone="zoneA"),
            node("n2", cpu=1000, memory=2000, pods=9, zone="zoneB"),
            node("n3", cpu=1000, memory=2000, pods=9, zone="zoneC"),
        ],
        pods(*(Group(n, f"n{i}", constraints=[tsc()]) for n, i in ((2, 1), (3, 2), (4, 3)))),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say why",
    ),
    Case(
        "3 domains, sizes [2,3,4], maxSkew=1, args.NodeFit is false, and not enough cpu on "
        "zoneA; 1 should be moved to force scale-up",
        [
            node("n1", cpu=250, memory=2000, pods=9, zone="zoneA"),
            node("n2", cpu=1000, memory=2000, pods=9, zone="zoneB"),
            node("n3", cpu=1000, memory=2000, pods=9, zone="zoneC"),
        ],
        pods(*(Group(n, f"n{i}", constraints=[tsc()]) for n, i in ((2, 1), (3, 2), (4, 3)))),
        1,
        1,
        0,
        complete=False,
        why="capacity: a move must fit; we never plan an eviction toward Pending (the "
        "scale-up is the person's call, on the reason we give)",
    ),
    Case(
        "3 domains, sizes [[1,0], [1,1], [2,1]], maxSkew=1, NodeFit is enabled, and not "
        "enough cpu on ZoneA; nothing should be moved",
        [
            node("A1", cpu=150, memory=2000, pods=9, zone="zoneA"),
            node("B1", cpu=1000, memory=2000, pods=9, zone="zoneB"),
            node("C1", cpu=1000, memory=2000, pods=9, zone="zoneC"),
            node("A2", cpu=50, memory=2000, pods=9, zone="zoneA"),
            node("B2", cpu=1000, memory=2000, pods=9, zone="zoneB"),
            node("C2", cpu=1000, memory=2000, pods=9, zone="zoneC"),
        ],
        pods(
            *(
                Group(n, name, constraints=[tsc()])
                for n, name in ((1, "A1"), (1, "B1"), (1, "B2"), (2, "C1"), (1, "C2"))
            )
        ),
        0,
        1,
        0,
        complete=False,
        why="the same 0 moves; we say why",
    ),
    Case(
        "2 domains, sizes [[1,4], [2,1]], maxSkew=1, NodeFit is enabled; should move 1",
        [
            node(name, cpu=1000, memory=2000, pods=9, zone=zone)
            for name, zone in (("A1", "zoneA"), ("A2", "zoneA"), ("B1", "zoneB"), ("B2", "zoneB"))
        ],
        pods(
            *(
                Group(n, name, constraints=[tsc()])
                for n, name in ((1, "A1"), (4, "A2"), (2, "B1"), (1, "B2"))
            )
        ),
        1,
        1,
        1,
    ),
    Case(
        "2 domains, sizes [3, 1], maxSkew=1, Tainted nodes; nothing should be moved",
        issue_839(),
        pods(
            Group(
                2,
                "app1",
                labels={"app.kubernetes.io/name": "service"},
                constraints=HOST_SERVICE,
                affinity=APP_SERVICE,
            ),
            Group(
                2,
                "app2",
                labels={"app.kubernetes.io/name": "service"},
                constraints=HOST_SERVICE,
                affinity=APP_SERVICE,
            ),
        ),
        0,
        0,
        0,
    ),
    Case(
        "3 domains, sizes [2, 1, 0] with selectors, maxSkew=1, nodeTaintsPolicy=Ignore, "
        "should move 1 for [1, 1, 1]",
        [
            node(
                name, cpu=1000, memory=2000, pods=9, zone=zone, **{ARCH.replace("/", "__"): "arm64"}
            )
            for name, zone in (("A1", "zoneA"), ("B1", "zoneB"), ("C1", "zoneC"))
        ],
        pods(
            Group(
                1,
                "A1",
                constraints=[tsc(nodeAffinityPolicy="Ignore")],
                node_selector={ARCH: "arm64"},
            ),
            Group(
                1,
                "A1",
                constraints=[tsc(nodeAffinityPolicy="Ignore")],
                node_selector={"zone": "zoneA", ARCH: "arm64"},
            ),
            Group(
                1,
                "B1",
                constraints=[tsc(nodeAffinityPolicy="Ignore")],
                node_selector={ARCH: "arm64"},
            ),
        ),
        1,
        1,
        1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_descheduler_case(case: Case) -> None:
    """Our audit's violations and plan beside the descheduler's evictions: equal moves
    unless `why` says otherwise; a complete plan fixes the spread; every move fits."""
    objects = [*case.nodes, *case.pods]
    _, spreads, plan = planned(objects, include_soft=case.soft)
    assert sum(len(w.violated) for w in spreads) == case.violations
    assert len(plan.moves) == case.moves
    assert plan.complete is case.complete
    if not case.complete:
        assert plan.reasons
    else:
        assert violations(applied(objects, plan), include_soft=case.soft) == 0
    if not case.why:
        assert len(plan.moves) == case.evicted
    check_moves(objects, plan)
