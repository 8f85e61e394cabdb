"""The deletion-cost keeper against the fake API server: it writes the costs (only
where a value changes), a scale-down by the controller's rule then keeps the spread,
a second pass and a restart write nothing, someone else's cost is left alone,
conflicts and throttling are recovered from; the writes a scale-up or a scale-down
causes are counted (PATCH requests); its config keys are checked.

Legend: "a:4 b:2 c:3" is the count of the Deployment's pods per zone."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.audit.test_policyreports import read_from
from tests.builders import DNS, ZONE, make_node, make_pod, selector
from tests.fake_apiserver import FakeApiServer
from webhook.audit.act.keeper import CostKeeper, decide, plan_writes
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.serve.loop import AuditLoop
from webhook.audit.state.inventory import ClusterState
from webhook.cluster.lister import Connection
from webhook.config import DeletionCostSettings, Settings, settings_from_dict
from webhook.controllers.costs import COST_ANNOTATION, MARK_ANNOTATION
from webhook.errors import ConfigError

RawObj = dict[str, Any]
APP = selector({"app": "web"})
SETTINGS = Settings()
FAST = DeletionCostSettings(enabled=True, qps=1000.0)


def node(name: str, zone: str) -> RawObj:
    return make_node().name(name).hostname().zone(zone).obj()


def web(name: str, on: str, second: int, ns: str = "shop", **annotations: str) -> RawObj:
    b = (
        make_pod()
        .name(name)
        .namespace(ns)
        .label("app", "web")
        .owner("ReplicaSet", "web-7c9f")
        .node(on)
        .ready()
        .spread(1, ZONE, DNS, APP)
    )
    for key, value in annotations.items():
        b = b.annotation(key, value)
    out = b.obj()
    out["metadata"]["creationTimestamp"] = f"2026-11-20T08:{second // 60:02d}:{second % 60:02d}Z"
    return out


def with_cost(pod: RawObj, cost: str, mark: str | None = None) -> RawObj:
    ann = pod["metadata"].setdefault("annotations", {})
    ann[COST_ANNOTATION] = cost
    if mark is not None:
        ann[MARK_ANNOTATION] = mark
    return pod


NODES = [node("a1", "a"), node("b1", "b"), node("c1", "c")]
# a:4 b:2 c:3, created interleaved (a blind newest-first scale-down to 3 keeps the
# three oldest: a:2 b:0 c:1).
PLACED = ["a1", "a1", "c1", "b1", "c1", "a1", "b1", "c1", "a1"]


def workload_pods(placed: list[str] = PLACED, start: int = 0) -> list[RawObj]:
    return [web(f"web-{start + i:02d}", n, start + i) for i, n in enumerate(placed)]


def load(server: FakeApiServer, *objects: RawObj) -> None:
    for obj in objects:
        server.add(obj)


def cost_of(pod: RawObj) -> int:
    """The cost the ReplicaSet controller reads (missing or invalid: 0)."""
    raw = pod["metadata"].get("annotations", {}).get(COST_ANNOTATION)
    try:
        return int(raw)
    except (TypeError, ValueError):
        return 0


def scale_down(server: FakeApiServer, to: int, newest_first: bool) -> list[str]:
    """Delete pods of the ReplicaSet as its controller ranks Running Ready assigned pods:
    lowest cost first, then its topology-blind rules, here newest or oldest first (both
    orders stand for any tie-break). Returns the deleted pods' names."""
    pods = [p for p in server.current("Pod") if p["metadata"]["name"].startswith("web-")]
    by_age = sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"], reverse=newest_first)
    ranked = sorted(by_age, key=cost_of)
    gone = ranked[: len(pods) - to]
    for p in gone:
        server.delete(p)
    return [p["metadata"]["name"] for p in gone]


def zones(server: FakeApiServer) -> dict[str, int]:
    zone_of = {"a1": "a", "b1": "b", "c1": "c"}
    out = {"a": 0, "b": 0, "c": 0}
    for p in server.current("Pod"):
        out[zone_of[p["spec"]["nodeName"]]] += 1
    return out


def keeper_pass(conn: Connection, config: DeletionCostSettings = FAST, **kw: Any) -> Any:
    return CostKeeper(conn, config, **kw).sync(read_from(conn), SETTINGS)


