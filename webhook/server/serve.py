"""`topospread serve`: the webhook over TLS with gunicorn.

Everything that can be wrong is checked before gunicorn starts, and refused with a
clear message (exit 2): the config file, the bind address, the worker count, the
certificate pair, the snapshot or kubeconfig. The TLS context comes from
webhook.install.certs.CertReloader through gunicorn's `ssl_context` hook, asked for every
accepted connection, so a rotated certificate (a Secret update) is picked up without
a restart.

A snapshot file (the demo one when no source is named) is loaded once in the master
and shared by the forked workers; a live source is configured in the master and
started in the worker (threads never cross a fork). A worker running a live source
holds its own state and watches, so with a live cluster serve runs one worker unless
--workers says otherwise: the state once per replica, scaled by replicas.

SIGTERM drains before stopping (DrainingArbiter, see webhook/gunicorn_conf.py). Logs are
JSON lines on stderr (webhook/logs.py); metrics are shared by the workers through a
PROMETHEUS_MULTIPROC_DIR, a private temporary one unless the environment names one.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from webhook.admission.foresight import prime
from webhook.config import Settings, load_settings
from webhook.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from flask import Flask

    from webhook.cluster.source import ClusterSource
    from webhook.scheduler.framework.snapshot import Snapshot
    from webhook.server.gunicorn_conf import DrainFlag

__all__ = [
    "DEMO_SNAPSHOT",
    "DrainingArbiter",
    "WebhookApplication",
    "check_bind_free",
    "cli_serve",
    "default_workers",
    "demo_snapshot_path",
    "drain_seconds",
    "parse_bind",
]

DEMO_SNAPSHOT = "demo-snapshot.yaml"

log = logging.getLogger("topospread.serve")


def demo_snapshot_path() -> Path:
    """The demo cluster shipped inside the package (webhook/data/demo-snapshot.yaml)."""
    return Path(str(resources.files("webhook") / "data" / DEMO_SNAPSHOT))


def parse_bind(bind: str) -> str:
    """Check HOST:PORT ([v6]:PORT too); return it as gunicorn takes it."""
    host, sep, port = bind.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--bind {bind!r}: expected HOST:PORT, e.g. 127.0.0.1:8443")
    return bind


class DrainingArbiter(Arbiter):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn's master, with a drain before the graceful stop on SIGTERM.

    gunicorn stops at once on SIGTERM: it closes the listener and tells the workers to
    finish. Behind a Service that loses requests, as endpoints still route to the pod
    for a few seconds. Here SIGTERM first sets the shared DrainFlag (every worker's
    /readyz answers 503, every response closes its connection), goes on serving for
    `drain_seconds` (reaping and replacing workers as usual), then stops as gunicorn
    does. A second SIGTERM ends the drain early; SIGINT and SIGQUIT still stop at once.
    """

    def __init__(self, app: Any, flag: DrainFlag, drain_seconds: float) -> None:
        self.drain_flag = flag
        self.drain_seconds = drain_seconds
        super().__init__(app)

    def handle_term(self) -> None:
        if self.drain_flag.is_set() or self.drain_seconds <= 0:
            self.drain_flag.set()
            raise StopIteration
        self.drain_flag.set()
        self.log.info(
            "SIGTERM: /readyz fails now; serving %.1f s more, then draining", self.drain_seconds
        )
        deadline = time.monotonic() + self.drain_seconds
        while (left := deadline - time.monotonic()) > 0:
            for sig in self.wait_for_signals(timeout=min(left, 1.0)):
                if sig == signal.SIGTERM:
                    self.log.info("second SIGTERM: draining now")
                    raise StopIteration
                if sig == signal.SIGINT:
                    self.handle_int()
                if sig == signal.SIGQUIT:
                    self.handle_quit()
                if sig == signal.SIGCHLD:
                    self.handle_chld()
                # Anything else (HUP, TTIN, USR2...) makes no sense while stopping.
            self.murder_workers()
            self.manage_workers()
        self.log.info("drain delay over: closing the listener, finishing requests in flight")
        raise StopIteration


