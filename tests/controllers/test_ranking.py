"""ActivePodsWithRanks.Less and FilterActivePods: upstream's TestSortingActivePodsWithRanks
(controller_utils_test.go) under its own case names, then the rules' boundaries.

Left out of upstream's table: the case run with PodDeletionCost disabled (`high-deletion-
cost` before `low-deletion-cost` by rank): the gate is on by default and the model has
no gates. Upstream's clock is `metav1.Now()`; here a fixed NOW.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.builders import make_pod
from webhook.api.kube import RawObj
from webhook.controllers.ranking import (
    DELETION_COST,
    ActivePodsWithRanks,
    deletion_cost,
    filter_active_pods,
    logarithmic_rank_diff,
    max_container_restarts,
)

NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)


def ts(t: datetime | None) -> str | None:
    return None if t is None else t.strftime("%Y-%m-%dT%H:%M:%SZ")


THEN_1_MONTH = datetime(2026, 10, 27, 12, 0, 0, tzinfo=UTC)
THEN_2_HOURS = NOW - timedelta(hours=2)
THEN_5_HOURS = NOW - timedelta(hours=5)
THEN_8_HOURS = NOW - timedelta(hours=8)


def pod(
    name: str,
    node: str,
    phase: str,
    ready: bool,
    restarts: int,
    ready_since: datetime | None,
    created: datetime | None,
    annotations: dict[str, str] | None = None,
) -> RawObj:
    """Upstream's test helper: a Ready pod gets a Ready condition since `ready_since`
    and one container status with `restarts`."""
    b = make_pod().name(name).phase(phase)
    if node:
        b = b.node(node)
    for k, v in (annotations or {}).items():
        b = b.annotation(k, v)
    out = b.obj()
    if created is not None:
        out["metadata"]["creationTimestamp"] = ts(created)
    if ready:
        cond: dict[str, Any] = {"type": "Ready", "status": "True"}
        if ready_since is not None:
            cond["lastTransitionTime"] = ts(ready_since)
        out["status"]["conditions"] = [cond]
        out["status"]["containerStatuses"] = [{"name": "c", "restartCount": restarts}]
    return out


UNSCHEDULED = pod("unscheduled", "", "Pending", False, 0, None, None)
SCHEDULED_PENDING = pod("pending", "node", "Pending", False, 0, None, None)
UNKNOWN_PHASE = pod("unknown-phase", "node", "Unknown", False, 0, None, None)
RUNNING_NOT_READY = pod("not-ready", "node", "Running", False, 0, None, None)
READY_NO_LTT = pod("ready-no-last-transition-time", "node", "Running", True, 0, None, None)
READY_NOW = pod("ready-now", "node", "Running", True, 0, NOW, NOW)
READY_THEN = pod("ready-then", "node", "Running", True, 0, THEN_1_MONTH, THEN_1_MONTH)
READY_HIGH_RESTARTS = pod("ready-high-restarts", "node", "Running", True, 9001, NOW, NOW)
READY_NOW_CREATED_THEN = pod(
    "ready-now-created-then", "node", "Running", True, 0, NOW, THEN_1_MONTH
)
LOW_COST = pod(
    "low-deletion-cost", "node", "Running", True, 0, NOW, THEN_1_MONTH, {DELETION_COST: "10"}
)
HIGH_COST = pod(
    "high-deletion-cost", "node", "Running", True, 0, NOW, THEN_1_MONTH, {DELETION_COST: "100"}
)
UNSCHEDULED_5H = pod("unscheduled-5-hours", "", "Pending", False, 0, THEN_5_HOURS, THEN_5_HOURS)
UNSCHEDULED_8H = pod("unscheduled-10-hours", "", "Pending", False, 0, THEN_8_HOURS, THEN_8_HOURS)
READY_2H = pod("ready-2-hours", "", "Running", True, 0, THEN_2_HOURS, THEN_1_MONTH)
READY_5H = pod("ready-5-hours", "", "Running", True, 0, THEN_5_HOURS, THEN_1_MONTH)
READY_10H = pod("ready-10-hours", "", "Running", True, 0, THEN_8_HOURS, THEN_1_MONTH)

# Upstream's "Equality tests i": neither pod is less than the other (ranks 1, 1).
EQUALITY = [
    (UNSCHEDULED, None),
    (SCHEDULED_PENDING, None),
    (UNKNOWN_PHASE, None),
    (RUNNING_NOT_READY, None),
    (READY_NOW_CREATED_THEN, None),
    (READY_NOW, None),
    (READY_THEN, None),
    (READY_HIGH_RESTARTS, None),
    (READY_NOW_CREATED_THEN, None),
    (UNSCHEDULED_5H, UNSCHEDULED_8H),
    (READY_5H, READY_10H),
]


@pytest.mark.parametrize(
    ("p1", "p2"), EQUALITY, ids=[f"Equality tests {i}" for i in range(len(EQUALITY))]
)
def test_equality(p1: RawObj, p2: RawObj | None) -> None:
    """Pods no rule tells apart are equivalent both ways."""
    ranked = ActivePodsWithRanks([p1, p2 or p1], [1, 1], NOW)
    assert not ranked.less(0, 1) and not ranked.less(1, 0)


# Upstream's "Inequality tests i": (lesser, its rank, greater, its rank).
INEQUALITY = [
    (UNSCHEDULED, 1, SCHEDULED_PENDING, 2),
    (UNSCHEDULED, 2, SCHEDULED_PENDING, 1),
    (SCHEDULED_PENDING, 1, UNKNOWN_PHASE, 2),
    (UNKNOWN_PHASE, 1, RUNNING_NOT_READY, 2),
    (RUNNING_NOT_READY, 1, READY_NO_LTT, 1),
    (READY_NO_LTT, 1, READY_NOW, 1),
    (READY_NOW, 2, READY_NO_LTT, 1),
    (READY_NOW, 1, READY_THEN, 1),
    (READY_NOW, 2, READY_THEN, 1),
    (READY_HIGH_RESTARTS, 1, READY_NOW, 1),
    (READY_NOW, 2, READY_HIGH_RESTARTS, 1),
    (READY_NOW, 1, READY_NOW_CREATED_THEN, 1),
    (READY_NOW_CREATED_THEN, 2, READY_NOW, 1),
    (LOW_COST, 2, HIGH_COST, 1),
    (READY_2H, 1, READY_5H, 1),
]


@pytest.mark.parametrize(
    ("lesser", "lesser_rank", "greater", "greater_rank"),
    INEQUALITY,
    ids=[f"Inequality tests {i}" for i in range(len(INEQUALITY))],
)
def test_inequality(lesser: RawObj, lesser_rank: int, greater: RawObj, greater_rank: int) -> None:
    """The lesser pod goes first, and not the other way round."""
    ranked = ActivePodsWithRanks([lesser, greater], [lesser_rank, greater_rank], NOW)
    assert ranked.less(0, 1)
    assert not ranked.less(1, 0)


def ready_pod(name: str, uid: str, since: datetime, created: datetime) -> RawObj:
    out = pod(name, "node", "Running", True, 0, since, created)
    out["metadata"]["uid"] = uid
    return out


@pytest.mark.parametrize(
    ("first", "second", "expected_first"),
    [
        # Same log2 bucket of time since Ready (5h and 8h are both 2^44 ns): UID decides.
        (
            ready_pod("a", "uid-b", THEN_5_HOURS, NOW),
            ready_pod("b", "uid-a", THEN_8_HOURS, NOW),
            "b",
        ),
        # Different buckets (2h: 2^42, 5h: 2^44): the more recently Ready first.
        (
            ready_pod("a", "uid-a", THEN_5_HOURS, NOW),
            ready_pod("b", "uid-b", THEN_2_HOURS, NOW),
            "b",
        ),
        # Same Ready time, creation in the same bucket: UID decides.
        (
            ready_pod("a", "uid-z", NOW, THEN_5_HOURS),
            ready_pod("b", "uid-y", NOW, THEN_8_HOURS),
            "b",
        ),
    ],
    ids=["ready-same-bucket-by-uid", "ready-newer-bucket-first", "created-same-bucket-by-uid"],
)
def test_log2_buckets(first: RawObj, second: RawObj, expected_first: str) -> None:
    """Times since Ready and ages compare in log2 buckets, ties broken by UID."""
    order = ActivePodsWithRanks([first, second], [0, 0], NOW).sorted()
    assert order[0]["metadata"]["name"] == expected_first


def test_without_a_clock_plain_times_decide() -> None:
    """No clock (upstream's zero Now): the plain times decide, newer first."""
    older = ready_pod("older", "uid-a", THEN_8_HOURS, NOW)
    newer = ready_pod("newer", "uid-z", THEN_5_HOURS, NOW)
    assert (
        ActivePodsWithRanks([older, newer], [0, 0], None).sorted()[0]["metadata"]["name"] == "newer"
    )


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (NOW - timedelta(seconds=1), NOW - timedelta(seconds=1), 0),
        # 2^30 ns is 1.073741824 s: one nanosecond past it is the next bucket.
        (NOW - timedelta(microseconds=1_073_742), NOW - timedelta(microseconds=1_073_741), 1),
        (NOW + timedelta(seconds=5), NOW - timedelta(seconds=1), -30),
    ],
    ids=["same", "power-of-two-boundary", "future-is-bucket-minus-one"],
)
def test_logarithmic_rank_diff(a: datetime, b: datetime, expected: int) -> None:
    assert logarithmic_rank_diff(a, b, NOW) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 0),
        ("10", 10),
        ("-5", -5),
        ("0", 0),
        ("+10", 0),
        ("008", 0),
        ("", 0),
        ("1.5", 0),
        ("2147483647", 2147483647),
        ("2147483648", 0),
        ("-2147483648", -2147483648),
        ("abc", 0),
    ],
)
def test_deletion_cost(value: str | None, expected: int) -> None:
    """Missing or invalid (plus sign, leading zeros, not an int32) reads as 0."""
    b = make_pod()
    if value is not None:
        b = b.annotation(DELETION_COST, value)
    assert deletion_cost(b.obj()) == expected


