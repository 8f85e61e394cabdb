"""Plugin outcomes: kube-scheduler's framework status codes, the reason strings
PodTopologySpread reports, and the score bound.

Outcomes are values, never exceptions: a node that does not fit is a Status
with a code and a reason, exactly as the scheduler's framework.Status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Code(StrEnum):
    """The framework codes a filter plugin answers with (their JSON spelling)."""

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class Status:
    """One plugin's verdict on one node; `reason` is empty on success.

    `reason` is the message as Status.Message() renders it; `parts` holds the
    separate reasons when a plugin gives several (NodeResourcesFit), each of
    which kube-scheduler counts on its own in "0/N nodes are available: ...".
    """

    code: Code = Code.SUCCESS
    reason: str = ""
    parts: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def reasons(self) -> tuple[str, ...]:
        """The reasons to count for a failed node: parts, else the reason, else the code."""
        return self.parts or (self.reason or self.code.value,)

    def to_json(self) -> dict[str, str]:
        return {"code": self.code.value, "reason": self.reason}


SUCCESS = Status()

# The two PodTopologySpread filter reasons, as kube-scheduler words them.
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

CONSTRAINTS_NOT_MATCH = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
NODE_LABEL_NOT_MATCH = Status(Code.UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)

# framework.MaxNodeScore: normalised scores lie in 0..MAX_NODE_SCORE.
MAX_NODE_SCORE = 100

PLUGIN_NAME = "PodTopologySpread"
