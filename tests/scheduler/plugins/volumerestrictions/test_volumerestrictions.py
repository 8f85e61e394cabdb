"""VolumeRestrictions, from upstream's volumerestrictions/volume_restrictions_test.go:
TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts,
TestISCSIDiskConflicts and TestAccessModeConflicts, case by case.

Each case runs PreFilter and, when it succeeds, Filter on machine1, which holds the
case's existing pods (upstream's NodeInfo). Left out: Test_isSchedulableAfterPodDeleted
and Test_isSchedulableAfterPersistentVolumeClaimChange (queueing hints: the model
places one pod at a time, it keeps no scheduling queue).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod, node, pvc, with_claim, with_volume
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    VolumeRestrictions,
)

RawObj = dict[str, Any]
DISK = Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
# v1.37's wording (it was "node has pod using PersistentVolumeClaim with the same name
# and ReadWriteOncePod access mode" until v1.32).
RWOP = Status(
    Code.UNSCHEDULABLE,
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod",
)
_n = iter(range(10**6))


def vol_pod(*volumes: RawObj, node_name: str = "machine1", name: str = "") -> RawObj:
    """A pod with these volumes (st.MakePod().Volume(...)), bound to `node_name`
    unless that is empty."""
    b = make_pod().name(name or f"p{next(_n)}")
    if node_name:
        b = b.node(node_name)
    p = b.obj()
    for v in volumes:
        with_volume(p, dict(v))
    return p


def incoming(*volumes: RawObj) -> RawObj:
    return vol_pod(*volumes, node_name="", name="incoming")


def run(p: RawObj, objs: list[RawObj]) -> tuple[Status, Status | None]:
    """(PreFilter status, Filter status on machine1 or None when PreFilter did not
    succeed: the framework runs no Filter then)."""
    snapshot = Snapshot.from_objects([node("machine1"), *objs])
    plugin = VolumeRestrictions()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre, None
    return pre, plugin.filter(state, p, snapshot.nodes["machine1"])


def disk_cases(vol: RawObj, vol2: RawObj) -> list[Any]:
    """The four cases every disk kind's table shares: volState and volState2 are two
    volumes of that kind on different disks."""
    return [
        pytest.param(incoming(), [], SKIP, None, id="nothing"),
        pytest.param(incoming(), [vol_pod(vol)], SKIP, None, id="one state"),
        pytest.param(incoming(vol), [vol_pod(vol)], SUCCESS, DISK, id="same state"),
        pytest.param(incoming(vol2), [vol_pod(vol)], SUCCESS, SUCCESS, id="different state"),
    ]


GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
EBS = {"awsElasticBlockStore": {"volumeID": "foo"}}
EBS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    }
}
ISCSI2 = {"iscsi": {**ISCSI["iscsi"], "iqn": "iqn.2017-12.server:storage.target01"}}
CASE_ARGS = ("p", "existing", "want_pre", "want_filter")


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        *disk_cases(GCE, GCE2),
        pytest.param(
            incoming({"name": "volume with no restriction"}),
            [],
            SKIP,
            None,
            id="pod with a volume that doesn't have restrictions",
        ),
    ],
)
def test_gce_disk_conflicts(
    p: RawObj, existing: list[RawObj], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestGCEDiskConflicts."""
    assert run(p, existing) == (want_pre, want_filter)


