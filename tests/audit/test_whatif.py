"""The zone-loss drill: nodes removed, their pods re-placed by the scheduler model."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import DNS, ZONE, make_node, make_pod, selector
from webhook.api.labels import parse_selector
from webhook.audit.drills.outcome import diagnose_pending, queue_order, without_nodes
from webhook.audit.measure.spread import evaluate
from webhook.audit.state.inventory import ClusterState, unbound
from webhook.config import Settings

RawObj = dict[str, Any]
APP = selector({"app": "web"})
ZONE_A = parse_selector(f"{ZONE}=a")


def node(name: str, zone: str, pods: str = "10") -> RawObj:
    return (
        make_node()
        .name(name)
        .hostname()
        .zone(zone)
        .allocatable(cpu="4", memory="8Gi", pods=pods)
        .obj()
    )


def pod(
    name: str,
    on: str,
    *,
    owner: tuple[str, str] | None = ("ReplicaSet", "web"),
    spread: bool = True,
    **spec: Any,
) -> RawObj:
    b = make_pod().name(name).label("app", "web").node(on)
    if owner is not None:
        b = b.owner(*owner)
    if spread:
        b = b.spread(1, ZONE, DNS, APP)
    out = b.obj()
    out["spec"].update(spec)
    return out


def drill(*objects: RawObj, selector_: RawObj = ZONE_A) -> Any:
    return without_nodes(ClusterState.from_objects(objects), selector_)


def test_pods_of_removed_nodes_are_replaced_and_the_spread_recomputed() -> None:
    nodes = [node("a1", "a"), node("b1", "b"), node("c1", "c")]
    result = drill(*nodes, pod("p1", "a1"), pod("p2", "b1"), pod("p3", "c1"))
    assert result.removed == ["a1"]
    assert set(result.placed) == {"default/p1"} and result.placed["default/p1"] in ("b1", "c1")
    assert result.pending == []
    [spread] = evaluate(result.state)
    assert spread.constraints[0].domains in ({"b": 2, "c": 1}, {"b": 1, "c": 2})
    assert sorted(result.state.snapshot.nodes) == ["b1", "c1"]


def test_the_callers_state_is_untouched() -> None:
    state = ClusterState.from_objects([node("a1", "a"), node("b1", "b"), pod("p1", "a1")])
    without_nodes(state, ZONE_A)
    assert sorted(state.snapshot.nodes) == ["a1", "b1"]
    assert [p["spec"]["nodeName"] for p in state.running] == ["a1"]


def test_a_pod_that_fits_nowhere_is_pending_with_the_reasons() -> None:
    nodes = [node("a1", "a"), node("b1", "b", pods="1")]
    result = drill(*nodes, pod("p1", "a1", spread=False), pod("p2", "b1", spread=False))
    assert result.pending == ["default/p1"]
    assert result.reasons["default/p1"] == {"Too many pods": 1}


def test_spread_constraint_leaves_a_pod_pending() -> None:
    # Zone a lost; zone c has no room, so the global minimum stays 0 and maxSkew 1
    # lets a single pod into b.
    nodes = [node("a1", "a"), node("b1", "b"), node("c1", "c", pods="0")]
    result = drill(*nodes, pod("p1", "a1"), pod("p2", "a1"))
    assert result.placed == {"default/p1": "b1"}
    assert result.pending == ["default/p2"]
    assert result.reasons["default/p2"] == {
        "Too many pods": 1,
        "node(s) didn't match pod topology spread constraints": 1,
    }


@pytest.mark.parametrize(
    ("owner", "replaced"),
    [
        (("ReplicaSet", "web"), True),
        (None, True),  # the interface re-places bare pods too
        (("DaemonSet", "agent"), False),
        (("Node", "a1"), False),  # a mirror pod belongs to its node
    ],
)
def test_which_pods_come_back(owner: tuple[str, str] | None, replaced: bool) -> None:
    result = drill(node("a1", "a"), node("b1", "b"), pod("p1", "a1", owner=owner, spread=False))
    assert ("default/p1" in result.placed) is replaced
    assert result.pending == []


def test_waiting_pod_is_retried_after_a_later_placement() -> None:
    # p-high (priority 10) needs a pod labelled db on its node; the db pod (priority 0)
    # comes later in queue order, so p-high waits and is placed after it.
    nodes = [node("a1", "a"), node("b1", "b")]
    high = pod(
        "p-high",
        "a1",
        spread=False,
        priority=10,
        affinity={
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"role": "db"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
    )
    db = pod("db", "a1", spread=False)
    db["metadata"]["labels"] = {"role": "db"}
    result = drill(*nodes, high, db)
    assert result.pending == []
    assert result.placed == {"default/db": "b1", "default/p-high": "b1"}


def test_queue_order_is_priority_then_age_then_name() -> None:
    def p(name: str, priority: int | None, created: str) -> RawObj:
        out = make_pod().name(name).obj()
        if priority is not None:
            out["spec"]["priority"] = priority
        out["metadata"]["creationTimestamp"] = created
        return out

    pods = [
        p("c", None, "2026-01-02T00:00:00Z"),
        p("b", 5, "2026-01-03T00:00:00Z"),
        p("a", None, "2026-01-01T00:00:00Z"),
        p("d", None, "2026-01-01T00:00:00Z"),
    ]
    assert [x["metadata"]["name"] for x in sorted(pods, key=queue_order)] == ["b", "a", "d", "c"]


def test_selector_matching_nothing_changes_nothing() -> None:
    result = drill(node("a1", "a"), pod("p1", "a1"), selector_=parse_selector(f"{ZONE}=zz"))
    assert result.removed == [] and result.placed == {} and result.pending == []


def test_pods_no_cycle_runs_for_are_listed_apart() -> None:
    """Zone a is lost with three pods on it: the ordinary one comes back on b1; the
    one for another scheduler and the one with resource claims are neither placed nor
    pending, each listed with placement.NotScheduled's words. (A gated pod cannot be
    running: the API refuses scheduling gates on a bound pod.)"""
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    result = drill(
        node("a1", "a"),
        node("b1", "b"),
        pod("volcano", "a1", spread=False, schedulerName="volcano"),
        pod("dra", "a1", spread=False, resourceClaims=claims),
        pod("plain", "a1", spread=False),
    )
    assert result.placed == {"default/plain": "b1"}
    assert (result.pending, result.reasons) == ([], {})
    assert result.not_scheduled == {
        "default/volcano": 'not placed by this scheduler: schedulerName "volcano" has no '
        "profile here",
        "default/dra": "not placed: not modelled: DynamicResources",
    }


def preempting(victim_cpu: str) -> Any:
    """a1 goes with its critical pod (priority 1000, 3 cpu); b1 and c1 (4 cpu) each run
    a batch pod of priority 0 asking `victim_cpu`."""
    critical = pod("critical", "a1", spread=False, priority=1000)
    critical["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    batch = [pod(f"batch-{n}", n, spread=False, priority=0) for n in ("b1", "c1")]
    for b in batch:
        b["spec"]["containers"][0]["resources"] = {"requests": {"cpu": victim_cpu}}
    return drill(node("a1", "a"), node("b1", "b"), node("c1", "c"), critical, *batch)


def test_a_displaced_pod_preempts_and_its_victim_is_re_placed() -> None:
    """a1 goes; its critical pod (priority 1000, 3 cpu) fits nowhere on the 4-cpu b1 and
    c1, each running a 2-cpu pod of priority 0: it preempts one (b1's: the first of two
    alike candidates) and binds there; the victim comes back like a displaced pod and
    is re-placed on c1, which has 2 cpu left."""
    result = preempting("2")
    assert result.placed == {"default/critical": "b1", "default/batch-b1": "c1"}
    assert result.preempted == ["default/batch-b1"]
    assert result.pending == []
    running = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in result.state.running}
    assert running == {"critical": "b1", "batch-b1": "c1", "batch-c1": "c1"}


def test_a_victim_that_fits_nowhere_is_pending() -> None:
    """As above with c1 full too: the victim stays pending."""
    result = preempting("3")
    assert result.placed == {"default/critical": "b1"}
    assert result.preempted == ["default/batch-b1"]
    assert result.pending == ["default/batch-b1"]


NODEGROUP = "eks.amazonaws.com/nodegroup"


def grouped(name: str, zone: str, pods: str = "10") -> RawObj:
    out = node(name, zone, pods)
    out["metadata"]["labels"][NODEGROUP] = "general"
    return out


def test_pending_pods_are_diagnosed_for_scale_up() -> None:
    """a1(a) lost; b1(b, general) full by pod count, c1(c, no group): p1 finds no node,
    and a new node of general in zone b takes it (its spread: b 1+1 vs c 1, min 1)."""
    nodes = [grouped("a1", "a"), grouped("b1", "b", pods="1"), node("c1", "c", pods="1")]
    result = drill(*nodes, pod("p1", "a1"), pod("p2", "b1"), pod("p3", "c1"))
    assert result.pending == ["default/p1"]
    diagnosis = result.scale_up
    assert diagnosis.to_json() == {"default/p1": [{"group": "general", "zone": "b"}]}
    assert diagnosis.groups.ungrouped == ["c1"]
    assert diagnosis.summary() == (
        "scale-up: a new node would place 1 of 1 pending pod(s) (group general in zone b: 1); "
        "1 node(s) in no node group"
    )


def test_diagnose_pending_takes_the_drills_pods_and_state() -> None:
    """The function every drill calls: its pending pods (key -> the replacement, unbound)
    and the state after it; node groups by settings.node_group_labels."""
    state = ClusterState.from_objects([node("b1", "b", pods="1"), pod("p2", "b1")])
    lost = {"default/p1": unbound(pod("p1", "a1"))}
    pools = Settings(node_group_labels=("kubernetes.io/hostname",))
    assert diagnose_pending(state, lost, pools).to_json() == {
        "default/p1": [{"group": "b1", "zone": "b"}]
    }
    assert diagnose_pending(state, lost).to_json() == {"default/p1": []}



def test_the_pods_of_removed_nodes_leave_the_snapshot() -> None:
    """Deleted nodes take the pods bound to them along (the pod garbage collector),
    also those not re-placed: a DaemonSet's pod no longer exists anywhere."""
    agent = pod("agent", "a1", owner=("DaemonSet", "agent"), spread=False)
    result = drill(node("a1", "a"), node("b1", "b"), agent)
    assert result.state.snapshot.pods_in("default") == []
