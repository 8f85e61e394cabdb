"""NodeVolumeLimits (CSI), from upstream's nodevolumelimits/csi_test.go (TestCSILimits),
case by case.

Fixtures as upstream's: for each driver D of a case, claims and PVs "csi-D-0" ..
"csi-D-3" (bound, spec.csi.driver D, handle = the name); "csi-4" unbound of class
csi-sc (provisioner: the case's first driver), "csi-5" unbound without a class,
"csi-6" of class csi-sc naming a PV that does not exist. The node is
node-for-max-pd-test-1; `limit` is its CSINode's allocatable.count for every driver
(NO_LIMIT: drivers listed without a count; None: no CSINode).

Left out, as not modelled (module docstring of the plugin): "should count
VolumeAttachments towards volume limit when no pods exist" and "should schedule pod
when VolumeAttachments count does not exceed limit" (VolumeAttachments); "should
count in-tree volumes if migration is enabled", "nil csi node", "should count
unbound in-tree volumes if migration is enabled", "should not limit pod if volume
used does not report limits", "should count in-tree inline volumes if migration is
enabled", "should count in-tree and csi volumes if migration is enabled (when
scheduling in-tree volumes)", "should count in-tree, inline and csi volumes if
migration is enabled (when scheduling in-tree volumes)", "should not count in-tree,
inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
"should count in-tree and csi volumes if migration is enabled (when scheduling csi
volumes)" and "don't skip Filter when the pod has inline migratable volumes" (in-tree
to CSI translation); TestCSILimitsQHint, TestCSILimitsAddedPVCQHint and
TestCSILimitsDeletedVolumeAttachmentQHint (queueing hints).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests.builders import csinode, make_pod, node, pv, pvc, storage_class, with_claim, with_volume
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NodeVolumeLimits,
)

RawObj = dict[str, Any]
EXCEEDED = Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
HOSTPATH = "kubernetes.io/hostpath"
NODE = "node-for-max-pd-test-1"
NO_LIMIT = -1
_n = iter(range(10**6))


def fixtures(*drivers: str) -> list[RawObj]:
    """getFakeCSIPVLister, getFakeCSIPVCLister and getFakeCSIStorageClassLister."""
    out: list[RawObj] = []
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            out.append(pvc(name, volume=name))
            volume = pv(name, csi=(driver, name))
            if driver == HOSTPATH:
                del volume["spec"]["csi"]
                volume["spec"]["hostPath"] = {"path": "/tmp"}
            out.append(volume)
    out += [
        pvc("csi-4", storage_class="csi-sc"),
        pvc("csi-5"),
        pvc("csi-6", storage_class="csi-sc", volume="missing-in-action"),
        storage_class("csi-sc", provisioner=drivers[0]),
    ]
    return out


def claims_pod(*claims: str, name: str = "") -> RawObj:
    """st.MakePod().PVC(claim)...; bound to the node when `name` is not given (an
    existing pod), else the incoming pod of that name."""
    b = make_pod().name(name or f"p{next(_n)}")
    if not name:
        b = b.node(NODE)
    p = b.obj()
    for claim in claims:
        with_claim(p, claim)
    return p


def running() -> RawObj:
    return claims_pod(f"csi-{EBS}-3")


def pending() -> RawObj:
    return claims_pod("csi-4")


def ebs_two() -> RawObj:
    return claims_pod(f"csi-{EBS}-1", f"csi-{EBS}-2")


def gce_two(name: str = "") -> RawObj:
    return claims_pod(f"csi-{GCE}-1", f"csi-{GCE}-2", name=name)


EBS_ONE = claims_pod(f"csi-{EBS}-0", name="new")


def ephemeral_pod(uid: str, *volumes: str, node_name: str = "") -> RawObj:
    """A pod test/abc with one generic ephemeral volume per name."""
    b = make_pod().name("abc").namespace("test").uid(uid)
    if node_name:
        b = b.node(node_name)
    p = b.obj()
    for v in volumes:
        with_volume(p, {"name": v, "ephemeral": {}})
    return p


def ephemeral_claim(name: str, owner_uid: str | None) -> RawObj:
    """A claim of class csi-sc in namespace test, controlled by pod abc with this uid
    (None: no owner, upstream's conflictingClaim)."""
    claim = pvc(name, storage_class="csi-sc", ns="test")
    if owner_uid is not None:
        claim["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": owner_uid, "controller": True}
        ]
    return claim


