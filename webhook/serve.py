"""`topospread serve`: the webhook over TLS with gunicorn.

Everything that can be wrong is checked before gunicorn starts, and refused with a
clear message (exit 2): the config file, the bind address, the worker count, the
certificate pair, the snapshot or kubeconfig. The TLS context comes from
webhook.certs.CertReloader through gunicorn's `ssl_context` hook, asked for every
accepted connection, so a rotated certificate (a Secret update) is picked up without
a restart.

A snapshot file (the demo one when no source is named) is loaded once in the master
and shared by the forked workers; a live source is configured in the master and
started in each worker (threads never cross a fork).
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gunicorn.app.base import BaseApplication

from webhook.config import Settings, load_settings
from webhook.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from flask import Flask

    from webhook.cluster.source import ClusterSource

__all__ = ["DEMO_SNAPSHOT", "WebhookApplication", "cli_serve", "demo_snapshot_path", "parse_bind"]

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


class WebhookApplication(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn with our options; each worker builds its own app with `factory`."""

    def __init__(self, options: dict[str, Any], factory: Callable[[], Flask]) -> None:
        self.options = options
        self.factory = factory
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            # Settings this gunicorn does not know (older releases) are skipped.
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> Flask:
        return self.factory()


def _source(args: argparse.Namespace) -> ClusterSource:
    """The cluster source the flags name, loaded or configured now (fails fast)."""
    if args.kubeconfig or args.in_cluster:
        from webhook.cluster.informer import LiveSource

        return LiveSource(kubeconfig=args.kubeconfig, in_cluster=bool(args.in_cluster))
    from webhook.cluster.source import FileSource

    source = FileSource(args.snapshot or demo_snapshot_path())
    source.load()
    return source


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


def _metrics_dir(workers: int) -> None:
    """Share metrics across workers (PROMETHEUS_MULTIPROC_DIR) before prometheus_client
    is imported; make a private directory when the environment names none."""
    from webhook.gunicorn_conf import OWNED_METRICS_DIR

    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        path = tempfile.mkdtemp(prefix="topospread-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
        os.environ[OWNED_METRICS_DIR] = path


def cli_serve(args: argparse.Namespace) -> int:
    """`topospread serve`: check everything, then run gunicorn until stopped."""
    from webhook.certs import CertReloader
    from webhook.gunicorn_conf import OPTIONS

    settings = load_settings(args.config)
    bind = parse_bind(args.bind)
    workers = OPTIONS["workers"] if args.workers is None else args.workers
    if workers < 1:
        raise ConfigError(f"--workers {workers}: must be at least 1")
    cert_dir = args.cert_dir
    reloader = CertReloader(cert_dir, client_ca=_client_ca(settings, cert_dir))
    source = _source(args)

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    _metrics_dir(workers)
    where = (
        "the live cluster" if args.kubeconfig or args.in_cluster
        else str(args.snapshot or f"the demo snapshot {demo_snapshot_path()}")
    )
    log.info(
        "cluster state from %s; matchLabelKeysMerge: %s",
        where,
        settings.match_label_keys_merge,
    )

    def factory() -> Flask:
        from webhook.server import create_app

        return create_app(settings, source=source)

    options = {
        **OPTIONS,
        "bind": [bind],
        "workers": workers,
        # gunicorn serves TLS when certfile/keyfile are set; the context itself comes
        # from the reloader.
        "certfile": reloader.cert_file,
        "keyfile": reloader.key_file,
        "ssl_context": reloader.gunicorn_ssl_context,
    }
    WebhookApplication(options, factory).run()
    return 0
