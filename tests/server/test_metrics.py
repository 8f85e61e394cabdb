"""Metrics: what each kind of request moves, the source and certificate gauges, and the
counters shared by two real gunicorn workers (one of them killed on the way)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from tests import paths
from tests.builders import DNS, ZONE, RawObj, make_pod, review, selector, workload
from tests.live_server import LiveServer, start_server
from webhook.admission.context import ReviewContext
from webhook.admission.handlers import answer_review
from webhook.install.certs import CertReloader, generate
from webhook.server.app import EXTENSION, create_app
from webhook.server.metrics import (
    LATENCY_BUCKETS,
    CertificateExpiry,
    Metrics,
    SourceWatch,
    field_pattern,
    kind_label,
    operation_label,
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

REVIEWS = "topospread_admission_requests_total"
DURATION = "topospread_admission_duration_seconds"
DENIALS = "topospread_admission_denials_total"
WARNINGS = "topospread_admission_warnings_total"
P = "spec.topologySpreadConstraints"


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def with_name(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def web_pod(max_skew: int = 1, key: str = ZONE) -> RawObj:
    pod = make_pod().name("web").namespace("shop").label("app", "web")
    return pod.spread(max_skew, key, DNS, selector({"app": "web"})).obj()


def merge_pod() -> RawObj:
    pod = make_pod().name("web").namespace("shop")
    pod = pod.labels({"app": "web", "pod-template-hash": "7c9f8d6b5"})
    return pod.spread(
        1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"]
    ).obj()


def labels(**kv: str) -> frozenset[tuple[str, str]]:
    return frozenset(kv.items())


# ---------------------------------------------------------------------------------------
# One request, what it counts

# name, endpoint, body, review labels (kind, operation, decision), denials, warnings
CASES: list[tuple[str, str, Any, tuple[str, str, str], dict[tuple[str, str], float], float]] = [
    (
        "pod-denied",
        "validate",
        review(web_pod(max_skew=0)),
        ("Pod", "CREATE", "denied"),
        {(f"{P}[].maxSkew", "FieldValueInvalid"): 1},
        0,
    ),
    (
        "deployment-denied",
        "validate",
        review(workload("Deployment", web_pod(max_skew=0))),
        ("Deployment", "CREATE", "denied"),
        {(f"spec.template.{P}[].maxSkew", "FieldValueInvalid"): 1},
        0,
    ),
    (
        "pod-allowed-with-a-warning",
        "validate",
        review(web_pod(key="failure-domain.beta.kubernetes.io/zone")),
        ("Pod", "CREATE", "allowed"),
        {},
        2,  # deprecated-topology-key, outage-blocks-replacements
    ),
    (
        "pod-patched",
        "mutate",
        review(merge_pod()),
        ("Pod", "CREATE", "patched"),
        {},
        1,  # the merge, made with the API server version unknown, says so
    ),
    (
        "pod-delete-allowed",
        "validate",
        review(web_pod(), "DELETE"),
        ("Pod", "DELETE", "allowed"),
        {},
        0,
    ),
    (
        "service-is-other",
        "validate",
        review({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}),
        ("other", "CREATE", "allowed"),
        {},
        0,
    ),
    (
        "malformed-400",
        "mutate",
        b"{not json",
        ("unknown", "unknown", "malformed"),
        {},
        0,
    ),
]


@pytest.fixture
def client() -> Iterator[FlaskClient]:
    app = create_app()
    yield app.test_client()
    app.extensions[EXTENSION].stop()


@pytest.mark.parametrize(
    ("name", "endpoint", "body", "review_labels", "denials", "warnings"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_one_review_moves_its_counters(
    client: FlaskClient,
    name: str,
    endpoint: str,
    body: Any,
    review_labels: tuple[str, str, str],
    denials: dict[tuple[str, str], float],
    warnings: float,
) -> None:
    """One review: one count and one histogram observation under its labels, its denial
    causes by rule, its warnings by kind; nothing else."""
    if isinstance(body, bytes):
        resp = client.post(f"/{endpoint}", data=body)
    else:
        resp = client.post(f"/{endpoint}", json=body)
    assert resp.status_code == (400 if name == "malformed-400" else 200)
    samples = parse(client.get("/metrics").text)
    kind, operation, decision = review_labels
    key = labels(endpoint=endpoint, kind=kind, operation=operation, decision=decision)
    assert with_name(samples, REVIEWS) == {key: 1.0}
    assert with_name(samples, DURATION + "_count") == {key: 1.0}
    assert value(samples, DURATION + "_bucket", **dict(key), le="+Inf") == 1.0
    assert with_name(samples, DENIALS) == {
        labels(endpoint=endpoint, kind=kind, field=f, reason=r): n for (f, r), n in denials.items()
    }
    expected_warnings = {labels(endpoint=endpoint, kind=kind): warnings} if warnings else {}
    assert with_name(samples, WARNINGS) == expected_warnings
    assert value(samples, "topospread_admission_decisions_total",
                 endpoint=endpoint, decision=decision) == 1.0


@pytest.mark.parametrize(
    ("seconds", "first_bucket"),
    [(0.0003, 0.0005), (0.003, 0.005), (0.005, 0.005), (0.2, 0.25), (7.0, 10.0)],
)
def test_latency_lands_in_its_bucket(seconds: float, first_bucket: float) -> None:
    """An observation counts in every bucket from the first bound at or above it."""
    metrics = Metrics()
    answer = answer_review(json.dumps(review(web_pod())).encode(), "validate", ReviewContext())
    metrics.observe_review("validate", answer, seconds)
    samples = parse(metrics.exposition().decode())
    key = dict(endpoint="validate", kind="Pod", operation="CREATE", decision="allowed")
    for bound in LATENCY_BUCKETS:
        got = value(samples, DURATION + "_bucket", **key, le=str(bound))
        assert got == (1.0 if bound >= first_bucket else 0.0), bound
    assert value(samples, DURATION + "_sum", **key) == seconds


def test_denial_counts_every_cause() -> None:
    """Two broken constraints: one denial, two causes counted under one rule each."""
    pod = make_pod().name("web").label("app", "web")
    pod = pod.spread(0, ZONE, DNS, selector({"app": "web"}))
    pod = pod.spread(1, "", DNS, selector({"app": "web"}))
    metrics = Metrics()
    answer = answer_review(json.dumps(review(pod.obj())).encode(), "validate", ReviewContext())
    metrics.observe_review("validate", answer, 0.001)
    samples = parse(metrics.exposition().decode())
    assert with_name(samples, DENIALS) == {
        labels(endpoint="validate", kind="Pod", field=f"{P}[].maxSkew",
               reason="FieldValueInvalid"): 1.0,
        labels(endpoint="validate", kind="Pod", field=f"{P}[].topologyKey",
               reason="FieldValueRequired"): 1.0,
    }


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        (f"{P}[0].maxSkew", f"{P}[].maxSkew"),
        (f"{P}[12].labelSelector.matchExpressions[3].values[0]",
         f"{P}[].labelSelector.matchExpressions[].values[]"),
        (f"{P}[1].labelSelector.matchLabels[app.kubernetes.io/name]",
         f"{P}[].labelSelector.matchLabels[]"),
        (f"spec.jobTemplate.spec.template.{P}", f"spec.jobTemplate.spec.template.{P}"),
        ("", ""),
    ],
)
def test_field_pattern_drops_indices_and_keys(path: str, pattern: str) -> None:
    """A rule label never holds an index or a map key: the label set stays bounded."""
    assert field_pattern(path) == pattern


@pytest.mark.parametrize(
    ("kind", "label"),
    [("Pod", "Pod"), ("CronJob", "CronJob"), ("Service", "other"), ("", "unknown")],
)
def test_kind_label(kind: str, label: str) -> None:
    """Kinds we handle keep their name, others share one label."""
    assert kind_label(kind) == label


@pytest.mark.parametrize(
    ("operation", "label"),
    [("CREATE", "CREATE"), ("CONNECT", "CONNECT"), ("PATCH", "other"), ("", "unknown")],
)
def test_operation_label(operation: str, label: str) -> None:
    """Admission operations keep their name, anything else shares one label."""
    assert operation_label(operation) == label


# ---------------------------------------------------------------------------------------
# Cluster source


class FakeSource:
    """A ClusterSource with LiveSource's counts(), driven by the test."""

    def __init__(self) -> None:
        self.is_synced = False
        self.values: dict[str, int] = {}

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def synced(self) -> bool:
        return self.is_synced

    def snapshot(self) -> Any:
        return None

    def server_version(self) -> tuple[int, int] | None:
        return None

    def counts(self) -> dict[str, int]:
        return dict(self.values)


