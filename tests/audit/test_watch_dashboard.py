"""deploy/monitoring/grafana-dashboard.json: every query names only series topospread
exports (the webhook's webhook/server/metrics.py and the audit's webhook/audit/report/metrics.py,
with the suffixes each metric type adds), and it has the audit and admission panels."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, cast

import pytest

from tests import paths
from webhook.audit.report.metrics import AuditMetrics
from webhook.server.metrics import CertificateExpiry, DerivedCounts, Metrics

DASHBOARD = paths.ROOT / "deploy" / "monitoring" / "grafana-dashboard.json"
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SERIES = re.compile(r"\btopospread_[a-zA-Z0-9_:]*")


def families(collector: Any) -> Iterator[Any]:
    yield from collector.collect()


def exported() -> set[str]:
    """Every sample name topospread can export, from the collectors themselves."""
    server = Metrics()
    found = list(families(DerivedCounts(server._own)))  # the registry and the derived counters
    found += CertificateExpiry(cast(Any, None)).describe()
    found += list(families(AuditMetrics(policy_reports=True).registry))
    names = set()
    for family in found:
        for suffix in SUFFIXES[family.type]:
            names.add(family.name + suffix)
    return names


def series_in(expr: str) -> set[str]:
    """Metric names an expression reads (label values in quotes are not names)."""
    return set(_SERIES.findall(_STRING.sub('""', expr)))


def queries(doc: Any) -> Iterator[tuple[str, str]]:
    """(panel title, expression) of every target, rows' nested panels included."""
    for panel in doc.get("panels", []):
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
        yield from queries(panel)


def dashboard() -> Any:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def test_every_query_names_only_exported_series() -> None:
    """Each panel query reads at least one topospread series, and only exported ones;
    so does the namespace variable."""
    names = exported()
    doc = dashboard()
    checked = 0
    for title, expr in queries(doc):
        used = series_in(expr)
        assert used, f"{title}: reads no topospread series: {expr}"
        assert used <= names, f"{title}: not exported: {sorted(used - names)}"
        checked += 1
    assert checked >= 15
    for variable in doc["templating"]["list"]:
        if variable["type"] == "query":
            used = series_in(variable["definition"])
            assert used and used <= names, variable["name"]


def test_the_dashboard_has_the_audit_and_admission_panels() -> None:
    """Audit: violations, skew, last run age, duration, errors; admission: rate,
    latency p99, denials, warnings, cluster state synced and age."""
    used = set().union(*(series_in(expr) for _, expr in queries(dashboard())))
    assert {
        "topospread_audit_violations",
        "topospread_audit_constraint_skew",
        "topospread_audit_last_run_timestamp_seconds",
        "topospread_audit_last_run_duration_seconds",
        "topospread_audit_run_errors_total",
        "topospread_audit_policyreport_write_errors_total",
        "topospread_audit_policyreport_crd_available",
        "topospread_admission_decisions_total",
        "topospread_admission_duration_seconds_bucket",
        "topospread_admission_denials_total",
        "topospread_admission_warnings_total",
        "topospread_cluster_state_synced",
        "topospread_cluster_state_last_event_age_seconds",
    } <= used
    ids = [p["id"] for p in dashboard()["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"


@pytest.mark.parametrize(
    ("expr", "ok"),
    [
        ("sum(rate(topospread_admission_denials_total[5m]))", True),
        ("sum(rate(topospread_admission_denials[5m]))", False),  # the counter lacks _total
        ("topospread_audit_violations_total", False),  # a gauge has no _total
        ('up{job="topospread_audit_nothing"}', False),  # a label value is not a series
        ("histogram_quantile(0.99, rate(topospread_admission_duration_seconds_bucket[5m]))", True),
    ],
)
def test_the_check_can_fail(expr: str, ok: bool) -> None:
    """Misspelt or wrongly suffixed names are caught; quoted label values are ignored."""
    used = series_in(expr)
    assert (bool(used) and used <= exported()) is ok
