"""PolicyReports: one per namespace with a violation, kept equal to the latest audit
against tests/fake_apiserver.py (created, updated, results removed, deleted when
clean), others' reports untouched, a missing CRD survived; and the one module that
writes.

Legend: a state maps "namespace/app" to its running pods per zone, `3/1/0` being
three pods in zone a, one in b, none in c, each app a Deployment (through its
ReplicaSet) with one zone DoNotSchedule constraint of maxSkew 1.
"""

from __future__ import annotations

import ast
import logging
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import paths
from tests.builders import DNS, HOSTNAME, SA, ZONE, make_node, make_pod, selector
from tests.fake_apiserver import FakeApiServer
from webhook.audit.measure.spread import ConstraintSpread
from webhook.audit.pipeline import run_audit
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.report.policyreports import (
    MANAGED_BY,
    REPORT_NAME,
    PolicyReportWriter,
    desired_results,
    result_of,
)
from webhook.audit.serve.loop import AuditLoop
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.cluster.lister import AUDIT_RESOURCES, Connection, list_objects
from webhook.config import Settings

RawObj = dict[str, Any]
ZONES = ("a", "b", "c")
OURS = {MANAGED_BY[0]: MANAGED_BY[1]}


# ---- building the cluster ------------------------------------------------------------------


def app_objects(key: str, spread: str, *, when: str = DNS) -> list[RawObj]:
    """A Deployment, its ReplicaSet and its running pods, `spread` per zone (`3/1/0`)."""
    ns, app = key.split("/")
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": app, "namespace": ns, "uid": f"uid-{ns}-{app}"},
    }
    rs_name = f"{app}-5d9c"
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs_name,
            "namespace": ns,
            "uid": f"uid-{ns}-{rs_name}",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": app,
                    "uid": f"uid-{ns}-{app}",
                    "controller": True,
                }
            ],
        },
    }
    pods = []
    for zone, count in zip(ZONES, spread.split("/"), strict=True):
        for i in range(int(count)):
            pods.append(
                make_pod()
                .name(f"{app}-{zone}{i}")
                .namespace(ns)
                .label("app", app)
                .owner("ReplicaSet", rs_name)
                .node(f"{zone}1")
                .spread(1, ZONE, when, selector({"app": app}))
                .obj()
            )
    return [deployment, rs, *pods]


def nodes() -> list[RawObj]:
    return [make_node().name(f"{z}1").zone(z).hostname().obj() for z in ZONES]


def cluster(state: dict[str, str]) -> list[RawObj]:
    return nodes() + [o for key, spread in state.items() for o in app_objects(key, spread)]


def _ident(obj: RawObj) -> tuple[str, str, str]:
    m = obj["metadata"]
    return (obj["kind"], m.get("namespace", ""), m["name"])


def converge(server: FakeApiServer, objects: list[RawObj]) -> None:
    """Make the fake hold exactly `objects` (of the kinds they have, plus Pods)."""
    wanted = {_ident(o): o for o in objects}
    for kind in ("Pod", "ReplicaSet", "Deployment", "Node"):
        for obj in server.current(kind):
            obj["kind"] = kind
            if _ident(obj) not in wanted:
                server.delete(obj)
    have = {
        _ident(o)
        for kind in ("Pod", "ReplicaSet", "Deployment", "Node")
        for o in ({**x, "kind": kind} for x in server.current(kind))
    }
    for ident, obj in wanted.items():
        if ident not in have:
            server.add(obj)


def read_from(conn: Connection) -> ClusterState:
    return ClusterState.from_objects(list_objects(conn, AUDIT_RESOURCES))


def loop_for(conn: Connection, metrics: AuditMetrics | None = None) -> AuditLoop:
    metrics = metrics or AuditMetrics(policy_reports=True)
    return AuditLoop(lambda: read_from(conn), Settings(), metrics, PolicyReportWriter(conn))


