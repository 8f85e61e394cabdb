"""Carrying out the plan: the decisions (tables), then `audit --plan --apply` and the
audit Deployment's rebalancing against tests/fake_apiserver.py, whose Eviction
subresource answers as kube-apiserver does and whose `on_eviction` hook is the test's
controller and scheduler: it creates the replacement and binds it where the test says.

Legend: the cluster has two nodes per zone (a1 a2 / b1 b2 / c1 c2); Deployment
shop/web runs six Ready pods `4/1/1` per zone under one zone DoNotSchedule
constraint of maxSkew 1, so the plan is two evictions: one pod of zone a to b, one
to c. Time is a FakeTime: sleep() moves the clock, nothing waits for real.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.builders import DNS, ZONE, make_node, make_pod, selector
from tests.cli.test_live import kubeconfig
from tests.fake_apiserver import EVICTION_MESSAGE, FakeApiServer
from webhook.audit.act.applier import Applier, ApplyOptions, Rebalancer
from webhook.audit.act.evictor import LiveCluster, Seen, seen_from
from webhook.audit.act.steps import (
    EVICTED,
    GONE,
    MATCHED,
    NONE_YET,
    NOT_READY,
    READY,
    REFUSED,
    STEP_OUTCOMES,
    UNBOUND,
    EntryPrediction,
    Observation,
    Prediction,
    backoff,
    compare,
    eviction_answer,
    replacement,
    workloads_in_flight,
)
from webhook.audit.measure.spread import evaluate
from webhook.audit.plan.planner import Move, make_plan
from webhook.audit.report.metrics import REBALANCE_RESULTS, AuditMetrics
from webhook.audit.serve.loop import AuditLoop, AuditStopped
from webhook.audit.state.inventory import Workload
from webhook.cli.audit import _rebalancer
from webhook.cli.main import main
from webhook.cluster.lister import connect
from webhook.config import AuditSettings, RebalanceSettings, Settings, settings_from_dict
from webhook.errors import ConfigError

RawObj = dict[str, Any]
WEB = Workload("shop", "Deployment", "web")


# ---- the decisions, pure ----------------------------------------------------------------------

BUDGET_CAUSE = "The disruption budget web needs 6 healthy pods and has 6 currently"


@pytest.mark.parametrize(
    ("status", "body", "kind", "budget"),
    [
        pytest.param(201, {"kind": "Status", "status": "Success"}, EVICTED, None, id="201"),
        pytest.param(
            429,
            {
                "message": EVICTION_MESSAGE,
                "reason": "TooManyRequests",
                "details": {"causes": [{"reason": "DisruptionBudget", "message": BUDGET_CAUSE}]},
            },
            REFUSED,
            "shop/web",
            id="429 with the budget's cause",
        ),
        pytest.param(429, {"message": EVICTION_MESSAGE}, REFUSED, None, id="429 without a cause"),
        pytest.param(404, {"message": 'pods "web-0" not found'}, GONE, None, id="404"),
        pytest.param(409, {"message": "Precondition failed"}, "conflict", None, id="409"),
        pytest.param(403, {"message": "forbidden"}, "failed", None, id="403"),
        pytest.param(500, "not json", "failed", None, id="500 without a Status"),
    ],
)
def test_eviction_answers(status: int, body: Any, kind: str, budget: str | None) -> None:
    """Each answer of the Eviction API as one outcome; a refusal names its budget."""
    answer = eviction_answer(status, body, "shop")
    assert (answer.kind, answer.budget) == (kind, budget)
    if status == 429 and budget:
        assert answer.message == f"{EVICTION_MESSAGE} {BUDGET_CAUSE}"


@pytest.mark.parametrize(
    ("first", "cap", "bound", "waits"),
    [
        (1, 16, 60, [1, 2, 4, 8, 16, 16, 13]),
        (1, 16, 5, [1, 2, 2]),
        (1, 16, 0, []),
        (2, 3, 10, [2, 3, 3, 2]),
    ],
)
def test_backoff_doubles_up_to_the_cap_and_adds_up_to_the_bound(
    first: float, cap: float, bound: float, waits: list[float]
) -> None:
    assert backoff(first, cap, bound) == waits
    assert sum(waits) == bound


ENTRY = EntryPrediction("k", "Deployment shop/web [0] zone", ZONE, "b", 1)
PREDICTION = Prediction(Move("shop/web-0", "a1", "b1"), [ENTRY])


@pytest.mark.parametrize(
    ("observed", "differences"),
    [
        pytest.param(Observation("shop/web-r0", "b2", {"k": "b"}, {"k": 1}), [], id="as planned"),
        pytest.param(
            Observation("shop/web-r0", "a2", {"k": "a"}, {"k": 2}),
            [
                f"the replacement shop/web-r0 landed on a2: {ZONE} a, not b as planned",
                "Deployment shop/web [0] zone: skew 2 after the step, 1 predicted",
            ],
            id="another domain, another skew",
        ),
        pytest.param(
            Observation("shop/web-r0", "c1", {"k": "c"}, {"k": 1}),
            [f"the replacement shop/web-r0 landed on c1: {ZONE} c, not b as planned"],
            id="another domain, the same skew: still a difference",
        ),
        pytest.param(
            Observation("shop/web-r0", "b1", {"k": "b"}, {}),
            ["Deployment shop/web [0] zone: no longer audited after the step"],
            id="the entry is gone",
        ),
    ],
)
def test_compare(observed: Observation, differences: list[str]) -> None:
    assert compare(PREDICTION, observed) == differences


def pod(name: str, uid: str, **kw: Any) -> RawObj:
    b = make_pod().name(name).namespace("shop").uid(uid).label("app", "web")
    b = b.owner("ReplicaSet", "web-5d9c")
    if kw.get("node"):
        b = b.node(kw["node"])
    if kw.get("ready") is not None:
        b = b.ready(kw["ready"])
    if kw.get("phase"):
        b = b.phase(kw["phase"])
    if kw.get("terminating"):
        b = b.terminating()
    return b.obj()


def workload_of(p: RawObj) -> Workload:
    ref = p["metadata"].get("ownerReferences")
    if not ref:
        return Workload("shop", "Pod", p["metadata"]["name"])
    return WEB


@pytest.mark.parametrize(
    ("pods", "stage", "name"),
    [
        pytest.param([pod("web-0", "u0", node="a1", ready="True")], NONE_YET, None, id="none new"),
        pytest.param(
            [pod("web-x", "u9", phase="Pending")], UNBOUND, "web-x", id="created, not bound"
        ),
        pytest.param(
            [pod("web-x", "u9", node="b1", ready="False")], NOT_READY, "web-x", id="bound"
        ),
        pytest.param(
            [pod("web-x", "u9", node="b1", ready="True")], READY, "web-x", id="bound and Ready"
        ),
        pytest.param(
            [pod("web-0", "u9", node="b1", ready="True")],
            READY,
            "web-0",
            id="a StatefulSet's: the same name, another uid",
        ),
        pytest.param(
            [pod("web-x", "u9", node="b1", ready="True", terminating=True)],
            NONE_YET,
            None,
            id="terminating is no replacement",
        ),
        pytest.param(
            [pod("web-y", "u8", phase="Pending"), pod("web-x", "u9", node="b1", ready="True")],
            READY,
            "web-x",
            id="the furthest along",
        ),
    ],
)
def test_replacement(pods: list[RawObj], stage: str, name: str | None) -> None:
    """A pod of the workload whose uid was not there before, as far along as any."""
    got_stage, got = replacement({"u0"}, pods, WEB, workload_of)
    assert got_stage == stage
    assert (got["metadata"]["name"] if got else None) == name


@pytest.mark.parametrize(
    ("pods", "busy"),
    [
        pytest.param([pod("web-0", "u0", node="a1", ready="True")], {}, id="settled"),
        pytest.param(
            [pod("web-0", "u0", node="a1", ready="True", terminating=True)],
            {WEB: "pod shop/web-0 is terminating (an eviction in flight)"},
            id="an eviction in flight",
        ),
        pytest.param(
            [pod("web-1", "u1", phase="Pending")],
            {WEB: "pod shop/web-1 is not bound"},
            id="a pending pod",
        ),
        pytest.param(
            [pod("web-1", "u1", node="a1", ready="False")],
            {WEB: "pod shop/web-1 is not Ready"},
            id="a replacement not Ready yet",
        ),
        pytest.param(
            [pod("web-1", "u1", node="a1", ready="False", phase="Succeeded")],
            {},
            id="a finished pod does not count",
        ),
    ],
)
def test_workloads_in_flight(pods: list[RawObj], busy: dict[Workload, str]) -> None:
    assert workloads_in_flight(pods, workload_of) == busy


# ---- against the fake API server --------------------------------------------------------------

NODES = [("a", 1), ("a", 2), ("b", 1), ("b", 2), ("c", 1), ("c", 2)]


def cluster_objects(*, budget: int | None = None) -> list[RawObj]:
    """The legend's cluster; with `budget`, a PodDisruptionBudget maxUnavailable 1 whose
    status says `budget` disruptions are allowed."""
    objects: list[RawObj] = [make_node().name(f"{z}{i}").zone(z).hostname().obj() for z, i in NODES]
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web"},
            "spec": {"replicas": 6},
        }
    )
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-5d9c",
                "namespace": "shop",
                "uid": "uid-web-5d9c",
                "ownerReferences": [
                    {"kind": "Deployment", "name": "web", "uid": "uid-web", "controller": True}
                ],
            },
            "spec": {"replicas": 6},
        }
    )
    for i, node in enumerate(["a1", "a1", "a2", "a2", "b1", "c1"]):
        objects.append(web_pod(f"web-{i}", node))
    if budget is not None:
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
                "status": {"disruptionsAllowed": budget, "desiredHealthy": 5, "currentHealthy": 5},
            }
        )
    return objects


def web_pod(name: str, node: str | None, ready: bool = True) -> RawObj:
    b = (
        make_pod()
        .name(name)
        .namespace("shop")
        .label("app", "web")
        .owner("ReplicaSet", "web-5d9c", uid="uid-web-5d9c")
        .spread(1, ZONE, DNS, selector({"app": "web"}))
    )
    if node is not None:
        b = b.node(node).ready("True" if ready else "False")
    else:
        b = b.phase("Pending")
    return b.obj()


class TestScheduler:
    """The ReplicaSet controller and kube-scheduler of a test: on each eviction, a
    replacement `web-rN` bound to the next node of `nodes` and Ready (or, with `hold`,
    created Pending until release())."""

    __test__ = False

    def __init__(self, server: FakeApiServer, nodes: list[str], *, hold: bool = False) -> None:
        self.server = server
        self.nodes = list(nodes)
        self.hold = hold
        self.held: list[tuple[RawObj, str]] = []
        self.made = 0
        server.on_eviction = self

    def __call__(self, evicted: RawObj) -> None:
        name = f"web-r{self.made}"
        node = self.nodes[self.made]
        self.made += 1
        if self.hold:
            self.held.append((self.server.add(web_pod(name, None)), node))
        else:
            self.server.add(web_pod(name, node))

    def release(self) -> None:
        """The kubelet finishes: terminating pods go, held replacements bind, Ready."""
        for p in self.server.current("Pod"):
            if "deletionTimestamp" in p["metadata"]:
                p["kind"] = "Pod"
                self.server.delete(p)
        for held, node in self.held:
            bound = web_pod(held["metadata"]["name"], node)
            self.server.modify(bound)
        self.held.clear()


class FakeTime:
    """A clock that sleep() moves; `waits` records every sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def load(server: FakeApiServer, objects: list[RawObj]) -> None:
    for obj in objects:
        server.add(obj)


