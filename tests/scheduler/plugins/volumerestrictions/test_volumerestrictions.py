"""VolumeRestrictions, after upstream's volumerestrictions/volume_restrictions_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod, node, pvc, with_claim, with_volume
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)

RawObj = dict[str, Any]
DISK = Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
RWOP = Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
_n = iter(range(10**6))


def vol_pod(source: str, spec: RawObj, node_name: str | None = None) -> RawObj:
    b = make_pod().name(f"p{next(_n)}")
    if node_name:
        b = b.node(node_name)
    return with_volume(b.obj(), {"name": "v", source: spec})


def run(p: RawObj, objs: list[RawObj]) -> Status:
    snapshot = Snapshot.from_objects([node("machine1"), *objs])
    plugin = VolumeRestrictions()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre
    return plugin.filter(state, p, snapshot.nodes["machine1"])


GCE = {"pdName": "foo"}
GCE2 = {"pdName": "bar"}
EBS = {"volumeID": "foo"}
RBD = {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}
ISCSI = {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "lun": 0}
CASES = [
    ("nothing", make_pod().obj(), [], SKIP),
    (
        "one state",
        vol_pod("gcePersistentDisk", GCE),
        [vol_pod("gcePersistentDisk", GCE, "machine1")],
        DISK,
    ),
    (
        "two state",
        vol_pod("gcePersistentDisk", GCE),
        [vol_pod("gcePersistentDisk", GCE2, "machine1")],
        SUCCESS,
    ),
    (
        "both read-only GCE PDs share",
        vol_pod("gcePersistentDisk", {**GCE, "readOnly": True}),
        [vol_pod("gcePersistentDisk", {**GCE, "readOnly": True}, "machine1")],
        SUCCESS,
    ),
    (
        "AWS EBS conflict",
        vol_pod("awsElasticBlockStore", EBS),
        [vol_pod("awsElasticBlockStore", EBS, "machine1")],
        DISK,
    ),
    (
        "RBD conflict",
        vol_pod("rbd", RBD),
        [vol_pod("rbd", {**RBD, "monitors": ["b", "c"]}, "machine1")],
        DISK,
    ),
    (
        "RBD other image",
        vol_pod("rbd", RBD),
        [vol_pod("rbd", {**RBD, "image": "baz"}, "machine1")],
        SUCCESS,
    ),
    ("ISCSI conflict", vol_pod("iscsi", ISCSI), [vol_pod("iscsi", ISCSI, "machine1")], DISK),
    (
        "ISCSI both read-only",
        vol_pod("iscsi", {**ISCSI, "readOnly": True}),
        [vol_pod("iscsi", {**ISCSI, "readOnly": True}, "machine1")],
        SUCCESS,
    ),
]


@pytest.mark.parametrize(
    ("p", "existing", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_disk_conflicts(p: RawObj, existing: list[RawObj], want: Status) -> None:
    """Upstream TestGCEDiskConflicts / AWS / RBD / ISCSI tables."""
    assert run(p, existing) == want


def test_read_write_once_pod_claim_in_use() -> None:
    """A ReadWriteOncePod claim used by another pod blocks the node."""
    claim = pvc("claim", volume="pv", modes=["ReadWriteOncePod"])
    user = with_claim(make_pod().name("user").node("machine1").obj(), "claim")
    assert run(with_claim(make_pod().name("new").obj(), "claim"), [claim, user]) == RWOP
    assert run(with_claim(make_pod().name("new").obj(), "claim"), [claim]) == SUCCESS


def test_missing_claim_is_unresolvable() -> None:
    """A claim the snapshot lacks rejects the pod."""
    got = run(with_claim(make_pod().obj(), "nope"), [])
    assert got == Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "nope" not found')
