"""NodeVolumeLimits (CSI), after upstream's nodevolumelimits/csi_test.go."""

from __future__ import annotations

from typing import Any

from tests.builders import csinode, make_pod, node, pv, pvc, storage_class, with_claim
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
)

RawObj = dict[str, Any]
EXCEEDED = Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
DRIVER = "ebs.csi.aws.com"


def claims(n: int, prefix: str = "c") -> list[RawObj]:
    out = []
    for i in range(n):
        out.append(pvc(f"{prefix}{i}", volume=f"{prefix}pv{i}"))
        out.append(pv(f"{prefix}pv{i}", csi=(DRIVER, f"{prefix}h{i}")))
    return out


def user(name: str, *claim_names: str) -> RawObj:
    p = make_pod().name(name).node("n1").obj()
    for c in claim_names:
        with_claim(p, c)
    return p


def run(p: RawObj, objs: list[RawObj], limit: int | None = 2) -> Status:
    base = [node("n1"), *objs]
    if limit is not None:
        base.append(csinode("n1", {DRIVER: limit}))
    snapshot = Snapshot.from_objects(base)
    plugin = NodeVolumeLimits()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre
    return plugin.filter(state, p, snapshot.nodes["n1"])


def test_no_claims_skips() -> None:
    """A pod without claim volumes is not this plugin's business."""
    assert run(make_pod().obj(), []) == SKIP


def test_within_and_over_the_limit() -> None:
    """Attached + new volumes per driver against CSINode allocatable.count."""
    objs = [*claims(3), user("old", "c0")]
    assert run(with_claim(make_pod().obj(), "c1"), objs) == SUCCESS
    assert run(with_claim(with_claim(make_pod().obj(), "c1"), "c2"), objs) == EXCEEDED


def test_same_volume_counts_once() -> None:
    """A volume already attached on the node does not count again."""
    objs = [*claims(2), user("old", "c0", "c1")]
    assert run(with_claim(make_pod().obj(), "c0"), objs) == SUCCESS


def test_no_csinode_no_limit() -> None:
    """Without a CSINode (or without allocatable.count) nothing is limited."""
    objs = [*claims(3), user("old", "c0", "c1")]
    assert run(with_claim(make_pod().obj(), "c2"), objs, limit=None) == SUCCESS


def test_unbound_claim_counts_under_its_provisioner() -> None:
    """An unbound claim counts against its StorageClass's provisioner."""
    objs = [
        *claims(2),
        user("old", "c0", "c1"),
        pvc("new", storage_class="sc"),
        storage_class("sc", provisioner=DRIVER),
    ]
    assert run(with_claim(make_pod().obj(), "new"), objs) == EXCEEDED


def test_missing_claim_of_new_pod() -> None:
    """The incoming pod's missing claim is unresolvable, in upstream's words."""
    got = run(with_claim(make_pod().obj(), "gone"), [])
    assert got == Status(
        Code.UNRESOLVABLE, 'looking up PVC default/gone: persistentvolumeclaim "gone" not found'
    )
