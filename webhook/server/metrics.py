"""Prometheus metrics, one set per app, safe across gunicorn workers.

What is measured (docs/operations.md has the table):
  - HTTP requests by route and status code;
  - AdmissionReviews by endpoint, kind, operation and decision: a counter and a latency
    histogram; denials by rule (the field path with its indices removed, and the cause
    reason); warnings by kind;
  - the cluster state source: synced or not, seconds since it last heard from the API
    server, and its list / watch / event / error counters (sampled by a thread in each
    worker, see SourceWatch);
  - the serving certificate: its notAfter and the seconds left until then, read when
    /metrics is scraped (CertificateExpiry).

With PROMETHEUS_MULTIPROC_DIR set (serve always sets it) prometheus_client writes every
sample to files in that directory and /metrics aggregates the files of all workers, so
whichever worker answers reports the whole server. Gauges say how workers combine
(`multiprocess_mode`); the certificate gauges are computed by the answering worker at
scrape time, as every worker serves the same files. Without the variable (tests, the
`review` command) each app counts in its own registry.

prometheus_client picks its storage when first imported, from the environment at that
moment: the variable must be set before anything imports this module.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from webhook.api.kube import HANDLED_KINDS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.admission.handlers import Answer
    from webhook.cluster.source import ClusterSource
    from webhook.install.certs import CertReloader

__all__ = [
    "CONTENT_TYPE_LATEST",
    "LATENCY_BUCKETS",
    "CertificateExpiry",
    "DerivedCounts",
    "Metrics",
    "SourceWatch",
    "field_pattern",
    "kind_label",
    "mark_process_dead",
    "multiprocess_dir",
    "operation_label",
]

log = logging.getLogger("topospread.metrics")

# kube-apiserver waits 10 s for a webhook by default (30 s at most); our reviews take
# about a millisecond, so the buckets are fine at the low end.
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)

OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

# What LiveSource.counts() reports; other names are ignored so the label set stays fixed.
SOURCE_COUNTS = ("lists", "watches", "events", "bookmarks", "relists", "errors")
# Counts that mean the API server answered: the age of the last change of their sum is
# the age of the state we hold.
SOURCE_ACTIVITY = ("lists", "events", "bookmarks")

_INDEX = re.compile(r"\[[^\]]*\]")


def multiprocess_dir() -> str | None:
    """The directory samples are shared through, None in single-process mode."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def field_pattern(path: str) -> str:
    """A field path with indices and map keys removed: the rule it names, bounded.

    `spec.topologySpreadConstraints[1].maxSkew` -> `spec.topologySpreadConstraints[].maxSkew`.
    """
    return _INDEX.sub("[]", path)


def kind_label(kind: str) -> str:
    """A kind as a label value: the kinds we handle, else `other` (`unknown` when absent)."""
    if not kind:
        return "unknown"
    return kind if kind in HANDLED_KINDS else "other"


def operation_label(operation: str) -> str:
    """An admission operation as a label value, bounded like kind_label."""
    if not operation:
        return "unknown"
    return operation if operation in OPERATIONS else "other"


