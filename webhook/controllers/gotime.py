"""Go's arithmetic and metav1.Time as the controllers use them: RFC 3339 times read
once (a zero or unreadable time is None, as metav1.Time's zero value), durations in
nanoseconds (time.Duration), math.Round, math.Ceil/Floor on int*int/100."""

from __future__ import annotations

import math
from datetime import UTC, datetime

__all__ = ["duration_ns", "go_round", "parse_time"]


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time as the API serialises metav1.Time; None when absent or not a
    time (upstream reads such a field as the zero time)."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC)


def duration_ns(later: datetime, earlier: datetime) -> int:
    """later - earlier as a Go time.Duration (integer nanoseconds)."""
    delta = later - earlier
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round() is half to even)."""
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return int(whole)
