"""Replicas on one port (`serve --share-port`), as a Service spreads connections over pods.

Two real `topospread serve` processes bind the same address with SO_REUSEPORT. Each joins
the port only once ready; on SIGTERM one stops being ready, closes its idle kept-alive
connections, and closes its listener when it stops accepting, so a client that keeps
sending (reconnecting whenever a connection is closed, as kube-apiserver does) never sees a
request fail: the kernel sends every new connection to a listener that accepts it.
"""

from __future__ import annotations

import http.client
import json
import select
import shutil
import signal
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.builders import DNS, ZONE, make_pod, review, selector
from tests.live_server import STARTUP_SECONDS, LiveServer, free_port, start_server
from webhook.server.gunicorn_conf import keepalive as KEEPALIVE
from webhook.server.worker import DRAIN_IDLE_SECONDS, TopospreadWorker, close_idle

pytestmark = pytest.mark.slow

CONFIG = "shutdown:\n  drainSeconds: 1\n"
JOINED = "ready: joined the shared port"


def admission_lines(srv: LiveServer) -> int:
    return sum(1 for r in srv.log_records() if r.get("msg") == "admission review")


@pytest.fixture
def pair(tmp_path: Path) -> Any:
    port = free_port()
    servers = []
    for name in ("a", "b"):
        if servers:  # one certificate for the Service, as replicas mount one Secret
            shutil.copytree(servers[0].cert_dir, tmp_path / name / "certs")
        srv = start_server(tmp_path / name, workers=1, port=port, config=CONFIG,
                           extra_args=("--share-port",))
        servers.append(srv)
        # /readyz may have been answered by the other one: wait for this one's worker.
        deadline = time.monotonic() + STARTUP_SECONDS
        while JOINED not in srv.log_text():
            assert srv.proc.poll() is None and time.monotonic() < deadline, srv.log_text()
            time.sleep(0.1)
    yield servers
    for srv in servers:
        srv.kill()


def body(uid: str) -> bytes:
    pod = make_pod().name("web").namespace("shop").label("app", "web")
    return json.dumps(review(pod.spread(1, ZONE, DNS, selector({"app": "web"})).obj(),
                             uid=uid)).encode()


def test_without_share_port_a_second_server_on_the_port_is_refused(tmp_path: Path) -> None:
    first = start_server(tmp_path / "a", workers=1)
    try:
        with pytest.raises(RuntimeError, match="--bind 127.0.0.1:"):
            start_server(tmp_path / "b", workers=1, port=first.port)
    finally:
        first.kill()


def test_both_replicas_answer_on_the_shared_port(pair: list[LiveServer]) -> None:
    for i in range(40):
        status, _, data = pair[0].request("POST", "/validate", raw=body(f"u{i}"))
        assert status == 200 and json.loads(data)["response"]["uid"] == f"u{i}"
    assert all(admission_lines(srv) > 0 for srv in pair), [admission_lines(s) for s in pair]


@dataclass
class Seen:
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def keep_sending(srv: LiveServer, seen: Seen, stop: threading.Event, n: int) -> None:
    """Reviews on a kept-alive connection, a new one whenever the server closes it."""
    conn: http.client.HTTPSConnection | None = None
    i = 0
    while not stop.is_set():
        conn = conn or srv.connection(timeout=10)
        i += 1
        uid = f"c{n}-{i}"
        try:
            conn.request("POST", "/validate", body=body(uid),
                         headers={"Content-Type": "application/json"})
            with conn.getresponse() as resp:
                data = resp.read()
                closing = resp.getheader("Connection", "").lower() == "close"
            assert resp.status == 200 and json.loads(data)["response"]["uid"] == uid
            with seen.lock:
                seen.ok += 1
            if closing:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException, AssertionError, ValueError) as exc:
            with seen.lock:
                seen.failed.append(f"{uid}: {exc!r}")
            conn.close()
            conn = None
    if conn is not None:
        conn.close()


def test_sigterm_to_one_replica_fails_no_request(pair: list[LiveServer]) -> None:
    """Clients keep sending while replica a drains and stops; b serves what a no longer
    does, so not one request fails, refused connections included."""
    seen, stop = Seen(), threading.Event()
    clients = [threading.Thread(target=keep_sending, args=(pair[1], seen, stop, n))
               for n in range(4)]
    for t in clients:
        t.start()
    try:
        before = admission_lines(pair[0])
        pair[0].proc.send_signal(signal.SIGTERM)
        assert pair[0].proc.wait(60) == 0
        served_after = seen.ok
        # b goes on answering after a is gone.
        while seen.ok < served_after + 50 and not seen.failed:
            threading.Event().wait(0.05)
    finally:
        stop.set()
        for t in clients:
            t.join(30)
    assert not seen.failed, seen.failed[:5]
    assert admission_lines(pair[0]) >= before


