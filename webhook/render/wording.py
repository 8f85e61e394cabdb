"""Words the text report and the HTML page both say, written once.

Pure: each function reads plain values (never the audit's types), so the text (from
the audit's objects) and the page (from the JSON document) say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HONOR_HEADING",
    "HONOR_RECOVERS",
    "HONOR_STUCK",
    "HONOR_UNCHANGED",
    "Verdict",
    "honor_verdict",
]

# The outage drill's comparison (`withHonor`): the pending pods of each workload placed
# again with nodeTaintsPolicy: Honor.
HONOR_HEADING = "with nodeTaintsPolicy: Honor on their DoNotSchedule constraints"
HONOR_RECOVERS = "recovers"
HONOR_UNCHANGED = "no change (no constraint leaves tainted nodes in its domains)"
_STUCK = "would not recover"
_STUCK_WHY = " (what is left is capacity, or minDomains / ScheduleAnyway)"
HONOR_STUCK = _STUCK + _STUCK_WHY


@dataclass(frozen=True, slots=True)
class Verdict:
    """A verdict's words: `head`, the part a terminal colours, then `rest`; `tone`:
    "good", "bad" or "mute" (the page's class; the text colours good green, bad red and
    leaves mute plain)."""

    tone: str
    head: str
    rest: str = ""

    @property
    def words(self) -> str:
        return self.head + self.rest


def honor_verdict(pending: int, placed: int, changed: bool) -> Verdict:
    """Whether nodeTaintsPolicy: Honor lets a workload's pending pods recover: no
    constraint had a policy to change; all `pending` placed; or not (what is left is
    capacity, minDomains or ScheduleAnyway)."""
    if not changed:
        return Verdict("mute", HONOR_UNCHANGED)
    if placed == pending:
        return Verdict("good", HONOR_RECOVERS)
    return Verdict("bad", _STUCK, _STUCK_WHY)
