"""The connection layer of a real server: every worker listens on its own SO_REUSEPORT
socket, kept-alive connections are rotated, and a body over the cap gets its 413 even
from a client that writes the whole body before reading."""

from __future__ import annotations

import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import make_pod, review
from tests.live_server import LiveServer, start_server
from webhook.admission.review import MAX_BODY_BYTES
from webhook.config import settings_from_dict
from webhook.errors import ConfigError
from webhook.install.certs import CertReloader, generate
from webhook.server.gunicorn_conf import connection_policy
from webhook.server.worker import (
    KEEPALIVE_REQUESTS,
    KernelTimeoutContext,
    KernelTimeoutSSLSocket,
    connection_limit,
    keepalive_requests,
)

# Enough fresh connections that all landing on one of two workers by chance (2 x 2^-24)
# never happens.
CONNECTIONS = 24


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    srv = start_server(
        tmp_path_factory.mktemp("conn"),
        config="server:\n  keepaliveRequests: 3\nshutdown:\n  drainSeconds: 0\n",
    )
    try:
        yield srv
    finally:
        srv.kill()


def _listening_sockets(port: int) -> int:
    """LISTEN entries for `port` in /proc/net/tcp: one per bound listening socket."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state = fields[1], fields[3]
        if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
            count += 1
    return count


def _review_pids(srv: LiveServer) -> dict[str, int]:
    return {
        r["uid"]: r["pid"]
        for r in srv.log_records()
        if r.get("msg") == "admission review" and "uid" in r
    }


@pytest.mark.slow
def test_every_worker_listens_on_its_own_socket(server: LiveServer) -> None:
    """Two workers, two listening sockets on the port (SO_REUSEPORT), none in the master."""
    assert _listening_sockets(server.port) == 2


@pytest.mark.slow
def test_new_connections_are_spread_over_the_workers(server: LiveServer) -> None:
    """Connections opened and held together are served by both workers."""
    conns = [server.connection() for _ in range(CONNECTIONS)]
    try:
        for i, conn in enumerate(conns):
            body = json.dumps(review(make_pod().name("p").obj(), uid=f"spread-{i}")).encode()
            conn.request("POST", "/validate", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
    finally:
        for conn in conns:
            conn.close()
    pids = {pid for uid, pid in _review_pids(server).items() if uid.startswith("spread-")}
    assert len(pids) == 2


@pytest.mark.slow
def test_kept_alive_connection_is_closed_after_its_requests(server: LiveServer) -> None:
    """With server.keepaliveRequests 3, the third answer on a connection closes it."""
    conn = server.connection()
    try:
        answers = []
        for _ in range(3):
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            resp.read()
            answers.append((resp.status, resp.getheader("Connection")))
        assert answers == [(200, "keep-alive"), (200, "keep-alive"), (200, "close")]
    finally:
        conn.close()


def _send_then_read(srv: LiveServer, head: bytes, body_size: int) -> bytes:
    """Send the head and `body_size` bytes of body before reading anything, as a client
    that writes the whole body first does; then everything the server sends."""
    tls = srv.tls_socket(timeout=30)
    try:
        tls.sendall(head)
        chunk = b"x" * (1024 * 1024)
        left = body_size
        while left:
            n = min(left, len(chunk))
            tls.sendall(chunk[:n])
            left -= n
        out = b""
        while data := tls.recv(65536):
            out += data
        return out
    finally:
        tls.close()


@pytest.mark.slow
@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_a_16_mib_body_gets_its_413_then_the_connection_closes(
    server: LiveServer, path: str
) -> None:
    """The whole 16 MiB body is sent before reading: the answer is a JSON 413, with
    Connection: close, and the server then closes (recv reaches EOF)."""
    size = 16 * 1024 * 1024
    head = (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {size}\r\n\r\n"
    ).encode()
    out = _send_then_read(server, head, size)
    status_line, _, rest = out.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 REQUEST ENTITY TOO LARGE"
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"connection: close" in headers.lower()
    doc = json.loads(body)
    assert (doc["code"], doc["reason"]) == (413, "RequestEntityTooLarge")
    assert doc["message"] == f"request body larger than {MAX_BODY_BYTES} bytes"


@pytest.mark.slow
def test_a_chunked_body_over_the_cap_gets_its_413(server: LiveServer) -> None:
    """Without Content-Length the body is cut at the cap, answered 413, the rest dropped."""
    tls = server.tls_socket(timeout=30)
    try:
        tls.sendall(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * (1024 * 1024)
        for _ in range(10):
            tls.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        tls.sendall(b"0\r\n\r\n")
        out = b""
        while data := tls.recv(65536):
            out += data
    finally:
        tls.close()
    assert out.startswith(b"HTTP/1.1 413 ")
    assert b"connection: close" in out.lower()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, KEEPALIVE_REQUESTS),
        ({"server": {"keepaliveRequests": 1}}, 1),
        ({"server": {"keepaliveRequests": 50}}, 50),
        ({"server": {"keepaliveRequests": 1_000_000}}, 1_000_000),
    ],
)
def test_keepalive_requests_setting(raw: dict, expected: int) -> None:
    assert keepalive_requests(settings_from_dict(raw)) == expected


@pytest.mark.parametrize("value", [0, -1, 1_000_001, 2.5, "10", True, None])
def test_keepalive_requests_setting_refuses_bad_values(value: object) -> None:
    with pytest.raises(ConfigError, match="server.keepaliveRequests"):
        keepalive_requests(settings_from_dict({"server": {"keepaliveRequests": value}}))


@pytest.mark.parametrize("limit", [1, 2, 8, 9, 100, 1000])
def test_connection_limit_stays_within_an_eighth_below_the_setting(limit: int) -> None:
    """Every connection is closed after at least 7/8 of the setting, at most the setting."""
    limits = {connection_limit(limit, port) for port in range(1024, 65536)}
    assert min(limits) >= limit - limit // 8
    assert max(limits) == limit


class _Req:
    def __init__(self, number: int, port: int = 40000) -> None:
        self.req_number = number
        self.peer_addr = ("127.0.0.1", port)
        self.must_close = False


class _Flag:
    def __init__(self, value: bool) -> None:
        self.value = value

    def is_set(self) -> bool:
        return self.value


@pytest.mark.parametrize(
    ("draining", "limit", "number", "closes"),
    [
        (False, 4, 1, False),
        (False, 4, 3, False),
        (False, 4, 4, True),
        (False, 4, 9, True),
        (True, 1000, 1, True),
        (False, 1, 1, True),
    ],
)
def test_connection_policy(draining: bool, limit: int, number: int, closes: bool) -> None:
    """Close while draining, and on the limit-th request of a connection."""
    req = _Req(number)
    connection_policy(_Flag(draining), limit)(None, req)  # type: ignore[arg-type]
    assert req.must_close is closes


def test_server_context_wraps_with_kernel_timeouts(tmp_path: Path) -> None:
    """The accepted socket gets SO_RCVTIMEO and SO_SNDTIMEO, and the TLS socket stays
    non-blocking for Python (no poll before each read or write) over a blocking
    descriptor; gthread's setblocking(False) leaves it so, a bounded drain's
    settimeout() works as usual until the next setblocking(True)."""
    generate("topospread", "topospread", tmp_path, days=2)
    ctx = KernelTimeoutContext(CertReloader(tmp_path).context, 2.5)
    a, b = socket.socketpair()
    try:
        tls = ctx.wrap_socket(a, server_side=True, do_handshake_on_connect=False)
        assert isinstance(tls, KernelTimeoutSSLSocket)
        for option in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
            assert struct.unpack("ll", tls.getsockopt(socket.SOL_SOCKET, option, 16)) == (
                2,
                500000,
            )
        assert (tls.gettimeout(), os.get_blocking(tls.fileno())) == (0.0, True)
        tls.setblocking(False)
        assert (tls.gettimeout(), os.get_blocking(tls.fileno())) == (0.0, True)
        tls.settimeout(1.0)
        assert tls.gettimeout() == 1.0
        tls.settimeout(0.0)  # what ssl restores after a handshake: the kernel mode again
        assert (tls.gettimeout(), os.get_blocking(tls.fileno())) == (0.0, True)
        tls.close()
    finally:
        b.close()
