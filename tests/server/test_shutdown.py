"""Graceful shutdown: SIGTERM fails readiness, serves a drain delay, then drains.

A real `topospread serve` (two gthread workers, TLS on loopback) receives a steady
stream of AdmissionReviews from several clients, some reusing their connections as
kube-apiserver does, while /readyz is polled; then SIGTERM. A request counts as
accepted once the TLS handshake of its connection completed: none of those may fail.
Connections refused or reset before the handshake are the listener being closed,
which is what endpoints have stopped routing to by then.
"""

from __future__ import annotations

import gc
import http.client
import json
import os
import select
import signal
import socket
import ssl
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.builders import DNS, ZONE, make_pod, review, selector
from tests.live_server import LiveServer, TLSConnection, start_server
from webhook.config import settings_from_dict
from webhook.errors import ConfigError
from webhook.server import gunicorn_conf
from webhook.server.gunicorn_conf import DrainFlag, close_while_draining
from webhook.server.serve import drain_seconds

pytestmark = pytest.mark.slow

DRAIN = 1.5
ROOT = paths.ROOT


@dataclass
class Stream:
    """What the clients saw, in time order per client."""

    ok: list[float] = field(default_factory=list)  # start times of answered requests
    failed: list[tuple[float, str]] = field(default_factory=list)  # accepted, then failed
    refused: list[float] = field(default_factory=list)  # no TLS handshake
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(srv: LiveServer, stream: Stream, stop: threading.Event, keepalive: bool,
           n: int) -> None:
    """Send reviews until stopped, reconnecting when the server closes the connection."""
    conn: http.client.HTTPSConnection | None = None
    i = 0
    while not stop.is_set():
        if conn is None:
            conn = srv.connection(timeout=5)
            try:
                conn.connect()  # TCP and the TLS handshake
            except OSError:
                with stream.lock:
                    stream.refused.append(time.monotonic())
                conn.close()
                conn = None
                time.sleep(0.02)
                continue
        i += 1
        uid = f"c{n}-{i}"
        pod = make_pod().name("web").namespace("shop").label("app", "web")
        body = json.dumps(review(pod.spread(1, ZONE, DNS, selector({"app": "web"})).obj(),
                                 uid=uid)).encode()
        started = time.monotonic()
        resp: http.client.HTTPResponse | None = None
        try:
            conn.request("POST", "/validate", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200 or json.loads(data)["response"]["uid"] != uid:
                raise AssertionError(f"{resp.status} {data[:200]!r}")
            with stream.lock:
                stream.ok.append(started)
            if resp.will_close or not keepalive:
                conn.close()
                conn = None
        except Exception as exc:  # every failure of an accepted request is recorded
            with stream.lock:
                stream.failed.append((started, repr(exc)))
            if resp is not None:
                resp.close()  # it holds the socket as well as the connection does
            conn.close()
            conn = None
    if conn is not None:
        conn.close()


def test_the_client_closes_a_connection_reset_before_its_handshake() -> None:
    """A connection the server resets before accepting it (its listener closed with the
    connection in the backlog, as at the end of the drain) fails with an OSError and
    leaves no socket open for the collector to warn about."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def close_once_queued() -> None:
            select.select([listener], [], [], 10)  # readable: a connection is queued
            listener.close()  # the kernel resets it

        closer = threading.Thread(target=close_once_queued)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            closer.start()
            with pytest.raises(OSError):
                TLSConnection("127.0.0.1", port, ssl.create_default_context(), 10).connect()
            closer.join()
            gc.collect()
    assert [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)] == []


def poll_readyz(srv: LiveServer, polls: list[tuple[float, Any, str]],
                stop: threading.Event) -> None:
    """GET /readyz every 50 ms on a fresh connection: (time, status or 'refused', Connection)."""
    while not stop.is_set():
        at = time.monotonic()
        try:
            status, headers, _ = srv.request("GET", "/readyz")
            polls.append((at, status, headers.get("connection", "")))
        except OSError:
            polls.append((at, "refused", ""))
        time.sleep(0.05)


@pytest.fixture
def server(tmp_path: Path) -> Any:
    srv = start_server(tmp_path, workers=2, config=f"shutdown:\n  drainSeconds: {DRAIN}\n")
    yield srv
    srv.kill()


def test_sigterm_drains_without_failing_an_accepted_request(server: LiveServer) -> None:
    """Readiness fails first, requests keep being answered through the drain delay, the
    listener closes after it, no accepted request fails, and the server exits 0 in time."""
    stream = Stream()
    polls: list[tuple[float, Any, str]] = []
    stop = threading.Event()
    threads = [
        threading.Thread(target=client, args=(server, stream, stop, keepalive, n))
        for n, keepalive in enumerate([True, True, False])
    ]
    threads.append(threading.Thread(target=poll_readyz, args=(server, polls, stop)))
    for t in threads:
        t.start()
    try:
        time.sleep(0.7)
        term_at = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        # The bound: drain delay, then graceful_timeout at most for requests in flight.
        code = server.proc.wait(timeout=DRAIN + gunicorn_conf.graceful_timeout)
        time.sleep(0.3)  # clients meet the closed listener
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)

    assert code == 0
    assert stream.failed == []
    assert any(at < term_at for at in stream.ok), "no traffic before SIGTERM"
    assert any(at > term_at for at in stream.ok), "nothing answered during the drain delay"
    assert stream.refused, "the listener never closed"

    after = [(at, status, conn) for at, status, conn in polls if at > term_at]
    statuses = [status for _, status, _ in after]
    assert 503 in statuses and "refused" in statuses, statuses
    first_503, first_refused = statuses.index(503), statuses.index("refused")
    assert first_503 < first_refused
    # Every worker fails readiness: once one 503 was seen, no poll gets a 200 again.
    assert 200 not in statuses[first_503:], statuses
    # While draining, each response closes its connection.
    assert all(conn == "close" for _, status, conn in after if status == 503)
    # Requests were answered after readiness failed: the drain delay served them.
    assert any(at > after[first_503][0] for at in stream.ok)


def test_server_logs_are_json_lines_through_shutdown(server: LiveServer) -> None:
    """Every line serve writes, gunicorn's included, is one JSON object."""
    server.request("GET", "/healthz")
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=DRAIN + gunicorn_conf.graceful_timeout) == 0
    records = server.log_records()
    messages = [r["msg"] for r in records]
    assert any(m.startswith("SIGTERM: /readyz fails now") for m in messages)
    assert any(m.startswith("drain delay over") for m in messages)
    assert all({"ts", "level", "logger", "pid", "msg"} <= r.keys() for r in records)


