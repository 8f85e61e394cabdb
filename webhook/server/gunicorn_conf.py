"""gunicorn settings and server hooks `topospread serve` runs with.

Plain module-level settings, so the file also works as `gunicorn -c` config. gthread
workers: the handlers are short and CPU bound, a few threads per worker absorb slow
TLS clients. Hooks import late: prometheus_client must not be imported before serve
has set PROMETHEUS_MULTIPROC_DIR.

Shutdown (serve's DrainingArbiter runs it; docs/operations.md draws the timeline): on
SIGTERM the master sets a DrainFlag shared with every worker, so /readyz answers 503
and each response closes its connection, keeps serving for `drain_seconds` while
endpoints drop the pod, then stops gunicorn gracefully: the listener closes and the
workers finish what they hold within `graceful_timeout`. The pod's
terminationGracePeriodSeconds must outlast preStop + drain_seconds + graceful_timeout.
"""

from __future__ import annotations

import mmap
import os
import shutil
from collections.abc import Callable
from typing import Any

from webhook.server.worker import connection_limit

__all__ = [
    "OPTIONS",
    "DrainFlag",
    "child_exit",
    "close_while_draining",
    "connection_policy",
    "on_exit",
    "on_starting",
    "worker_exit",
    "worker_sees",
]

# The env var serve sets when it made the metrics directory itself (and so removes it).
OWNED_METRICS_DIR = "TOPOSPREAD_OWNED_METRICS_DIR"

# gunicorn's gthread worker, closing connections of stalled clients quietly (worker.py).
worker_class = "webhook.server.worker.TopospreadWorker"
workers = 2
threads = 4
# kube-apiserver gives a webhook 10 s by default (at most 30 s): a request taking longer
# is already lost, and a stuck worker is restarted.
timeout = 30
# Requests in flight when the workers are told to stop get this long to finish: three
# times the webhook's timeoutSeconds (5 s in deploy/), after which kube-apiserver has
# given up on them anyway.
graceful_timeout = 15
# After SIGTERM: seconds the server goes on serving, /readyz failing, before it stops
# accepting. Endpoints take a few seconds to drop a terminating pod. Config key
# shutdown.drainSeconds.
drain_seconds = 5.0
# Seconds an idle kept-alive connection is kept. Longer than kube-apiserver's own idle
# timeout for its webhook connections (client-go's transport: 90 s), so the client is the
# one to close an idle connection: a server closing it first races the client's next
# request on it, which then fails (connection reset) and, under failurePolicy Fail,
# refuses a pod. Idle connections wait in the poller and hold no thread.
keepalive = 120
# Every worker binds its own listening socket with SO_REUSEPORT (gunicorn 22+ does so
# after the fork when this is set), so the kernel spreads new connections between the
# workers instead of leaving them to an accept race that can put every kept-alive
# connection on one worker.
reuse_port = True
# Requests per kept-alive connection before it is answered `Connection: close`; config
# key server.keepaliveRequests (worker.py).
keepalive_requests = 1000
proc_name = "topospread"
accesslog = None
# No access log at all: with a logging config set, gunicorn would build every access
# line only for the logger to drop it.
logger_class = "webhook.server.worker.NoAccessLogger"
errorlog = "-"
loglevel = "info"
# gunicorn 25.1+ opens a control socket at one fixed path per user: a second server on
# the same machine (tests, several webhooks) would fight over it. Nothing here uses it.
control_socket_disable = True


class DrainFlag:
    """A flag the master sets and every worker reads: one byte of anonymous shared
    memory, made before the workers are forked (workers forked later share it too)."""

    def __init__(self) -> None:
        # fileno -1: anonymous; MAP_SHARED is the default, so forks see the same byte.
        self._mem = mmap.mmap(-1, 1)

    def set(self) -> None:
        self._mem[0] = 1

    def is_set(self) -> bool:
        return self._mem[0] == 1


def close_while_draining(flag: DrainFlag) -> Callable[[Any, Any], None]:
    """A `pre_request` hook: while draining, answer with `Connection: close`, so clients
    holding a kept-alive connection reconnect, through endpoints that no longer list us."""

    def pre_request(worker: Any, req: Any) -> None:
        if flag.is_set():
            req.must_close = True

    return pre_request


def connection_policy(
    flag: DrainFlag, keepalive_requests: int = keepalive_requests
) -> Callable[[Any, Any], None]:
    """A `pre_request` hook: answer with `Connection: close` while draining (as
    close_while_draining) and on about the `keepalive_requests`-th request of a
    connection (worker.connection_limit), so kept-alive connections are spread again."""

    def pre_request(worker: Any, req: Any) -> None:
        if flag.is_set():
            req.must_close = True
            return
        number = req.req_number
        if number >= keepalive_requests // 2 and number >= connection_limit(
            keepalive_requests, _peer_port(req)
        ):
            req.must_close = True

    return pre_request


def _peer_port(req: Any) -> int:
    peer = getattr(req, "peer_addr", None)
    if isinstance(peer, tuple) and len(peer) > 1 and isinstance(peer[1], int):
        return peer[1]
    return 0


def on_starting(server: Any) -> None:
    """Start with an empty metrics directory: samples of an earlier run must not count."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path and os.path.isdir(path):
        for name in os.listdir(path):
            if name.endswith(".db"):
                os.unlink(os.path.join(path, name))


def post_fork(server: Any, worker: Any) -> None:
    """Name the listener this worker opened (with reuse_port each worker binds its own,
    so the arbiter's `Listening at:` line has none to name)."""
    sockets = getattr(worker, "sockets", None) or []
    if sockets:
        server.log.info("worker %s listening at %s", worker.pid, ",".join(str(s) for s in sockets))


def worker_sees(flag: DrainFlag, *, share_port: bool = False) -> Callable[[Any, Any], None]:
    """A `post_fork` hook (post_fork's, plus): the worker reads `flag` to close its idle
    kept-alive connections while draining, and with `share_port` listens only once
    ready (worker.TopospreadWorker)."""

    def hook(server: Any, worker: Any) -> None:
        post_fork(server, worker)
        worker.draining = flag.is_set
        worker.joins_when_ready = share_port

    return hook


def child_exit(server: Any, worker: Any) -> None:
    """Drop a dead worker's live gauges from the shared metrics."""
    from webhook.server.metrics import mark_process_dead

    mark_process_dead(worker.pid)


def worker_exit(server: Any, worker: Any) -> None:
    """Stop the worker's cluster source (its watch threads) and metrics sampling."""
    from webhook.server.app import EXTENSION

    app = getattr(worker, "wsgi", None)
    services = getattr(app, "extensions", {}).get(EXTENSION) if app is not None else None
    if services is not None:
        services.stop()


def on_exit(server: Any) -> None:
    """Remove the metrics directory serve created for this run."""
    path = os.environ.get(OWNED_METRICS_DIR)
    if path:
        shutil.rmtree(path, ignore_errors=True)


OPTIONS: dict[str, Any] = {
    "worker_class": worker_class,
    "workers": workers,
    "threads": threads,
    "timeout": timeout,
    "graceful_timeout": graceful_timeout,
    "keepalive": keepalive,
    "reuse_port": reuse_port,
    "logger_class": logger_class,
    "proc_name": proc_name,
    "accesslog": accesslog,
    "errorlog": errorlog,
    "loglevel": loglevel,
    "control_socket_disable": control_socket_disable,
    "on_starting": on_starting,
    "post_fork": post_fork,
    "child_exit": child_exit,
    "worker_exit": worker_exit,
    "on_exit": on_exit,
}
