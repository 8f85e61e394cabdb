"""Properties of sampling and of the fast paths beside it, checked with hypothesis.

- simulate's copies after the first (selected_node, the weighted sums alone) land where
  place() puts them, seed for seed, and leave the run's sampler (start index, random
  source) where place() leaves it;
- PostFilter's shortcut (no bound pod of lower priority: no victim anywhere) answers
  what the whole dry run answers, and in a sampled run draws what it draws;
- the snapshot's lowest priority follows binds, removals and copies;
- selectHost over a scan (select_sampled_host) keeps the node Sampler.pick keeps over
  the scanned nodes in the scan's order, seed for seed.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.builders import make_pod
from tests.scheduler.test_preemption_properties import priorities_st
from tests.scheduler.test_properties import (
    _incoming,
    _profile_cluster,
    profile_incoming_st,
    profile_node_st,
    profile_resident_st,
)
from webhook.scheduler.framework.sampling import Scan
from webhook.scheduler.framework.snapshot import PRIORITY_CEILING, Snapshot
from webhook.scheduler.placement import Placement, Sampler, place, settle, simulate
from webhook.scheduler.profile import framework_of
from webhook.scheduler.schedule_one import (
    Sampled,
    find_nodes_that_fit_pod,
    prioritize_nodes,
    run_post_filter_plugins,
    select_host,
    select_sampled_host,
    with_nominated_pods,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _cluster(nodes: Any, residents: Any, priorities: Any) -> Snapshot:
    nodes = [{**n, "allocatable": n["allocatable"] or ("4", "10")} for n in nodes]
    objs = _profile_cluster(nodes, residents)
    for obj, (value, request) in zip(
        (o for o in objs if o["kind"] == "Pod"), priorities, strict=False
    ):
        obj["spec"]["priority"] = value
        obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": request}}
        obj["spec"]["nodeName"] = f"n{int(obj['spec']['nodeName'][1:]) % len(nodes)}"
    return Snapshot.from_objects(objs)


@SETTINGS
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=12),
    priorities_st,
    profile_incoming_st,
    st.integers(0, 2**16),
    st.sampled_from([None, 0, 50, 100]),
    st.integers(1, 5),
    st.booleans(),
)
def test_copies_after_the_first_land_where_place_puts_them(
    nodes, residents, priorities, incoming, seed, percentage, replicas, alike
) -> None:
    """simulate (place() for the first copy, selected_node for the others) and place()
    for every copy, each with a sampler of the same seed: the same nodes, the same
    sampler state after. `alike`: every node as the first, in zones a-c, and no pod
    running (ties to draw on most examples)."""
    if alike:
        nodes = [{**nodes[0], "zone": "abc"[i % 3]} for i in range(len(nodes))]
        residents = []
    snap = _cluster(nodes, residents, priorities)
    pod = _incoming({**incoming, "node_name": None})
    pod["spec"]["priority"] = 500
    fw = framework_of()
    fast = Sampler(percentage, seed)
    got = simulate(pod, snap, replicas=replicas, framework=fw, sampler=fast)
    plain = Sampler(percentage, seed)
    work = snap.copy()
    want: list[str | None] = []
    for i in range(replicas):
        name = "web" if i == 0 else f"web-{i + 1}"
        copy = {**pod, "metadata": {**pod["metadata"], "name": name}}
        decision: Placement = place(copy, work, framework=fw, sampler=plain)
        node, _ = settle(decision, work)
        want.append(node)
        if node is not None:
            work.add_pod(copy, node)
    assert got.placements == want
    assert fast.next_start == plain.next_start
    assert fast.rng.getstate() == plain.rng.getstate()
    event("ties drawn" if got.first.tied_nodes and len(got.first.tied_nodes) > 1 else "no tie")


@SETTINGS
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, min_size=4, max_size=12),
    priorities_st,
    profile_incoming_st,
    st.sampled_from([0, 100, 1000, 2000]),
    st.sampled_from(["1", "3", "6"]),
    st.booleans(),
)
def test_post_filter_shortcut_equals_the_dry_run(
    nodes, residents, priorities, incoming, priority, cpu, sampled
) -> None:
    """No bound pod below the pod's priority: PostFilter answers at once what the whole
    dry run answers (None), and a sampled run's random source ends where it would."""
    snap = _cluster(nodes, residents, priorities)
    pod = _incoming({**incoming, "node_name": None})
    pod["spec"]["priority"] = priority
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    fw = framework_of()
    fit = with_nominated_pods(pod, snap, fw, find_nodes_that_fit_pod(pod, snap, fw))
    verdicts = select_host(fit, prioritize_nodes(fw, snap, fit)).verdicts
    one, two = (Sampler(0, 7), Sampler(0, 7)) if sampled else (None, None)
    fast = run_post_filter_plugins(pod, snap, fw, fit, verdicts, one, shortcut=True)
    full = run_post_filter_plugins(pod, snap, fw, fit, verdicts, two, shortcut=False)
    assert fast == full
    if one is not None and two is not None:
        assert one.rng.getstate() == two.rng.getstate()
    floor = snap.lowest_priority()
    event("no victim possible" if floor is not None and floor[0] >= priority else "victims")
    event("preempts" if full is not None else "no preemption")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["bind", "bind", "remove", "copy"]),
            st.integers(0, 5),
            st.sampled_from([None, "class", -5, 0, 0, 100, 2**30]),
        ),
        max_size=30,
    )
)
def test_lowest_priority_follows_binds_and_removals(steps: list[Any]) -> None:
    """lowest_priority is the minimum spec.priority stored by the bound pods (the
    ceiling when none stores one) and whether some store none and name no class; None
    while one names a class without a stored priority."""
    snap = Snapshot()
    bound: dict[str, int | str | None] = {}
    for op, j, value in steps:
        name = f"p{j}"
        if op == "bind":
            b = make_pod().name(name).node("n0")
            if value == "class":
                b = b.priority_class("low")
            elif value is not None:
                b = b.priority(value)
            snap.upsert(b.obj())
            bound[name] = value
        elif op == "remove":
            snap.delete({"kind": "Pod", "metadata": {"namespace": "default", "name": name}})
            bound.pop(name, None)
        else:
            snap = snap.copy()
        if "class" in bound.values():
            assert snap.lowest_priority() is None
        else:
            values = [v for v in bound.values() if isinstance(v, int)]
            defaulted = None in bound.values()
            assert snap.lowest_priority() == (min(values, default=PRIORITY_CEILING), defaulted)


@SETTINGS
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
    st.integers(0, 2**16),
)
def test_select_sampled_host_keeps_what_pick_keeps(sums_found, rnd, seed) -> None:
    """The scanned nodes met in any order with any sums (few values: many ties): the
    node select_sampled_host keeps and the random source after it are those of
    Sampler.pick over the names and sums in the scan's order."""
    positions = sorted(rnd.sample(range(100), len(sums_found)))
    found = list(positions)
    rnd.shuffle(found)
    names = [f"n{i}" for i in range(100)]
    total = dict(zip(found, sums_found, strict=True))
    scan = Scan(found, len(found), 0, len(found), 100, 0)
    fast, plain = Sampler(0, seed), Sampler(0, seed)
    sums = [total[p] for p in positions]
    got = select_sampled_host(Sampled(scan, positions, None), names, sums, fast)
    assert got == plain.pick([names[p] for p in found], sums_found)
    assert fast.rng.getstate() == plain.rng.getstate()
