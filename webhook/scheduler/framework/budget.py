"""A time budget for one call into the model: the /validate foresight's.

`within(seconds)` sets a deadline for the calling thread (a context variable: each
request thread of a worker has its own); the model's long loops call `checkpoint()`
between chunks of nodes, which raises OutOfTime once the deadline has passed. Outside
`within` a checkpoint costs one context-variable read and never raises, so every
other caller (place, simulate, audit) runs to completion as before.

What a loop finished before giving up is kept where it is remembered anyway (the
filter outcomes per node, framework.runtime.filter.filter_outcomes): the next call with a budget
resumes from there instead of starting again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["CHUNK", "OutOfTime", "budgeted", "checkpoint", "spent", "within"]

# Nodes judged between two checkpoints: about a millisecond of work at most (a node
# failing a filter is judged again for its reasons).
CHUNK = 64

_deadline: ContextVar[float | None] = ContextVar("topospread_deadline", default=None)
_clock = time.monotonic


class OutOfTime(Exception):
    """The budget set by `within` is spent."""


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Run the body with a deadline `seconds` from now (nested budgets keep the earlier
    deadline)."""
    deadline = _clock() + seconds
    outer = _deadline.get()
    token = _deadline.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _deadline.reset(token)


def budgeted() -> bool:
    """Whether the calling thread runs under a budget (whatever is left of it)."""
    return _deadline.get() is not None


def spent() -> bool:
    """Whether the current budget is spent (never without a budget)."""
    deadline = _deadline.get()
    return deadline is not None and _clock() > deadline


def checkpoint() -> None:
    """Raise OutOfTime when the current budget is spent; nothing without a budget."""
    if spent():
        raise OutOfTime
