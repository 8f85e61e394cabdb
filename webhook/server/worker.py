"""The connection layer under the app: kernel socket timeouts, connection rotation, and
the gthread worker serve runs.

Stalled clients (tls.ioTimeoutSeconds). gthread reads and writes a connection in
blocking mode in one of a few threads, so a client that stalls mid-handshake,
mid-request or mid-response must not hold that thread for good. A Python-level
socket timeout does it, at a price: CPython then polls the socket before every SSL
write, releasing and taking the GIL around each poll. Here the kernel bounds the
calls instead: SO_RCVTIMEO and SO_SNDTIMEO on a socket whose file descriptor stays
blocking. CPython's SSL layer loops forever on a blocking socket whose read times
out (it retries SSL_ERROR_WANT_READ), so the Python object is kept in non-blocking
mode (timeout 0) over the blocking descriptor: a read or write blocks in the kernel
for at most the timeout, then raises SSLWantReadError / SSLWantWriteError, and the
worker closes the connection quietly.

Connection rotation (server.keepaliveRequests). gunicorn keeps a kept-alive
connection on the worker that accepted it, and kube-apiserver holds a few of them
for a long time: each connection is answered `Connection: close` after about N
requests (as nginx's keepalive_requests), so the client reconnects and the kernel's
SO_REUSEPORT balancing (gunicorn's reuse_port: every worker binds its own listening
socket) spreads the connections again.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
import ssl
import struct
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from gunicorn import http as gunicorn_http
from gunicorn import sock as gunicorn_sock
from gunicorn.glogging import Logger
from gunicorn.workers.gthread import TConn, ThreadWorker

try:  # gunicorn 24+: a thread hands a connection without data back to the poller
    from gunicorn.workers.gthread import _DEFER, DEFAULT_WORKER_DATA_TIMEOUT
except ImportError:  # pragma: no cover - older gunicorn: its own handle() as it is
    _DEFER, DEFAULT_WORKER_DATA_TIMEOUT = None, 5.0

from webhook.config import Settings
from webhook.errors import ConfigError

__all__ = [
    "DRAIN_IDLE_SECONDS",
    "DRAIN_POLL_SECONDS",
    "KEEPALIVE_REQUESTS",
    "STOP_LINGER_SECONDS",
    "KernelTimeoutContext",
    "KernelTimeoutSSLSocket",
    "NoAccessLogger",
    "TopospreadWorker",
    "close_idle",
    "connection_limit",
    "keepalive_requests",
    "set_kernel_timeouts",
]

# Requests served on one kept-alive connection before it is closed (nginx's default).
KEEPALIVE_REQUESTS = 1000
MAX_KEEPALIVE_REQUESTS = 1_000_000

# While draining, the worker's event loop wakes at least this often to close the
# kept-alive connections that went idle (seconds)...
DRAIN_POLL_SECONDS = 0.2
# ...once idle this long, not at their keep-alive timeout (gunicorn_conf.keepalive).
DRAIN_IDLE_SECONDS = 0.5

# Once the worker stops, a connection not yet carrying a request is kept this long at
# most (gthread's own linger for kept-alive connections when stopping).
STOP_LINGER_SECONDS = 2.0

# A client that went away (gthread closes these quietly too).
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)

# The errors a kernel timeout raises from a socket kept as KernelTimeoutSSLSocket keeps it.
_STALLED = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError, TimeoutError)


def keepalive_requests(settings: Settings) -> int:
    """server.keepaliveRequests of the config (default KEEPALIVE_REQUESTS)."""
    server = settings.raw.get("server") or {}
    if not isinstance(server, dict):
        raise ConfigError("server: must be a mapping")
    value = server.get("keepaliveRequests", KEEPALIVE_REQUESTS)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"server.keepaliveRequests: must be a whole number, got {value!r}")
    if not 1 <= value <= MAX_KEEPALIVE_REQUESTS:
        raise ConfigError(
            f"server.keepaliveRequests: must be from 1 to {MAX_KEEPALIVE_REQUESTS}, got {value}"
        )
    return value


def connection_limit(limit: int, peer_port: int) -> int:
    """How many requests the connection from `peer_port` gets: `limit`, less up to an
    eighth, so that connections opened together are not all closed together."""
    spread = limit // 8
    return limit - (peer_port * 2654435761 % (spread + 1)) if spread else limit


def set_kernel_timeouts(sock: socket.socket, seconds: float) -> None:
    """SO_RCVTIMEO and SO_SNDTIMEO: a blocking read or write returns EAGAIN after `seconds`."""
    whole = int(seconds)
    value = struct.pack("ll", whole, int((seconds - whole) * 1_000_000))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


class KernelTimeoutSSLSocket(ssl.SSLSocket):
    """An SSL socket whose "blocking" mode is the kernel's, bounded by socket options.

    setblocking(True), which gthread calls before every request, leaves the Python
    object in non-blocking mode (no poll before a read or write, see the module
    docstring) over a blocking descriptor; setblocking(False), called when gthread parks
    the connection in its poller, changes nothing (only readiness is watched there).
    settimeout(0), which the ssl module itself calls after a handshake to restore the
    mode it found, means the same kernel-bounded mode: true non-blocking I/O is never
    wanted on these sockets. Any other settimeout() (gunicorn's bounded body drain and
    lingering close) works as usual until the next setblocking(True).
    """

    _kernel_mode = False

    def setblocking(self, flag: bool) -> None:
        if not flag or self._kernel_mode:
            return
        super().settimeout(0.0)
        os.set_blocking(self.fileno(), True)
        self._kernel_mode = True

    def settimeout(self, value: float | None) -> None:
        if value == 0.0:
            self.setblocking(True)
            return
        self._kernel_mode = False
        super().settimeout(value)


class KernelTimeoutContext:
    """What serve hands gunicorn as its SSL context: the current context of `context`
    (a CertReloader's, so a rotated certificate is picked up), wrapping each accepted
    socket as a KernelTimeoutSSLSocket with kernel timeouts of `io_timeout` seconds."""

    def __init__(self, context: Callable[[], ssl.SSLContext], io_timeout: float) -> None:
        self._context = context
        self.io_timeout = io_timeout

    def gunicorn_ssl_context(self, conf: object, default_factory: object) -> Any:
        """gunicorn's `ssl_context(conf, default_ssl_context_factory)` hook."""
        return self

    def wrap_socket(self, sock: socket.socket, **kwargs: Any) -> ssl.SSLSocket:
        set_kernel_timeouts(sock, self.io_timeout)
        # What SSLContext.wrap_socket does, with our socket class.
        tls = KernelTimeoutSSLSocket._create(  # type: ignore[attr-defined]
            sock=sock,
            server_side=kwargs.get("server_side", True),
            do_handshake_on_connect=kwargs.get("do_handshake_on_connect", True),
            suppress_ragged_eofs=kwargs.get("suppress_ragged_eofs", True),
            server_hostname=None,
            context=self._context(),
            session=None,
        )
        tls.setblocking(True)
        return tls  # type: ignore[no-any-return]


class TopospreadWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's gthread worker; a connection whose client stalled past the kernel
    timeouts (or went away) is closed without an error response or a traceback.

    Stopping, as kube-apiserver needs it (kubernetes#127335). While the server drains
    (`draining`, serve's DrainFlag), every kept-alive connection idle for
    DRAIN_IDLE_SECONDS is closed then, not at its keep-alive timeout: the client's next
    request opens a new connection, through endpoints that no longer list this pod (or,
    replicas sharing a port with SO_REUSEPORT, to a listener the kernel still spreads
    over). When the
    worker stops accepting, it takes the connections already queued on its listener and
    closes the listener in the same step: gunicorn would leave it open, unpolled, until
    the end of the graceful timeout, and with SO_REUSEPORT the kernel goes on queueing
    new connections on it that nobody accepts.
    """

    draining: Callable[[], bool] = staticmethod(lambda: False)
    # Set by serve --share-port: the worker listens only once its app is ready (cluster
    # state synced), as endpoints list a pod only once it is ready; until then the
    # kernel sends the port's connections to the replicas already listening.
    joins_when_ready = False
    alive: bool
    # Connections queued on the listener in the moment between the fork (where gunicorn
    # opens it) and init_process (where it is put aside): served once the worker joins.
    _early: list[tuple[socket.socket, Any]]

    def init_process(self) -> None:
        self._early = []
        if self.joins_when_ready:
            self._leave_port()
        super().init_process()

    def run(self) -> None:
        if self.joins_when_ready:
            self._wait_until_ready()
            if not self.alive:
                return
            for listener in self.sockets:
                listener.sock.listen(self.cfg.backlog)
            self.log.info("worker %s ready: joined the shared port", self.pid)
            for client, addr in self._early:
                self.nr_conns += 1
                client.setblocking(True)
                self.enqueue_req(TConn(self.cfg, client, addr, client.getsockname()))
            self._early = []
        super().run()

    def _leave_port(self) -> None:
        """Swap each listening socket for one bound to the same address (SO_REUSEPORT)
        that does not listen yet; what was already queued is kept for later."""
        for listener in self.sockets:
            old = listener.sock
            new = socket.socket(old.family, socket.SOCK_STREAM)
            new.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            new.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if old.family in (socket.AF_INET, socket.AF_INET6):
                # As gunicorn sets it on the listener it opens, for the accepted sockets
                # to inherit: without it a response's TLS records wait on the client's
                # delayed ACK (Nagle), tens of milliseconds a call.
                new.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            new.bind(old.getsockname())
            new.setblocking(False)
            self._early.extend(_accept_queued(old))
            old.close()
            listener.sock = new

    def _wait_until_ready(self) -> None:
        from webhook.server.app import EXTENSION

        services = getattr(self.wsgi, "extensions", {}).get(EXTENSION)
        while self.alive and services is not None and not services.ready():
            self.notify()
            if not self.is_parent_alive():
                self.alive = False
                return
            time.sleep(DRAIN_POLL_SECONDS)

    def handle(self, conn: Any) -> Any:
        """gthread's handle, except that a new connection whose client sent no request
        right after the TLS handshake goes back to the poller instead of holding one of
        the few threads in a blocking read: kube-apiserver's HTTP client dials more
        connections than it uses at once under a burst and keeps the rest idle, and a
        thread per idle connection starves the requests queued behind them."""
        if conn.initialized or _DEFER is None:
            return super().handle(conn)
        if not conn.data_ready and not conn.wait_for_data(DEFAULT_WORKER_DATA_TIMEOUT):
            return _DEFER
        try:
            if self.cfg.is_ssl:
                if not self._handshake_step(conn):
                    conn.data_ready = False
                    return _DEFER
            else:
                conn.sock.setblocking(True)
                conn.init()
        except Exception as exc:  # noqa: BLE001 - as gthread answers a failed handshake
            if isinstance(exc, ssl.SSLError | OSError) and (
                getattr(exc, "errno", None) in _GONE or exc.args[:1] == (ssl.SSL_ERROR_EOF,)
            ):
                self.log.debug("client gone during the TLS handshake: %r", exc)
                conn.close()
            else:
                self.handle_error(None, conn.sock, conn.client, exc)
            return False
        if conn.is_http2 or _request_waiting(conn.sock):
            return super().handle(conn)
        conn.data_ready = False
        return _DEFER

    def _handshake_step(self, conn: Any) -> bool:
        """Take the TLS handshake of a new connection as far as the client's bytes allow,
        without waiting for more: True once it is complete (the connection then reads
        requests as gthread's init() leaves it), False when the client's next flight has
        not arrived yet (the connection goes back to the poller, holding no thread).

        gthread does the handshake in a thread, in blocking mode: when kube-apiserver is
        short of CPU it can take seconds between its ClientHello and its Finished, and a
        few such connections hold every thread while the calls queued behind them run
        into the API server's deadline (measured: docs/performance.md, "In the admission
        chain"). The kernel timeouts still bound the blocking reads that follow."""
        if not isinstance(conn.sock, ssl.SSLSocket):
            conn.sock = gunicorn_sock.ssl_context(self.cfg).wrap_socket(
                conn.sock,
                server_side=True,
                suppress_ragged_eofs=self.cfg.suppress_ragged_eofs,
                do_handshake_on_connect=False,
            )
        fd = conn.sock.fileno()
        os.set_blocking(fd, False)
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            return False
        except ssl.SSLWantWriteError:
            # Our flight did not fit the socket's buffer: finish it blocking, bounded by
            # the kernel timeouts as every other write.
            os.set_blocking(fd, True)
            conn.sock.do_handshake()
        finally:
            os.set_blocking(fd, True)
        conn.initialized = True
        conn.parser = gunicorn_http.get_parser(self.cfg, conn.sock, conn.client)
        return True

    def finish_request(self, conn: Any, fs: Any) -> None:
        """gthread's, except for a connection handed back to the poller (_DEFER) with its
        TLS handshake under way (its deadline is the I/O timeout), or, once the worker is
        stopping, with its handshake or first request still to come: gthread
        closes it then (it takes it for a kept-alive one and finds no parser), under a
        client that finished its handshake and is about to send the request it was
        accepted for. It stays in the poller as while running, through the graceful
        period, and is served or dropped at its timeout as any pending connection."""
        if (
            (not self.alive or not conn.initialized)
            and _DEFER is not None
            and not fs.cancelled()
            and fs.exception() is None
            and fs.result() is _DEFER
        ):
            conn.sock.setblocking(False)
            # A handshake still under way gets the I/O timeout a blocking read of it would
            # (tls.ioTimeoutSeconds), not the keep-alive timeout.
            wait = STOP_LINGER_SECONDS if not self.alive else self._handshake_timeout()
            conn.timeout = time.monotonic() + wait
            self.pending_conns.append(conn)
            self.poller.register(
                conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
            )
            return
        super().finish_request(conn, fs)

    def _handshake_timeout(self) -> float:
        """tls.ioTimeoutSeconds, as serve hands it over with the SSL context."""
        context = gunicorn_sock.ssl_context(self.cfg)
        return float(getattr(context, "io_timeout", self.cfg.keepalive))

    def murder_pending(self) -> None:
        """Close every pending connection past its deadline. gthread looks only at the
        head of the queue, which holds when every deadline is the keep-alive timeout;
        here a handshake under way has a shorter one than a connection waiting for its
        first request, so the whole queue is looked at (a few hundred at most)."""
        now = time.monotonic()
        for conn in [c for c in self.pending_conns if c.timeout <= now]:
            self.pending_conns.remove(conn)
            close_idle(conn, self.poller, unless_request=False)
            self.nr_conns -= 1

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        if self.draining():
            timeout = min(timeout, DRAIN_POLL_SECONDS)
        super().wait_for_and_dispatch_events(timeout)

    def murder_keepalived(self, force: bool = False) -> None:
        """gthread's, closing each idle kept-alive connection with close_idle: past its
        keep-alive timeout, or while draining once idle DRAIN_IDLE_SECONDS (a client
        reusing the connection in a loop is not writing its next request into it at the
        moment it is closed); every one when forced. A connection whose next request has
        already arrived is left to the poller, which hands it to a thread."""
        now = time.monotonic()
        cutoff = now
        if self.draining() and self.alive and not force:
            cutoff = now + self.cfg.keepalive - DRAIN_IDLE_SECONDS
        kept: list[Any] = []
        while self.keepalived_conns and (force or self.keepalived_conns[0].timeout <= cutoff):
            conn = self.keepalived_conns.popleft()
            if not close_idle(conn, self.poller, unless_request=not force):
                kept.append(conn)
                continue
            self.nr_conns -= 1
        self.keepalived_conns.extendleft(reversed(kept))

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive:
            self.close_listeners()
            # Connections still waiting for their handshake or first request get as long
            # as gthread gives kept-alive ones once stopping, not the keep-alive timeout.
            deadline = time.monotonic() + STOP_LINGER_SECONDS
            for conn in self.pending_conns:
                conn.timeout = min(conn.timeout, deadline)

    def close_listeners(self) -> None:
        """Accept what is queued on each listener (served as any accepted connection),
        then close the listener: no connection is left queued where nobody accepts."""
        for listener in self.sockets:
            for client, addr in _accept_queued(listener):
                self.nr_conns += 1
                client.setblocking(True)
                self.enqueue_req(TConn(self.cfg, client, addr, client.getsockname()))
            listener.close()

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        if isinstance(exc, _STALLED) or (
            isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.ECONNRESET)
        ):
            self.log.debug("closing a stalled connection from %s: %r", addr, exc)
            try:
                client.close()
            except OSError:
                pass
            return
        super().handle_error(req, client, addr, exc)


def close_idle(conn: Any, poller: Any, *, unless_request: bool = True) -> bool:
    """Close a connection that carries no request, with a reset rather than a FIN, and
    unregister it from `poller`; with `unless_request`, False, leaving it open, when
    bytes of a request are already there (the poller finds it readable and it is served,
    or it is at its end, which a thread then reads and closes).

    A client sending a request on a kept-alive connection the server closes at that
    moment loses the request: after a FIN its first write still succeeds and the call
    fails on the reset that follows, and an HTTP client does not retry a POST it has
    written (Go's net/http, kube-apiserver's webhook client, retries only one it had
    written nothing of). After a reset the client's next write fails at once, nothing
    written, and the client retries it on a new connection. Measured: the admission
    chain's rolling restart lost 3 of 600 pods to `write: broken pipe` with FIN closes
    while draining (tests/e2e/test_chain.py)."""
    sock = conn.sock
    try:
        if unless_request and _request_waiting(sock):
            return False
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except (OSError, ValueError):
        pass  # already closed or not a socket: closed below all the same
    try:
        poller.unregister(sock)
    except (OSError, KeyError, ValueError):
        pass
    conn.close()
    return True


def _request_waiting(sock: Any) -> bool:
    """Whether bytes of a request are there to read now: decrypted and buffered in the TLS
    layer, or on the socket."""
    pending = getattr(sock, "pending", None)
    if pending is not None and pending() > 0:
        return True
    with selectors.DefaultSelector() as sel:
        sel.register(sock.fileno(), selectors.EVENT_READ)
        return bool(sel.select(0))


def _accept_queued(listener: Any) -> list[tuple[socket.socket, Any]]:
    """Every connection queued on a listening socket now, without waiting."""
    accepted: list[tuple[socket.socket, Any]] = []
    try:
        listener.setblocking(False)
    except OSError:
        return accepted
    while True:
        try:
            accepted.append(listener.accept())
        except OSError:  # EAGAIN: nothing queued (EINVAL: not listening; or closed)
            return accepted


class NoAccessLogger(Logger):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's logger without the access log: with a logging config set, gunicorn
    builds every access line's atoms even though the access logger drops them. The
    request line is ours (webhook/server/logs.py)."""

    @property
    def access_log_enabled(self) -> bool:
        return False

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        """gunicorn's arbiter names the listeners it opened; with reuse_port it opens
        none (each worker opens its own after the fork, gunicorn_conf.post_fork logs
        them), which would read `Listening at:  (PID)`: say the address instead."""
        if msg == "Listening at: %s (%s)" and args and not args[0]:
            scheme = "https" if self.cfg.is_ssl else "http"
            where = ",".join(f"{scheme}://{b}" for b in self.cfg.bind)
            workers = self.cfg.workers
            who = f"each of the {workers} workers" if workers != 1 else "the worker"
            msg = "Listening at: %s (%s): %s opens its own listener"
            args = (where, args[1], who)
        super().info(msg, *args, **kwargs)

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        """No access log."""
