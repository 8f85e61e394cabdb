"""`topospread serve` for real: gunicorn over TLS on loopback, the CA verified.

One server (two gthread workers, the demo snapshot) is started for the module; the
tests POST real AdmissionReviews to it, read /metrics across workers, rotate its
certificate, and finally stop it with SIGTERM. Refusals to start run in-process.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.builders import DNS, ZONE, RawObj, make_pod, review, selector
from webhook.cli.main import main
from webhook.install.certs import generate

pytestmark = pytest.mark.slow

STARTUP_SECONDS = 30.0


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    port: int
    cert_dir: Path

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))

    def request(
        self, method: str, path: str, body: Any = None, ctx: ssl.SSLContext | None = None
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=ctx or self.context(), timeout=10
        )
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def review(self, path: str, doc: RawObj) -> RawObj:
        status, raw = self.request("POST", path, doc)
        assert status == 200, raw
        return json.loads(raw)  # type: ignore[no-any-return]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    cert_dir = tmp_path_factory.mktemp("certs")
    generate("topospread", "topospread", cert_dir, days=2)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    log_path = cert_dir.parent / "serve.log"
    log = log_path.open("wb")
    # A file, not a pipe: a full pipe would block the server's logging.
    proc = subprocess.Popen(
        [sys.executable, "-m", "webhook.cli.main", "serve", "--cert-dir", str(cert_dir),
         "--bind", f"127.0.0.1:{port}", "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    log.close()
    srv = Server(proc, port, cert_dir)
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            if srv.request("GET", "/readyz")[0] == 200:
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            err = log_path.read_text(errors="replace")
            pytest.fail(f"server did not become ready: {err[-2000:]}")
        time.sleep(0.2)
    yield srv
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def invalid_pod() -> RawObj:
    pod = make_pod().name("web").namespace("shop").label("app", "web")
    return pod.spread(0, ZONE, DNS, selector({"app": "web"})).obj()


def test_validate_over_tls_denies_like_the_api_server(server: Server) -> None:
    """A real denial through gunicorn and TLS, CA verified."""
    out = server.review("/validate", review(invalid_pod(), uid="tls-1"))
    assert out["response"]["uid"] == "tls-1"
    assert out["response"]["allowed"] is False
    assert out["response"]["status"]["message"] == (
        'Pod "web" is invalid: spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero"
    )


def test_mutate_over_tls_returns_the_merge_patch(server: Server) -> None:
    """/mutate on the demo snapshot (version unknown): the v1.34 merge as a JSONPatch."""
    pod = (
        make_pod()
        .name("web")
        .namespace("shop")
        .labels({"app": "web", "pod-template-hash": "7c9f8d6b5"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
        .obj()
    )
    response = server.review("/mutate", review(pod))["response"]
    patch = json.loads(base64.b64decode(response["patch"]))
    assert {
        "op": "add",
        "path": "/spec/topologySpreadConstraints/0/labelSelector/matchExpressions",
        "value": [{"key": "pod-template-hash", "operator": "In", "values": ["7c9f8d6b5"]}],
    } in patch


def test_malformed_body_is_400_over_tls(server: Server) -> None:
    """The 400 path holds in a real worker too."""
    status, raw = server.request("POST", "/validate", ["not", "a", "review"])
    assert status == 400
    assert json.loads(raw)["reason"] == "BadRequest"


def test_health_endpoints(server: Server) -> None:
    """/healthz and /readyz answer 200 once the demo snapshot is loaded."""
    assert server.request("GET", "/healthz")[0] == 200
    assert server.request("GET", "/readyz")[0] == 200


def test_metrics_add_up_across_workers(server: Server) -> None:
    """Two workers share their counters: any worker reports every request."""

    def total() -> float:
        _, raw = server.request("GET", "/metrics")
        count = 0.0
        for line in raw.decode().splitlines():
            if line.startswith('topospread_http_requests_total{code="200",path="/healthz"}'):
                count += float(line.rsplit(" ", 1)[1])
        return count

    before = total()
    for _ in range(12):
        server.request("GET", "/healthz")
    assert total() == before + 12


def test_client_without_the_ca_is_refused(server: Server) -> None:
    """The serving certificate is not trusted by default: TLS is real."""
    with pytest.raises(ssl.SSLCertVerificationError):
        server.request("GET", "/healthz", ctx=ssl.create_default_context())


def test_rotated_certificate_is_served_without_restart(server: Server) -> None:
    """A new CA and leaf written into the cert dir are served to new connections."""
    generate("topospread", "topospread", server.cert_dir, days=2, force=True)
    new_ctx = server.context()
    deadline = time.monotonic() + 15
    while True:
        try:
            assert server.request("GET", "/healthz", ctx=new_ctx)[0] == 200
            break
        except ssl.SSLError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_sigterm_stops_gracefully(server: Server) -> None:
    """SIGTERM: gunicorn finishes and exits 0 (runs last in this module)."""
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=30) == 0


# ---------------------------------------------------------------------------------------
# Refusing to start


@pytest.mark.parametrize(
    ("case", "extra", "words"),
    [
        ("no certificates", [], "cannot load a TLS certificate"),
        ("bad bind", ["--bind", "localhost"], "--bind"),
        ("no workers", ["--workers", "0"], "--workers"),
        ("missing snapshot", ["--snapshot", "/nonexistent/snap.json"], "no such file"),
    ],
)
def test_serve_refuses_to_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str, extra: list[str], words: str
) -> None:
    """Anything wrong is refused before gunicorn starts: exit 2 and a clear message."""
    cert_dir = tmp_path / "certs"
    if case != "no certificates":
        generate("topospread", "topospread", cert_dir, days=2)
    code = main(["serve", "--cert-dir", str(cert_dir), *extra])
    assert code == 2, case
    assert words in capsys.readouterr().err


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ("injectDefaults: maybe\n", "injectDefaults"),
        ("tls: {verifyClients: yes please}\n", "tls.verifyClients"),
        ("tls: [verifyClients]\n", "tls: must be a mapping"),
        ("tls: {verifyClients: true}\n", "ca.crt does not exist"),
    ],
)
def test_serve_refuses_bad_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str, words: str
) -> None:
    """A config file that cannot be used stops serve with exit 2."""
    path = tmp_path / "config.yaml"
    path.write_text(config)
    code = main(["serve", "--config", str(path), "--cert-dir", str(tmp_path)])
    assert code == 2
    assert words in capsys.readouterr().err


def test_client_verification_uses_the_cert_dir_ca(tmp_path: Path) -> None:
    """tls.verifyClients: true makes serve require client certificates signed by ca.crt."""
    from webhook.config import settings_from_dict
    from webhook.server.serve import _client_ca

    generate("topospread", "topospread", tmp_path, days=2)
    settings = settings_from_dict({"tls": {"verifyClients": True}})
    assert _client_ca(settings, str(tmp_path)) == str(tmp_path / "ca.crt")
    assert _client_ca(settings_from_dict({}), str(tmp_path)) is None
