"""PodTopologySpread PreFilter and Filter: the DoNotSchedule constraints.

PreFilter counts, once per decision, the matching pods of every eligible domain;
Filter then judges each node with
    matching pods in the node's domain + self-match - global minimum <= maxSkew
where the global minimum is taken over eligible domains and read as 0 while
there are fewer eligible domains than minDomains.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.config import SpreadArgs
from webhook.kube import RawObj
from webhook.scheduling.common import (
    DEFAULT_ARGS,
    DO_NOT_SCHEDULE,
    INT32_MAX,
    Constraint,
    NodeInclusion,
    constraints_or_error,
    match_counts,
    node_has_all_keys,
)
from webhook.scheduling.snapshot import NodeInfo, Snapshot, pod_labels
from webhook.scheduling.status import (
    CONSTRAINTS_NOT_MATCH,
    NODE_LABEL_NOT_MATCH,
    SUCCESS,
    Status,
)


@dataclass(frozen=True)
class PreFilterState:
    """What PreFilter computed for one incoming pod.

    constraints: the pod's DoNotSchedule constraints (or its defaults), in order.
    tp_value_to_match_num[i]: for constraint i, eligible domain value -> matching
        pods; a domain is present (maybe with 0) iff at least one eligible node
        carries it, so len() is the number of eligible domains.
    min_match_num[i]: the smallest count in tp_value_to_match_num[i]
        (INT32_MAX when there is no eligible domain, as upstream's empty critical path).
    self_match[i]: the incoming pod matches constraint i's selector itself.
    """

    constraints: tuple[Constraint, ...]
    tp_value_to_match_num: tuple[dict[str, int], ...]
    min_match_num: tuple[int, ...]
    self_match: tuple[bool, ...]

    def global_min(self, i: int) -> int:
        """minMatchNum: the global minimum, 0 while fewer eligible domains than minDomains."""
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.min_match_num[i]


def pre_filter(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    inclusion: NodeInclusion | None = None,
) -> PreFilterState | Status:
    """calPreFilterState over every node of the snapshot; a Status when the pod's
    constraints cannot be used (upstream's PreFilter error, which fails every node)."""
    pc = constraints_or_error(pod, snapshot, args, DO_NOT_SCHEDULE)
    if isinstance(pc, Status):
        return pc
    constraints = pc.constraints
    if not constraints:
        return PreFilterState((), (), (), ())
    inclusion = inclusion or NodeInclusion(pod)
    counts = [match_counts(snapshot, pod, c) for c in constraints]
    domains: list[dict[str, int]] = [{} for _ in constraints]
    pairs = list(zip(constraints, counts, domains, strict=True))
    for name, info in snapshot.nodes.items():
        labels = info.labels
        if not node_has_all_keys(labels, constraints):
            continue
        for c, per_node, per_domain in pairs:
            if not inclusion.includes(c, info):
                continue
            value = labels[c.topology_key]
            per_domain[value] = per_domain.get(value, 0) + per_node.get(name, 0)
    labels = pod_labels(pod)
    return PreFilterState(
        constraints=constraints,
        tp_value_to_match_num=tuple(domains),
        min_match_num=tuple(min(d.values(), default=INT32_MAX) for d in domains),
        self_match=tuple(bool(c.matches(labels)) for c in constraints),
    )


def filter_node(state: PreFilterState, info: NodeInfo) -> Status:
    """Filter: may the pod go to `info` without breaking a DoNotSchedule constraint?"""
    labels = info.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return NODE_LABEL_NOT_MATCH
        match_num = state.tp_value_to_match_num[i].get(value, 0)
        skew = match_num + state.self_match[i] - state.global_min(i)
        if skew > c.max_skew:
            return CONSTRAINTS_NOT_MATCH
    return SUCCESS
