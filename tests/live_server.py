"""A real `topospread serve` on loopback for the shutdown and metrics tests, and the
handle on the image's server in tests/image.

The server runs as a child process (gunicorn, gthread workers, TLS with a CA made in a
temporary directory, the demo snapshot); its stderr goes to a file, never a pipe, so a
full pipe cannot block its logging.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from webhook.install.certs import generate

STARTUP_SECONDS = 30.0


def tls_connect(
    context: ssl.SSLContext, host: str, port: int, timeout: float | None,
    server_hostname: str,
) -> ssl.SSLSocket:
    """A TLS client socket, connected and through its handshake, or closed and raised.

    The socket is wrapped before it connects, so it is ours to close whatever fails.
    The other way round (connect, then wrap_socket, as http.client does) leaks when the
    server resets the connection before accepting it, which a listener closing with
    connections in its backlog does at the end of a drain: Python 3.11.7's wrap_socket
    then raises ConnectionResetError and leaves the SSLSocket it made unclosed and out of
    reach (python/cpython#113280), a ResourceWarning when it is collected.
    """
    sock = context.wrap_socket(socket.socket(socket.AF_INET, socket.SOCK_STREAM),
                               server_hostname=server_hostname)
    try:
        sock.settimeout(timeout)
        sock.connect((host, port))  # TCP, then the TLS handshake
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client sets it
    except BaseException:
        sock.close()
        raise
    return sock


class TLSConnection(http.client.HTTPSConnection):
    """http.client's HTTPS connection, connecting through tls_connect; `server_hostname`:
    the name the certificate is checked for (default: the host)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext,
                 timeout: float | None = 10.0, server_hostname: str | None = None) -> None:
        super().__init__(host, port, context=context, timeout=timeout)
        self.tls_context = context
        self.server_hostname = server_hostname or host

    def connect(self) -> None:
        self.sock = tls_connect(self.tls_context, self.host, self.port, self.timeout,
                                self.server_hostname)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    proc: subprocess.Popen[bytes]
    port: int
    cert_dir: Path
    log_path: Path

    def context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))

    def connection(self, timeout: float = 10.0) -> http.client.HTTPSConnection:
        return TLSConnection("127.0.0.1", self.port, self.context(), timeout)

    def tls_socket(self, timeout: float = 30.0) -> ssl.SSLSocket:
        """A TLS connection to the server, for a test that speaks HTTP itself."""
        return tls_connect(self.context(), "127.0.0.1", self.port, timeout, "localhost")

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        timeout: float = 10.0,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request on a fresh connection: status, headers (lower-case names), body."""
        conn = self.connection(timeout)
        try:
            data = raw if raw is not None else (
                json.dumps(body).encode() if body is not None else None
            )
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            # The response holds the socket too: closing only the connection would leave
            # it open (and warned about when collected) if reading the body fails.
            with conn.getresponse() as resp:
                return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
        finally:
            conn.close()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_records(self) -> list[dict[str, Any]]:
        """Every stderr line, parsed as JSON (raises on a line that is not JSON)."""
        return [json.loads(line) for line in self.log_text().splitlines() if line.strip()]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def start_server(
    tmp: Path,
    *,
    workers: int = 2,
    config: str | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
    extra_args: tuple[str, ...] = (),
) -> LiveServer:
    """Start `topospread serve` and wait until /readyz answers 200 (on `port`, a free
    one unless given; `extra_args` appended to serve's)."""
    cert_dir = tmp / "certs"
    generate("topospread", "topospread", cert_dir, days=2)
    args = [
        sys.executable, "-m", "webhook.cli.main", "serve", "--cert-dir", str(cert_dir),
        "--bind", f"127.0.0.1:{port or free_port()}", "--workers", str(workers), *extra_args,
    ]
    if config is not None:
        path = tmp / "config.yaml"
        path.write_text(config)
        args += ["--config", str(path)]
    child_env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    child_env.update(env or {})
    log_path = tmp / "serve.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, env=child_env, stdout=subprocess.DEVNULL, stderr=log)
    srv = LiveServer(proc, int(args[args.index("--bind") + 1].rsplit(":", 1)[1]), cert_dir,
                     log_path)
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        try:
            if srv.request("GET", "/readyz")[0] == 200:
                return srv
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            srv.kill()
            raise RuntimeError(f"server did not become ready: {srv.log_text()[-2000:]}")
        time.sleep(0.1)
