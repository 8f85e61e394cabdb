"""VolumeZone, from upstream's volumezone/volume_zone_test.go: TestSingleZone,
TestMultiZone and TestWithBinding, case by case.

Each case runs PreFilter for pod_1 and, when it succeeds, Filter on host1 (upstream
also calls Filter after a failed or skipped PreFilter, where its Filter recomputes
from the listers; the framework never does, so neither does this test). Left out:
TestIsSchedulableAfterPersistentVolumeClaimAdded, TestIsSchedulableAfterStorageClassAdded
and TestIsSchedulableAfterPersistentVolumeChange (queueing hints: no scheduling queue
here).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod, node, pv, pvc, storage_class, with_claim, with_volume
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.volumezone import CONFLICT, VolumeZone, label_zones_to_set

RawObj = dict[str, Any]
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
USELESS = {"uselessLabel": "none"}


def claims(names: dict[str, str]) -> list[RawObj]:
    """PVC name -> the PV it is bound to (upstream's pvcLister)."""
    return [pvc(claim, volume=volume) for claim, volume in names.items()]


SINGLE_ZONE = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", **USELESS}),
    pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", **USELESS}),
    pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    *claims(
        {
            "PVC_1": "Vol_1",
            "PVC_2": "Vol_2",
            "PVC_3": "Vol_3",
            "PVC_4": "Vol_not_exist",
            "PVC_Stable_1": "Vol_Stable_1",
            "PVC_Stable_2": "Vol_Stable_2",
            "PVC_Stable_3": "Vol_Stable_3",
        }
    ),
]
MULTI_ZONE = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_ZONE: "us-west1-b", **USELESS}),
    pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
    *claims(
        {
            "PVC_1": "Vol_1",
            "PVC_2": "Vol_2",
            "PVC_3": "Vol_3",
            "PVC_4": "Vol_not_exist",
            "PVC_Stable_1": "Vol_Stable_1",
            "PVC_Stable_2": "Vol_Stable_2",
        }
    ),
]
# Class_Immediate has no volumeBindingMode at all, as in upstream's scLister.
CLASS_IMMEDIATE: RawObj = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "Class_Immediate"},
    "provisioner": "csi.example.com",
}
WITH_BINDING = [
    CLASS_IMMEDIATE,
    storage_class("Class_Wait", mode="WaitForFirstConsumer"),
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", volume="Vol_1"),
    pvc("PVC_NoSC", storage_class="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storage_class="Class_Wait"),
    pvc("PVC_ImmediateSC", storage_class="Class_Immediate"),
]
TEST_NODE = {BETA_ZONE: "us-west1-a", **USELESS}


def pod_1(claim: str | None) -> RawObj:
    """createPodWithVolume("pod_1", claim); no volume at all when claim is None."""
    p = make_pod().name("pod_1").obj()
    return with_claim(p, claim) if claim is not None else p


def run(p: RawObj, labels: dict[str, str], objs: list[RawObj]) -> tuple[Status, Status | None]:
    """(PreFilter status, Filter status on host1; None when PreFilter did not succeed)."""
    snapshot = Snapshot.from_objects([node("host1", labels), *objs])
    plugin = VolumeZone()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre, None
    return pre, plugin.filter(state, p, snapshot.nodes["host1"])


CASE_ARGS = ("claim", "labels", "want_pre", "want_filter")


def case(
    name: str, claim: str | None, labels: dict[str, str], pre: Status, filt: Status | None
) -> Any:
    """One row: the case id, pod_1's claim, host1's labels, PreFilter's and Filter's
    statuses."""
    return pytest.param(claim, labels, pre, filt, id=name)


def unresolvable(reason: str) -> Status:
    return Status(Code.UNRESOLVABLE, reason)


def refused(name: str, claim: str, labels: dict[str, str], reason: str) -> Any:
    """A row whose PreFilter refuses the pod (UnschedulableAndUnresolvable)."""
    return case(name, claim, labels, unresolvable(reason), None)


BETA_WEST1_A = {BETA_ZONE: "us-west1-a", **USELESS}


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        case("pod without volume", None, {BETA_ZONE: "us-west1-a"}, SKIP, None),
        case("node without labels", "PVC_1", {}, SUCCESS, SUCCESS),
        case("beta zone label matched", "PVC_1", BETA_WEST1_A, SUCCESS, SUCCESS),
        case(
            "beta region label matched",
            "PVC_2",
            {BETA_REGION: "us-west1", **USELESS},
            SUCCESS,
            SUCCESS,
        ),
        case(
            "beta region label doesn't match",
            "PVC_2",
            {BETA_REGION: "no_us-west1", **USELESS},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "beta zone label doesn't match",
            "PVC_1",
            {BETA_ZONE: "no_us-west1-a", **USELESS},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", **USELESS}, SUCCESS, SUCCESS
        ),
        case(
            "region label matched",
            "PVC_Stable_2",
            {REGION: "us-west1", **USELESS},
            SUCCESS,
            SUCCESS,
        ),
        case(
            "region label doesn't match",
            "PVC_Stable_2",
            {REGION: "no_us-west1", **USELESS},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "zone label doesn't match",
            "PVC_Stable_1",
            {ZONE: "no_us-west1-a", **USELESS},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "pv with zone and region, node with only zone",
            "PVC_Stable_3",
            {ZONE: "us-west1-a"},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "pv with zone,node with beta zone",
            "PVC_Stable_1",
            {BETA_ZONE: "us-west1-a"},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "pv with beta label,node with ga label, matched",
            "PVC_1",
            {ZONE: "us-west1-a"},
            SUCCESS,
            SUCCESS,
        ),
        case(
            "pv with beta label,node with ga label, don't match",
            "PVC_1",
            {ZONE: "us-west1-b"},
            SUCCESS,
            CONFLICT,
        ),
    ],
)
def test_single_zone(
    claim: str | None, labels: dict[str, str], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestSingleZone."""
    assert run(pod_1(claim), labels, SINGLE_ZONE) == (want_pre, want_filter)


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        case("node without labels", "PVC_3", {}, SUCCESS, SUCCESS),
        case("beta zone label matched", "PVC_3", BETA_WEST1_A, SUCCESS, SUCCESS),
        case(
            "beta zone label doesn't match",
            "PVC_1",
            {BETA_ZONE: "us-west1-b", **USELESS},
            SUCCESS,
            CONFLICT,
        ),
        case(
            "zone label matched", "PVC_Stable_2", {ZONE: "us-west1-a", **USELESS}, SUCCESS, SUCCESS
        ),
        case(
            "zone label doesn't match",
            "PVC_Stable_1",
            {ZONE: "us-west1-b", **USELESS},
            SUCCESS,
            CONFLICT,
        ),
    ],
)
def test_multi_zone(
    claim: str, labels: dict[str, str], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestMultiZone: "a__b" PV labels allow either zone."""
    assert run(pod_1(claim), labels, MULTI_ZONE) == (want_pre, want_filter)


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        case("label zone failure domain matched", "PVC_1", TEST_NODE, SUCCESS, SUCCESS),
        refused(
            "unbound volume empty storage class",
            "PVC_EmptySC",
            TEST_NODE,
            "PersistentVolumeClaim had no pv name and storageClass name",
        ),
        # The informer lister's message (upstream's fake one says "storageclasses").
        refused(
            "unbound volume no storage class",
            "PVC_NoSC",
            TEST_NODE,
            'storageclass.storage.k8s.io "Class_0" not found',
        ),
        refused(
            "unbound volume immediate binding mode",
            "PVC_ImmediateSC",
            TEST_NODE,
            'VolumeBindingMode not set for StorageClass "Class_Immediate"',
        ),
        case("unbound volume wait binding mode", "PVC_WaitSC", TEST_NODE, SKIP, None),
    ],
)
def test_with_binding(
    claim: str, labels: dict[str, str], want_pre: Status, want_filter: Status | None
) -> None:
    """Upstream TestWithBinding: unbound claims of a WaitForFirstConsumer class are
    skipped, the others are errors."""
    assert run(pod_1(claim), labels, WITH_BINDING) == (want_pre, want_filter)


