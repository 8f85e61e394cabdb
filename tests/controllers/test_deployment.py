"""The Deployment controller's arithmetic and steps: upstream's tables under their own
names. rolling_test.go: TestDeploymentController_reconcileNewReplicaSet,
_reconcileOldReplicaSets, _cleanupUnhealthyReplicas,
_scaleDownOldReplicaSetsForRollingUpdate ("scenario i", as upstream logs them);
sync_test.go: TestScale; deployment_util_test.go: TestResolveFenceposts,
TestNewRSNewReplicas, TestMaxUnavailable.

Differences from upstream's assertions: reconcileOldReplicaSets' table carries an
expected old size that upstream's loop never checks; here it is checked.
GetProportion and getReplicaSetFraction have no table of their own upstream; TestScale
exercises them, and a few boundary cases follow. TestScale's "failed rs update" case
(an update that fails on a fake client) is checked by the sizes it expects; no update
fails here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.controllers.deployment import (
    RECREATE,
    ROLLING,
    DeploymentSpec,
    IntOrPercent,
    ReplicaSetState,
    cleanup_unhealthy_replicas,
    get_proportion,
    max_surge,
    max_unavailable,
    new_rs_new_replicas,
    reconcile_new_replica_set,
    reconcile_old_replica_sets,
    resolve_fenceposts,
    scale,
    scale_down_old_replica_sets_for_recreate,
    scale_down_old_replica_sets_for_rolling_update,
)


def deployment(
    replicas: int, surge: IntOrPercent = None, unavailable: IntOrPercent = None
) -> DeploymentSpec:
    """Upstream's newDeployment: RollingUpdate with both fenceposts 0 unless given."""
    return DeploymentSpec(
        replicas,
        ROLLING,
        0 if surge is None else surge,
        0 if unavailable is None else unavailable,
    )


# deploymentReplicas, maxSurge, oldReplicas, newReplicas, scaleExpected, expectedNewReplicas
RECONCILE_NEW = [
    (10, 0, 10, 0, False, 0),
    (10, 2, 10, 0, True, 2),
    (10, 2, 5, 0, True, 7),
    (10, 2, 10, 2, False, 0),
    (10, 2, 2, 11, True, 10),
]


@pytest.mark.parametrize(
    ("replicas", "surge", "old_n", "new_n", "scale_expected", "expected_new"),
    RECONCILE_NEW,
    ids=[f"scenario {i}" for i in range(len(RECONCILE_NEW))],
)
def test_reconcile_new_replica_set(
    replicas: int, surge: int, old_n: int, new_n: int, scale_expected: bool, expected_new: int
) -> None:
    new = ReplicaSetState("foo-v2", new_n)
    old = ReplicaSetState("foo-v2", old_n)
    d = deployment(replicas, surge, 0)
    scaled = reconcile_new_replica_set([new, old], new, d)
    assert scaled == scale_expected
    assert new.replicas == (expected_new if scale_expected else new_n)


# deploymentReplicas, maxUnavailable, oldReplicas, newReplicas, readyOld, readyNew,
# scaleExpected, expectedOldReplicas
RECONCILE_OLD = [
    (10, 0, 10, 0, 10, 0, True, 9),
    (10, 2, 10, 0, 10, 0, True, 8),
    (10, 2, 10, 0, 8, 0, True, 8),
    (10, 2, 10, 0, 9, 0, True, 8),
    (10, 2, 8, 2, 8, 0, False, 8),
]


@pytest.mark.parametrize(
    (
        "replicas",
        "unavailable",
        "old_n",
        "new_n",
        "ready_old",
        "ready_new",
        "expected",
        "old_after",
    ),
    RECONCILE_OLD,
    ids=[f"scenario {i}" for i in range(len(RECONCILE_OLD))],
)
def test_reconcile_old_replica_sets(
    replicas: int,
    unavailable: int,
    old_n: int,
    new_n: int,
    ready_old: int,
    ready_new: int,
    expected: bool,
    old_after: int,
) -> None:
    new = ReplicaSetState("foo-new", new_n, ready_new)
    old = ReplicaSetState("foo-old", old_n, ready_old)
    d = deployment(replicas, 0, unavailable)
    assert reconcile_old_replica_sets([old, new], [old], new, d) == expected
    assert old.replicas == old_after


# oldReplicas, readyPods, unHealthyPods, maxCleanupCount, cleanupCountExpected
CLEANUP = [
    (10, 8, 2, 1, 1),
    (10, 8, 2, 3, 2),
    (10, 8, 2, 0, 0),
    (10, 10, 0, 3, 0),
]


