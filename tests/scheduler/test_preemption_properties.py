"""Properties of preemption, checked with hypothesis.

- PreFilterExtensions: PodTopologySpread's and InterPodAffinity's state after
  add_pod / remove_pod equals PreFilter run from scratch on the cluster with that
  pod bound / gone (and gives the same Filter verdict on every node);
- place() with preemption on (the grouped engine's verdicts, and the plugins that
  adding or removing pods cannot change taken from them) nominates the same node with
  the same victims as a node-by-node reference that runs every plugin.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.builders import HOSTNAME, ZONE, make_node, make_pod, pdb, with_affinity
from tests.scheduler.test_properties import (
    _incoming,
    _node_obj,
    _profile_cluster,
    constraint_st,
    profile_incoming_st,
    profile_node_st,
    profile_resident_st,
    reference_place,
)
from webhook.api.kube import RawObj
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.nominated import FilterHandle
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import CycleState
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.defaultpreemption import cycle_handle, first_failures, post_filter
from webhook.scheduler.plugins.defaultpreemption.plugin import CyclePreemption
from webhook.scheduler.plugins.interpodaffinity import filtering as ipa
from webhook.scheduler.plugins.interpodaffinity.common import ExistingTermsIndex
from webhook.scheduler.plugins.podtopologyspread import filtering as spread
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.profile import framework_of

# ---- PreFilterExtensions ------------------------------------------------------------

# (node index, namespace, labels, terminating, (anti, key, required) of its own term)
pod_st = st.tuples(
    st.integers(0, 5),
    st.sampled_from(["default", "default", "other"]),
    st.sampled_from([{"app": "a"}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {}]),
    st.booleans(),
    st.sampled_from([None, None, (True, HOSTNAME), (True, ZONE), (False, ZONE)]),
)
incoming_terms_st = st.sampled_from(
    [None, (True, HOSTNAME), (True, ZONE), (False, ZONE), (False, HOSTNAME)]
)


def _pod(j: int, spec: tuple[Any, ...], nodes: int) -> RawObj:
    idx, ns, labels, terminating, term = spec
    b = make_pod().name(f"r{j}").namespace(ns).labels(labels).node(f"n{idx % nodes}")
    pod = (b.terminating() if terminating else b).obj()
    if term:
        anti, key = term
        with_affinity(pod, "In", "app", key, ["a"], anti=anti, required=True)
    return pod


def _ipa_view(state: CycleState) -> Any:
    """What Filter reads of InterPodAffinity's state; None for a state that rules out
    nothing (PreFilter's Skip, or counts all gone without terms of its own)."""
    s = state.get(ipa.PRE_FILTER_STATE_KEY)
    if not isinstance(s, ipa.PreFilterState):
        return None
    if not (s.existing_anti_affinity_counts or s.affinity_terms or s.anti_affinity_terms):
        return None
    return (
        s.existing_anti_affinity_counts,
        s.affinity_counts,
        s.anti_affinity_counts,
        set(s.existing_keys),
        dict(s.anti_blocked),
        dict(s.existing_blocked),
        s.node_local,
    )


SPREAD = PodTopologySpread()


def _spread_of(state: CycleState) -> Any:
    """PodTopologySpread's PreFilterState in the cycle (or its PreFilter failure)."""
    return SPREAD.pre_filter_state(state)


def _fresh(incoming: RawObj, objs: list[RawObj]) -> tuple[Snapshot, CycleState, Any]:
    snap = Snapshot.from_objects(objs)
    state = CycleState()
    ipa.pre_filter(state, incoming, snap, ExistingTermsIndex())
    SPREAD.pre_filter(state, incoming, snap)
    return snap, state, _spread_of(state)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=6),
    st.lists(pod_st, min_size=1, max_size=12),
    profile_incoming_st,
    incoming_terms_st,
    st.integers(0, 11),
    st.booleans(),
)
def test_pre_filter_extensions_equal_a_fresh_pre_filter(
    nodes, pods, incoming_spec, terms, which, remove
) -> None:
    """With pod `which` removed from its node (or, when `remove` is false, first left out
    and then added), both plugins' state equals PreFilter run on the cluster as it then
    is, and Filter gives each node the same verdict.

    Left out, as upstream leaves it: a plugin whose PreFilter skipped is out of the
    cycle, so no AddPod reaches it (an added pod's anti-affinity against the incoming
    pod is then not seen; RunPreFilterExtensionAddPod skips such plugins)."""
    node_objs = [_node_obj(i, spec) for i, spec in enumerate(nodes)]
    residents = [_pod(j, spec, len(nodes)) for j, spec in enumerate(pods)]
    incoming = _incoming({**incoming_spec, "pod_affinity": None, "node_name": None})
    if terms:
        anti, key = terms
        with_affinity(incoming, "In", "app", key, ["a"], anti=anti, required=True)
    moved = residents[which % len(residents)]
    others = [p for p in residents if p is not moved]
    with_it, without_it = [*node_objs, *residents], [*node_objs, *others]
    start, end = (with_it, without_it) if remove else (without_it, with_it)
    snap, state, _ = _fresh(incoming, start)
    target = snap.nodes.get(moved["spec"]["nodeName"])
    if target is None:
        return  # its node is not in the cluster: nothing to update
    light = (
        next(p for p in target.pods if p["metadata"]["name"] == moved["metadata"]["name"])
        if remove
        else moved
    )
    change = (ipa.remove_pod, SPREAD.remove_pod) if remove else (ipa.add_pod, SPREAD.add_pod)
    ipa_ran = _ipa_view(state) is not None or isinstance(
        state.get(ipa.PRE_FILTER_STATE_KEY), ipa.PreFilterState
    )
    for extension in change:
        assert extension(state, incoming, light, target).ok
    after, want_state, want_spread = _fresh(incoming, end)
    if ipa_ran:
        assert _ipa_view(state) == _ipa_view(want_state)
        event("InterPodAffinity state updated")
    got_spread = _spread_of(state)
    if isinstance(want_spread, spread.PreFilterState) and want_spread.constraints:
        assert isinstance(got_spread, spread.PreFilterState)
        assert got_spread.tp_value_to_match_num == want_spread.tp_value_to_match_num
        assert got_spread.min_match_num == want_spread.min_match_num
        event("PodTopologySpread state updated")
        for info in after.nodes.values():
            assert spread.filter_node(got_spread, info) == spread.filter_node(want_spread, info)
    if ipa_ran and _ipa_view(want_state) is not None:
        for info in after.nodes.values():
            assert ipa.filter_node(state, info) == ipa.filter_node(want_state, info)


