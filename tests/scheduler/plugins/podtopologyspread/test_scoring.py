"""PodTopologySpread PreScore, Score and NormalizeScore, and Go's arithmetic.

Legend for case names (upstream's scoring tests): "X/Y" means X matching pods
on the first node and Y on the second, both candidates (they passed every
filter); "~Y~" a node that is not a candidate; "?Y?" a candidate lacking a
topology key. Expected scores are worked by hand:
raw = round(count * log(domains + 2) + maxSkew - 1), then
100 * (max + min - raw) / max with integer division.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from tests.builders import HOSTNAME, SA, ZONE, constraint, make_node, make_pod, selector
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.gomath import go_div, go_round
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS
from webhook.scheduler.plugins.podtopologyspread.scoring import (
    PreScoreState,
    normalize_scores,
    pre_score,
    score_nodes,
    topology_normalizing_weight,
)

FOO = selector({"foo": ""})
BAR = selector({"bar": ""})


@pytest.mark.parametrize(
    ("x", "want"),
    [
        (0.5, 1),
        (-0.5, -1),
        (1.5, 2),
        (2.5, 3),
        (-2.5, -3),
        (0.49999999999999994, 0),
        (2.4999999999999996, 2),
        (3.58, 4),
        (-3.2, -3),
        (0.0, 0),
    ],
)
def test_go_round_is_half_away_from_zero(x: float, want: int) -> None:
    """math.Round semantics, not Python's round-half-even."""
    assert go_round(x) == want


@pytest.mark.parametrize(
    ("a", "b", "want"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (200, 3, 66), (0, 5, 0)]
)
def test_go_div_truncates_toward_zero(a: int, b: int, want: int) -> None:
    assert go_div(a, b) == want


def test_topology_weight_is_log_of_size_plus_two() -> None:
    assert topology_normalizing_weight(4) == math.log(6)
    assert topology_normalizing_weight(0) == math.log(2)


def _state(ignored: set[str]) -> PreScoreState:
    return PreScoreState((), frozenset(ignored), (), (), ())


@pytest.mark.parametrize(
    ("raw", "ignored", "want"),
    [
        pytest.param({"a": 0, "b": 0}, set(), {"a": 100, "b": 100}, id="all zero -> all 100"),
        pytest.param(
            {"a": 4, "b": 2, "c": 0, "d": 5},
            set(),
            {"a": 20, "b": 60, "c": 100, "d": 0},
            id="min 0 max 5: 100*(5-s)/5",
        ),
        pytest.param(
            {"a": 5, "b": 3, "c": 9},
            set(),
            {"a": 77, "b": 100, "c": 33},
            id="min 3 max 9: 100*(12-s)/9 truncated",
        ),
        pytest.param(
            {"a": 6, "b": 0, "x": 1},
            {"b"},
            {"a": 16, "b": 0, "x": 100},
            id="ignored node gets 0 and is left out of min and max",
        ),
        pytest.param({"a": 0}, {"a"}, {"a": 0}, id="only ignored nodes -> 0"),
    ],
)
def test_normalize_scores(raw, ignored, want) -> None:
    """NormalizeScore reproduces upstream's int64 arithmetic."""
    assert normalize_scores(_state(ignored), raw) == want


def nodes(*names: str, key: str = HOSTNAME, zones: dict[str, str] | None = None):
    out = []
    for n in names:
        b = make_node().name(n).label(key, n)
        if zones and n in zones:
            b = b.label("zone", zones[n])
        out.append(b.obj())
    return out


def pods(spec: dict[str, int], ns: str = "default", **labels: str) -> list[dict[str, Any]]:
    """`spec[node]` pods on each node with the given labels (default foo="")."""
    labels = labels or {"foo": ""}
    out = []
    for n, count in spec.items():
        for i in range(count):
            out.append(
                make_pod()
                .name(f"p-{n}-{i}-{'-'.join(labels)}")
                .namespace(ns)
                .labels(labels)
                .node(n)
                .obj()
            )
    return out


