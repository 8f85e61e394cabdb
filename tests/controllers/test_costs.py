"""Deletion costs that keep a spread: for every number k of pods a ReplicaSet deletes,
lowest cost first and ties broken in any way, the skew left is the least any choice
of k of its pods could leave (checked against brute force on small cases), counted
as the scheduler counts; costs are int32 and stable.

Legend: a domain "f+w" holds f matching pods the ReplicaSet cannot delete (other
workloads') and w of its own."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import DNS, HOSTNAME, ZONE, make_node, make_pod, selector
from tests.clusters import examples
from webhook.audit.act.keeper import plan_writes
from webhook.audit.measure.costs import all_costs
from webhook.audit.measure.spread import spread_of
from webhook.audit.state.inventory import ClusterState
from webhook.config import Settings
from webhook.controllers.costs import (
    COST_ANNOTATION,
    INT32_MAX,
    MARK_ANNOTATION,
    Counted,
    costs_from_levels,
    levels,
    replicaset_costs,
    stack_order,
)
from webhook.scheduler.config.types import SpreadArgs

RawObj = dict[str, Any]
APP = selector({"app": "web"})


def skew(counts: Mapping[str, int], min_domains: int) -> int:
    """The constraint's skew as PreFilter computes it (global minimum 0 below minDomains)."""
    if not counts:
        return 0
    low = 0 if len(counts) < min_domains else min(counts.values())
    return max(counts.values()) - low


def best_skew(floors: Mapping[str, int], ours: Mapping[str, int], k: int, min_domains: int) -> int:
    """Brute force: the least skew over every way of deleting k of our pods."""
    domains = sorted(floors)
    best = None
    for taken in itertools.product(*(range(ours.get(d, 0) + 1) for d in domains)):
        if sum(taken) != k:
            continue
        left = {d: floors[d] + ours.get(d, 0) - t for d, t in zip(domains, taken, strict=True)}
        s = skew(left, min_domains)
        best = s if best is None else min(best, s)
    assert best is not None
    return best


def deletion_order(costs: Mapping[str, int], ties: Mapping[str, int]) -> list[str]:
    """Lowest cost first; among equal costs the order `ties` gives (adversarial)."""
    return sorted(costs, key=lambda key: (costs[key], ties[key]))


def least_of(floors: Mapping[str, int], ours: Mapping[str, int], min_domains: int) -> int:
    """The global minimum PreFilter computes (0 below minDomains)."""
    if len(floors) < min_domains or not floors:
        return 0
    return min(f + ours.get(d, 0) for d, f in floors.items())


def least_skew_by_costs(
    floors: Mapping[str, int], ours: Mapping[str, int], uncounted: int, k: int, min_domains: int
) -> int:
    """What the costs promise after k deletions, by brute force: with c counted pods
    above the global minimum, for k <= c + uncounted the least skew any k pods (counted
    or not) can leave; for larger k, the least among the choices that delete every
    uncounted pod (no order does better for every k: zones 1-1 and one uncounted pod)."""
    m = least_of(floors, ours, min_domains)
    above = sum(min(n, max(0, floors[d] + n - m)) for d, n in ours.items())
    spared = range(0, min(uncounted, k) + 1) if k <= above + uncounted else [uncounted]
    return min(
        best_skew(floors, ours, k - j, min_domains)
        for j in spared
        if 0 <= k - j <= sum(ours.values())
    )


def assert_least_skew_after_each_deletion(
    counted: Counted, gone: Sequence[str], min_domains: int
) -> None:
    """For every k, deleting the first k pods of `gone` leaves `counted`'s constraint
    the skew least_skew_by_costs promises."""
    ours: dict[str, int] = {}
    for d in counted.domain_of.values():
        ours[d] = ours.get(d, 0) + 1
    uncounted = sum(1 for key in gone if key not in counted.domain_of)
    for k in range(len(gone) + 1):
        left = {d: f + ours.get(d, 0) for d, f in counted.floors.items()}
        for key in gone[:k]:
            if key in counted.domain_of:
                left[counted.domain_of[key]] -= 1
        want = least_skew_by_costs(counted.floors, ours, uncounted, k, min_domains)
        assert skew(left, min_domains) == want, (k, left)


