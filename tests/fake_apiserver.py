"""A small kube-apiserver on 127.0.0.1 speaking the list/watch wire format, scripted by tests.

    server = FakeApiServer().start()
    server.add(make_node().name("n1").obj())         # an ADDED event at a new resourceVersion
    server.modify(obj); server.delete(obj)           # MODIFIED / DELETED
    server.bookmark("Pod")                           # BOOKMARK to watches that allow them
    server.compact("Pod")                            # older resourceVersions answer 410
    server.fail_next("Pod", 500, 500)                # next requests on pods get these statuses
    server.drop_next_event("Pod")                    # next pod event: half a line, then hang up
    server.hold_lists("StatefulSet") / release_lists("StatefulSet")
    server.install_policy_reports()                 # serve wgpolicyk8s.io/v1alpha2
    server.install_policy_reports(OPEN_REPORT)      # serve openreports.io/v1alpha1 Reports
    server.fail_next("PolicyReport", 500)            # next PolicyReport request fails
    server.fail_next_pod_call(429, retry_after="0")   # next GET/PATCH of one pod: 429
    server.pod_calls("PATCH")                        # the PATCHes of single pods, in order
    server.stop()

What it serves, as the real one does: GET /version; GET <collection> lists with
`limit` and `continue` (items carry no kind/apiVersion), `metadata.resourceVersion`;
GET <collection>?watch=true streams chunked, one JSON event per line, from the
asked resourceVersion, with BOOKMARKs only when allowWatchBookmarks=true, an
ERROR event with a 410 Status when the resourceVersion is compacted, and the
stream closed after timeoutSeconds. Every request is logged in `requests`.

The workload kinds an audit lists (Deployments, DaemonSets, Jobs, CronJobs) are
served the same way (AUDIT_COLLECTIONS; not watched by the informer tests). The
PolicyReport API (wgpolicyk8s.io/v1alpha2) answers 404, as on a cluster without its
CRD, until install_policy_reports(); then it serves discovery, lists (with an
equality labelSelector), GET, POST (409 AlreadyExists), PUT (409 Conflict on a stale
resourceVersion) and DELETE (with a uid precondition) as kube-apiserver does. The
OpenReports Report API (openreports.io/v1alpha1, `reports`) is served the same way,
on its own, once install_policy_reports(OPEN_REPORT) says its CRD is there.

A single pod (/api/v1/namespaces/NS/pods/NAME) answers GET and PATCH as
kube-apiserver does: a JSON merge patch (application/merge-patch+json, RFC 7386:
null removes a key) or a JSON patch (application/json-patch+json; a failed `test`
or a bad path is 422), any other patch type 415; a resourceVersion in the patched
object that is not the stored one is 409 Conflict; a missing pod 404. A stored
change is a MODIFIED event at a new resourceVersion.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import jsonpatch

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
    "PodDisruptionBudget": ("/apis/policy/v1/poddisruptionbudgets", "policy/v1"),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1/priorityclasses", "scheduling.k8s.io/v1"),
}
# What an audit lists besides the informer's kinds.
AUDIT_COLLECTIONS: dict[str, tuple[str, str]] = {
    "Deployment": ("/apis/apps/v1/deployments", "apps/v1"),
    "DaemonSet": ("/apis/apps/v1/daemonsets", "apps/v1"),
    "Job": ("/apis/batch/v1/jobs", "batch/v1"),
    "CronJob": ("/apis/batch/v1/cronjobs", "batch/v1"),
}
ALL_COLLECTIONS = {**COLLECTIONS, **AUDIT_COLLECTIONS}
KIND_OF_PATH = {path: kind for kind, (path, _) in ALL_COLLECTIONS.items()}
POLICY_REPORTS = "/apis/wgpolicyk8s.io/v1alpha2"
POLICY_REPORT = "PolicyReport"
OPEN_REPORTS = "/apis/openreports.io/v1alpha1"
OPEN_REPORT = "Report"
# kind -> (API path, group/version, plural) of each reporting API.
REPORT_APIS: dict[str, tuple[str, str, str]] = {
    POLICY_REPORT: (POLICY_REPORTS, "wgpolicyk8s.io/v1alpha2", "policyreports"),
    OPEN_REPORT: (OPEN_REPORTS, "openreports.io/v1alpha1", "reports"),
}


# One pod's path: what GET and PATCH of a single pod address.
POD_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")


def report_kind(path: str) -> str | None:
    """The reporting API kind a path belongs to, None for any other path."""
    for kind, (prefix, _, _) in REPORT_APIS.items():
        if path == prefix or path.startswith(prefix + "/"):
            return kind
    return None


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]
    method: str = "GET"
    body: Any = None

    @property
    def kind(self) -> str | None:
        if report_kind(self.path) is not None:
            return report_kind(self.path)
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


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge key by key, null removes a key,
    anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


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
        kinds = ALL_COLLECTIONS
        self._objects: dict[str, dict[tuple[str, str], RawObj]] = {k: {} for k in kinds}
        self._events: dict[str, list[_Event]] = {k: [] for k in kinds}
        self._compacted: dict[str, int] = dict.fromkeys(kinds, 0)
        self._failures: dict[str, deque[int]] = {k: deque() for k in [*kinds, *REPORT_APIS]}
        self._drops: dict[str, int] = dict.fromkeys(kinds, 0)
        self._held: dict[str, threading.Event] = {}
        self._quiet: set[str] = set()
        self._watch_gen: dict[str, int] = dict.fromkeys(kinds, 0)
        # kind -> (namespace, name) -> stored report; None while its CRD is absent.
        self._stores: dict[str, dict[tuple[str, str], RawObj] | None] = dict.fromkeys(REPORT_APIS)
        # Scripted answers (status, Retry-After) of the next single-pod requests.
        self._pod_failures: deque[tuple[int, str | None, str | None]] = deque()
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
        obj.setdefault("apiVersion", ALL_COLLECTIONS[kind][1])
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
            obj = {"kind": kind, "apiVersion": ALL_COLLECTIONS[kind][1], "metadata": meta}
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

    # ---- the PolicyReport API ---------------------------------------------------------

    def install_policy_reports(self, kind: str = POLICY_REPORT) -> None:
        """Serve that reporting API from now on (its CRD is installed)."""
        with self._cond:
            if self._stores[kind] is None:
                self._stores[kind] = {}

    def uninstall_policy_reports(self, kind: str = POLICY_REPORT) -> None:
        """The CRD is gone: every request to that API answers 404 again."""
        with self._cond:
            self._stores[kind] = None

    def put_policy_report(self, obj: RawObj, kind: str = POLICY_REPORT) -> RawObj:
        """Store a report as someone else would (uid and resourceVersion set)."""
        with self._cond:
            assert self._stores[kind] is not None, "install_policy_reports() first"
            return copy.deepcopy(self._store_report(copy.deepcopy(obj), kind, new=True))

    def policy_reports(self, kind: str = POLICY_REPORT) -> dict[tuple[str, str], RawObj]:
        """(namespace, name) -> the stored report of that API (deep copies)."""
        with self._cond:
            return copy.deepcopy(self._stores[kind] or {})

    def writes(self) -> list[Request]:
        """The requests that were not GETs, in order."""
        with self._cond:
            return [r for r in self.requests if r.method != "GET"]

    def _store_report(self, obj: RawObj, kind: str, *, new: bool) -> RawObj:
        store = self._stores[kind]
        assert store is not None
        self._rv += 1
        obj.setdefault("apiVersion", REPORT_APIS[kind][1])
        obj.setdefault("kind", kind)
        meta = obj.setdefault("metadata", {})
        if new:
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = "2026-01-01T00:00:00Z"
        meta["resourceVersion"] = str(self._rv)
        store[(meta["namespace"], meta["name"])] = obj
        return obj

    def _report_call(
        self, method: str, path: str, query: dict[str, str], body: Any
    ) -> tuple[int, Any]:
        """Answer one request under a reporting API (REPORT_APIS)."""
        kind = report_kind(path)
        assert kind is not None
        prefix, group_version, plural = REPORT_APIS[kind]
        rest = path[len(prefix) :].strip("/").split("/")
        with self._cond:
            store = self._stores[kind]
            if store is None:
                msg = "the server could not find the requested resource"
                return 404, _status(404, "NotFound", msg)
            if rest == [""] and method == "GET":
                return 200, {
                    "kind": "APIResourceList",
                    "apiVersion": "v1",
                    "groupVersion": group_version,
                    "resources": [{"name": plural, "namespaced": True, "kind": kind}],
                }
            ns: str | None = None
            if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] == plural:
                ns, name = rest[1], (rest[3] if len(rest) == 4 else None)
            elif rest == [plural]:
                name = None
            else:
                return 404, _status(404, "NotFound", f"no resource at {path}")
            if name is None and method == "GET":
                wanted = dict(
                    part.split("=", 1)
                    for part in (query.get("labelSelector") or "").split(",")
                    if "=" in part
                )
                items = [
                    copy.deepcopy(o)
                    for (o_ns, _), o in sorted(store.items())
                    if (ns is None or o_ns == ns)
                    and all(o["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())
                ]
                meta = {"resourceVersion": str(self._rv)}
                return 200, {"kind": f"{kind}List", "metadata": meta, "items": items}
            if ns is None:
                return 405, _status(405, "MethodNotAllowed", f"{method} {path}")
            if name is None and method == "POST":
                if not isinstance(body, dict):
                    return 400, _status(400, "BadRequest", "the body is not an object")
                got = body.get("metadata", {}).get("name")
                if (ns, got) in store:
                    msg = f'{plural} "{got}" already exists'
                    return 409, _status(409, "AlreadyExists", msg)
                body["metadata"]["namespace"] = ns
                stored_new = self._store_report(copy.deepcopy(body), kind, new=True)
                return 201, copy.deepcopy(stored_new)
            if name is None:
                return 405, _status(405, "MethodNotAllowed", f"{method} {path}")
            stored = store.get((ns, name))
            if stored is None:
                return 404, _status(404, "NotFound", f'{plural} "{name}" not found')
            if method == "GET":
                return 200, copy.deepcopy(stored)
            if method == "PUT":
                if not isinstance(body, dict):
                    return 400, _status(400, "BadRequest", "the body is not an object")
                sent = body.get("metadata", {}).get("resourceVersion")
                if sent != stored["metadata"]["resourceVersion"]:
                    msg = (
                        "the object has been modified; please apply your changes to the "
                        "latest version"
                    )
                    return 409, _status(409, "Conflict", msg)
                body = copy.deepcopy(body)
                body["metadata"]["uid"] = stored["metadata"]["uid"]
                return 200, copy.deepcopy(self._store_report(body, kind, new=False))
            if method == "DELETE":
                pre = (body or {}).get("preconditions") or {}
                if "uid" in pre and pre["uid"] != stored["metadata"]["uid"]:
                    return 409, _status(409, "Conflict", "Precondition failed: UID mismatch")
                del store[(ns, name)]
                return 200, _status(200, "", "deleted") | {"status": "Success"}
            return 405, _status(405, "MethodNotAllowed", f"{method} {path}")

    # ---- single pods: GET and PATCH ---------------------------------------------------

    def fail_next_pod_call(
        self, *statuses: int, retry_after: str | None = None, method: str | None = None
    ) -> None:
        """The next single-pod requests (of `method`, default any) answer these statuses
        (with a Retry-After header when given) without touching the pod."""
        with self._cond:
            self._pod_failures.extend((status, retry_after, method) for status in statuses)

    def pod_calls(self, method: str | None = None) -> list[Request]:
        """The requests to single pods (of `method`, when given), in order."""
        with self._cond:
            return [
                r
                for r in self.requests
                if POD_PATH.match(r.path) and (method is None or r.method == method)
            ]

    def _pod_call(
        self, method: str, path: str, content_type: str, body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        """Answer GET or PATCH of one pod: (status, body, extra headers)."""
        match = POD_PATH.match(path)
        assert match is not None
        ns, name = unquote(match.group(1)), unquote(match.group(2))
        with self._cond:
            if self._pod_failures and self._pod_failures[0][2] in (None, method):
                status, retry_after, _ = self._pod_failures.popleft()
                reason = {429: "TooManyRequests", 409: "Conflict"}.get(status, "InternalError")
                headers = {"Retry-After": retry_after} if retry_after is not None else {}
                return status, _status(status, reason, f"scripted {status}"), headers
            stored = self._objects["Pod"].get((ns, name))
            if stored is None:
                return 404, _status(404, "NotFound", f'pods "{name}" not found'), {}
            if method == "GET":
                return 200, copy.deepcopy(stored), {}
            if method != "PATCH":
                return 405, _status(405, "MethodNotAllowed", f"{method} {path}"), {}
            kind = content_type.split(";")[0].strip()
            try:
                if kind == "application/merge-patch+json":
                    patched = _merge_patch(copy.deepcopy(stored), body)
                elif kind == "application/json-patch+json":
                    patched = jsonpatch.apply_patch(copy.deepcopy(stored), body)
                else:
                    msg = f"the body of the request was in an unknown format: {kind}"
                    return 415, _status(415, "UnsupportedMediaType", msg), {}
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                return 422, _status(422, "Invalid", str(exc)), {}
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                return 422, _status(422, "Invalid", "the patched object is not a pod"), {}
            sent = patched["metadata"].get("resourceVersion")
            if sent is not None and sent != stored["metadata"]["resourceVersion"]:
                msg = (
                    f'Operation cannot be fulfilled on pods "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again"
                )
                return 409, _status(409, "Conflict", msg), {}
            for field_name in ("name", "namespace", "uid"):  # immutable: kept as stored
                if field_name in stored["metadata"]:
                    patched["metadata"][field_name] = stored["metadata"][field_name]
            patched["kind"] = "Pod"
            updated = self._record("Pod", "MODIFIED", patched)
            self._objects["Pod"][(ns, name)] = updated
            return 200, copy.deepcopy(updated), {}

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
                "apiVersion": ALL_COLLECTIONS[kind][1],
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

    def _request(self, method: str) -> tuple[Request, int | None]:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        body: Any = None
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(parts.path, query, headers, method, body)
        return request, self.fake._log(request)

    def _pod(self, request: Request) -> None:
        status, body, headers = self.fake._pod_call(
            request.method, request.path, request.headers.get("content-type", ""), request.body
        )
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _write(self, method: str) -> None:
        request, failure = self._request(method)
        if POD_PATH.match(request.path):
            self._pod(request)
            return
        if failure is not None:
            self._send_json(failure, _status(failure, "InternalError", f"scripted {failure}"))
            return
        if report_kind(request.path) is None:
            self._send_json(405, _status(405, "MethodNotAllowed", f"{method} {request.path}"))
            return
        status, body = self.fake._report_call(method, request.path, request.query, request.body)
        self._send_json(status, body)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self._write("POST")

    def do_PUT(self) -> None:  # noqa: N802 - http.server's name
        self._write("PUT")

    def do_PATCH(self) -> None:  # noqa: N802 - http.server's name
        self._write("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802 - http.server's name
        self._write("DELETE")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        request, failure = self._request("GET")
        if POD_PATH.match(request.path):
            self._pod(request)
            return
        parts = urlsplit(self.path)
        query = request.query
        if report_kind(parts.path) is not None:
            if failure is not None:
                self._send_json(failure, _status(failure, "InternalError", f"scripted {failure}"))
                return
            self._send_json(*self.fake._report_call("GET", parts.path, query, None))
            return
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
