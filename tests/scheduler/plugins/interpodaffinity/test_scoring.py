"""InterPodAffinity PreScore, Score and NormalizeScore, after upstream's scoring_test.go.

Legend: nodes "machine1" region China, "machine2" region India, "machine3" az az1
(upstream's labelRgChina / labelRgIndia / labelAzAz1); expectations are whole maps
of normalised scores, or SKIP when PreScore skips.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod, node, with_affinity
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, CycleState, Status
from webhook.scheduler.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs

RawObj = dict[str, Any]
_names = iter(range(10**9))

SECURITY = {"security": "S1"}
SCAN = {"service": "securityscan"}
NODES = [
    node("machine1", {"region": "China"}),
    node("machine2", {"region": "India"}),
    node("machine3", {"az": "az1"}),
]


def pod(labels: dict[str, str] | None = None, node_name: str | None = None) -> RawObj:
    b = make_pod().name(f"pod-{next(_names)}")
    if labels:
        b = b.labels(labels)
    if node_name:
        b = b.node(node_name)
    return b.obj()


def pref(
    p: RawObj, key: str, topo: str, values: list[str], weight: int, anti: bool = False
) -> RawObj:
    return with_affinity(p, "In", key, topo, values, anti=anti, required=False, weight=weight)


def run(
    incoming: RawObj, pods: list[RawObj], args: InterPodAffinityArgs | None = None
) -> dict[str, int] | Status:
    snapshot = Snapshot.from_objects([*NODES, *pods])
    plugin = InterPodAffinity(args or InterPodAffinityArgs())
    state = CycleState()
    infos = list(snapshot.nodes.values())
    status = plugin.pre_score(state, incoming, infos, snapshot)
    if not status.ok:
        return status
    scores = {}
    for info in infos:
        scores[info.name], s = plugin.score(state, incoming, info)
        assert s.ok
    assert plugin.normalize_score(state, incoming, scores).ok
    return scores


CASES: list[tuple[str, RawObj, list[RawObj], dict[str, int] | Status]] = [
    (
        "all nodes have same score, existing pods have no affinity",
        pod(SECURITY),
        [pod(SCAN, "machine1")],
        SKIP,
    ),
    (
        "Affinity: pod that matches topology key & pods in nodes will get high score comparing "
        "to others which doesn't match either pods in nodes or in topology key",
        pref(pod(SECURITY), "service", "region", ["securityscan", "value2"], 5),
        [pod(SCAN, "machine1"), pod({"security": "S2"}, "machine2"), pod(SECURITY, "machine3")],
        {"machine1": 100, "machine2": 0, "machine3": 0},
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score",
        pref(pod(SECURITY), "service", "region", ["securityscan", "value2"], 5, anti=True),
        [pod(SCAN, "machine1"), pod(SECURITY, "machine2")],
        {"machine1": 0, "machine2": 100, "machine3": 100},
    ),
    (
        "Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to "
        "schedule and existing pods have the same labels",
        pref(
            pref(pod(SECURITY), "security", "region", ["S1"], 8),
            "security",
            "az",
            ["S1"],
            5,
            anti=True,
        ),
        [pod(SECURITY, "machine1"), pod(SECURITY, "machine3")],
        {"machine1": 100, "machine2": 38, "machine3": 0},
    ),
    (
        "Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution "
        "in pod affinity symmetry",
        pod(SECURITY),
        [pref(pod(None, "machine1"), "security", "region", ["S1"], 5), pod(None, "machine2")],
        {"machine1": 100, "machine2": 0, "machine3": 0},
    ),
    (
        "Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod "
        "affinity symmetry",
        pod(SECURITY),
        [with_affinity(pod(None, "machine1"), "In", "security", "region", ["S1"])],
        {"machine1": 100, "machine2": 0, "machine3": 0},
    ),
    (
        "Anti Affinity symmetry: the existing pods in node which has anti affinity match will "
        "get high score",
        pod(SECURITY),
        [pref(pod(None, "machine1"), "security", "region", ["S1"], 5, anti=True)],
        {"machine1": 0, "machine2": 100, "machine3": 100},
    ),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_preferred_affinity(
    incoming: RawObj, pods: list[RawObj], want: dict[str, int] | Status
) -> None:
    """Upstream TestPreferredAffinity: whole maps of normalised scores."""
    assert run(incoming, pods) == want


def test_hard_pod_affinity_weight_zero_ignores_existing_required_terms() -> None:
    """Upstream TestPreferredAffinityWithHardPodAffinitySymmetricWeight: weight 0 -> Skip."""
    existing = [with_affinity(pod(None, "machine1"), "In", "security", "region", ["S1"])]
    assert run(pod(SECURITY), existing, InterPodAffinityArgs(hard_pod_affinity_weight=0)) == SKIP


def test_ignore_preferred_terms_of_existing_pods() -> None:
    """ignorePreferredTermsOfExistingPods skips a pod without preferred terms of its own."""
    existing = [pref(pod(None, "machine1"), "security", "region", ["S1"], 5)]
    assert (
        run(
            pod(SECURITY),
            existing,
            InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True),
        )
        == SKIP
    )


def test_normalize_truncates_like_go() -> None:
    """(s - min) / (max - min) * 100 is truncated, never rounded: 1/3 -> 33, 2/3 -> 66."""
    incoming = pref(pod(SECURITY), "app", "region", ["x"], 1)
    nodes = [
        node("machine1", {"region": "China"}),
        node("machine2", {"region": "India"}),
        node("m4", {"region": "X"}),
    ]
    x = {"app": "x"}
    pods = [
        pod(x, "machine1"),
        pod(x, "machine1"),
        pod(x, "machine1"),
        pod(x, "machine2"),
        pod(x, "machine2"),
    ]
    snapshot = Snapshot.from_objects([*nodes, *pods])
    plugin = InterPodAffinity()
    state = CycleState()
    assert plugin.pre_score(state, incoming, list(snapshot.nodes.values()), snapshot).ok
    scores = {n: plugin.score(state, incoming, i)[0] for n, i in snapshot.nodes.items()}
    assert scores == {"machine1": 3, "machine2": 2, "m4": 0}
    plugin.normalize_score(state, incoming, scores)
    assert scores == {"machine1": 100, "machine2": 66, "m4": 0}


def test_invalid_args_refused() -> None:
    """hardPodAffinityWeight outside 0..100 is refused with upstream's message."""
    with pytest.raises(ValueError, match=r"not in valid range \[0-100\]"):
        InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=101))
