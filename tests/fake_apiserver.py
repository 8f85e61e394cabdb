"""A small kube-apiserver on 127.0.0.1 speaking the list/watch wire format, scripted by tests.

    server = FakeApiServer().start()
    server.add(make_node().name("n1").obj())         # an ADDED event at a new resourceVersion
    server.modify(obj); server.delete(obj)           # MODIFIED / DELETED
    server.bookmark("Pod")                           # BOOKMARK to watches that allow them
    server.compact("Pod")                            # older resourceVersions answer 410
    server.fail_next("Pod", 500, 500)                # next requests on pods get these statuses
    server.drop_next_event("Pod")                    # next pod event: half a line, then hang up
    server.hold_lists("StatefulSet") / release_lists("StatefulSet")
    server.stop()

What it serves, as the real one does: GET /version; GET <collection> lists with
`limit` and `continue` (items carry no kind/apiVersion), `metadata.resourceVersion`;
GET <collection>?watch=true streams chunked, one JSON event per line, from the
asked resourceVersion, with BOOKMARKs only when allowWatchBookmarks=true, an
ERROR event with a 410 Status when the resourceVersion is compacted, and the
stream closed after timeoutSeconds. Every request is logged in `requests`.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

RawObj = dict[str, Any]

COLLECTIONS: dict[str, tuple[str, str]] = {
    # kind: (collection path, apiVersion)
    "Node": ("/api/v1/nodes", "v1"),
    "Pod": ("/api/v1/pods", "v1"),
    "Service": ("/api/v1/services", "v1"),
    "ReplicationController": ("/api/v1/replicationcontrollers", "v1"),
    "ReplicaSet": ("/apis/apps/v1/replicasets", "apps/v1"),
    "StatefulSet": ("/apis/apps/v1/statefulsets", "apps/v1"),
    "Namespace": ("/api/v1/namespaces", "v1"),
    "PersistentVolume": ("/api/v1/persistentvolumes", "v1"),
    "PersistentVolumeClaim": ("/api/v1/persistentvolumeclaims", "v1"),
    "StorageClass": ("/apis/storage.k8s.io/v1/storageclasses", "storage.k8s.io/v1"),
    "CSINode": ("/apis/storage.k8s.io/v1/csinodes", "storage.k8s.io/v1"),
}
KIND_OF_PATH = {path: kind for kind, (path, _) in COLLECTIONS.items()}


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]

    @property
    def kind(self) -> str | None:
        return KIND_OF_PATH.get(self.path)

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")


@dataclass
class _Event:
    rv: int
    type: str
    obj: RawObj


def _status(code: int, reason: str, message: str) -> RawObj:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def _key(obj: RawObj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class FakeApiServer:
    """The fake's state and script; the HTTP side lives in _Handler."""

    def __init__(self, version: RawObj | None = None) -> None:
        self.version: RawObj = version or {
            "major": "1",
            "minor": "30+",
            "gitVersion": "v1.30.2-gke.1587003",
            "platform": "linux/amd64",
        }
        self.requests: list[Request] = []
        self._cond = threading.Condition()
        self._rv = 1000
        self._objects: dict[str, dict[tuple[str, str], RawObj]] = {k: {} for k in COLLECTIONS}
        self._events: dict[str, list[_Event]] = {k: [] for k in COLLECTIONS}
        self._compacted: dict[str, int] = dict.fromkeys(COLLECTIONS, 0)
        self._failures: dict[str, deque[int]] = {k: deque() for k in COLLECTIONS}
        self._drops: dict[str, int] = dict.fromkeys(COLLECTIONS, 0)
        self._held: dict[str, threading.Event] = {}
        self._quiet: set[str] = set()
        self._watch_gen: dict[str, int] = dict.fromkeys(COLLECTIONS, 0)
        self._stopping = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # ---- lifecycle -------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for gate in self._held.values():
            gate.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)

    # ---- the cluster -----------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._rv

    def _record(self, kind: str, type_: str, obj: RawObj) -> RawObj:
        self._rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("apiVersion", COLLECTIONS[kind][1])
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._events[kind].append(_Event(self._rv, type_, obj))
        self._cond.notify_all()
        return obj

    def add(self, obj: RawObj) -> RawObj:
        """Create `obj` (uid filled when absent); returns the stored copy."""
        kind = obj["kind"]
        with self._cond:
            obj = copy.deepcopy(obj)
            obj["metadata"].setdefault("uid", str(uuid.uuid4()))
            stored = self._record(kind, "ADDED", obj)
            self._objects[kind][_key(stored)] = stored
            return copy.deepcopy(stored)

    def modify(self, obj: RawObj) -> RawObj:
        """Replace the object of the same kind, namespace and name."""
        kind = obj["kind"]
        with self._cond:
            old = self._objects[kind][_key(obj)]
            obj = copy.deepcopy(obj)
            obj["metadata"]["uid"] = old["metadata"]["uid"]
            stored = self._record(kind, "MODIFIED", obj)
            self._objects[kind][_key(stored)] = stored
            return copy.deepcopy(stored)

    def delete(self, obj: RawObj) -> None:
        kind = obj["kind"]
        with self._cond:
            old = self._objects[kind].pop(_key(obj))
            self._record(kind, "DELETED", old)

    def bookmark(self, kind: str) -> int:
        """Send a BOOKMARK at a new resourceVersion (as if other kinds changed)."""
        with self._cond:
            self._rv += 1
            meta = {"resourceVersion": str(self._rv)}
            obj = {"kind": kind, "apiVersion": COLLECTIONS[kind][1], "metadata": meta}
            self._events[kind].append(_Event(self._rv, "BOOKMARK", obj))
            self._cond.notify_all()
            return self._rv

    def current(self, kind: str) -> list[RawObj]:
        """A fresh list of `kind`: the objects as they are now (deep copies)."""
        with self._cond:
            return [copy.deepcopy(o) for _, o in sorted(self._objects[kind].items())]

    # ---- the script ------------------------------------------------------------------

    def compact(self, kind: str) -> None:
        """Forget history and end open watches: a watch or continue from before now
        gets 410 Gone (an ERROR event on a watch, HTTP 410 on a list)."""
        with self._cond:
            self._compacted[kind] = self._rv
            self._events[kind] = []
            self._watch_gen[kind] += 1
            self._cond.notify_all()

    def end_watches(self, kind: str) -> None:
        """End the open watches of `kind` cleanly, as timeoutSeconds would."""
        with self._cond:
            self._watch_gen[kind] += 1
            self._cond.notify_all()

    def hold_watches(self, kind: str) -> None:
        """Open watches of `kind` deliver nothing until release_watches()."""
        with self._cond:
            self._quiet.add(kind)

    def release_watches(self, kind: str) -> None:
        with self._cond:
            self._quiet.discard(kind)
            self._cond.notify_all()

    def fail_next(self, kind: str, *statuses: int) -> None:
        """Answer the next requests (list or watch) on `kind` with these HTTP statuses;
        0 lets that request through (fail_next("Pod", 0, 410): the second one fails)."""
        with self._cond:
            self._failures[kind].extend(statuses)

    def drop_next_event(self, kind: str) -> None:
        """Send half of the next event on a `kind` watch, then close the connection."""
        with self._cond:
            self._drops[kind] += 1

    def hold_lists(self, kind: str) -> None:
        """Keep list requests of `kind` waiting until release_lists()."""
        self._held[kind] = threading.Event()

    def release_lists(self, kind: str) -> None:
        gate = self._held.pop(kind, None)
        if gate is not None:
            gate.set()

    def requests_for(self, kind: str, *, watch: bool) -> list[Request]:
        with self._cond:
            return [r for r in self.requests if r.kind == kind and r.watch == watch]

    # ---- used by the handler ---------------------------------------------------------

    def _log(self, request: Request) -> int | None:
        with self._cond:
            self.requests.append(request)
            kind = request.kind
            if kind is not None and self._failures[kind]:
                return self._failures[kind].popleft() or None
        return None

    def _page(self, kind: str, limit: int, token: str | None) -> tuple[int, RawObj]:
        with self._cond:
            start: list[str] = []
            list_rv = self._rv
            if token:
                try:
                    list_rv, *start = json.loads(base64.urlsafe_b64decode(token))
                except ValueError:
                    return 400, _status(400, "BadRequest", "invalid continue token")
                if list_rv < self._compacted[kind]:
                    msg = "The provided continue parameter is too old"
                    return 410, _status(410, "Expired", msg)
            items = sorted(self._objects[kind].items())
            if start:
                items = [(k, o) for k, o in items if list(k) > start]
            page = items[:limit] if limit > 0 else items
            meta: RawObj = {"resourceVersion": str(list_rv)}
            if len(page) < len(items):
                last = list(page[-1][0])
                meta["continue"] = base64.urlsafe_b64encode(
                    json.dumps([list_rv, *last]).encode()
                ).decode()
            out = []
            for _, obj in page:
                item = copy.deepcopy(obj)
                item.pop("kind", None)
                item.pop("apiVersion", None)
                out.append(item)
            body = {
                "kind": kind + "List",
                "apiVersion": COLLECTIONS[kind][1],
                "metadata": meta,
                "items": out,
            }
            return 200, body

    def _watch_generation(self, kind: str) -> int:
        with self._cond:
            return self._watch_gen[kind]

    def _next_events(
        self, kind: str, after: int, bookmarks: bool, until: float, gen: int
    ) -> tuple[list[_Event], bool] | None:
        """Events after `after`, waiting until some arrive or `until`; None once stopping.

        The flag says whether the first of them is to be cut in half (a drop).
        """
        with self._cond:
            while not self._stopping:
                if self._watch_gen[kind] != gen:
                    return [], False
                events = (
                    []
                    if kind in self._quiet
                    else [
                        e
                        for e in self._events[kind]
                        if e.rv > after and (bookmarks or e.type != "BOOKMARK")
                    ]
                )
                if events:
                    drop = self._drops[kind] > 0
                    if drop:
                        self._drops[kind] -= 1
                    return events, drop
                left = until - time.monotonic()
                if left <= 0:
                    return [], False
                self._cond.wait(min(left, 0.2))
            return None

    def _too_old(self, kind: str, rv: int) -> bool:
        with self._cond:
            return rv < self._compacted[kind]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-stream is normal here (stop(), dropped watches)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeApiServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Quiet: tests read `requests` instead."""

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        request = Request(parts.path, query, {k.lower(): v for k, v in self.headers.items()})
        failure = self.fake._log(request)
        if parts.path == "/version":
            self._send_json(200, self.fake.version)
            return
        kind = request.kind
        if kind is None:
            self._send_json(404, _status(404, "NotFound", f"no resource at {parts.path}"))
            return
        if failure is not None:
            reason = {410: "Expired", 500: "InternalError"}.get(failure, "Unknown")
            self._send_json(failure, _status(failure, reason, f"scripted {failure}"))
            return
        if request.watch:
            self._watch(kind, query)
            return
        gate = self.fake._held.get(kind)
        if gate is not None:
            gate.wait(10)
        status, body = self.fake._page(
            kind, int(query.get("limit", "0") or 0), query.get("continue")
        )
        self._send_json(status, body)

    def _watch(self, kind: str, query: dict[str, str]) -> None:
        rv = int(query.get("resourceVersion") or 0)
        bookmarks = query.get("allowWatchBookmarks") == "true"
        until = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        gen = self.fake._watch_generation(kind)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.fake._too_old(kind, rv):
            msg = f"too old resource version: {rv} ({self.fake.resource_version})"
            self._chunk(
                json.dumps({"type": "ERROR", "object": _status(410, "Expired", msg)}).encode()
                + b"\n"
            )
            self._chunk(b"")
            return
        while True:
            got = self.fake._next_events(kind, rv, bookmarks, until, gen)
            if got is None or not got[0]:
                if got is not None:
                    self._chunk(b"")  # timeoutSeconds reached: end the stream cleanly
                else:
                    self.close_connection = True
                return
            events, drop = got
            for i, event in enumerate(events):
                line = json.dumps({"type": event.type, "object": event.obj}).encode() + b"\n"
                if drop and i == 0:
                    half = line[: len(line) // 2]
                    self.wfile.write(b"%x\r\n%s" % (len(line), half))
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._chunk(line)
                rv = event.rv