@st.composite
def single_constraint(draw: st.DrawFn) -> tuple[Counted, list[str], dict[str, int], int]:
    """A constraint over 1-4 domains, each f+w, 0-3 of our pods it does not count (a node
    outside its domains), our pods in a drawn stack order, a drawn tie-break and
    minDomains."""
    n = draw(st.integers(1, 4))
    floors = {f"d{i}": draw(st.integers(0, 3)) for i in range(n)}
    domain_of: dict[str, str] = {}
    for d in floors:
        for j in range(draw(st.integers(0, 4))):
            domain_of[f"{d}-p{j}"] = d
    free = [f"free-p{j}" for j in range(draw(st.integers(0, 3)))]
    order = draw(st.permutations(sorted([*domain_of, *free])))
    ties = dict(zip(order, draw(st.permutations(range(len(order)))), strict=True))
    min_domains = draw(st.integers(1, 5))
    ours: dict[str, int] = {}
    for d in domain_of.values():
        ours[d] = ours.get(d, 0) + 1
    least = least_of(floors, ours, min_domains)
    return Counted("zone", domain_of, floors, least), list(order), ties, min_domains


@examples(300)
@given(single_constraint())
def test_any_k_lowest_costs_leave_the_least_skew(
    case: tuple[Counted, list[str], dict[str, int], int],
) -> None:
    counted, order, ties, min_domains = case
    costs = costs_from_levels([levels(order, counted)], [counted.least])
    assert all(0 <= c <= INT32_MAX for c in costs.values())
    assert_least_skew_after_each_deletion(counted, deletion_order(costs, ties), min_domains)


@st.composite
def zones_and_hosts(draw: st.DrawFn) -> tuple[list[Counted], list[str], dict[str, int]]:
    """Zone then hostname: 1-3 zones of 1-3 hosts, each host f+w."""
    zone_of: dict[str, str] = {}
    host_of: dict[str, str] = {}
    host_floors: dict[str, int] = {}
    zone_floors: dict[str, int] = {}
    for z in range(draw(st.integers(1, 3))):
        zone = f"z{z}"
        zone_floors[zone] = 0
        for h in range(draw(st.integers(1, 3))):
            host = f"{zone}h{h}"
            host_floors[host] = draw(st.integers(0, 2))
            zone_floors[zone] += host_floors[host]
            for j in range(draw(st.integers(0, 3))):
                key = f"{host}-p{j}"
                zone_of[key], host_of[key] = zone, host
    # On nodes without the zone label: neither constraint counts them (PreFilter skips
    # a node missing any constraint's key).
    free = [f"free-p{j}" for j in range(draw(st.integers(0, 2)))]
    order = list(draw(st.permutations(sorted([*zone_of, *free]))))
    ties = dict(zip(order, draw(st.permutations(range(len(order)))), strict=True))
    zone_ours: dict[str, int] = {}
    host_ours: dict[str, int] = {}
    for key in zone_of:
        zone_ours[zone_of[key]] = zone_ours.get(zone_of[key], 0) + 1
        host_ours[host_of[key]] = host_ours.get(host_of[key], 0) + 1
    return (
        [
            Counted("zone", zone_of, zone_floors, least_of(zone_floors, zone_ours, 1)),
            Counted("host", host_of, host_floors, least_of(host_floors, host_ours, 1)),
        ],
        order,
        ties,
    )


