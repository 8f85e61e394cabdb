"""Prometheus metrics, one set per app, safe across gunicorn workers.

With PROMETHEUS_MULTIPROC_DIR set (serve sets it whenever it runs several workers),
prometheus_client writes every sample to files in that directory and /metrics
aggregates the files of all workers, so whichever worker answers reports the whole
server. Without it (tests, the `review` command) each app counts in its own registry.

prometheus_client picks its storage when first imported, from the environment at that
moment: the variable must be set before anything imports this module.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    generate_latest,
    multiprocess,
)

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "mark_process_dead", "multiprocess_dir"]


def multiprocess_dir() -> str | None:
    """The directory samples are shared through, None in single-process mode."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class Metrics:
    """The counters the server updates, and their exposition."""

    def __init__(self) -> None:
        # Collectors live in a private registry: several apps in one process (tests)
        # must not collide on metric names.
        self._own = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "topospread_http_requests",
            "HTTP requests answered, by path and status code.",
            ["path", "code"],
            registry=self._own,
        )
        self.decisions = Counter(
            "topospread_admission_decisions",
            "AdmissionReviews answered, by endpoint and decision "
            "(allowed, denied, patched, malformed, internal_error).",
            ["endpoint", "decision"],
            registry=self._own,
        )

    def exposition(self) -> bytes:
        """The text /metrics serves."""
        if multiprocess_dir() is not None:
            registry = CollectorRegistry()
            # prometheus_client.multiprocess carries no type annotations.
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return bytes(generate_latest(registry))
        return bytes(generate_latest(self._own))


def mark_process_dead(pid: int) -> None:
    """Tell prometheus_client a worker is gone (gunicorn's child_exit hook)."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]  # untyped module