def live(server: FakeApiServer, tmp_path: Path) -> LiveCluster:
    return LiveCluster(connect(kubeconfig=kubeconfig(tmp_path, server.url)))


def planned(objects: list[RawObj]) -> list[Move]:
    """The plan of the legend's cluster, made offline from the same objects."""
    seen = seen_from(objects)
    spreads = evaluate(seen.state)
    return make_plan(seen.state, spreads, Settings()).moves


def run_apply(
    cluster: LiveCluster,
    options: ApplyOptions,
    time_: FakeTime,
    progress: list[str] | None = None,
) -> tuple[Any, Seen]:
    seen = cluster.read()
    spreads = evaluate(seen.state)
    plan = make_plan(seen.state, spreads, Settings())
    applier = Applier(
        cluster,
        Settings(),
        options,
        clock=time_.clock,
        sleep=time_.sleep,
        progress=None if progress is None else progress.append,
    )
    return applier.run(seen, plan, spreads), seen


def zone_counts(server: FakeApiServer) -> dict[str, int]:
    zone = {f"{z}{i}": z for z, i in NODES}
    out = {"a": 0, "b": 0, "c": 0}
    for p in server.current("Pod"):
        if "deletionTimestamp" not in p["metadata"] and p["spec"].get("nodeName"):
            out[zone[p["spec"]["nodeName"]]] += 1
    return out