EPHEMERAL = ephemeral_pod("12345", "xyz")
EPHEMERAL_CLAIM = ephemeral_claim("abc-xyz", "12345")
CONFLICTING_CLAIM = ephemeral_claim("abc-xyz", None)
EPHEMERAL_TWO = ephemeral_pod("12345II", "x", "y", node_name=NODE)
EPHEMERAL_CLAIM_X = ephemeral_claim("abc-x", "12345II")
EPHEMERAL_CLAIM_Y = ephemeral_claim("abc-y", "12345II")
CONFIGMAP_AND_SECRET = ({"name": "cm", "configMap": {}}, {"name": "s", "secret": {}})
# The informer lister's message (upstream's fake lister prints "persistentvolumeclaims").
NOT_OWNER = Status(
    Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"
)
EPHEMERAL_MISSING = Status(
    Code.UNRESOLVABLE, 'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'
)


def with_volumes(p: RawObj, *volumes: RawObj) -> RawObj:
    for v in volumes:
        with_volume(p, dict(v))
    return p


def run(
    p: RawObj,
    existing: list[RawObj],
    drivers: tuple[str, ...],
    limit: int | None,
    extra: Sequence[RawObj] = (),
) -> tuple[Status, Status | None]:
    """(PreFilter status, Filter status on the node, None after a skipping PreFilter)."""
    objs: list[RawObj] = [node(NODE), *fixtures(*drivers), *extra, *existing]
    if limit is not None:
        objs.append(csinode(NODE, dict.fromkeys(drivers, limit)))
        if limit == NO_LIMIT:
            for driver in objs[-1]["spec"]["drivers"]:
                del driver["allocatable"]
    snapshot = Snapshot.from_objects(objs)
    plugin = NodeVolumeLimits()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if pre.code is Code.SKIP:
        return pre, None
    return pre, plugin.filter(state, p, snapshot.nodes[NODE])