# ---- the keeper's writes and a scale-down ------------------------------------------------


@pytest.mark.parametrize("newest_first", [True, False])
def test_after_the_keeper_a_scale_down_keeps_the_zone_spread(
    server: FakeApiServer, conn: Connection, newest_first: bool
) -> None:
    """a:4 b:2 c:3 -> 3 pods: one per zone, whatever the controller's later rules."""
    load(server, *NODES, *workload_pods())
    outcome = keeper_pass(conn)
    assert outcome.count("written") == 9
    assert len(server.pod_calls("PATCH")) == 9
    for p in server.current("Pod"):
        ann = p["metadata"]["annotations"]
        assert ann[COST_ANNOTATION] == ann[MARK_ANNOTATION]
        assert -(2**31) <= int(ann[COST_ANNOTATION]) < 2**31
    scale_down(server, 3, newest_first)
    assert zones(server) == {"a": 1, "b": 1, "c": 1}


def test_without_costs_the_blind_ranking_skews(server: FakeApiServer) -> None:
    """The same scale-down without the keeper (newest first): the skew the costs prevent."""
    load(server, *NODES, *workload_pods())
    scale_down(server, 3, newest_first=True)
    assert zones(server) == {"a": 2, "b": 0, "c": 1}


def test_a_second_pass_and_a_restart_write_nothing(server: FakeApiServer, conn: Connection) -> None:
    load(server, *NODES, *workload_pods())
    keeper = CostKeeper(conn, FAST)
    keeper.sync(read_from(conn), SETTINGS)
    calls = len(server.pod_calls())
    again = keeper.sync(read_from(conn), SETTINGS)
    restarted = keeper_pass(conn)
    assert (again.planned, restarted.planned) == (0, 0)
    assert len(server.pod_calls()) == calls  # not even a GET


def test_writes_per_scale_up_of_k_and_per_scale_down(
    server: FakeApiServer, conn: Connection
) -> None:
    """After a first pass, a scale-up of k=4 pods costs 4 PATCHes (the new pods' own);
    a scale-down by the costs then costs none."""
    load(server, *NODES, *workload_pods())
    keeper_pass(conn)
    before = len(server.pod_calls("PATCH"))
    load(server, *workload_pods(["b1", "b1", "c1", "a1"], start=20))
    up = keeper_pass(conn)
    ups = len(server.pod_calls("PATCH")) - before
    scale_down(server, 6, newest_first=False)
    down = keeper_pass(conn)
    assert (ups, up.count("written")) == (4, 4)
    assert down.planned == 0 and len(server.pod_calls("PATCH")) == before + 4
    assert sorted(zones(server).values()) == [2, 2, 2]


def test_a_pod_lost_from_inside_its_zone_rewrites_the_pods_above_it(
    server: FakeApiServer, conn: Connection
) -> None:
    """Zone a holds web-00, -01, -05, -08 (oldest first): losing web-01 moves -05 and
    -08 down one level: 2 writes, none elsewhere."""
    load(server, *NODES, *workload_pods())
    keeper_pass(conn)
    before = len(server.pod_calls("PATCH"))
    server.delete(next(p for p in server.current("Pod") if p["metadata"]["name"] == "web-01"))
    outcome = keeper_pass(conn)
    assert sorted(outcome.results["written"]) == ["shop/web-05", "shop/web-08"]
    assert len(server.pod_calls("PATCH")) == before + 2


# ---- someone else's cost -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "verdict"),
    [
        ({}, "write"),
        ({COST_ANNOTATION: "7", MARK_ANNOTATION: "7"}, "write"),
        ({COST_ANNOTATION: "5", MARK_ANNOTATION: "5"}, "same"),
        ({COST_ANNOTATION: "100"}, "foreign"),  # a user's or a template's
        ({COST_ANNOTATION: "100", MARK_ANNOTATION: "7"}, "foreign"),  # changed by someone
        ({MARK_ANNOTATION: "7"}, "foreign"),  # someone removed the cost
    ],
)
def test_decide(annotations: dict[str, str], verdict: str) -> None:
    assert decide(annotations, 5) == verdict