@examples(200)
@given(zones_and_hosts())
def test_the_first_constraint_keeps_its_guarantee_under_a_second(
    case: tuple[list[Counted], list[str], dict[str, int]],
) -> None:
    """With zone then hostname, the zone skew after any k deletions is the least possible."""
    (zone, host), order, ties = case
    costs = costs_from_levels([levels(order, zone), levels(order, host)], [zone.least, host.least])
    assert_least_skew_after_each_deletion(zone, deletion_order(costs, ties), 1)


def test_equal_levels_across_domains_share_a_cost_and_a_domain_never_ties() -> None:
    """d0 "1+2", d1 "0+3": levels d0 2,3 and d1 1,2,3."""
    counted = Counted(
        "zone", {"a": "d0", "b": "d0", "x": "d1", "y": "d1", "z": "d1"}, {"d0": 1, "d1": 0}
    )
    lv = levels(["a", "b", "x", "y", "z"], counted)
    assert lv == {"a": 2, "b": 3, "x": 1, "y": 2, "z": 3}
    costs = costs_from_levels([lv])
    assert costs["b"] == costs["z"] < costs["a"] == costs["y"] < costs["x"]
    # Level 1, doubled (an uncounted pod's place is an odd number between).
    assert costs["x"] == INT32_MAX - 2


# Legend: "z 3+0 1+0 (2)" is a zone constraint whose domains hold 3 and 1 of our pods
# (no floors), 2 more of our pods on nodes outside every domain; `first` the pod the
# lowest cost names.
UNCOUNTED_CASES = [
    # The fullest zone's top pod lowers the skew (2 -> 1); the uncounted one would not.
    (
        "a pod on a node outside every domain goes after the fullest zone's",
        {"a0": "z0", "a1": "z0", "a2": "z0", "b0": "z1"},
        {"z0": 0, "z1": 0},
        ["free"],
        "a2",
    ),
    # Zones level (1-1): deleting a counted pod would raise the skew; the uncounted pod
    # leaves it at 0.
    (
        "a pod outside every domain goes first when the zones are level",
        {"a0": "z0", "b0": "z1"},
        {"z0": 0, "z1": 0},
        ["free"],
        "free",
    ),
    # Zones "0+2" and "1+1": counts 2 and 2, level: the uncounted pod first.
    (
        "floors count toward the minimum the uncounted pod is placed at",
        {"a0": "z0", "a1": "z0", "b0": "z1"},
        {"z0": 0, "z1": 1},
        ["free"],
        "free",
    ),
]


@pytest.mark.parametrize(
    ("domain_of", "floors", "free", "first"),
    [case[1:] for case in UNCOUNTED_CASES],
    ids=[case[0] for case in UNCOUNTED_CASES],
)
def test_where_pods_a_constraint_does_not_count_go(
    domain_of: dict[str, str], floors: dict[str, int], free: list[str], first: str
) -> None:
    """An uncounted pod goes after every counted pod above the global minimum and before
    the rest."""
    ours: dict[str, int] = {}
    for d in domain_of.values():
        ours[d] = ours.get(d, 0) + 1
    counted = Counted("zone", domain_of, floors, least_of(floors, ours, 1))
    order = [*sorted(domain_of), *free]
    costs = costs_from_levels([levels(order, counted)], [counted.least])
    assert min(costs, key=lambda key: (costs[key], key)) == first
    assert_least_skew_after_each_deletion(counted, deletion_order(costs, {k: 0 for k in costs}), 1)


def test_levels_beyond_their_bits_fall_back_to_ranks() -> None:
    """Two constraints give 15 bits each: a level of 40,000 overflows; order is kept."""
    zone = Counted("zone", {"a": "d0", "b": "d1"}, {"d0": 40_000, "d1": 0})
    host = Counted("host", {"a": "h0", "b": "h1"}, {"h0": 0, "h1": 0})
    costs = costs_from_levels([levels(["a", "b"], zone), levels(["a", "b"], host)])
    assert costs["a"] < costs["b"] and all(0 <= c <= INT32_MAX for c in costs.values())


