"""The periodic audit: `topospread audit --watch`, one process per deployment.

    page = LatestReport()                                 # with audit.report only
    loop = AuditLoop(read, settings, metrics, writers, on_report=page.update)
    loop = AuditLoop(read, settings, metrics, rebalancer=Rebalancer(...))   # audit.rebalance
    server = MetricsServer("0.0.0.0:9090", metrics, page).start()   # /metrics, /report(.json)
    loop.run(stop)                                        # until stop is set (SIGTERM)

Every `audit.intervalSeconds` (start to start; 0: no audit at all, the process only
serves /healthz and its metrics) the loop reads the whole cluster again (a paginated
list of every kind an audit needs), runs the same audit as the CLI (run_audit),
exports it as metrics, with writers syncs the PolicyReports (one writer per reporting
API of audit.reports) and, with audit.report, renders the HTML page /report serves
(webhook/render/html.py, from the same JSON document `audit -o json` prints) and keeps
that document for /report.json (what the Headlamp plugin reads). The state is
listed again each time rather than kept by a watch: an audit every few minutes needs
a consistent picture, not a current one, and the memory of 150,000 pods is given back
between runs (docs/audit-server.md weighs both).

With audit.rebalance.enabled, each successful audit is followed by a few steps of
the plan (webhook/audit/act/applier.py: Rebalancer), each logged and counted.

Nothing stops the loop but `stop`: a failed read, a failed audit or a failed write is
one log line and one count in the metrics, and the next run tries again.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST

from webhook.api.kube import RawObj
from webhook.audit.act.keeper import CostKeeper
from webhook.audit.pipeline import run_audit
from webhook.audit.report.document import AuditReport
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.report.policyreports import SyncOutcome, desired_results
from webhook.audit.state.inventory import ClusterState
from webhook.config import Settings
from webhook.errors import ConfigError, TopospreadError
from webhook.render.html import audit_page, utc_now

__all__ = [
    "AuditLoop",
    "AuditStopped",
    "LatestReport",
    "MetricsServer",
    "ReportSink",
    "parse_bind",
]

log = logging.getLogger("topospread.audit")


class AuditStopped(Exception):
    """Raised by a read that noticed the stop request: the run ends, uncounted."""


class ReportSink(Protocol):
    """Where the results go (policyreports.PolicyReportWriter)."""

    def sync(self, desired: Mapping[str, list[RawObj]]) -> SyncOutcome: ...


class Rebalancing(Protocol):
    """What carries out steps of the plan after an audit (apply.Rebalancer)."""

    def run_once(self) -> object: ...


class AuditLoop:
    """Audits on an interval; `runs` counts the audits that completed."""

    def __init__(
        self,
        read: Callable[[], ClusterState],
        settings: Settings,
        metrics: AuditMetrics,
        writer: ReportSink | Sequence[ReportSink] | None = None,
        *,
        on_report: Callable[[AuditReport, float], None] | None = None,
        keeper: CostKeeper | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.monotonic,
        rebalancer: Rebalancing | None = None,
    ) -> None:
        self.read = read
        self.rebalancer = rebalancer
        self.settings = settings
        self.metrics = metrics
        if writer is None:
            self.writers: list[ReportSink] = []
        elif isinstance(writer, Sequence):
            self.writers = list(writer)
        else:
            self.writers = [writer]
        self.on_report = on_report
        self.keeper = keeper
        self.interval = settings.audit.interval_seconds if interval is None else interval
        self.include_soft = settings.audit.include_soft
        self._clock = clock
        self._timer = timer
        self.runs = 0
        self.failures = 0

    def run_once(self) -> AuditReport | None:
        """One audit: read, evaluate, export, write; None when it failed. Never raises."""
        started = self._timer()
        try:
            state = self.read()
        except AuditStopped:
            return None
        except TopospreadError as exc:
            self._failed("read", f"the audit could not read the cluster: {exc}")
            return None
        except Exception:  # a bug: the traceback, and the loop goes on
            log.exception("the audit could not read the cluster")
            self._failed("read", None)
            return None
        try:
            report = run_audit(state, self.settings, include_soft=self.include_soft)
        except Exception:  # a bug: the traceback, and the loop goes on
            log.exception("the audit failed")
            self._failed("audit", None)
            return None
        seconds = self._timer() - started
        now = self._clock()
        self.metrics.observe_run(report, seconds, now)
        self.runs += 1
        log.info(
            "audit: %d workloads, %d constraints checked, %d violated (%.1f s)",
            len(report.spreads),
            report.checked,
            report.violations,
            seconds,
        )
        for writer in self.writers:
            self._write(writer, report, state, now)
        if self.keeper is not None:
            self._keep_costs(self.keeper, state)
        if self.on_report is not None:
            try:
                self.on_report(report, now)
            except Exception:  # a bug: the audit and its metrics stand
                log.exception("rendering the report page failed")
        self._rebalance()
        return report

    def _rebalance(self) -> None:
        """audit.rebalance: steps of the plan after the audit; never ends the loop."""
        if self.rebalancer is None:
            return
        try:
            self.rebalancer.run_once()
        except AuditStopped:
            return
        except TopospreadError as exc:
            log.warning("rebalance: %s; tried again after the next audit", exc)
        except Exception:  # a bug: the audit and its metrics stand
            log.exception("rebalance failed")

    def _failed(self, stage: str, message: str | None) -> None:
        self.failures += 1
        self.metrics.count_error(stage)
        if message is not None:
            log.warning("%s; retried in %s s", message, _seconds(self.interval))

    def _write(
        self, writer: ReportSink, report: AuditReport, state: ClusterState, now: float
    ) -> None:
        try:
            outcome = writer.sync(desired_results(report, state, now=now))
        except Exception:  # a bug: the writer reports its own failures
            log.exception("writing the PolicyReports failed")
            outcome = SyncOutcome(errors=[("update", "", "unexpected error")])
        self.metrics.observe_reports(outcome)
        if outcome.created or outcome.updated or outcome.deleted:
            log.info(
                "PolicyReports: %d created, %d updated, %d deleted",
                len(outcome.created),
                len(outcome.updated),
                len(outcome.deleted),
            )

    def _keep_costs(self, keeper: CostKeeper, state: ClusterState) -> None:
        try:
            outcome = keeper.sync(state, self.settings)
        except Exception:  # a bug: the audit and its metrics stand
            log.exception("keeping the deletion costs failed")
            return
        self.metrics.observe_costs(outcome)

    def run(self, stop: threading.Event) -> None:
        """Audit now and every `interval` seconds (start to start) until `stop` is set."""
        if self.interval <= 0:
            log.info("audit.intervalSeconds is 0: the periodic audit is off")
            stop.wait()
            return
        log.info("auditing every %s s", _seconds(self.interval))
        while not stop.is_set():
            started = self._timer()
            self.run_once()
            stop.wait(max(0.0, self.interval - (self._timer() - started)))


def _seconds(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def parse_bind(bind: str) -> tuple[str, int]:
    """HOST:PORT ([v6]:PORT too) as (host, port); ConfigError when malformed."""
    host, sep, port = bind.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--metrics-bind {bind!r}: expected HOST:PORT, e.g. 0.0.0.0:9090")
    return host.removeprefix("[").removesuffix("]"), int(port)


class LatestReport:
    """The latest audit for /report (its HTML page) and /report.json (its `audit -o json`
    document), both made once per audit in the audit's thread; a request only reads the
    bytes, and the two always come from the same audit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._page: bytes | None = None
        self._document: bytes | None = None

    def update(self, report: AuditReport, at: float) -> None:
        doc = report.to_json()
        page = audit_page(doc, generated=utc_now(at)).encode()
        # Added beside the keys of `audit -o json`: when this audit ran (RFC 3339, UTC).
        doc["generated"] = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        document = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        with self._lock:
            self._page = page
            self._document = document

    def page(self) -> bytes | None:
        """The page, None before the first audit completed."""
        with self._lock:
            return self._page

    def document(self) -> bytes | None:
        """The JSON document, None before the first audit completed."""
        with self._lock:
            return self._document


