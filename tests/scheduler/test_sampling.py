"""place() and simulate() sampling as kube-scheduler samples (framework/sampling.py):
only the nodes the scan finds are scored, ties drawn from the run's seed, the nominated
node first, preemption's random offset; and nothing changes without a sampler."""

from __future__ import annotations

from tests.builders import make_node, make_pod
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import Sampler, place, simulate
from webhook.scheduler.profile import framework_of


def _cluster(count: int, zones: int = 3, roomy: str = "") -> Snapshot:
    """`count` nodes of 4 CPUs named n000.., zones round robin; `roomy` has 64 CPUs."""
    nodes = [
        make_node()
        .name(f"n{i:03d}")
        .zone(f"z{i % zones}")
        .hostname()
        .allocatable(cpu="64" if f"n{i:03d}" == roomy else "4", memory="8Gi", pods="110")
        .obj()
        for i in range(count)
    ]
    return Snapshot.from_objects(nodes)


def _pod(name: str = "web") -> dict:
    return make_pod().name(name).label("app", "web").requests(cpu="100m").obj()


def test_without_a_sampler_nothing_changes() -> None:
    """No sampler, or one for a profile that sets no percentage while not forced: every
    node scored, the best node first by name, no `sampling` key."""
    snap = _cluster(300)
    plain = place(_pod(), snap)
    idle = place(_pod(), snap, sampler=Sampler(always=False))
    assert plain.selected_node == idle.selected_node == "n000"
    assert len(plain.tied_nodes) == 300
    assert plain.to_json() == idle.to_json()
    assert "sampling" not in plain.to_json()
    runs = simulate(_pod(), snap, replicas=4, sampler=Sampler(always=False))
    assert runs.placements == simulate(_pod(), snap, replicas=4).placements


def test_only_the_nodes_found_are_scored() -> None:
    """300 nodes, adaptive: the scan keeps 144 feasible nodes from index 0 of the tree's
    order (zones interleaved), scores them alone, draws the node among them; the next
    cycle starts where this one stopped."""
    snap = _cluster(300)
    sampler = Sampler(0, seed=0)
    decision = place(_pod(), snap, sampler=sampler)
    sampling = decision.sampling
    assert sampling is not None
    assert (sampling.num_to_find, sampling.start, sampling.processed) == (144, 0, 144)
    assert sampling.scored[:4] == ("n000", "n001", "n002", "n003")
    assert decision.selected_node in sampling.scored
    scored = {n.name for n in decision.nodes if n.scores}
    assert scored == set(sampling.scored)
    assert sorted(decision.tied_nodes) == sorted(sampling.scored)
    assert sampler.next_start == 144
    assert place(_pod(), snap, sampler=sampler).sampling.start == 144  # type: ignore[union-attr]


def test_a_better_node_outside_the_scan_is_not_seen() -> None:
    """The roomiest node wins when every node is scored, but a cycle whose scan stops
    before it never scores it; the cycle after, starting past the first, finds it."""
    snap = _cluster(200, roomy="n150")
    assert place(_pod(), snap).selected_node == "n150"
    sampler = Sampler(0)
    first = place(_pod(), snap, sampler=sampler)
    assert first.sampling is not None and "n150" not in first.sampling.scored
    assert first.selected_node != "n150"
    second = place(_pod(), snap, sampler=sampler)
    assert second.selected_node == "n150"


def test_the_same_seed_gives_the_same_run_and_seeds_differ() -> None:
    """simulate --seed: the copies land on the same nodes for a seed; other seeds spread
    the ties elsewhere; place() and the fast path of later copies draw alike."""
    snap = _cluster(300)
    runs = [simulate(_pod(), snap, replicas=6, sampler=Sampler(0, seed=s)) for s in (1, 1, 2)]
    assert runs[0].placements == runs[1].placements
    assert runs[0].placements != runs[2].placements
    assert runs[0].first.selected_node == runs[0].placements[0]
    # the first copy's place() and a later copy's selected_node() use the same draws
    again = Sampler(0, seed=1)
    assert place(_pod(), snap, sampler=again).selected_node == runs[0].placements[0]


def test_the_nominated_node_is_tried_first() -> None:
    """A pod nominated to a node that passes every filter goes there without a scan
    (the start index does not move); nominated to a node that does not fit, it scans."""
    snap = _cluster(300)
    sampler = Sampler(0)
    pod = make_pod().name("p").requests(cpu="100m").nominated_node("n299").obj()
    decision = place(pod, snap, sampler=sampler)
    assert decision.selected_node == "n299"
    assert decision.sampling is not None and decision.sampling.nominated == "n299"
    assert sampler.next_start == 0
    big = make_pod().name("q").requests(cpu="5").nominated_node("n299").obj()
    assert place(big, snap, sampler=sampler).selected_node is None


def test_preemption_starts_at_a_random_offset() -> None:
    """Five nodes alike, each full with one low-priority pod: without sampling the
    nomination is always the same node; sampled, the random offset spreads it."""
    nodes = [
        make_node().name(f"m{i}").allocatable(cpu="1", memory="1Gi", pods="10").obj()
        for i in range(5)
    ]
    victims = [
        make_pod().name(f"low{i}").node(f"m{i}").priority(0).requests(cpu="1").obj()
        for i in range(5)
    ]
    snap = Snapshot.from_objects([*nodes, *victims])
    pod = make_pod().name("high").priority(1000).requests(cpu="1").obj()
    plain = {place(pod, snap).preemption.node for _ in range(3)}  # type: ignore[union-attr]
    assert len(plain) == 1
    drawn = {
        place(pod, snap, sampler=Sampler(0, seed=s)).preemption.node  # type: ignore[union-attr]
        for s in range(30)
    }
    assert len(drawn) > 1


def _profile_percentage(cfg: dict) -> tuple[int | None, list[str]]:
    profiles, errors = resolve_configuration(cfg)
    return (profiles[0].percentage_of_nodes_to_score if profiles else None), errors


def test_percentage_of_nodes_to_score_in_the_configuration() -> None:
    """Global and per profile, the profile's winning; 0..100 as kube-scheduler checks."""
    assert _profile_percentage({}) == (None, [])
    assert _profile_percentage({"percentageOfNodesToScore": 30}) == (30, [])
    both = {"percentageOfNodesToScore": 30, "profiles": [{"percentageOfNodesToScore": 0}]}
    assert _profile_percentage(both) == (0, [])
    _, errors = _profile_percentage({"percentageOfNodesToScore": 101})
    assert errors == ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"]
    _, errors = _profile_percentage({"profiles": [{"percentageOfNodesToScore": -1}]})
    assert errors == [
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"
    ]


def test_a_profile_that_sets_a_percentage_samples() -> None:
    """A sampler without a percentage of its own and not forced samples with the
    profile's percentageOfNodesToScore (here 40 % of 300: 120 nodes)."""
    profiles, _ = resolve_configuration({"percentageOfNodesToScore": 40})
    fw = framework_of(profiles[0])
    decision = place(_pod(), _cluster(300), framework=fw, sampler=Sampler(always=False))
    assert decision.sampling is not None and decision.sampling.num_to_find == 120
