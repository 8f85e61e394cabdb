"""VolumeRestrictions' PreFilterExtensions in preemption: a pod blocked only by a
ReadWriteOncePod claim that lower-priority pods hold preempts them.

upstream's test/integration/scheduler/preemption: TestReadWriteOncePodPreemption, its
three cases under their names. One node (cpu 500m, memory 500Ki, 32 pods, label
node=node1); two bound ReadWriteOncePod claims pvc-with-read-write-once-pod-1 and -2;
the victims run at low priority, the preemptor asks the claims at high priority.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_node, make_pod, pv, pvc, with_claim
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.volumerestrictions import (
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    PreFilterState,
    VolumeRestrictions,
)

RawObj = dict[str, Any]
NS = "preemption"
PVC1, PVC2 = "pvc-with-read-write-once-pod-1", "pvc-with-read-write-once-pod-2"
LOW, HIGH = 0, 1000


def _claims() -> list[RawObj]:
    out: list[RawObj] = []
    for i, claim in ((1, PVC1), (2, PVC2)):
        volume = pv(f"pv-with-read-write-once-pod-{i}", size="1Mi", claim=claim)
        volume["spec"]["accessModes"] = ["ReadWriteOncePod"]
        volume["spec"]["claimRef"]["namespace"] = NS
        out.append(volume)
        out.append(pvc(claim, volume=volume["metadata"]["name"], modes=["ReadWriteOncePod"], ns=NS))
    return out


def _pod(name: str, priority: int, *claims: str, node: str = "") -> RawObj:
    b = make_pod().name(name).namespace(NS).priority(priority)
    if node:
        b = b.node(node)
    pod = b.obj()
    for i, claim in enumerate(claims, 1):
        with_claim(pod, claim, f"volume-{i}" if len(claims) > 1 else "volume")
    return pod


NODE = make_node().name("node1").label("node", "node1")
NODE = NODE.allocatable(pods="32", cpu="500m", memory="500Ki")

CASES = [
    (
        "preempt single pod",
        [_pod("victim-pod", LOW, PVC1, node="node1")],
        _pod("preemptor-pod", HIGH, PVC1),
        [f"{NS}/victim-pod"],
    ),
    (
        "preempt two pods",
        [
            _pod("victim-pod-1", LOW, PVC1, node="node1"),
            _pod("victim-pod-2", LOW, PVC2, node="node1"),
        ],
        _pod("preemptor-pod", HIGH, PVC1, PVC2),
        [f"{NS}/victim-pod-1", f"{NS}/victim-pod-2"],
    ),
    (
        "preempt single pod with two volumes",
        [_pod("victim-pod", LOW, PVC1, PVC2, node="node1")],
        _pod("preemptor-pod", HIGH, PVC1, PVC2),
        [f"{NS}/victim-pod"],
    ),
]


@pytest.mark.parametrize(("name", "existing", "pod", "victims"), CASES, ids=[c[0] for c in CASES])
def test_read_write_once_pod_preemption(
    name: str, existing: list[RawObj], pod: RawObj, victims: list[str]
) -> None:
    """The preemptor fits nowhere (its claims are in use), preempts exactly the pods
    holding them, and is nominated to node1."""
    snap = Snapshot.from_objects([NODE.obj(), *_claims(), *existing])
    decision = place(pod, snap)
    assert decision.selected_node is None
    [verdict] = decision.nodes
    status = verdict.filters["VolumeRestrictions"]
    assert status.reason == ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT
    assert decision.preemption is not None
    assert decision.preemption.node == "node1"
    assert sorted(decision.preemption.victims) == victims


def test_a_higher_priority_holder_is_not_preempted() -> None:
    """The claim held by a pod of equal or higher priority: no victim can free it."""
    snap = Snapshot.from_objects([NODE.obj(), *_claims(), _pod("holder", HIGH, PVC1, node="node1")])
    decision = place(_pod("preemptor-pod", HIGH, PVC1), snap)
    assert decision.selected_node is None and decision.preemption is None


@pytest.mark.parametrize(
    ("volumes", "count"),
    [((), 0), ((PVC1,), 1), ((PVC1, PVC2), 2), (("other",), 0)],
)
def test_add_and_remove_pod_move_the_count(volumes: tuple[str, ...], count: int) -> None:
    """AddPod / RemovePod add and take away one use per volume naming one of the pod's
    ReadWriteOncePod claims; a pod naming none leaves the state the same object."""
    plugin = VolumeRestrictions()
    state: dict[str, Any] = {}
    key = "PreFilterVolumeRestrictions"
    start = PreFilterState((), 1, frozenset({PVC1, PVC2}))
    state[key] = start
    other = _pod("other", LOW, *volumes, node="node1")
    info = Snapshot.from_objects([NODE.obj()]).nodes["node1"]
    assert plugin.add_pod(state, {}, other, info).ok  # type: ignore[arg-type]
    assert state[key].conflicting_pvc_ref_count == 1 + count
    assert plugin.remove_pod(state, {}, other, info).ok  # type: ignore[arg-type]
    assert state[key].conflicting_pvc_ref_count == 1
    assert plugin.remove_pods(state, {}, [other, other], info).ok  # type: ignore[arg-type]
    assert state[key].conflicting_pvc_ref_count == 1 - 2 * count
    if not count:
        assert state[key] is start