MORE = [
    storage_class("imm"),
    pvc("PVC_Immediate", storage_class="imm"),
    pvc("PVC_4", volume="Vol_not_exist"),
    pv("Vol_empty", labels={ZONE: "", REGION: "us-west1"}),
    pvc("PVC_empty", volume="Vol_empty"),
    pv("Vol_gap", labels={ZONE: "us-west1-a____us-west1-b"}),
    pvc("PVC_gap", volume="Vol_gap"),
    pv("Vol_spaced", labels={ZONE: " us-west1-a__ us-west1-b "}),
    pvc("PVC_spaced", volume="Vol_spaced"),
]
ZONE_X = {ZONE: "x"}


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        refused(
            "unbound claim of an Immediate class",
            "PVC_Immediate",
            ZONE_X,
            "PersistentVolume had no name",
        ),
        refused(
            "claim bound to a missing PV",
            "PVC_4",
            ZONE_X,
            'persistentvolume "Vol_not_exist" not found',
        ),
        refused("missing claim", "PVC_none", ZONE_X, 'persistentvolumeclaim "PVC_none" not found'),
        case(
            "an empty zone label is ignored, the region still counts",
            "PVC_empty",
            {ZONE: "us-west1-a", REGION: "us-west1"},
            SUCCESS,
            SUCCESS,
        ),
        case(
            "a zone list with an empty member is ignored",
            "PVC_gap",
            {ZONE: "elsewhere"},
            SKIP,
            None,
        ),
        case("zone list members are trimmed", "PVC_spaced", {ZONE: "us-west1-b"}, SUCCESS, SUCCESS),
    ],
)
def test_volume_zone_more(
    claim: str, labels: dict[str, str], want_pre: Status, want_filter: Status | None
) -> None:
    """Immediate and missing objects, and how zone label values are parsed."""
    assert run(pod_1(claim), labels, MORE) == (want_pre, want_filter)


def test_ephemeral_volumes_are_not_read() -> None:
    """Only persistentVolumeClaim volumes name claims here: an ephemeral volume whose
    claim does not exist yet does not stop the pod."""
    p = with_volume(make_pod().name("pod_1").obj(), {"name": "data", "ephemeral": {}})
    assert run(p, {ZONE: "x"}, []) == (SKIP, None)


def test_filter_passes_a_pod_without_volumes() -> None:
    """Filter's fast path: a pod without volumes fits, whatever the state."""
    snapshot = Snapshot.from_objects([node("host1", {ZONE: "x"})])
    assert VolumeZone().filter(CycleState(), pod_1(None), snapshot.nodes["host1"]) == SUCCESS


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("a", frozenset({"a"})),
        ("a__b", frozenset({"a", "b"})),
        (" a __b", frozenset({"a", "b"})),
        ("", None),
        ("a____b", None),
        ("a__", None),
    ],
)
def test_label_zones_to_set(value: str, want: frozenset[str] | None) -> None:
    """volumehelpers.LabelZonesToSet: "__"-separated, trimmed, no empty member."""
    assert label_zones_to_set(value) == want