# ---- preemption: grouped equals node by node ------------------------------------------


def _counted(handle: FilterHandle) -> FilterHandle:
    """`handle`, telling hypothesis's statistics when the dry run's shortcuts decide."""
    fails_without, fits = handle.fails_without, handle.fits_with_nominated_pods

    def told_fails(*args: Any) -> bool:
        failed = fails_without(*args)
        if failed:
            event("shortcut: a node fails with its victims gone, told by state-only plugins")
        return failed

    def told_fits(*args: Any) -> bool:
        if args[3:] == (True,):
            event("shortcut: a reprieve that changes only the node")
        return fits(*args)

    handle.fails_without = told_fails  # type: ignore[method-assign]
    handle.fits_with_nominated_pods = told_fits  # type: ignore[method-assign]
    return handle


# Per resident: its priority, and its cpu request (large enough that evicting helps).
priorities_st = st.lists(
    st.tuples(st.sampled_from([0, 0, 100, 1000]), st.sampled_from(["500m", "1", "2", "3"])),
    min_size=16,
    max_size=16,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=16),
    priorities_st,
    profile_incoming_st,
    st.sampled_from([0, 500, 2000, 2000]),
    st.sampled_from([None, 0, 1]),
    st.sampled_from(["1", "3", "6", "6"]),
)
def test_preemption_equals_one_node_at_a_time(
    nodes, residents, priorities, incoming, priority, budget, cpu
) -> None:
    """The default profile on a cluster of pods of several priorities: place() nominates
    what a reference nominates that judges every node one by one (reference_place) and
    runs every filter plugin in each dry run; both the same when a budget guards
    app=a pods."""
    _preemption_equals_reference(nodes, residents, priorities, incoming, priority, budget, cpu)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=2, max_size=8),
    st.lists(profile_resident_st, min_size=6, max_size=16),
    priorities_st,
    profile_incoming_st,
    st.sampled_from([None, 0]),
    st.lists(constraint_st, min_size=1, max_size=2),
)
def test_preemption_on_a_full_cluster_equals_one_node_at_a_time(
    nodes, residents, priorities, incoming, budget, spread_constraints
) -> None:
    """The same, with the cluster crowded, the pod of the highest priority asking for
    most of a node and spreading: preemption (and the dry run's shortcuts, a node
    whose spread still fails once its victims are gone among them) on most examples."""
    incoming = {**incoming, "constraints": [*incoming["constraints"], *spread_constraints]}
    _preemption_equals_reference(nodes, residents, priorities, incoming, 2000, budget, "3")