@pytest.mark.parametrize(
    ("p", "existing", "drivers", "limit", "extra", "want_pre", "want"),
    [
        pytest.param(
            EBS_ONE,
            [running(), ebs_two()],
            (EBS,),
            4,
            [],
            SUCCESS,
            SUCCESS,
            id="fits when node volume limit >= new pods CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [running(), ebs_two()],
            (EBS,),
            2,
            [],
            SUCCESS,
            EXCEEDED,
            id="doesn't when node volume limit <= pods CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [running(), ebs_two()],
            (EBS,),
            NO_LIMIT,
            [],
            SUCCESS,
            SUCCESS,
            id="should when driver does not support volume limits",
        ),
        pytest.param(
            EBS_ONE,
            [pending(), ebs_two()],
            (EBS,),
            2,
            [],
            SUCCESS,
            EXCEEDED,
            id="count pending PVCs towards volume limit <= pods CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [pending(), pending(), ebs_two()],
            (EBS,),
            4,
            [],
            SUCCESS,
            SUCCESS,
            id="count multiple pending pvcs towards volume limit >= pods CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [claims_pod("csi-6"), ebs_two()],
            (EBS,),
            2,
            [],
            SUCCESS,
            EXCEEDED,
            id="should count PVCs with invalid PV name but valid SC",
        ),
        pytest.param(
            EBS_ONE,
            [running(), claims_pod("csi-5")],
            (EBS,),
            2,
            [],
            SUCCESS,
            SUCCESS,
            id="don't count pvcs with missing SC towards volume limit",
        ),
        pytest.param(
            EBS_ONE,
            [gce_two(), ebs_two()],
            (EBS, GCE),
            2,
            [],
            SUCCESS,
            EXCEEDED,
            id="count pvcs with the same type towards volume limit",
        ),
        pytest.param(
            gce_two(name="new"),
            [ebs_two(), running()],
            (EBS, GCE),
            2,
            [],
            SUCCESS,
            SUCCESS,
            id="don't count pvcs with different type towards volume limit",
        ),
        pytest.param(
            claims_pod(f"csi-{HOSTPATH}-0", name="new"),
            [ebs_two()],
            (HOSTPATH, EBS),
            2,
            [],
            SUCCESS,
            SUCCESS,
            id="should not count non-migratable in-tree volumes",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            (EBS,),
            NO_LIMIT,
            [],
            SUCCESS,
            EPHEMERAL_MISSING,
            id="ephemeral volume missing",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            (EBS,),
            NO_LIMIT,
            [CONFLICTING_CLAIM],
            SUCCESS,
            NOT_OWNER,
            id="ephemeral volume not owned",
        ),
        pytest.param(
            EPHEMERAL,
            [],
            (EBS,),
            NO_LIMIT,
            [EPHEMERAL_CLAIM],
            SUCCESS,
            SUCCESS,
            id="ephemeral volume unbound",
        ),
        pytest.param(
            EPHEMERAL,
            [running(), ebs_two()],
            (EBS,),
            2,
            [EPHEMERAL_CLAIM],
            SUCCESS,
            EXCEEDED,
            id="ephemeral doesn't when node volume limit <= pods CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [running(), EPHEMERAL_TWO],
            (EBS,),
            2,
            [EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y],
            SUCCESS,
            EXCEEDED,
            id="ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        ),
        pytest.param(
            EBS_ONE,
            [running(), ephemeral_pod("12345", "xyz", node_name=NODE), ebs_two()],
            (EBS,),
            3,
            [EPHEMERAL_CLAIM],
            SUCCESS,
            EXCEEDED,
            id="persistent doesn't when node volume limit <= pods ephemeral CSI volume"
            " + persistent volume, ephemeral disabled",
        ),
        pytest.param(
            EBS_ONE,
            [running(), ephemeral_pod("12345", "xyz", node_name=NODE), ebs_two()],
            (EBS,),
            3,
            [EPHEMERAL_CLAIM],
            SUCCESS,
            EXCEEDED,
            id="persistent doesn't when node volume limit <= pods ephemeral CSI volume"
            " + persistent volume",
        ),
        pytest.param(
            EBS_ONE,
            [running(), ephemeral_pod("12345", "xyz", node_name=NODE), ebs_two()],
            (EBS,),
            5,
            [EPHEMERAL_CLAIM],
            SUCCESS,
            SUCCESS,
            id="persistent okay when node volume limit > pods ephemeral CSI volume"
            " + persistent volume",
        ),
        pytest.param(
            with_volumes(make_pod().name("new").obj(), *CONFIGMAP_AND_SECRET),
            [],
            (EBS,),
            2,
            [],
            SKIP,
            None,
            id="skip Filter when the pod only uses secrets and configmaps",
        ),
        pytest.param(
            with_volumes(claims_pod(f"csi-{EBS}-0", name="new"), *CONFIGMAP_AND_SECRET),
            [],
            (EBS,),
            2,
            [],
            SUCCESS,
            SUCCESS,
            id="don't skip Filter when the pod has pvcs",
        ),
        pytest.param(
            with_volumes(ephemeral_pod("12345", "xyz"), *CONFIGMAP_AND_SECRET),
            [],
            (EBS,),
            NO_LIMIT,
            [],
            SUCCESS,
            EPHEMERAL_MISSING,
            id="don't skip Filter when the pod has ephemeral volumes",
        ),
    ],
)
def test_csi_limits(
    p: RawObj,
    existing: list[RawObj],
    drivers: tuple[str, ...],
    limit: int | None,
    extra: list[RawObj],
    want_pre: Status,
    want: Status | None,
) -> None:
    """Upstream TestCSILimits: PreFilter, then Filter on the node."""
    assert run(p, existing, drivers, limit, extra) == (want_pre, want)


def test_same_volume_counts_once() -> None:
    """A volume already attached on the node does not count again."""
    existing = [claims_pod(f"csi-{EBS}-0", f"csi-{EBS}-1")]
    assert run(EBS_ONE, existing, (EBS,), 2) == (SUCCESS, SUCCESS)


def test_no_csinode_no_limit() -> None:
    """Without a CSINode nothing is limited."""
    assert run(EBS_ONE, [running(), ebs_two()], (EBS,), None) == (SUCCESS, SUCCESS)


def test_existing_pods_foreign_ephemeral_claim_is_an_error() -> None:
    """An existing pod's ephemeral claim controlled by another pod stops the Filter
    with an Error, as it does upstream for any pod on the node."""
    existing = ephemeral_pod("other-uid", "xyz", node_name=NODE)
    got = run(EBS_ONE, [existing], (EBS,), 2, [EPHEMERAL_CLAIM])
    assert got == (SUCCESS, NOT_OWNER)


def test_claim_without_a_name_is_an_error() -> None:
    """A persistentVolumeClaim volume without claimName: Error."""
    p = with_volume(make_pod().name("new").obj(), {"name": "v", "persistentVolumeClaim": {}})
    assert run(p, [], (EBS,), 2) == (
        SUCCESS,
        Status(Code.ERROR, "PersistentVolumeClaim had no name"),
    )


def test_unbound_claim_handle_does_not_collide_with_a_real_handle() -> None:
    """An unbound claim of class csi-sc counts on its own even when a bound PV's handle
    spells "<namespace>-<claim>" (upstream's random prefix guarantees as much)."""
    existing = [claims_pod("lookalike")]
    extra = [
        pvc("lookalike", volume="lookalike-pv"),
        pv("lookalike-pv", csi=(EBS, "default-csi-4")),
    ]
    assert run(claims_pod("csi-4", name="new"), existing, (EBS,), 1, extra) == (SUCCESS, EXCEEDED)
