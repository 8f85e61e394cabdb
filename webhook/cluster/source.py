"""Where the webhook's cluster state comes from: one small interface, several sources.

    ClusterSource        the interface the server reads (start/stop/synced/snapshot/
                         server_version, plus reading() for a consistent view)
    StaticSource         a Snapshot given in memory (tests, CLI commands)
    FileSource           a snapshot file: `kubectl get nodes,pods,... -A -o json` output
    LiveSource           list + watch of a real cluster (webhook/cluster/informer.py)

Read discipline: a source's Snapshot may be updated in place by a background
thread (LiveSource). Code that reads it for longer than one attribute access
(a placement, a simulation) holds `with source.reading() as snap:` for the
whole read; updates wait until the block ends, so the read sees one
consistent state. Readers never modify the snapshot (trimmed objects share
sub-structures, see trim.py). StaticSource and FileSource never change their
snapshot, so for them reading() costs one lock round trip and nothing waits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from webhook.api.kube import RawObj
from webhook.cluster.trim import API_VERSIONS, trim

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.scheduler.framework.snapshot import Snapshot

__all__ = [
    "ClusterSource",
    "FileSource",
    "ReadWriteLock",
    "SnapshotFactory",
    "StaticSource",
    "read_snapshot",
    "wait_for_object",
]

# Builds a Snapshot from objects: Snapshot.from_objects, or a fake in tests.
SnapshotFactory = Callable[[Iterable[RawObj]], "Snapshot"]


def default_snapshot_factory() -> SnapshotFactory:
    """Snapshot.from_objects, imported late so importing this module stays cheap."""
    from webhook.scheduler.framework.snapshot import Snapshot

    return Snapshot.from_objects


@runtime_checkable
class ClusterSource(Protocol):
    """Cluster state as the server sees it."""

    def start(self) -> None:
        """Begin loading or watching; called once per process, after gunicorn forks."""

    def stop(self) -> None:
        """Stop background work; idempotent."""

    def synced(self) -> bool:
        """True once the first full load of every kind is done (/readyz)."""

    def snapshot(self) -> Snapshot | None:
        """The current Snapshot, None until synced. Read-only; see reading()."""

    def server_version(self) -> tuple[int, int] | None:
        """(major, minor) of the kube-apiserver, None when unknown."""


class ReadWriteLock:
    """Many readers or one writer; a waiting writer holds back new readers.

    Reads are re-entrant per thread (a reader may call code that reads again
    without deadlocking behind a waiting writer). Writes are not re-entrant.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._local = threading.local()

    @contextmanager
    def read(self) -> Iterator[None]:
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                while self._writer or self._writers_waiting:
                    self._cond.wait()
                self._readers += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._readers -= 1
                    if self._readers == 0:
                        self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@contextmanager
def read_snapshot(source: ClusterSource) -> Iterator[Snapshot | None]:
    """`with read_snapshot(source) as snap:` for any source, with or without reading()."""
    reading = getattr(source, "reading", None)
    if reading is None:
        yield source.snapshot()
        return
    with reading() as snap:
        yield snap


def wait_for_object(
    source: ClusterSource, kind: str, namespace: str, name: str, *, timeout: float
) -> bool:
    """Whether `source` holds the object, waiting up to `timeout` seconds for a source that
    can receive it (LiveSource.wait_for); a source that cannot is asked nothing (True)."""
    wait_for = getattr(source, "wait_for", None)
    if wait_for is None:
        return True
    return bool(wait_for(kind, namespace, name, timeout))


class StaticSource:
    """A Snapshot held in memory; synced as soon as it is not None."""

    def __init__(self, snapshot: Snapshot | None, version: tuple[int, int] | None = None) -> None:
        self._snapshot = snapshot
        self._version = version
        self._lock = ReadWriteLock()

    def start(self) -> None:
        """Nothing to start: the snapshot is already there."""

    def stop(self) -> None:
        """Nothing to stop."""

    def synced(self) -> bool:
        return self._snapshot is not None

    def snapshot(self) -> Snapshot | None:
        return self._snapshot

    def server_version(self) -> tuple[int, int] | None:
        return self._version

    @contextmanager
    def reading(self) -> Iterator[Snapshot | None]:
        with self._lock.read():
            yield self._snapshot

    def replace(self, snapshot: Snapshot | None) -> None:
        """Swap in another snapshot (None makes the source unsynced again)."""
        with self._lock.write():
            self._snapshot = snapshot


def snapshot_objects(objects: Iterable[RawObj]) -> Iterator[RawObj]:
    """`objects` trimmed as a live source trims them; kinds the model does not
    read (Deployments, ConfigMaps, ...) are skipped.

    For building a Snapshot from objects at hand: Snapshot.from_objects(
    snapshot_objects(objs)) holds what a LiveSource watching them would hold.
    """
    for obj in objects:
        kind = obj.get("kind")
        if isinstance(kind, str) and kind in API_VERSIONS:
            yield trim(obj, kind)


class FileSource(StaticSource):
    """A snapshot file (the `List` that `kubectl get ... -A -o json` prints), loaded once.

    Read with files.load_snapshot, as every CLI command reads `--snapshot`: the
    same files are accepted everywhere, the file is read in chunks and each object
    trimmed as it is decoded (what a LiveSource holds), so a 2,000,000-pod file
    never exists whole in memory. start() loads the file
    (synchronously: it is local); load() does the same and may be called earlier
    to fail fast on an unusable file (InputError).
    """

    def __init__(
        self,
        path: str | Path,
        version: tuple[int, int] | None = None,
        *,
        loader: Callable[[Path], Snapshot] | None = None,
    ) -> None:
        super().__init__(None, version)
        self.path = Path(path)
        self._loader = loader

    def load(self) -> Snapshot:
        """Read the file, build the Snapshot, mark the source synced."""
        loader = self._loader
        if loader is None:
            from webhook.cluster.files import load_snapshot

            def loader(path: Path) -> Snapshot:
                return load_snapshot(path, trimmed=True)

        snapshot = loader(self.path)
        self.replace(snapshot)
        return snapshot

    def start(self) -> None:
        if self._snapshot is None:
            self.load()