def test_the_stack_puts_not_ready_then_newer_pods_on_top() -> None:
    def p(name: str, created: str, ready: str = "True") -> RawObj:
        out = make_pod().name(name).ready(ready).obj()
        out["metadata"]["creationTimestamp"] = created
        return out

    pods = [
        p("new", "2026-01-02T00:00:00Z"),
        p("old", "2026-01-01T00:00:00Z"),
        p("sick", "2025-01-01T00:00:00Z", "False"),
    ]
    assert stack_order(pods) == ["default/old", "default/new", "default/sick"]


# ---- through the scheduler's counting ----------------------------------------------------


def _node(name: str, zone: str | None) -> RawObj:
    b = make_node().name(name).hostname()
    return (b.zone(zone) if zone is not None else b).obj()


def _pod(name: str, node: str, rs: str, minute: int, min_domains: int | None) -> RawObj:
    extra = {} if min_domains is None else {"minDomains": min_domains}
    out = (
        make_pod()
        .name(name)
        .label("app", "web")
        .owner("ReplicaSet", rs)
        .node(node)
        .ready()
        .spread(1, ZONE, DNS, APP, **extra)
        .obj()
    )
    out["metadata"]["creationTimestamp"] = f"2026-01-01T00:{minute:02d}:00Z"
    return out


@st.composite
def small_clusters(draw: st.DrawFn) -> tuple[list[RawObj], list[RawObj], int | None]:
    """2-5 nodes in up to 3 zones (and maybe one without a zone), our ReplicaSet's 1-7
    pods and 0-4 other matching pods anywhere; some of ours carry a deletion cost
    somebody else set, and 0-2 more of ours are unscheduled or terminating (neither
    counted nor costed)."""
    zones = ["a", "b", "c"]
    nodes = [_node(f"n{i}", draw(st.sampled_from(zones))) for i in range(draw(st.integers(2, 5)))]
    unzoned = draw(st.booleans())
    if unzoned:
        nodes.append(_node("nx", None))
    every = [n["metadata"]["name"] for n in nodes]
    min_domains = draw(st.sampled_from([None, 2, 4]))
    ours = [
        _pod(f"web-{i}", draw(st.sampled_from(every)), "web-1", i, min_domains)
        for i in range(draw(st.integers(1, 7)))
    ]
    for p in ours:
        if draw(st.integers(0, 3)) == 0:
            p["metadata"]["annotations"] = {COST_ANNOTATION: str(draw(st.integers(-3, 3)))}
    for i in range(draw(st.integers(0, 2))):
        idle = _pod(f"web-idle-{i}", draw(st.sampled_from(every)), "web-1", 20 + i, min_domains)
        if draw(st.booleans()):
            del idle["spec"]["nodeName"]
            idle["status"] = {"phase": "Pending"}
        else:
            idle["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        ours.append(idle)
    others = [
        _pod(f"other-{i}", draw(st.sampled_from(every)), "other-1", 30 + i, min_domains)
        for i in range(draw(st.integers(0, 4)))
    ]
    return nodes, ours + others, min_domains


@examples(60)
@given(small_clusters(), st.randoms(use_true_random=False))
def test_the_scheduler_counts_the_least_skew_after_any_k_deletions(
    case: tuple[list[RawObj], list[RawObj], int | None], rnd: Any
) -> None:
    """The skew the scheduler's own PreFilter reports after deleting the k lowest-cost
    pods (ties shuffled) is what the costs promise (least_skew_by_costs), pods on the
    node without a zone included."""
    nodes, pods, _ = case
    state = ClusterState.from_objects([*nodes, *pods])
    running = {f"default/{p['metadata']['name']}" for p in state.running}
    ours = [
        p
        for p in pods
        if p["metadata"]["name"].startswith("web-")
        and f"default/{p['metadata']['name']}" in running
    ]
    if not ours:
        return
    costs = replicaset_costs(
        [p for p in state.running if p["metadata"]["name"].startswith("web-")],
        state.snapshot,
        SpreadArgs(),
    )
    assert set(costs) == {f"default/{p['metadata']['name']}" for p in ours}
    ties = {key: rnd.random() for key in costs}
    gone = deletion_order(costs, ties)
    before = spread_of(ours[0], state.snapshot)[0]
    min_domains = before.min_domains or 1
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE) for n in nodes}
    mine: dict[str, int] = {}
    uncounted = 0
    for p in ours:
        zone = zone_of[p["spec"]["nodeName"]]
        if zone is None:
            uncounted += 1
        else:
            mine[zone] = mine.get(zone, 0) + 1
    floors = {d: n - mine.get(d, 0) for d, n in before.domains.items()}
    for k in range(len(gone) + 1):
        kept = [p for p in pods if f"default/{p['metadata']['name']}" not in gone[:k]]
        after = ClusterState.from_objects([*nodes, *kept])
        probe = ours[0]
        entry = spread_of(probe, after.snapshot)[0]
        want = least_skew_by_costs(floors, mine, uncounted, k, min_domains)
        assert entry.skew == want, (k, entry.domains)