def test_a_cost_someone_else_set_is_never_written(server: FakeApiServer, conn: Connection) -> None:
    pods = workload_pods()
    with_cost(pods[0], "-100")
    with_cost(pods[1], "9", mark="4")
    load(server, *NODES, *pods)
    state = read_from(conn)
    writes, foreign = plan_writes(state, {f"shop/{p['metadata']['name']}": 1 for p in pods})
    assert foreign == ["shop/web-00", "shop/web-01"] and len(writes) == 7
    keeper_pass(conn)
    patched = {r.path.rsplit("/", 1)[1] for r in server.pod_calls("PATCH")}
    assert "web-00" not in patched and "web-01" not in patched and len(patched) == 7
    stored = {p["metadata"]["name"]: p for p in server.current("Pod")}
    assert stored["web-00"]["metadata"]["annotations"] == {COST_ANNOTATION: "-100"}


def test_a_cost_set_between_the_read_and_the_write_is_left_alone(
    server: FakeApiServer, conn: Connection
) -> None:
    """The fresh GET decides again: a cost a user set after the audit's list stays."""
    load(server, *NODES, *workload_pods())
    state = read_from(conn)
    pod = next(p for p in server.current("Pod") if p["metadata"]["name"] == "web-00")
    server.modify(with_cost(pod, "42"))
    outcome = CostKeeper(conn, FAST).sync(state, SETTINGS)
    assert outcome.results["left_alone"] == ["shop/web-00"]
    stored = next(p for p in server.current("Pod") if p["metadata"]["name"] == "web-00")
    assert stored["metadata"]["annotations"] == {COST_ANNOTATION: "42"}


def test_only_the_configured_namespaces(server: FakeApiServer, conn: Connection) -> None:
    other = [web(f"web-{i:02d}", n, i, ns="blog") for i, n in enumerate(["a1", "b1"])]
    load(server, *NODES, *workload_pods(), *other)
    config = DeletionCostSettings(enabled=True, namespaces=("blog",), qps=1000.0)
    outcome = keeper_pass(conn, config)
    assert sorted(outcome.results["written"]) == ["blog/web-00", "blog/web-01"]


# ---- conflicts, throttling, pacing -------------------------------------------------------


def test_a_conflict_is_read_again_and_written(server: FakeApiServer, conn: Connection) -> None:
    load(server, *NODES, *workload_pods(["a1"]))
    server.fail_next_pod_call(409, method="PATCH")
    outcome = keeper_pass(conn)
    assert outcome.results["written"] == ["shop/web-00"]
    assert [r.method for r in server.pod_calls()] == ["GET", "PATCH", "GET", "PATCH"]


def test_two_conflicts_leave_the_pod_to_the_next_pass(
    server: FakeApiServer, conn: Connection
) -> None:
    load(server, *NODES, *workload_pods(["a1"]))
    server.fail_next_pod_call(409, 409, method="PATCH")
    assert keeper_pass(conn).results["conflict"] == ["shop/web-00"]
    assert keeper_pass(conn).results["written"] == ["shop/web-00"]


def test_the_patch_carries_the_resource_version_and_only_our_annotations(
    server: FakeApiServer, conn: Connection
) -> None:
    load(server, *NODES, *workload_pods(["a1"]))
    keeper_pass(conn)
    [patch] = server.pod_calls("PATCH")
    assert patch.headers["content-type"] == "application/merge-patch+json"
    assert set(patch.body) == {"metadata"}
    assert set(patch.body["metadata"]) == {"resourceVersion", "annotations"}
    assert set(patch.body["metadata"]["annotations"]) == {COST_ANNOTATION, MARK_ANNOTATION}


def test_a_429_waits_its_retry_after_and_a_second_ends_the_pass(
    server: FakeApiServer, conn: Connection
) -> None:
    load(server, *NODES, *workload_pods(["a1", "b1", "c1"]))
    waits: list[float] = []
    server.fail_next_pod_call(429, retry_after="3", method="GET")
    first = keeper_pass(conn, sleep=waits.append)
    assert 3.0 in waits and first.count("written") == 3
    for p in server.current("Pod"):  # drop our costs: everything to write again
        p["metadata"]["annotations"] = {}
        server.modify(p)
    server.fail_next_pod_call(429, 429, retry_after="1", method="GET")
    second = keeper_pass(conn, sleep=waits.append)
    assert second.results["throttled"] == ["shop/web-00"]
    assert second.deferred == 2 and second.count("written") == 0
    assert keeper_pass(conn).count("written") == 3