def test_second_sigterm_ends_the_drain_delay(tmp_path: Path) -> None:
    """A second SIGTERM skips the rest of a long drain delay."""
    srv = start_server(tmp_path, workers=1, config="shutdown:\n  drainSeconds: 120\n")
    try:
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while srv.request("GET", "/readyz")[0] != 503:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=gunicorn_conf.graceful_timeout) == 0
    finally:
        srv.kill()


def booted_workers(srv: LiveServer) -> list[int]:
    prefix = "Booting worker with pid: "
    return [int(r["msg"][len(prefix):]) for r in srv.log_records()
            if r["msg"].startswith(prefix)]


def test_worker_replaced_during_the_drain_fails_readiness_too(tmp_path: Path) -> None:
    """A worker that dies during the drain delay is replaced, and its replacement, forked
    after SIGTERM, answers /readyz 503 like the others."""
    srv = start_server(tmp_path, workers=2, config="shutdown:\n  drainSeconds: 120\n")
    try:
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        while srv.request("GET", "/readyz")[0] != 503:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        victim = booted_workers(srv)[0]
        os.kill(victim, signal.SIGKILL)
        while len(booted_workers(srv)) < 3:
            assert time.monotonic() < deadline, "the dead worker was not replaced"
            time.sleep(0.05)
        statuses = [srv.request("GET", "/readyz")[0] for _ in range(30)]
        assert statuses == [503] * 30
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(timeout=gunicorn_conf.graceful_timeout) == 0
    finally:
        srv.kill()


# ---------------------------------------------------------------------------------------
# Settings and hooks


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, gunicorn_conf.drain_seconds),
        ({"shutdown": {}}, gunicorn_conf.drain_seconds),
        ({"shutdown": {"drainSeconds": 0}}, 0.0),
        ({"shutdown": {"drainSeconds": 2.5}}, 2.5),
        ({"shutdown": {"drainSeconds": 300}}, 300.0),
    ],
)
def test_drain_seconds_from_config(config: dict[str, Any], expected: float) -> None:
    """shutdown.drainSeconds: seconds from 0 to 300, default 5."""
    assert drain_seconds(settings_from_dict(config)) == expected


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"shutdown": {"drainSeconds": -1}}, "shutdown.drainSeconds"),
        ({"shutdown": {"drainSeconds": 301}}, "shutdown.drainSeconds"),
        ({"shutdown": {"drainSeconds": "5"}}, "shutdown.drainSeconds"),
        ({"shutdown": {"drainSeconds": True}}, "shutdown.drainSeconds"),
        ({"shutdown": [5]}, "shutdown: must be a mapping"),
    ],
)
def test_drain_seconds_refuses_bad_values(config: dict[str, Any], words: str) -> None:
    """A bad drain delay is a ConfigError (serve exits 2)."""
    with pytest.raises(ConfigError, match=words):
        drain_seconds(settings_from_dict(config))


class FakeRequest:
    must_close = False


@pytest.mark.parametrize("draining", [False, True])
def test_requests_close_their_connection_only_while_draining(draining: bool) -> None:
    """The pre_request hook marks a request to close its connection once draining."""
    flag = DrainFlag()
    if draining:
        flag.set()
    req = FakeRequest()
    close_while_draining(flag)(None, req)
    assert req.must_close is draining


def test_termination_grace_outlasts_prestop_drain_and_graceful_timeout() -> None:
    """The deploy's grace period covers preStop, the drain delay and gunicorn's drain;
    gunicorn waits for requests at least as long as kube-apiserver waits for us."""
    docs = list(yaml.safe_load_all((ROOT / "deploy/kustomize/base/deployment.yaml").read_text()))
    pod = next(d for d in docs if d and d["kind"] == "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    pause = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
    grace = pod["terminationGracePeriodSeconds"]
    assert grace > pause + gunicorn_conf.drain_seconds + gunicorn_conf.graceful_timeout
    hooks = yaml.safe_load_all((ROOT / "deploy/kustomize/base/webhooks.yaml").read_text())
    timeouts = [w["timeoutSeconds"] for d in hooks if d for w in d.get("webhooks", [])]
    assert timeouts and max(timeouts) <= gunicorn_conf.graceful_timeout
