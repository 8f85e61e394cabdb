"""The one cluster reader: a snapshot file or a live cluster's lists into a Collector.

    collected = read_file("cluster.json")              # InputError when unreadable
    collected = read_cluster(conn, progress=sys.stderr, check=stopped)   # ClusterError
    state, pods = collected.state(), collected.pods     # the audit's state; every pod kept

A live cluster is listed once, every kind an audit reads (lister.AUDIT_RESOURCES), page
by page; `check` runs before each object is taken (it raises to end a read a stop
request has made moot). The cluster client is imported only when a live cluster is
read, so an audit of a file never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from webhook.audit.state.inventory import Collector
from webhook.cluster.files import scan_list

__all__ = ["read_cluster", "read_file"]


def read_file(path: str) -> Collector:
    """Every object of a snapshot file (`-`: standard input), collected."""
    collector = Collector()
    scan_list(path, collector.add)
    return collector


def read_cluster(
    conn: Any,
    *,
    progress: TextIO | None = None,
    check: Callable[[], None] | None = None,
) -> Collector:
    """Every object of every kind an audit reads, listed from the cluster of `conn` (a
    lister.Connection, not imported here so that reading a file never loads the cluster
    client) and collected; ClusterError when a list fails."""
    from webhook.cluster.lister import AUDIT_RESOURCES, list_objects

    return Collector.of(list_objects(conn, AUDIT_RESOURCES, progress=progress), check=check)