class Metrics:
    """The collectors the server updates, and their exposition."""

    def __init__(self) -> None:
        # Collectors live in a private registry: several apps in one process (tests)
        # must not collide on metric names.
        self._own = CollectorRegistry(auto_describe=True)
        # Collectors computed at scrape time in the answering worker (not shared files).
        self._live: list[Any] = []
        self._watch: SourceWatch | None = None
        self.requests = Counter(
            "topospread_http_requests",
            "HTTP requests answered, by path and status code.",
            ["path", "code"],
            registry=self._own,
        )
        # topospread_admission_decisions_total and topospread_admission_requests_total
        # are derived from the histogram's counts at scrape time (DerivedCounts): one
        # sample file write less per count per review, the same series.
        review_labels = ["endpoint", "kind", "operation", "decision"]
        # Labelled children, looked up once per label set: .labels() checks and joins
        # its values on every call.
        self._request_children: dict[tuple[str, int], Any] = {}
        self._review_children: dict[tuple[str, str, str, str], Any] = {}
        self.review_seconds = Histogram(
            "topospread_admission_duration_seconds",
            "Time to answer an AdmissionReview (body read to response built), by endpoint, "
            "object kind, operation and decision.",
            review_labels,
            buckets=LATENCY_BUCKETS,
            registry=self._own,
        )
        self.denials = Counter(
            "topospread_admission_denials",
            "Causes of denied AdmissionReviews, by endpoint, kind, field path (indices "
            "removed) and cause reason.",
            ["endpoint", "kind", "field", "reason"],
            registry=self._own,
        )
        self.warnings = Counter(
            "topospread_admission_warnings",
            "Warnings returned with AdmissionReviews, by endpoint and kind.",
            ["endpoint", "kind"],
            registry=self._own,
        )
        self.foresight = Counter(
            "topospread_foresight",
            "Unschedulable foresight looks at created Pods with a DoNotSchedule constraint, "
            "by outcome: checked, blocked, skipped (the answer could change nothing, or no "
            "cluster state), over_budget (gave up at policy.foresightBudgetMilliseconds), "
            "error.",
            ["outcome"],
            registry=self._own,
        )
        self._foresight_children: dict[str, Any] = {}
        # livemin: the server is synced when every live worker is.
        self.source_synced = Gauge(
            "topospread_cluster_state_synced",
            "1 when the cluster state source has synced (in every worker), else 0.",
            registry=self._own,
            multiprocess_mode="livemin",
        )
        # livemax: the stalest worker speaks for the server.
        self.source_age = Gauge(
            "topospread_cluster_state_last_event_age_seconds",
            "Seconds since the cluster state source last received a list, watch event or "
            "bookmark (the largest over workers; 0 for a snapshot file).",
            registry=self._own,
            multiprocess_mode="livemax",
        )
        self.source_ops = Counter(
            "topospread_cluster_state_operations",
            "What the cluster state source did: lists, watches, events, bookmarks, "
            "relists, errors.",
            ["operation"],
            registry=self._own,
        )

    # ---- updates -------------------------------------------------------------------

    def count_request(self, path: str, status: int) -> None:
        """Count one HTTP request answered on `path` (a route) with `status`."""
        key = (path, status)
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self.requests.labels(path, str(status))
        child.inc()

    def observe_review(self, endpoint: str, answer: Answer, seconds: float) -> None:
        """Count one answered AdmissionReview (of endpoint validate or mutate)."""
        review = answer.review
        kind = kind_label(review.kind if review is not None else "")
        operation = operation_label(review.operation if review is not None else "")
        key = (endpoint, kind, operation, answer.decision)
        child = self._review_children.get(key)
        if child is None:
            child = self._review_children[key] = self.review_seconds.labels(*key)
        child.observe(seconds)
        if answer.foresight is not None:
            looked = self._foresight_children.get(answer.foresight)
            if looked is None:
                looked = self._foresight_children[answer.foresight] = self.foresight.labels(
                    answer.foresight
                )
            looked.inc()
        response = answer.doc.get("response") if review is not None else None
        if not isinstance(response, dict):
            return
        warnings = response.get("warnings") or []
        if warnings:
            self.warnings.labels(endpoint, kind).inc(len(warnings))
        if response.get("allowed") is False:
            for field, reason in denial_causes(response):
                self.denials.labels(endpoint, kind, field_pattern(field), reason).inc()

    def watch_source(self, source: ClusterSource, interval: float = 1.0) -> SourceWatch:
        """Sample `source` now and every `interval` seconds in a daemon thread (call it in
        the worker, after the fork); stop() ends it."""
        self.stop()
        watch = SourceWatch(self, source)
        watch.sample()
        watch.start(interval)
        self._watch = watch
        return watch

    def watch_certificate(self, reloader: CertReloader) -> CertificateExpiry:
        """Report the expiry of the certificate `reloader` serves, computed at each scrape."""
        collector = CertificateExpiry(reloader)
        self._live.append(collector)
        self._own.register(collector)
        return collector

    def stop(self) -> None:
        """Stop the source sampling thread, if any."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None

    # ---- exposition ----------------------------------------------------------------

    def exposition(self) -> bytes:
        """The text /metrics serves."""
        registry = CollectorRegistry(auto_describe=False)
        if multiprocess_dir() is not None:
            # prometheus_client.multiprocess carries no type annotations.
            files = multiprocess.MultiProcessCollector(None)  # type: ignore[no-untyped-call]
            registry.register(DerivedCounts(files))
            for collector in self._live:
                registry.register(collector)
        else:
            registry.register(DerivedCounts(self._own))
        return bytes(generate_latest(registry))


_DURATION = "topospread_admission_duration_seconds"
_DECISIONS = "topospread_admission_decisions"
_DECISIONS_HELP = (
    "AdmissionReviews answered, by endpoint and decision "
    "(allowed, denied, patched, malformed, internal_error)."
)
_REVIEWS = "topospread_admission_requests"
_REVIEWS_HELP = "AdmissionReviews answered, by endpoint, object kind, operation and decision."


class DerivedCounts:
    """A collector: what `source` collects, plus the two review counters derived from
    the latency histogram's counts: topospread_admission_requests_total (its `_count`
    per label set) and topospread_admission_decisions_total (summed over kind and
    operation). Each review used to write both counters besides the histogram."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        reviews: dict[tuple[str, str, str, str], float] = {}
        for family in self.source.collect():
            if family.name == _DURATION:
                for sample in family.samples:
                    if sample.name == _DURATION + "_count":
                        labels = sample.labels
                        key = (
                            labels.get("endpoint", ""),
                            labels.get("kind", ""),
                            labels.get("operation", ""),
                            labels.get("decision", ""),
                        )
                        reviews[key] = reviews.get(key, 0.0) + sample.value
            yield family
        decisions: dict[tuple[str, str], float] = {}
        per_review = CounterMetricFamily(
            _REVIEWS, _REVIEWS_HELP, labels=["endpoint", "kind", "operation", "decision"]
        )
        for key, value in reviews.items():
            per_review.add_metric(list(key), value)
            decision_key = (key[0], key[3])
            decisions[decision_key] = decisions.get(decision_key, 0.0) + value
        per_decision = CounterMetricFamily(
            _DECISIONS, _DECISIONS_HELP, labels=["endpoint", "decision"]
        )
        for (endpoint, decision), value in decisions.items():
            per_decision.add_metric([endpoint, decision], value)
        yield per_decision
        yield per_review


