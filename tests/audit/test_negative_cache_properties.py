"""The drills' queue remembers the pods that fit nowhere (a negative cache): a twin of
such a pod is not tried again until a placement its queueing hint says may help, or
that binds a pod it could preempt. Held to the queue that tries every pod, on small
random clusters, unsampled and sampled seed for seed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.audit.test_drill_properties import SETTINGS, clusters
from tests.builders import ZONE
from webhook.api.labels import parse_selector
from webhook.audit.drills.nodes import drain_nodes, unreachable_nodes
from webhook.audit.drills.outcome import Replacer, without_nodes
from webhook.audit.state.inventory import ClusterState
from webhook.config import SamplingOptions, Settings

RawObj = dict[str, Any]
DRILLS = {"without": without_nodes, "unreachable": unreachable_nodes, "drain": drain_nodes}


def _outcome(drill: Any) -> tuple[Any, ...]:
    return (drill.placed, drill.pending, drill.reasons, drill.preempted)


@SETTINGS
@given(
    clusters(),
    st.sampled_from("abc"),
    st.sampled_from(sorted(DRILLS)),
    st.sampled_from([None, 0, 1, 2]),
)
def test_the_negative_cache_changes_no_answer(
    objects: list[RawObj], zone: str, name: str, seed: int | None
) -> None:
    """With and without the negative cache, a drill places, leaves pending and preempts
    the same pods, with the same reasons (seed None: unsampled)."""
    state = ClusterState.from_objects(objects)
    sampling = SamplingOptions(None, seed) if seed is not None else None
    settings = Settings(sampling=sampling)
    selector = parse_selector(f"{ZONE}={zone}")
    cached = DRILLS[name](state, selector, settings)
    try:
        Replacer.negative_cache = False
        plain = DRILLS[name](state, selector, settings)
    finally:
        Replacer.negative_cache = True
    assert _outcome(cached) == _outcome(plain)
    event("some pending" if plain.pending else "all placed")


@pytest.mark.parametrize("seed", [None, 3])
def test_twins_that_fit_nowhere_are_answered_from_the_first(seed: int | None) -> None:
    """Three replicas of a pod too big for any node: one cycle runs, the twins share
    its reasons (counted through the queue's attempts)."""
    from tests.builders import make_node, make_pod

    nodes = [
        make_node().name(f"n{i}").zone(z).allocatable(cpu="1", memory="1Gi", pods="10").obj()
        for i, z in enumerate("aabc")
    ]
    big = [
        make_pod().name(f"big-{i}").owner("ReplicaSet", "big").node("n0").requests(cpu="900m").obj()
        for i in range(1)
    ]
    others = [
        make_pod().name(f"w-{i}").owner("ReplicaSet", "w").node("n1").requests(cpu="2").obj()
        for i in range(3)
    ]
    state = ClusterState.from_objects([*nodes, *big, *others])
    sampling = SamplingOptions(None, seed) if seed is not None else None
    calls: list[str] = []
    attempt = Replacer._attempt

    def counted(self: Replacer, key: str, fresh: RawObj) -> RawObj | None:
        calls.append(key)
        return attempt(self, key, fresh)

    Replacer._attempt = counted  # type: ignore[method-assign]
    try:
        drill = without_nodes(state, parse_selector(f"{ZONE}=a"), Settings(sampling=sampling))
    finally:
        Replacer._attempt = attempt  # type: ignore[method-assign]
    assert sorted(drill.pending) == ["default/w-0", "default/w-1", "default/w-2"]
    assert len({tuple(sorted(r.items())) for r in drill.reasons.values()}) == 1
    assert calls.count("default/w-0") == 1
    assert "default/w-1" not in calls and "default/w-2" not in calls
