"""PodDisruptionBudgets: the disruption controller's count and the Eviction API's rule."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod, pdb, scaled
from webhook.audit.measure.budgets import Budgets, BudgetStatus, scaled_value
from webhook.audit.state.inventory import ClusterState

RawObj = dict[str, Any]
WEB = {"app": "web"}


def web(
    name: str, ready: str = "True", owner: tuple[str, str] | None = ("ReplicaSet", "web-rs")
) -> RawObj:
    b = make_pod().name(name).labels(WEB).node("n1").ready(ready)
    if owner is not None:
        b = b.owner(*owner)
    return b.obj()


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}


def budgets(*objects: RawObj) -> Budgets:
    return Budgets.from_state(ClusterState.from_objects([NODE, *objects]))


def rs(replicas: int) -> RawObj:
    return scaled("ReplicaSet", "web-rs", replicas)


@pytest.mark.parametrize(
    ("value", "total", "round_up", "want"),
    [
        (3, 10, True, 3),
        ("50%", 3, True, 2),  # 1.5 rounded up
        ("50%", 3, False, 1),
        ("34%", 3, True, 2),  # 1.02 rounded up
        ("0%", 7, True, 0),
        ("100%", 7, True, 7),
    ],
)
def test_scaled_value(value: Any, total: int, round_up: bool, want: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == want


@pytest.mark.parametrize("value", ["50", "x%", True, None])
def test_scaled_value_refuses_what_intstr_refuses(value: Any) -> None:
    with pytest.raises(ValueError, match="invalid value for IntOrString"):
        scaled_value(value, 3)


# Legend: pods "RRU" = two Ready pods and one not Ready; scale = the ReplicaSet's
# spec.replicas (the expected count of maxUnavailable and percents).
@pytest.mark.parametrize(
    ("name", "budget", "pods", "scale", "want"),
    [
        ("minAvailable int 2, RRR", {"min_available": 2}, "RRR", 3, BudgetStatus(3, 2, 3, 1)),
        (
            "minAvailable int counts pods, not scale",
            {"min_available": 2},
            "RR",
            5,
            BudgetStatus(2, 2, 2, 0),
        ),
        (
            "minAvailable 50% of 3 rounds up to 2",
            {"min_available": "50%"},
            "RRR",
            3,
            BudgetStatus(3, 2, 3, 1),
        ),
        ("minAvailable 100%", {"min_available": "100%"}, "RRR", 3, BudgetStatus(3, 3, 3, 0)),
        ("maxUnavailable 1 of 3", {"max_unavailable": 1}, "RRR", 3, BudgetStatus(3, 2, 3, 1)),
        (
            "maxUnavailable 34% of 3 rounds up to 2",
            {"max_unavailable": "34%"},
            "RRR",
            3,
            BudgetStatus(3, 1, 3, 2),
        ),
        ("maxUnavailable 0%", {"max_unavailable": "0%"}, "RRR", 3, BudgetStatus(3, 3, 3, 0)),
        (
            "maxUnavailable expects the scale, not the pods",
            {"max_unavailable": 1},
            "RRR",
            5,
            BudgetStatus(5, 4, 3, 0),
        ),
        (
            "a pod not Ready is not healthy",
            {"min_available": 2},
            "RRU",
            3,
            BudgetStatus(3, 2, 2, 0),
        ),
        (
            "neither field: nothing expected, nothing allowed",
            {},
            "RRR",
            3,
            BudgetStatus(0, 0, 3, 0),
        ),
    ],
)
def test_the_disruption_controllers_count(
    name: str, budget: dict[str, Any], pods: str, scale: int, want: BudgetStatus
) -> None:
    objects = [web(f"web-{i}", "True" if c == "R" else "False") for i, c in enumerate(pods)]
    b = budgets(rs(scale), pdb("web", WEB, **budget), *objects)
    assert b.status("default/web") == want, name


def test_a_deployments_replicaset_counts_the_deployments_scale() -> None:
    owned = rs(3)
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": "u",
            "controller": True,
        }
    ]
    b = budgets(
        owned,
        scaled("Deployment", "web", 4),
        pdb("web", WEB, max_unavailable=1),
        web("w0"),
        web("w1"),
        web("w2"),
    )
    assert b.status("default/web") == BudgetStatus(4, 3, 3, 0)


def test_a_controller_without_a_scale_fails_the_budget() -> None:
    """A Job has no scale: a percent (or maxUnavailable) budget over its pods allows nothing."""
    job = scaled("Job", "batch", None)
    pods = [web(f"w{i}", owner=("Job", "batch")) for i in range(3)]
    status = budgets(job, pdb("web", WEB, max_unavailable="50%"), *pods).status("default/web")
    assert (status.allowed, status.error) == (0, 'found no controllers for pod "w0"')


def test_bare_pods_are_left_out_of_the_scale() -> None:
    b = budgets(
        rs(2), pdb("web", WEB, max_unavailable=1), web("w0"), web("w1"), web("bare", owner=None)
    )
    assert b.status("default/web") == BudgetStatus(2, 1, 3, 2)


# ---- the Eviction API -------------------------------------------------------------------


def test_ready_pod_needs_a_disruption_allowed() -> None:
    b = budgets(rs(2), pdb("web", WEB, min_available=2), web("w0"), web("w1"))
    assert b.blocker(web("w0")) == "default/web"


def test_unready_pod_goes_while_the_budget_is_met_default_policy() -> None:
    """IfHealthyBudget (the default): an unready pod may go while healthy >= desired > 0,
    even with no disruption allowed; a Ready one may not."""
    pods = [web("w0"), web("w1"), web("w2", ready="False")]
    b = budgets(rs(3), pdb("web", WEB, min_available=2), *pods)
    assert b.status("default/web").allowed == 0
    assert b.blocker(pods[2]) is None
    assert b.blocker(pods[0]) == "default/web"


@pytest.mark.parametrize(
    ("policy", "blocked"), [(None, True), ("IfHealthyBudget", True), ("AlwaysAllow", False)]
)
def test_unready_pod_below_the_budget(policy: str | None, blocked: bool) -> None:
    pods = [web("w0"), web("w1", ready="False"), web("w2", ready="False")]
    b = budgets(
        rs(3), pdb("web", WEB, min_available=2, unhealthy_pod_eviction_policy=policy), *pods
    )
    assert (b.blocker(pods[1]) is not None) is blocked


@pytest.mark.parametrize(
    ("selector", "guards"),
    [(WEB, True), ({}, False), (None, False), ({"app": "db"}, False)],
)
def test_which_budgets_guard_an_eviction(selector: dict[str, str] | None, guards: bool) -> None:
    """eviction.go: a nil or empty selector guards nothing (policy/v1's empty selector
    counts every pod for the controller, but the Eviction API skips it)."""
    b = budgets(rs(1), pdb("web", selector, max_unavailable=0), web("w0"))
    assert (b.blocker(web("w0")) is not None) is guards


def test_two_budgets_on_one_pod_refuse_every_eviction() -> None:
    b = budgets(
        rs(3),
        pdb("a", WEB, max_unavailable=3),
        pdb("b", WEB, max_unavailable=3),
        web("w0"),
        web("w1"),
        web("w2"),
    )
    assert b.blocker(web("w0")) == "default/a, default/b"


def test_pending_and_terminating_pods_skip_budgets() -> None:
    b = budgets(rs(1), pdb("web", WEB, max_unavailable=0), web("w0"))
    pending = make_pod().name("p").labels(WEB).phase("Pending").obj()
    terminating = make_pod().name("t").labels(WEB).terminating().obj()
    assert b.blocker(pending) is None and b.blocker(terminating) is None


def test_counts_follow_evictions_and_placements() -> None:
    b = budgets(rs(2), pdb("web", WEB, max_unavailable=1), web("w0"), web("w1"))
    assert b.blocker(web("w1")) is None
    b.remove("default/w0")
    b.add(web("w0-new", ready="False"), healthy=False)
    assert b.blocker(web("w1")) == "default/web"  # the replacement is not Ready yet
    b.set_healthy("default/w0-new", True)
    assert b.blocker(web("w1")) is None