def _preemption_equals_reference(
    nodes: Any, residents: Any, priorities: Any, incoming: Any, priority: int, budget: Any, cpu: str
) -> None:
    snap = Snapshot.from_objects(_crowded_cluster(nodes, residents, priorities, budget))
    fw = framework_of()
    pod = _incoming({**incoming, "node_name": None})
    pod["spec"]["priority"] = priority
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    got = place(pod, snap, framework=fw)
    want = reference_place(pod, snap, SpreadArgs(), fw)
    assert [v.feasible for v in got.nodes] == [v.feasible for v in want.nodes]
    expected = None
    if not want.feasible and fw.post_filter is not None:
        # The reference: every plugin run on every node, every step of the dry run.
        prepared = fw.filters.prepare(pod, snap)
        handle, state = cycle_handle(pod, snap, prepared, fw.filter_names)
        statuses = first_failures(want.nodes)
        expected, why = post_filter(fw.post_filter, handle, state, pod, statuses, False)
        # The dry run's shortcuts give the same answer, and the same reason when none.
        fast, _ = cycle_handle(pod, snap, fw.filters.prepare(pod, snap), fw.filter_names)
        assert post_filter(fw.post_filter, _counted(fast), state, pod, statuses) == (
            expected,
            why,
        )
    assert got.preemption == expected
    event("preempts" if expected is not None else "no preemption")
    event("feasible" if want.feasible else "infeasible")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=4),
    st.lists(pod_st, min_size=1, max_size=12),
    profile_incoming_st,
    incoming_terms_st,
    st.integers(0, 3),
    st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_removing_pods_at_once_equals_a_fresh_pre_filter(
    nodes, pods, incoming_spec, terms, at, chosen
) -> None:
    """remove_pods (every potential victim of a node at once, preemption's first step)
    leaves both plugins' state as PreFilter finds the cluster without those pods."""
    node_objs = [_node_obj(i, spec) for i, spec in enumerate(nodes)]
    residents = [_pod(j, spec, len(nodes)) for j, spec in enumerate(pods)]
    incoming = _incoming({**incoming_spec, "pod_affinity": None, "node_name": None})
    if terms:
        anti, key = terms
        with_affinity(incoming, "In", "app", key, ["a"], anti=anti, required=True)
    name = f"n{at % len(nodes)}"
    gone = [
        p
        for p, pick in zip(residents, chosen, strict=False)
        if pick and p["spec"]["nodeName"] == name
    ]
    snap, state, _ = _fresh(incoming, [*node_objs, *residents])
    target = snap.nodes[name]
    names = {p["metadata"]["name"] for p in gone}
    light = [p for p in target.pods if p["metadata"]["name"] in names]
    ipa_ran = isinstance(state.get(ipa.PRE_FILTER_STATE_KEY), ipa.PreFilterState)
    entries = list(state.values())
    assert ipa.remove_pods(state, incoming, light, target).ok
    assert SPREAD.remove_pods(state, incoming, light, target).ok
    after, want_state, want_spread = _fresh(
        incoming, [*node_objs, *(p for p in residents if p not in gone)]
    )
    if ipa_ran:
        assert _ipa_view(state) == _ipa_view(want_state)
    got_spread = _spread_of(state)
    if isinstance(want_spread, spread.PreFilterState) and want_spread.constraints:
        assert isinstance(got_spread, spread.PreFilterState)
        assert got_spread.tp_value_to_match_num == want_spread.tp_value_to_match_num
        assert got_spread.min_match_num == want_spread.min_match_num
        event("PodTopologySpread state updated" if light else "nothing removed")
    if all(a is b for a, b in zip(entries, state.values(), strict=True)):
        # types.RemovePods: a bulk removal that left every entry as it was means no
        # one of those pods counts: adding any one of them back leaves them too.
        event("no removed pod counts")
        for one in light:
            scratch = CycleState(state)
            assert ipa.add_pod(scratch, incoming, one, target).ok
            assert SPREAD.add_pod(scratch, incoming, one, target).ok
            assert all(a is b for a, b in zip(entries, scratch.values(), strict=True))