def denial_causes(response: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, reason) of each cause of a denial response; robust to odd shapes."""
    status = response.get("status")
    details = status.get("details") if isinstance(status, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    for cause in causes if isinstance(causes, list) else []:
        if isinstance(cause, dict):
            yield str(cause.get("field") or ""), str(cause.get("reason") or "")


class SourceWatch:
    """Copies a cluster source's state into the metrics: synced, the age of the last
    answer from the API server (a change in lists + events + bookmarks), and the growth
    of its counters (LiveSource.counts()). Sources without counts() report synced only.

    One per worker: each worker runs its own source.
    """

    def __init__(
        self,
        metrics: Metrics,
        source: ClusterSource,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics
        self.source = source
        self._clock = clock
        self._seen: dict[str, int] = {}
        self._activity = 0
        # Before the first answer the age counts from the start: a list that never
        # completes shows as a growing age.
        self._changed = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """Read the source once and update the metrics; never raises."""
        try:
            self._sample()
        except Exception:
            log.exception("reading the cluster source state for metrics failed")

    def _sample(self) -> None:
        self.metrics.source_synced.set(1 if self.source.synced() else 0)
        counts_of = getattr(self.source, "counts", None)
        if counts_of is None:
            return
        counts = counts_of()
        for name in SOURCE_COUNTS:
            value = int(counts.get(name, 0))
            grown = value - self._seen.get(name, 0)
            if grown > 0:
                self.metrics.source_ops.labels(name).inc(grown)
            self._seen[name] = value
        now = self._clock()
        activity = sum(int(counts.get(name, 0)) for name in SOURCE_ACTIVITY)
        if activity != self._activity:
            self._activity = activity
            self._changed = now
        self.metrics.source_age.set(max(0.0, now - self._changed))

    def start(self, interval: float) -> None:
        def loop() -> None:
            while not self._stop.wait(interval):
                self.sample()

        self._thread = threading.Thread(target=loop, name="topospread-metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class CertificateExpiry:
    """A collector: notAfter of the certificate a CertReloader serves, and the seconds
    left until then (negative once expired).

    CAVEAT: the reloader does not hand out the certificate it loaded, so tls.crt is read
    again whenever the reloader's generation changes. A file replaced a second time in
    between is read in its newer state.
    """

    def __init__(self, reloader: CertReloader, *, clock: Callable[[], float] = time.time) -> None:
        self.reloader = reloader
        self._clock = clock
        self._generation: int | None = None
        self._not_after: float | None = None

    def not_after(self) -> float | None:
        """notAfter (Unix seconds) of the served certificate, None when unreadable."""
        self.reloader.context()  # looks at the files at most once per check interval
        generation = self.reloader.generation
        if generation != self._generation:
            self._generation = generation
            self._not_after = _read_not_after(self.reloader.cert_file)
        return self._not_after

    def describe(self) -> list[Metric]:
        return [
            GaugeMetricFamily(_EXPIRY, _EXPIRY_HELP),
            GaugeMetricFamily(_REMAINING, _REMAINING_HELP),
        ]

    def collect(self) -> Iterator[Metric]:
        not_after = self.not_after()
        if not_after is None:
            return
        yield GaugeMetricFamily(_EXPIRY, _EXPIRY_HELP, value=not_after)
        yield GaugeMetricFamily(_REMAINING, _REMAINING_HELP, value=not_after - self._clock())


_EXPIRY = "topospread_tls_certificate_expiry_timestamp_seconds"
_EXPIRY_HELP = "notAfter of the serving certificate, in Unix seconds."
_REMAINING = "topospread_tls_certificate_expires_in_seconds"
_REMAINING_HELP = "Seconds until the serving certificate expires (negative once expired)."


def _read_not_after(path: str) -> float | None:
    from cryptography import x509

    try:
        with open(os.path.realpath(path), "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
    except (OSError, ValueError) as exc:
        log.warning("cannot read the serving certificate %s for metrics: %s", path, exc)
        return None
    return cert.not_valid_after_utc.replace(tzinfo=dt.UTC).timestamp()


def mark_process_dead(pid: int) -> None:
    """Tell prometheus_client a worker is gone (gunicorn's child_exit hook)."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]  # untyped module
