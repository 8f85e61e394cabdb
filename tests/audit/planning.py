"""Helpers of the plan tests: run a plan, apply it, check each move on its own, and a
brute-force minimum to hold the planner to.

    state, spreads, plan = planned(objects)
    after = applied(objects, plan)          # the objects with the moves carried out
    check_moves(objects, plan)              # each move feasible in order, independently
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from webhook.api.resources import node_allocatable, pod_requests
from webhook.audit.measure.spread import WorkloadSpread, evaluate
from webhook.audit.plan.planner import Plan, make_plan
from webhook.audit.state.inventory import ClusterState, movable
from webhook.config import Settings
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import place

RawObj = dict[str, Any]


def planned(
    objects: Sequence[RawObj], *, include_soft: bool = False
) -> tuple[ClusterState, list[WorkloadSpread], Plan]:
    state = ClusterState.from_objects(objects)
    spreads = evaluate(state, include_soft=include_soft)
    return state, spreads, make_plan(state, spreads, Settings(), include_soft=include_soft)


def _key(obj: RawObj) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', 'default')}/{meta.get('name')}"


def moved(objects: Sequence[RawObj], moves: Sequence[tuple[str, str]]) -> list[RawObj]:
    """The objects with each (pod key, node) move carried out."""
    where = dict(moves)
    out = []
    for obj in objects:
        if obj.get("kind") == "Pod" and _key(obj) in where:
            obj = {**obj, "spec": {**obj["spec"], "nodeName": where[_key(obj)]}}
        out.append(obj)
    return out


def applied(objects: Sequence[RawObj], plan: Plan) -> list[RawObj]:
    return moved(objects, [(m.pod, m.to_node) for m in plan.moves])


def violations(objects: Sequence[RawObj], *, include_soft: bool = False) -> int:
    state = ClusterState.from_objects(objects)
    return sum(len(w.violated) for w in evaluate(state, include_soft=include_soft))


def _unbound(pod: RawObj) -> RawObj:
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    return {**{k: v for k, v in pod.items() if k != "status"}, "spec": spec}


def within_allocatable(snapshot: Snapshot, node: str, pod: RawObj) -> bool:
    info = snapshot.nodes[node]
    allocatable = node_allocatable(info.node)
    if allocatable is None:
        return True
    asks = pod_requests(pod, use_status=False)
    for name in ("pods", "cpu", "memory"):
        held, limit = info.requested.get(name, 0), allocatable.get(name, 0)
        if held > limit or held + asks.get(name, 0) > limit:
            return False
    return True


def feasible_targets(snapshot: Snapshot, pod: RawObj) -> list[str]:
    """Nodes pod (taken off its node in `snapshot`, which is changed and restored) can
    move to: every filter of the default profile passes, allocatable holds."""
    fresh = _unbound(pod)
    frm = pod["spec"]["nodeName"]
    snapshot.delete({"kind": "Pod", "metadata": pod["metadata"]})
    try:
        decision = place(fresh, snapshot)
        return [
            v.name
            for v in decision.nodes
            if v.feasible and v.name != frm and within_allocatable(snapshot, v.name, fresh)
        ]
    finally:
        snapshot.add_pod(pod, frm)


def check_moves(objects: Sequence[RawObj], plan: Plan) -> None:
    """Each move, in order, takes a movable pod, at most once, to a node it may go to
    given the moves before it (placement.place, allocatable), checked on a snapshot
    built here."""
    snapshot = Snapshot.from_objects(objects)
    pods = {_key(o): o for o in objects if o.get("kind") == "Pod"}
    seen: set[str] = set()
    for m in plan.moves:
        assert m.pod not in seen, f"{m.pod} moves twice"
        seen.add(m.pod)
        pod = pods[m.pod]
        assert movable(pod), f"{m.pod} does not come back when evicted"
        assert pod["spec"]["nodeName"] == m.from_node
        assert m.to_node in feasible_targets(snapshot, pod), f"{m} is not feasible"
        snapshot.delete({"kind": "Pod", "metadata": pod["metadata"]})
        snapshot.add_pod(pod, m.to_node)
        pods[m.pod] = {**pod, "spec": {**pod["spec"], "nodeName": m.to_node}}


def brute_force(
    objects: Sequence[RawObj],
    depth: int,
    alike: Callable[[RawObj], str] = lambda pod: json.dumps(
        [pod.get("metadata", {}).get("ownerReferences"), pod.get("spec", {}).get("nodeSelector")],
        sort_keys=True,
    ),
) -> int | None:
    """The fewest moves (each a movable pod, at most once, to a node feasible then)
    after which nothing is violated, searched breadth first up to `depth`; None when
    no plan that short exists. Pods with the same `alike` (and node) are taken as
    interchangeable: the callers' pods of one kind differ only in name."""
    objects = list(objects)
    pods = [o for o in objects if o.get("kind") == "Pod" and o["spec"].get("nodeName")]

    def canonical(where: dict[str, str], done: frozenset[str]) -> tuple[Any, ...]:
        return tuple(sorted((alike(p), where[_key(p)], _key(p) in done) for p in pods))

    start = {_key(p): p["spec"]["nodeName"] for p in pods}
    queue: deque[tuple[dict[str, str], frozenset[str], int]] = deque([(start, frozenset(), 0)])
    seen = {canonical(start, frozenset())}
    while queue:
        where, done, g = queue.popleft()
        state_objects = moved(objects, list(where.items()))
        if violations(state_objects) == 0:
            return g
        if g == depth:
            continue
        snapshot = Snapshot.from_objects(state_objects)
        by_key = {_key(o): o for o in state_objects if o.get("kind") == "Pod"}
        tried: set[tuple[str, str]] = set()
        for p in pods:
            key = _key(p)
            if key in done or not movable(p):
                continue
            group = (alike(p), where[key])
            if group in tried:
                continue
            tried.add(group)
            for to in feasible_targets(snapshot, by_key[key]):
                nxt = {**where, key: to}
                nxt_done = done | {key}
                c = canonical(nxt, nxt_done)
                if c not in seen:
                    seen.add(c)
                    queue.append((nxt, nxt_done, g + 1))
    return None