# What /report and /report.json answer (503) before the first audit completed.
_NO_REPORT_YET = (
    b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
    b"<title>topospread audit</title></head><body><p>No audit has completed yet; "
    b"the page appears after the first one.</p></body></html>\n"
)
_NO_DOCUMENT_YET = b'{"error":"no audit has completed yet; retry after the first one"}\n'
_HTML = "text/html; charset=utf-8"
_JSON = "application/json"


class _Handler(BaseHTTPRequestHandler):
    metrics: AuditMetrics
    report: LatestReport | None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Scrapes and probes are not logged."""

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        path = self.path.partition("?")[0]
        if path == "/metrics":
            self._send(200, self.metrics.exposition(), CONTENT_TYPE_LATEST)
        elif path == "/healthz":
            self._send(200, b"ok\n", "text/plain; charset=utf-8")
        elif path == "/report" and self.report is not None:
            page = self.report.page()
            self._send(200 if page else 503, page or _NO_REPORT_YET, _HTML)
        elif path == "/report.json" and self.report is not None:
            document = self.report.document()
            self._send(200 if document else 503, document or _NO_DOCUMENT_YET, _JSON)
        else:
            self._send(404, b"not found\n", "text/plain; charset=utf-8")


class MetricsServer:
    """Plain HTTP /metrics and /healthz (and /report, /report.json with a LatestReport)
    in a daemon thread (no TLS: it carries counts and workload names, no secrets, and
    stays inside the cluster; see docs/audit-server.md)."""

    def __init__(self, bind: str, metrics: AuditMetrics, report: LatestReport | None = None):
        host, port = parse_bind(bind)
        handler = type("Handler", (_Handler,), {"metrics": metrics, "report": report})
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> MetricsServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="topospread-audit-metrics", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)
