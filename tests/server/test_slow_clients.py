"""Clients that connect and stall cannot take the server down (tls.ioTimeoutSeconds)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import LiveServer, start_server
from webhook.config import settings_from_dict
from webhook.errors import ConfigError
from webhook.server.serve import IO_TIMEOUT_SECONDS, io_timeout_seconds

# More stalled connections than the server has threads (2 workers x 4 threads).
STALLED = 12


def _serving(tmp_path: Path, io_timeout: int) -> Iterator[LiveServer]:
    srv = start_server(
        tmp_path,
        config=f"tls:\n  ioTimeoutSeconds: {io_timeout}\nshutdown:\n  drainSeconds: 0\n",
    )
    try:
        yield srv
    finally:
        srv.kill()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    yield from _serving(tmp_path, 1)

def _assert_answered(server: LiveServer) -> None:
    """A new request on a new connection is answered within 15 s."""
    conn = server.connection(timeout=15)
    try:
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
    finally:
        conn.close()



def _stall(port: int, first_bytes: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if first_bytes:
        s.sendall(first_bytes)
    return s


# A client silent after connecting is not this test's case: gthread itself waits at
# most 5 s for a new connection's first bytes before parking it in its poller.
@pytest.mark.slow
@pytest.mark.parametrize(
    "first_bytes",
    [
        # The first bytes of a TLS record header: a handshake that never completes.
        pytest.param(b"\x16\x03\x01\x02\x00\x01", id="stalled mid-handshake"),
        # A ClientHello record header promising more than ever arrives.
        pytest.param(b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03", id="half a ClientHello"),
    ],
)
def test_stalled_connections_do_not_block_new_requests(
    server: LiveServer, first_bytes: bytes
) -> None:
    """With every thread held by a stalled client, a new request is still answered."""
    stalled = [_stall(server.port, first_bytes) for _ in range(STALLED)]
    try:
        # Without the I/O timeout the stalled clients hold all threads for good and
        # this request times out after 15 s; with it they are dropped after 1 s.
        _assert_answered(server)
        assert server.proc.poll() is None
    finally:
        for s in stalled:
            s.close()


@pytest.mark.slow
def test_keep_alive_connections_stalled_mid_request_are_dropped(server: LiveServer) -> None:
    """A client that sends half of its second keep-alive request cannot hold a thread."""
    stalled = []
    try:
        for _ in range(STALLED):
            tls = server.tls_socket(timeout=10)
            stalled.append(tls)  # closed below whatever happens next
            tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert tls.recv(4096).startswith(b"HTTP/1.1 200")
            tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: loc")  # ...and never the rest
        _assert_answered(server)
    finally:
        for s in stalled:
            s.close()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, IO_TIMEOUT_SECONDS),
        ({"tls": {"ioTimeoutSeconds": 2.5}}, 2.5),
        ({"tls": {"ioTimeoutSeconds": 300}}, 300.0),
    ],
)
def test_io_timeout_setting(raw: dict, expected: float) -> None:
    assert io_timeout_seconds(settings_from_dict(raw)) == expected


@pytest.mark.parametrize("value", [0, 0.05, 301, "10", True, None])
def test_io_timeout_setting_refuses_bad_values(value: object) -> None:
    with pytest.raises(ConfigError, match="tls.ioTimeoutSeconds"):
        io_timeout_seconds(settings_from_dict({"tls": {"ioTimeoutSeconds": value}}))


def _client_hello() -> bytes:
    """A real TLS ClientHello, as Python's own client sends it first."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_side=False)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


@pytest.fixture
def patient_server(tmp_path: Path) -> Iterator[LiveServer]:
    """A server whose I/O timeout is longer than the test's client waits."""
    yield from _serving(tmp_path, 60)


@pytest.mark.slow
def test_handshakes_waiting_for_the_client_hold_no_thread(patient_server: LiveServer) -> None:
    """Clients that sent a whole ClientHello and then wait (as a CPU-starved API server
    does before its Finished) hold no thread: with more of them than the server has
    threads, and an I/O timeout (60 s) longer than this client waits (15 s), a new
    request is answered."""
    hello = _client_hello()
    stalled = [_stall(patient_server.port, hello) for _ in range(STALLED)]
    try:
        for s in stalled:  # the server's answer arrived: each handshake is under way
            assert s.recv(5)[:1] == b"\x16"
        _assert_answered(patient_server)
    finally:
        for s in stalled:
            s.close()


@pytest.mark.slow
def test_a_handshake_that_stalls_is_dropped_after_the_io_timeout(server: LiveServer) -> None:
    """A client that sends half a ClientHello and waits is disconnected after the I/O
    timeout (1 s here), as a blocking read of it would be, not kept for the keep-alive
    timeout (120 s) while its handshake waits in the poller: reset (worker.close_idle)."""
    stalled = _stall(server.port, b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03")
    try:
        stalled.settimeout(20)
        with pytest.raises(ConnectionResetError):
            stalled.recv(1)
    finally:
        stalled.close()