def test_a_scale_up_writes_only_the_new_pods_and_a_scale_down_none() -> None:
    """Zone spread "0+2 0+2 0+1" plus 3 newer pods: only those 3 costs are new; deleting
    the 3 lowest costs again gives back the first costs exactly."""
    nodes = [_node("a1", "a"), _node("b1", "b"), _node("c1", "c")]
    first = [
        _pod(f"web-{i}", n, "web-1", i, None) for i, n in enumerate(["a1", "a1", "b1", "b1", "c1"])
    ]
    added = [
        _pod(f"web-{5 + i}", n, "web-1", 5 + i, None) for i, n in enumerate(["c1", "a1", "b1"])
    ]

    def costs_of(pods: Sequence[RawObj]) -> dict[str, int]:
        state = ClusterState.from_objects([*nodes, *pods])
        return replicaset_costs(state.running, state.snapshot)

    before = costs_of(first)
    after = costs_of(first + added)
    assert {k for k in after if before.get(k) != after[k]} == {
        "default/web-5",
        "default/web-6",
        "default/web-7",
    }
    lowest = set(sorted(after, key=lambda key: after[key])[:3])
    assert costs_of(
        [p for p in first + added if f"default/{p['metadata']['name']}" not in lowest]
    ) == {k: v for k, v in after.items() if k not in lowest}


def test_no_constraint_no_costs() -> None:
    nodes = [_node("a1", "a")]
    pod = make_pod().name("p").owner("ReplicaSet", "rs").node("a1").obj()
    state = ClusterState.from_objects([*nodes, pod])
    assert replicaset_costs(state.running, state.snapshot) == {}


def test_a_hostname_constraint_counts_per_node() -> None:
    """Hosts "0+3 0+1": the three on a1 go before the one on b1 but for the last."""
    nodes = [_node("a1", "a"), _node("b1", "b")]
    pods = []
    for i, n in enumerate(["a1", "a1", "a1", "b1"]):
        p = _pod(f"web-{i}", n, "web-1", i, None)
        p["spec"]["topologySpreadConstraints"][0]["topologyKey"] = HOSTNAME
        pods.append(p)
    state = ClusterState.from_objects([*nodes, *pods])
    costs = replicaset_costs(state.running, state.snapshot)
    assert costs["default/web-2"] < costs["default/web-1"] < costs["default/web-0"]
    assert costs["default/web-0"] == costs["default/web-3"]


def _annotated(pods: Sequence[RawObj], costs: Mapping[str, int]) -> list[RawObj]:
    """The pods as the keeper leaves them: each costed pod carries its cost and mark."""
    out = []
    for p in pods:
        p = copy.deepcopy(p)
        cost = costs.get(f"default/{p['metadata']['name']}")
        if cost is not None:
            p["metadata"]["annotations"] = {
                COST_ANNOTATION: str(cost),
                MARK_ANNOTATION: str(cost),
            }
        out.append(p)
    return out


