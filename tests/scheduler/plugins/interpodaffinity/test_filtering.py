"""InterPodAffinity PreFilter and Filter, translated from upstream's filtering_test.go.

Legend: upstream's node labels are "region", "zone" and "node"/"hostname"; its
defaultNamespace "" is our "default". `want` maps every node to its Filter status
(SUCCESS omitted); `pre` is the PreFilter status when not SUCCESS.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import (
    affinity_term,
    make_node,
    make_pod,
    namespace,
    node,
    with_affinity,
    with_term,
)
from tests.scheduler.test_properties import reference_place
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.interpodaffinity import InterPodAffinity
from webhook.scheduler.plugins.interpodaffinity.common import parse_pod_terms
from webhook.scheduler.plugins.interpodaffinity.filtering import (
    AFFINITY_NOT_MATCH,
    ANTI_AFFINITY_NOT_MATCH,
    EXISTING_ANTI_AFFINITY_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
)
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS
from webhook.scheduler.profile import framework_of

RawObj = dict[str, Any]
AFF = AFFINITY_NOT_MATCH
ANTI = ANTI_AFFINITY_NOT_MATCH
EXIST = EXISTING_ANTI_AFFINITY_NOT_MATCH

# upstream's `namespaces` fixture (scoring_test.go / filtering_test.go).
NAMESPACES = [
    namespace("subteam1.team1", {"team": "team1"}),
    namespace("subteam2.team1", {"team": "team1"}),
    namespace("subteam1.team2", {"team": "team2"}),
    namespace("subteam2.team2", {"team": "team2"}),
]

_names = iter(range(10**9))


def pod(
    labels: dict[str, str] | None = None, node_name: str | None = None, ns: str = "default"
) -> RawObj:
    """A pod named uniquely (upstream's pods are often nameless)."""
    b = make_pod().name(f"pod-{next(_names)}").namespace(ns)
    if labels:
        b = b.labels(labels)
    if node_name:
        b = b.node(node_name)
    return b.obj()


def aff(p: RawObj, op: str, key: str, topo: str, values: list[str] | None = None) -> RawObj:
    return with_affinity(p, op, key, topo, values)


def anti(p: RawObj, op: str, key: str, topo: str, values: list[str] | None = None) -> RawObj:
    return with_affinity(p, op, key, topo, values, anti=True)


def run(
    incoming: RawObj, pods: list[RawObj], nodes: list[RawObj], extra: list[RawObj] | None = None
) -> tuple[Status, dict[str, Status]]:
    snapshot = Snapshot.from_objects([*nodes, *pods, *(extra or [])])
    plugin = InterPodAffinity()
    state = CycleState()
    pre = plugin.pre_filter(state, incoming, snapshot)
    if not pre.ok:
        return pre, {}
    return pre, {
        name: status
        for name, info in snapshot.nodes.items()
        if (status := plugin.filter(state, incoming, info)) != SUCCESS
    }


POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})


def existing() -> RawObj:
    return pod(POD_LABEL, "node1")