def test_requests_are_paced_at_qps(server: FakeApiServer, conn: Connection) -> None:
    """qps 5: 3 pods are 6 requests, 0.2 s apart: 1.0 s of waiting in all."""
    load(server, *NODES, *workload_pods(["a1", "b1", "c1"]))
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    keeper_pass(
        conn, DeletionCostSettings(enabled=True, qps=5.0), sleep=sleep, timer=lambda: now[0]
    )
    assert now[0] == pytest.approx(1.0)


def test_a_pass_plans_what_fits_in_the_interval(server: FakeApiServer, conn: Connection) -> None:
    """qps 1 and a 4 s interval: 2 pods (4 requests) per pass, the rest next time."""
    load(server, *NODES, *workload_pods(["a1", "b1", "c1"]))
    settings = settings_from_dict({"audit": {"intervalSeconds": 4}})
    keeper = CostKeeper(conn, DeletionCostSettings(enabled=True, qps=1.0), sleep=lambda s: None)
    first = keeper.sync(read_from(conn), settings)
    assert (first.count("written"), first.deferred) == (2, 1)
    assert keeper.sync(read_from(conn), settings).count("written") == 1


def test_a_stop_ends_the_pass_before_the_next_pod(server: FakeApiServer, conn: Connection) -> None:
    load(server, *NODES, *workload_pods(["a1", "b1"]))
    stop = threading.Event()
    stop.set()
    outcome = keeper_pass(conn, stop=stop)
    assert outcome.planned == 0 and outcome.deferred == 2 and server.pod_calls() == []


def test_the_audit_loop_runs_the_keeper_and_counts_its_writes(
    server: FakeApiServer, conn: Connection
) -> None:
    load(server, *NODES, *workload_pods())
    metrics = AuditMetrics(deletion_costs=True)
    loop = AuditLoop(lambda: read_from(conn), SETTINGS, metrics, keeper=CostKeeper(conn, FAST))
    loop.run_once()
    loop.run_once()
    counted = {
        s.labels["result"]: s.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        if family.name == "topospread_deletion_cost_writes"
        for s in family.samples
        if s.name == "topospread_deletion_cost_writes_total"
    }
    assert counted["written"] == 9 and counted["left_alone"] == 0 and len(counted) == 7


def test_without_the_keeper_no_cost_metric() -> None:
    assert b"topospread_deletion_cost_writes" not in AuditMetrics().exposition()


# ---- the fake API server's PATCH ---------------------------------------------------------


def test_the_fake_answers_patches_as_kube_apiserver(server: FakeApiServer) -> None:
    load(server, *workload_pods(["a1"]))
    path = "/api/v1/namespaces/shop/pods/web-00"
    rv = server.current("Pod")[0]["metadata"]["resourceVersion"]
    merge = "application/merge-patch+json"
    status, body, _ = server._pod_call(
        "PATCH", path, merge, {"metadata": {"resourceVersion": "1", "annotations": {"x": "1"}}}
    )
    assert (status, body["reason"]) == (409, "Conflict")
    status, body, _ = server._pod_call(
        "PATCH", path, merge, {"metadata": {"resourceVersion": rv, "annotations": {"x": "1"}}}
    )
    assert status == 200 and body["metadata"]["annotations"] == {"x": "1"}
    assert body["metadata"]["resourceVersion"] != rv
    json_patch = "application/json-patch+json"
    status, body, _ = server._pod_call(
        "PATCH", path, json_patch, [{"op": "test", "path": "/metadata/annotations/x", "value": "2"}]
    )
    assert status == 422
    status, body, _ = server._pod_call(
        "PATCH", path, json_patch, [{"op": "remove", "path": "/metadata/annotations/x"}]
    )
    assert status == 200 and body["metadata"]["annotations"] == {}
    assert server._pod_call("PATCH", path, "application/yaml", {})[0] == 415
    assert server._pod_call("GET", "/api/v1/namespaces/shop/pods/nope", "", None)[0] == 404


# ---- config --------------------------------------------------------------------------------


