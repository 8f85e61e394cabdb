"""VolumeBinding PreFilter and Filter, after upstream's volumebinding/volume_binding_test.go.

Legend: nodes "zone-a" and "zone-b" carry topology.kubernetes.io/zone; `want` maps
every node to its Filter status (SUCCESS omitted), or is the PreFilter status.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    csinode,
    make_pod,
    node,
    pv,
    pvc,
    storage_class,
    with_claim,
    with_volume,
)
from tests.scheduler.test_properties import reference_place
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS
from webhook.scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    VolumeBinding,
)
from webhook.scheduler.profile import default_framework

RawObj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
NODES = [node("zone-a", {ZONE: "a"}), node("zone-b", {ZONE: "b"})]


def run(p: RawObj, objs: list[RawObj]) -> Status | dict[str, Status]:
    snapshot = Snapshot.from_objects([*NODES, *objs])
    plugin = VolumeBinding()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre
    return {n: s for n, i in snapshot.nodes.items() if (s := plugin.filter(state, p, i)) != SUCCESS}


def pod_with(*claims: str) -> RawObj:
    p = make_pod().name("pod").obj()
    for c in claims:
        with_claim(p, c)
    return p


WFFC = storage_class("wffc", mode="WaitForFirstConsumer")
CASES: list[tuple[str, RawObj, list[RawObj], Status | dict[str, Status]]] = [
    ("pod has not pvcs", make_pod().obj(), [], SKIP),
    (
        "all bound",
        pod_with("pvc-a"),
        [pvc("pvc-a", volume="pv-a"), pv("pv-a", node_in=(ZONE, ["a"]))],
        {"zone-b": Status(Code.UNRESOLVABLE, ERR_REASON_NODE_CONFLICT)},
    ),
    (
        "PVC does not exist",
        pod_with("pvc-a"),
        [],
        Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'),
    ),
    (
        "Part of PVCs do not exist",
        pod_with("pvc-a", "pvc-b"),
        [pvc("pvc-a", volume="pv-a"), pv("pv-a")],
        Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found'),
    ),
    (
        "immediate claims not bound",
        pod_with("pvc-a"),
        [pvc("pvc-a", storage_class="fast"), storage_class("fast")],
        Status(Code.UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
    ),
    (
        "unbound claims no matches",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="wffc"),
            storage_class(
                "wffc", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"
            ),
        ],
        {n: Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT) for n in ("zone-a", "zone-b")},
    ),
    (
        "unbound claims matches a static PV on one node",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="wffc"),
            storage_class(
                "wffc", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"
            ),
            pv("pv-a", storage_class="wffc", node_in=(ZONE, ["b"])),
        ],
        {"zone-a": Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)},
    ),
    (
        "unbound WaitForFirstConsumer provisioned where allowedTopologies allow",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="wffc"),
            storage_class("wffc", mode="WaitForFirstConsumer", zones=["a"]),
        ],
        {"zone-b": Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)},
    ),
    (
        "unbound WaitForFirstConsumer without allowedTopologies provisions anywhere",
        pod_with("pvc-a"),
        [pvc("pvc-a", storage_class="wffc"), WFFC],
        {},
    ),
    (
        "PVC bound to a PV that does not exist",
        pod_with("pvc-a"),
        [pvc("pvc-a", volume="pv-gone")],
        {n: Status(Code.UNRESOLVABLE, ERR_REASON_PV_NOT_EXIST) for n in ("zone-a", "zone-b")},
    ),
    (
        "a too small static PV is not bound, provisioning still works",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="wffc", size="10Gi"),
            WFFC,
            pv("pv-small", storage_class="wffc"),
        ],
        {},
    ),
]

STATIC = storage_class(
    "static", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"
)
BOTH_CONFLICT = {
    n: Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT) for n in ("zone-a", "zone-b")
}


def _static_pv(**changes: Any) -> RawObj:
    """A PV on zone b that the claim pvc-a (class static) matches, with changes applied:
    path=value pairs, `a__b` for a nested field."""
    out = pv("pv-a", storage_class="static", node_in=(ZONE, ["b"]))
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = out
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return out


# pv_helpers.go FindMatchingVolume: which static PVs an unbound claim may take.
CASES += [
    (
        "static PV Available",
        pod_with("pvc-a"),
        [pvc("pvc-a", storage_class="static"), STATIC, _static_pv()],
        {"zone-a": Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)},
    ),
    (
        "static PV Released is not taken",
        pod_with("pvc-a"),
        [pvc("pvc-a", storage_class="static"), STATIC, _static_pv(status__phase="Released")],
        BOTH_CONFLICT,
    ),
    (
        "static PV without a phase is not taken",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="static"),
            STATIC,
            pv("pv-a", storage_class="static", node_in=(ZONE, ["b"]), phase=None),
        ],
        BOTH_CONFLICT,
    ),
    (
        "static PV being deleted is not taken",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="static"),
            STATIC,
            _static_pv(metadata__deletionTimestamp="2026-01-01T00:00:00Z"),
        ],
        BOTH_CONFLICT,
    ),
    (
        "static PV claimed by another claim is not taken",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="static"),
            STATIC,
            _static_pv(spec__claimRef={"name": "other", "namespace": "default"}),
        ],
        BOTH_CONFLICT,
    ),
    (
        "static PV of another volume mode is not taken",
        pod_with("pvc-a"),
        [pvc("pvc-a", storage_class="static"), STATIC, _static_pv(spec__volumeMode="Block")],
        BOTH_CONFLICT,
    ),
    (
        "static PV of the beta class annotation",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="static"),
            STATIC,
            _static_pv(
                spec__storageClassName="",
                metadata__annotations={"volume.beta.kubernetes.io/storage-class": "static"},
            ),
        ],
        {"zone-a": Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)},
    ),
    (
        "PV pre-bound to the claim is taken whatever its phase",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="static"),
            STATIC,
            _static_pv(
                status__phase="Pending", spec__claimRef={"name": "pvc-a", "namespace": "default"}
            ),
        ],
        {"zone-a": Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)},
    ),
    (
        "PV pre-bound to another uid of the claim's name is not taken",
        pod_with("pvc-a"),
        [
            pvc("pvc-a", storage_class="static"),
            STATIC,
            _static_pv(spec__claimRef={"name": "pvc-a", "namespace": "default", "uid": "old"}),
        ],
        BOTH_CONFLICT,
    ),
]


@pytest.mark.parametrize(("p", "objs", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_volume_binding(p: RawObj, objs: list[RawObj], want: Status | dict[str, Status]) -> None:
    """Upstream TestVolumeBinding: PreFilter status or the whole Filter map."""
    assert run(p, objs) == want


def test_ephemeral_volume_waits_for_its_claim() -> None:
    """An ephemeral volume whose claim is not created yet is unresolvable, upstream's words."""
    p = with_volume(
        make_pod().name("web").obj(), {"name": "data", "ephemeral": {"volumeClaimTemplate": {}}}
    )
    assert run(p, []) == Status(
        Code.UNRESOLVABLE,
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "web-data"',
    )