def soft(max_skew: int, key: str, sel: dict[str, Any] | None = FOO, **extra: Any) -> dict[str, Any]:
    """A ScheduleAnyway constraint() with this file's default selector."""
    return constraint(max_skew, key, SA, sel, **extra)


def incoming(
    *constraints: dict[str, Any], labels: dict[str, str] | None = None, node_selector=None
):
    b = make_pod().name("p").labels({"foo": ""} if labels is None else labels)
    if node_selector:
        b = b.node_selector(node_selector)
    return b.constraints(list(constraints)).obj()


def scores(pod, all_objs, candidates: list[str], args: SpreadArgs = DEFAULT_ARGS) -> dict[str, int]:
    snap = Snapshot.from_objects(all_objs)
    got = score_nodes(pod, snap, args, [snap.nodes[n] for n in candidates])
    assert isinstance(got, dict)
    return got


ABCD = nodes("node-a", "node-b", "node-c", "node-d")
ZONES = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
ABXY = nodes("node-a", "node-b", "node-x", "node-y", zones=ZONES)

CASES = [
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        nodes("node-a", "node-b"),
        ["node-a", "node-b"],
        {"node-a": 100, "node-b": 100},
        id="one constraint on node, no existing pods",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        nodes("node-a", "node-b") + pods({"node-a": 2, "node-b": 1}),
        ["node-a"],
        {"node-a": 100},
        id="one constraint on node, only one candidate: [2/~1~]",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        ABCD + pods({"node-a": 2, "node-b": 1, "node-d": 3}),
        ["node-a", "node-b", "node-c", "node-d"],
        # weight log(6)=1.79: raw 4/2/0/5
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        id="spreads = [2/1/0/3], maxSkew=1",
    ),
    pytest.param(
        incoming(soft(2, HOSTNAME)),
        ABCD + pods({"node-a": 2, "node-b": 1, "node-d": 3}),
        ["node-a", "node-b", "node-c", "node-d"],
        # raw 5/3/1/6: 100*(7-s)/6
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        id="spreads = [2/1/0/3], maxSkew=2",
    ),
    pytest.param(
        incoming(soft(3, HOSTNAME)),
        ABCD + pods({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}),
        ["node-a", "node-b", "node-c", "node-d"],
        # raw round(4*1.79+2)=9, 7, 6, 4: 100*(13-s)/9
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="spreads = [4/3/2/1], maxSkew=3",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME, sel=None)),
        ABCD + pods({"node-a": 2, "node-b": 1, "node-d": 3}),
        ["node-a", "node-b", "node-c", "node-d"],
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        id="null selector counts nothing: [0/0/0/0]",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        nodes("node-a", "node-b", "node-x", "node-y")
        + pods({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        ["node-a", "node-b", "node-x"],
        # 3 candidates: weight log(5)=1.61, raw 6/3/2
        {"node-a": 33, "node-b": 83, "node-x": 100},
        id="spreads = [4/2/1/~3~]",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        nodes("node-a", "node-x", "node-y")
        + [make_node().name("node-b").label("n", "node-b").obj()]
        + pods({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        ["node-a", "node-b", "node-x"],
        # node-b ignored: 2 scored candidates, weight log(4)=1.39, raw 6/?/1
        {"node-a": 16, "node-b": 0, "node-x": 100},
        id="spreads = [4/?2?/1/~3~]",
    ),
    pytest.param(
        incoming(soft(1, "zone")),
        ABXY + pods({"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
        ["node-a", "node-b", "node-x"],
        # zone1=6, zone2=4 (node-y counts though not a candidate); weight log(4): raw 8/8/6
        {"node-a": 75, "node-b": 75, "node-x": 100},
        id="zone spreads = [6/4], nodes [4/2/1/~3~]",
    ),
    pytest.param(
        incoming(soft(1, "zone"), soft(1, HOSTNAME)),
        ABXY + pods({"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4}),
        ["node-a", "node-x"],
        # zone: 3/6 weight log(4); host: 2/2 weight log(4): raw 7/11
        {"node-a": 100, "node-x": 63},
        id="two constraints, spreads = [2/~1~/2/~4~]",
    ),
    pytest.param(
        incoming(soft(1, "zone"), soft(1, HOSTNAME, sel=BAR), labels={"foo": "", "bar": ""}),
        ABXY
        + pods({"node-a": 1, "node-y": 1})
        + pods({"node-b": 1}, foo="", bar="")
        + pods({"node-y": 1}, bar=""),
        ["node-a", "node-b", "node-x", "node-y"],
        # zone foo [2/1] w=log(4); host bar [0/1/0/1] w=log(6): raw 3/5/1/3
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
        id="two constraints, different selectors",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        nodes("node-a", "node-b")
        + pods({"node-b": 1})
        + [make_pod().name("t").label("foo").node("node-a").terminating().obj()],
        ["node-a", "node-b"],
        {"node-a": 100, "node-b": 0},
        id="terminating pods are not counted",
    ),
    pytest.param(
        incoming(soft(1, HOSTNAME)),
        nodes("node-a", "node-b")
        + pods({"node-a": 1}, ns="ns1")
        + pods({"node-a": 1, "node-b": 2}),
        ["node-a", "node-b"],
        {"node-a": 100, "node-b": 33},
        id="pods of another namespace are not counted",
    ),
    pytest.param(
        incoming(soft(2, "node", minDomains=10)),
        nodes("node-a", "node-b", "node-c", key="node")
        + pods({"node-a": 2, "node-b": 2, "node-c": 1}),
        ["node-a", "node-b", "node-c"],
        {"node-a": 75, "node-b": 75, "node-c": 100},
        id="minDomains has no effect on scoring",
    ),
]


@pytest.mark.parametrize(("pod", "objs", "candidates", "want"), CASES)
def test_scores_per_node(pod, objs, candidates, want) -> None:
    """Normalised PodTopologySpread scores of every candidate node."""
    assert scores(pod, objs, candidates) == want


POLICY_NODES = [
    make_node().name("node-a").label("node", "node-a").label("foo", "").obj(),
    make_node().name("node-b").label("node", "node-b").label("foo", "").obj(),
    make_node().name("node-c").label("node", "node-c").taint("k", "v", "NoSchedule").obj(),
]
POLICY_PODS = pods({"node-a": 2, "node-b": 1, "node-c": 1})
ALL3 = ["node-a", "node-b", "node-c"]


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            incoming(soft(1, "node"), node_selector={"foo": ""}),
            {"node-a": 0, "node-b": 33, "node-c": 100},
            id="nodeAffinityPolicy Honor: ~node-c~ counts 0",
        ),
        pytest.param(
            incoming(soft(1, "node", nodeAffinityPolicy="Ignore"), node_selector={"foo": ""}),
            {"node-a": 66, "node-b": 100, "node-c": 100},
            id="nodeAffinityPolicy Ignore: node-c counts 1",
        ),
        pytest.param(
            incoming(soft(1, "node", nodeTaintsPolicy="Honor")),
            {"node-a": 0, "node-b": 33, "node-c": 100},
            id="nodeTaintsPolicy Honor: tainted ~node-c~ counts 0",
        ),
        pytest.param(
            incoming(soft(1, "node")),
            {"node-a": 66, "node-b": 100, "node-c": 100},
            id="nodeTaintsPolicy Ignore (default): node-c counts 1",
        ),
    ],
)
def test_node_inclusion_policies_in_scoring(pod, want) -> None:
    """Inclusion policies decide whose pods count, not which nodes are scored."""
    assert scores(pod, POLICY_NODES + POLICY_PODS, ALL3) == want


def test_match_label_keys_and_empty_selector() -> None:
    """matchLabelKeys ANDed with an empty selector selects the pod's own revision."""
    pod = incoming(
        soft(1, "zone", sel={}, matchLabelKeys=["foo"]),
        soft(1, HOSTNAME, sel={}, matchLabelKeys=["bar"]),
        labels={"foo": "", "bar": ""},
    )
    zones = {"node-a": "zone1", "node-b": "zone1", "node-c": "zone2", "node-d": "zone2"}
    objs = (
        nodes("node-a", "node-b", "node-c", "node-d", zones=zones)
        + pods({"node-a": 1, "node-c": 1})
        + pods({"node-b": 1}, foo="", bar="")
        + pods({"node-c": 1}, bar="")
    )
    # zone foo [2/1] w=log(4); host bar [0/1/1/0] w=log(6): raw 3/5/3/1 -> 100*(6-s)/5
    assert scores(pod, objs, ["node-a", "node-b", "node-c", "node-d"]) == {
        "node-a": 60,
        "node-b": 20,
        "node-c": 60,
        "node-d": 100,
    }


def test_system_defaults_score_zoneless_nodes_by_hostname() -> None:
    """System defaults (hostname maxSkew 3, zone maxSkew 5) from a Service; nodes
    without a zone still get hostname scores: same as one hostname constraint."""
    svc = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"foo": ""}},
    }
    objs = ABCD + [svc] + pods({"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1})
    pod = make_pod().name("p").label("foo").obj()
    want = {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}
    assert scores(pod, objs, ["node-a", "node-b", "node-c", "node-d"]) == want


def test_system_defaults_put_zoneless_nodes_in_one_empty_zone() -> None:
    """With System defaults a node without a zone label is not ignored: it joins the
    "" zone, which counts as a domain in the zone weight."""
    svc = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"foo": ""}},
    }
    objs = [
        make_node().name("node-a").hostname().zone("mars").obj(),
        make_node().name("node-b").hostname().zone("mars").obj(),
        make_node().name("node-c").hostname().obj(),
        make_node().name("node-d").hostname().obj(),
        svc,
    ]
    pod = make_pod().name("p").label("foo").obj()
    snap = Snapshot.from_objects(objs)
    state = pre_score(pod, snap, DEFAULT_ARGS, list(snap.nodes.values()))
    assert isinstance(state, PreScoreState)
    assert [c.topology_key for c in state.constraints] == [HOSTNAME, ZONE]
    assert state.ignored_nodes == frozenset()
    assert state.tp_value_to_pod_counts[1] == {"mars": 0, "": 0}
    assert state.weights == (math.log(6), math.log(4))