def test_config_defaults_and_values() -> None:
    assert Settings().audit.deletion_costs == DeletionCostSettings(False, None, 5.0)
    got = settings_from_dict(
        {"audit": {"deletionCosts": {"enabled": True, "namespaces": ["shop"], "qps": 2}}}
    ).audit.deletion_costs
    assert got == DeletionCostSettings(True, ("shop",), 2.0)


def test_an_empty_namespace_list_is_every_namespace() -> None:
    """`namespaces: []` keeps every namespace, as audit.rebalance.namespaces reads it."""
    got = settings_from_dict({"audit": {"deletionCosts": {"namespaces": []}}})
    assert got.audit.deletion_costs.namespaces is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("yes", "audit.deletionCosts: must be a mapping"),
        ({"enable": True}, "audit.deletionCosts.enable: unknown key"),
        ({"enabled": "true"}, "audit.deletionCosts.enabled: must be true or false"),
        ({"namespaces": "shop"}, "audit.deletionCosts.namespaces: must be a list"),
        ({"namespaces": ["Shop"]}, "audit.deletionCosts.namespaces: must be a list"),
        ({"qps": 0}, "audit.deletionCosts.qps: must be a number above 0"),
        ({"qps": True}, "audit.deletionCosts.qps: must be a number above 0"),
    ],
)
def test_config_errors(section: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        settings_from_dict({"audit": {"deletionCosts": section}})
    assert str(err.value).startswith(message)


def test_watch_flag_turns_the_keeper_on() -> None:
    """`audit --watch --deletion-costs` (what the install renders) enables the keeper as
    audit.deletionCosts.enabled does; the config's other keys stay."""
    from webhook.cli.audit import _watch_settings
    from webhook.cli.main import build_parser

    base = settings_from_dict({"audit": {"deletionCosts": {"qps": 2, "namespaces": ["shop"]}}})
    args = build_parser().parse_args(["audit", "--watch", "--in-cluster", "--deletion-costs"])
    got = _watch_settings(args, base).audit.deletion_costs
    assert got == DeletionCostSettings(True, ("shop",), 2.0)
    plain = build_parser().parse_args(["audit", "--watch", "--in-cluster"])
    assert _watch_settings(plain, base).audit.deletion_costs.enabled is False


def test_one_log_line_per_pass(
    server: FakeApiServer, conn: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    load(server, *NODES, *workload_pods(["a1", "b1", "c1"]))
    with caplog.at_level("INFO", logger="topospread.audit.keeper"):
        keeper_pass(conn)
    lines = [r.getMessage() for r in caplog.records if r.name == "topospread.audit.keeper"]
    assert len(lines) == 1
    assert lines[0].startswith("deletion costs: 3 written of 3 planned (0 already right")


def test_a_pod_gone_before_its_write_and_a_failed_read(
    server: FakeApiServer, conn: Connection
) -> None:
    """404 (deleted since the list): gone, nothing written; a 500 on one pod's GET: an
    error for that pod, and the pass goes on with the next."""
    load(server, *NODES, *workload_pods(["a1", "b1", "c1"]))
    state = read_from(conn)
    server.delete(next(p for p in server.current("Pod") if p["metadata"]["name"] == "web-00"))
    outcome = CostKeeper(conn, FAST).sync(state, SETTINGS)  # listed before the deletion
    assert outcome.results["gone"] == ["shop/web-00"]
    assert outcome.results["written"] == ["shop/web-01", "shop/web-02"]
    load(server, web("web-09", "a1", 9))
    server.fail_next_pod_call(500, method="GET")
    failed = keeper_pass(conn)
    assert failed.results["error"] == ["shop/web-09"] and failed.count("written") == 0
    assert keeper_pass(conn).results["written"] == ["shop/web-09"]


def test_the_audit_keeps_only_the_two_cost_annotations() -> None:
    pod = web("web-00", "a1", 0, **{COST_ANNOTATION: "3", MARK_ANNOTATION: "3", "big": "x" * 99})
    plain = web("web-01", "a1", 1, other="y")
    state = ClusterState.from_objects([*NODES, pod, plain])
    kept = {p["metadata"]["name"]: p["metadata"].get("annotations") for p in state.running}
    assert kept == {"web-00": {COST_ANNOTATION: "3", MARK_ANNOTATION: "3"}, "web-01": None}
