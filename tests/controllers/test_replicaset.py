"""getPodsToDelete and the related pods: upstream's TestGetPodsToDelete,
TestRelatedPodsLookup and TestGetReplicaSetsWithSameController (replica_set_test.go)
under their own case names, and a property: a scale-down deletes exactly `diff` of
the given pods, the first `diff` in ActivePodsWithRanks order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import make_pod, scaled
from webhook.api.kube import RawObj
from webhook.controllers.ranking import DELETION_COST
from webhook.controllers.replicaset import (
    get_indirectly_related_pods,
    get_pods_to_delete,
    get_replica_sets_with_same_controller,
    pods_ranked_by_related_pods_on_same_node,
)

NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)


def rs(name: str, owner_uid: str = "123") -> RawObj:
    """Upstream's newReplicaSet: controlled by the owner with `owner_uid`."""
    return scaled("ReplicaSet", name, None, owner=("Deployment", "d", owner_uid))


def new_pod(
    name: str, owner: RawObj, phase: str, node: str = "", ready: str | None = None
) -> RawObj:
    """Upstream's newPod: a Running pod is Ready unless `ready` says otherwise."""
    b = (
        make_pod()
        .name(name)
        .owner("ReplicaSet", owner["metadata"]["name"], owner["metadata"]["uid"])
    )
    if node:
        b = b.node(node)
    out = b.phase(phase).obj()
    out["metadata"]["uid"] = f"uid-{name}"
    status = ready if ready is not None else ("True" if phase == "Running" else None)
    if status is not None:
        out["status"]["conditions"] = [{"type": "Ready", "status": status}]
    return out


RS = rs("foobar")
UNSCHEDULED_PENDING = new_pod("unscheduled-pending-pod", RS, "Pending")
SCHEDULED_PENDING = new_pod("scheduled-pending-pod", RS, "Pending", "fake-node")
NOT_READY = new_pod("scheduled-running-not-ready-pod", RS, "Running", "fake-node", "False")
READY_ON_1 = new_pod("scheduled-running-ready-pod-on-node-1", RS, "Running", "fake-node-1", "True")
READY_ON_2 = new_pod("scheduled-running-ready-pod-on-node-2", RS, "Running", "fake-node-2", "True")