def test_source_watch_reports_sync_counters_and_event_age() -> None:
    """synced follows the source; counters grow by what counts() grew; the age restarts
    at each list, event or bookmark and grows otherwise (a watch error does not reset it)."""
    now = [100.0]
    metrics = Metrics()
    source = FakeSource()
    watch = SourceWatch(metrics, source, clock=lambda: now[0])

    def read() -> Samples:
        return parse(metrics.exposition().decode())

    now[0] = 104.0
    watch.sample()
    s = read()
    assert value(s, "topospread_cluster_state_synced") == 0.0
    assert value(s, "topospread_cluster_state_last_event_age_seconds") == 4.0

    source.is_synced = True
    source.values = {"lists": 6, "watches": 6}
    now[0] = 105.0
    watch.sample()
    s = read()
    assert value(s, "topospread_cluster_state_synced") == 1.0
    assert value(s, "topospread_cluster_state_last_event_age_seconds") == 0.0
    assert value(s, "topospread_cluster_state_operations_total", operation="lists") == 6.0

    source.values = {"lists": 6, "watches": 7, "errors": 1}
    now[0] = 135.0
    watch.sample()
    s = read()
    assert value(s, "topospread_cluster_state_last_event_age_seconds") == 30.0
    assert value(s, "topospread_cluster_state_operations_total", operation="watches") == 7.0
    assert value(s, "topospread_cluster_state_operations_total", operation="errors") == 1.0

    source.values = {"lists": 6, "watches": 7, "errors": 1, "events": 3, "bookmarks": 1}
    now[0] = 140.0
    watch.sample()
    s = read()
    assert value(s, "topospread_cluster_state_last_event_age_seconds") == 0.0
    assert value(s, "topospread_cluster_state_operations_total", operation="events") == 3.0