@pytest.mark.parametrize(
    ("old_n", "ready", "unhealthy", "max_cleanup", "expected"),
    CLEANUP,
    ids=[f"scenario {i}" for i in range(len(CLEANUP))],
)
def test_cleanup_unhealthy_replicas(
    old_n: int, ready: int, unhealthy: int, max_cleanup: int, expected: int
) -> None:
    old = ReplicaSetState("foo-v2", old_n, ready)
    _, count = cleanup_unhealthy_replicas([old], deployment(10, 2, 2), max_cleanup)
    assert count == expected
    assert old.replicas == old_n - expected


# deploymentReplicas, maxUnavailable, readyPods, oldReplicas, scaleExpected, expectedOld
SCALE_DOWN_OLD = [
    (10, 0, 10, 10, True, 9),
    (10, 2, 10, 10, True, 8),
    (10, 2, 8, 10, False, 0),
    (10, 2, 10, 0, False, 0),
    (10, 2, 1, 10, False, 0),
]


@pytest.mark.parametrize(
    ("replicas", "unavailable", "ready", "old_n", "scale_expected", "expected_old"),
    SCALE_DOWN_OLD,
    ids=[f"scenario {i}" for i in range(len(SCALE_DOWN_OLD))],
)
def test_scale_down_old_replica_sets_for_rolling_update(
    replicas: int, unavailable: int, ready: int, old_n: int, scale_expected: bool, expected_old: int
) -> None:
    old = ReplicaSetState("foo-v2", old_n, ready)
    scaled = scale_down_old_replica_sets_for_rolling_update(
        [old], [old], deployment(replicas, 0, unavailable)
    )
    assert (scaled != 0) == scale_expected
    assert old.replicas == (expected_old if scale_expected else old_n)


NEW_TS = datetime(2016, 5, 20, 2, 0, 0, tzinfo=UTC)
OLD_TS = datetime(2016, 5, 20, 1, 0, 0, tzinfo=UTC)
OLDER_TS = datetime(2016, 5, 20, 0, 0, 0, tzinfo=UTC)
TS = {"new": NEW_TS, "old": OLD_TS, "older": OLDER_TS}

# name, deployment, oldDeployment, newRS (name, size, ts) or None, oldRSs, expected
# new size, expected old sizes, desiredReplicasAnnotations, new RS available
TEST_SCALE = [
    (
        "normal scaling event: 10 -> 12",
        deployment(12),
        deployment(10),
        ("foo-v1", 10, "new"),
        [],
        12,
        [],
        {},
        0,
    ),
    (
        "normal scaling event: 10 -> 5",
        deployment(5),
        deployment(10),
        ("foo-v1", 10, "new"),
        [],
        5,
        [],
        {},
        0,
    ),
    (
        "proportional scaling: 5 -> 10",
        deployment(10),
        deployment(5),
        ("foo-v2", 2, "new"),
        [("foo-v1", 3, "old")],
        4,
        [6],
        {},
        0,
    ),
    (
        "proportional scaling: 5 -> 3",
        deployment(3),
        deployment(5),
        ("foo-v2", 2, "new"),
        [("foo-v1", 3, "old")],
        1,
        [2],
        {},
        0,
    ),
    (
        "proportional scaling: 9 -> 4",
        deployment(4),
        deployment(9),
        ("foo-v2", 8, "new"),
        [("foo-v1", 1, "old")],
        4,
        [0],
        {},
        0,
    ),
    (
        "proportional scaling: 7 -> 10",
        deployment(10),
        deployment(7),
        ("foo-v3", 2, "new"),
        [("foo-v2", 3, "old"), ("foo-v1", 2, "older")],
        3,
        [4, 3],
        {},
        0,
    ),
    (
        "proportional scaling: 13 -> 8",
        deployment(8),
        deployment(13),
        ("foo-v3", 2, "new"),
        [("foo-v2", 8, "old"), ("foo-v1", 3, "older")],
        1,
        [5, 2],
        {},
        0,
    ),
    (
        "leftover distribution: 3 -> 4",
        deployment(4),
        deployment(3),
        ("foo-v3", 1, "new"),
        [("foo-v2", 1, "old"), ("foo-v1", 1, "older")],
        2,
        [1, 1],
        {},
        0,
    ),
    (
        "leftover distribution: 3 -> 2",
        deployment(2),
        deployment(3),
        ("foo-v3", 1, "new"),
        [("foo-v2", 1, "old"), ("foo-v1", 1, "older")],
        1,
        [1, 0],
        {},
        0,
    ),
    (
        "proportional scaling (no new rs): 4 -> 5",
        deployment(5),
        deployment(4),
        None,
        [("foo-v2", 2, "old"), ("foo-v1", 2, "older")],
        None,
        [3, 2],
        {},
        0,
    ),
    (
        "proportional scaling: 6 -> 0",
        deployment(0),
        deployment(6),
        ("foo-v3", 3, "new"),
        [("foo-v2", 2, "old"), ("foo-v1", 1, "older")],
        0,
        [0, 0],
        {},
        0,
    ),
    (
        "proportional scaling: 0 -> 6",
        deployment(6),
        deployment(6),
        ("foo-v3", 0, "new"),
        [("foo-v2", 0, "old"), ("foo-v1", 0, "older")],
        6,
        [0, 0],
        {},
        0,
    ),
    (
        "failed rs update",
        deployment(5),
        deployment(5),
        ("foo-v3", 2, "new"),
        [("foo-v2", 1, "old"), ("foo-v1", 1, "older")],
        2,
        [2, 1],
        {"foo-v2": 3},
        0,
    ),
    (
        "deployment with surge pods",
        deployment(20, 2),
        deployment(10, 2),
        ("foo-v2", 6, "new"),
        [("foo-v1", 6, "old")],
        11,
        [11],
        {},
        0,
    ),
    (
        "change both surge and size",
        deployment(50, 6),
        deployment(10, 3),
        ("foo-v2", 5, "new"),
        [("foo-v1", 8, "old")],
        22,
        [34],
        {},
        0,
    ),
    (
        "change both size and template",
        deployment(14),
        deployment(10),
        None,
        [("foo-v2", 7, "new"), ("foo-v1", 3, "old")],
        None,
        [10, 4],
        {},
        0,
    ),
    (
        "saturated but broken new replica set does not affect old pods",
        deployment(2, 1, 1),
        deployment(2, 1, 1),
        ("foo-v2", 2, "new"),
        [("foo-v1", 1, "old")],
        2,
        [1],
        {},
        0,
    ),
]