def test_claim_being_deleted() -> None:
    """A claim with a deletionTimestamp rejects the pod."""
    claim = pvc("pvc-a", volume="pv-a")
    claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert run(pod_with("pvc-a"), [claim, pv("pv-a")]) == Status(
        Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" is being deleted'
    )


def test_pre_score_skips_without_storage_capacity_scoring() -> None:
    """VolumeBinding scores only with StorageCapacityScoring, off by default upstream."""
    snapshot = Snapshot.from_objects(NODES)
    assert VolumeBinding().pre_score(CycleState(), pod_with("x"), [], snapshot) == SKIP


# ---- placement remembers verdicts only while the volume objects they read hold ---------

CSI = ("csi.example.com", "handle-a")


@pytest.mark.parametrize(
    ("objs", "changes", "before", "after"),
    [
        pytest.param(
            [pvc("pvc-a", volume="pv-a"), pv("pv-a", node_in=(ZONE, ["a"]))],
            [pv("pv-a", node_in=(ZONE, ["b"]))],
            ["zone-a"], ["zone-b"],
            id="a bound PV's node affinity moves to another zone",
        ),
        pytest.param(
            [pvc("pvc-a", storage_class="wffc"), WFFC],
            [pvc("pvc-a", storage_class="wffc", volume="pv-b"),
             pv("pv-b", node_in=(ZONE, ["b"]), storage_class="wffc")],
            ["zone-a", "zone-b"], ["zone-b"],
            id="a waiting claim gets bound to a zonal PV",
        ),
        pytest.param(
            [pvc("pvc-a", storage_class="wffc"),
             storage_class("wffc", mode="WaitForFirstConsumer", zones=["a"])],
            [storage_class("wffc", mode="WaitForFirstConsumer", zones=["b"])],
            ["zone-a"], ["zone-b"],
            id="a StorageClass's allowedTopologies change",
        ),
        pytest.param(
            [pvc("pvc-a", volume="pv-a"), pv("pv-a", csi=CSI), csinode("zone-a", {CSI[0]: 0})],
            [csinode("zone-a", {CSI[0]: 4})],
            ["zone-b"], ["zone-a", "zone-b"],
            id="a CSINode's attach limit grows (NodeVolumeLimits)",
        ),
    ],
)
def test_place_follows_volume_object_changes(
    objs: list[RawObj], changes: list[RawObj], before: list[str], after: list[str]
) -> None:
    """The same pod decided before and after PVCs, PVs, StorageClasses or CSINodes
    change (no node does): the second decision reads the new objects, as the
    node-by-node reference does."""
    snapshot = Snapshot.from_objects([*NODES, *objs])
    fw = default_framework()
    p = pod_with("pvc-a")
    assert [n.name for n in place(p, snapshot, framework=fw).feasible] == before
    for obj in changes:
        snapshot.upsert(obj)
    second = place(p, snapshot, framework=fw)
    assert [n.name for n in second.feasible] == after
    assert second == reference_place(p, snapshot, DEFAULT_ARGS, fw)


def test_place_reads_the_claims_of_the_pod_s_own_namespace() -> None:
    """Two pods with the same spec in two namespaces name two different claims: the
    verdicts remembered for one are not the other's."""
    snapshot = Snapshot.from_objects(
        [
            *NODES,
            pvc("pvc-a", volume="pv-a", ns="ns1"),
            pvc("pvc-a", volume="pv-b", ns="ns2"),
            pv("pv-a", node_in=(ZONE, ["a"])),
            pv("pv-b", node_in=(ZONE, ["b"])),
        ]
    )
    fw = default_framework()
    for ns, want in (("ns1", ["zone-a"]), ("ns2", ["zone-b"])):
        p = pod_with("pvc-a")
        p["metadata"]["namespace"] = ns
        assert [n.name for n in place(p, snapshot, framework=fw).feasible] == want