def test_source_without_counts_reports_synced_only() -> None:
    """A snapshot file source: synced 1, no operation counters."""
    from webhook.cluster.source import StaticSource
    from webhook.scheduler.framework.snapshot import Snapshot

    metrics = Metrics()
    SourceWatch(metrics, StaticSource(Snapshot.from_objects([]))).sample()
    s = parse(metrics.exposition().decode())
    assert value(s, "topospread_cluster_state_synced") == 1.0
    assert with_name(s, "topospread_cluster_state_operations_total") == {}


def test_watch_source_samples_before_returning_and_stops() -> None:
    """watch_source takes a first sample at once; stop() ends its thread."""
    metrics = Metrics()
    source = FakeSource()
    source.is_synced = True
    watch = metrics.watch_source(source, interval=60)
    assert value(parse(metrics.exposition().decode()), "topospread_cluster_state_synced") == 1.0
    metrics.stop()
    assert watch._thread is None


# ---------------------------------------------------------------------------------------
# Serving certificate


def not_after(path: Path) -> float:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.not_valid_after_utc.replace(tzinfo=dt.UTC).timestamp()


def test_certificate_expiry_follows_the_served_certificate(tmp_path: Path) -> None:
    """notAfter of tls.crt and the seconds left; a rotated certificate is reported once
    the reloader serves it."""
    generate("topospread", "topospread", tmp_path, days=2)
    first = not_after(tmp_path / "tls.crt")
    reloader = CertReloader(tmp_path, check_interval=3600)
    metrics = Metrics()
    collector = metrics.watch_certificate(reloader)
    collector._clock = lambda: first - 3600.0
    s = parse(metrics.exposition().decode())
    assert value(s, "topospread_tls_certificate_expiry_timestamp_seconds") == first
    assert value(s, "topospread_tls_certificate_expires_in_seconds") == 3600.0

    generate("topospread", "topospread", tmp_path, days=30, force=True)
    second = not_after(tmp_path / "tls.crt")
    assert second != first
    assert reloader.check()
    s = parse(metrics.exposition().decode())
    assert value(s, "topospread_tls_certificate_expiry_timestamp_seconds") == second


def test_unreadable_certificate_reports_nothing(tmp_path: Path) -> None:
    """A tls.crt that cannot be read gives no expiry sample rather than a wrong one."""
    generate("topospread", "topospread", tmp_path, days=2)
    reloader = CertReloader(tmp_path)
    (tmp_path / "tls.crt").write_text("garbage")
    assert CertificateExpiry(reloader).not_after() is None


# ---------------------------------------------------------------------------------------
# Two real workers

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("metrics-server")
    # A directory that does not exist yet: serve creates it.
    srv = start_server(tmp, workers=2, env={"PROMETHEUS_MULTIPROC_DIR": str(tmp / "mp" / "d")})
    yield srv
    srv.kill()


