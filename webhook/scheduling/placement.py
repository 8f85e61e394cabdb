"""The one entry point the CLI and /mutate call: where would kube-scheduler put this pod?

`place` runs the five node filters and PodTopologySpread on every node (no
short-circuit, so every reason shows), scores the feasible nodes with
PodTopologySpread alone, and picks the highest score, ties broken by name.
`simulate` places copies one after another on a private copy of the snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from webhook.config import SpreadArgs
from webhook.kube import RawObj
from webhook.scheduling.common import (
    DEFAULT_ARGS,
    SCHEDULE_ANYWAY,
    NodeInclusion,
    constraints_or_error,
    distribution,
)
from webhook.scheduling.filtering import PreFilterState, filter_node, pre_filter
from webhook.scheduling.scoring import score_nodes
from webhook.scheduling.snapshot import Snapshot, as_dict, pod_namespace
from webhook.scheduling.status import PLUGIN_NAME, SUCCESS, Code, Status

PluginStatus = Status

__all__ = [
    "NodeVerdict",
    "Placement",
    "PluginStatus",
    "Simulation",
    "place",
    "pod_ref",
    "simulate",
]


class NodeVerdict(NamedTuple):
    """One node's outcome: every filter plugin's status, and scores when feasible.

    Immutable; a NamedTuple because a placement builds one per node (thousands).
    """

    name: str
    feasible: bool
    filters: dict[str, Status]
    scores: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "feasible": self.feasible,
            "filters": {plugin: s.to_json() for plugin, s in self.filters.items()},
            "scores": dict(self.scores),
        }


@dataclass(frozen=True, slots=True)
class Placement:
    """The decision for one pod.

    pod: "namespace/name"; nodes: every node, sorted by name; selected_node: the
    feasible node with the highest PodTopologySpread score (ties: first by name),
    None when no node is feasible; reasons: failure reason -> number of nodes
    failing with it (a node failing two plugins counts under both);
    distribution: topology key -> domain -> matching pods, before this pod.
    """

    pod: str
    nodes: list[NodeVerdict]
    selected_node: str | None
    reasons: dict[str, int]
    distribution: dict[str, dict[str, int]]

    @property
    def feasible(self) -> list[NodeVerdict]:
        return [n for n in self.nodes if n.feasible]

    def to_json(self) -> dict[str, Any]:
        """The `simulate -o json` document for this one pod."""
        return {
            "pod": self.pod,
            "nodes": [n.to_json() for n in self.nodes],
            "selectedNode": self.selected_node,
            "placements": [self.selected_node],
            "distribution": self.distribution,
        }


@dataclass(frozen=True, slots=True)
class Simulation:
    """N copies placed one after another.

    placements[i]: the node copy i went to, None when it fit nowhere; first: the
    full decision for the first copy; distribution: matching pods per domain
    once every copy is placed.
    """

    placements: list[str | None]
    first: Placement
    distribution: dict[str, dict[str, int]]

    def to_json(self) -> dict[str, Any]:
        out = self.first.to_json()
        out["placements"] = list(self.placements)
        out["distribution"] = self.distribution
        return out


def pod_ref(pod: RawObj) -> str:
    """ "namespace/name" of a pod (generateName stands in for a missing name)."""
    meta = as_dict(pod.get("metadata"))
    name = meta.get("name") or meta.get("generateName") or ""
    return f"{pod_namespace(pod)}/{name}"


def place(pod: RawObj, snapshot: Snapshot, args: SpreadArgs = DEFAULT_ARGS) -> Placement:
    """Run every filter on every node, score the feasible ones, pick a node."""
    from webhook.scheduling.filters import prepare, run_filters

    prepared = prepare(pod)
    inclusion = NodeInclusion(pod)
    pre = pre_filter(pod, snapshot, args, inclusion)
    # Upstream parses ScheduleAnyway constraints only at PreScore, where a parse
    # error fails the whole cycle; checking now lets every verdict say so.
    soft = constraints_or_error(pod, snapshot, args, SCHEDULE_ANYWAY)
    spread_error = pre if isinstance(pre, Status) else soft if isinstance(soft, Status) else None
    state: PreFilterState | None = None if isinstance(pre, Status) else pre
    check = bool(state and state.constraints)
    # The five filters read only the pod's spec and the node: their verdict for a
    # node holds while the node is unchanged, for every pod with this very spec
    # (the replicas of one workload, the copies of a simulation).
    remembered = snapshot.filter_verdicts(
        json.dumps(pod.get("spec"), sort_keys=True, separators=(",", ":"), default=str)
    )

    verdicts: list[tuple[str, dict[str, Status], bool]] = []
    feasible_infos = []
    reasons: dict[str, int] = {}
    nodes = snapshot.nodes
    passed = Code.SUCCESS
    for name in snapshot.node_names():
        info = nodes.get(name)
        if info is None:
            continue  # removed while we were deciding
        hit = remembered.get(name)
        if hit is not None and hit[0] == info.generation:
            statuses = dict(hit[1])
        else:
            fresh = run_filters(prepared, info)
            remembered[name] = (info.generation, fresh)
            statuses = dict(fresh)
        if spread_error is not None:
            statuses[PLUGIN_NAME] = spread_error
        elif check:
            statuses[PLUGIN_NAME] = filter_node(state, info)  # type: ignore[arg-type]
        else:
            statuses[PLUGIN_NAME] = SUCCESS
        for status in statuses.values():
            if status.code is not passed:
                break
        else:
            feasible_infos.append(info)
            verdicts.append((name, statuses, True))
            continue
        for status in statuses.values():
            if status.code is not passed:
                for reason in status.reasons:
                    reasons[reason] = reasons.get(reason, 0) + 1
        verdicts.append((name, statuses, False))

    scores: Mapping[str, int] = {}
    if feasible_infos:
        scored = score_nodes(pod, snapshot, args, feasible_infos, inclusion)
        scores = scored if not isinstance(scored, Status) else {}

    selected: str | None = None
    best = -1
    out: list[NodeVerdict] = []
    make = tuple.__new__  # NodeVerdict(...) without the keyword-handling detour
    for name, statuses, ok in verdicts:
        if ok:
            s = scores.get(name, 0)
            if s > best:
                best, selected = s, name
            out.append(make(NodeVerdict, (name, True, statuses, {PLUGIN_NAME: s})))
        else:
            out.append(make(NodeVerdict, (name, False, statuses, {})))
    return Placement(
        pod=pod_ref(pod),
        nodes=out,
        selected_node=selected,
        reasons=dict(sorted(reasons.items())),
        distribution=distribution(pod, snapshot, args),
    )


def _copy_named(pod: RawObj, name: str) -> RawObj:
    return {**pod, "metadata": {**as_dict(pod.get("metadata")), "name": name}}


def simulate(
    pod: RawObj, snapshot: Snapshot, args: SpreadArgs = DEFAULT_ARGS, replicas: int = 1
) -> Simulation:
    """Place `replicas` copies of `pod` one by one, each seeing the ones before.

    Copies after the first get distinct names (name-2, name-3, ...). The
    caller's snapshot is left untouched.
    """
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    work = snapshot.copy()
    ns = pod_namespace(pod)
    meta = as_dict(pod.get("metadata"))
    base = meta.get("name") or str(meta.get("generateName") or "pod").rstrip("-") or "pod"
    placements: list[str | None] = []
    first: Placement | None = None
    for i in range(replicas):
        name = base if i == 0 else f"{base}-{i + 1}"
        while i > 0 and work.has_pod(ns, name):
            name += "-x"
        copy = _copy_named(pod, name)
        decision = place(copy, work, args)
        if first is None:
            first = decision
        placements.append(decision.selected_node)
        if decision.selected_node is not None:
            work.add_pod(copy, decision.selected_node)
    assert first is not None
    return Simulation(placements, first, distribution(pod, work, args))