def test_the_plan_is_two_evictions_from_zone_a() -> None:
    """The legend's plan, as the tests below rely on it."""
    moves = planned(cluster_objects())
    assert [(m.from_node[0], m.to_node[0]) for m in moves] in (
        [("a", "b"), ("a", "c")],
        [("a", "c"), ("a", "b")],
    )


def test_a_complete_plan(server: FakeApiServer, tmp_path: Path) -> None:
    """Each replacement lands on the plan's node: two evictions, each step matched (its
    domain and the skew after it as predicted), the spread 2/2/2, outcome completed."""
    objects = cluster_objects()
    load(server, objects)
    TestScheduler(server, [m.to_node for m in planned(objects)])
    result, _ = run_apply(live(server, tmp_path), ApplyOptions(), FakeTime())
    assert result.outcome == "completed" and result.exit_code == 0
    assert [s.result for s in result.steps] == ["matched", "matched"]
    assert [s.prediction.entries[0].skew for s in result.steps if s.prediction] == [2, 0]
    assert [status for _, status in server.evictions()] == [201, 201]
    assert zone_counts(server) == {"a": 2, "b": 2, "c": 2}
    first = result.steps[0].to_json()
    assert first["request"]["kind"] == "Eviction"
    assert first["request"]["deleteOptions"]["preconditions"]["uid"]
    assert first["observed"]["skews"] == first["predicted"]["skews"]


