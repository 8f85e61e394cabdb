"""place() across decisions: the verdict objects kept from one decision to the next."""

from __future__ import annotations

import pytest

from tests.builders import SA, ZONE, constraint, make_node, make_pod, selector
from tests.scheduler.frameworks import spread_only
from tests.scheduler.test_properties import _same_placement, reference_place
from webhook.scheduler import placement
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.runtime import filter as runtime_filter
from webhook.scheduler.framework.runtime import verdicts
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import place


@pytest.mark.parametrize("contents", [verdicts.MAX_CONTENTS, 1])
def test_verdicts_that_did_not_change_are_the_same_objects(
    monkeypatch: pytest.MonkeyPatch, contents: int
) -> None:
    """A decision on an unchanged cluster hands out the previous decision's verdicts;
    after a pod is bound, a node keeps its verdict object exactly when its verdict
    is unchanged (also when the numbering of verdict contents starts afresh)."""
    monkeypatch.setattr(verdicts, "MAX_CONTENTS", contents)
    nodes = [
        make_node().name(f"n{i}").zone(zone).hostname().obj()
        for i, zone in enumerate(["za", "zb", "za", "zc", "zb"])
    ]
    pods = [make_pod().name(f"r{j}").label("app", "web").node(f"n{j % 3}").obj() for j in range(4)]
    snap = Snapshot.from_objects([*nodes, *pods])
    fw = spread_only()
    pod = make_pod().name("web").label("app", "web")
    pod = pod.constraints([constraint(1, ZONE, SA, selector({"app": "web"}))]).obj()
    first = place(pod, snap, framework=fw)
    again = place(pod, snap, framework=fw)
    assert all(a is b for a, b in zip(first.nodes, again.nodes, strict=True))
    for n, node in enumerate(["n3", "n1", "n3"]):
        snap.add_pod({**pod, "metadata": {**pod["metadata"], "name": f"web-{n}"}}, node)
        after = place(pod, snap, framework=fw)
        _same_placement(after, reference_place(pod, snap, SpreadArgs(), fw))
        for before, now in zip(again.nodes, after.nodes, strict=True):
            assert (before is now) == (before == now)
        again = after


def test_looks_under_a_budget_read_no_node_key_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A node key that reads the pod (NodeResourcesFit's is its verdict) costs what
    judging the node costs and is not remembered when a budget cuts the reading short:
    under a budget the nodes are judged one by one instead, each judged node kept, so
    successive looks at a new pod shape always get further and end; without a budget
    the grouping is used as before."""
    from webhook.scheduler.framework import budget
    from webhook.scheduler.plugins.noderesources.fit import NodeResourcesFit
    from webhook.scheduler.profile import framework_of

    reads: list[str] = []
    node_key = NodeResourcesFit.node_key

    def counted(self, state, pod, node):  # type: ignore[no-untyped-def]
        reads.append(node.name)
        return node_key(self, state, pod, node)

    monkeypatch.setattr(NodeResourcesFit, "node_key", counted)
    nodes = [
        make_node().name(f"n{i}").zone("ab"[i % 2]).allocatable(cpu=str(1 + i % 4)).obj()
        for i in range(12)
    ]
    snapshot = Snapshot.from_objects(nodes)
    fw = framework_of()
    web = {"app": "web"}
    pod = (
        make_pod().name("web").labels(web).requests(cpu="2")
        .constraints([constraint(1, ZONE, "DoNotSchedule", selector(web))])
    ).obj()  # fmt: skip
    ticks = iter(range(10**6))
    monkeypatch.setattr(budget, "_clock", lambda: next(ticks))
    monkeypatch.setattr(runtime_filter, "CHUNK", 1)
    looks = 0
    while True:
        looks += 1
        assert looks <= 12
        try:
            with budget.within(4):
                why = placement.explain(pod, snapshot, framework=fw)
            break
        except budget.OutOfTime:
            continue
    assert looks > 1 and why is None
    assert reads == []
    other = make_pod().name("db").requests(cpu="3").obj()
    placement.feasible_nodes(other, snapshot, framework=fw)
    assert reads


@pytest.mark.parametrize("decide", ["place", "selected_node", "simulate"])
def test_a_decision_leaves_no_reference_cycle(decide: str) -> None:
    """Whatever a decision builds is freed by reference counting alone: the CLI turns
    cyclic GC off for long runs (a drill makes tens of thousands of decisions), so a
    cycle through the cycle state (the filter outcomes class-wise plugins read) would
    keep every decision's state until exit. The default profile, a zone spread and a
    node affinity (what PodTopologySpread's node inclusion reads from the runtime)."""
    import gc

    nodes = [make_node().name(f"n{i}").zone(z).hostname().obj() for i, z in enumerate("abab")]
    pods = [make_pod().name(f"r{j}").label("app", "web").node(f"n{j % 3}").obj() for j in range(3)]
    snap = Snapshot.from_objects([*nodes, *pods])
    pod = make_pod().name("web").label("app", "web").node_affinity_in(ZONE, "a", "b")
    pod = pod.constraints([constraint(1, ZONE, "DoNotSchedule", selector({"app": "web"}))]).obj()
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        if decide == "place":
            place(pod, snap)
        elif decide == "selected_node":
            placement.selected_node(pod, snap)
        else:
            placement.simulate(pod, snap, replicas=3)
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