@pytest.mark.parametrize(
    ("d", "old_d", "new_rs", "old_rss", "expected_new", "expected_old", "desired", "available"),
    [c[1:] for c in TEST_SCALE],
    ids=[c[0] for c in TEST_SCALE],
)
def test_scale(
    d: DeploymentSpec,
    old_d: DeploymentSpec,
    new_rs: tuple[str, int, str] | None,
    old_rss: list[tuple[str, int, str]],
    expected_new: int | None,
    expected_old: list[int],
    desired: dict[str, int],
    available: int,
) -> None:
    def made(spec: tuple[str, int, str]) -> ReplicaSetState:
        name, size, ts = spec
        want = desired.get(name, old_d.replicas)
        return ReplicaSetState(name, size, 0, TS[ts], want, want + max_surge(old_d))

    new = made(new_rs) if new_rs is not None else None
    if new is not None:
        new.available = available
    old = [made(r) for r in old_rss]
    scale(d, new, old)
    if expected_new is not None:
        assert new is not None and new.replicas == expected_new
    assert [r.replicas for r in old] == expected_old


# maxSurge, maxUnavailable (as intstr.FromString), desired, surge, unavailable, error
FENCEPOSTS = [
    ("0%", "0%", 0, 0, 1, False),
    ("39%", "39%", 10, 4, 3, False),
    ("oops", "39%", 10, 0, 0, True),
    ("55%", "urg", 10, 0, 0, True),
    (None, "39%", 10, 0, 3, False),
    ("39%", None, 10, 4, 0, False),
    (None, None, 10, 0, 1, False),
]


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "want_surge", "want_unavailable", "error"),
    FENCEPOSTS,
    ids=[str(i) for i in range(len(FENCEPOSTS))],
)
def test_resolve_fenceposts(
    surge: str | None,
    unavailable: str | None,
    desired: int,
    want_surge: int,
    want_unavailable: int,
    error: bool,
) -> None:
    if error:
        with pytest.raises(ValueError):
            resolve_fenceposts(surge, unavailable, desired)
        return
    assert resolve_fenceposts(surge, unavailable, desired) == (want_surge, want_unavailable)


