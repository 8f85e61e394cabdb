"""The periodic audit: the `audit` config section, the metrics it exports (bounded, a
skew series gone with its violation), a loop that survives every failure and stops on
request, /metrics and /healthz, and `topospread audit --watch` stopped by SIGTERM.

Legend: a state maps "namespace/app" to running pods per zone (`3/1/0`), as in
test_policyreports.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess  # nosec B404 - runs the CLI under test
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.audit.test_policyreports import (
    OURS,
    app_objects,
    cluster,
    converge,
    nodes,
    samples,
)
from tests.builders import HOSTNAME, ZONE, make_pod, selector
from tests.cli.test_live import kubeconfig
from tests.fake_apiserver import FakeApiServer
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.serve.loop import AuditLoop, AuditStopped, MetricsServer, parse_bind
from webhook.audit.state.inventory import ClusterState
from webhook.cli.main import main
from webhook.cluster.lister import ClusterError
from webhook.config import AuditSettings, Settings, settings_from_dict
from webhook.errors import ConfigError

RawObj = dict[str, Any]


def wait_for(check: Callable[[], bool], what: str, deadline: float = 15.0) -> None:
    """Poll `check` until it holds; fail naming `what` after `deadline` seconds."""
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


# ---- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, AuditSettings(300, False, False)),
        ({}, AuditSettings(300, False, False)),
        ({"intervalSeconds": 60}, AuditSettings(60, False, False)),
        ({"intervalSeconds": 0}, AuditSettings(0, False, False)),
        ({"intervalSeconds": None}, AuditSettings(300, False, False)),
        ({"policyReports": True, "includeSoft": True}, AuditSettings(300, True, True)),
        ({"reports": "openreports"}, AuditSettings(300, False, False, "openreports")),
        ({"reports": None}, AuditSettings(300, False, False, "wgpolicyk8s")),
        ({"report": True}, AuditSettings(300, False, False, report=True)),
    ],
)
def test_audit_config_values(raw: Any, expected: AuditSettings) -> None:
    """Absent keys take the defaults (300 s, no PolicyReports, DoNotSchedule only)."""
    doc = {} if raw is None else {"audit": raw}
    assert settings_from_dict(doc).audit == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("often", "audit: must be a mapping"),
        (
            {"intervalSeconds": -1},
            "audit.intervalSeconds: must be a whole number of seconds, "
            "0 or more (0 turns the periodic audit off), got -1",
        ),
        ({"intervalSeconds": 2.5}, "audit.intervalSeconds: must be a whole number"),
        ({"intervalSeconds": "5m"}, "got '5m'"),
        ({"intervalSeconds": True}, "audit.intervalSeconds: must be a whole number"),
        ({"policyReports": "yes"}, "audit.policyReports: must be true or false, got 'yes'"),
        ({"includeSoft": 1}, "audit.includeSoft: must be true or false, got 1"),
        (
            {"policyreports": True},
            "audit.policyreports: unknown key (known: deletionCosts, includeSoft, "
            "intervalSeconds, policyReports, rebalance, report, reports)",
        ),
        (
            {"reports": "openreport"},
            "audit.reports: must be one of wgpolicyk8s | openreports | both, got 'openreport'",
        ),
        ({"report": "on"}, "audit.report: must be true or false, got 'on'"),
    ],
)
def test_audit_config_errors_name_the_key(raw: Any, message: str) -> None:
    """A wrong value or an unknown key is a ConfigError naming the key and the value."""
    with pytest.raises(ConfigError) as exc:
        settings_from_dict({"audit": raw})
    assert message in str(exc.value)


@pytest.mark.parametrize(
    ("raw", "apis"),
    [
        pytest.param({}, (), id="off: nothing written"),
        pytest.param({"reports": "both"}, (), id="reports without policyReports: nothing"),
        pytest.param({"policyReports": True}, ("wgpolicyk8s",), id="today's meaning"),
        pytest.param(
            {"policyReports": True, "reports": "openreports"}, ("openreports",), id="openreports"
        ),
        pytest.param(
            {"policyReports": True, "reports": "both"}, ("wgpolicyk8s", "openreports"), id="both"
        ),
    ],
)
def test_audit_reports_choose_the_apis_written_to(raw: Any, apis: tuple[str, ...]) -> None:
    """audit.policyReports turns writing on; audit.reports says to which API(s)."""
    assert settings_from_dict({"audit": raw}).audit.report_apis == apis


# ---- metrics --------------------------------------------------------------------------------


def state_of(state: dict[str, str]) -> ClusterState:
    return ClusterState.from_objects(cluster(state))


class Script:
    """A read() that hands out states (or raises) in order, then repeats the last."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.calls = 0

    def __call__(self) -> ClusterState:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        if isinstance(step, BaseException):
            raise step
        result: ClusterState = step
        return result


