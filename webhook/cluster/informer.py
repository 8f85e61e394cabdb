"""LiveSource: cluster state kept current by list + watch, the informer pattern.

One daemon thread per kind (Nodes, Pods, Services, ReplicaSets, StatefulSets,
ReplicationControllers, cluster-wide) runs the reflector loop:

    list (paginated: limit/continue)  -> replace that kind's objects, note resourceVersion
    watch from that resourceVersion   -> ADDED/MODIFIED upsert, DELETED delete,
                                         BOOKMARK only advances the resourceVersion
    stream ends (timeoutSeconds)      -> watch again from the last resourceVersion seen
    410 Gone (HTTP or ERROR event)    -> list again (the resourceVersion is compacted away)
    other ERROR event                 -> back off, list again
    HTTP error, dropped connection    -> back off (exponential, jittered), watch again

The kubernetes client is used for configuration and auth only (kubeconfig or
in-cluster service account, TLS, proxy, token refresh through its
Configuration and the urllib3 pool of its ApiClient). Responses are read as
raw JSON and the watch body is parsed line by line as it streams; no client
model object is ever built (they are slow and drop fields).

Every object is trimmed (trim.py) before it reaches the Snapshot. Updates
to the Snapshot take the write side of a ReadWriteLock; readers use
`with source.reading() as snap:` (see source.py).

Nothing runs at import or construction: threads start in start(), which the
server calls after gunicorn forks its workers.
"""

from __future__ import annotations

import gc
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import urllib3

from webhook.api.kube import RawObj
from webhook.cluster.needs import NEEDED
from webhook.cluster.rest import request_headers
from webhook.cluster.source import ReadWriteLock, SnapshotFactory, default_snapshot_factory
from webhook.cluster.trim import API_VERSIONS, trim
from webhook.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from kubernetes.client import ApiClient, Configuration

    from webhook.scheduler.framework.snapshot import Snapshot

