"""The per-snapshot caches live exactly as long as their snapshot."""

from __future__ import annotations

import gc
import weakref

from tests.builders import make_node, make_pod
from tests.scheduler.frameworks import spread_only
from webhook.scheduler.framework.memo import adopt, memo_of
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import place, simulate


def test_a_snapshot_with_a_memo_goes_when_nothing_else_holds_it() -> None:
    """A snapshot that decisions were made on, and a simulation's copy given the
    original's memo, are freed once dropped (the memo does not hold them)."""
    snap = Snapshot.from_objects([make_node().name("n1").obj(), make_node().name("n2").obj()])
    pod = make_pod().name("web").label("app", "web").obj()
    place(pod, snap, framework=spread_only())
    copy = snap.copy()
    adopt(copy, snap)
    place(pod, copy, framework=spread_only())
    simulate(pod, snap, replicas=2, framework=spread_only())
    gone = [weakref.ref(snap), weakref.ref(copy)]
    del snap, copy
    gc.collect()
    assert [ref() for ref in gone] == [None, None]


def test_memo_of_is_one_per_snapshot() -> None:
    snap = Snapshot.from_objects([make_node().name("n1").obj()])
    assert memo_of(snap) is memo_of(snap)
    assert memo_of(snap) is not memo_of(snap.copy())
