"""/report.json: the latest audit's `audit -o json` document beside /report on the
audit's metrics port (audit.report), what the Headlamp plugin reads through the API
server's service proxy (docs/headlamp.md).

Legend as in test_policyreports.py: "namespace/app" -> running pods per zone, `3/1/0`.
"""

from __future__ import annotations

import json
import subprocess  # nosec B404 - runs the CLI under test
import sys
import urllib.request

import pytest

from tests.audit.test_watch import get, state_of
from tests.paths import DEMO_SNAPSHOT, ROOT
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.serve.loop import AuditLoop, LatestReport, MetricsServer
from webhook.audit.state.inventory import ClusterState
from webhook.cluster.files import scan_list
from webhook.config import Settings

AUDITED_AT = 1_790_000_000.0  # 2026-09-21T14:13:20Z


def serve(read: object) -> tuple[AuditLoop, MetricsServer]:
    metrics = AuditMetrics()
    page = LatestReport()
    loop = AuditLoop(
        read,  # type: ignore[arg-type]
        Settings(),
        metrics,
        on_report=page.update,
        clock=lambda: AUDITED_AT,
    )
    return loop, MetricsServer("127.0.0.1:0", metrics, page).start()


def fetch(url: str) -> tuple[int, str, dict[str, object]]:
    """Status, Content-Type and the parsed body of a GET."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:  # nosec B310 - a local test URL
            return r.status, r.headers["Content-Type"], json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], json.loads(exc.read())


def test_document_is_the_latest_audit_with_its_time() -> None:
    """503 with a JSON error until an audit completes; then each audit's own document
    (its workloads and violations) with the time it ran, replaced by the next one."""
    states = [state_of({"shop/web": "3/1/0", "blog/api": "1/1/1"}), state_of({"shop/web": "1/1/1"})]
    loop, server = serve(lambda: states.pop(0))
    try:
        url = f"http://127.0.0.1:{server.port}/report.json"
        status, kind, body = fetch(url)
        assert (status, kind) == (503, "application/json")
        assert body == {"error": "no audit has completed yet; retry after the first one"}
        expected = [
            # violations, the workloads as namespace/name -> [(skew, violated)]
            (1, {"shop/web": [(3, True)], "blog/api": [(0, False)]}),
            (0, {"shop/web": [(0, False)]}),
        ]
        for violations, workloads in expected:
            report = loop.run_once()
            assert report is not None
            status, kind, body = fetch(url)
            assert (status, kind) == (200, "application/json")
            assert body == {**report.to_json(), "generated": "2026-09-21T14:13:20Z"}
            assert body["violations"] == violations
            got = {
                f"{w['namespace']}/{w['name']}": [
                    (c["skew"], c["violated"]) for c in w["constraints"]
                ]
                for w in report.to_json()["workloads"]
            }
            assert got == workloads
    finally:
        server.stop()


def test_document_equals_what_audit_json_prints() -> None:
    """On the same snapshot, /report.json holds exactly the keys and values of
    `topospread audit -o json`, less the modelled release (the CLI's, from its flags)
    and plus `generated`."""
    objects: list[dict[str, object]] = []
    scan_list(DEMO_SNAPSHOT, objects.append)
    loop, server = serve(lambda: ClusterState.from_objects(objects))
    try:
        assert loop.run_once() is not None
        status, _, served = fetch(f"http://127.0.0.1:{server.port}/report.json")
    finally:
        server.stop()
    cli = subprocess.run(  # nosec B603 - the CLI under test, fixed arguments
        [sys.executable, "-m", "webhook", "audit", "--snapshot", str(DEMO_SNAPSHOT), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert cli.returncode == 1, cli.stderr  # the demo has one violated constraint
    printed = json.loads(cli.stdout)
    printed.pop("kubernetesVersion")
    assert status == 200
    assert served.pop("generated") == "2026-09-21T14:13:20Z"
    assert served == printed


@pytest.mark.parametrize("path", ["/report.json", "/report"])
def test_without_audit_report_there_is_no_document(path: str) -> None:
    """Without audit.report the port serves neither the page nor the document: 404."""
    server = MetricsServer("127.0.0.1:0", AuditMetrics()).start()
    try:
        assert get(f"http://127.0.0.1:{server.port}{path}")[0] == 404
    finally:
        server.stop()


def test_paths_beside_it_are_404() -> None:
    """Only /report.json itself (a query string allowed) is the document."""
    loop, server = serve(lambda: state_of({"shop/web": "1/1/1"}))
    try:
        assert loop.run_once() is not None
        base = f"http://127.0.0.1:{server.port}"
        for path in ("/report.json/", "/report.jsonx", "/report.json.gz", "/REPORT.JSON"):
            assert get(base + path)[0] == 404, path
        assert get(base + "/report.json?refresh=1")[0] == 200
    finally:
        server.stop()