def test_list_defaults_ignore_nodes_lacking_a_key() -> None:
    """List defaults are not System defaults: a node lacking a key is ignored (score 0)."""
    args = SpreadArgs(
        default_constraints=({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA},),
        defaulting_type="List",
    )
    svc = {
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"selector": {"foo": ""}},
    }
    objs = [
        make_node().name("a").zone("z1").obj(),
        make_node().name("b").zone("z2").obj(),
        make_node().name("c").obj(),
        svc,
        *pods({"a": 1}),
    ]
    pod = make_pod().name("p").label("foo").obj()
    # zones [1/0], weight log(4)=1.39: raw a=1, b=0; c ignored
    assert scores(pod, objs, ["a", "b", "c"], args) == {"a": 0, "b": 100, "c": 0}


def test_no_soft_constraint_skips_scoring() -> None:
    """Without ScheduleAnyway constraints PreScore skips: every candidate scores 0."""
    pod = make_pod().name("p").label("foo").spread(1, HOSTNAME, "DoNotSchedule", FOO).obj()
    args = SpreadArgs(defaulting_type="List")
    snap = Snapshot.from_objects(nodes("node-a", "node-b"))
    assert pre_score(pod, snap, args, list(snap.nodes.values())) is None
    assert scores(pod, nodes("node-a", "node-b"), ["node-a", "node-b"], args) == {
        "node-a": 0,
        "node-b": 0,
    }


def test_unparsable_soft_constraint_is_an_error_status() -> None:
    """A PreScore parse error comes back as a Status naming the soft constraints."""
    pod = incoming(soft(1, HOSTNAME, sel={"matchExpressions": [{"key": "a", "operator": "Bad"}]}))
    snap = Snapshot.from_objects(nodes("node-a"))
    got = score_nodes(pod, snap, DEFAULT_ARGS, list(snap.nodes.values()))
    assert not isinstance(got, dict)
    assert got.reason.startswith("obtaining pod's soft topology spread constraints: ")
