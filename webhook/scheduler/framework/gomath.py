"""Go's integer arithmetic where it differs from Python's, in named helpers: every
plugin that ports a Go formula (scores, normalisation, shapes) rounds and divides
through these, so a score matches kube-scheduler's to the unit."""

from __future__ import annotations

import math

__all__ = ["go_div", "go_round"]


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero (Python's round() is half to even)."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError(f"cannot round {x}")
    whole = math.trunc(x)
    # x - trunc(x) is exact in binary floating point, so no 0.49999999999999994 trap.
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return int(whole)


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors)."""
    if a >= 0 and b > 0:
        return a // b  # the same for non-negative operands, and the usual case
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
