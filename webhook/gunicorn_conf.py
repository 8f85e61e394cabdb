"""gunicorn settings and server hooks `topospread serve` runs with.

Plain module-level settings, so the file also works as `gunicorn -c` config. gthread
workers: the handlers are short and CPU bound, a few threads per worker absorb slow
TLS clients. Hooks import late: prometheus_client must not be imported before serve
has set PROMETHEUS_MULTIPROC_DIR.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

__all__ = ["OPTIONS", "child_exit", "on_exit", "on_starting", "worker_exit"]

# The env var serve sets when it made the metrics directory itself (and so removes it).
OWNED_METRICS_DIR = "TOPOSPREAD_OWNED_METRICS_DIR"

worker_class = "gthread"
workers = 2
threads = 4
# kube-apiserver gives a webhook 10 s by default (at most 30 s): a request taking longer
# is already lost, and a stuck worker is restarted.
timeout = 30
graceful_timeout = 20
keepalive = 5
proc_name = "topospread"
accesslog = None
errorlog = "-"
loglevel = "info"
# gunicorn 25.1+ opens a control socket at one fixed path per user: a second server on
# the same machine (tests, several webhooks) would fight over it. Nothing here uses it.
control_socket_disable = True


def on_starting(server: Any) -> None:
    """Start with an empty metrics directory: samples of an earlier run must not count."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if path and os.path.isdir(path):
        for name in os.listdir(path):
            if name.endswith(".db"):
                os.unlink(os.path.join(path, name))


def child_exit(server: Any, worker: Any) -> None:
    """Drop a dead worker's live gauges from the shared metrics."""
    from webhook.metrics import mark_process_dead

    mark_process_dead(worker.pid)


def worker_exit(server: Any, worker: Any) -> None:
    """Stop the worker's cluster source (its watch threads) on the way out."""
    from webhook.server import EXTENSION

    app = getattr(worker, "wsgi", None)
    services = getattr(app, "extensions", {}).get(EXTENSION) if app is not None else None
    if services is not None:
        services.stop()


def on_exit(server: Any) -> None:
    """Remove the metrics directory serve created for this run."""
    path = os.environ.get(OWNED_METRICS_DIR)
    if path:
        shutil.rmtree(path, ignore_errors=True)


OPTIONS: dict[str, Any] = {
    "worker_class": worker_class,
    "workers": workers,
    "threads": threads,
    "timeout": timeout,
    "graceful_timeout": graceful_timeout,
    "keepalive": keepalive,
    "proc_name": proc_name,
    "accesslog": accesslog,
    "errorlog": errorlog,
    "loglevel": loglevel,
    "control_socket_disable": control_socket_disable,
    "on_starting": on_starting,
    "child_exit": child_exit,
    "worker_exit": worker_exit,
    "on_exit": on_exit,
}
