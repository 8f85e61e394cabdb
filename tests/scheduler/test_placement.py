"""place() across decisions: the verdict objects kept from one decision to the next."""

from __future__ import annotations

import pytest

from tests.builders import SA, ZONE, constraint, make_node, make_pod, selector
from tests.scheduler.frameworks import spread_only
from tests.scheduler.test_properties import _same_placement, reference_place
from webhook.scheduler import placement
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import place


@pytest.mark.parametrize("contents", [placement.MAX_CONTENTS, 1])
def test_verdicts_that_did_not_change_are_the_same_objects(
    monkeypatch: pytest.MonkeyPatch, contents: int
) -> None:
    """A decision on an unchanged cluster hands out the previous decision's verdicts;
    after a pod is bound, a node keeps its verdict object exactly when its verdict
    is unchanged (also when the numbering of verdict contents starts afresh)."""
    monkeypatch.setattr(placement, "MAX_CONTENTS", contents)
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
