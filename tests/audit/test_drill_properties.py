"""Properties of the drills and of plans under budgets, on small random clusters."""

from __future__ import annotations

from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from tests.audit.planning import applied, violations
from tests.builders import DNS, HOSTNAME, ZONE, make_node, make_pod, pdb, scaled, selector
from tests.clusters import COST, HASH, examples
from webhook.api.labels import parse_selector
from webhook.audit.drills.nodes import drain_nodes, unreachable_nodes
from webhook.audit.drills.outcome import node_bound
from webhook.audit.measure.budgets import Budgets
from webhook.audit.measure.spread import evaluate
from webhook.audit.plan.planner import make_plan
from webhook.audit.state.inventory import ClusterState, pod_key, unbound
from webhook.config import Settings

RawObj = dict[str, Any]
APPS = ("web", "api")
SETTINGS = examples(40)


@st.composite
def clusters(draw: Any) -> list[RawObj]:
    """2-5 nodes in zones a-c (room for 3-6 pods each), maybe one more without a zone,
    0-10 pods of two ReplicaSets spread over zone or hostname (maxSkew 1-2,
    nodeTaintsPolicy unset; pod-template-hash in matchLabelKeys or not, the selectors
    merged by a v1.34+ API server or not), DaemonSet pods on some nodes, pods Ready or
    not, unscheduled, terminating, or with a deletion cost somebody else set, another
    ReplicaSet's pod matching an app's selector, and a budget per app (none, int,
    percent)."""
    n = draw(st.integers(2, 5))
    nodes = [
        make_node()
        .name(f"n{i}")
        .hostname()
        .zone(draw(st.sampled_from("abc")))
        .allocatable(cpu="8", memory="16Gi", pods=str(draw(st.integers(3, 6))))
        .obj()
        for i in range(n)
    ]
    if draw(st.booleans()):
        nodes.append(make_node().name("nx").hostname().allocatable(pods="4").obj())
    objects: list[RawObj] = [*nodes]
    merged = draw(st.booleans())
    for app in APPS:
        key = draw(st.sampled_from([ZONE, HOSTNAME]))
        skew = draw(st.integers(1, 2))
        count = draw(st.integers(0, 5))
        hashed = draw(st.booleans())
        objects.append(scaled("ReplicaSet", app, count))
        for j in range(count):
            extra: dict[str, Any] = {"matchLabelKeys": [HASH]} if hashed else {}
            b = (
                make_pod()
                .name(f"{app}-{j}")
                .labels({"app": app, HASH: f"{app}-1"})
                .owner("ReplicaSet", app)
                .spread(skew, key, DNS, selector({"app": app}), **extra)
                .ready(draw(st.sampled_from(["True", "True", "False"])))
            )
            # Half of them on n0: skewed spreads, so plans have moves to make; some
            # unscheduled, some on the node without a zone.
            where = draw(st.one_of(st.just(0), st.integers(-1, len(nodes) - 1)))
            if where >= 0:
                b = b.node(nodes[where]["metadata"]["name"])
            else:
                b = b.phase("Pending")
            if draw(st.integers(0, 7)) == 0:
                b = b.terminating()
            if draw(st.integers(0, 3)) == 0:
                b = b.annotation(COST, str(draw(st.integers(-3, 3))))
            pod = b.obj()
            if hashed and merged:
                pod["spec"]["topologySpreadConstraints"][0]["labelSelector"][
                    "matchExpressions"
                ] = [{"key": HASH, "operator": "In", "values": [f"{app}-1"]}]
            objects.append(pod)
        if draw(st.booleans()):
            objects.append(
                make_pod()
                .name(f"{app}-other")
                .labels({"app": app, HASH: "other"})
                .owner("ReplicaSet", f"{app}-other")
                .node(f"n{draw(st.integers(0, n - 1))}")
                .ready()
                .obj()
            )
        budget = draw(
            st.sampled_from(
                [None, {"max_unavailable": 0}, {"max_unavailable": 1}, {"min_available": 1},
                 {"min_available": "50%"}, {"max_unavailable": "50%"}]
            )
        )  # fmt: skip
        if budget is not None:
            objects.append(pdb(app, {"app": app}, **budget))
    for i in range(n):
        if draw(st.booleans()):
            objects.append(
                make_pod().name(f"agent-n{i}").node(f"n{i}").owner("DaemonSet", "agent").obj()
            )
    return objects


@SETTINGS
@given(clusters(), st.sampled_from("abcd"))
def test_an_outage_of_nodes_nobody_uses_changes_nothing(objects: list[RawObj], zone: str) -> None:
    """A node that runs no pod goes unreachable: nothing is evicted, recreated or pending,
    and (nodeTaintsPolicy unset) every spread is as it was."""
    spare = make_node().name("spare").hostname().zone(zone).label("spare", "yes").obj()
    state = ClusterState.from_objects([*objects, spare])
    drill = unreachable_nodes(state, parse_selector("spare=yes"))
    assert (drill.disrupted, drill.placed, drill.pending, drill.not_recreated) == ([], {}, [], [])
    assert evaluate(drill.state) == evaluate(state)


@SETTINGS
@given(clusters(), st.integers(0, 4))
def test_a_drained_node_keeps_only_daemonset_and_mirror_pods(
    objects: list[RawObj], which: int
) -> None:
    state = ClusterState.from_objects(objects)
    drill = drain_nodes(state, parse_selector(f"{HOSTNAME}=n{which}"))
    for name in drill.drained:
        left = [p for p in drill.state.running if p["spec"]["nodeName"] == name]
        assert all(node_bound(p) for p in left)
    # A node not reported drained holds a pod some budget refused to let go.
    where = {pod_key(p): p["spec"]["nodeName"] for p in state.running}
    for name in set(drill.removed) - set(drill.drained):
        assert any(where[key] == name for key in drill.blocked)
    event("a budget blocked the drain" if drill.blocked else "drained")


@SETTINGS
@given(clusters())
def test_no_plan_step_takes_a_budget_below_its_minimum(objects: list[RawObj]) -> None:
    """Carried out in order, each eviction once the previous replacement runs (Ready),
    every eviction of the plan is one the Eviction API allows at its turn."""
    state = ClusterState.from_objects(objects)
    plan = make_plan(state, evaluate(state), Settings())
    budgets = Budgets.from_state(state)
    pods = {pod_key(p): p for p in state.running}
    event(f"{'some' if plan.moves else 'no'} moves, plan complete: {plan.complete}")
    for move in plan.moves:
        assert budgets.blocker(pods[move.pod]) is None, move
        budgets.remove(move.pod)
        replacement = {**unbound(pods[move.pod]), "status": {"phase": "Running"}}
        budgets.add(replacement, healthy=True)


@SETTINGS
@given(clusters())
def test_a_complete_plan_applied_leaves_no_violation(objects: list[RawObj]) -> None:
    state = ClusterState.from_objects(objects)
    plan = make_plan(state, evaluate(state), Settings())
    if plan.complete:
        assert violations(applied(objects, plan)) == 0
