"""The HTTP edge: the Flask app, gunicorn over TLS, metrics, logs.

`webhook.server:create_app` stays the gunicorn entry point. It is resolved lazily
(PEP 562) so that importing `webhook.server.gunicorn_conf` or `serve` imports neither
Flask nor prometheus_client: multiprocess metrics need PROMETHEUS_MULTIPROC_DIR set
before prometheus_client is first imported.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXTENSION", "Services", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from webhook.server import app

        return getattr(app, name)
    raise AttributeError(f"module 'webhook.server' has no attribute {name!r}")