def skews(metrics: AuditMetrics) -> dict[tuple[str, str, str], float]:
    """(namespace, workload, topology_key) -> skew."""
    out = {}
    for (name, labels), value in samples(metrics).items():
        if name == "topospread_audit_constraint_skew":
            got = dict(labels)
            out[(got["namespace"], got["workload"], got["topology_key"])] = value
    return out


def violations(metrics: AuditMetrics) -> dict[str, float]:
    return {
        dict(labels)["namespace"]: value
        for (name, labels), value in samples(metrics).items()
        if name == "topospread_audit_violations"
    }


# Each step: the state audited, then the skew series and the violations per namespace.
METRIC_STEPS: list[
    tuple[str, dict[str, str], dict[tuple[str, str, str], float], dict[str, float]]
] = [
    (
        "shop web 3/1/0, blog api 1/1/1",
        {"shop/web": "3/1/0", "blog/api": "1/1/1"},
        {("shop", "Deployment/web", ZONE): 3},
        {"shop": 1, "blog": 0},
    ),
    (
        "shop web 2/1/0 and db 2/0/0",
        {"shop/web": "2/1/0", "shop/db": "2/0/0", "blog/api": "1/1/1"},
        {("shop", "Deployment/web", ZONE): 2, ("shop", "Deployment/db", ZONE): 2},
        {"shop": 2, "blog": 0},
    ),
    (
        "web fixed: its series goes; blog gone: its namespace goes",
        {"shop/web": "1/1/1", "shop/db": "2/0/0"},
        {("shop", "Deployment/db", ZONE): 2},
        {"shop": 1},
    ),
    (
        "all fixed: no skew series at all",
        {"shop/web": "1/1/1", "shop/db": "1/1/0"},
        {},
        {"shop": 0},
    ),
]


def test_skew_series_exist_only_for_violated_constraints() -> None:
    """Each audit replaces the gauges: a skew series per violated constraint only, gone
    with its violation; violations for every namespace audited, gone with it."""
    script = Script(*(state_of(s) for _, s, _, _ in METRIC_STEPS))
    metrics = AuditMetrics()
    loop = AuditLoop(script, Settings(), metrics)
    for name, _, want_skews, want_violations in METRIC_STEPS:
        assert loop.run_once() is not None, name
        assert skews(metrics) == want_skews, name
        assert violations(metrics) == want_violations, name


def test_run_metrics_count_what_was_checked_and_when() -> None:
    """Workloads, constraints checked, the end time and duration of the last run."""
    ticks = iter([10.0, 12.5])
    loop = AuditLoop(
        Script(state_of({"shop/web": "3/1/0", "blog/api": "1/1/1"})),
        Settings(),
        metrics := AuditMetrics(),
        clock=lambda: 1_700_000_000.0,
        timer=lambda: next(ticks),
    )
    loop.run_once()
    got = samples(metrics)
    assert got[("topospread_audit_workloads", ())] == 2
    assert got[("topospread_audit_constraints_checked", ())] == 2
    assert got[("topospread_audit_last_run_timestamp_seconds", ())] == 1_700_000_000
    assert got[("topospread_audit_last_run_duration_seconds", ())] == 2.5
    assert got[("topospread_audit_runs_total", ())] == 1
    assert ("topospread_audit_policyreport_crd_available", ()) not in got