# ---- the dry run on one node: its fast paths equal the plain one ----------------------


def _crowded_cluster(nodes: Any, residents: Any, priorities: Any, budget: Any) -> list[RawObj]:
    """The cluster _preemption_equals_reference builds: every resident on a node, with
    its priority and cpu request, and a budget guarding app=a pods when asked."""
    # Nodes that hold pods (cordoned ones and ones without allocatable seldom preempt).
    nodes = [
        {**n, "unschedulable": False, "allocatable": n["allocatable"] or ("4", "10")} for n in nodes
    ]
    objs = _profile_cluster(nodes, residents)
    for obj, (value, request) in zip(
        (o for o in objs if o["kind"] == "Pod"), priorities, strict=False
    ):
        obj["spec"]["priority"] = value
        obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": request}}
        # Every resident on a node of the cluster: victims to choose from.
        at = int(obj["spec"]["nodeName"][1:]) % len(nodes)
        obj["spec"]["nodeName"] = f"n{at}"
    if budget is not None:
        objs.append(pdb("guard", {"app": "a"}, budget))
    return objs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=6),
    st.lists(profile_resident_st, min_size=4, max_size=16),
    priorities_st,
    profile_incoming_st,
    st.sampled_from([None, 0]),
    st.sampled_from(["1", "3", "3"]),
)
def test_select_victims_on_node_fast_paths_equal_the_plain_one(
    nodes, residents, priorities, incoming, budget, cpu
) -> None:
    """On every node, SelectVictimsOnNode with the shortcuts (the copy made without the
    victims, NodeInfo.without; a reprieve taking back the pod it put back, remove_last;
    InterPodAffinity's Filter not run again where no PreFilter state changed) gives the victims, the
    budget violations and the status the plain path gives, which copies the node, runs
    every plugin and every step."""
    objs = _crowded_cluster(nodes, residents, priorities, budget)
    snap = Snapshot.from_objects(objs)
    fw = framework_of()
    assert fw.post_filter is not None
    pod = _incoming({**incoming, "node_name": None})
    pod["spec"]["priority"] = 2000
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    got = place(pod, snap, framework=fw)
    known = {v.name: v.filters for v in got.nodes}
    fast, state = cycle_handle(pod, snap, fw.filters.prepare(pod, snap), fw.filter_names, known)
    plain, plain_state = cycle_handle(pod, snap, fw.filters.prepare(pod, snap), fw.filter_names)
    node_filters = fast.node_filters

    def told(node: Any) -> Any:
        checks = node_filters(node)
        if checks is not None:
            event("a reprieve runs the node's filters only")
            if len(checks) < len(fast._dynamic_filters):
                event("a filter reading the pods through its state skipped")
        return checks

    fast.node_filters = told  # type: ignore[method-assign]
    pdbs = snap.listed("PodDisruptionBudget")
    for info in snap.node_table().infos:
        before = (list(info.pods), dict(info.requested), info.generation)
        want = CyclePreemption(fw.post_filter, plain, False).select_victims_on_node(
            CycleState(plain_state), pod, info, pdbs
        )
        have = CyclePreemption(fw.post_filter, fast, True).select_victims_on_node(
            CycleState(state), pod, info, pdbs
        )
        assert have == want
        assert (info.pods, info.requested, info.generation) == before  # a copy changed
        event("victims" if want[0] else "no victims")