def test_a_replacement_in_another_domain_stops_the_run(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """The scheduler sends the first replacement back to zone a: the step differs
    (domain and skew), the run stops before the second eviction, outcome difference."""
    load(server, cluster_objects())
    TestScheduler(server, ["a2", "a2"])
    result, _ = run_apply(live(server, tmp_path), ApplyOptions(), FakeTime())
    assert result.outcome == "difference" and result.exit_code == 3
    assert len(server.evictions()) == 1
    (step,) = result.steps
    assert step.result == "differed"
    assert step.differences[0].startswith(
        f"the replacement shop/web-r0 landed on a2: {ZONE} a, not "
    )
    assert len(step.differences) == 2
    assert any("skew 3 after the step, 2 predicted" in d for d in step.differences)


def test_replan_goes_on_from_what_the_cluster_did(server: FakeApiServer, tmp_path: Path) -> None:
    """With replan, the difference makes a new plan from the state seen, carried out."""
    objects = cluster_objects()
    load(server, objects)
    TestScheduler(server, ["a2", "b2", "c2"])
    options = ApplyOptions(replan=True, max_evictions=3)
    result, _ = run_apply(live(server, tmp_path), options, FakeTime())
    assert [s.result for s in result.steps] == ["differed", "matched", "matched"]
    assert result.outcome == "completed" and result.plans == 2
    assert result.reason == "every step carried out as predicted (the last of 2 plans)"
    assert zone_counts(server) == {"a": 2, "b": 2, "c": 2}


def test_a_budget_at_zero_is_retried_then_named(server: FakeApiServer, tmp_path: Path) -> None:
    """429 at every try: retried after 1, 2 and 2 s (budget_wait 5), then the run stops
    naming the budget; no pod was evicted."""
    load(server, cluster_objects(budget=0))
    TestScheduler(server, ["b2", "c2"])
    time_ = FakeTime()
    result, _ = run_apply(live(server, tmp_path), ApplyOptions(budget_wait=5), time_)
    assert result.outcome == "budget" and result.exit_code == 4
    assert time_.waits == [1, 2, 2]
    assert [status for _, status in server.evictions()] == [429] * 4
    assert "refused by PodDisruptionBudget shop/web" in result.reason
    assert "needs 5 healthy pods and has 5 currently" in result.reason
    assert zone_counts(server) == {"a": 4, "b": 1, "c": 1}


def test_a_budget_that_opens_lets_the_step_go_on(server: FakeApiServer, tmp_path: Path) -> None:
    """The budget allows one disruption after the first refusal: the retry succeeds."""
    objects = cluster_objects(budget=0)
    load(server, objects)
    TestScheduler(server, [m.to_node for m in planned(objects)])
    cluster = live(server, tmp_path)
    time_ = FakeTime()

    def sleep(seconds: float) -> None:
        time_.sleep(seconds)
        pdb = server.current("PodDisruptionBudget")[0]
        pdb["kind"] = "PodDisruptionBudget"
        pdb["status"]["disruptionsAllowed"] = 1
        server.modify(pdb)

    seen = cluster.read()
    spreads = evaluate(seen.state)
    plan = make_plan(seen.state, spreads, Settings())
    result = Applier(
        cluster, Settings(), ApplyOptions(max_evictions=1), clock=time_.clock, sleep=sleep
    ).run(seen, plan, spreads)
    assert [status for _, status in server.evictions()] == [429, 201]
    assert result.outcome == "completed" and result.steps[0].result == "matched"


def test_max_evictions(server: FakeApiServer, tmp_path: Path) -> None:
    """--max-evictions 1: one eviction of the two, the run ends there, completed."""
    objects = cluster_objects()
    load(server, objects)
    TestScheduler(server, [m.to_node for m in planned(objects)])
    result, _ = run_apply(live(server, tmp_path), ApplyOptions(max_evictions=1), FakeTime())
    assert result.outcome == "completed" and result.evictions == 1
    assert result.reason == "stopped at the limit of 1 eviction(s)"
    assert len(server.evictions()) == 1


def test_a_replacement_never_ready_times_out(server: FakeApiServer, tmp_path: Path) -> None:
    """The replacement stays Pending: after step_timeout the step stops, naming it."""
    load(server, cluster_objects())
    TestScheduler(server, ["b2", "c2"], hold=True)
    time_ = FakeTime()
    said: list[str] = []
    options = ApplyOptions(step_timeout=10, poll=2)
    result, _ = run_apply(live(server, tmp_path), options, time_, said)
    assert said == ["shop/web-0 evicted; its replacement is not bound"] * 5
    assert result.outcome == "difference"
    assert result.steps[0].result == "timeout"
    assert result.reason == "the replacement of shop/web-0 is not bound (shop/web-r0) after 10 s"
    assert sum(time_.waits) == 10


def test_a_pod_already_gone_is_a_difference(server: FakeApiServer, tmp_path: Path) -> None:
    """The plan's pod was deleted between the read and its eviction: 404, no replacement
    awaited."""
    load(server, cluster_objects())
    cluster = live(server, tmp_path)
    seen = cluster.read()
    spreads = evaluate(seen.state)
    plan = make_plan(seen.state, spreads, Settings())
    first = plan.moves[0].pod.partition("/")[2]
    original = cluster.pods

    def pods_then_delete(ns: str) -> list[RawObj]:
        got = original(ns)
        gone = next(p for p in server.current("Pod") if p["metadata"]["name"] == first)
        server.delete({**gone, "kind": "Pod"})
        return got

    cluster.pods = pods_then_delete  # type: ignore[method-assign]
    time_ = FakeTime()
    result = Applier(cluster, Settings(), ApplyOptions(), clock=time_.clock, sleep=time_.sleep).run(
        seen, plan, spreads
    )
    assert result.steps[0].result == "gone"
    assert server.evictions() == [(f"shop/{first}", 404)]


@pytest.mark.parametrize("status", [403, 500])
def test_an_eviction_refused_otherwise_is_an_error(
    server: FakeApiServer, tmp_path: Path, status: int
) -> None:
    """Not a 429 (RBAC missing, a server error): no retry, the run ends as an error."""
    load(server, cluster_objects())
    server.fail_next("Eviction", status)
    result, _ = run_apply(live(server, tmp_path), ApplyOptions(), FakeTime())
    assert result.outcome == "error" and result.exit_code == 2
    assert result.steps[0].result == "error"
    assert f"failed: HTTP {status}: scripted {status}" in result.reason
    assert server.evictions() == []  # the scripted answer came before the subresource


# ---- the CLI ------------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_apply_with_yes_text_and_record(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`audit --plan --apply --yes`: the plan, a ✓ line per step, the summary, exit 0;
    --record has one JSON line per step with its request, answers and comparison."""
    objects = cluster_objects()
    load(server, objects)
    moves = planned(objects)
    TestScheduler(server, [m.to_node for m in moves])
    record = tmp_path / "steps.jsonl"
    config = kubeconfig(tmp_path, server.url)
    code, out, err = run_cli(
        capsys,
        "audit", "--kubeconfig", config, "--plan", "--apply", "--yes", "--record", str(record),
    )  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert f"  evict {moves[0].pod}   # {moves[0].from_node} -> {moves[0].to_node}" in lines
    steps = [line for line in lines if line.startswith(("✓", "✗"))]
    assert len(steps) == 2 and all(s.startswith("✓ ") for s in steps), out
    assert steps[0].startswith(f"✓ 1/2 evict {moves[0].pod} ({moves[0].from_node} -> ")
    assert lines[-1].startswith("plan carried out: 2 eviction(s), every step as predicted")
    got = [json.loads(line) for line in record.read_text().splitlines()]
    assert [g["result"] for g in got] == ["matched", "matched"]
    assert got[0]["answers"] == [{"status": 201, "result": "evicted"}]
    assert got[0]["predicted"]["skews"] == got[0]["observed"]["skews"]


def test_cli_apply_json_stops_on_a_difference(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o json: the audit document with `apply`; a difference exits 3."""
    load(server, cluster_objects())
    TestScheduler(server, ["a2", "a2"])
    config = kubeconfig(tmp_path, server.url)
    code, out, _ = run_cli(
        capsys, "audit", "--kubeconfig", config, "--apply", "--yes", "-o", "json"
    )
    assert code == 3
    doc = json.loads(out)
    assert len(doc["plan"]) == 2 and doc["violations"] == 1
    assert doc["apply"]["outcome"] == "difference"
    assert [s["result"] for s in doc["apply"]["steps"]] == ["differed"]


def test_cli_apply_without_a_terminal_or_yes_only_prints(
    server: FakeApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No terminal, no --yes: the plan printed, nothing evicted, the audit's status (1)."""
    load(server, cluster_objects())
    config = kubeconfig(tmp_path, server.url)
    (tmp_path / "stdin").write_text("y\n")
    with open(tmp_path / "stdin", encoding="utf-8") as stdin:  # a file, not a terminal
        monkeypatch.setattr("sys.stdin", stdin)
        code, out, err = run_cli(capsys, "audit", "--kubeconfig", config, "--plan", "--apply")
    assert code == 1
    assert "evict shop/web-" in out
    assert "not carried out: no terminal to confirm on; give --yes" in err
    assert server.evictions() == []


def test_cli_max_evictions(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-evictions 1: one step, then the summary says where it stopped; exit 0."""
    objects = cluster_objects()
    load(server, objects)
    TestScheduler(server, [m.to_node for m in planned(objects)])
    config = kubeconfig(tmp_path, server.url)
    code, out, _ = run_cli(
        capsys, "audit", "--kubeconfig", config, "--apply", "--yes", "--max-evictions", "1"
    )
    assert code == 0
    assert out.splitlines()[-1] == (
        "stopped at the limit of 1 eviction(s): 1 eviction(s), every one as predicted"
    )
    assert len(server.evictions()) == 1


def test_cli_apply_stops_on_a_budget_with_status_4(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--budget-wait 0: the first 429 ends the run, naming the budget; exit 4."""
    load(server, cluster_objects(budget=0))
    config = kubeconfig(tmp_path, server.url)
    code, out, _ = run_cli(
        capsys, "audit", "--kubeconfig", config, "--apply", "--yes", "--budget-wait", "0"
    )
    assert code == 4
    last = out.splitlines()[-1]
    assert last.startswith("stopped (budget) after 0 eviction(s): the eviction of shop/web-")
    assert "refused by PodDisruptionBudget shop/web for 0 s (1 try)" in last
    assert [status for _, status in server.evictions()] == [429]


def test_cli_record_to_an_unwritable_file_evicts_nothing(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    load(server, cluster_objects())
    config = kubeconfig(tmp_path, server.url)
    record = str(tmp_path / "missing" / "steps.jsonl")
    code, _, err = run_cli(
        capsys, "audit", "--kubeconfig", config, "--apply", "--yes", "--record", record
    )
    assert code == 2
    assert f"--record {record}: No such file or directory" in err
    assert server.evictions() == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--snapshot", "x.json"], "--apply evicts pods of a live cluster"),
        (["--drain-nodes", "zone=a"], "--apply carries out the plan of the current state"),
        (["--max-evictions", "0"], "--max-evictions: must be 1 or more, got 0"),
        (["--interval", "-1"], "--interval: must be 0 or more seconds"),
        (["--step-timeout", "0"], "--step-timeout: must be more than 0 seconds"),
        (["--budget-wait", "-1"], "--budget-wait: must be 0 or more seconds"),
        (["-o", "html"], "--apply prints text or json"),
        (["--watch"], "--apply is for a one-shot audit"),
    ],
)
def test_cli_apply_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Refused before anything is read: exit 2 and one line."""
    code, _, err = run_cli(capsys, "audit", "--plan", "--apply", *argv)
    assert code == 2
    assert message in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--yes"], "--yes: only with --apply"),
        (["--plan", "--max-evictions", "2", "--record", "x"], "--max-evictions, --record: only"),
        (["--watch", "--interval", "5"], "--interval: only with --apply"),
        (["--rebalance"], "--rebalance: only with --watch"),
        (["--rebalance-namespaces", "shop"], "--rebalance-namespaces: only with --watch"),
    ],
)
def test_mode_flags_without_their_mode_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flag of --apply or --watch given without it is refused, never ignored."""
    code, _, err = run_cli(capsys, "audit", "--snapshot", "x.json", *argv)
    assert code == 2
    assert message in err


# ---- the audit Deployment -----------------------------------------------------------------------


class Crash(Exception):
    """The process is killed (the audit Deployment's pod restarted) mid-step."""


def test_a_restart_mid_step_repeats_no_step_and_doubles_no_eviction(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """The first process evicts, then dies while the replacement is Pending and the
    evicted pod terminating. The restarted process sees the workload unsettled and
    evicts nothing; once the kubelet and scheduler are done, it carries out the one
    remaining step with another pod. Every pod is evicted at most once."""
    objects = cluster_objects()
    load(server, objects)
    moves = planned(objects)
    server.eviction_grace = True
    scheduler = TestScheduler(server, [m.to_node for m in moves], hold=True)
    cluster = live(server, tmp_path)
    rebalance = RebalanceSettings(enabled=True, max_evictions_per_run=2)

    def crash(_seconds: float) -> None:
        raise Crash()

    first = Rebalancer(cluster, Settings(), rebalance, sleep=crash)
    with pytest.raises(Crash):
        first.run_once()
    assert server.evictions() == [(moves[0].pod, 201)]

    time_ = FakeTime()
    counted: list[str] = []
    restarted = Rebalancer(
        cluster, Settings(), rebalance, count=counted.append, clock=time_.clock, sleep=time_.sleep
    )
    assert restarted.run_once() is None  # shop/web is not settled: nothing evicted
    assert len(server.evictions()) == 1

    scheduler.release()
    scheduler.hold = False
    server.eviction_grace = False
    result = restarted.run_once()
    assert result is not None and [s.result for s in result.steps] == ["matched"]
    evicted = [pod for pod, _ in server.evictions()]
    assert len(evicted) == 2 and len(set(evicted)) == 2
    assert counted == ["matched"]
    assert zone_counts(server) == {"a": 2, "b": 2, "c": 2}
    assert restarted.run_once() is None  # nothing violated any more


def test_rebalance_keeps_to_its_namespaces(server: FakeApiServer, tmp_path: Path) -> None:
    """audit.rebalance.namespaces without shop: shop/web is not touched."""
    load(server, cluster_objects())
    rebalance = RebalanceSettings(enabled=True, namespaces=("blog",))
    assert Rebalancer(live(server, tmp_path), Settings(), rebalance).run_once() is None
    assert server.evictions() == []


def test_the_audit_loop_rebalances_after_each_audit_and_counts(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """One step per audit (maxEvictionsPerRun 1): two audits, two evictions, each
    counted in topospread_rebalance_evictions_total{result="matched"}."""
    objects = cluster_objects()
    load(server, objects)
    TestScheduler(server, [m.to_node for m in planned(objects)])
    cluster = live(server, tmp_path)
    metrics = AuditMetrics(rebalance=True)
    time_ = FakeTime()
    rebalancer = Rebalancer(
        cluster,
        Settings(),
        RebalanceSettings(enabled=True),
        count=metrics.count_rebalance,
        clock=time_.clock,
        sleep=time_.sleep,
    )
    loop = AuditLoop(lambda: cluster.read().state, Settings(), metrics, rebalancer=rebalancer)
    for _ in range(3):
        assert loop.run_once() is not None
    assert len(server.evictions()) == 2
    text = metrics.exposition().decode()
    assert 'topospread_rebalance_evictions_total{result="matched"} 2.0' in text
    assert 'topospread_rebalance_evictions_total{result="budget"} 0.0' in text


def test_the_loop_survives_a_stopped_or_failing_rebalance() -> None:
    """AuditStopped (SIGTERM mid-step) ends the round quietly; an error is logged; the
    audit stands either way."""

    class Failing:
        def __init__(self, exc: BaseException) -> None:
            self.exc = exc

        def run_once(self) -> object:
            raise self.exc

    seen = seen_from(cluster_objects())
    for exc in (AuditStopped(), RuntimeError("bug")):
        loop = AuditLoop(lambda: seen.state, Settings(), AuditMetrics(), rebalancer=Failing(exc))
        assert loop.run_once() is not None


def test_the_rebalance_metric_exists_only_when_enabled() -> None:
    assert b"topospread_rebalance_evictions" not in AuditMetrics().exposition()
    assert b"topospread_rebalance_evictions_total" in AuditMetrics(rebalance=True).exposition()


# ---- audit.rebalance in the config --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, RebalanceSettings()),
        ({}, RebalanceSettings()),
        ({"enabled": True}, RebalanceSettings(enabled=True)),
        (
            {"enabled": True, "maxEvictionsPerRun": 3, "namespaces": ["shop", "blog", "shop"]},
            RebalanceSettings(True, 3, ("shop", "blog")),
        ),
        ({"maxEvictionsPerRun": None, "namespaces": None}, RebalanceSettings()),
    ],
)
def test_rebalance_config_values(raw: Any, expected: RebalanceSettings) -> None:
    """Off by default, one eviction per run, every namespace."""
    doc = {"audit": {} if raw is None else {"rebalance": raw}}
    assert settings_from_dict(doc).audit.rebalance == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("on", "audit.rebalance: must be a mapping, got 'on'"),
        ({"enabled": "yes"}, "audit.rebalance.enabled: must be true or false, got 'yes'"),
        (
            {"maxEvictionsPerRun": 0},
            "audit.rebalance.maxEvictionsPerRun: must be a whole number, 1 or more, got 0",
        ),
        ({"maxEvictionsPerRun": True}, "audit.rebalance.maxEvictionsPerRun: must be a whole"),
        ({"maxEvictionsPerRun": 1.5}, "got 1.5"),
        ({"namespaces": "shop"}, "audit.rebalance.namespaces: must be a list of namespace names"),
        (
            {"namespaces": ["Shop"]},
            "audit.rebalance.namespaces: 'Shop' is not a namespace name: a lowercase RFC 1123 "
            "label must consist of",
        ),
        ({"namespaces": [3]}, "audit.rebalance.namespaces: 3 is not a namespace name"),
        (
            {"maxEvictions": 2},
            "audit.rebalance.maxEvictions: unknown key (known: enabled, maxEvictionsPerRun, "
            "namespaces)",
        ),
    ],
)
def test_rebalance_config_errors_name_the_key(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        settings_from_dict({"audit": {"rebalance": raw}})
    assert message in str(exc.value)


def test_a_step_waits_for_the_evicted_pod_to_go(server: FakeApiServer, tmp_path: Path) -> None:
    """Evicted pods stay terminating until the kubelet is done (here: at the first wait):
    each step waits for that as well as for its replacement, so the next step of the
    same workload finds it settled, and the plan completes."""
    objects = cluster_objects()
    load(server, objects)
    server.eviction_grace = True
    scheduler = TestScheduler(server, [m.to_node for m in planned(objects)])
    cluster = live(server, tmp_path)
    time_ = FakeTime()

    def sleep(seconds: float) -> None:
        time_.sleep(seconds)
        scheduler.release()

    seen = cluster.read()
    spreads = evaluate(seen.state)
    plan = make_plan(seen.state, spreads, Settings())
    options = ApplyOptions(poll=2)
    result = Applier(cluster, Settings(), options, clock=time_.clock, sleep=sleep).run(
        seen, plan, spreads
    )
    assert [s.result for s in result.steps] == ["matched", "matched"]
    assert time_.waits == [2, 2]


def test_a_pod_that_never_goes_times_out(server: FakeApiServer, tmp_path: Path) -> None:
    """The replacement is Ready but the evicted pod stays terminating: the step stops
    after step_timeout saying so."""
    load(server, cluster_objects())
    server.eviction_grace = True
    TestScheduler(server, ["b2", "c2"])
    result, _ = run_apply(live(server, tmp_path), ApplyOptions(step_timeout=4, poll=2), FakeTime())
    assert result.steps[0].result == "timeout"
    assert result.reason == "shop/web-0 is still terminating after 4 s"


def test_every_step_result_has_a_metric_label() -> None:
    assert set(REBALANCE_RESULTS) == {MATCHED, *STEP_OUTCOMES}


def test_the_watch_rebalancer_stops_waiting_on_sigterm(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """`audit --watch --rebalance`: a wait inside a step ends as soon as SIGTERM set
    `stop` (AuditStopped, which the loop takes as a quiet end of the round)."""
    stop = threading.Event()
    conn = connect(kubeconfig=kubeconfig(tmp_path, server.url))
    settings = Settings(audit=AuditSettings(rebalance=RebalanceSettings(enabled=True)))
    rebalancer = _rebalancer(conn, settings, stop)
    assert rebalancer.rebalance == RebalanceSettings(enabled=True)
    stop.set()
    started = time.monotonic()
    with pytest.raises(AuditStopped):
        rebalancer.sleep(30)
    assert time.monotonic() - started < 5
