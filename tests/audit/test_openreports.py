"""OpenReports: the same results as openreports.io/v1alpha1 Reports, by the same writer
against tests/fake_apiserver.py: created, updated, results removed and reports deleted
as violations come and go; both APIs at once; a missing CRD survived.

Legend as in test_policyreports.py: "namespace/app" -> running pods per zone, `3/1/0`.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.audit.test_policyreports import (
    LIFECYCLE,
    WEB,
    cluster,
    converge,
    read_from,
    report_view,
)
from tests.audit.test_policyreports import samples as metric_samples
from tests.builders import ZONE
from tests.fake_apiserver import OPEN_REPORT, POLICY_REPORT, FakeApiServer
from webhook.audit.measure.spread import ConstraintSpread
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.report.policyreports import (
    APIS,
    OPENREPORTS,
    REPORT_NAME,
    PolicyReportWriter,
    policy_report,
    result_of,
)
from webhook.audit.serve.loop import AuditLoop
from webhook.audit.state.inventory import Workload
from webhook.cluster.lister import Connection
from webhook.config import settings_from_dict

# The JSON names of openreports/reports-api apis/openreports.io/v1alpha1/report_types.go:
# Report's fields, and ReportResult's.
REPORT_FIELDS = {
    "apiVersion", "kind", "metadata", "source", "scope", "scopeSelector", "configuration",
    "summary", "results",
}  # fmt: skip
RESULT_FIELDS = {
    "source", "policy", "rule", "category", "severity", "timestamp", "result", "scored",
    "resources", "resourceSelector", "message", "properties",
}  # fmt: skip
SUMMARY_FIELDS = {"pass", "fail", "warn", "error", "skip"}
SEVERITIES = {"critical", "high", "low", "medium", "info"}
RESULTS = {"pass", "fail", "warn", "error", "skip"}


def loop_for(conn: Connection, reports: str, metrics: AuditMetrics | None = None) -> AuditLoop:
    settings = settings_from_dict({"audit": {"policyReports": True, "reports": reports}})
    apis = settings.audit.report_apis
    metrics = metrics or AuditMetrics(policy_reports=True, report_apis=apis)
    writers = [PolicyReportWriter(conn, APIS[name]) for name in apis]
    return AuditLoop(lambda: read_from(conn), settings, metrics, writers)


def write_log(server: FakeApiServer, since: int) -> list[tuple[str, str, str]]:
    """(API group, verb, namespace) of the writes after the first `since` ones."""
    out = []
    for r in server.writes()[since:]:
        parts = r.path.split("/")
        out.append((parts[2], r.method, parts[parts.index("namespaces") + 1]))
    return out


def test_reports_follow_the_violations_step_by_step(
    server: FakeApiServer, conn: Connection
) -> None:
    """The PolicyReport lifecycle, as Reports: created, left alone, updated, extended,
    shrunk, deleted; nothing goes to the wgpolicyk8s API."""
    server.install_policy_reports(OPEN_REPORT)
    server.install_policy_reports(POLICY_REPORT)
    metrics = AuditMetrics(policy_reports=True, report_apis=("openreports",))
    loop = loop_for(conn, "openreports", metrics)
    for name, state, writes, reports in LIFECYCLE:
        converge(server, cluster(state))
        before = len(server.writes())
        assert loop.run_once() is not None, name
        assert write_log(server, before) == [("openreports.io", v, ns) for v, ns in writes], name
        assert report_view(server, OPEN_REPORT) == reports, name
    assert server.policy_reports(POLICY_REPORT) == {}
    got = metric_samples(metrics)
    assert got[("topospread_audit_openreports_crd_available", ())] == 1
    assert ("topospread_audit_policyreport_crd_available", ()) not in got
    assert got[("topospread_audit_policyreport_writes_total", (("operation", "create"),))] == 2


def test_a_report_has_the_fields_of_the_openreports_schema(
    server: FakeApiServer, conn: Connection
) -> None:
    """The stored Report: openreports.io/v1alpha1 Report, `source` at the top, only
    fields the CRD declares, enum values it allows, and the results PolicyReports hold."""
    server.install_policy_reports(OPEN_REPORT)
    converge(server, cluster({"shop/web": "3/1/0"}))
    loop_for(conn, "openreports").run_once()
    report = server.policy_reports(OPEN_REPORT)[("shop", REPORT_NAME)]
    assert (report["apiVersion"], report["kind"]) == ("openreports.io/v1alpha1", "Report")
    assert report["source"] == "topospread"
    assert set(report) <= REPORT_FIELDS
    assert set(report["summary"]) == SUMMARY_FIELDS and report["summary"]["fail"] == 1
    [result] = report["results"]
    assert set(result) <= RESULT_FIELDS
    assert result["result"] in RESULTS and result["severity"] in SEVERITIES
    assert all(isinstance(v, str) for v in result["properties"].values())
    assert report_view(server, OPEN_REPORT) == {"shop": [(WEB, ZONE, "3", "fail")]}


def test_both_apis_get_the_same_results(server: FakeApiServer, conn: Connection) -> None:
    """audit.reports both: a PolicyReport and a Report per namespace, equal results."""
    server.install_policy_reports(OPEN_REPORT)
    server.install_policy_reports(POLICY_REPORT)
    converge(server, cluster({"shop/web": "3/1/0", "blog/api": "2/0/0"}))
    loop_for(conn, "both").run_once()
    assert report_view(server, OPEN_REPORT) == report_view(server, POLICY_REPORT) != {}
    for key, report in server.policy_reports(OPEN_REPORT).items():
        assert report["results"] == server.policy_reports(POLICY_REPORT)[key]["results"]


@pytest.mark.parametrize(
    ("reports", "installed", "written"),
    [
        pytest.param("openreports", (), (), id="openreports, no CRD"),
        pytest.param("both", (POLICY_REPORT,), (POLICY_REPORT,), id="both, only wgpolicyk8s"),
    ],
)
def test_no_openreports_crd_is_one_log_line_a_gauge_and_no_crash(
    server: FakeApiServer,
    conn: Connection,
    caplog: pytest.LogCaptureFixture,
    reports: str,
    installed: tuple[str, ...],
    written: tuple[str, ...],
) -> None:
    """Without the Report CRD the audit runs and exports, no Report is written, one
    warning however many runs, its gauge 0; the other API is written all the same;
    once the CRD is installed the next run writes the Report."""
    for kind in installed:
        server.install_policy_reports(kind)
    converge(server, cluster({"shop/web": "3/1/0"}))
    apis = settings_from_dict({"audit": {"policyReports": True, "reports": reports}})
    metrics = AuditMetrics(policy_reports=True, report_apis=apis.audit.report_apis)
    loop = loop_for(conn, reports, metrics)
    with caplog.at_level(logging.WARNING, "topospread.audit.policyreports"):
        for _ in range(3):
            report = loop.run_once()
            assert report is not None and report.violations == 1
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "install the Report CRD" in lines[0], lines
    assert "openreports.io/v1alpha1" in lines[0]
    assert {kind for kind in (POLICY_REPORT, OPEN_REPORT) if report_view(server, kind)} == set(
        written
    )
    got = metric_samples(metrics)
    assert got[("topospread_audit_openreports_crd_available", ())] == 0
    assert got[("topospread_audit_runs_total", ())] == 3

    server.install_policy_reports(OPEN_REPORT)
    loop.run_once()
    assert report_view(server, OPEN_REPORT) == {"shop": [(WEB, ZONE, "3", "fail")]}
    assert metric_samples(metrics)[("topospread_audit_openreports_crd_available", ())] == 1


def test_a_failed_report_write_is_counted_and_retried(
    server: FakeApiServer, conn: Connection
) -> None:
    """A failing create costs one error; the next run writes the Report."""
    server.install_policy_reports(OPEN_REPORT)
    converge(server, cluster({"shop/web": "3/1/0"}))
    metrics = AuditMetrics(policy_reports=True, report_apis=("openreports",))
    loop = loop_for(conn, "openreports", metrics)
    server.fail_next(OPEN_REPORT, 0, 500)
    loop.run_once()
    assert report_view(server, OPEN_REPORT) == {}
    key = ("topospread_audit_policyreport_write_errors_total", (("operation", "create"),))
    assert metric_samples(metrics)[key] == 1
    loop.run_once()
    assert report_view(server, OPEN_REPORT) == {"shop": [(WEB, ZONE, "3", "fail")]}


def test_a_new_report_is_a_policy_report_with_the_source_on_top() -> None:
    """The Report differs from the PolicyReport only by its apiVersion, kind and source."""
    c = ConstraintSpread(0, ZONE, "DoNotSchedule", 1, None, 2, {"a": 2, "b": 0})
    results: list[dict[str, Any]] = [result_of(Workload("shop", "Deployment", "web"), c)]
    wg, op = policy_report("shop", results), policy_report("shop", results, OPENREPORTS)
    assert {k: v for k, v in op.items() if k not in ("apiVersion", "kind", "source")} == {
        k: v for k, v in wg.items() if k not in ("apiVersion", "kind")
    }
    assert (op["apiVersion"], op["kind"], op["source"]) == (
        "openreports.io/v1alpha1",
        "Report",
        "topospread",
    )