def samples(metrics: AuditMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def report_view(
    server: FakeApiServer, kind: str = "PolicyReport"
) -> dict[str, list[tuple[str, str, str, str]]]:
    """namespace -> (workload, rule, skew, result) of our reports' results (of the
    reporting API of `kind`)."""
    out = {}
    for (ns, name), obj in server.policy_reports(kind).items():
        if name == REPORT_NAME and obj["metadata"].get("labels") == OURS:
            out[ns] = [
                (
                    f"{r['resources'][0]['kind']}/{r['resources'][0]['name']}",
                    r["rule"],
                    r["properties"]["skew"],
                    r["result"],
                )
                for r in obj["results"]
            ]
    return out


def write_log(server: FakeApiServer, since: int) -> list[tuple[str, str]]:
    """(verb, namespace) of the writes after the first `since` ones."""
    out = []
    for r in server.writes()[since:]:
        parts = r.path.split("/")
        out.append((r.method, parts[parts.index("namespaces") + 1]))
    return out


# ---- the lifecycle ---------------------------------------------------------------------------

WEB = "Deployment/web"
API = "Deployment/api"
DB = "Deployment/db"

# Each step: the cluster, the writes the sync makes, then what our reports hold.
LIFECYCLE: list[tuple[str, dict[str, str], list[tuple[str, str]], dict[str, Any]]] = [
    (
        "shop web 3/1/0 violated, blog api 1/1/1 not: a report for shop only",
        {"shop/web": "3/1/0", "blog/api": "1/1/1"},
        [("POST", "shop")],
        {"shop": [(WEB, ZONE, "3", "fail")]},
    ),
    (
        "nothing changed: nothing written",
        {"shop/web": "3/1/0", "blog/api": "1/1/1"},
        [],
        {"shop": [(WEB, ZONE, "3", "fail")]},
    ),
    (
        "shop web 2/1/0: the violation changes, the result is updated",
        {"shop/web": "2/1/0", "blog/api": "1/1/1"},
        [("PUT", "shop")],
        {"shop": [(WEB, ZONE, "2", "fail")]},
    ),
    (
        "shop db 2/0/0 joins, blog api 3/1/1: a second result, a second report",
        {"shop/web": "2/1/0", "shop/db": "2/0/0", "blog/api": "3/1/1"},
        [("POST", "blog"), ("PUT", "shop")],
        {
            "shop": [(DB, ZONE, "2", "fail"), (WEB, ZONE, "2", "fail")],
            "blog": [(API, ZONE, "2", "fail")],
        },
    ),
    (
        "shop web 1/1/1: its result goes, db's stays",
        {"shop/web": "1/1/1", "shop/db": "2/0/0", "blog/api": "3/1/1"},
        [("PUT", "shop")],
        {"shop": [(DB, ZONE, "2", "fail")], "blog": [(API, ZONE, "2", "fail")]},
    ),
    (
        "every namespace clean: both reports deleted",
        {"shop/web": "1/1/1", "shop/db": "1/1/0", "blog/api": "1/1/1"},
        [("DELETE", "blog"), ("DELETE", "shop")],
        {},
    ),
]


def test_reports_follow_the_violations_step_by_step(
    server: FakeApiServer, conn: Connection
) -> None:
    """Created, left alone, updated, extended, shrunk, deleted: each step's writes and
    resulting reports, against the fake API server."""
    server.install_policy_reports()
    metrics = AuditMetrics(policy_reports=True)
    loop = loop_for(conn, metrics)
    for name, state, writes, reports in LIFECYCLE:
        converge(server, cluster(state))
        before = len(server.writes())
        assert loop.run_once() is not None, name
        assert write_log(server, before) == writes, name
        assert report_view(server) == reports, name
    got = samples(metrics)
    assert got[("topospread_audit_policyreport_writes_total", (("operation", "create"),))] == 2
    assert got[("topospread_audit_policyreport_writes_total", (("operation", "update"),))] == 3
    assert got[("topospread_audit_policyreport_writes_total", (("operation", "delete"),))] == 2
    assert got[("topospread_audit_policyreport_crd_available", ())] == 1


def test_a_report_names_the_workload_and_counts_its_results(
    server: FakeApiServer, conn: Connection
) -> None:
    """The stored report: our label and name, summary counts, one result naming the
    Deployment (with its uid), skew, maxSkew and every domain."""
    server.install_policy_reports()
    converge(server, cluster({"shop/web": "3/1/0"}))
    loop_for(conn).run_once()
    report = server.policy_reports()[("shop", REPORT_NAME)]
    assert report["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
    assert report["metadata"]["labels"] == OURS
    assert report["summary"] == {"pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0}
    (result,) = report["results"]
    assert {k: result[k] for k in ("policy", "rule", "result", "severity", "source")} == {
        "policy": "topospread",
        "rule": ZONE,
        "result": "fail",
        "severity": "medium",
        "source": "topospread",
    }
    assert result["resources"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": "shop",
            "name": "web",
            "uid": "uid-shop-web",
        }
    ]
    assert "Deployment shop/web: skew 3 > maxSkew 1" in result["message"]
    assert "a=3, b=1, c=0" in result["message"]
    assert result["properties"]["maxSkew"] == "1"


def test_unchanged_results_keep_their_timestamp(server: FakeApiServer, conn: Connection) -> None:
    """A result that did not change is not re-stamped, so the report is not rewritten."""
    server.install_policy_reports()
    converge(server, cluster({"shop/web": "3/1/0"}))
    times = iter([1000.0, 2000.0])
    loop = AuditLoop(
        lambda: read_from(conn),
        Settings(),
        AuditMetrics(policy_reports=True),
        PolicyReportWriter(conn),
        clock=lambda: next(times),
    )
    loop.run_once()
    stamp = server.policy_reports()[("shop", REPORT_NAME)]["results"][0]["timestamp"]
    writes = len(server.writes())
    loop.run_once()
    assert len(server.writes()) == writes
    assert server.policy_reports()[("shop", REPORT_NAME)]["results"][0]["timestamp"] == stamp
    assert stamp == {"seconds": 1000, "nanos": 0}


def test_reports_of_other_owners_are_never_touched(
    server: FakeApiServer, conn: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    """Another tool's reports (one even named `topospread`, without our label) stay as
    they are through create and delete cycles; the name clash is one error, counted."""
    server.install_policy_reports()
    foreign = server.put_policy_report(
        {
            "metadata": {"name": REPORT_NAME, "namespace": "shop", "labels": {"owner": "me"}},
            "results": [],
        }
    )
    kyverno = server.put_policy_report(
        {
            "metadata": {
                "name": "cpol-require-labels",
                "namespace": "blog",
                "labels": {MANAGED_BY[0]: "kyverno"},
            },
            "results": [],
        }
    )
    metrics = AuditMetrics(policy_reports=True)
    loop = loop_for(conn, metrics)
    converge(server, cluster({"shop/web": "3/1/0", "blog/api": "3/0/0"}))
    with caplog.at_level(logging.WARNING, "topospread.audit.policyreports"):
        loop.run_once()
    converge(server, cluster({"shop/web": "1/1/1", "blog/api": "1/1/1"}))
    loop.run_once()
    stored = server.policy_reports()
    assert stored[("shop", REPORT_NAME)] == foreign
    assert stored[("blog", "cpol-require-labels")] == kyverno
    assert sorted(stored) == [("blog", "cpol-require-labels"), ("shop", REPORT_NAME)]
    # blog's own report came and went; shop's name was taken: one error, one line.
    assert write_log(server, 0) == [("POST", "blog"), ("POST", "shop"), ("DELETE", "blog")]
    errors = samples(metrics)
    assert (
        errors[("topospread_audit_policyreport_write_errors_total", (("operation", "create"),))]
        == 1
    )
    assert [r.getMessage() for r in caplog.records if "not manage" in r.getMessage()] != []


def test_no_policyreport_crd_is_one_log_line_a_metric_and_no_crash(
    server: FakeApiServer, conn: Connection, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the CRD: the audit still runs and exports, nothing is written, one
    warning however many runs, the gauge 0; once installed, the next run writes."""
    converge(server, cluster({"shop/web": "3/1/0"}))
    metrics = AuditMetrics(policy_reports=True)
    loop = loop_for(conn, metrics)
    with caplog.at_level(logging.WARNING, "topospread.audit.policyreports"):
        for _ in range(3):
            report = loop.run_once()
            assert report is not None and report.violations == 1
    assert server.writes() == []
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "install the PolicyReport CRD" in lines[0], lines
    got = samples(metrics)
    assert got[("topospread_audit_policyreport_crd_available", ())] == 0
    assert got[("topospread_audit_runs_total", ())] == 3
    assert got[("topospread_audit_violations", (("namespace", "shop"),))] == 1

    server.install_policy_reports()
    loop.run_once()
    assert report_view(server) == {"shop": [(WEB, ZONE, "3", "fail")]}
    assert samples(metrics)[("topospread_audit_policyreport_crd_available", ())] == 1


@pytest.mark.parametrize(
    ("statuses", "operation"),
    [
        pytest.param((500,), "list", id="the list fails"),
        pytest.param((0, 500), "create", id="the create fails"),
        pytest.param((0, 403), "create", id="the create is forbidden"),
    ],
)
def test_a_failed_write_is_counted_and_retried_next_run(
    server: FakeApiServer, conn: Connection, statuses: tuple[int, ...], operation: str
) -> None:
    """A PolicyReport request that fails costs one error and nothing else: the audit's
    metrics are exported, and the next run writes the report."""
    server.install_policy_reports()
    converge(server, cluster({"shop/web": "3/1/0"}))
    metrics = AuditMetrics(policy_reports=True)
    loop = loop_for(conn, metrics)
    server.fail_next("PolicyReport", *statuses)
    assert loop.run_once() is not None
    assert report_view(server) == {}
    got = samples(metrics)
    assert (
        got[("topospread_audit_policyreport_write_errors_total", (("operation", operation),))] == 1
    )
    assert got[("topospread_audit_runs_total", ())] == 1
    loop.run_once()
    assert report_view(server) == {"shop": [(WEB, ZONE, "3", "fail")]}


def test_a_report_deleted_by_someone_else_is_created_again(
    server: FakeApiServer, conn: Connection
) -> None:
    """Our report removed behind our back comes back at the next run."""
    server.install_policy_reports()
    converge(server, cluster({"shop/web": "3/1/0"}))
    loop = loop_for(conn)
    loop.run_once()
    server.uninstall_policy_reports()
    server.install_policy_reports()
    loop.run_once()
    assert report_view(server) == {"shop": [(WEB, ZONE, "3", "fail")]}


# ---- what a result says (pure) ---------------------------------------------------------------


def spread(when: str = DNS, domains: dict[str, int] | None = None) -> ConstraintSpread:
    domains = domains if domains is not None else {"a": 4, "b": 1, "c": 1}
    return ConstraintSpread(
        index=1,
        topology_key=ZONE,
        when_unsatisfiable=when,
        max_skew=1,
        min_domains=None,
        skew=max(domains.values()) - min(domains.values()),
        domains=domains,
    )


@pytest.mark.parametrize(
    ("when", "result", "severity"),
    [(DNS, "fail", "medium"), (SA, "warn", "low")],
)
def test_hard_constraints_fail_and_soft_ones_warn(when: str, result: str, severity: str) -> None:
    """DoNotSchedule is the scheduler's rule (fail), ScheduleAnyway its preference (warn)."""
    got = result_of(Workload("shop", "StatefulSet", "db"), spread(when), now=12.7)
    assert (got["result"], got["severity"]) == (result, severity)
    assert got["resources"] == [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "shop", "name": "db"}
    ]
    assert got["timestamp"] == {"seconds": 12, "nanos": 0}
    assert got["properties"]["constraintIndex"] == "1"


def test_a_result_names_at_most_twelve_domains() -> None:
    """A hostname constraint over many nodes: the fullest and emptiest domains, and a count."""
    domains = {f"node-{i:03}": (5 if i == 7 else 1) for i in range(300)}
    got = result_of(Workload("shop", "Deployment", "web"), spread(DNS, domains))
    text = got["properties"]["domains"]
    assert text.startswith("node-007=5, ")
    assert text.endswith("(and 288 more domains)")
    assert text.count("=") == 12
    assert len(got["message"]) < 600


def test_desired_results_hold_only_namespaces_with_a_violation() -> None:
    """Workloads without a violation make no result; a clean namespace no report."""
    objects = cluster({"shop/web": "3/1/0", "shop/db": "1/1/1", "blog/api": "1/1/0"})
    state = ClusterState.from_objects(objects)
    got = desired_results(run_audit(state, Settings()), state, now=5)
    assert sorted(got) == ["shop"]
    assert [r["resources"][0]["name"] for r in got["shop"]] == ["web"]
    assert got["shop"][0]["resources"][0]["uid"] == "uid-shop-web"


def test_soft_constraints_are_reported_only_with_include_soft() -> None:
    """A violated ScheduleAnyway constraint is a `warn` result with audit.includeSoft."""
    objects = nodes() + app_objects("shop/web", "3/0/0", when=SA)
    state = ClusterState.from_objects(objects)
    assert desired_results(run_audit(state, Settings())) == {}
    soft = desired_results(run_audit(state, Settings(), include_soft=True))
    assert [r["result"] for r in soft["shop"]] == ["warn"]


def test_hostname_constraints_report_under_their_own_rule() -> None:
    """rule is the constraint's topologyKey: two keys of one workload, two rules."""
    pods = [
        make_pod()
        .name(f"p{i}")
        .namespace("shop")
        .label("app", "web")
        .node("a1")
        .owner("ReplicaSet", "web-rs")
        .spread(1, ZONE, DNS, selector({"app": "web"}))
        .spread(1, HOSTNAME, DNS, selector({"app": "web"}))
        .obj()
        for i in range(3)
    ]
    state = ClusterState.from_objects(nodes() + pods)
    got = desired_results(run_audit(state, Settings()))
    assert sorted(r["rule"] for r in got["shop"]) == sorted([ZONE, HOSTNAME])


# ---- one module writes ----------------------------------------------------------------------

WRITE_VERBS = {"POST", "PUT", "PATCH", "DELETE"}
WRITER = "webhook/audit/report/policyreports.py"
# The modules that write, each with exactly the verbs it sends.
WRITERS = {
    WRITER: {"POST", "PUT", "DELETE"},
    # The Eviction API: POST on pods/NAME/eviction, never a DELETE.
    "webhook/audit/act/evictor.py": {"POST"},
    # The deletion-cost keeper: PATCH of two annotations on pods, nothing else.
    "webhook/audit/act/keeper.py": {"PATCH"},
}
# Write methods of the kubernetes client's generated APIs (CoreV1Api.create_namespaced_pod ...).
CLIENT_WRITE_PREFIXES = ("create_", "patch_", "replace_", "delete_")


def write_calls(source: str) -> list[str]:
    """Each call in `source` that names a write verb as an argument (request("PUT", ...),
    Request(method="DELETE")) or calls a kubernetes client write method."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        for arg in args:
            if isinstance(arg, ast.Constant) and arg.value in WRITE_VERBS:
                found.append(f"line {node.lineno}: {arg.value}")
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr.startswith(CLIENT_WRITE_PREFIXES):
            if "namespaced" in func.attr or "custom_object" in func.attr:
                found.append(f"line {node.lineno}: {func.attr}")
    return found


def test_only_the_policyreport_module_issues_write_verbs() -> None:
    """No module of webhook/ but the writers (policyreports.py, evictions.py, keeper.py)
    sends POST, PUT, PATCH or DELETE (or calls a client write method); each writer sends
    exactly its own verbs, so the check sees something."""
    bad = {}
    for path in sorted((paths.ROOT / "webhook").rglob("*.py")):
        rel = path.relative_to(paths.ROOT).as_posix()
        calls = write_calls(path.read_text(encoding="utf-8"))
        if calls and rel not in WRITERS:
            bad[rel] = calls
    assert bad == {}
    for rel, verbs in WRITERS.items():
        writer = write_calls((paths.ROOT / rel).read_text(encoding="utf-8"))
        assert {c.split(": ")[1] for c in writer} == verbs, rel


def test_the_write_check_finds_verbs_however_they_are_passed() -> None:
    """The checker can fail: positional, keyword and client-method writes are all seen."""
    probe = (
        "pool.request('PATCH', url)\n"
        "urllib.request.Request(url, method='DELETE')\n"
        "api.create_namespaced_config_map(ns, body)\n"
        "x = 'POST'\n"  # a constant not sent anywhere is no write
    )
    assert write_calls(probe) == [
        "line 1: PATCH",
        "line 2: DELETE",
        "line 3: create_namespaced_config_map",
    ]
