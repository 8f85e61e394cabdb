"""The spread of each workload's running pods, as kube-scheduler sees it.

    spreads = evaluate(state, include_soft=False)     # one WorkloadSpread per workload

For each running pod's constraints of one whenUnsatisfiable, the question is the one
kube-scheduler's PreFilter answers for one more such pod: over the eligible domains
(nodes passing the constraint's nodeAffinityPolicy / nodeTaintsPolicy for this pod
and carrying every topologyKey of its constraints with the same whenUnsatisfiable),
how many matching, non-terminating pods of its namespace each holds (the selector
with matchLabelKeys' values from the pod's own labels). The answer is computed by the
scheduler's own PodTopologySpread PreFilter (placement.spread_pre_filter), so the
counts, the eligible domains and the global minimum (0 while fewer eligible domains
than minDomains) are the scheduler's, not a re-implementation of them.

skew = the largest count - the global minimum (0 without an eligible domain);
violated = skew > maxSkew. Pods whose evaluation would be identical (the replicas of
one ReplicaSet) are evaluated once: the key is the constraints, the pod's node
inclusion inputs (nodeSelector, required node affinity, tolerations) and the values
of its matchLabelKeys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from webhook.api.constraint import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY, node_inclusion_inputs
from webhook.api.kube import RawObj, pod_labels, pod_namespace, spec
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Status
from webhook.scheduler.placement import spread_pre_filter

_DEFAULT_ARGS = SpreadArgs()

__all__ = [
    "ConstraintSpread",
    "WorkloadSpread",
    "as_scheduled",
    "document_entry_key",
    "entry_key",
    "evaluate",
    "evaluation_key",
    "spread_of",
]


@dataclass(frozen=True)
class ConstraintSpread:
    """One constraint of one kind of running pod, evaluated.

    index: the constraint's position in the pod's topologySpreadConstraints;
    selector: the label selector counted with (matchLabelKeys merged); domains: every
    eligible domain -> matching running pods, sorted by domain; pods: how many of the
    workload's running pods share this evaluation; error: why the scheduler could not
    read the constraint (then nothing is counted and it is not violated); pod: one of
    those pods, as read (what a plan moves and places).
    """

    index: int
    topology_key: str
    when_unsatisfiable: str
    max_skew: int
    min_domains: int | None
    skew: int
    domains: dict[str, int]
    selector: Any = None
    pods: int = 1
    error: str | None = None
    pod: RawObj = field(default_factory=dict, compare=False, repr=False)

    @property
    def violated(self) -> bool:
        return self.error is None and self.skew > self.max_skew

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "topologyKey": self.topology_key,
            "whenUnsatisfiable": self.when_unsatisfiable,
            "maxSkew": self.max_skew,
            "minDomains": self.min_domains,
            "skew": self.skew,
            "violated": self.violated,
            "domains": dict(self.domains),
            "labelSelector": self.selector,
            "pods": self.pods,
        }
        if self.error is not None:
            out["error"] = self.error
        return out

    def entry(self) -> tuple[Any, ...]:
        """What names this constraint's report entry while its counts change (across a
        drill's before and after, a plan's steps, a drill's runs): index,
        whenUnsatisfiable, topologyKey and the selector counted with."""
        return (self.index, self.when_unsatisfiable, self.topology_key, self.selector)

    def identity(self) -> str:
        """What makes two evaluations the same report entry: the entry and what was
        counted (all but `pods`)."""
        return _key(
            *self.entry(), self.max_skew, self.min_domains, self.skew, self.domains, self.error
        )


@dataclass(frozen=True)
class WorkloadSpread:
    """A workload's running pods and its evaluated constraints (in index order)."""

    workload: Workload
    pods: int
    constraints: list[ConstraintSpread]

    @property
    def violated(self) -> list[ConstraintSpread]:
        return [c for c in self.constraints if c.violated]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.workload.kind,
            "namespace": self.workload.namespace,
            "name": self.workload.name,
            "pods": self.pods,
            "constraints": [c.to_json() for c in self.constraints],
        }


