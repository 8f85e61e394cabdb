"""Certificate rotation end to end: a real `topospread serve` (gunicorn, 2 workers), called
the way kube-apiserver calls it, while the cert dir goes through kubelet's `..data` swap.

kube-apiserver verifies the serving certificate against the webhook's caBundle for the
name topospread.<ns>.svc and POSTs /validate?timeout=10s. Here the client does the same
against 127.0.0.1 with server_hostname set. A steady stream of requests (fresh
connections, so each one sees the current certificate) runs across the swap, beside one
keep-alive connection opened before it: none may fail, the kept connection is never cut,
and new connections get the new certificate without a restart.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.builders import make_pod, review
from tests.live_server import TLSConnection
from tests.secret_volume import kubelet_layout, kubelet_swap
from webhook.install import certs

pytestmark = pytest.mark.slow

SVC_HOST = "topospread.topospread.svc"
STARTUP_DEADLINE = 30.0
ROTATION_DEADLINE = 20.0


def der(path: Path) -> bytes:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.public_bytes(serialization.Encoding.DER)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def service_connection(port: int, ctx: ssl.SSLContext) -> http.client.HTTPSConnection:
    """HTTPS to 127.0.0.1, verifying the certificate for the Service DNS name."""
    return TLSConnection("127.0.0.1", port, ctx, timeout=10, server_hostname=SVC_HOST)


@dataclass
class Outcome:
    ok: bool
    cert: bytes | None
    detail: str


def call_validate(port: int, ctx: ssl.SSLContext, body: bytes, uid: str) -> Outcome:
    conn = service_connection(port, ctx)
    try:
        conn.request(
            "POST", "/validate?timeout=10s", body=body, headers={"Content-Type": "application/json"}
        )
        cert = conn.sock.getpeercert(binary_form=True)  # type: ignore[union-attr]
        resp = conn.getresponse()
        payload = resp.read()
        if resp.status != 200:
            return Outcome(False, cert, f"HTTP {resp.status}: {payload[:200]!r}")
        answer = json.loads(payload)["response"]
        if answer["uid"] != uid or answer["allowed"] is not True:
            return Outcome(False, cert, f"unexpected answer {answer}")
        return Outcome(True, cert, "")
    except (OSError, ValueError, KeyError) as exc:
        return Outcome(False, None, repr(exc))
    finally:
        conn.close()


def test_rotation_by_secret_update_serves_the_new_certificate_without_a_failed_request(
    tmp_path: Path,
) -> None:
    """Before the swap the old leaf is served, after it the new one; no request fails."""
    old, new, live = tmp_path / "old", tmp_path / "new", tmp_path / "live"
    certs.generate("topospread", "topospread", old)
    # The rotated Secret: same CA (the caBundle does not change), a fresh leaf and key.
    shutil.copytree(old, new)
    (new / "tls.crt").unlink()
    certs.generate("topospread", "topospread", new)
    assert der(old / "tls.crt") != der(new / "tls.crt")
    kubelet_layout(live, old, "2026_01_01_00_00_00.000000001")

    port = free_port()
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)}  # gunicorn's control socket
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "webhook.cli.main",
            "serve",
            "--cert-dir",
            str(live),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    ctx = ssl.create_default_context(cafile=str(old / "ca.crt"))
    pod = make_pod().name("web").namespace("default").obj()
    results: list[Outcome] = []
    stop = threading.Event()

    def stream(worker: int) -> None:
        n = 0
        while not stop.is_set():
            uid = f"uid-{worker}-{n}"
            body = json.dumps(review(pod, uid=uid)).encode()
            results.append(call_validate(port, ctx, body, uid))
            n += 1

    kept: list[Outcome] = []

    def keep_alive() -> None:
        """One persistent connection across the swap: it keeps its handshake and is never cut."""
        conn = service_connection(port, ctx)
        n = 0
        try:
            while not stop.is_set():
                uid = f"keep-{n}"
                try:
                    conn.request(
                        "POST",
                        "/validate?timeout=10s",
                        body=json.dumps(review(pod, uid=uid)).encode(),
                        headers={"Content-Type": "application/json"},
                    )
                    resp = conn.getresponse()
                    answer = json.loads(resp.read())["response"]
                    ok = resp.status == 200 and answer["uid"] == uid
                    kept.append(
                        Outcome(ok, conn.sock.getpeercert(binary_form=True), str(resp.status))
                    )  # type: ignore[union-attr]
                except (OSError, ValueError, KeyError, http.client.HTTPException) as exc:
                    kept.append(Outcome(False, None, repr(exc)))
                    return
                n += 1
                time.sleep(0.05)
        finally:
            conn.close()

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(2)]
    threads.append(threading.Thread(target=keep_alive))
    try:
        deadline = time.monotonic() + STARTUP_DEADLINE
        body = json.dumps(review(pod, uid="probe")).encode()
        while True:
            first = call_validate(port, ctx, body, "probe")
            if first.ok:
                break
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, f"server not up: {first.detail}"
            time.sleep(0.2)
        assert first.cert == der(old / "tls.crt")

        for t in threads:
            t.start()
        time.sleep(1.0)
        before_swap = len(results)
        kubelet_swap(live, new, "2026_02_01_00_00_00.000000002")

        # Wait until both workers serve the new leaf: the last 20 answers carry it.
        deadline = time.monotonic() + ROTATION_DEADLINE
        while time.monotonic() < deadline:
            tail = results[-20:]
            if len(results) > before_swap + 20 and all(
                r.cert == der(new / "tls.crt") for r in tail
            ):
                break
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(timeout=15)
        assert proc.poll() is None, "the server restarted or died"
    finally:
        stop.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        log.close()

    failed = [r.detail for r in results if not r.ok]
    assert failed == []
    # The connection opened before the swap was served throughout, on its old handshake.
    assert [k.detail for k in kept if not k.ok] == []
    assert len(kept) >= 5
    assert {k.cert for k in kept} == {der(old / "tls.crt")}
    assert before_swap >= 5, "no steady stream before the swap"
    served = [r.cert for r in results]
    assert served[0] == der(old / "tls.crt")
    assert all(c == der(new / "tls.crt") for c in served[-20:]), "new certificate never served"
    assert set(served) == {der(old / "tls.crt"), der(new / "tls.crt")}