def test_a_rollout_with_two_replicasets_keeps_one_series_with_the_larger_skew() -> None:
    """Two violated evaluations on one (namespace, workload, key): one series, max skew."""
    objects = nodes() + app_objects("shop/web", "3/0/0")
    extra = [
        make_pod()
        .name(f"web-new{i}")
        .namespace("shop")
        .label("app", "web")
        .label("pod-template-hash", "new")
        .owner("ReplicaSet", "web-5d9c")
        .node("b1")
        .spread(
            1, ZONE, "DoNotSchedule", selector({"app": "web"}), matchLabelKeys=["pod-template-hash"]
        )
        .obj()
        for i in range(2)
    ]
    metrics = AuditMetrics()
    AuditLoop(Script(ClusterState.from_objects(objects + extra)), Settings(), metrics).run_once()
    assert skews(metrics) == {("shop", "Deployment/web", ZONE): 3}


def test_include_soft_comes_from_the_config() -> None:
    """audit.includeSoft: ScheduleAnyway constraints are audited and exported too."""
    pods = [
        make_pod()
        .name(f"p{i}")
        .namespace("shop")
        .label("app", "web")
        .owner("ReplicaSet", "web-rs")
        .node("a1")
        .spread(1, HOSTNAME, "ScheduleAnyway", selector({"app": "web"}))
        .obj()
        for i in range(2)
    ]
    state = ClusterState.from_objects(nodes() + pods)
    for soft, want in ((False, {}), (True, {("shop", "ReplicaSet/web-rs", HOSTNAME): 2})):
        metrics = AuditMetrics()
        settings = Settings(audit=AuditSettings(include_soft=soft))
        AuditLoop(Script(state), settings, metrics).run_once()
        assert skews(metrics) == want


