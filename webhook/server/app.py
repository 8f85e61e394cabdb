"""The Flask app: `create_app(settings=None, *, source=None)`.

Routes: POST /validate, POST /mutate (AdmissionReview in and out), GET /healthz,
GET /readyz (503 until the cluster source has synced), GET /metrics. Everything an
app needs lives in `app.extensions["topospread"]`; importing this module does
nothing, and gunicorn builds the app in each worker after forking, so a cluster
source's background threads start there.

Concerns are composed at the edge (as Kyverno's handlers are): request size cap
and error bodies, then metrics, then admission.handle_review.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException, InternalServerError, RequestEntityTooLarge
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wsgi import get_input_stream

from webhook.admission.context import ReviewContext
from webhook.admission.handlers import answer_review, awaited_controller, read_review
from webhook.admission.review import MAX_BODY_BYTES, Operation, error_status
from webhook.api.kube import RawObj
from webhook.api.versions import nearest_supported
from webhook.config import Settings
from webhook.errors import ConfigError
from webhook.server.logs import log_review
from webhook.server.metrics import CONTENT_TYPE_LATEST, Metrics

if TYPE_CHECKING:  # pragma: no cover - typing only
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from webhook.cluster.source import ClusterSource

__all__ = ["EXTENSION", "Services", "create_app"]

EXTENSION = "topospread"

log = logging.getLogger("topospread.server")

# How long /mutate waits for the watch to deliver the controller of a created pod whose
# defaults read its selector (a ReplicaSet creates its first pods right after it is
# created itself). Well inside the webhooks' timeoutSeconds (5 s in deploy/).
CONTROLLER_WAIT_SECONDS = 1.0


def _never() -> bool:
    return False


@dataclass
class Services:
    """Per-app state: settings, the cluster source (None: no cluster state), metrics, and
    `draining`, true once the server is shutting down (serve shares it across workers)."""

    settings: Settings
    source: ClusterSource | None
    metrics: Metrics
    draining: Callable[[], bool] = _never

    def ready(self) -> bool:
        return not self.draining() and (self.source is None or self.source.synced())

    def stop(self) -> None:
        self.metrics.stop()
        if self.source is not None:
            self.source.stop()


def _json(doc: RawObj, status: int) -> Response:
    body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return Response(body, status=status, mimetype="application/json")


def _server_version(source: ClusterSource) -> tuple[int, int] | None:
    """The API server version, None (rules of the newest release) when it cannot be had."""
    try:
        return source.server_version()
    except Exception:
        log.exception("the cluster source failed to tell the API server version")
        return None


def api_server_version(
    settings: Settings, server_version: tuple[int, int] | None
) -> tuple[int, int] | None:
    """The API server whose rules apply: the config's kubernetesVersion when it names
    one (resolve_version's order: the config before the cluster), else the cluster's."""
    if settings.kubernetes_version is not None:
        return settings.kubernetes_version.minor_version
    return server_version


def live_settings(settings: Settings, server_version: tuple[int, int] | None) -> Settings:
    """The settings for the cluster's own release: the API server's /version decides
    unless the config names kubernetesVersion (resolve_version's order); the newest
    while the version is not known yet."""
    if settings.kubernetes_version is not None or server_version is None:
        return settings
    try:
        return settings.for_version(nearest_supported(server_version))
    except ConfigError:
        # featureGates that do not hold for the cluster's release (a gate locked there):
        # answer with the newest release's model rather than fail the review.
        log.warning("featureGates do not hold for the cluster's release", exc_info=True)
        return settings


def _review(services: Services, operation: Operation) -> Response:
    status, body = _answer(services, operation, request.get_data(cache=False))
    return Response(body, status=status, mimetype="application/json")


def _answer(services: Services, operation: Operation, body: bytes) -> tuple[int, bytes]:
    """Answer one AdmissionReview body: HTTP status and JSON bytes; metrics and log taken."""
    started = time.perf_counter()
    source = services.source
    if source is None:
        ctx = ReviewContext(
            settings=services.settings, server_version=api_server_version(services.settings, None)
        )
        answer = answer_review(body, operation, ctx)
    else:
        from webhook.cluster.source import read_snapshot, wait_for_object

        review = read_review(body)
        controller = awaited_controller(review, operation, services.settings)
        if controller is not None:
            wait_for_object(source, *controller, timeout=CONTROLLER_WAIT_SECONDS)
        # Hold the read side for the whole review: a placement sees one consistent state.
        with read_snapshot(source) as snapshot:
            server_version = api_server_version(services.settings, _server_version(source))
            ctx = ReviewContext(
                settings=live_settings(services.settings, server_version),
                server_version=server_version,
                snapshot=snapshot,
            )
            answer = answer_review(review, operation, ctx)
    data = json.dumps(answer.doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    elapsed = time.perf_counter() - started
    services.metrics.observe_review(operation, answer, elapsed)
    log_review(operation, answer, elapsed)
    return answer.status, data


_REVIEW_ROUTES: dict[str, Operation] = {"/validate": "validate", "/mutate": "mutate"}


class _ReviewFastPath:
    """POST /validate and /mutate answered straight from WSGI, without Flask's request
    and app contexts, URL matching and response objects (a large part of the CPU time
    of a small review). The same answer, status, headers and request count as the Flask
    routes; anything else, and a body over the cap, goes to Flask."""

    def __init__(self, app: Flask, services: Services) -> None:
        self.flask_wsgi = app.wsgi_app
        self.services = services
        self.max_length = app.config["MAX_CONTENT_LENGTH"]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Any:
        operation = _REVIEW_ROUTES.get(environ.get("PATH_INFO", ""))
        if operation is None or environ.get("REQUEST_METHOD") != "POST":
            return self.flask_wsgi(environ, start_response)
        try:
            stream = get_input_stream(environ, max_content_length=self.max_length)
        except RequestEntityTooLarge:
            # Nothing was read: the body is discarded as the client sends it, so that a
            # client writing its whole body before reading still gets the 413.
            return self._too_large(environ, start_response)
        # A client that stalls or goes away mid-body (OSError: a kernel timeout, a reset)
        # is left to the server, which closes the connection; there is no one to answer.
        try:
            body = stream.read()
        except HTTPException as exc:
            # The client closed before sending its Content-Length (werkzeug's
            # ClientDisconnected, a 400): answered as Flask would, then closed.
            close_connection(start_response)
            code = exc.code or 400
            data = json.dumps(
                error_status(code, exc.description or exc.name), separators=(",", ":")
            ).encode()
            self.services.metrics.count_request(environ["PATH_INFO"], code)
            start_response(
                _status_line(code),
                [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
            )
            return [data]
        try:
            status, data = _answer(self.services, operation, body)
        except Exception:
            # As Flask does for a route that raises: logged, and a JSON Status 500.
            log.exception("unexpected failure serving %s", environ["PATH_INFO"])
            status = 500
            message = InternalServerError.description or "Internal Server Error"
            data = json.dumps(error_status(status, message), separators=(",", ":")).encode()
        if status == 413:
            # A chunked body cut at the cap: the rest is still coming.
            discard_body(environ)
            close_connection(start_response)
        self.services.metrics.count_request(environ["PATH_INFO"], status)
        start_response(
            _STATUS_LINES.get(status) or _status_line(status),
            [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
        )
        return [data]

    def _too_large(self, environ: WSGIEnvironment, start_response: StartResponse) -> Any:
        discard_body(environ)
        close_connection(start_response)
        data = json.dumps(
            error_status(413, f"request body larger than {MAX_BODY_BYTES} bytes"),
            separators=(",", ":"),
        ).encode()
        self.services.metrics.count_request(environ["PATH_INFO"], 413)
        start_response(
            _status_line(413),
            [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
        )
        return [data]


def _status_line(status: int) -> str:
    return f"{status} {HTTP_STATUS_CODES.get(status, 'UNKNOWN').upper()}"


_STATUS_LINES = {code: _status_line(code) for code in (200, 400, 413, 500)}

# A body over the cap is read and thrown away up to this many bytes, for at most
# DISCARD_SECONDS, so that its client, done writing, reads the 413; past either bound
# the connection is closed with the rest unread.
DISCARD_MAX_BYTES = 64 * 1024 * 1024
DISCARD_SECONDS = 10.0
_DISCARD_CHUNK = 256 * 1024


def discard_body(environ: WSGIEnvironment) -> int:
    """Read and drop what is left of the request body, within the bounds above; the
    number of bytes dropped. A client that stalls or goes away ends it early."""
    raw = environ.get("wsgi.input")
    if raw is None:
        return 0
    dropped = 0
    deadline = time.monotonic() + DISCARD_SECONDS
    try:
        while dropped < DISCARD_MAX_BYTES and time.monotonic() < deadline:
            chunk = raw.read(_DISCARD_CHUNK)
            if not chunk:
                break
            dropped += len(chunk)
    except (OSError, ValueError):
        pass
    return dropped


def close_connection(start_response: StartResponse) -> None:
    """Answer with `Connection: close` (gunicorn: the Response behind start_response)."""
    response = getattr(start_response, "__self__", None)
    force_close = getattr(response, "force_close", None)
    if callable(force_close):
        force_close()


def create_app(settings: Settings | None = None, *, source: ClusterSource | None = None) -> Flask:
    """Build the webhook app; starts `source` (idempotent for the sources we ship)."""
    app = Flask("webhook")
    # One byte over the cap: a chunked body is cut at this length without an error, and
    # parse_review answers 413 for anything longer than MAX_BODY_BYTES.
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES + 1
    services = Services(settings=settings or Settings(), source=source, metrics=Metrics())
    app.extensions[EXTENSION] = services
    if source is not None:
        try:
            source.start()
        except Exception:
            # The process still serves: /readyz says 503 until the source syncs.
            log.exception("the cluster source failed to start")

    @app.post("/validate")
    def validate() -> Response:
        return _review(services, "validate")

    @app.post("/mutate")
    def mutate() -> Response:
        return _review(services, "mutate")

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.get("/readyz")
    def readyz() -> Response:
        if services.draining():
            return Response("shutting down\n", status=503, mimetype="text/plain")
        if services.ready():
            return Response("ok\n", mimetype="text/plain")
        return Response("cluster state not synced yet\n", status=503, mimetype="text/plain")

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(services.metrics.exposition(), content_type=CONTENT_TYPE_LATEST)

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        code = exc.code or 500
        message = exc.description or exc.name
        if code == 413:
            message = f"request body larger than {MAX_BODY_BYTES} bytes"
        return _json(error_status(code, message), code)

    @app.after_request
    def count(response: Response) -> Response:
        # The route, not the raw path: arbitrary URLs must not grow the label set.
        route = request.url_rule.rule if request.url_rule is not None else "other"
        services.metrics.count_request(route, response.status_code)
        return response

    app.wsgi_app = _ReviewFastPath(app, services)  # type: ignore[method-assign]
    return app