class WebhookApplication(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn with our options; each worker builds its own app with `factory`.

    With `drain` (a DrainFlag made before the workers fork), SIGTERM drains first for
    `drain_seconds` (DrainingArbiter); without it, gunicorn stops as usual.
    """

    def __init__(
        self,
        options: dict[str, Any],
        factory: Callable[[], Flask],
        *,
        drain: DrainFlag | None = None,
        drain_seconds: float = 0.0,
    ) -> None:
        self.options = options
        self.factory = factory
        self.drain = drain
        self.drain_seconds = drain_seconds
        super().__init__()

    def run(self) -> None:
        if self.drain is None:
            super().run()
            return
        try:
            DrainingArbiter(self, self.drain, self.drain_seconds).run()
        except RuntimeError as exc:  # as BaseApplication.run reports a failed start
            print(f"\nError: {exc}\n", file=sys.stderr)
            sys.stderr.flush()
            sys.exit(1)

    def load_config(self) -> None:
        for key, value in self.options.items():
            # Settings this gunicorn does not know (older releases) are skipped.
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Flask:
        return self.factory()


def _source(args: argparse.Namespace, settings: Settings) -> ClusterSource:
    """The cluster source the flags name, loaded or configured now (fails fast); the
    model primed on its state (foresight.prime) before any review reads it."""

    def primed(snapshot: Snapshot) -> None:
        prime(snapshot, settings)

    if args.kubeconfig or args.in_cluster:
        from webhook.cluster.informer import LiveSource

        return LiveSource(
            kubeconfig=args.kubeconfig, in_cluster=bool(args.in_cluster), prime=primed
        )
    from webhook.cluster.source import FileSource

    source = FileSource(args.snapshot or demo_snapshot_path())
    primed(source.load())
    # Loaded once in the master: freezing keeps the collector off the snapshot's objects
    # and keeps the workers' copy-on-write pages shared after the fork.
    gc.freeze()
    return source


def default_workers(live: bool) -> int:
    """Workers when --workers is not given: gunicorn_conf's count for a snapshot file
    (loaded once before the fork and shared), one for a live cluster, whose state and
    watches a worker holds by itself: one copy per replica, scaled by replicas."""
    from webhook.server.gunicorn_conf import OPTIONS

    return 1 if live else int(OPTIONS["workers"])


def check_bind_free(bind: str) -> None:
    """Refuse an address some other server already listens on. With reuse_port each
    worker binds the address itself after the fork, so a busy port would not stop
    gunicorn's master; and a plain bind also fails where another SO_REUSEPORT server of
    the same user listens, which the workers would otherwise share connections with."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"--bind {bind}: {exc}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"--bind {bind}: {exc.strerror}") from exc


def _client_ca(settings: Settings, cert_dir: str) -> str | None:
    """ca.crt of the cert dir when the config asks for client certificates (tls.verifyClients)."""
    tls = settings.raw.get("tls") or {}
    if not isinstance(tls, dict):
        raise ConfigError("tls: must be a mapping")
    verify = tls.get("verifyClients", False)
    if not isinstance(verify, bool):
        raise ConfigError(f"tls.verifyClients: must be true or false, got {verify!r}")
    if not verify:
        return None
    ca = os.path.join(cert_dir, "ca.crt")
    if not os.path.isfile(ca):
        raise ConfigError(f"tls.verifyClients is true but {ca} does not exist")
    return ca


# A client may stall a blocking read or write this long before its connection is closed
# (kube-apiserver sends a whole review at once and its webhook timeout is at most 30 s).
IO_TIMEOUT_SECONDS = 10.0


