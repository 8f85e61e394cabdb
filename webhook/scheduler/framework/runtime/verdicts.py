"""Interning of per-node verdict rows: nodes with the same outcome share one status map
and one score map, and a decision whose rows are those of the previous one reuses its
NodeVerdict objects (ours; upstream has no counterpart: it keeps a NodeToStatus map).
"""

from __future__ import annotations

import threading
from collections import deque
from itertools import compress, repeat
from operator import itemgetter, ne
from typing import Any, NamedTuple

from webhook.scheduler.framework.memo import (
    FilterMemo,
)
from webhook.scheduler.framework.types import (
    NodeVerdict,
    Status,
)

__all__ = ["MAX_CONTENTS", "Contents", "Last", "node_verdicts", "same_row"]


class Contents:
    """Every distinct verdict content (feasible, status map, score map, sum) a
    snapshot's decisions handed out, numbered, so each node's verdict can be told by
    a small int and compared with the previous decision's in C. The maps are held
    here, so the identities the numbers are keyed by are never reused while it lives;
    past MAX_CONTENTS a new one starts with what the previous verdicts use (`kept`)."""

    __slots__ = ("ids", "values", "_lock")

    def __init__(self) -> None:
        self.ids: dict[tuple[bool, int, int, int], int] = {}
        self.values: list[tuple[bool, dict[str, Status], dict[str, int], int]] = []
        self._lock = threading.Lock()

    def number(
        self, feasible: bool, filters: dict[str, Status], scores: dict[str, int], total: int
    ) -> int:
        key = (feasible, id(filters), id(scores), total)
        hit = self.ids.get(key)
        if hit is None:
            with self._lock:
                hit = self.ids.get(key)
                if hit is None:
                    self.values.append((feasible, filters, scores, total))
                    hit = self.ids[key] = len(self.values) - 1
        return hit

    def kept(self, numbers: list[int]) -> tuple[Contents, list[int]]:
        """A new numbering holding only the contents `numbers` use, and `numbers` in it."""
        other = Contents()
        renumbered = {n: other.number(*self.values[n]) for n in set(numbers)}
        return other, list(map(renumbered.__getitem__, numbers))


MAX_CONTENTS = 16384


class Last(NamedTuple):
    """The previous decision's verdicts and what they were built from (see
    node_verdicts): one per snapshot, whatever the pod."""

    names: list[str]
    keys: list[int]
    per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]]
    scored: list[int]
    rows: list[Any] | None
    row_info: dict[Any, tuple[dict[str, int], int]]
    contents: Contents
    numbers: list[int]
    verdicts: list[NodeVerdict]
    tied: list[str]


def node_verdicts(
    names: list[str],
    keys: list[int],
    per_key: dict[int, tuple[bool, dict[str, Status], tuple[str, ...]]],
    scored: list[int],
    rows: list[Any] | None,
    row_info: dict[Any, tuple[dict[str, int], int]],
    shared: FilterMemo,
) -> Last:
    """Every node's verdict, and the tied best nodes.

    scored: the positions of the nodes with scores (the feasible ones, none when
    scoring failed); rows: each one's row of scores (None: the same for all);
    row_info: row -> (score map, weighted sum).

    A node whose status map, score map and sum are the very ones of the previous
    decision keeps its verdict object (fewer objects made, less for the GC). When the
    keys and rows are those of the previous decision, its list is the answer without
    a pass over the nodes; else each node's verdict content is numbered (Contents)
    and the numbers compared with the previous ones in C.
    """
    last: Last | None = shared.last
    if (
        last is not None
        and last.names is names
        and (last.keys is keys or last.keys == keys)
        and all(last.per_key.get(key) is v for key, v in per_key.items())
        and (last.scored is scored or last.scored == scored)
        and (last.rows is rows or last.rows == rows)
        and len(last.row_info) == len(row_info)
        and all(same_row(last.row_info.get(row), info) for row, info in row_info.items())
    ):
        made = last._replace(keys=keys, per_key=per_key, scored=scored, rows=rows)
        shared.last = made = made._replace(row_info=row_info)
        return made
    if last is None:
        contents, before = Contents(), None
    else:
        contents, before = last.contents, last.numbers if last.names is names else None
        if len(contents.values) > MAX_CONTENTS:
            # Start afresh with what the previous verdicts hold, so they still compare.
            contents, before = contents.kept(before or [])
    none: dict[str, int] = shared.share("no score", dict)
    numbered = {
        key: contents.number(ok, statuses, none, 0) for key, (ok, statuses, _) in per_key.items()
    }
    numbers = list(map(numbered.__getitem__, keys))
    best = max(map(itemgetter(1), row_info.values()), default=None)
    tied: list[str] = []
    if scored:
        # Every feasible node holds the one key of a plain pass (outcome 0 and the
        # class-wise plugins' Success): the runtime tells passing nodes no further apart.
        (statuses,) = [v[1] for v in per_key.values() if v[0]]
        number = contents.number
        of_row = {row: number(True, statuses, m, total) for row, (m, total) in row_info.items()}
        at = repeat(of_row[()]) if rows is None else map(of_row.__getitem__, rows)
        deque(map(numbers.__setitem__, scored, at), 0)
        if rows is None:
            tied = list(map(names.__getitem__, scored))
        else:
            top = {row for row, (_, total) in row_info.items() if total == best}
            tied = list(map(names.__getitem__, compress(scored, map(top.__contains__, rows))))
    values = contents.values
    new = tuple.__new__
    if last is not None and before is not None:
        verdicts = list(last.verdicts)
        for i in compress(range(len(names)), map(ne, numbers, before)):
            verdicts[i] = new(NodeVerdict, (names[i], *values[numbers[i]]))
    else:
        verdicts = [
            new(NodeVerdict, (name, *values[n])) for name, n in zip(names, numbers, strict=True)
        ]
    made = Last(names, keys, per_key, scored, rows, row_info, contents, numbers, verdicts, tied)
    shared.last = made
    return made


def same_row(was: tuple[dict[str, int], int] | None, now: tuple[dict[str, int], int]) -> bool:
    """Whether a row's (score map, sum) is the very one it was (the map by identity)."""
    return was is not None and was[0] is now[0] and was[1] == now[1]