__all__ = ["RESOURCES", "Backoff", "LiveSource", "Resource", "parse_server_version"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Resource:
    """One watched kind and its cluster-wide collection path."""

    kind: str
    path: str


# What the profile reads (cluster/needs.py), nothing more.
RESOURCES: tuple[Resource, ...] = tuple(Resource(k.kind, k.path) for k in NEEDED)

_LEADING_DIGITS = re.compile(r"\d+")
_GIT_VERSION = re.compile(r"v?(\d+)\.(\d+)")


def parse_server_version(body: Any) -> tuple[int, int] | None:
    """(major, minor) from a /version body; None when it cannot be read.

    Managed clusters report minors such as "30+" (GKE, EKS): the leading digits
    count. When major/minor are empty, gitVersion ("v1.30.2-eks-...") is used.
    """
    if not isinstance(body, dict):
        return None
    major, minor = body.get("major"), body.get("minor")
    if isinstance(major, str) and isinstance(minor, str):
        m1, m2 = _LEADING_DIGITS.match(major), _LEADING_DIGITS.match(minor)
        if m1 and m2:
            return int(m1.group()), int(m2.group())
    git = body.get("gitVersion")
    if isinstance(git, str):
        m = _GIT_VERSION.match(git)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


class Backoff:
    """Exponential backoff with jitter: delays grow by `factor` up to `cap`.

    Each delay is drawn uniformly from [d/2, d] so many webhook replicas that
    lost the API server at the same moment do not come back in lockstep.
    """

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self._rng = rng
        self._attempt = 0

    def next(self) -> float:
        ceiling = min(self.cap, self.initial * self.factor**self._attempt)
        self._attempt += 1
        return ceiling / 2 + self._rng() * ceiling / 2

    def reset(self) -> None:
        self._attempt = 0


class _Cursor:
    """Where one kind's watch resumes: the last resourceVersion applied (None: list
    first), and whether the current attempt applied anything."""

    def __init__(self) -> None:
        self.rv: str | None = None
        self.progressed = False


class _Gone(Exception):
    """The resourceVersion asked for is compacted away (410): list again."""


class _Relist(Exception):
    """The watch reported an error that a fresh list recovers from."""


class _HTTPError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status


# Errors after which the loop backs off and retries; anything else is a bug
# and is logged with its traceback, then retried the same way.
_TRANSIENT = (urllib3.exceptions.HTTPError, OSError, _HTTPError, ValueError)


def _key(obj: RawObj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _stub(kind: str, key: tuple[str, str]) -> RawObj:
    """The least object naming `key` (what Snapshot.delete reads)."""
    meta: RawObj = {"name": key[1]}
    if key[0]:
        meta["namespace"] = key[0]
    return {"kind": kind, "apiVersion": API_VERSIONS[kind], "metadata": meta}


def _resource_version(obj: Any) -> str | None:
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            rv = meta.get("resourceVersion")
            if isinstance(rv, str) and rv:
                return rv
    return None


def _load_configuration(
    kubeconfig: str | None, context: str | None, in_cluster: bool
) -> Configuration:
    from kubernetes import client
    from kubernetes import config as kube_config

    # The loaders are untyped: reach them through Any rather than silence mypy per call.
    config: Any = kube_config
    configuration = client.Configuration()
    try:
        if in_cluster:
            config.load_incluster_config(client_configuration=configuration)
        else:
            config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
    except (config.ConfigException, OSError, ValueError, TypeError) as exc:
        where = "in-cluster config" if in_cluster else f"kubeconfig {kubeconfig or '(default)'}"
        raise ConfigError(f"cannot load {where}: {exc}") from exc
    return configuration


class LiveSource:
    """Cluster state from the API server: list + watch of every kind the model reads.

    Give one of: an ApiClient, a Configuration, `in_cluster=True`, or a
    kubeconfig path (None = the default ~/.kube/config or $KUBECONFIG).
    Configuration is loaded here (a bad kubeconfig fails fast with
    ConfigError); the connection pool and threads are created by start().
    `prime`, when given, is run once on the state when the first list of every
    kind is in, before the source reports synced (the server builds the model's
    pod-independent indexes there, so its first reviews do not).
    """

    def __init__(
        self,
        api_client: ApiClient | None = None,
        *,
        configuration: Configuration | None = None,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        resources: Iterable[Resource] = RESOURCES,
        page_size: int = 500,
        watch_timeout: int = 300,
        connect_timeout: float = 10.0,
        list_timeout: float = 120.0,
        backoff_initial: float = 0.8,
        backoff_cap: float = 30.0,
        version_refresh: float = 600.0,
        snapshot_factory: SnapshotFactory | None = None,
        prime: Callable[[Snapshot], None] | None = None,
    ) -> None:
        self._api = api_client
        self._prime = prime
        self._owns_api = api_client is None
        if api_client is None and configuration is None:
            configuration = _load_configuration(kubeconfig, context, in_cluster)
        self._configuration = configuration
        self._resources = tuple(resources)
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.connect_timeout = connect_timeout
        self.list_timeout = list_timeout
        self.backoff_initial = backoff_initial
        self.backoff_cap = backoff_cap
        self.version_refresh = version_refresh
        self._factory = snapshot_factory

        self._lock = ReadWriteLock()
        self._snapshot: Snapshot | None = None
        # Per kind: (namespace, name) -> resourceVersion of every object the Snapshot
        # was given. Only keys and versions: the Snapshot keeps what it needs of the
        # objects, so holding them here would double the memory.
        self._stores: dict[str, dict[tuple[str, str], str]] = {}
        self._listed: set[str] = set()
        self._version: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: set[Any] = set()
        self._open_lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._counts_lock = threading.Lock()
        # wait_for's callers, woken by _upsert; _waiting counts them so that an upsert
        # nobody waits for takes no lock.
        self._arrivals = threading.Condition(threading.Lock())
        self._waiting = 0

    # ---- ClusterSource ---------------------------------------------------------------

    def start(self) -> None:
        """Create the connection pool and start the watch threads; idempotent."""
        if self._threads:
            return
        self._client()
        self._reset()
        self._stop.clear()
        for resource in self._resources:
            t = threading.Thread(
                target=self._run,
                args=(resource,),
                name=f"topospread-watch-{resource.kind}",
                daemon=True,
            )
            self._threads.append(t)
        self._threads.append(
            threading.Thread(
                target=self._version_loop, name="topospread-server-version", daemon=True
            )
        )
        for t in self._threads:
            t.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every thread (open watches are shut down, not waited out)."""
        self._stop.set()
        with self._open_lock:
            responses = list(self._open)
        for resp in responses:
            _abort(resp)
        for t in self._threads:
            t.join(timeout)
        self._threads = []
        if self._owns_api and self._api is not None:
            self._api.rest_client.pool_manager.clear()

    def synced(self) -> bool:
        return self._snapshot is not None and len(self._listed) == len(self._resources)

    def snapshot(self) -> Snapshot | None:
        return self._snapshot if self.synced() else None

    def server_version(self) -> tuple[int, int] | None:
        return self._version

    @contextmanager
    def reading(self) -> Iterator[Snapshot | None]:
        """Hold off updates while the caller reads the snapshot (None until synced)."""
        with self._lock.read():
            yield self.snapshot()

    def wait_for(self, kind: str, namespace: str, name: str, timeout: float) -> bool:
        """Whether the state holds `kind` namespace/name, waiting up to `timeout` seconds
        for a watch to deliver it. False at once while the source is not synced.

        Call without holding reading(): the object arrives through a write.
        """
        key = (namespace, name)
        deadline = time.monotonic() + timeout
        with self._arrivals:
            self._waiting += 1
            try:
                while self.synced() and key not in self._stores.get(kind, {}):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._arrivals.wait(left)
                return self.synced()
            finally:
                self._waiting -= 1

    # ---- feeding by hand ---------------------------------------------------------------

    def _reset(self) -> None:
        factory = self._factory or default_snapshot_factory()
        self._snapshot = factory([])
        self._stores = {r.kind: {} for r in self._resources}
        self._listed = set()

    def apply_event(self, kind: str, event: RawObj) -> None:
        """Apply one watch event ({"type", "object"}) as if `kind`'s watch sent it.

        For benchmarks and tools that replay recorded events without a server;
        the state is created on first use when start() has not run.
        """
        if self._snapshot is None:
            self._reset()
        resource = next(r for r in self._resources if r.kind == kind)
        with self._lock.write():
            self._apply(resource, event, "")

    # ---- introspection ---------------------------------------------------------------

    def keys(self, kind: str) -> dict[tuple[str, str], str]:
        """(namespace, name) -> resourceVersion of every object of `kind` held."""
        with self._lock.read():
            return dict(self._stores.get(kind, {}))

    def counts(self) -> dict[str, int]:
        """Event counters ("lists", "watches", "relists", "errors", ...), for metrics."""
        with self._counts_lock:
            return dict(self._counts)

    def _count(self, name: str) -> None:
        with self._counts_lock:
            self._counts[name] = self._counts.get(name, 0) + 1

    # ---- HTTP ------------------------------------------------------------------------

    def _client(self) -> ApiClient:
        """The ApiClient, created on first use (after the fork: it owns a socket pool)."""
        if self._api is None:
            from kubernetes.client import ApiClient

            self._api = ApiClient(self._configuration)
        return self._api

    def _get(
        self, path: str, query: dict[str, Any], read_timeout: float
    ) -> urllib3.BaseHTTPResponse:
        api = self._client()
        headers = request_headers(api)
        url = api.configuration.host.rstrip("/") + path
        if query:
            url += "?" + urlencode(query)
        response: urllib3.BaseHTTPResponse = api.rest_client.pool_manager.request(
            "GET",
            url,
            headers=headers,
            preload_content=False,
            retries=False,
            timeout=urllib3.Timeout(connect=self.connect_timeout, read=read_timeout),
        )
        return response

    def _get_json(self, path: str, query: dict[str, Any]) -> Any:
        resp = self._get(path, query, self.list_timeout)
        try:
            data = resp.read()
        except BaseException:
            resp.close()
            raise
        resp.release_conn()
        if resp.status == 410:
            raise _Gone(path)
        if not 200 <= resp.status < 300:
            raise _HTTPError(resp.status, data)
        return json.loads(data)

    # ---- server version --------------------------------------------------------------

    def fetch_server_version(self) -> tuple[int, int] | None:
        """Ask /version now (blocking) and remember the answer."""
        version = parse_server_version(self._get_json("/version", {}))
        if version is not None:
            self._version = version
        return version

    def _version_loop(self) -> None:
        backoff = Backoff(self.backoff_initial, self.backoff_cap)
        while not self._stop.is_set():
            try:
                got = self.fetch_server_version()
            except Exception as exc:  # noqa: BLE001 - any failure: retry later
                log.warning("GET /version failed: %s", exc)
                got = None
            if got is None:
                self._stop.wait(backoff.next())
            else:
                backoff.reset()
                self._stop.wait(self.version_refresh)

    # ---- the reflector loop ----------------------------------------------------------

    def _run(self, resource: Resource) -> None:
        backoff = Backoff(self.backoff_initial, self.backoff_cap)
        cursor = _Cursor()
        while not self._stop.is_set():
            cursor.progressed = False
            try:
                if cursor.rv is None:
                    cursor.rv = self._list(resource)
                    backoff.reset()
                self._watch(resource, cursor)
                if cursor.progressed:
                    backoff.reset()
                    continue
                # A watch that ended without a single event: do not spin on it.
                self._stop.wait(backoff.next())
                continue
            except _Gone:
                self._count("relists")
                log.info("%s: resourceVersion %s expired, listing again", resource.kind, cursor.rv)
                listing = cursor.rv is None
                cursor.rv = None
                if not listing:
                    continue
                # The list itself hit 410 (an expired continue token): retry it later.
            except _Relist as exc:
                self._count("relists")
                log.warning("%s: watch error, listing again: %s", resource.kind, exc)
                cursor.rv = None
            except _TRANSIENT as exc:
                self._count("errors")
                if not self._stop.is_set():
                    log.warning("%s: %s, retrying", resource.kind, exc)
            except Exception:  # noqa: BLE001 - never let a watch thread die
                self._count("errors")
                log.exception("%s: unexpected error, retrying", resource.kind)
            if cursor.progressed:
                # A long healthy watch that broke: come back quickly, then slow down.
                backoff.reset()
            self._stop.wait(backoff.next())

    def _list(self, resource: Resource) -> str:
        """List every object of a kind page by page and make the store equal to it."""
        self._count("lists")
        seen: set[tuple[str, str]] = set()
        query: dict[str, Any] = {"limit": self.page_size}
        while True:
            body = self._get_json(resource.path, query)
            if not isinstance(body, dict):
                raise ValueError(f"{resource.path}: list response is not an object")
            meta = body.get("metadata") or {}
            items = body.get("items") or []
            trimmed = [trim(item, resource.kind) for item in items if isinstance(item, dict)]
            with self._lock.write():
                for obj in trimmed:
                    seen.add(_key(obj))
                    self._upsert(resource.kind, obj)
            token = meta.get("continue")
            if not token:
                break
            query = {"limit": self.page_size, "continue": token}
        rv = meta.get("resourceVersion")
        if not isinstance(rv, str) or not rv:
            raise ValueError(f"{resource.path}: list response has no resourceVersion")
        store = self._stores[resource.kind]
        with self._lock.write():
            for key in [k for k in store if k not in seen]:
                self._delete(resource.kind, _stub(resource.kind, key))
            first_sync = not self.synced()
            if first_sync and self._listed | {resource.kind} == self._kinds():
                self._prime_state()
            self._listed.add(resource.kind)
            if first_sync and self.synced():
                # The snapshot is now millions of long-lived, acyclic objects: move them out of
                # the cyclic collector's reach, or every full collection walks them again and
                # a placement decision's p99 is the collector's (docs/performance.md).
                gc.freeze()
        return rv

    def _kinds(self) -> set[str]:
        return {r.kind for r in self._resources}

    def _prime_state(self) -> None:
        """Run `prime` on the state, complete but not yet reported synced (so no
        review reads it meanwhile); its failure is logged, never fatal."""
        if self._prime is None or self._snapshot is None:
            return
        try:
            self._prime(self._snapshot)
        except Exception:  # noqa: BLE001 - a cold model is slower, not wrong
            log.exception("priming the cluster state failed")

    def _watch(self, resource: Resource, cursor: _Cursor) -> None:
        """Watch from cursor.rv until the stream ends, moving the cursor past every
        event applied (so an error midway loses no progress). Raises _Gone on 410,
        _Relist on other ERROR events, transport errors as they come."""
        self._count("watches")
        rv = cursor.rv
        assert rv is not None
        # Spread watch restarts over time, as client-go does ([timeout, 2*timeout)).
        timeout = int(self.watch_timeout * (1 + random.random()))
        query = {
            "watch": "true",
            "resourceVersion": rv,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout,
        }
        resp = self._get(resource.path, query, timeout + 30)
        with self._open_lock:
            self._open.add(resp)
        complete = False
        try:
            if self._stop.is_set():
                return  # stop() ran while this request was being sent
            if resp.status == 410:
                raise _Gone(resource.path)
            if not 200 <= resp.status < 300:
                raise _HTTPError(resp.status, resp.read())
            for lines in _lines(resp):
                if self._stop.is_set():
                    break
                events = [json.loads(line) for line in lines]
                with self._lock.write():
                    for event in events:
                        rv = cursor.rv = self._apply(resource, event, rv)
                        cursor.progressed = True
            else:
                complete = True
        finally:
            with self._open_lock:
                self._open.discard(resp)
            if complete:
                resp.release_conn()
            else:
                # Unread bytes may remain: never hand this connection back to the pool.
                resp.close()

    def _apply(self, resource: Resource, event: Any, rv: str) -> str:
        """Apply one watch event (write lock held); return the resourceVersion after it."""
        if not isinstance(event, dict):
            raise ValueError(f"{resource.path}: watch event is not an object")
        kind, obj = event.get("type"), event.get("object")
        if kind == "ERROR":
            status = obj if isinstance(obj, dict) else {}
            if status.get("code") == 410:
                raise _Gone(status.get("message", ""))
            raise _Relist(f"{status.get('code')} {status.get('reason')}: {status.get('message')}")
        if not isinstance(obj, dict):
            raise ValueError(f"{resource.path}: {kind} event without an object")
        if kind in ("ADDED", "MODIFIED"):
            self._upsert(resource.kind, trim(obj, resource.kind))
            self._count("events")
        elif kind == "DELETED":
            self._delete(resource.kind, trim(obj, resource.kind))
            self._count("events")
        elif kind == "BOOKMARK":
            self._count("bookmarks")
        else:
            raise ValueError(f"{resource.path}: unknown watch event type {kind!r}")
        return _resource_version(obj) or rv

    def _upsert(self, kind: str, obj: RawObj) -> None:
        assert self._snapshot is not None
        store = self._stores[kind]
        key = _key(obj)
        rv = obj["metadata"].get("resourceVersion") or ""
        if rv and store.get(key) == rv:
            return  # unchanged: a re-list or a replayed event of an object we hold
        # The Snapshot keys objects by kind, namespace and name, as the store does:
        # an object deleted and recreated under the same name simply replaces the old.
        store[key] = rv
        self._snapshot.upsert(obj)
        if self._waiting:
            with self._arrivals:
                self._arrivals.notify_all()

    def _delete(self, kind: str, obj: RawObj) -> None:
        assert self._snapshot is not None
        if self._stores[kind].pop(_key(obj), None) is not None:
            self._snapshot.delete(obj)


def _lines(resp: urllib3.BaseHTTPResponse) -> Iterator[list[bytes]]:
    """The complete lines of a streaming body, grouped by the chunk that completed them.

    A partial line at the end of a dropped stream is discarded: the event it
    held is sent again when the watch resumes from the last whole event.
    """
    pending = b""
    for chunk in resp.stream(64 * 1024, decode_content=True):
        if not chunk:
            continue
        pending += chunk
        if b"\n" not in chunk:
            continue
        *complete, pending = pending.split(b"\n")
        lines = [line for line in complete if line.strip()]
        if lines:
            yield lines
    if pending.strip():
        # The server ended the body with a final event but no newline.
        yield [pending]


def _abort(resp: Any) -> None:
    """Unblock a thread reading `resp` (urllib3 >= 2.3 has shutdown())."""
    shutdown = getattr(resp, "shutdown", None)
    try:
        if shutdown is not None:
            shutdown()
        else:
            resp.close()
    except Exception:  # noqa: BLE001 - best effort while stopping
        log.debug("closing a watch response failed", exc_info=True)