def _tcp_pair() -> tuple[socket.socket, socket.socket]:
    """(server side, client side) of one loopback TCP connection."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    client.settimeout(10)
    return server, client


class _Conn:
    def __init__(self, idle: float, sock: socket.socket) -> None:
        self.sock = sock
        # gthread's deadline: when the connection went idle plus the keep-alive timeout.
        self.timeout = time.monotonic() - idle + KEEPALIVE
        self.closed = False

    def close(self) -> None:
        self.sock.close()
        self.closed = True


class _Poller:
    def unregister(self, sock: object) -> None:
        pass


class _Cfg:
    keepalive = KEEPALIVE


def _worker(conns: list[_Conn], *, alive: bool, draining: bool) -> TopospreadWorker:
    """A worker holding `conns` as kept-alive connections, without a server around it."""
    worker = TopospreadWorker.__new__(TopospreadWorker)
    worker.keepalived_conns = deque(conns)
    worker.poller = _Poller()
    worker.cfg = _Cfg()
    worker.nr_conns = len(conns)
    worker.alive = alive
    worker.draining = lambda: draining
    return worker


@pytest.mark.parametrize("draining", [False, True])
def test_idle_kept_alive_connections_close_early_only_while_draining(draining: bool) -> None:
    """While draining, a connection idle for DRAIN_IDLE_SECONDS is closed, well before its
    keep-alive timeout; one that just went idle (its client may be writing the next
    request into it) is kept; nothing is closed early when not draining."""
    pairs = [_tcp_pair(), _tcp_pair()]
    long_idle, just_idle = _Conn(DRAIN_IDLE_SECONDS + 1, pairs[0][0]), _Conn(0, pairs[1][0])
    worker = _worker([long_idle, just_idle], alive=True, draining=draining)
    try:
        worker.murder_keepalived()
        assert (long_idle.closed, just_idle.closed) == (draining, False)
        assert worker.nr_conns == (1 if draining else 2)
        assert list(worker.keepalived_conns) == ([just_idle] if draining else [long_idle,
                                                                              just_idle])
    finally:
        for pair in pairs:
            for sock in pair:
                sock.close()


@pytest.mark.parametrize("request_there", [False, True])
def test_an_idle_connection_is_reset_unless_its_next_request_is_there(
    request_there: bool,
) -> None:
    """close_idle resets the connection (the client's next write fails with nothing
    written, which an HTTP client retries on a new connection; after a FIN it would
    fail only once the request was written), except when the client's next request has
    already arrived: that connection stays, to be served."""
    server, client = _tcp_pair()
    conn = _Conn(0, server)
    try:
        if request_there:
            client.sendall(b"POST /mutate HTTP/1.1\r\n")
            assert select.select([server], [], [], 10)[0]
        assert close_idle(conn, _Poller()) is not request_there
        if request_there:
            assert not conn.closed
            assert server.recv(64) == b"POST /mutate HTTP/1.1\r\n"
        else:
            with pytest.raises(ConnectionResetError):
                client.recv(1)  # a FIN would read as b"" here
    finally:
        server.close()
        client.close()


def test_a_forced_murder_closes_every_kept_alive_connection() -> None:
    """Once the worker exits, every kept-alive connection goes, whatever it holds."""
    server, client = _tcp_pair()
    conn = _Conn(0, server)
    client.sendall(b"GET / HTTP/1.1\r\n")
    worker = _worker([conn], alive=False, draining=True)
    try:
        worker.murder_keepalived(force=True)
        assert conn.closed and worker.nr_conns == 0 and not worker.keepalived_conns
    finally:
        client.close()


class _Listener:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock


def test_a_replica_joining_the_port_keeps_tcp_nodelay_on_its_connections() -> None:
    """The listener a joining replica opens sets TCP_NODELAY, as gunicorn's own does, so
    the connections it accepts inherit it (Nagle would hold a response's second TLS
    record until the client's delayed ACK)."""
    old = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    old.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    old.bind(("127.0.0.1", 0))
    old.listen(1)
    worker = TopospreadWorker.__new__(TopospreadWorker)
    worker.sockets = [_Listener(old)]
    worker._early = []
    worker._leave_port()
    new = worker.sockets[0].sock
    try:
        new.listen(1)
        client = socket.create_connection(new.getsockname(), timeout=5)
        new.setblocking(True)
        accepted, _ = new.accept()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        finally:
            accepted.close()
            client.close()
    finally:
        new.close()