def io_timeout_seconds(settings: Settings) -> float:
    """tls.ioTimeoutSeconds of the config (default IO_TIMEOUT_SECONDS)."""
    tls = settings.raw.get("tls") or {}
    if not isinstance(tls, dict):
        raise ConfigError("tls: must be a mapping")
    value = tls.get("ioTimeoutSeconds", IO_TIMEOUT_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.1 <= value <= 300:
        raise ConfigError(
            f"tls.ioTimeoutSeconds: must be a number of seconds from 0.1 to 300, got {value!r}"
        )
    return float(value)


def drain_seconds(settings: Settings) -> float:
    """shutdown.drainSeconds of the config (default gunicorn_conf.drain_seconds)."""
    from webhook.server import gunicorn_conf

    shutdown = settings.raw.get("shutdown") or {}
    if not isinstance(shutdown, dict):
        raise ConfigError("shutdown: must be a mapping")
    value = shutdown.get("drainSeconds", gunicorn_conf.drain_seconds)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 300:
        raise ConfigError(
            f"shutdown.drainSeconds: must be a number of seconds from 0 to 300, got {value!r}"
        )
    return float(value)


def _metrics_dir() -> None:
    """Share metrics across workers (PROMETHEUS_MULTIPROC_DIR) before prometheus_client
    is imported; make a private directory when the environment names none. Used with one
    worker too: counters then survive a worker restart."""
    from webhook.server.gunicorn_conf import OWNED_METRICS_DIR

    named = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if named:
        try:
            os.makedirs(named, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"PROMETHEUS_MULTIPROC_DIR {named}: {exc.strerror}") from exc
        return
    path = tempfile.mkdtemp(prefix="topospread-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    os.environ[OWNED_METRICS_DIR] = path


def cli_serve(args: argparse.Namespace) -> int:
    """`topospread serve`: check everything, then run gunicorn until stopped."""
    from webhook.install.certs import CertReloader
    from webhook.server import logs
    from webhook.server.gunicorn_conf import OPTIONS, DrainFlag, connection_policy, worker_sees
    from webhook.server.worker import KernelTimeoutContext, keepalive_requests

    settings = load_settings(args.config, getattr(args, "scheduler_config", None))
    drain = drain_seconds(settings)
    bind = parse_bind(args.bind)
    live = bool(args.kubeconfig or args.in_cluster)
    workers = default_workers(live) if args.workers is None else args.workers
    if workers < 1:
        raise ConfigError(f"--workers {workers}: must be at least 1")
    requests_per_connection = keepalive_requests(settings)
    cert_dir = args.cert_dir
    # No Python-level timeout on the sockets: the kernel bounds them (worker.py).
    reloader = CertReloader(cert_dir, client_ca=_client_ca(settings, cert_dir))
    tls = KernelTimeoutContext(reloader.context, io_timeout_seconds(settings))
    share_port = bool(getattr(args, "share_port", False))
    if OPTIONS.get("reuse_port") and not share_port:
        check_bind_free(bind)
    source = _source(args, settings)

    level = logs.level_from_env()
    logs.configure(level)
    _metrics_dir()
    where = (
        "the live cluster"
        if args.kubeconfig or args.in_cluster
        else str(args.snapshot or f"the demo snapshot {demo_snapshot_path()}")
    )
    log.info(
        "cluster state from %s; matchLabelKeysMerge: %s; scheduler profiles: %s",
        where,
        settings.match_label_keys_merge,
        ", ".join(p.scheduler_name for p in settings.scheduler),
    )
    if live and workers > 1:
        log.warning(
            "--workers %d with a live cluster: every worker holds its own copy of the "
            "cluster state and its own watches; one worker per pod and more replicas "
            "hold it once per replica",
            workers,
        )

    flag = DrainFlag()

    def factory() -> Flask:
        from webhook.server.app import EXTENSION, create_app

        app = create_app(settings, source=source)
        services = app.extensions[EXTENSION]
        services.draining = flag.is_set
        services.metrics.watch_source(source)
        services.metrics.watch_certificate(reloader)
        return app

    options = {
        **OPTIONS,
        "bind": [bind],
        "workers": workers,
        # gunicorn serves TLS when certfile/keyfile are set; the context itself comes
        # from the reloader.
        "certfile": reloader.cert_file,
        "keyfile": reloader.key_file,
        "ssl_context": tls.gunicorn_ssl_context,
        "pre_request": connection_policy(flag, requests_per_connection),
        "post_fork": worker_sees(flag, share_port=share_port),
        "loglevel": level.lower(),
        "logconfig_dict": logs.dict_config(level),
    }
    WebhookApplication(options, factory, drain=flag, drain_seconds=drain).run()
    return 0
