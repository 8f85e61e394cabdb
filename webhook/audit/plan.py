"""The rebalancing plan: the fewest pod moves after which nothing checked is violated.

(Types only for now; the planner lands next.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from webhook.audit.inventory import ClusterState
from webhook.audit.spread import WorkloadSpread
from webhook.config import Settings

__all__ = ["Move", "Plan", "make_plan"]


@dataclass(frozen=True, slots=True)
class Move:
    """Evict `pod` ("namespace/name") from `from_node`; `to_node` can take it then.
    workload: the pod's workload, as str(Workload)."""

    pod: str
    from_node: str
    to_node: str
    workload: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "from": self.from_node, "to": self.to_node}


@dataclass(frozen=True)
class Plan:
    """moves: in order; complete: after them nothing checked is violated; reasons:
    workload ("Kind namespace/name") -> why it cannot be balanced (constraints that no
    state satisfies together, or no capacity)."""

    moves: list[Move]
    complete: bool
    reasons: dict[str, str] = field(default_factory=dict)


def make_plan(
    state: ClusterState,
    spreads: list[WorkloadSpread],
    settings: Settings,
    *,
    include_soft: bool = False,
) -> Plan:
    """The fewest moves after which no constraint of `spreads` is violated."""
    raise NotImplementedError("the planner lands next")
