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
import socket
import ssl
import struct
from collections.abc import Callable
from typing import Any

from gunicorn.glogging import Logger
from gunicorn.workers.gthread import ThreadWorker

from webhook.config import Settings
from webhook.errors import ConfigError

__all__ = [
    "KEEPALIVE_REQUESTS",
    "KernelTimeoutContext",
    "KernelTimeoutSSLSocket",
    "NoAccessLogger",
    "TopospreadWorker",
    "connection_limit",
    "keepalive_requests",
    "set_kernel_timeouts",
]

# Requests served on one kept-alive connection before it is closed (nginx's default).
KEEPALIVE_REQUESTS = 1000
MAX_KEEPALIVE_REQUESTS = 1_000_000

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
    timeouts (or went away) is closed without an error response or a traceback."""

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