def _actions(include_soft: bool) -> tuple[str, ...]:
    return (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY) if include_soft else (DO_NOT_SCHEDULE,)


def _constraints(pod: RawObj) -> list[Any]:
    raw = spec(pod).get("topologySpreadConstraints")
    return raw if isinstance(raw, list) else []


def _spec_key(pod: RawObj, actions: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """What of the pod's spec decides its evaluation, as a string, and the names of the
    labels whose values also do (matchLabelKeys); None without a checked constraint."""
    picked = [
        c
        for c in _constraints(pod)
        if isinstance(c, dict) and c.get("whenUnsatisfiable") in actions
    ]
    if not picked:
        return None
    names = tuple(
        sorted(
            {
                str(k)
                for c in picked
                if isinstance(c.get("matchLabelKeys"), list)
                for k in c["matchLabelKeys"]
            }
        )
    )
    text = json.dumps(
        [picked, *node_inclusion_inputs(spec(pod))], sort_keys=True, default=str
    )
    return text, names


def evaluation_key(pod: RawObj, actions: Sequence[str]) -> tuple[str, ...] | None:
    """Pods with the same key get the same evaluation: namespace, constraints, node
    inclusion inputs, matchLabelKeys' values. None for a pod with no constraint of
    `actions`."""
    key = _spec_key(pod, actions)
    if key is None:
        return None
    return _with_labels(pod, *key)


def _with_labels(pod: RawObj, text: str, names: tuple[str, ...]) -> tuple[str, ...]:
    labels = pod_labels(pod)
    return (pod_namespace(pod), text, *(labels.get(n, "\0") for n in names))


def as_scheduled(pod: RawObj, action: str) -> tuple[list[tuple[int, RawObj]], RawObj] | None:
    """The pod's constraints of `action` with their index, and the pod as the
    scheduler's PreFilter is asked about them: those constraints alone, as DoNotSchedule
    ones (PreFilter reads DoNotSchedule constraints, so ScheduleAnyway ones are counted
    by the same rule: the spec's `domains`). None without such a constraint."""
    picked = [
        (i, c)
        for i, c in enumerate(_constraints(pod))
        if isinstance(c, dict) and c.get("whenUnsatisfiable") == action
    ]
    if not picked:
        return None
    asked = {
        **pod,
        "spec": {
            **spec(pod),
            "topologySpreadConstraints": [
                {**c, "whenUnsatisfiable": DO_NOT_SCHEDULE} for _, c in picked
            ],
        },
    }
    return picked, asked


def spread_of(
    pod: RawObj,
    snapshot: Snapshot,
    *,
    include_soft: bool = False,
    args: SpreadArgs = _DEFAULT_ARGS,
    pods: int = 1,
) -> list[ConstraintSpread]:
    """Each of the pod's constraints (of the checked whenUnsatisfiable) evaluated on
    `snapshot`, in index order."""
    out: list[ConstraintSpread] = []
    for action in _actions(include_soft):
        scheduled = as_scheduled(pod, action)
        if scheduled is None:
            continue
        picked, asked = scheduled
        state = spread_pre_filter(asked, snapshot, args)
        for j, (i, c) in enumerate(picked):
            min_domains = c.get("minDomains")
            entry: dict[str, Any] = {
                "index": i,
                "topology_key": str(c.get("topologyKey") or ""),
                "when_unsatisfiable": action,
                "max_skew": c.get("maxSkew") if isinstance(c.get("maxSkew"), int) else 0,
                "min_domains": min_domains if isinstance(min_domains, int) else None,
                "pods": pods,
                "pod": pod,
            }
            if isinstance(state, Status):
                out.append(ConstraintSpread(skew=0, domains={}, error=state.reason, **entry))
                continue
            counts = state.tp_value_to_match_num[j]
            skew = max(counts.values()) - state.global_min(j) if counts else 0
            out.append(
                ConstraintSpread(
                    skew=skew,
                    domains=dict(sorted(counts.items())),
                    selector=_shown(state.constraints[j].selector),
                    **entry,
                )
            )
    out.sort(key=lambda c: c.index)
    return out


def _shown(selector: Any) -> Any:
    """The selector as counted, each requirement once: the scheduler merges matchLabelKeys
    again into a selector the API server merged at the pod's creation (v1.34+), which
    repeats requirements without changing what they select."""
    exprs = selector.get("matchExpressions") if isinstance(selector, dict) else None
    if not isinstance(exprs, list):
        return selector
    seen: set[str] = set()
    once = []
    for e in exprs:
        key = json.dumps(e, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            once.append(e)
    return selector if len(once) == len(exprs) else {**selector, "matchExpressions": once}


def evaluate(
    state: ClusterState,
    *,
    include_soft: bool = False,
    args: SpreadArgs = _DEFAULT_ARGS,
    pods: Iterable[RawObj] | None = None,
) -> list[WorkloadSpread]:
    """Every workload with running pods that carry checked constraints, sorted by
    namespace, kind and name (`pods`: only these running pods' workloads)."""
    actions = _actions(include_soft)
    groups: dict[Workload, dict[tuple[str, ...], list[RawObj]]] = {}
    counts: dict[Workload, int] = {}
    # The replicas of one controller share their spec's values (inventory.Collector):
    # work out the spec's part of the key once per set of shared values.
    spec_keys: dict[tuple[int, ...], tuple[str, tuple[str, ...]] | None] = {}
    for pod in state.running if pods is None else pods:
        workload = state.workload_of(pod)
        counts[workload] = counts.get(workload, 0) + 1
        s = spec(pod)
        constraints = s.get("topologySpreadConstraints")
        if not constraints:
            continue
        ids = (
            id(constraints),
            id(s.get("nodeSelector")),
            id(s.get("affinity")),
            id(s.get("tolerations")),
        )
        if ids in spec_keys:
            part = spec_keys[ids]
        else:
            part = spec_keys[ids] = _spec_key(pod, actions)
        if part is not None:
            key = _with_labels(pod, *part)
            groups.setdefault(workload, {}).setdefault(key, []).append(pod)
    out: list[WorkloadSpread] = []
    for workload in sorted(groups):
        entries: dict[str, ConstraintSpread] = {}
        for members in groups[workload].values():
            for c in spread_of(
                members[0],
                state.snapshot,
                include_soft=include_soft,
                args=args,
                pods=len(members),
            ):
                same = entries.get(c.identity())
                if same is None:
                    entries[c.identity()] = c
                else:
                    entries[c.identity()] = replace(same, pods=same.pods + c.pods)
        ordered = sorted(entries.values(), key=lambda c: (c.index, c.when_unsatisfiable))
        out.append(WorkloadSpread(workload, counts[workload], ordered))
    return out

def _key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def entry_key(workload: str, c: ConstraintSpread) -> str:
    """What identifies an entry across a drill: its workload (str(Workload)) and the
    constraint's entry (ConstraintSpread.entry; its counts change)."""
    return _key(workload, *c.entry())


def document_entry_key(workload: Mapping[str, Any], constraint: Mapping[str, Any]) -> str:
    """entry_key of an entry of the `audit -o json` document: a workload's object
    (kind, namespace, name) and one of its `constraints` (WorkloadSpread.to_json)."""
    name = Workload(
        str(workload.get("namespace")), str(workload.get("kind")), str(workload.get("name"))
    )
    return _key(
        str(name),
        constraint.get("index"),
        constraint.get("whenUnsatisfiable"),
        constraint.get("topologyKey"),
        constraint.get("labelSelector"),
    )
