"""Which of a pod's DoNotSchedule constraints rule out which nodes, and why.

kube-scheduler says only "node(s) didn't match pod topology spread constraints"; the
/validate foresight names each constraint that rules nodes out, with the matching
pods per domain PreFilter counted. Pure: reads PreFilterState and NodeInfos.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webhook.scheduler.framework.types import NodeInfoLike
from webhook.scheduler.plugins.podtopologyspread.filtering import PreFilterState

__all__ = ["ConstraintBlock", "blocked_constraints"]


@dataclass(frozen=True)
class ConstraintBlock:
    """One DoNotSchedule constraint that rules out some of the candidate nodes.

    rejected: how many of the `candidates` it rules out; domains: eligible domain ->
    matching pods, as PreFilter counted them; global_min: the minimum the skew is
    measured from (0 while fewer eligible domains than minDomains); crowded: the
    domains of the candidates ruled out for their skew (not for a missing label);
    index: its position among the pod's DoNotSchedule constraints (or the scheduler's
    defaults when the pod has none).
    """

    topology_key: str
    max_skew: int
    rejected: int
    candidates: int
    domains: dict[str, int]
    global_min: int
    min_domains: int
    crowded: tuple[str, ...] = ()
    index: int = 0


def blocked_constraints(
    state: PreFilterState, candidates: Sequence[NodeInfoLike]
) -> list[ConstraintBlock]:
    """Each constraint of `state` that rules out at least one of `candidates`, in order."""
    out: list[ConstraintBlock] = []
    for i, (key, max_skew, domains, offset) in enumerate(state.checks):
        rejected = 0
        crowded: set[str] = set()
        for info in candidates:
            value = info.labels.get(key)
            if value is None:
                rejected += 1
            elif domains.get(value, 0) + offset > max_skew:
                rejected += 1
                crowded.add(value)
        if rejected:
            out.append(
                ConstraintBlock(
                    index=i,
                    topology_key=key,
                    max_skew=max_skew,
                    rejected=rejected,
                    candidates=len(candidates),
                    domains=dict(domains),
                    global_min=state.global_min(i),
                    min_domains=state.constraints[i].min_domains,
                    crowded=tuple(sorted(crowded)),
                )
            )
    return out