@pytest.mark.parametrize(
    ("strategy", "dep_replicas", "new_rs_replicas", "surge", "expected"),
    [
        (ROLLING, 1, 5, 1, 5),
        (ROLLING, 6, 2, 10, 6),
        (RECREATE, 3, 1, 1, 3),
    ],
    ids=[
        "can not scale up - to newRSReplicas",
        "scale up - to depReplicas",
        "recreate - to depReplicas",
    ],
)
def test_new_rs_new_replicas(
    strategy: str, dep_replicas: int, new_rs_replicas: int, surge: int, expected: int
) -> None:
    d = DeploymentSpec(dep_replicas, strategy, surge, 1)
    rs5 = ReplicaSetState("rs5", 5)
    new = ReplicaSetState("new", new_rs_replicas)
    assert new_rs_new_replicas(d, [rs5], new) == expected


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        (DeploymentSpec(10, ROLLING, 1, 5), 5),
        (DeploymentSpec(10, ROLLING, 1, 10), 10),
        (DeploymentSpec(5, ROLLING, 1, 10), 5),
        (DeploymentSpec(0, ROLLING, 1, 10), 0),
        (DeploymentSpec(0, RECREATE), 0),
        (DeploymentSpec(10, ROLLING, 1, "50%"), 5),
        (DeploymentSpec(10, ROLLING, 1, "100%"), 10),
        (DeploymentSpec(5, ROLLING, 1, "100%"), 5),
    ],
    ids=[
        "maxUnavailable less than replicas",
        "maxUnavailable equal replicas",
        "maxUnavailable greater than replicas",
        "maxUnavailable with replicas is 0",
        "maxUnavailable with Recreate deployment strategy",
        "maxUnavailable less than replicas with percents",
        "maxUnavailable equal replicas with percents",
        "maxUnavailable greater than replicas with percents",
    ],
)
def test_max_unavailable(d: DeploymentSpec, expected: int) -> None:
    assert max_unavailable(d) == expected


@pytest.mark.parametrize(
    ("rs", "to_add", "added", "expected"),
    [
        (None, 5, 0, 0),
        (ReplicaSetState("zero", 0, max_replicas=10), 5, 0, 0),
        (ReplicaSetState("done", 4, max_replicas=10), 5, 5, 0),
        # round(4 * 20 / 10) - 4 = 4, capped by what is left to add.
        (ReplicaSetState("capped", 4, max_replicas=10), 5, 3, 2),
        # Scaling down: the fraction, never past what is left to remove.
        (ReplicaSetState("down", 4, max_replicas=40), -10, -9, -1),
        # No annotation: the Deployment's status.replicas (0 here: no share).
        (ReplicaSetState("unannotated", 4), 5, 0, 0),
    ],
    ids=["nil", "empty", "all added", "capped up", "capped down", "no annotation"],
)
def test_get_proportion(rs: ReplicaSetState | None, to_add: int, added: int, expected: int) -> None:
    assert get_proportion(rs, DeploymentSpec(20), to_add, added) == expected


def test_recreate_scales_every_old_replica_set_to_zero() -> None:
    old = [ReplicaSetState("a", 3), ReplicaSetState("b", 0)]
    assert scale_down_old_replica_sets_for_recreate(old, DeploymentSpec(3, RECREATE))
    assert [r.replicas for r in old] == [0, 0]
    assert not scale_down_old_replica_sets_for_recreate(old, DeploymentSpec(3, RECREATE))


@settings(max_examples=150, deadline=None)
@given(
    replicas=st.integers(min_value=0, max_value=40),
    surge=st.one_of(
        st.integers(min_value=0, max_value=10), st.sampled_from(["0%", "10%", "25%", "50%", "100%"])
    ),
    unavailable=st.one_of(
        st.integers(min_value=0, max_value=10), st.sampled_from(["0%", "10%", "25%", "50%", "100%"])
    ),
    old_sizes=st.lists(st.integers(min_value=0, max_value=20), min_size=1, max_size=3),
)
def test_a_rolling_update_stays_within_its_fenceposts_and_completes(
    replicas: int, surge: IntOrPercent, unavailable: IntOrPercent, old_sizes: list[int]
) -> None:
    """Played sync after sync with every pod available as soon as it exists: no step
    exceeds replicas + maxSurge pods once the old ones fit under it, none drops below
    replicas - maxUnavailable available pods once reached, and the rollout ends with
    the new ReplicaSet at full size and every old one at 0."""
    d = DeploymentSpec(replicas, ROLLING, surge, unavailable)
    olds = [
        ReplicaSetState(f"old-{i}", n, n, datetime(2026, 1, i + 1, tzinfo=UTC))
        for i, n in enumerate(old_sizes)
    ]
    new = ReplicaSetState("new", 0, 0, datetime(2026, 2, 1, tzinfo=UTC))
    most = replicas + max_surge(d)
    least = replicas - max_unavailable(d)
    total = sum(old_sizes)
    for _ in range(200):
        everything = [*olds, new]
        if reconcile_new_replica_set(everything, new, d):
            new.available = new.replicas
        elif not reconcile_old_replica_sets(everything, [o for o in olds if o.replicas], new, d):
            break
        for o in olds:
            o.available = min(o.available, o.replicas)
        now_total = new.replicas + sum(o.replicas for o in olds)
        if total <= most:
            assert now_total <= most
        available = new.available + sum(o.available for o in olds)
        if sum(old_sizes) >= least:
            assert available >= min(least, sum(old_sizes))
        total = now_total
    assert new.replicas == replicas
    assert all(o.replicas == 0 for o in olds)
