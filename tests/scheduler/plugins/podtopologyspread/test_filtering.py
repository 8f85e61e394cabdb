"""PodTopologySpread PreFilter + Filter, node by node, against upstream semantics.

Legend for case names: "zone spreads = [2/1]" means 2 matching pods in the first
zone and 1 in the second; "node spreads = [1/1/1/0]" the same per node, in name
order. "~x~" marks a node or domain outside the spread (excluded by a policy),
"?x?" a node lacking a topology key. Every expectation is the verdict of each
node worked out by hand with upstream's rule
    matching pods in the node's domain + self-match - global minimum <= maxSkew.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    constraint,
    exists,
    expr,
    make_node,
    make_pod,
    selector,
)
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Code, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.podtopologyspread.common import (
    DEFAULT_ARGS,
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from webhook.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    filter_node,
    pre_filter,
)

OK = Status(Code.SUCCESS)
NO = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
MISSING = Status(Code.UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)

FOO = selector({"foo": "bar"})


def node(name: str, **labels: str) -> dict[str, Any]:
    b = make_node().name(name)
    for k, v in labels.items():
        b = b.label(k, v)
    return b.obj()


def zoned(name: str, zone: str) -> dict[str, Any]:
    """A node in `zone` with the docs' labels: zone=<zone>, node=<name>."""
    return node(name, zone=zone, node=name)


def foo_pods(*node_names: str, ns: str = "default") -> list[dict[str, Any]]:
    """One `foo: bar` pod bound to each named node (repeat a name for more)."""
    return [
        make_pod().name(f"p{i}").namespace(ns).label("foo", "bar").node(n).obj()
        for i, n in enumerate(node_names)
    ]


def verdicts(pod: dict[str, Any], objs: list[dict[str, Any]], args: SpreadArgs = DEFAULT_ARGS):
    snap = Snapshot.from_objects(objs)
    state = pre_filter(pod, snap, args)
    if isinstance(state, Status):
        return {name: state for name in snap.node_names()}
    return {name: filter_node(state, snap.nodes[name]) for name in snap.node_names()}


def incoming(*constraints: dict[str, Any], labels: dict[str, str] | None = None):
    b = make_pod().name("mypod").labels({"foo": "bar"} if labels is None else labels)
    return b.constraints(list(constraints)).obj()


def c(max_skew: int, key: str, when: str = DNS, sel: dict[str, Any] | None = FOO, **extra: Any):
    """constraint() with this file's default selector, foo=bar."""
    return constraint(max_skew, key, when, sel, **extra)


# The docs' 4-node cluster: zoneA = node1, node2; zoneB = node3, node4.
DOCS_NODES = [
    zoned("node1", "zoneA"),
    zoned("node2", "zoneA"),
    zoned("node3", "zoneB"),
    zoned("node4", "zoneB"),
]
THREE_ZONES = [zoned("n1", "zone1"), zoned("n2", "zone2"), zoned("n3", "zone3")]