def request_pids(srv: LiveServer) -> list[int]:
    return [r["pid"] for r in srv.log_records() if r.get("logger") == "topospread.request"]


@pytest.mark.slow
def test_two_workers_report_every_review_even_after_one_dies(server: LiveServer) -> None:
    """Reviews answered by both workers are all counted by whichever answers /metrics;
    a killed worker's counts stay, its live gauges go, and the cert gauge is the file's."""
    denied = review(web_pod(max_skew=0))
    sent = 0
    while len(set(request_pids(server))) < 2:
        assert sent < 400, "one worker answered everything"
        assert server.request("POST", "/validate", denied)[0] == 200
        sent += 1
        time.sleep(0.01)
    for _ in range(3):
        assert server.request("POST", "/mutate", raw=b"[]")[0] == 400
    workers = sorted(set(request_pids(server)))

    def read() -> Samples:
        status, _, body = server.request("GET", "/metrics")
        assert status == 200
        return parse(body.decode())

    key = dict(endpoint="validate", kind="Pod", operation="CREATE", decision="denied")
    bad = dict(endpoint="mutate", kind="unknown", operation="unknown", decision="malformed")
    s = read()
    assert value(s, REVIEWS, **key) == sent
    assert value(s, DURATION + "_count", **key) == sent
    assert value(s, REVIEWS, **bad) == 3.0
    assert value(s, DENIALS, endpoint="validate", kind="Pod", field=f"{P}[].maxSkew",
                 reason="FieldValueInvalid") == sent
    assert value(s, "topospread_cluster_state_synced") == 1.0
    assert value(s, "topospread_tls_certificate_expiry_timestamp_seconds") == not_after(
        server.cert_dir / "tls.crt"
    )

    mp = server.log_path.parent / "mp" / "d"
    victim = workers[0]
    assert (mp / f"gauge_livemin_{victim}.db").exists()
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while (mp / f"gauge_livemin_{victim}.db").exists():
        assert time.monotonic() < deadline, "the dead worker's live gauges stayed"
        time.sleep(0.1)
    while True:  # the master replaces the worker
        try:
            if server.request("GET", "/readyz")[0] == 200:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.1)
    # /readyz may be answered by the surviving worker while the replacement still loads
    # its state (its live gauge says 0 until then): it reports synced within the deadline.
    s = read()
    while value(s, "topospread_cluster_state_synced") != 1.0:
        assert time.monotonic() < deadline, "the replacement worker never reported synced"
        time.sleep(0.1)
        s = read()
    assert value(s, REVIEWS, **key) == sent


# ---------------------------------------------------------------------------------------
# Alerting rules

ROOT = paths.ROOT


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, spaces to dashes, punctuation dropped."""
    out = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 -]", "", title).replace(" ", "-"))
    return out


def test_alerts_use_metrics_we_export_and_link_their_runbook(tmp_path: Path) -> None:
    """Every series an alert reads is one /metrics serves; every alert has a severity and
    a runbook section that exists in docs/operations.md."""
    metrics = Metrics()
    answer = answer_review(json.dumps(review(web_pod(max_skew=0))).encode(), "validate",
                           ReviewContext())
    metrics.observe_review("validate", answer, 0.001)
    warned = review(web_pod(key="failure-domain.beta.kubernetes.io/zone"))
    metrics.observe_review(
        "validate", answer_review(json.dumps(warned).encode(), "validate", ReviewContext()), 0.001
    )
    generate("topospread", "topospread", tmp_path, days=2)
    metrics.watch_certificate(CertReloader(tmp_path))
    source = FakeSource()
    source.values = {"lists": 1}
    SourceWatch(metrics, source).sample()
    metrics.requests.labels("/validate", "200").inc()
    exported = {name for name, _ in parse(metrics.exposition().decode())}

    doc = yaml.safe_load((ROOT / "deploy/monitoring/alerts.yaml").read_text())
    assert doc["kind"] == "PrometheusRule"
    rules = [r for group in doc["spec"]["groups"] for r in group["rules"]]
    sections = anchors((ROOT / "docs/operations.md").read_text())
    assert rules
    for rule in rules:
        used = set(re.findall(r"topospread_[a-z_]+", rule["expr"]))
        assert used and used <= exported, (rule["alert"], used - exported)
        assert rule["labels"]["severity"] in ("info", "warning", "critical")
        page, _, anchor = rule["annotations"]["runbook"].partition("#")
        assert page == "docs/operations.md" and anchor in sections, rule["alert"]