@examples(40)
@given(small_clusters(), st.integers(0, 3), st.randoms(use_true_random=False))
def test_stable_costs_an_unchanged_cluster_plans_nothing_and_k_new_pods_plan_k(
    case: tuple[list[RawObj], list[RawObj], int | None], k: int, rnd: Any
) -> None:
    """Once the keeper wrote the costs, the same cluster (listed in another order) plans
    no write; after k newer pods of the ReplicaSet land on zoned nodes, those k of its
    pods are planned, and of the others only some on the node without a zone."""
    nodes, pods, min_domains = case
    state = ClusterState.from_objects([*nodes, *pods])
    costs = all_costs(state, Settings())
    flat = {key: c for per in costs.values() for key, c in per.items()}
    kept = _annotated(pods, flat)
    rnd.shuffle(kept)
    again = ClusterState.from_objects([*nodes, *kept])
    assert plan_writes(
        again, {k2: c for per in all_costs(again, Settings()).values() for k2, c in per.items()}
    ) == ([], [])
    zoned = [n["metadata"]["name"] for n in nodes if n["metadata"]["name"] != "nx"]
    new = [_pod(f"web-new-{i}", rnd.choice(zoned), "web-1", 50 + i, min_domains) for i in range(k)]
    grown = ClusterState.from_objects([*nodes, *kept, *new])
    wanted = {k2: c for per in all_costs(grown, Settings()).values() for k2, c in per.items()}
    writes, foreign = plan_writes(grown, wanted)
    # Of the scaled ReplicaSet, the new pods, and maybe its pods on the node without a
    # zone (their place follows the global minimum, which new pods may raise); another
    # ReplicaSet matching the same selector sees its floors move (documented: its pods
    # in those domains).
    ours = {key for key, _ in writes if key.startswith("default/web-")}
    fresh = {f"default/web-new-{i}" for i in range(k)}
    unzoned = {
        f"default/{p['metadata']['name']}" for p in pods if p["spec"].get("nodeName") == "nx"
    }
    assert fresh <= ours <= fresh | unzoned
    assert foreign == []


def test_a_per_zone_numbering_that_ignores_other_workloads_is_not_enough() -> None:
    """Zones "2+1" and "0+2": numbering each zone's own pods (1, 2, ...) deletes in the
    second zone first (3-1, skew 2); counting the floor deletes in the first (2-2)."""
    counted = Counted("zone", {"a": "d0", "x": "d1", "y": "d1"}, {"d0": 2, "d1": 0})
    order = ["a", "x", "y"]
    ours = costs_from_levels([levels(order, counted)])
    naive = costs_from_levels([levels(order, Counted("zone", counted.domain_of, {}))])
    assert min(ours, key=lambda k: ours[k]) == "a"
    assert min(naive, key=lambda k: naive[k]) == "y"


def test_a_pod_on_a_node_without_the_zone_label_goes_after_the_fullest_zones() -> None:
    """Zones "0+3 0+1" and a pod on a node without the zone label: the ReplicaSet's
    first deletion takes zone a's newest pod (skew 2 -> 1), not the uncounted pod
    (skew stays 2); the second another of zone a's (skew 0); the uncounted pod then,
    before a deletion that would unbalance the zones again."""
    nodes = [_node("a1", "a"), _node("b1", "b"), _node("nx", None)]
    pods = [
        _pod(f"web-{i}", n, "web-1", i, None) for i, n in enumerate(["a1", "a1", "a1", "b1", "nx"])
    ]
    state = ClusterState.from_objects([*nodes, *pods])
    costs = replicaset_costs(state.running, state.snapshot)
    order = sorted(costs, key=lambda key: (costs[key], key))
    assert order[:3] == ["default/web-2", "default/web-1", "default/web-4"]