CASES = [
    # --- KEP-895, section MaxSkew: a 3-zone cluster spread as 1/1/0.
    pytest.param(
        incoming(c(1, "zone")),
        THREE_ZONES + foo_pods("n1", "n2"),
        {"n1": NO, "n2": NO, "n3": OK},
        id="KEP MaxSkew: zone spreads = [1/1/0], maxSkew=1 -> only zone3",
    ),
    pytest.param(
        incoming(c(2, "zone")),
        THREE_ZONES + foo_pods("n1", "n2"),
        {"n1": OK, "n2": OK, "n3": OK},
        id="KEP MaxSkew: zone spreads = [1/1/0], maxSkew=2 -> any zone",
    ),
    pytest.param(
        incoming(c(1, "zone")),
        THREE_ZONES + foo_pods("n1", "n1", "n1", "n2", "n2", "n3"),
        {"n1": NO, "n2": NO, "n3": OK},
        id="KEP MaxSkew: zone spreads = [3/2/1], maxSkew=1 -> only the least loaded zone",
    ),
    # --- docs: one topology spread constraint.
    pytest.param(
        incoming(c(1, "zone")),
        DOCS_NODES + foo_pods("node1", "node2", "node3"),
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="docs one-constraint: zone spreads = [2/1] -> zoneB only",
    ),
    pytest.param(
        incoming(c(2, "zone")),
        DOCS_NODES + foo_pods("node1", "node2", "node3"),
        {"node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="docs one-constraint, maxSkew=2: zone spreads = [2/1] -> zoneA too",
    ),
    pytest.param(
        incoming(c(1, "node")),
        DOCS_NODES + foo_pods("node1", "node2", "node3"),
        {"node1": NO, "node2": NO, "node3": NO, "node4": OK},
        id="docs one-constraint on node: node spreads = [1/1/1/0] -> node4 only",
    ),
    # --- docs: two constraints.
    pytest.param(
        incoming(c(1, "zone"), c(1, "node")),
        DOCS_NODES + foo_pods("node1", "node2", "node3"),
        {"node1": NO, "node2": NO, "node3": NO, "node4": OK},
        id="docs two-constraints: zone [2/1], node [1/1/1/0] -> node4 only",
    ),
    # --- docs: conflicting constraints; zoneA = node1 (2 pods), node2 (1); zoneB = node3 (2).
    pytest.param(
        incoming(c(1, "zone"), c(1, "node")),
        [zoned("node1", "zoneA"), zoned("node2", "zoneA"), zoned("node3", "zoneB")]
        + foo_pods("node1", "node1", "node2", "node3", "node3"),
        {"node1": NO, "node2": NO, "node3": NO},
        id="docs conflicting: zone [3/2] wants zoneB, node [2/1/2] wants node2 -> nowhere",
    ),
    pytest.param(
        incoming(c(1, "zone"), c(1, "node")),
        [node("node1", node="node1"), zoned("node2", "zoneA"), zoned("node3", "zoneB")]
        + foo_pods("node1", "node1", "node2", "node3", "node3"),
        {"node1": MISSING, "node2": OK, "node3": NO},
        id="docs conventions: ?node1? without zone is bypassed, its 2 pods ignored -> zoneA",
    ),
    # --- minDomains (v1.27 blog): 3 nodes, hostname spread, minDomains 5.
    pytest.param(
        incoming(c(1, HOSTNAME, minDomains=5)),
        [node(f"n{i}", **{HOSTNAME: f"n{i}"}) for i in (1, 2, 3)] + foo_pods("n1", "n2", "n3"),
        {"n1": NO, "n2": NO, "n3": NO},
        id="minDomains=5 > 3 domains: node spreads = [1/1/1], global min read as 0 -> nowhere",
    ),
    pytest.param(
        incoming(c(1, HOSTNAME, minDomains=5)),
        [node(f"n{i}", **{HOSTNAME: f"n{i}"}) for i in (1, 2, 3)] + foo_pods("n1", "n2"),
        {"n1": NO, "n2": NO, "n3": OK},
        id="minDomains=5 > 3 domains: node spreads = [1/1/0] -> the empty node only",
    ),
    pytest.param(
        incoming(c(1, HOSTNAME, minDomains=3)),
        [node(f"n{i}", **{HOSTNAME: f"n{i}"}) for i in (1, 2, 3)] + foo_pods("n1", "n2", "n3"),
        {"n1": OK, "n2": OK, "n3": OK},
        id="minDomains=3 == 3 domains: node spreads = [1/1/1], real global min 1 -> anywhere",
    ),
    # --- self-match.
    pytest.param(
        incoming(c(1, "zone"), labels={}),
        DOCS_NODES + foo_pods("node1", "node2", "node3"),
        {"node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="pod not matching its own selector: zone [2/1], skew stays 2-1 -> anywhere",
    ),
    # --- what counts.
    pytest.param(
        incoming(c(1, "zone")),
        DOCS_NODES + foo_pods("node1", "node2") + foo_pods("node3", "node3", ns="other"),
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="pods of another namespace do not count: zone [2/~2~]",
    ),
    pytest.param(
        incoming(c(1, "zone")),
        DOCS_NODES
        + foo_pods("node1")
        + [make_pod().name("t").label("foo", "bar").node("node3").terminating().obj()],
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="terminating pods do not count: zone [1/~1~]",
    ),
    pytest.param(
        incoming(c(1, "zone")),
        DOCS_NODES
        + foo_pods("node1")
        + [make_pod().name("s").label("foo", "bar").node("node3").phase("Succeeded").obj()],
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="succeeded pods do not count: zone [1/~1~]",
    ),
    pytest.param(
        incoming(c(1, "zone")),
        DOCS_NODES + foo_pods("node1") + [make_pod().name("u").label("foo", "bar").obj()],
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="unbound pods do not count: zone [1/0]",
    ),
    pytest.param(
        incoming(c(1, "zone", sel=exists("foo"))),
        DOCS_NODES
        + foo_pods("node1")
        + [make_pod().name("x").label("foo", "x").node("node3").obj()],
        {"node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="Exists selector counts both foo values: zone [1/1]",
    ),
    # --- matchLabelKeys: only pods of the incoming pod's revision count.
    pytest.param(
        incoming(c(1, "zone", matchLabelKeys=["rev"]), labels={"foo": "bar", "rev": "2"}),
        DOCS_NODES
        + [
            make_pod().name(f"old{i}").labels({"foo": "bar", "rev": "1"}).node("node3").obj()
            for i in range(3)
        ]
        + [make_pod().name("new").labels({"foo": "bar", "rev": "2"}).node("node1").obj()],
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="matchLabelKeys rev: zone [1/~3~] counts rev=2 only",
    ),
    pytest.param(
        incoming(
            c(
                1,
                "zone",
                sel=selector(None, expr("foo", "In", "bar"), expr("rev", "In", "2")),
                matchLabelKeys=["rev"],
            ),
            labels={"foo": "bar", "rev": "2"},
        ),
        DOCS_NODES
        + [
            make_pod().name(f"old{i}").labels({"foo": "bar", "rev": "1"}).node("node3").obj()
            for i in range(3)
        ]
        + [make_pod().name("new").labels({"foo": "bar", "rev": "2"}).node("node1").obj()],
        {"node1": NO, "node2": NO, "node3": OK, "node4": OK},
        id="matchLabelKeys already merged by the API server: applying it twice changes nothing",
    ),
    # --- degenerate selectors.
    pytest.param(
        incoming(c(1, "zone", sel={})),
        DOCS_NODES + foo_pods("node1", "node1", "node1"),
        {"node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="empty labelSelector {} counts no pod (upstream Empty() shortcut, kubernetes#141339)",
    ),
    pytest.param(
        incoming(c(1, "zone", sel=None)),
        DOCS_NODES + foo_pods("node1", "node1", "node1"),
        {"node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="no labelSelector selects nothing, not even the pod itself",
    ),
    # --- two constraints on the same key keep separate counts.
    pytest.param(
        incoming(
            c(1, "zone"),
            c(1, "zone", sel=selector({"bar": "x"})),
            labels={"foo": "bar", "bar": "x"},
        ),
        DOCS_NODES
        + foo_pods("node1")
        + [make_pod().name("b").label("bar", "x").node("node3").obj()],
        {"node1": NO, "node2": NO, "node3": NO, "node4": NO},
        id="same key, two selectors: foo zone [1/0] wants zoneB, bar zone [0/1] wants zoneA",
    ),
    # --- ScheduleAnyway constraints never filter.
    pytest.param(
        incoming(c(1, "zone", SA)),
        DOCS_NODES + foo_pods("node1", "node1", "node1"),
        {"node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="ScheduleAnyway only: zone [3/0] still anywhere",
    ),
    pytest.param(
        incoming(c(1, "zone", SA)),
        [node("n0")] + DOCS_NODES,
        {"n0": OK, "node1": OK, "node2": OK, "node3": OK, "node4": OK},
        id="ScheduleAnyway only: a node without the key is not filtered",
    ),
    # --- hostname label values, not node names, are the domains.
    pytest.param(
        incoming(c(1, HOSTNAME)),
        [node("a", **{HOSTNAME: "h"}), node("b", **{HOSTNAME: "h"}), node("c", **{HOSTNAME: "c"})]
        + foo_pods("a"),
        {"a": NO, "b": NO, "c": OK},
        id="two nodes sharing a hostname value form one domain: [1/0]",
    ),
]


@pytest.mark.parametrize(("pod", "objs", "want"), CASES)
def test_filter_verdict_per_node(pod, objs, want) -> None:
    """Each node's PodTopologySpread verdict matches the hand-worked upstream result."""
    assert verdicts(pod, objs) == want


POLICY_CASES = [
    # docs node-affinity example: zoneA n1(1) n2(1), zoneB n3(1) n4(0), zoneC n5(0);
    # the pod may only go to zones A and B.
    pytest.param(
        {},
        {"n1": NO, "n2": NO, "n3": OK, "n4": OK, "n5": OK},
        id="docs node affinity: ~zoneC~ excluded, zone [2/1] -> zoneB (n5 fails NodeAffinity)",
    ),
    pytest.param(
        {"nodeAffinityPolicy": "Ignore"},
        {"n1": NO, "n2": NO, "n3": NO, "n4": NO, "n5": OK},
        id="nodeAffinityPolicy Ignore: zone [2/1/0] -> only zoneC, which affinity forbids",
    ),
]

AFFINITY_NODES = [
    node("n1", zone="zoneA"),
    node("n2", zone="zoneA"),
    node("n3", zone="zoneB"),
    node("n4", zone="zoneB"),
    node("n5", zone="zoneC"),
]


@pytest.mark.parametrize(("extra", "want"), POLICY_CASES)
def test_node_affinity_policy(extra, want) -> None:
    """Honor drops nodes the pod's node affinity rejects from the domain counts."""
    pod = (
        make_pod()
        .name("mypod")
        .label("foo", "bar")
        .constraints([c(1, "zone", **extra)])
        .node_affinity_in("zone", "zoneA", "zoneB")
        .obj()
    )
    assert verdicts(pod, AFFINITY_NODES + foo_pods("n1", "n2", "n3")) == want


def test_docs_node_affinity_example_places_in_zone_b() -> None:
    """The whole placement picks zoneB: node5 passes the spread but fails NodeAffinity."""
    pod = (
        make_pod()
        .name("mypod")
        .label("foo", "bar")
        .constraints([c(1, "zone")])
        .node_affinity_in("zone", "zoneA", "zoneB")
        .obj()
    )
    placement = place(pod, Snapshot.from_objects(AFFINITY_NODES + foo_pods("n1", "n2", "n3")))
    by_name = {n.name: n for n in placement.nodes}
    assert [n.name for n in placement.nodes if n.feasible] == ["n3", "n4"]
    assert by_name["n5"].filters["NodeAffinity"].code is Code.UNRESOLVABLE
    assert by_name["n5"].filters["PodTopologySpread"] == OK
    assert placement.selected_node in ("n3", "n4")


def test_affinity_honoured_ignores_selected_nodes_lacking_the_key() -> None:
    """zone spreads = [1/1] plus ?n3?, which the nodeSelector takes in but which has no
    zone: it adds no (empty) domain, so the minimum stays 1 and both zones fit; n3
    itself fails for the missing label; ~n4~ (zoneC, not selected) counts 0 there
    and passes the spread but fails NodeAffinity. Through place(), which reads the
    node affinity from the NodeAffinity filter's verdicts."""
    objs = [
        node("n1", zone="zoneA", rack="r2"),
        node("n2", zone="zoneB", rack="r2"),
        node("n3", rack="r2"),
        node("n4", zone="zoneC", rack="r1"),
        *foo_pods("n1", "n2"),
    ]
    pod = make_pod().name("mypod").label("foo", "bar").constraints([c(1, "zone")])
    pod = pod.node_selector({"rack": "r2"}).obj()
    placement = place(pod, Snapshot.from_objects(objs))
    spread = {n.name: n.filters["PodTopologySpread"] for n in placement.nodes}
    assert spread == {"n1": OK, "n2": OK, "n3": MISSING, "n4": OK}
    assert [n.name for n in placement.nodes if n.feasible] == ["n1", "n2"]


def test_node_label_of_the_wrong_type_never_raises() -> None:
    """A label value that is not a string (only a malformed snapshot has one) fails a
    nodeSelector on that key; the nodes are then judged one by one."""
    odd = node("a")
    odd["metadata"]["labels"] = {"disk": ["ssd"]}
    pod = make_pod().name("mypod").node_selector({"disk": "ssd"}).obj()
    placement = place(pod, Snapshot.from_objects([odd, node("b", disk="ssd")]))
    assert [n.feasible for n in placement.nodes] == [False, True]
    assert placement.nodes[0].filters["NodeAffinity"].code is Code.UNRESOLVABLE


TAINT_NODES = [
    node("n1", zone="zoneA"),
    make_node().name("n2").label("zone", "zoneB").taint("dedicated", "x", "NoSchedule").obj(),
]


@pytest.mark.parametrize(
    ("policy", "toleration", "want"),
    [
        pytest.param(
            "Ignore", False, {"n1": NO, "n2": OK}, id="taints Ignore: zone [1/0] -> zoneB only"
        ),
        pytest.param(
            "Honor",
            False,
            {"n1": OK, "n2": OK},
            id="taints Honor: ~zoneB~ out, zone [1] -> zoneA ok",
        ),
        pytest.param(
            "Honor",
            True,
            {"n1": NO, "n2": OK},
            id="taints Honor, tolerated: zone [1/0] -> zoneB only",
        ),
    ],
)
def test_node_taints_policy(policy, toleration, want) -> None:
    """Honor keeps nodes with untolerated NoSchedule/NoExecute taints out of the counts."""
    b = (
        make_pod()
        .name("mypod")
        .label("foo", "bar")
        .constraints([c(1, "zone", nodeTaintsPolicy=policy)])
    )
    if toleration:
        b = b.toleration("dedicated", "x", "NoSchedule")
    assert verdicts(b.obj(), TAINT_NODES + foo_pods("n1")) == want


def test_prefer_no_schedule_taint_never_excludes_a_node() -> None:
    """Only NoSchedule and NoExecute taints count for nodeTaintsPolicy: Honor."""
    nodes = [
        node("n1", zone="zoneA"),
        make_node().name("n2").label("zone", "zoneB").taint("k", "v", "PreferNoSchedule").obj(),
    ]
    pod = (
        make_pod()
        .name("mypod")
        .label("foo", "bar")
        .constraints([c(1, "zone", nodeTaintsPolicy="Honor")])
        .obj()
    )
    assert verdicts(pod, nodes + foo_pods("n1")) == {"n1": NO, "n2": OK}


def test_prefilter_state_counts_eligible_domains() -> None:
    """PreFilter keeps every eligible domain, empty ones included, and the global minimum."""
    pod = incoming(c(1, "zone"))
    snap = Snapshot.from_objects(
        DOCS_NODES + [node("nozone")] + foo_pods("node1", "node2", "node3", "nozone")
    )
    state = pre_filter(pod, snap)
    assert isinstance(state, PreFilterState)
    assert state.tp_value_to_match_num == ({"zoneA": 2, "zoneB": 1},)
    assert state.min_match_num == (1,)
    assert state.self_match == (True,)


def test_no_eligible_domain_leaves_the_minimum_unset() -> None:
    """With no node carrying the key the critical path stays at MaxInt32, as upstream."""
    state = pre_filter(incoming(c(1, "zone")), Snapshot.from_objects([node("a")]))
    assert isinstance(state, PreFilterState)
    assert state.tp_value_to_match_num == ({},)
    assert state.min_match_num == (2**31 - 1,)
    assert state.global_min(0) == 0  # fewer domains (0) than minDomains (1)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        pytest.param(
            c(1, "zone", sel={"matchExpressions": [{"key": "a", "operator": "Is"}]}),
            # labels.NewRequirement quotes the operator with Go's %q.
            '"Is" is not a valid label selector operator',
            id="bad operator",
        ),
        pytest.param(
            c(1, "zone", sel={"matchExpressions": [{"key": "a", "operator": "In"}]}),
            "values set can't be empty",
            id="In without values",
        ),
        pytest.param(
            c(1, "zone", sel={"matchExpressions": [{"key": "a", "operator": ["In"]}]}),
            "\"['In']\" is not a valid label selector operator",
            id="operator not a string (a list: unhashable)",
        ),
        pytest.param(c("1", "zone"), "maxSkew must be a 32-bit integer", id="maxSkew as a string"),
        pytest.param(c(1, 7), "topologyKey must be a string", id="topologyKey not a string"),
    ],
)
def test_unparsable_hard_constraint_fails_every_node(raw, fragment) -> None:
    """A PreFilter error is UnschedulableAndUnresolvable on every node, saying why."""
    got = verdicts(incoming(raw), DOCS_NODES)
    assert {s.code for s in got.values()} == {Code.UNRESOLVABLE}
    reason = next(iter(got.values())).reason
    assert reason.startswith("obtaining pod's hard topology spread constraints: ")
    assert fragment in reason


def test_system_defaults_never_filter() -> None:
    """System defaults are ScheduleAnyway: a pod without constraints passes everywhere."""
    svc = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"foo": "bar"}},
    }
    pod = make_pod().name("mypod").label("foo", "bar").obj()
    got = verdicts(pod, DOCS_NODES + [svc] + foo_pods("node1", "node1", "node1"))
    assert set(got.values()) == {OK}


def test_list_defaults_filter_with_the_service_selector() -> None:
    """List defaults with DoNotSchedule spread the pod with its Service's selector."""
    args = SpreadArgs(
        default_constraints=({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": DNS},),
        defaulting_type="List",
    )
    svc = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"foo": "bar"}},
    }
    pod = make_pod().name("mypod").label("foo", "bar").obj()
    got = verdicts(pod, DOCS_NODES + [svc] + foo_pods("node1", "node2", "node3"), args)
    assert got == {"node1": NO, "node2": NO, "node3": OK, "node4": OK}


def test_list_defaults_without_a_selecting_object_do_nothing() -> None:
    """No Service or controller selects the pod: DefaultSelector is empty, no constraint."""
    args = SpreadArgs(
        default_constraints=({"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": DNS},),
        defaulting_type="List",
    )
    pod = make_pod().name("mypod").label("foo", "bar").obj()
    got = verdicts(pod, DOCS_NODES + foo_pods("node1", "node2", "node3"), args)
    assert set(got.values()) == {OK}


def test_selector_with_unknown_key_matches_no_pod_but_zone_min_still_applies() -> None:
    """A pod whose selector matches nothing sees zone [0/0]: skew 0 + 0 - 0."""
    pod = incoming(c(1, "zone", sel=selector({"nope": "x"})))
    assert set(verdicts(pod, DOCS_NODES + foo_pods("node1")).values()) == {OK}
