"""What placement answers for the audit, from the plugins themselves: PodTopologySpread's
node inclusion and PreFilter state, and the node filters' verdicts (audit/plan/workspace.py and
audit/measure/spread.py ask these instead of re-spelling the rules)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import DNS, ZONE, constraint, expr, make_node, make_pod, selector
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Status
from webhook.scheduler.placement import (
    admitted_nodes,
    spread_eligible_nodes,
    spread_pre_filter,
)

WEB = {"app": "web"}
# Legend: a/b/c carry a zone; "tainted" has a NoSchedule taint; "blue" has color=blue;
# "bare" carries no zone; "cordoned" is unschedulable.
CLUSTER = [
    make_node().name("a").zone("za").label("color", "blue").obj(),
    make_node().name("b").zone("zb").obj(),
    make_node().name("tainted").zone("zc").taint("dedicated", "x").obj(),
    make_node().name("bare").label("color", "blue").obj(),
    make_node().name("cordoned").zone("za").unschedulable().obj(),
]
RESIDENTS = [
    make_pod().name("r1").labels(WEB).node("a").obj(),
    make_pod().name("r2").labels(WEB).node("tainted").obj(),
]


def _pod(*, color: bool = False, tolerates: bool = False, **policies: Any) -> dict[str, Any]:
    b = make_pod().name("web").labels(WEB)
    b = b.constraints([constraint(1, ZONE, DNS, selector(WEB), **policies)])
    if color:
        b = b.node_selector({"color": "blue"})
    if tolerates:
        b = b.toleration("dedicated", "x")
    return b.obj()


@pytest.mark.parametrize(
    ("pod", "eligible"),
    [
        # The keys alone (affinity honoured, taints ignored by default).
        (_pod(), {"a": "za", "b": "zb", "tainted": "zc", "cordoned": "za"}),
        (_pod(color=True), {"a": "za"}),
        (
            _pod(color=True, nodeAffinityPolicy="Ignore"),
            {"a": "za", "b": "zb", "tainted": "zc", "cordoned": "za"},
        ),
        (_pod(nodeTaintsPolicy="Honor"), {"a": "za", "b": "zb", "cordoned": "za"}),
        (
            _pod(nodeTaintsPolicy="Honor", tolerates=True),
            {"a": "za", "b": "zb", "tainted": "zc", "cordoned": "za"},
        ),
    ],
    ids=[
        "every node carrying the key",
        "nodeSelector honoured",
        "nodeAffinityPolicy Ignore",
        "nodeTaintsPolicy Honor",
        "nodeTaintsPolicy Honor, tolerated",
    ],
)
def test_spread_eligible_nodes_follow_the_inclusion_policies(
    pod: dict[str, Any], eligible: dict[str, str]
) -> None:
    snap = Snapshot.from_objects([*CLUSTER, *RESIDENTS])
    assert spread_eligible_nodes(pod, snap) == [eligible]


def test_spread_pre_filter_counts_the_eligible_domains() -> None:
    """Domains of included nodes only, 0 for those without matching pods."""
    snap = Snapshot.from_objects([*CLUSTER, *RESIDENTS])
    state = spread_pre_filter(_pod(nodeTaintsPolicy="Honor"), snap)
    assert not isinstance(state, Status)
    assert state.tp_value_to_match_num == ({"za": 1, "zb": 0},)
    assert state.global_min(0) == 0


def test_a_constraint_the_scheduler_refuses_is_a_status() -> None:
    """An invalid selector: PreFilter's error, on both answers."""
    snap = Snapshot.from_objects(CLUSTER)
    bad = selector(None, expr("app", "Bogus", "web"))
    pod = make_pod().name("web").labels(WEB).constraints([constraint(1, ZONE, DNS, bad)]).obj()
    refused = spread_pre_filter(pod, snap)
    assert isinstance(refused, Status) and not refused.ok
    assert spread_eligible_nodes(pod, snap) == refused


@pytest.mark.parametrize(
    ("pod", "admitted"),
    [
        (make_pod().name("p").obj(), {"a", "b", "bare"}),
        (make_pod().name("p").toleration("dedicated", "x").obj(), {"a", "b", "bare", "tainted"}),
        (make_pod().name("p").node_selector({"color": "blue"}).obj(), {"a", "bare"}),
        (
            make_pod()
            .name("p")
            .toleration("node.kubernetes.io/unschedulable", "", effect="NoSchedule")
            .obj(),
            {"a", "b", "bare", "cordoned"},
        ),
    ],
    ids=["untainted and schedulable", "a tolerated taint", "nodeSelector", "cordon tolerated"],
)
def test_admitted_nodes_are_the_node_filters_verdicts(
    pod: dict[str, Any], admitted: set[str]
) -> None:
    snap = Snapshot.from_objects(CLUSTER)
    names = ("NodeUnschedulable", "TaintToleration", "NodeAffinity")
    assert admitted_nodes(pod, snap, names) == admitted