# (add the pod back, or take back the pod added last, or remove any pod) per step
steps_st = st.lists(st.tuples(st.sampled_from(["add", "last", "remove"]), st.integers(0, 15)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["100m", "1", "2"]), min_size=1, max_size=8),
    st.lists(st.booleans(), min_size=8, max_size=8),
    steps_st,
)
def test_node_copy_without_pods_equals_a_copy_then_remove_pods(cpus, gone, steps) -> None:
    """NodeInfo.without(pods) equals snapshot() then remove_pods(pods), and stays equal
    through any add_pod / remove_last / remove_pod after it (pods, their order, sums,
    and lookups by key); the node copied is left as it was."""
    objs = [make_node().name("n0").obj()] + [
        make_pod().name(f"p{i}").node("n0").requests(cpu=cpu).obj() for i, cpu in enumerate(cpus)
    ]
    snap = Snapshot.from_objects(objs)
    info = snap.nodes["n0"]
    pods = list(info.pods)
    victims = [p for p, g in zip(pods, gone, strict=False) if g]
    amounts = [snap.requests_of(p) for p in victims]
    before = (list(info.pods), dict(info.requested), dict(info.non_zero_requested))
    fast = info.without(victims, amounts)
    plain = info.snapshot()
    plain.remove_pods(victims, amounts)
    assert (info.pods, info.requested, info.non_zero_requested) == before
    for which, i in steps:
        p = pods[i % len(pods)]
        amount = snap.requests_of(p)
        held = any(q is p for q in fast.pods)
        if which == "add" and not held:
            fast.add_pod(p, *amount)
            plain.add_pod(p, *amount)
        elif which == "last" and fast.pods:
            last = fast.pods[-1]
            fast.remove_last(last, *snap.requests_of(last))
            plain.remove_pod(last, *snap.requests_of(last))
        elif which == "remove" and held:
            fast.remove_pod(p, *amount)
            plain.remove_pod(p, *amount)
        assert fast.pods == plain.pods
        assert fast.requested == plain.requested
        assert fast.non_zero_requested == plain.non_zero_requested
    assert fast._slot_map() == plain._slot_map()
    assert (info.pods, info.requested, info.non_zero_requested) == before


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=2, max_size=6),
    st.lists(profile_resident_st, min_size=6, max_size=16),
    priorities_st,
    profile_incoming_st,
    st.sampled_from([None, 0]),
    st.lists(st.tuples(st.integers(0, 15), st.sampled_from([0, 100, 1000, 3000])), max_size=3),
)
def test_victims_remembered_across_decisions_equal_the_plain_path(
    nodes, residents, priorities, incoming, budget, changes
) -> None:
    """The plugin remembers each node's potential victims across decisions (victims_memo,
    while the node's generation holds): decisions repeated on one snapshot, with pods
    deleted or their priority changed in between, nominate what the plain path (no
    shortcut, nothing remembered) nominates on the snapshot as it then is."""
    objs = _crowded_cluster(nodes, residents, priorities, budget)
    snap = Snapshot.from_objects(objs)
    fw = framework_of()
    assert fw.post_filter is not None
    pod = _incoming({**incoming, "node_name": None})
    pod["spec"]["priority"] = 2000
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    residents_now = [o for o in objs if o["kind"] == "Pod"]

    def decide(shortcuts: bool) -> Any:
        got = place(pod, snap, framework=fw)
        if got.feasible:
            return None
        known = {v.name: v.filters for v in got.nodes} if shortcuts else None
        prepared = fw.filters.prepare(pod, snap)
        handle, state = cycle_handle(pod, snap, prepared, fw.filter_names, known)
        statuses = first_failures(got.nodes)
        assert fw.post_filter is not None
        return post_filter(fw.post_filter, handle, state, pod, statuses, shortcuts)

    for i, priority in [(None, None), *changes]:
        if i is not None and residents_now:
            victim = residents_now[i % len(residents_now)]
            if priority == 3000:
                snap.delete(victim)
                residents_now.remove(victim)
            else:
                changed = {**victim, "spec": {**victim["spec"], "priority": priority}}
                snap.upsert(changed)
                residents_now[residents_now.index(victim)] = changed
        first = decide(True)
        if fw.post_filter.victims_memo:
            event("potential victims remembered")
        assert decide(True) == first == decide(False)


