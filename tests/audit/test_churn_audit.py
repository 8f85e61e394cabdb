"""`audit --watch` under churn: the audit loop of the audit Deployment, reading the fake
API server and writing PolicyReports to it, while pod and node events stream in
(tests/churn_world.py).

Once the churn stops, the loop's next complete run reports exactly what a one-shot
`topospread audit -o json` of the final state (a `kubectl get -o json` List of the
same objects) prints; its PolicyReports then hold the one-shot audit's results, and
later runs write nothing (each report is written once for a state that no longer
changes).

Seeded (TOPOSPREAD_SEED); `pytest -k churn` selects it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from tests.churn_world import ChurnWorld, seed
from tests.fake_apiserver import ALL_COLLECTIONS, FakeApiServer
from webhook.audit.pipeline import run_audit
from webhook.audit.report.document import AuditReport
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.report.policyreports import APIS, PolicyReportWriter, desired_results
from webhook.audit.serve.loop import AuditLoop
from webhook.audit.state.inventory import Collector
from webhook.cli.audit import _read_live
from webhook.cli.main import main
from webhook.cluster.lister import AUDIT_RESOURCES, Connection
from webhook.config import settings_from_dict

RawObj = dict[str, Any]
CHURN_SECONDS = 4.0
EVENTS_PER_SECOND = 300
INTERVAL = 0.2


def wait_for(check: Callable[[], bool], what: str, deadline: float = 60.0) -> None:
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    server.install_policy_reports()
    yield server
    server.stop()


def listed(fake: FakeApiServer) -> list[RawObj]:
    """The objects the API server holds, as `kubectl get ... -o json` lists them: the
    kinds an audit reads, in the order it reads them, kind and apiVersion set."""
    out = []
    for resource in AUDIT_RESOURCES:
        for obj in fake.current(resource.kind):
            obj["kind"] = resource.kind
            obj.setdefault("apiVersion", ALL_COLLECTIONS[resource.kind][1])
            out.append(obj)
    return out


def without_timestamps(results: list[RawObj]) -> list[RawObj]:
    return [{k: v for k, v in r.items() if k != "timestamp"} for r in results]


def test_churn_audit_watch_ends_with_the_one_shot_report(
    fake: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = ChurnWorld(seed())
    for obj in world.initial():
        fake.add(obj)
    settings = settings_from_dict({"audit": {"policyReports": True}})
    conn = Connection(ApiClient(Configuration(host=fake.url)), "fake", "", timeout=10)
    writer = PolicyReportWriter(conn, APIS["wgpolicyk8s"])
    stop = threading.Event()
    reports: list[AuditReport] = []

    def on_report(report: AuditReport, _at: float) -> None:
        reports.append(report)

    loop = AuditLoop(
        lambda: _read_live(conn, stop),
        settings,
        AuditMetrics(policy_reports=True, report_apis=("wgpolicyk8s",)),
        writer,
        on_report=on_report,
        interval=INTERVAL,
    )
    auditing = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    auditing.start()
    try:
        wait_for(lambda: len(reports) >= 1, "the first audit")
        started = time.monotonic()
        interval = 1.0 / EVENTS_PER_SECOND
        while time.monotonic() - started < CHURN_SECONDS:
            pause = started + world.events * interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            world.step(fake)
        during = len(reports)
        # The second run completed after the churn stopped started after it.
        wait_for(lambda: len(reports) >= during + 2, "two audits after the churn")
        final = reports[-1]

        objects = listed(fake)
        path = tmp_path / "final.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        capsys.readouterr()
        main(["audit", "-o", "json", "--snapshot", str(path)])
        one_shot = json.loads(capsys.readouterr().out)
        # The one-shot answer also names the release it modelled.
        assert one_shot.pop("kubernetesVersion") == "1.37"
        assert final.to_json() == one_shot

        # Its reports hold the one-shot audit's results, and nothing is written again.
        collector = Collector()
        for obj in objects:
            collector.add(obj)
        state = collector.state()
        want = desired_results(run_audit(state, settings), state)
        assert want, "the final state has no violation: the check would be empty"
        writes = len(fake.writes())
        runs = len(reports)
        wait_for(lambda: len(reports) >= runs + 2, "two more audits")
        assert len(fake.writes()) == writes, [r.method for r in fake.writes()[writes:]]
        stored = {ns: r["results"] for (ns, _), r in fake.policy_reports().items()}
        assert {ns: without_timestamps(r) for ns, r in stored.items()} == {
            ns: without_timestamps(r) for ns, r in want.items()
        }
        print(
            f"seed {seed()}: {world.events} events in {CHURN_SECONDS:.0f} s, "
            f"{during} audits during the churn"
        )
    finally:
        stop.set()
        auditing.join(30)