# ---- never crash ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "stage", "logged"),
    [
        pytest.param(
            ClusterError("cannot reach the cluster at https://x"),
            "read",
            "the audit could not read the cluster: cannot reach",
            id="cluster error",
        ),
        pytest.param(
            RuntimeError("boom"),
            "read",
            "the audit could not read the cluster",
            id="a bug in the read",
        ),
    ],
)
def test_a_failed_read_is_logged_counted_and_the_last_audit_kept(
    failure: Exception, stage: str, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The run fails, the error counter grows, the gauges of the last good audit stay;
    the next run succeeds."""
    good = state_of({"shop/web": "3/1/0"})
    metrics = AuditMetrics()
    loop = AuditLoop(Script(good, failure, good), Settings(), metrics)
    loop.run_once()
    with caplog.at_level("WARNING", "topospread.audit"):
        assert loop.run_once() is None
    assert [r.getMessage() for r in caplog.records if logged in r.getMessage()] != []
    got = samples(metrics)
    assert got[("topospread_audit_run_errors_total", (("stage", stage),))] == 1
    assert got[("topospread_audit_runs_total", ())] == 1
    assert violations(metrics) == {"shop": 1}
    assert loop.run_once() is not None
    assert samples(metrics)[("topospread_audit_runs_total", ())] == 2


def test_a_failed_audit_is_counted_under_its_own_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception out of the audit itself: stage `audit`, and the loop goes on."""

    def broken(*_args: Any, **_kw: Any) -> Any:
        raise ValueError("bug")

    monkeypatch.setattr("webhook.audit.serve.loop.run_audit", broken)
    metrics = AuditMetrics()
    assert AuditLoop(Script(state_of({})), Settings(), metrics).run_once() is None
    assert samples(metrics)[("topospread_audit_run_errors_total", (("stage", "audit"),))] == 1


def test_a_read_stopped_midway_is_not_an_error() -> None:
    """AuditStopped (SIGTERM during a list) ends the run quietly."""
    metrics = AuditMetrics()
    assert AuditLoop(Script(AuditStopped()), Settings(), metrics).run_once() is None
    assert samples(metrics)[("topospread_audit_run_errors_total", (("stage", "read"),))] == 0


def test_the_loop_audits_on_its_interval_and_stops_when_asked() -> None:
    """In a thread with a short interval: several audits, failures in between do not
    end it, and setting `stop` ends it promptly."""
    good = state_of({"shop/web": "3/1/0"})
    script = Script(good, ClusterError("down"), good)
    loop = AuditLoop(script, Settings(), AuditMetrics(), interval=0.02)
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(lambda: loop.runs >= 3, "three audits")
    assert loop.failures == 1
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_interval_zero_audits_nothing_until_stopped() -> None:
    """audit.intervalSeconds 0: no audit runs; the loop only waits for stop."""
    script = Script(state_of({}))
    loop = AuditLoop(script, Settings(audit=AuditSettings(interval_seconds=0)), AuditMetrics())
    stop = threading.Event()
    thread = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    thread.start()
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and script.calls == 0


# ---- /metrics and /healthz ----------------------------------------------------------------------


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:  # nosec B310 - a local test URL
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_metrics_server_serves_metrics_and_healthz() -> None:
    """Plain HTTP: /metrics in the text format, /healthz ok, anything else 404."""
    metrics = AuditMetrics()
    AuditLoop(Script(state_of({"shop/web": "3/1/0"})), Settings(), metrics).run_once()
    server = MetricsServer("127.0.0.1:0", metrics).start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        status, text = get(base + "/metrics")
        assert status == 200 and 'topospread_audit_violations{namespace="shop"} 1.0' in text
        assert get(base + "/healthz") == (200, "ok\n")
        assert get(base + "/other")[0] == 404
    finally:
        server.stop()


@pytest.mark.parametrize("bind", ["9090", ":9090", "host:port", "h:70000"])
def test_a_bad_metrics_bind_is_a_config_error(bind: str) -> None:
    with pytest.raises(ConfigError, match="--metrics-bind"):
        parse_bind(bind)


def test_an_ipv6_metrics_bind_is_read() -> None:
    assert parse_bind("[::]:9090") == ("::", 9090)


# ---- `topospread audit --watch` -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--plan"], "--plan and the drills (--without-nodes, "),
        (["--without-nodes", "zone=a"], "--drain-nodes, --scale, --rollout) are for a one-shot"),
        (["--scale", "deploy/shop/web=1"], "are for a one-shot audit"),
        (["--rollout", "deploy/shop/web"], "are for a one-shot audit"),
        (["--now", "2026-11-27T12:00:00Z"], "are for a one-shot audit"),
        (["--unreachable-nodes", "zone=a"], "are for a one-shot audit"),
        (["--drain-nodes", "zone=a"], "are for a one-shot audit"),
        (["--snapshot", "-"], "give a file"),
        (["--interval-seconds", "-5"], "--interval-seconds: must be 0 or more"),
    ],
)
def test_watch_refuses_one_shot_flags(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Flags that make no sense on an interval are a usage error (exit 2)."""
    assert main(["audit", "--watch", *argv]) == 2
    assert message in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_watch_process_audits_writes_reports_and_stops_on_sigterm(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """The audit Deployment's command against the fake API server: metrics served,
    the PolicyReport written, a violation fixed is seen at a later run, and SIGTERM
    ends the process with status 0 and a last log line."""
    server.install_policy_reports()
    converge(server, cluster({"shop/web": "3/1/0"}))
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text("audit:\n  intervalSeconds: 1\n  policyReports: true\n")
    env = {**os.environ, "KUBECONFIG": kubeconfig(tmp_path, server.url)}
    proc = subprocess.Popen(  # nosec B603 - the CLI under test, fixed arguments
        [
            sys.executable,
            "-m",
            "webhook",
            "audit",
            "--watch",
            "--config",
            str(config),
            "--metrics-bind",
            f"127.0.0.1:{port}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def metric(line: str) -> bool:
            try:
                return line in get(f"http://127.0.0.1:{port}/metrics")[1]
            except OSError:
                return False

        wait_for(
            lambda: metric('topospread_audit_violations{namespace="shop"} 1.0'),
            "the first audit's metrics",
        )
        wait_for(lambda: ("shop", "topospread") in server.policy_reports(), "the report")
        assert server.policy_reports()[("shop", "topospread")]["metadata"]["labels"] == OURS
        converge(server, cluster({"shop/web": "1/1/1"}))
        wait_for(lambda: server.policy_reports() == {}, "the report deleted at a later run")
        wait_for(
            lambda: metric('topospread_audit_violations{namespace="shop"} 0.0'),
            "the fixed violation in the metrics",
        )
        assert get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    messages = [line["msg"] for line in lines]
    assert "SIGTERM: stopping" in messages and messages[-1] == "stopped", messages
    assert any(m.startswith("audit: 1 workloads") for m in messages), messages