def test_restarts_count_sidecars_apart() -> None:
    """Regular containers' restarts first, then restartable init containers' (and only
    those with restartPolicy Always)."""
    base = make_pod().phase("Running").obj()
    base["spec"]["initContainers"] = [
        {"name": "sidecar", "image": "x", "restartPolicy": "Always"},
        {"name": "init", "image": "x"},
    ]
    base["status"]["containerStatuses"] = [{"name": "c", "restartCount": 2}]
    base["status"]["initContainerStatuses"] = [
        {"name": "sidecar", "restartCount": 7},
        {"name": "init", "restartCount": 50},
    ]
    assert max_container_restarts(base) == (2, 7)
    other = {**base, "status": {**base["status"], "initContainerStatuses": []}}
    ranked = ActivePodsWithRanks([other, base], [0, 0], NOW)
    assert ranked.less(1, 0) and not ranked.less(0, 1)


def test_filter_active_pods() -> None:
    """Succeeded, Failed and terminating pods are not active."""
    pods = [
        make_pod().name("running").phase("Running").obj(),
        make_pod().name("done").phase("Succeeded").obj(),
        make_pod().name("failed").phase("Failed").obj(),
        make_pod().name("going").phase("Running").terminating().obj(),
        make_pod().name("pending").obj(),
    ]
    assert [p["metadata"]["name"] for p in filter_active_pods(pods)] == ["running", "pending"]