def _swap_namespaces(spec: tuple[Any, ...]) -> tuple[Any, ...]:
    """A pod_st pod in "other" where it was in "default" and the other way round."""
    return (spec[0], "default" if spec[1] == "other" else "other", *spec[2:])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=2),
    st.lists(pod_st.map(_swap_namespaces), min_size=4, max_size=12),
    profile_incoming_st,
    incoming_terms_st,
    st.integers(0, 3),
    st.lists(st.booleans(), min_size=12, max_size=12),
    st.lists(constraint_st, min_size=1, max_size=2),
)
def test_removing_pods_at_once_from_another_namespace_equals_a_fresh_pre_filter(
    nodes, pods, incoming_spec, terms, at, chosen, spread_constraints
) -> None:
    """remove_pods with the incoming pod outside "default" (where only the pods naming
    its namespace count for PodTopologySpread, and InterPodAffinity's terms select its
    namespace unless they say otherwise): both plugins' state as PreFilter finds the
    cluster without those pods; PodTopologySpread's the same for the pods as a tuple,
    whose counted labels it remembers."""
    node_objs = [_node_obj(i, spec) for i, spec in enumerate(nodes)]
    residents = [_pod(j, spec, len(nodes)) for j, spec in enumerate(pods)]
    incoming = _incoming(
        {**incoming_spec, "constraints": spread_constraints, "pod_affinity": None}
        | {"node_name": None}
    )
    incoming["metadata"]["namespace"] = "other"
    if terms:
        anti, key = terms
        with_affinity(incoming, "In", "app", key, ["a"], anti=anti, required=True)
    name = f"n{at % len(nodes)}"
    names = {
        p["metadata"]["name"]
        for p, pick in zip(residents, chosen, strict=False)
        if pick and p["spec"]["nodeName"] == name
    }
    snap, state, before = _fresh(incoming, [*node_objs, *residents])
    target = snap.nodes[name]
    light = [p for p in target.pods if p["metadata"]["name"] in names]
    ipa_ran = isinstance(state.get(ipa.PRE_FILTER_STATE_KEY), ipa.PreFilterState)
    # The same pods as a tuple, twice (the second time read as remembered), on copies.
    as_tuple = tuple(light)
    remembered = [CycleState(state), CycleState(state)]
    for scratch in remembered:
        assert SPREAD.remove_pods(scratch, incoming, as_tuple, target).ok
    assert ipa.remove_pods(state, incoming, light, target).ok
    assert SPREAD.remove_pods(state, incoming, light, target).ok
    for scratch in remembered:
        assert _spread_of(scratch) == _spread_of(state)
    kept = [p for p in residents if p["metadata"]["name"] not in names]
    _, want_state, want_spread = _fresh(incoming, [*node_objs, *kept])
    if ipa_ran:
        assert _ipa_view(state) == _ipa_view(want_state)
    got_spread = _spread_of(state)
    if isinstance(want_spread, spread.PreFilterState) and want_spread.constraints:
        assert isinstance(got_spread, spread.PreFilterState)
        assert got_spread.tp_value_to_match_num == want_spread.tp_value_to_match_num
        assert got_spread.min_match_num == want_spread.min_match_num
        if got_spread.tp_value_to_match_num != before.tp_value_to_match_num:
            event("PodTopologySpread counts moved")
    if ipa_ran and light:
        event("InterPodAffinity state checked after a removal")
