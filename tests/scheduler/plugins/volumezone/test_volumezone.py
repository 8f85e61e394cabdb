"""VolumeZone, after upstream's volumezone/volume_zone_test.go (its PV / node labels)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod, node, pv, pvc, storage_class, with_claim
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.plugins.volumezone import CONFLICT, VolumeZone

RawObj = dict[str, Any]
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"

OBJECTS = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", labels={BETA_REGION: "us-west1-b", BETA_ZONE: "us-west1-a__us-west1-b"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", "uselessLabel": "none"}),
    pvc("PVC_1", volume="Vol_1"),
    pvc("PVC_2", volume="Vol_2"),
    pvc("PVC_3", volume="Vol_3"),
    pvc("PVC_4", volume="Vol_not_exist"),
    pvc("PVC_Stable_1", volume="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume="Vol_Stable_2"),
    pvc("PVC_WFFC", storage_class="wffc"),
    pvc("PVC_Immediate", storage_class="imm"),
    storage_class("wffc", mode="WaitForFirstConsumer"),
    storage_class("imm"),
]


def run(claim: str, labels: dict[str, str]) -> Status:
    snapshot = Snapshot.from_objects([node("host1", labels), *OBJECTS])
    p = with_claim(make_pod().obj(), claim)
    plugin = VolumeZone()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre
    return plugin.filter(state, p, snapshot.nodes["host1"])


CASES = [
    ("node without labels", "PVC_1", {}, SUCCESS),
    (
        "beta zone label matched",
        "PVC_1",
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        SUCCESS,
    ),
    (
        "beta region label matched",
        "PVC_2",
        {BETA_REGION: "us-west1", "uselessLabel": "none"},
        SUCCESS,
    ),
    (
        "beta region label doesn't match",
        "PVC_2",
        {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
        CONFLICT,
    ),
    (
        "beta zone label doesn't match",
        "PVC_1",
        {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"},
        CONFLICT,
    ),
    ("zone label matched", "PVC_Stable_1", {ZONE: "us-west1-a", "uselessLabel": "none"}, SUCCESS),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}, SUCCESS),
    (
        "region label doesn't match",
        "PVC_Stable_2",
        {REGION: "no_us-west1", "uselessLabel": "none"},
        CONFLICT,
    ),
    (
        "zone label doesn't match",
        "PVC_Stable_1",
        {ZONE: "no_us-west1-a", "uselessLabel": "none"},
        CONFLICT,
    ),
    ("pv with zone and region, node with only zone", "PVC_3", {BETA_ZONE: "us-west1-a"}, CONFLICT),
    (
        "pv with zone,node with beta zone labels",
        "PVC_3",
        {BETA_REGION: "us-west1-b", BETA_ZONE: "us-west1-b"},
        SUCCESS,
    ),
    ("pv with beta zone, node with GA zone label", "PVC_1", {ZONE: "us-west1-a"}, SUCCESS),
    (
        "pv with zone list, node in the second zone",
        "PVC_3",
        {REGION: "us-west1-b", ZONE: "us-west1-b"},
        SUCCESS,
    ),
    ("PVC with WaitForFirstConsumer class is skipped", "PVC_WFFC", {ZONE: "x"}, SKIP),
    (
        "unbound Immediate claim",
        "PVC_Immediate",
        {ZONE: "x"},
        Status(Code.UNRESOLVABLE, "PersistentVolume had no name"),
    ),
    (
        "claim bound to a missing PV",
        "PVC_4",
        {ZONE: "x"},
        Status(Code.UNRESOLVABLE, 'persistentvolume "Vol_not_exist" not found'),
    ),
    (
        "missing claim",
        "PVC_none",
        {ZONE: "x"},
        Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "PVC_none" not found'),
    ),
]


@pytest.mark.parametrize(
    ("claim", "labels", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_volume_zone(claim: str, labels: dict[str, str], want: Status) -> None:
    """Upstream TestSingleZone / TestMultiZone cases: PreFilter, then Filter on host1."""
    assert run(claim, labels) == want