# name, pods, related (None: the pods), diff, expected
CASES = [
    ("len(pods) = 0 (i.e., diff = 0 too)", [], None, 0, []),
    ("diff = len(pods)", [NOT_READY, READY_ON_1], None, 2, [NOT_READY, READY_ON_1]),
    ("diff < len(pods)", [READY_ON_1, NOT_READY], None, 1, [NOT_READY]),
    (
        "various pod phases and conditions, diff = len(pods)",
        [READY_ON_1, READY_ON_1, READY_ON_2, NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
        None,
        6,
        [READY_ON_1, READY_ON_1, READY_ON_2, NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
    ),
    (
        "various pod phases and conditions, diff = len(pods), relatedPods empty",
        [READY_ON_1, READY_ON_1, READY_ON_2, NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
        [],
        6,
        [READY_ON_1, READY_ON_1, READY_ON_2, NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
    ),
    (
        "scheduled vs unscheduled, diff < len(pods)",
        [SCHEDULED_PENDING, UNSCHEDULED_PENDING],
        None,
        1,
        [UNSCHEDULED_PENDING],
    ),
    (
        "ready vs not-ready, diff < len(pods)",
        [READY_ON_1, NOT_READY, NOT_READY],
        None,
        2,
        [NOT_READY, NOT_READY],
    ),
    (
        "ready and colocated with another ready pod vs not colocated, diff < len(pods)",
        [READY_ON_1, READY_ON_2],
        [READY_ON_1, READY_ON_2, READY_ON_2],
        1,
        [READY_ON_2],
    ),
    (
        "pending vs running, diff < len(pods)",
        [SCHEDULED_PENDING, NOT_READY],
        None,
        1,
        [SCHEDULED_PENDING],
    ),
    (
        "various pod phases and conditions, diff < len(pods)",
        [READY_ON_1, READY_ON_2, NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
        None,
        3,
        [UNSCHEDULED_PENDING, SCHEDULED_PENDING, NOT_READY],
    ),
]


@pytest.mark.parametrize(
    ("pods", "related", "diff", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_get_pods_to_delete(
    pods: list[RawObj], related: list[RawObj] | None, diff: int, expected: list[RawObj]
) -> None:
    got = get_pods_to_delete(pods, pods if related is None else related, diff, NOW)
    assert [p["metadata"]["name"] for p in got] == [p["metadata"]["name"] for p in expected]


SOME = rs("foo1")
RELATED = rs("foo2")
UNRELATED = rs("bar1", "456")
PENDING_DELETION = {
    **rs("foo3", "789"),
    "metadata": {**rs("foo3", "789")["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
}


@pytest.mark.parametrize(
    ("rss", "target", "expected"),
    [
        ([PENDING_DELETION, UNRELATED], PENDING_DELETION, ["foo3"]),
        ([SOME, UNRELATED], SOME, ["foo1"]),
        ([SOME, RELATED, UNRELATED], SOME, ["foo1", "foo2"]),
    ],
    ids=[
        "expect to get back a ReplicaSet that is pending deletion",
        "expect to get back only the given ReplicaSet if there is no related ReplicaSet",
        "expect to get back the given ReplicaSet as well as any related ReplicaSet "
        "but not an unrelated ReplicaSet",
    ],
)
def test_get_replica_sets_with_same_controller(
    rss: list[RawObj], target: RawObj, expected: list[str]
) -> None:
    got = get_replica_sets_with_same_controller(target, rss)
    assert sorted(r["metadata"]["name"] for r in got) == expected


POD1 = new_pod("pod1", SOME, "Running")
POD2 = new_pod("pod2", SOME, "Running")
POD3 = new_pod("pod3", RELATED, "Running")
POD4 = new_pod("pod4", UNRELATED, "Running")


@pytest.mark.parametrize(
    ("rss", "pods", "target", "expected"),
    [
        (
            [PENDING_DELETION, UNRELATED],
            [new_pod("pod", PENDING_DELETION, "Running")],
            PENDING_DELETION,
            ["pod"],
        ),
        ([SOME, UNRELATED], [POD1, POD2, POD4], SOME, ["pod1", "pod2"]),
        ([SOME, RELATED, UNRELATED], [POD1, POD2, POD3, POD4], SOME, ["pod1", "pod2", "pod3"]),
    ],
    ids=[
        "expect to get a pod even if its owning ReplicaSet is pending deletion",
        "expect to get only the ReplicaSet's own pods if there is no related ReplicaSet",
        "expect to get own pods as well as any related ReplicaSet's "
        "but not an unrelated ReplicaSet's",
    ],
)
def test_related_pods_lookup(
    rss: list[RawObj], pods: list[RawObj], target: RawObj, expected: list[str]
) -> None:
    got = get_indirectly_related_pods(target, rss, pods)
    assert sorted(p["metadata"]["name"] for p in got) == expected


def test_without_a_controller_no_pod_is_related() -> None:
    """A ReplicaSet no Deployment owns has no related ReplicaSets (upstream returns
    none), so every rank is 0."""
    bare = {**RS, "metadata": {**RS["metadata"], "ownerReferences": []}}
    assert get_indirectly_related_pods(bare, [bare], [READY_ON_1]) == []


def test_rank_counts_active_related_pods_on_the_node() -> None:
    going = {
        **READY_ON_2,
        "metadata": {**READY_ON_2["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
    }
    ranked = pods_ranked_by_related_pods_on_same_node(
        [READY_ON_1, READY_ON_2], [READY_ON_1, READY_ON_2, going], NOW
    )
    assert ranked.rank == [1, 1]


DAYS = st.integers(min_value=1, max_value=27)


@st.composite
def pod_sets(draw: st.DrawFn) -> tuple[list[RawObj], int]:
    n = draw(st.integers(min_value=0, max_value=12))
    pods = []
    for i in range(n):
        b = make_pod().name(f"p{i}").owner("ReplicaSet", "foobar", "uid-foobar")
        node = draw(st.sampled_from(["", "n1", "n2", "n3"]))
        if node:
            b = b.node(node)
        b = b.phase(draw(st.sampled_from(["Pending", "Running", "Unknown"])))
        if draw(st.booleans()):
            b = b.annotation(DELETION_COST, str(draw(st.integers(min_value=-3, max_value=3))))
        pod = b.obj()
        pod["metadata"]["uid"] = f"uid-{draw(st.integers(min_value=0, max_value=5))}-{i}"
        pod["metadata"]["creationTimestamp"] = (
            f"2026-11-{draw(st.integers(min_value=1, max_value=27)):02d}T00:00:00Z"
        )
        if draw(st.booleans()):
            pod["status"]["conditions"] = [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": f"2026-11-{draw(DAYS):02d}T00:00:00Z",
                }
            ]
        pods.append(pod)
    diff = draw(st.integers(min_value=0, max_value=n))
    return pods, diff


@settings(max_examples=60, deadline=None)
@given(pod_sets())
def test_scale_down_deletes_the_first_diff_in_rank_order(case: tuple[list[RawObj], int]) -> None:
    """Exactly `diff` pods go, all of them given, and no kept pod ranks before a
    deleted one."""
    pods, diff = case
    got = get_pods_to_delete(pods, pods, diff, NOW)
    assert len(got) == diff
    names = [p["metadata"]["name"] for p in got]
    assert len(set(names)) == diff and set(names) <= {p["metadata"]["name"] for p in pods}
    ranked = pods_ranked_by_related_pods_on_same_node(pods, pods, NOW)
    index = {p["metadata"]["name"]: i for i, p in enumerate(pods)}
    if diff < len(pods):
        kept = [i for i in range(len(pods)) if pods[i]["metadata"]["name"] not in set(names)]
        for name in names:
            assert not any(ranked.less(k, index[name]) for k in kept)