# (name, incoming pod, existing pods, PreFilter status, Filter status on node1)
SINGLE_NODE: list[tuple[str, RawObj, list[RawObj], Status, Status]] = [
    (
        "A pod that has no required pod affinity scheduling rules can schedule onto a node "
        "with no existing pods",
        pod(),
        [],
        SKIP,
        SUCCESS,
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In "
        "operator that matches the existing pod",
        aff(pod(POD_LABEL2), "In", "service", "region", ["securityscan", "value2"]),
        [existing()],
        SUCCESS,
        SUCCESS,
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity "
        "using not in operator in labelSelector that matches the existing pod",
        aff(pod(POD_LABEL2), "NotIn", "service", "region", ["securityscan3", "value3"]),
        [existing()],
        SUCCESS,
        SUCCESS,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        with_term(
            pod(POD_LABEL2),
            affinity_term(
                "In", "service", "", ["securityscan", "value2"], namespaces=["DiffNameSpace"]
            ),
        ),
        [pod(POD_LABEL, "node1", ns="ns")],
        SUCCESS,
        AFF,
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        aff(pod(POD_LABEL), "In", "service", "", ["antivirusscan", "value2"]),
        [existing()],
        SUCCESS,
        AFF,
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution ",
        with_term(
            with_term(
                pod(POD_LABEL2),
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": "service", "operator": "Exists"},
                            {"key": "wrongkey", "operator": "DoesNotExist"},
                        ]
                    },
                    "topologyKey": "region",
                },
            ),
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "service", "operator": "In", "values": ["securityscan"]},
                        {"key": "service", "operator": "NotIn", "values": ["WrongValue"]},
                    ]
                },
                "topologyKey": "region",
            },
        ),
        [existing()],
        SUCCESS,
        SUCCESS,
    ),
    (
        "The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot "
        "schedule onto the node because one of the matchExpression item don't match.",
        with_term(
            with_term(
                pod(POD_LABEL2),
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": "service", "operator": "Exists"},
                            {"key": "wrongkey", "operator": "DoesNotExist"},
                        ]
                    },
                    "topologyKey": "region",
                },
            ),
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "service", "operator": "In", "values": ["securityscan2"]},
                        {"key": "service", "operator": "NotIn", "values": ["WrongValue"]},
                    ]
                },
                "topologyKey": "region",
            },
        ),
        [existing()],
        SUCCESS,
        AFF,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        anti(
            aff(pod(POD_LABEL2), "In", "service", "region", ["securityscan", "value2"]),
            "In",
            "service",
            "node",
            ["antivirusscan", "value2"],
        ),
        [existing()],
        SUCCESS,
        SUCCESS,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the "
        "existing pod",
        anti(
            aff(pod(POD_LABEL2), "In", "service", "region", ["securityscan", "value2"]),
            "In",
            "service",
            "node",
            ["antivirusscan", "value2"],
        ),
        [anti(pod(POD_LABEL, "node1"), "In", "service", "node", ["antivirusscan", "value2"])],
        SUCCESS,
        SUCCESS,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        anti(
            aff(pod(POD_LABEL2), "In", "service", "region", ["securityscan", "value2"]),
            "In",
            "service",
            "zone",
            ["securityscan", "value2"],
        ),
        [existing()],
        SUCCESS,
        ANTI,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity "
        "symmetry with the existing pod",
        anti(
            aff(pod(POD_LABEL), "In", "service", "region", ["securityscan", "value2"]),
            "In",
            "service",
            "node",
            ["antivirusscan", "value2"],
        ),
        [anti(pod(POD_LABEL, "node1"), "In", "service", "zone", ["securityscan", "value2"])],
        SUCCESS,
        EXIST,
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        aff(pod(POD_LABEL), "NotIn", "service", "region", ["securityscan", "value2"]),
        [pod({"service": "securityscan"}, "node2")],
        SUCCESS,
        AFF,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no "
        "AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        pod(POD_LABEL),
        [anti(pod(POD_LABEL, "node1"), "In", "service", "zone", ["securityscan", "value2"])],
        SUCCESS,
        EXIST,
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected when pod has no "
        "AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
        pod(POD_LABEL),
        [anti(pod(POD_LABEL, "node1"), "NotIn", "service", "zone", ["securityscan", "value2"])],
        SKIP,
        SUCCESS,
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity "
        "symmetry with incoming pod",
        anti(anti(pod(POD_LABEL), "Exists", "service", "region"), "Exists", "security", "region"),
        [anti(pod(POD_LABEL2, "node1"), "Exists", "security", "zone")],
        SUCCESS,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        anti(anti(pod(POD_LABEL), "Exists", "service", "zone"), "Exists", "security", "zone"),
        [anti(pod(POD_LABEL2, "node1"), "Exists", "security", "zone")],
        SUCCESS,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        anti(pod(POD_LABEL2), "Exists", "security", "zone"),
        [
            anti(
                anti(pod(POD_LABEL, "node1"), "Exists", "service", "zone"),
                "Exists",
                "security",
                "zone",
            )
        ],
        SUCCESS,
        EXIST,
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        anti(anti(pod({"abc": "", "xyz": ""}), "Exists", "abc", "zone"), "Exists", "def", "zone"),
        [
            anti(
                anti(pod({"def": "", "xyz": ""}, "node1"), "Exists", "abc", "zone"),
                "Exists",
                "def",
                "zone",
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each "
        "other on AffinityTerms",
        anti(anti(pod({"def": "", "xyz": ""}), "Exists", "abc", "zone"), "Exists", "def", "zone"),
        [
            anti(
                anti(pod({"abc": "", "xyz": ""}, "node1"), "Exists", "abc", "zone"),
                "Exists",
                "def",
                "zone",
            )
        ],
        SUCCESS,
        ANTI,
    ),
    (
        "affinity with NamespaceSelector",
        with_term(
            pod(POD_LABEL2),
            affinity_term(
                "In",
                "service",
                "region",
                ["securityscan", "value2"],
                namespaceSelector={
                    "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                },
            ),
        ),
        [pod(POD_LABEL, "node1", ns="subteam1.team1")],
        SUCCESS,
        SUCCESS,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        with_term(
            pod(POD_LABEL2),
            affinity_term(
                "In",
                "service",
                "region",
                ["securityscan", "value2"],
                namespaceSelector={
                    "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                },
            ),
        ),
        [pod(POD_LABEL, "node1", ns="subteam1.team2")],
        SUCCESS,
        AFF,
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        with_term(
            pod(POD_LABEL2, ns="subteam1.team1"),
            affinity_term(
                "In",
                "service",
                "zone",
                ["securityscan", "value2"],
                namespaceSelector={
                    "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                },
            ),
            anti=True,
        ),
        [pod(POD_LABEL, "node1", ns="subteam2.team1")],
        SUCCESS,
        ANTI,
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        with_term(
            pod(POD_LABEL2, ns="subteam1.team1"),
            affinity_term(
                "In", "service", "zone", ["securityscan", "value2"], namespaceSelector={}
            ),
            anti=True,
        ),
        [pod(POD_LABEL, "node1", ns="subteam2.team1")],
        SUCCESS,
        ANTI,
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        with_term(
            pod(POD_LABEL2, ns="subteam1.team1"),
            affinity_term(
                "In",
                "service",
                "zone",
                ["securityscan", "value2"],
                namespaceSelector={
                    "matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]
                },
            ),
            anti=True,
        ),
        [pod(POD_LABEL, "node1", ns="subteam1.team2")],
        SUCCESS,
        SUCCESS,
    ),
]


@pytest.mark.parametrize(
    ("pod_", "pods", "want_pre", "want"),
    [case[1:] for case in SINGLE_NODE],
    ids=[case[0] for case in SINGLE_NODE],
)
def test_required_affinity_single_node(
    pod_: RawObj, pods: list[RawObj], want_pre: Status, want: Status
) -> None:
    """Upstream TestRequiredAffinitySingleNode: PreFilter, then Filter on node1."""
    pre, statuses = run(pod_, pods, [NODE1], NAMESPACES)
    assert pre == want_pre
    if pre.ok:
        assert statuses.get("node1", SUCCESS) == want


def test_invalid_affinity_label_syntax_fails_pre_filter() -> None:
    """PodAffinity fails PreFilter with an invalid affinity label syntax (upstream case)."""
    p = aff(pod(POD_LABEL), "In", "service", "region", ["{{.bad-value.}}"])
    p = aff(p, "In", "service", "node", ["antivirusscan", "value2"])
    pre, _ = run(p, [], [NODE1])
    assert pre.code is Code.UNRESOLVABLE
    assert pre.reason.startswith(
        'parsing pod: requiredAffinityTerms: values[0][service]: Invalid value: "{{.bad-value.}}": '
        "a valid label must be an empty string or consist of alphanumeric characters"
    )


def test_invalid_anti_affinity_label_syntax_fails_pre_filter() -> None:
    """PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax (upstream case:
    its second term is also a required affinity term, so the list named is the affinity one)."""
    p = aff(pod(POD_LABEL), "In", "service", "region", ["foo"])
    p = aff(p, "In", "service", "node", ["{{.bad-value.}}"])
    pre, _ = run(p, [], [NODE1])
    assert pre.code is Code.UNRESOLVABLE
    assert pre.reason.startswith("parsing pod: requiredAffinityTerms: values[0][service]:")


def test_invalid_terms_in_two_lists_are_aggregated() -> None:
    """Errors of several term lists are joined as utilerrors.NewAggregate does."""
    p = aff(pod(), "In", "service", "region", ["{{bad}}"])
    p = with_affinity(p, "Bogus", "k", "zone", anti=True)
    pre, _ = run(p, [], [NODE1])
    assert pre.reason.startswith("parsing pod: [requiredAffinityTerms: values[0][service]")
    assert (
        'requiredAntiAffinityTerms: "Bogus" is not a valid label selector operator]' in pre.reason
    )


CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def abc_nodes(**zones: str) -> list[RawObj]:
    return [
        node(name, {"region": "r1", "zone": zone, "hostname": name}) for name, zone in zones.items()
    ]


# (name, incoming pod, existing pods, nodes, PreFilter status, {node: Filter status})
MULTIPLE_NODES: list[tuple[str, RawObj, list[RawObj], list[RawObj], Status, dict[str, Status]]] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value "
        "with one of them has an existing pod that matches the affinity rules",
        aff(pod(), "In", "foo", "region", ["bar"]),
        [pod({"foo": "bar"}, "node1")],
        [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)],
        SUCCESS,
        {"node3": AFF},
    ),
    (
        "The affinity rule is to schedule all of the pods of this collection to the same zone. "
        "The first pod of the collection should not be blocked from being scheduled onto any "
        "node, even there's no existing pod that matches the rule anywhere.",
        aff(
            aff(pod({"foo": "bar", "service": "securityscan"}), "In", "foo", "zone", ["bar"]),
            "In",
            "service",
            "zone",
            ["securityscan"],
        ),
        [pod({"foo": "bar"}, "nodeA")],
        [
            node("nodeA", {"zone": "az1", "hostname": "h1"}),
            node("nodeB", {"zone": "az2", "hostname": "h2"}),
        ],
        SUCCESS,
        {},
    ),
    (
        "The first pod of the collection can only be scheduled on nodes labelled with the "
        "requested topology keys",
        aff(
            aff(pod({"foo": "bar", "service": "securityscan"}), "In", "foo", "zone", ["bar"]),
            "In",
            "service",
            "zone",
            ["securityscan"],
        ),
        [pod({"foo": "bar"}, "nodeA")],
        [
            node("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            node("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ],
        SUCCESS,
        {"nodeA": AFF, "nodeB": AFF},
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        anti(pod(), "In", "foo", "region", ["abc"]),
        [pod({"foo": "abc"}, "nodeA")],
        [
            node("nodeA", {"region": "r1", "hostname": "nodeA"}),
            node("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ],
        SUCCESS,
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    (
        "This test ensures that anti-affinity matches a pod when any term of the anti-affinity "
        "rule matches a pod.",
        anti(
            anti(pod(), "In", "foo", "region", ["abc"]), "In", "service", "zone", ["securityscan"]
        ),
        [pod({"foo": "abc", "service": "securityscan"}, "nodeA")],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB "
        "but can be scheduled onto nodeC",
        anti(pod(), "In", "foo", "region", ["abc"]),
        [pod({"foo": "abc"}, "nodeA")],
        [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
        SUCCESS,
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that "
        "matches the inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, "
        "but can be scheduled onto nodeC (NodeC has an existing pod that match the inter pod "
        "affinity rule but in different namespace)",
        anti(pod({"foo": "123"}, ns="NS1"), "In", "foo", "region", ["bar"]),
        [
            pod({"foo": "bar"}, "nodeA", ns="NS1"),
            anti(pod(None, "nodeC", ns="NS2"), "In", "foo", "region", ["123"]),
        ],
        [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)],
        SUCCESS,
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid "
        "topologyKey, labelSelector of the term is firstly checked, and then topologyKey of the "
        "term is also checked",
        pod({"foo": ""}),
        [anti(pod(None, "nodeA"), "Exists", "foo", "invalid-node-label")],
        abc_nodes(nodeA="z1", nodeB="z1"),
        SKIP,
        {},
    ),
    (
        "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if "
        "topologyKey matches",
        anti(pod(), "Exists", "foo", "invalid-node-label"),
        [pod({"foo": ""}, "nodeA")],
        abc_nodes(nodeA="z1", nodeB="z1"),
        SUCCESS,
        {},
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it "
        "violates each existingPod's terms on all nodes",
        pod({"foo": "", "bar": ""}),
        [
            anti(pod(None, "nodeA"), "Exists", "foo", "zone"),
            anti(pod(None, "nodeA"), "Exists", "bar", "region"),
        ],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": EXIST, "nodeB": EXIST},
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at "
        "least violates one anti-affinity rule of existingPod",
        anti(anti(pod(), "Exists", "foo", "zone"), "Exists", "bar", "region"),
        [pod({"foo": ""}, "nodeA"), pod({"bar": ""}, "nodeB")],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        pod({"foo": "", "bar": ""}),
        [
            anti(
                anti(pod(None, "nodeA"), "Exists", "foo", "invalid-node-label"),
                "Exists",
                "bar",
                "zone",
            )
        ],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": EXIST},
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when one term has invalid topologyKey",
        anti(anti(pod(), "Exists", "foo", "invalid-node-label"), "Exists", "bar", "zone"),
        [pod({"foo": "", "bar": ""}, "nodeA")],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": ANTI},
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        pod({"foo": "", "bar": ""}),
        [anti(anti(pod(None, "nodeA"), "Exists", "foo", "region"), "Exists", "bar", "zone")],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": EXIST, "nodeB": EXIST},
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, "
        "it's counted as a single term match - case when all terms have valid topologyKey",
        anti(anti(pod(), "Exists", "foo", "region"), "Exists", "bar", "zone"),
        [pod({"foo": "", "bar": ""}, "nodeA")],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": ANTI, "nodeB": ANTI},
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one "
        "anti-affinity term matches incoming pod, so incoming pod can only be scheduled to nodeC",
        pod({"foo": "", "bar": ""}),
        [
            anti(anti(pod(None, "nodeA"), "Exists", "foo", "zone"), "Exists", "labelA", "zone"),
            anti(anti(pod(None, "nodeB"), "Exists", "bar", "zone"), "Exists", "labelB", "zone"),
        ],
        abc_nodes(nodeA="z1", nodeB="z2", nodeC="z3"),
        SUCCESS,
        {"nodeA": EXIST, "nodeB": EXIST},
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match",
        aff(aff(pod(), "Exists", "foo", "region"), "Exists", "bar", "zone"),
        [pod({"foo": "", "bar": ""}, "nodeA")],
        abc_nodes(nodeA="z1", nodeB="z1"),
        SUCCESS,
        {},
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check "
        "if all topologyKeys match, and the match logic should be satisfied on the same pod",
        aff(aff(pod(), "Exists", "foo", "region"), "Exists", "bar", "zone"),
        [pod({"foo": ""}, "nodeA"), pod({"bar": ""}, "nodeB")],
        abc_nodes(nodeA="z1", nodeB="z2"),
        SUCCESS,
        {"nodeA": AFF, "nodeB": AFF},
    ),
]


@pytest.mark.parametrize(
    ("pod_", "pods", "nodes", "want_pre", "want"),
    [case[1:] for case in MULTIPLE_NODES],
    ids=[case[0][:120] for case in MULTIPLE_NODES],
)
def test_required_affinity_multiple_nodes(
    pod_: RawObj, pods: list[RawObj], nodes: list[RawObj], want_pre: Status, want: dict[str, Status]
) -> None:
    """Upstream TestRequiredAffinityMultipleNodes: whole-map Filter statuses."""
    pre, statuses = run(pod_, pods, nodes, [namespace("NS1")])
    assert pre == want_pre
    if pre.ok:
        assert statuses == want


# ---- one case per rule and boundary ----------------------------------------------------


def test_filter_without_pre_filter_state_is_an_error() -> None:
    """Upstream TestPreFilterDisabled: Filter without PreFilter's state is an Error."""
    snapshot = Snapshot.from_objects([NODE1])
    status = InterPodAffinity().filter(CycleState(), pod(), snapshot.nodes["node1"])
    assert status == Status(
        Code.ERROR, f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
    )


def test_terminating_pods_still_count() -> None:
    """A terminating pod still occupies its node for InterPodAffinity (no PTS-style bypass)."""
    dying = pod({"app": "web"}, "nodeA")
    dying["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    _, statuses = run(
        anti(pod({"app": "web"}), "In", "app", "hostname", ["web"]),
        [dying],
        abc_nodes(nodeA="z1", nodeB="z1"),
    )
    assert statuses == {"nodeA": ANTI}


def test_first_pod_rule_needs_self_match() -> None:
    """With no matching pod anywhere, a pod that does not match its own terms is blocked."""
    _, statuses = run(
        aff(pod({"app": "other"}), "In", "app", "zone", ["web"]), [], abc_nodes(nodeA="z1")
    )
    assert statuses == {"nodeA": AFF}


def test_first_pod_rule_does_not_apply_once_a_pod_matches_elsewhere() -> None:
    """Once one pod matches somewhere, the self-match exemption no longer applies."""
    _, statuses = run(
        aff(pod({"app": "web"}), "In", "app", "zone", ["web"]),
        [pod({"app": "web"}, "nodeA")],
        abc_nodes(nodeA="z1", nodeB="z2"),
    )
    assert statuses == {"nodeB": AFF}


def test_namespace_absent_from_snapshot_has_its_metadata_name_label() -> None:
    """A namespace the snapshot lacks still carries kubernetes.io/metadata.name=<name>."""
    term = affinity_term(
        "In",
        "app",
        "zone",
        ["web"],
        namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "shop"}},
    )
    _, statuses = run(
        with_term(pod(), term),
        [pod({"app": "web"}, "nodeA", ns="shop")],
        abc_nodes(nodeA="z1", nodeB="z2"),
    )
    assert statuses == {"nodeB": AFF}


def test_existing_pod_namespace_selector_reads_incoming_namespace_labels() -> None:
    """An existing pod's anti-affinity namespaceSelector is matched against the labels of
    the incoming pod's namespace."""
    existing_pod = with_term(
        pod(None, "nodeA", ns="other"),
        affinity_term("Exists", "app", "zone", namespaceSelector={"matchLabels": {"team": "t1"}}),
        anti=True,
    )
    nodes = abc_nodes(nodeA="z1", nodeB="z2")
    _, blocked = run(
        pod({"app": "x"}, ns="mine"), [existing_pod], nodes, [namespace("mine", {"team": "t1"})]
    )
    assert blocked == {"nodeA": EXIST}
    pre, _ = run(
        pod({"app": "x"}, ns="mine"), [existing_pod], nodes, [namespace("mine", {"team": "t2"})]
    )
    assert pre == SKIP


def test_match_label_keys_are_merged() -> None:
    """matchLabelKeys narrows the selector to pods sharing the incoming pod's value."""
    term = affinity_term("Exists", "app", "hostname", matchLabelKeys=["rev"])
    incoming = with_term(pod({"app": "web", "rev": "2"}), term, anti=True)
    _, statuses = run(
        incoming,
        [pod({"app": "web", "rev": "1"}, "nodeA"), pod({"app": "web", "rev": "2"}, "nodeB")],
        abc_nodes(nodeA="z1", nodeB="z1"),
    )
    assert statuses == {"nodeB": ANTI}


def test_mismatch_label_keys_add_not_in() -> None:
    """mismatchLabelKeys selects pods whose value differs from the incoming pod's."""
    term = affinity_term("Exists", "app", "hostname", mismatchLabelKeys=["tenant"])
    incoming = with_term(pod({"app": "web", "tenant": "a"}), term, anti=True)
    _, statuses = run(
        incoming,
        [pod({"app": "web", "tenant": "a"}, "nodeA"), pod({"app": "web", "tenant": "b"}, "nodeB")],
        abc_nodes(nodeA="z1", nodeB="z1"),
    )
    assert statuses == {"nodeB": ANTI}


def test_affinity_failure_wins_over_anti_affinity() -> None:
    """Filter checks affinity first, then the pod's anti-affinity, then existing pods'."""
    incoming = anti(aff(pod({"app": "x"}), "In", "app", "zone", ["db"]), "Exists", "app", "zone")
    _, statuses = run(
        incoming,
        [pod({"app": "db"}, "nodeA"), pod({"app": "y"}, "nodeB")],
        abc_nodes(nodeA="z1", nodeB="z2"),
    )
    assert statuses == {"nodeA": ANTI, "nodeB": AFF}


@pytest.mark.parametrize(
    ("topology_key", "label_keys", "groups", "statuses"),
    [
        pytest.param(
            "zone",
            ("zone",),
            [{"nodeA", "nodeB"}, {"nodeC"}],
            {"nodeA": ANTI, "nodeB": ANTI, "nodeC": SUCCESS},
            id="zone: grouped by the zone's label classes",
        ),
        pytest.param(
            "hostname",
            None,
            [{"nodeA"}, {"nodeB", "nodeC"}],
            {"nodeA": ANTI, "nodeB": SUCCESS, "nodeC": SUCCESS},
            id="hostname (a value per node): by verdict, node by node",
        ),
    ],
)
def test_node_keys_group_nodes_by_verdict(
    topology_key: str,
    label_keys: tuple[str, ...] | None,
    groups: list[set[str]],
    statuses: dict[str, Status],
) -> None:
    """node_key is the node's verdict, so nodes alike for Filter share it; node_label_keys
    names the keys to group by label values, None under a key with a value per node
    (grouping by it would make a group of every node)."""
    snapshot = Snapshot.from_objects(
        [*abc_nodes(nodeA="z1", nodeB="z1", nodeC="z2"), pod({"app": "web"}, "nodeA")]
    )
    plugin = InterPodAffinity()
    state = CycleState()
    incoming = anti(pod({"app": "web"}), "In", "app", topology_key, ["web"])
    assert plugin.pre_filter(state, incoming, snapshot).ok
    assert plugin.node_label_keys(state, incoming) == label_keys
    keys = {n: plugin.node_key(state, incoming, i) for n, i in snapshot.nodes.items()}
    by_key: dict[Any, set[str]] = {}
    for name, key in keys.items():
        by_key.setdefault(key, set()).add(name)
    assert sorted(by_key.values(), key=sorted) == groups
    assert {n: plugin.filter(state, incoming, i) for n, i in snapshot.nodes.items()} == statuses


def _bind_web(snapshot: Snapshot) -> None:
    snapshot.upsert(pod({"app": "web"}, "nodeB"))


def _hostname_of_a_on_b(snapshot: Snapshot) -> None:
    snapshot.upsert(node("nodeB", {"region": "r1", "zone": "z1", "hostname": "nodeA"}))


def _label_namespace(snapshot: Snapshot) -> None:
    snapshot.upsert(namespace("default", {"team": "x"}))


@pytest.mark.parametrize(
    ("topology_key", "change", "incoming_labels", "same"),
    [
        pytest.param(
            "zone",
            _bind_web,
            {"app": "web"},
            False,
            id="a matching pod bound elsewhere in a zone changes a zone term's key",
        ),
        pytest.param(
            "hostname",
            _bind_web,
            {"app": "web"},
            True,
            id="a matching pod bound on another node leaves a hostname term's key",
        ),
        pytest.param(
            "hostname",
            _hostname_of_a_on_b,
            {"app": "web"},
            False,
            id="a hostname value carried by two nodes is no longer node-local",
        ),
        pytest.param(
            "hostname",
            _label_namespace,
            {"app": "web"},
            False,
            id="the namespace's labels are in the key",
        ),
        pytest.param(
            "hostname",
            None,
            {"app": "web", "tier": "x"},
            False,
            id="the pod's labels are in the key",
        ),
    ],
)
def test_pod_key_changes_when_a_remembered_verdict_may_not_hold(
    topology_key: str, change: Any, incoming_labels: dict[str, str], same: bool
) -> None:
    """pod_key (what placement remembers verdicts by, with node generations): equal
    only while every node's verdict stays as it was unless the node itself changed."""
    snapshot = Snapshot.from_objects(
        [*abc_nodes(nodeA="z1", nodeB="z1", nodeC="z2"), pod({"app": "web"}, "nodeA")]
    )
    plugin = InterPodAffinity()

    def key(labels: dict[str, str]) -> Any:
        state = CycleState()
        incoming = anti(pod(labels), "In", "app", topology_key, ["web"])
        assert plugin.pre_filter(state, incoming, snapshot).ok
        return plugin.pod_key(state, incoming)

    before = key({"app": "web"})
    if change is not None:
        change(snapshot)
    assert (key(incoming_labels) == before) is same


def test_place_rejudges_a_zone_after_a_pod_is_bound_in_it() -> None:
    """Zone anti-affinity decided twice with a pod bound in between: the second
    decision blocks the whole zone, not only the node that changed, as the
    node-by-node reference does."""
    snapshot = Snapshot.from_objects(abc_nodes(nodeA="z1", nodeB="z1", nodeC="z2"))
    fw = framework_of()
    incoming = anti(pod({"app": "web"}), "In", "app", "zone", ["web"])
    first = place(incoming, snapshot, framework=fw)
    assert [n.name for n in first.feasible] == ["nodeA", "nodeB", "nodeC"]
    snapshot.add_pod({**incoming, "metadata": {"name": "bound", "namespace": "default"}}, "nodeA")
    second = place(incoming, snapshot, framework=fw)
    assert [n.name for n in second.feasible] == ["nodeC"]
    assert second == reference_place(incoming, snapshot, DEFAULT_ARGS, fw)


def test_index_follows_pod_changes() -> None:
    """The index re-reads a node whose pods changed and forgets removed ones."""
    snapshot = Snapshot.from_objects(abc_nodes(nodeA="z1", nodeB="z2"))
    plugin = InterPodAffinity()
    incoming = pod({"app": "web"})
    assert plugin.pre_filter(CycleState(), incoming, snapshot) == SKIP
    blocker = anti(pod(None, "nodeA"), "In", "app", "zone", ["web"])
    snapshot.upsert(blocker)
    state = CycleState()
    assert plugin.pre_filter(state, incoming, snapshot).ok
    assert plugin.filter(state, incoming, snapshot.nodes["nodeA"]) == EXIST
    snapshot.delete(blocker)
    assert plugin.pre_filter(CycleState(), incoming, snapshot) == SKIP


# ---- property: counts == a naive evaluation over every existing pod ---------------------

KEYS = ("zone", "hostname")
APPS = ("a", "b")


def _naive(incoming: RawObj, snapshot: Snapshot) -> dict[str, Code]:
    """Every node judged by walking every existing pod, straight from the definitions."""
    from webhook.api.kube import pod_labels, pod_namespace

    terms = parse_pod_terms(incoming)
    ns, labels = pod_namespace(incoming), pod_labels(incoming)
    pods = [(info, p) for info in snapshot.nodes.values() for p in info.pods]

    def same_domain(a: dict[str, str], b: dict[str, str], key: str) -> bool:
        return key in a and key in b and a[key] == b[key]

    any_match = any(
        all(t.matches(pod_namespace(p), pod_labels(p), {}) for t in terms.required_affinity)
        and any(t.topology_key in info.labels for t in terms.required_affinity)
        for info, p in pods
    )
    out = {}
    for name, info in snapshot.nodes.items():
        code = Code.SUCCESS
        ok = all(t.topology_key in info.labels for t in terms.required_affinity)
        if ok and terms.required_affinity:
            ok = all(
                any(
                    same_domain(info.labels, other.labels, t.topology_key)
                    and all(
                        u.matches(pod_namespace(p), pod_labels(p), {})
                        for u in terms.required_affinity
                    )
                    for other, p in pods
                )
                for t in terms.required_affinity
            )
            if not ok and not any_match:
                ok = all(t.matches(ns, labels, {}) for t in terms.required_affinity)
        if not ok:
            code = Code.UNRESOLVABLE
        elif any(
            same_domain(info.labels, other.labels, t.topology_key)
            and t.matches(pod_namespace(p), pod_labels(p), {})
            for t in terms.required_anti_affinity
            for other, p in pods
        ):
            code = Code.UNSCHEDULABLE
        elif any(
            same_domain(info.labels, other.labels, t.topology_key)
            and t.matches(ns, labels, {"kubernetes.io/metadata.name": ns})
            for other, p in pods
            for t in parse_pod_terms(p).required_anti_affinity
        ):
            code = Code.UNSCHEDULABLE
        out[name] = code
    return out


_term = st.tuples(st.sampled_from(APPS), st.sampled_from(KEYS), st.booleans())
_pod = st.tuples(
    st.sampled_from(APPS),
    st.integers(0, 3),
    st.lists(_term, max_size=2),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(
    existing=st.lists(_pod, max_size=8),
    incoming=st.tuples(st.sampled_from(APPS), st.lists(_term, max_size=2)),
    zones=st.lists(st.sampled_from(["z1", "z2", None]), min_size=4, max_size=4),
)
def test_counts_equal_a_naive_walk_over_every_pod(
    existing: list[tuple[str, int, list[tuple[str, str, bool]], bool]],
    incoming: tuple[str, list[tuple[str, str, bool]]],
    zones: list[str | None],
) -> None:
    """Filter through the counts agrees with walking every existing pod, on random clusters."""
    nodes = []
    for i, zone in enumerate(zones):
        labels = {"hostname": f"n{i}"}
        if zone:
            labels["zone"] = zone
        nodes.append(node(f"n{i}", labels))
    pods = []
    for app, where, terms, dying in existing:
        p = pod({"app": app}, f"n{where}")
        if dying:
            p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        for value, key, is_anti in terms:
            with_affinity(p, "In", "app", key, [value], anti=is_anti)
        pods.append(p)
    new = pod({"app": incoming[0]})
    for value, key, is_anti in incoming[1]:
        with_affinity(new, "In", "app", key, [value], anti=is_anti)
    snapshot = Snapshot.from_objects([*nodes, *pods])
    plugin = InterPodAffinity()
    state = CycleState()
    pre = plugin.pre_filter(state, new, snapshot)
    got = {
        n: (Code.SUCCESS if pre == SKIP else plugin.filter(state, new, info).code)
        for n, info in snapshot.nodes.items()
    }
    assert got == _naive(new, snapshot)


def _index_state(index: Any) -> tuple[Any, ...]:
    groups = {
        kind: {key: dict(g.counts) for key, g in by_key.items()}
        for kind, by_key in index.groups.items()
    }
    by_namespace = {
        kind: {ns: sorted(by_key) for ns, by_key in lookup.items()}
        for kind, lookup in index._by_namespace.items()
    }
    by_selector = {
        kind: {fp: sorted(entry[1]) for fp, entry in lookup.items()}
        for kind, lookup in index._by_selector.items()
    }
    return groups, dict(index.namespaces), by_namespace, by_selector


def test_index_synced_by_the_journal_equals_a_fresh_index() -> None:
    from webhook.scheduler.plugins.interpodaffinity.common import ExistingTermsIndex

    def anti(name: str, node: str, ns: str = "default", ns_selector: Any = None) -> dict[str, Any]:
        pod = make_pod().name(name).namespace(ns).label("app", "db").node(node).obj()
        term: dict[str, Any] = {
            "labelSelector": {"matchLabels": {"app": "db"}},
            "topologyKey": "topology.kubernetes.io/zone",
        }
        if ns_selector is not None:
            term["namespaceSelector"] = ns_selector
        pod["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
        return pod

    team = {"matchLabels": {"team": "a"}}

    nodes = [make_node().name(f"n{i}").zone("abc"[i % 3]).obj() for i in range(6)]
    snap = Snapshot.from_objects([*nodes, anti("d0", "n0"), anti("d1", "n1", "other")])
    index = ExistingTermsIndex()
    index.sync(snap)
    changes: list[Any] = [
        lambda: snap.upsert(anti("d2", "n2")),
        lambda: snap.delete(anti("d0", "n0")),
        lambda: snap.upsert(make_node().name("n1").zone("c").obj()),
        lambda: snap.delete({"kind": "Node", "metadata": {"name": "n2"}}),
        lambda: snap.upsert(anti("s0", "n3", ns_selector=team)),
        lambda: snap.upsert(anti("s1", "n5", "other", ns_selector=team)),
        lambda: snap.delete(anti("s0", "n3")),
        lambda: snap.delete(anti("s1", "n5", "other")),
        lambda: snap.upsert(
            {
                **anti("d3", "n4"),
                "metadata": {
                    **anti("d3", "n4")["metadata"],
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                },
            }
        ),
    ]
    for change in changes:
        change()
        index.sync(snap)
        fresh = ExistingTermsIndex()
        fresh.sync(snap)
        assert _index_state(index) == _index_state(fresh)
        assert sorted(index.terminating_pods()) == sorted(fresh.terminating_pods())


# ---- property: the index's lookup by namespace and namespaceSelector ----------------------

_ns_term = st.fixed_dictionaries(
    {
        "anti": st.booleans(),
        "required": st.booleans(),
        "app": st.sampled_from(APPS),
        "namespaces": st.sampled_from([None, ["ns1"], ["ns1", "ns2"]]),
        "selector": st.sampled_from(
            [None, None, {}, {"matchLabels": {"team": "a"}}, {"matchLabels": {"team": "b"}}]
        ),
    }
)
_ns_pod = st.tuples(st.sampled_from(["ns1", "ns2", "ns3"]), st.lists(_ns_term, max_size=3))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_ns_pod, max_size=8),
    st.integers(0, 8),
    st.sampled_from(["ns1", "ns2", "ns3"]),
    st.sampled_from(APPS),
    st.sampled_from([{}, {"team": "a"}, {"team": "b"}]),
)
def test_matching_equals_every_group_matched_one_by_one(
    pods: list[Any], removed: int, ns: str, app: str, ns_labels: dict[str, str]
) -> None:
    """ExistingTermsIndex.matching finds exactly the groups whose term matches the pod
    (AffinityTerm.matches over every group), after pods come and one goes."""
    from webhook.scheduler.plugins.interpodaffinity.common import KINDS, ExistingTermsIndex

    snapshot = Snapshot.from_objects([node("n1", {"zone": "z1"}), node("n2", {"zone": "z2"})])
    objs = []
    for i, (pod_ns, terms) in enumerate(pods):
        p = pod({"app": "x"}, f"n{1 + i % 2}", ns=pod_ns)
        for t in terms:
            extra: dict[str, Any] = {}
            if t["namespaces"] is not None:
                extra["namespaces"] = t["namespaces"]
            if t["selector"] is not None:
                extra["namespaceSelector"] = t["selector"]
            term = affinity_term("In", "app", "zone", [t["app"]], **extra)
            with_term(p, term, anti=t["anti"], required=t["required"], weight=3)
        objs.append(p)
        snapshot.upsert(p)
    if objs and removed < len(objs):
        snapshot.delete(objs[removed])
    index = ExistingTermsIndex()
    index.sync(snapshot)
    labels = {"app": app}
    for kind in KINDS:
        want = {
            key for key, g in index.groups[kind].items() if g.term.matches(ns, labels, ns_labels)
        }
        got = [id(g) for g in index.matching(kind, ns, labels, ns_labels)]
        assert len(got) == len(set(got))
        assert {key for key, g in index.groups[kind].items() if id(g) in got} == want