@pytest.mark.parametrize(CASE_ARGS, disk_cases(EBS, EBS2))
def test_aws_disk_conflicts(
    p: RawObj, existing: list[RawObj], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestAWSDiskConflicts."""
    assert run(p, existing) == (want_pre, want_filter)


@pytest.mark.parametrize(CASE_ARGS, disk_cases(RBD, RBD2))
def test_rbd_disk_conflicts(
    p: RawObj, existing: list[RawObj], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestRBDDiskConflicts (volState2 shares no Ceph monitor)."""
    assert run(p, existing) == (want_pre, want_filter)


@pytest.mark.parametrize(CASE_ARGS, disk_cases(ISCSI, ISCSI2))
def test_iscsi_disk_conflicts(
    p: RawObj, existing: list[RawObj], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestISCSIDiskConflicts."""
    assert run(p, existing) == (want_pre, want_filter)


def claim_pod(name: str, *claims: str, node_name: str = "machine1") -> RawObj:
    """st.MakePod().Name(name).Namespace("default").PVC(claim)...Node("node-1")."""
    b = make_pod().name(name)
    if node_name:
        b = b.node(node_name)
    p = b.obj()
    for claim in claims:
        with_claim(p, claim)
    return p


RWOP_1 = pvc("claim-with-rwop-1", modes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", modes=["ReadWriteMany"])
WITH_RWX = claim_pod("pod-with-rwx", "claim-with-rwx")


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        pytest.param(incoming(), [], SKIP, None, id="nothing"),
        pytest.param(
            claim_pod("pod-with-one-pvc", "claim-with-rwop-1", node_name=""),
            [],
            Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "claim-with-rwop-1" not found'),
            None,
            id="failed to get PVC",
        ),
        pytest.param(
            claim_pod("pod-with-one-pvc", "claim-with-rwop-1", node_name=""),
            [RWOP_1, RWX, WITH_RWX],
            SKIP,
            None,
            id="no access mode conflict",
        ),
        pytest.param(
            claim_pod("pod-with-one-conflict", "claim-with-rwop-1", node_name=""),
            [RWOP_1, RWX, claim_pod("pod-with-one-pvc", "claim-with-rwop-1"), WITH_RWX],
            SUCCESS,
            RWOP,
            id="access mode conflict, unschedulable",
        ),
        pytest.param(
            claim_pod(
                "pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2", node_name=""
            ),
            [
                RWOP_1,
                RWOP_2,
                RWX,
                claim_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2"),
                WITH_RWX,
            ],
            SUCCESS,
            RWOP,
            id="two conflicts, unschedulable",
        ),
    ],
)
def test_access_mode_conflicts(
    p: RawObj, existing: list[RawObj], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestAccessModeConflicts: a ReadWriteOncePod claim another bound pod
    uses blocks every node (v1.37's reason text); a pod whose claims are all free and
    that has no disk to compare skips."""
    assert run(p, existing) == (want_pre, want_filter)


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        pytest.param(
            incoming({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}),
            [vol_pod({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}})],
            SUCCESS,
            SUCCESS,
            id="both read-only GCE PDs share",
        ),
        pytest.param(
            incoming({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}),
            [vol_pod({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}})],
            SUCCESS,
            DISK,
            id="an EBS volume conflicts even read-only",
        ),
        pytest.param(
            incoming(RBD),
            [vol_pod({"rbd": {**RBD["rbd"], "monitors": ["b", "c"]}})],
            SUCCESS,
            DISK,
            id="RBD images sharing one monitor conflict",
        ),
        pytest.param(
            incoming(RBD),
            [vol_pod({"rbd": {**RBD["rbd"], "image": "baz"}})],
            SUCCESS,
            SUCCESS,
            id="RBD other image",
        ),
        pytest.param(
            incoming({"iscsi": {**ISCSI["iscsi"], "readOnly": True}}),
            [vol_pod({"iscsi": {**ISCSI["iscsi"], "readOnly": True}})],
            SUCCESS,
            SUCCESS,
            id="ISCSI both read-only",
        ),
        pytest.param(
            incoming(GCE),
            [vol_pod(GCE, node_name="elsewhere")],
            SUCCESS,
            SUCCESS,
            id="a disk mounted on another node does not conflict",
        ),
        pytest.param(
            incoming({"name": "data", "ephemeral": {"volumeClaimTemplate": {}}}),
            [],
            SKIP,
            None,
            id="an ephemeral volume's claim is not looked up",
        ),
        pytest.param(
            claim_pod("new", "claim-with-rwop-1", node_name=""),
            [RWOP_1, claim_pod("elsewhere", "claim-with-rwop-1", node_name="other-node")],
            SUCCESS,
            RWOP,
            id="a ReadWriteOncePod claim in use on any node blocks every node",
        ),
    ],
)
def test_volume_restrictions_more(
    p: RawObj, existing: list[RawObj], want_pre: Status, want_filter: Status | None
) -> None:
    """Read-only sharing per disk kind, other nodes, ephemeral volumes."""
    assert run(p, existing) == (want_pre, want_filter)


def test_filter_without_pre_filter_state_is_an_error() -> None:
    """Filter reads what PreFilter computed; without it the status is Error."""
    snapshot = Snapshot.from_objects([node("machine1")])
    got = VolumeRestrictions().filter(CycleState(), incoming(GCE), snapshot.nodes["machine1"])
    assert got.code is Code.ERROR
    assert "PreFilterVolumeRestrictions" in got.reason
