"""/report: the latest audit as the HTML page on the audit's metrics port (audit.report),
with the time of that audit; and `audit --watch` writing both reporting APIs.

Legend as in test_policyreports.py: "namespace/app" -> running pods per zone, `3/1/0`.
"""

from __future__ import annotations

import os
import signal
import subprocess  # nosec B404 - runs the CLI under test
import sys
from pathlib import Path

from tests.audit.test_policyreports import cluster, converge
from tests.audit.test_watch import free_port, get, state_of, wait_for
from tests.cli.test_live import kubeconfig
from tests.fake_apiserver import OPEN_REPORT, POLICY_REPORT, FakeApiServer
from tests.htmltree import parse
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.serve.loop import AuditLoop, LatestReport, MetricsServer
from webhook.config import Settings
from webhook.render.html import utc_now

AUDITED_AT = 1_790_000_000.0


def test_report_page_is_the_latest_audit_with_its_time() -> None:
    """503 with a short page until an audit completes; then that audit's page, with
    one card per workload of its JSON document and the time it ran."""
    metrics = AuditMetrics()
    page = LatestReport()
    states = [state_of({"shop/web": "3/1/0", "blog/api": "1/1/1"}), state_of({"shop/web": "1/1/1"})]
    loop = AuditLoop(
        lambda: states.pop(0), Settings(), metrics, on_report=page.update, clock=lambda: AUDITED_AT
    )
    server = MetricsServer("127.0.0.1:0", metrics, page).start()
    try:
        url = f"http://127.0.0.1:{server.port}/report"
        status, text = get(url)
        assert status == 503 and "No audit has completed yet" in text
        for _ in range(2):
            report = loop.run_once()
            assert report is not None
            status, text = get(url)
            assert status == 200
            root = parse(text)
            cards = [c.attrs["data-workload"] for c in root.find_all("article", cls="card")]
            doc = report.to_json()
            assert sorted(cards) == sorted(
                f"{w['namespace']}/{w['name']}" for w in doc["workloads"]
            )
            assert f"audited {utc_now(AUDITED_AT)}" in root.text()
    finally:
        server.stop()


def test_without_audit_report_there_is_no_report_page() -> None:
    server = MetricsServer("127.0.0.1:0", AuditMetrics()).start()
    try:
        assert get(f"http://127.0.0.1:{server.port}/report")[0] == 404
    finally:
        server.stop()


def test_watch_process_serves_the_page_and_writes_both_apis(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """`audit --watch` with audit.report and audit.reports both, against the fake API
    server: the page at /report names the violated workload, a PolicyReport and a
    Report hold it."""
    server.install_policy_reports(POLICY_REPORT)
    server.install_policy_reports(OPEN_REPORT)
    converge(server, cluster({"shop/web": "3/1/0"}))
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(
        "audit:\n  intervalSeconds: 1\n  policyReports: true\n  reports: both\n  report: true\n"
    )
    env = {**os.environ, "KUBECONFIG": kubeconfig(tmp_path, server.url)}
    argv = ["audit", "--watch", "--config", str(config), "--metrics-bind", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(  # nosec B603 - the CLI under test, fixed arguments
        [sys.executable, "-m", "webhook", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def page() -> str:
            try:
                status, text = get(f"http://127.0.0.1:{port}/report")
            except OSError:
                return ""
            return text if status == 200 else ""

        wait_for(lambda: 'data-workload="shop/web"' in page(), "the report page")
        for kind in (POLICY_REPORT, OPEN_REPORT):
            wait_for(lambda k=kind: ("shop", "topospread") in server.policy_reports(k), kind)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "/report" in err
