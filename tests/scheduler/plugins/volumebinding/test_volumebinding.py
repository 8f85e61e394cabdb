"""VolumeBinding, from upstream's volumebinding/volume_binding_test.go (TestVolumeBinding)
and binder_test.go (TestFindPodVolumesWithoutProvisioning,
TestFindPodVolumesWithProvisioning), case by case, plus pv_helpers.go
FindMatchingVolume's order, the selected-node fast path, and a profile's
VolumeBindingArgs shape deciding where a pod goes.

Left out, as not modelled (the plugin's docstring says why): the binder tables'
"CSIDriver with capacity tracking" runs (CSIStorageCapacity),
TestFindPodVolumesWithCSIMigration (in-tree PVs translated to CSI), and the
AssumePodVolumes / BindPodVolumes / queueing-hint tests (the binder's cache, the
binding cycle and the scheduling queue). "all bound with local volumes" checks
Filter only: the PreFilterResult it also expects is not modelled.
"""

from __future__ import annotations

import copy
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
from webhook.api.versions import Features, KubeVersion, features_for
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.config.types import UtilizationShapePoint, VolumeBindingArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS
from webhook.scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_PV_NOT_EXIST,
    PodVolumeClaims,
    VolumeBinding,
    find_pod_volumes,
)
from webhook.scheduler.profile import framework_of

RawObj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BIND = Status(Code.UNRESOLVABLE, ERR_REASON_BIND_CONFLICT)
NODE_CONFLICT = Status(Code.UNRESOLVABLE, ERR_REASON_NODE_CONFLICT)
PV_NOT_EXIST = Status(Code.UNRESOLVABLE, ERR_REASON_PV_NOT_EXIST)
BOTH_CONFLICTS = Status.of(Code.UNRESOLVABLE, [ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT])
# The shape upstream's table scores with (defaultShapePoint: best fit, 0 at 0 %).
TEST_SHAPE = VolumeBindingArgs(300, (UtilizationShapePoint(0, 0), UtilizationShapePoint(100, 10)))


def sc(name: str, mode: str | None, provisioner: str = "", **extra: Any) -> RawObj:
    """A StorageClass with exactly these fields (no provisioner when empty)."""
    out: RawObj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass"}
    out["metadata"] = {"name": name}
    if mode is not None:
        out["volumeBindingMode"] = mode
    if provisioner:
        out["provisioner"] = provisioner
    out.update(extra)
    return out


def make_node(name: str, **labels: str) -> RawObj:
    """test_utils.go makeNode: the hostname label is the name."""
    return node(name, {HOSTNAME: name, **labels})


def make_pv(name: str, cls: str, size: str = "1Gi", **affinity: list[str]) -> RawObj:
    """makePV(name, class).withPhase(Available).withCapacity(size).withNodeAffinity(...):
    one node selector term with a requirement per key (keyword keys spell '.' as '__'
    and '/' as '___')."""
    out = pv(name, storage_class=cls, size=size)
    if affinity:
        exprs = [
            {"key": k.replace("___", "/").replace("__", "."), "operator": "In", "values": v}
            for k, v in affinity.items()
        ]
        out["spec"]["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}
        }
    return out


def host(*names: str) -> dict[str, list[str]]:
    return {"kubernetes__io___hostname": list(names)}


def pod_with(*claims: str) -> RawObj:
    p = make_pod().name("pod-a").obj()
    for c in claims:
        with_claim(p, c)
    return p


def run(
    p: RawObj,
    nodes: list[RawObj],
    objs: list[RawObj],
    args: VolumeBindingArgs | None = None,
    features: Features | None = None,
) -> tuple[Status, dict[str, Status], dict[str, int] | None]:
    """(PreFilter status, each node's Filter status, each node's score or None when
    PreScore skips); Filter and scores only after a successful PreFilter."""
    snapshot = Snapshot.from_objects([*nodes, *objs])
    plugin = VolumeBinding(args, features=features)
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre, {}, None
    infos = [snapshot.nodes[n["metadata"]["name"]] for n in nodes]
    filters = {i.name: plugin.filter(state, p, i) for i in infos}
    if plugin.pre_score(state, p, infos, snapshot).code is Code.SKIP:
        return pre, filters, None
    scores = {}
    for info in infos:
        score, status = plugin.score(state, p, info)
        assert status.ok
        scores[info.name] = score
    return pre, filters, scores


IMMEDIATE_SC = sc("immediate-sc", "Immediate")
WAIT_SC = sc("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = sc("wait-hdd-sc", "WaitForFirstConsumer")
CLASSES = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC]
NODE_A = [make_node("node-a")]
ABC = [make_node("node-a"), make_node("node-b"), make_node("node-c")]


def zonal(name: str, zone: str, region: str) -> RawObj:
    return make_node(name, **{ZONE: zone, REGION: region})


ZONAL = [
    zonal("zone-a-node-a", "zone-a", "region-a"),
    zonal("zone-a-node-b", "zone-a", "region-a"),
    zonal("zone-b-node-a", "zone-b", "region-b"),
    zonal("zone-b-node-b", "zone-b", "region-b"),
    zonal("zone-c-node-a", "zone-c", "region-c"),
    zonal("zone-c-node-b", "zone-c", "region-c"),
]
ZONAL_PVS = [
    make_pv(
        f"pv-{z}-{i}",
        "wait-sc",
        size,
        topology__kubernetes__io___region=[f"region-{z}"],
        topology__kubernetes__io___zone=[f"zone-{z}"],
    )
    for z, size in (("a", "200Gi"), ("b", "100Gi"))
    for i in (0, 1)
]
LOCAL_PVS = [
    make_pv(f"pv-{n}-{i}", "wait-sc", size, **host(f"node-{n}"))
    for n, size in (("a", "200Gi"), ("b", "100Gi"))
    for i in (0, 1)
]
LOCAL_HDD_PVS = [
    make_pv(f"pv-{n}-{i}", "wait-hdd-sc", size, **host(f"node-{n}"))
    for n, size in (("a", "200Gi"), ("b", "100Gi"))
    for i in (2, 3)
]
ZONE_C = {"zone-c-node-a": BIND, "zone-c-node-b": BIND}


def zonal_scores(*scores: int) -> dict[str, int]:
    return dict(zip([n["metadata"]["name"] for n in ZONAL], scores, strict=True))


CASE_ARGS = ("p", "nodes", "objs", "args", "want")


@pytest.mark.parametrize(
    CASE_ARGS,
    [
        pytest.param(
            make_pod().name("pod-a").obj(),
            NODE_A,
            [],
            None,
            (SKIP, {}, None),
            id="pod has not pvcs",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [pvc("pvc-a", volume="pv-a", storage_class="wait-sc"), make_pv("pv-a", "wait-sc")],
            None,
            (SUCCESS, {"node-a": SUCCESS}, None),
            id="all bound",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            NODE_A,
            [
                pvc("pvc-a", volume="pv-a", storage_class="wait-sc"),
                pvc("pvc-b", volume="pv-b", storage_class="wait-sc"),
                make_pv("pv-a", "wait-sc", **host("node-a")),
                make_pv("pv-b", "wait-sc", **host("node-a")),
            ],
            None,
            (SUCCESS, {"node-a": SUCCESS}, None),
            id="all bound with local volumes",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [],
            None,
            (Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'), {}, None),
            id="PVC does not exist",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            NODE_A,
            [pvc("pvc-a", volume="pv-a", storage_class="wait-sc")],
            None,
            (Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-b" not found'), {}, None),
            id="Part of PVCs do not exist",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [pvc("pvc-a", storage_class="immediate-sc")],
            None,
            (
                Status(Code.UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims"),
                {},
                None,
            ),
            id="immediate claims not bound",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [pvc("pvc-a", storage_class="wait-sc")],
            None,
            (SUCCESS, {"node-a": BIND}, {"node-a": 0}),
            id="unbound claims no matches",
        ),
        pytest.param(
            pod_with("pvc-a", "pvc-b"),
            [make_node("node-a", foo="barbar")],
            [
                pvc("pvc-a", volume="pv-a", storage_class="wait-sc"),
                pvc("pvc-b", storage_class="wait-sc"),
                make_pv("pv-a", "wait-sc", foo=["bar"]),
            ],
            None,
            (SUCCESS, {"node-a": BOTH_CONFLICTS}, {"node-a": 0}),
            id="bound and unbound unsatisfied",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [],
            None,
            (Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" not found'), {}, None),
            id="pvc not found",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [pvc("pvc-a", volume="pv-a", storage_class="wait-sc")],
            None,
            (SUCCESS, {"node-a": PV_NOT_EXIST}, None),
            id="pv not found",
        ),
        pytest.param(
            pod_with("pvc-a"),
            NODE_A,
            [pvc("pvc-a", volume="pv-a", storage_class="wait-sc", phase="Lost")],
            None,
            (
                Status(
                    Code.UNRESOLVABLE,
                    'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
                ),
                {},
                None,
            ),
            id="pv not found claim lost",
        ),
        pytest.param(
            pod_with("pvc-a"),
            ABC,
            [pvc("pvc-a", storage_class="wait-sc", size="50Gi"), *LOCAL_PVS],
            TEST_SHAPE,
            (
                SUCCESS,
                {"node-a": SUCCESS, "node-b": SUCCESS, "node-c": BIND},
                {"node-a": 25, "node-b": 50, "node-c": 0},
            ),
            id="local volumes with close capacity are preferred",
        ),
        pytest.param(
            pod_with("pvc-0", "pvc-1"),
            ABC,
            [
                pvc("pvc-0", storage_class="wait-sc", size="50Gi"),
                pvc("pvc-1", storage_class="wait-hdd-sc", size="100Gi"),
                *LOCAL_PVS,
                *LOCAL_HDD_PVS,
            ],
            TEST_SHAPE,
            (
                SUCCESS,
                {"node-a": SUCCESS, "node-b": SUCCESS, "node-c": BIND},
                # node-a: (25 + 50) / 2 = 37.5 -> 38; node-b: (50 + 100) / 2 = 75
                {"node-a": 38, "node-b": 75, "node-c": 0},
            ),
            id="local volumes with close capacity are preferred (multiple pvcs)",
        ),
        pytest.param(
            pod_with("pvc-a"),
            ZONAL,
            [pvc("pvc-a", storage_class="wait-sc", size="50Gi"), *ZONAL_PVS],
            TEST_SHAPE,
            (
                SUCCESS,
                {**{n["metadata"]["name"]: SUCCESS for n in ZONAL[:4]}, **ZONE_C},
                zonal_scores(25, 25, 50, 50, 0, 0),
            ),
            id="zonal volumes with close capacity are preferred",
        ),
        pytest.param(
            pod_with("pvc-a"),
            ZONAL,
            [pvc("pvc-a", storage_class="wait-sc", size="50Gi"), *ZONAL_PVS],
            VolumeBindingArgs(
                300,
                (
                    UtilizationShapePoint(0, 0),
                    UtilizationShapePoint(50, 3),
                    UtilizationShapePoint(100, 5),
                ),
            ),
            (
                SUCCESS,
                {**{n["metadata"]["name"]: SUCCESS for n in ZONAL[:4]}, **ZONE_C},
                zonal_scores(15, 15, 30, 30, 0, 0),
            ),
            id="zonal volumes with close capacity are preferred (custom shape)",
        ),
    ],
)
def test_volume_binding(
    p: RawObj,
    nodes: list[RawObj],
    objs: list[RawObj],
    args: VolumeBindingArgs | None,
    want: tuple[Status, dict[str, Status], dict[str, int] | None],
) -> None:
    """Upstream TestVolumeBinding: PreFilter, each node's Filter, each node's Score.

    Upstream's PreScore does not skip here (StorageCapacityScoring on), scoring 0 on
    every node where no unbound claim binds to a static PV; this one skips those pods.
    """
    assert run(p, nodes, [*CLASSES, *objs], args) == want


MOST_ALLOCATED = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]


def place_on_two_pvs(profile: Any) -> Any:
    """A pod whose 50Gi claim would bind to node-a's 200Gi PV (25 % used) or node-b's
    100Gi one (50 %), placed by `profile`."""
    objs = [
        WAIT_SC,
        pvc("pvc-a", storage_class="wait-sc", size="50Gi"),
        make_pv("pv-a", "wait-sc", "200Gi", **host("node-a")),
        make_pv("pv-b", "wait-sc", "100Gi", **host("node-b")),
    ]
    snapshot = Snapshot.from_objects([make_node("node-a"), make_node("node-b"), *objs])
    return place(pod_with("pvc-a"), snapshot, framework=framework_of(profile))


@pytest.mark.parametrize(
    ("args", "want_node", "want_scores"),
    [
        pytest.param(
            None,
            "node-a",
            {"node-a": 75, "node-b": 50},
            id="default shape: the node with the most room left",
        ),
        pytest.param(
            {"shape": MOST_ALLOCATED},
            "node-b",
            {"node-a": 25, "node-b": 50},
            id="a profile's shape preferring the fullest volumes",
        ),
        pytest.param(
            {"shape": [{"utilization": 0, "score": 5}, {"utilization": 100, "score": 5}]},
            "node-a",
            {"node-a": 50, "node-b": 50},
            id="a flat shape: a tie, the first by name",
        ),
    ],
)
def test_the_profile_shape_decides_the_node(
    args: dict[str, Any] | None, want_node: str, want_scores: dict[str, int]
) -> None:
    """The whole profile places a pod whose 50Gi claim would bind to node-a's 200Gi PV
    (25 % used) or node-b's 100Gi one (50 %): the two nodes differ in nothing else, so
    the VolumeBindingArgs shape of the profile decides."""
    config = {"profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]}
    profiles, errors = resolve_configuration(config)
    assert errors == []
    placement = place_on_two_pvs(profiles[0])
    assert placement.selected_node == want_node
    assert {n.name: n.scores["VolumeBinding"] for n in placement.nodes} == want_scores


def test_default_shape_prefers_the_node_with_the_most_room() -> None:
    """v1.37 defaults: StorageCapacityScoring on, shape 100 at 0 % and 0 at 100 %: the
    200Gi PVs of node-a (25 % used) beat the 100Gi ones of node-b (50 %)."""
    objs = [*CLASSES, pvc("pvc-a", storage_class="wait-sc", size="50Gi"), *LOCAL_PVS]
    _, _, scores = run(pod_with("pvc-a"), ABC, objs)
    assert scores == {"node-a": 75, "node-b": 50, "node-c": 0}


@pytest.mark.parametrize(
    ("nodes", "objs", "filters"),
    [
        pytest.param(
            ABC,
            [pvc("pvc-a", storage_class="wait-sc", size="50Gi"), *LOCAL_PVS],
            {"node-a": SUCCESS, "node-b": SUCCESS, "node-c": BIND},
            id="local volumes with close capacity are preferred (StorageCapacityScoring "
            "disabled)",
        ),
        pytest.param(
            ZONAL,
            [pvc("pvc-a", storage_class="wait-sc", size="50Gi"), *ZONAL_PVS],
            {**{n["metadata"]["name"]: SUCCESS for n in ZONAL[:4]}, **ZONE_C},
            id="zonal volumes with close capacity are preferred (StorageCapacityScoring "
            "disabled)",
        ),
    ],
)
def test_storage_capacity_scoring_disabled(
    nodes: list[RawObj], objs: list[RawObj], filters: dict[str, Status]
) -> None:
    """v1.37.2's cases with the gate off, as v1.35 and v1.36 run by default: the same
    filters, and PreScore skips (no scorer is built)."""
    for minor in (35, 36):
        features = features_for(KubeVersion(1, minor))
        got = run(pod_with("pvc-a"), nodes, [*CLASSES, *objs], features=features)
        assert got == (SUCCESS, filters, None)


@pytest.mark.parametrize(
    ("minor", "want_node", "want_scored"),
    [
        # StorageCapacityScoring off: no scorer, PreScore skips, the nodes tie and
        # node-a wins by name; on: node-a's PV has more room. The score's absence is
        # what tells the releases apart.
        pytest.param(35, "node-a", False, id="v1.35: VolumeBinding does not score"),
        pytest.param(36, "node-a", False, id="v1.36: VolumeBinding does not score"),
        pytest.param(37, "node-a", True, id="v1.37: StorageCapacityScoring scores"),
    ],
)
def test_volume_binding_scores_from_v1_37(minor: int, want_node: str, want_scored: bool) -> None:
    """The default profile of each release: VolumeBinding scores static bindings only
    where StorageCapacityScoring is on by default (v1.37); before, it never scores."""
    profiles, errors = resolve_configuration({}, features_for(KubeVersion(1, minor)))
    assert errors == []
    placement = place_on_two_pvs(profiles[0])
    assert placement.selected_node == want_node
    scored = {n.name: "VolumeBinding" in n.scores for n in placement.nodes}
    assert scored == {"node-a": want_scored, "node-b": want_scored}


@pytest.mark.parametrize(
    ("minor", "want"),
    [
        pytest.param(
            36,
            [
                "profiles[0].pluginConfig[0].args.shape: Invalid value: "
                '[{"Utilization":0,"Score":10}]: unexpected field `shape`, remove it or '
                "turn on the feature gate StorageCapacityScoring"
            ],
            id="v1.36 refuses a shape",
        ),
        pytest.param(37, [], id="v1.37 takes it"),
    ],
)
def test_shape_needs_storage_capacity_scoring(minor: int, want: list[str]) -> None:
    """ValidateVolumeBindingArgs: a shape with StorageCapacityScoring off is refused."""
    config = {
        "profiles": [
            {
                "pluginConfig": [
                    {"name": "VolumeBinding", "args": {"shape": [{"utilization": 0, "score": 10}]}}
                ]
            }
        ]
    }
    _, errors = resolve_configuration(config, features_for(KubeVersion(1, minor)))
    assert errors == want


# ---- binder_test.go: FindPodVolumes on node1 (nodeKey=node1), namespace testns ----
NODE1 = node("node1", {"nodeKey": "node1"})
BINDER_CLASSES = [
    sc("waitClass", "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    sc("immediateClass", "Immediate"),
    sc(
        "waitClassWithProvisioner",
        "WaitForFirstConsumer",
        "test-provisioner",
        allowedTopologies=[
            {"matchLabelExpressions": [{"key": "nodeKey", "values": ["node1", "reference-value"]}]}
        ],
    ),
    sc(
        "topoMismatchClass",
        "WaitForFirstConsumer",
        "test-provisioner",
        allowedTopologies=[
            {"matchLabelExpressions": [{"key": "nodeKey", "values": ["reference-value"]}]}
        ],
    ),
]


def binder_pvc(
    name: str,
    size: str,
    cls: str,
    bound_to: str = "",
    *,
    prebound: bool = False,
    selected_node: str | None = None,
) -> RawObj:
    """makeTestPVC: namespace testns, uid pvc-uid, Filesystem; bound when `bound_to`
    (pvcBound; prebound: pvcPrebound), selected_node (pvcSelectedNode)."""
    out = pvc(
        name,
        volume=bound_to,
        storage_class=cls,
        size=size,
        ns="testns",
        prebound=prebound,
        selected_node=selected_node,
    )
    out["metadata"]["uid"] = "pvc-uid"
    out["spec"]["volumeMode"] = "Filesystem"
    return out


def binder_pv(
    name: str, node_value: str, size: str, cls: str, claim: RawObj | None = None
) -> RawObj:
    """makeTestPV: Available, node affinity nodeKey In [node_value] when given, and a
    claimRef to `claim` when given."""
    out = pv(name, storage_class=cls, size=size, node_in=("nodeKey", [node_value]))
    out["spec"]["volumeMode"] = "Filesystem"
    if claim is not None:
        meta = claim["metadata"]
        out["spec"]["claimRef"] = {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        }
    return out


UNBOUND = binder_pvc("unbound-pvc", "1G", "waitClass")
UNBOUND2 = binder_pvc("unbound-pvc2", "5G", "waitClass")
BOUND = binder_pvc("bound-pvc", "1G", "waitClass", "pv-bound")
IMMEDIATE_UNBOUND = binder_pvc("immediate-unbound-pvc", "1G", "immediateClass")
IMMEDIATE_BOUND = binder_pvc("immediate-bound-pvc", "1G", "immediateClass", "pv-bound-immediate")
PROVISIONED = binder_pvc("provisioned-pvc", "1Gi", "waitClassWithProvisioner")
NO_PROVISIONER = binder_pvc("no-provisioner-pvc", "1Gi", "waitClass")
TOPO_MISMATCH = binder_pvc("topo-mismatch-pvc", "1Gi", "topoMismatchClass")
PREBOUND = binder_pvc("prebound-pvc", "1G", "waitClass", "pv-node1a", prebound=True)
# pvcSelectedNode: provisioning already started for node1.
SELECTED_NODE = binder_pvc(
    "provisioned-pvc", "1Gi", "waitClassWithProvisioner", selected_node="node1"
)
PV_NODE1A = binder_pv("pv-node1a", "node1", "5G", "waitClass")
PV_NODE1B = binder_pv("pv-node1b", "node1", "10G", "waitClass")
PV_NODE2 = binder_pv("pv-node2", "node2", "1G", "waitClass")
PV_BOUND = binder_pv("pv-bound", "node1", "1G", "waitClass", BOUND)
PV_NODE1A_BOUND = binder_pv("pv-node1a", "node1", "5G", "waitClass", UNBOUND)
PV_BOUND_IMMEDIATE = binder_pv(
    "pv-bound-immediate", "node1", "1G", "immediateClass", IMMEDIATE_BOUND
)
PV_BOUND_IMMEDIATE_NODE2 = binder_pv(
    "pv-bound-immediate", "node2", "1G", "immediateClass", IMMEDIATE_BOUND
)


def generic_pvc(owned: bool) -> RawObj:
    """makeGenericEphemeralPVC("test-volume", owned): bound to pv-bound."""
    out = binder_pvc("test-pod-test-volume", "1G", "immediateClass", "pv-bound")
    if owned:
        out["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "test-pod",
                "uid": "test-pod-uid",
                "controller": True,
            }
        ]
    return out


def binder_pod(*claims: RawObj, volumes: tuple[RawObj, ...] = ()) -> RawObj:
    """makePod("test-pod").withNamespace("testns").withPVCSVolume(claims)."""
    p = make_pod().name("test-pod").namespace("testns").uid("test-pod-uid").obj()
    for c in claims:
        with_claim(p, c["metadata"]["name"])
    for v in volumes:
        with_volume(p, dict(v))
    return p


GENERIC_VOLUME = {"name": "test-volume", "ephemeral": {}}
UNBOUND_IMMEDIATE = Status(Code.UNRESOLVABLE, "pod has unbound immediate PersistentVolumeClaims")


BinderResult = tuple[Status, Status | None, list[tuple[str, str]]]


def binder_run(p: RawObj, objs: list[RawObj]) -> BinderResult:
    """(PreFilter status, Filter status on node1 or None, the static bindings
    (claim, PV) FindPodVolumes chose there)."""
    snapshot = Snapshot.from_objects([NODE1, *BINDER_CLASSES, *copy.deepcopy(objs)])
    plugin = VolumeBinding()
    state = CycleState()
    pre = plugin.pre_filter(state, p, snapshot)
    if not pre.ok:
        return pre, None, []
    claims = state["PreFilterVolumeBinding"]
    assert isinstance(claims, PodVolumeClaims)
    found = find_pod_volumes(claims, "node1", NODE1["metadata"]["labels"])
    assert not isinstance(found, Status)
    bindings = [(c["metadata"]["name"], v["metadata"]["name"]) for c, v in found.static_bindings]
    return pre, plugin.filter(state, p, snapshot.nodes["node1"]), bindings


BINDER_ARGS = ("p", "objs", "want")


@pytest.mark.parametrize(
    BINDER_ARGS,
    [
        pytest.param(binder_pod(), [], (SKIP, None, []), id="no-volumes"),
        pytest.param(
            binder_pod(volumes=({"name": "scratch", "emptyDir": {}},)),
            [],
            (SKIP, None, []),
            id="no-pvcs",
        ),
        pytest.param(
            binder_pod(BOUND),
            [],
            (Status(Code.UNRESOLVABLE, 'persistentvolumeclaim "bound-pvc" not found'), None, []),
            id="pvc-not-found",
        ),
        pytest.param(binder_pod(BOUND), [BOUND, PV_BOUND], (SUCCESS, SUCCESS, []), id="bound-pvc"),
        pytest.param(
            binder_pod(BOUND), [BOUND], (SUCCESS, PV_NOT_EXIST, []), id="bound-pvc,pv-not-exists"
        ),
        pytest.param(
            binder_pod(PREBOUND),
            [PREBOUND, PV_NODE1A_BOUND],
            (UNBOUND_IMMEDIATE, None, []),
            id="prebound-pvc",
        ),
        pytest.param(
            binder_pod(UNBOUND),
            [UNBOUND, PV_NODE2, PV_NODE1A, PV_NODE1B],
            (SUCCESS, SUCCESS, [("unbound-pvc", "pv-node1a")]),
            id="unbound-pvc,pv-same-node",
        ),
        pytest.param(
            binder_pod(UNBOUND),
            [UNBOUND, PV_NODE2],
            (SUCCESS, BIND, []),
            id="unbound-pvc,pv-different-node",
        ),
        pytest.param(
            binder_pod(UNBOUND, UNBOUND2),
            [UNBOUND, UNBOUND2, PV_NODE1A, PV_NODE1B],
            (SUCCESS, SUCCESS, [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")]),
            id="two-unbound-pvcs",
        ),
        pytest.param(
            binder_pod(UNBOUND2, UNBOUND),
            [UNBOUND, UNBOUND2, PV_NODE1A, PV_NODE1B],
            (SUCCESS, SUCCESS, [("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")]),
            id="two-unbound-pvcs,order-by-size",
        ),
        pytest.param(
            binder_pod(UNBOUND, UNBOUND2),
            [UNBOUND, UNBOUND2, PV_NODE1A],
            (SUCCESS, BIND, [("unbound-pvc", "pv-node1a")]),
            id="two-unbound-pvcs,partial-match",
        ),
        pytest.param(
            binder_pod(UNBOUND, BOUND),
            [UNBOUND, BOUND, PV_BOUND, PV_NODE1A],
            (SUCCESS, SUCCESS, [("unbound-pvc", "pv-node1a")]),
            id="one-bound,one-unbound",
        ),
        pytest.param(
            binder_pod(UNBOUND, BOUND),
            [UNBOUND, BOUND, PV_BOUND, PV_NODE2],
            (SUCCESS, BIND, []),
            id="one-bound,one-unbound,no-match",
        ),
        pytest.param(
            binder_pod(UNBOUND, PREBOUND),
            [UNBOUND, PREBOUND, PV_NODE1A, PV_NODE1B],
            (UNBOUND_IMMEDIATE, None, []),
            id="one-prebound,one-unbound",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_BOUND),
            [IMMEDIATE_BOUND, PV_BOUND_IMMEDIATE],
            (SUCCESS, SUCCESS, []),
            id="immediate-bound-pvc",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_BOUND),
            [IMMEDIATE_BOUND, PV_BOUND_IMMEDIATE_NODE2],
            (SUCCESS, NODE_CONFLICT, []),
            id="immediate-bound-pvc-wrong-node",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_UNBOUND),
            [IMMEDIATE_UNBOUND],
            (UNBOUND_IMMEDIATE, None, []),
            id="immediate-unbound-pvc",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_UNBOUND, BOUND),
            [IMMEDIATE_UNBOUND, BOUND, PV_BOUND],
            (UNBOUND_IMMEDIATE, None, []),
            id="immediate-unbound-pvc,delayed-mode-bound",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_UNBOUND, UNBOUND),
            [IMMEDIATE_UNBOUND, UNBOUND],
            (UNBOUND_IMMEDIATE, None, []),
            id="immediate-unbound-pvc,delayed-mode-unbound",
        ),
        pytest.param(
            binder_pod(volumes=({"name": "no-such-pvc", "ephemeral": {}},)),
            [],
            (
                Status(
                    Code.UNRESOLVABLE,
                    "waiting for ephemeral volume controller to create the "
                    'persistentvolumeclaim "test-pod-no-such-pvc"',
                ),
                None,
                [],
            ),
            id="generic-ephemeral,no-pvc",
        ),
        pytest.param(
            binder_pod(volumes=(GENERIC_VOLUME,)),
            [
                generic_pvc(owned=True),
                binder_pv("pv-bound", "node1", "1G", "waitClass", generic_pvc(owned=True)),
            ],
            (SUCCESS, SUCCESS, []),
            id="generic-ephemeral,with-pvc",
        ),
        pytest.param(
            binder_pod(volumes=(GENERIC_VOLUME,)),
            [
                generic_pvc(owned=False),
                binder_pv("pv-bound", "node1", "1G", "waitClass", generic_pvc(owned=True)),
            ],
            (
                Status(
                    Code.UNRESOLVABLE,
                    "PVC testns/test-pod-test-volume was not created for pod testns/test-pod "
                    "(pod is not owner)",
                ),
                None,
                [],
            ),
            id="generic-ephemeral,wrong-pvc",
        ),
    ],
)
def test_find_pod_volumes_without_provisioning(
    p: RawObj, objs: list[RawObj], want: BinderResult
) -> None:
    """Upstream TestFindPodVolumesWithoutProvisioning (its "no CSIDriver" run): a claim
    the pod cannot have is PreFilter's verdict, a node that cannot host it Filter's;
    the static bindings are those upstream expects."""
    assert binder_run(p, objs) == want


@pytest.mark.parametrize(
    BINDER_ARGS,
    [
        pytest.param(
            binder_pod(PROVISIONED), [PROVISIONED], (SUCCESS, SUCCESS, []), id="one-provisioned"
        ),
        pytest.param(
            binder_pod(UNBOUND, PROVISIONED),
            [UNBOUND, PROVISIONED, PV_NODE1A],
            (SUCCESS, SUCCESS, [("unbound-pvc", "pv-node1a")]),
            id="two-unbound-pvcs,one-matched,one-provisioned",
        ),
        pytest.param(
            binder_pod(BOUND, PROVISIONED),
            [BOUND, PROVISIONED, PV_BOUND],
            (SUCCESS, SUCCESS, []),
            id="one-bound,one-provisioned",
        ),
        pytest.param(
            binder_pod(BOUND, SELECTED_NODE),
            [BOUND, SELECTED_NODE, PV_BOUND],
            (SUCCESS, SUCCESS, []),
            id="one-binding,one-selected-node",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_UNBOUND),
            [IMMEDIATE_UNBOUND],
            (UNBOUND_IMMEDIATE, None, []),
            id="immediate-unbound-pvc",
        ),
        pytest.param(
            binder_pod(IMMEDIATE_BOUND, PROVISIONED),
            [IMMEDIATE_BOUND, PROVISIONED, PV_BOUND_IMMEDIATE],
            (SUCCESS, SUCCESS, []),
            id="one-immediate-bound,one-provisioned",
        ),
        pytest.param(
            binder_pod(NO_PROVISIONER),
            [NO_PROVISIONER],
            (SUCCESS, BIND, []),
            id="invalid-provisioner",
        ),
        pytest.param(
            binder_pod(TOPO_MISMATCH),
            [TOPO_MISMATCH],
            (SUCCESS, BIND, []),
            id="volume-topology-unsatisfied",
        ),
    ],
)
def test_find_pod_volumes_with_provisioning(
    p: RawObj, objs: list[RawObj], want: BinderResult
) -> None:
    """Upstream TestFindPodVolumesWithProvisioning (its "no CSIDriver" run)."""
    assert binder_run(p, objs) == want


# ---- binder.go FindPodVolumes: the volume.kubernetes.io/selected-node fast path ----
ELSEWHERE = binder_pvc("provisioned-pvc", "1Gi", "waitClassWithProvisioner", selected_node="node2")
NOT_HERE = binder_pvc("topo-mismatch-pvc", "1Gi", "topoMismatchClass", selected_node="node1")


def claims_case(
    claims: tuple[RawObj, ...], pvs: tuple[RawObj, ...], want: BinderResult, case_id: str
) -> Any:
    """A binder row whose pod has exactly `claims`, each in the cluster, with `pvs`."""
    return pytest.param(binder_pod(*claims), [*claims, *pvs], want, id=case_id)


@pytest.mark.parametrize(
    BINDER_ARGS,
    [
        claims_case(
            (ELSEWHERE,),
            (),
            (SUCCESS, BIND, []),
            "a claim provisioned for another node fails this one",
        ),
        claims_case(
            (UNBOUND, ELSEWHERE),
            (PV_NODE1A,),
            (SUCCESS, BIND, []),
            "the node fails at once: no static binding is looked for",
        ),
        claims_case(
            (IMMEDIATE_BOUND, ELSEWHERE),
            (PV_BOUND_IMMEDIATE_NODE2,),
            (SUCCESS, BOTH_CONFLICTS, []),
            "the bound claims' verdict is kept",
        ),
        claims_case(
            (UNBOUND, SELECTED_NODE),
            (PV_NODE1A,),
            (SUCCESS, SUCCESS, [("unbound-pvc", "pv-node1a")]),
            "a claim provisioned for this node beside a static binding",
        ),
        claims_case(
            (NOT_HERE,),
            (),
            (SUCCESS, BIND, []),
            "a claim selected for this node still needs its class to provision here",
        ),
        claims_case(
            (SELECTED_NODE,),
            (binder_pv("pv-node1a", "node1", "5G", "waitClassWithProvisioner"),),
            (SUCCESS, SUCCESS, []),
            "a claim selected for this node takes no static PV",
        ),
    ],
)
def test_find_pod_volumes_selected_node(p: RawObj, objs: list[RawObj], want: BinderResult) -> None:
    """An unbound claim carrying the selected-node annotation is being provisioned for
    that node: any other node fails at once with the bind conflict; on that node it
    is provisioned (its class must still allow the node), never bound to a static PV."""
    assert binder_run(p, objs) == want


# ---- pv_helpers.go FindMatchingVolume: which static PVs an unbound claim may take ----
ZONE_NODES = [node("zone-a", {ZONE: "a"}), node("zone-b", {ZONE: "b"})]
STATIC = storage_class(
    "static", mode="WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner"
)
BOTH_CONFLICT = {"zone-a": BIND, "zone-b": BIND}
ONLY_B = {"zone-a": BIND, "zone-b": SUCCESS}


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


def static_run(objs: list[RawObj]) -> dict[str, Status]:
    pre, filters, _ = run(pod_with("pvc-a"), ZONE_NODES, [STATIC, *objs])
    assert pre == SUCCESS
    return filters


@pytest.mark.parametrize(
    ("objs", "want"),
    [
        pytest.param([_static_pv()], ONLY_B, id="static PV Available"),
        pytest.param(
            [_static_pv(status__phase="Released")],
            BOTH_CONFLICT,
            id="static PV Released is not taken",
        ),
        pytest.param(
            [pv("pv-a", storage_class="static", node_in=(ZONE, ["b"]), phase=None)],
            BOTH_CONFLICT,
            id="static PV without a phase is not taken",
        ),
        pytest.param(
            [_static_pv(metadata__deletionTimestamp="2026-01-01T00:00:00Z")],
            BOTH_CONFLICT,
            id="static PV being deleted is not taken",
        ),
        pytest.param(
            [_static_pv(spec__claimRef={"name": "other", "namespace": "default"})],
            BOTH_CONFLICT,
            id="static PV claimed by another claim is not taken",
        ),
        pytest.param(
            [_static_pv(spec__volumeMode="Block")],
            BOTH_CONFLICT,
            id="static PV of another volume mode is not taken",
        ),
        pytest.param(
            [
                _static_pv(
                    spec__storageClassName="",
                    metadata__annotations={"volume.beta.kubernetes.io/storage-class": "static"},
                )
            ],
            ONLY_B,
            id="static PV of the beta class annotation",
        ),
        pytest.param(
            [
                _static_pv(
                    status__phase="Pending",
                    spec__claimRef={"name": "pvc-a", "namespace": "default"},
                )
            ],
            ONLY_B,
            id="PV pre-bound to the claim is taken whatever its phase",
        ),
        pytest.param(
            [_static_pv(spec__claimRef={"name": "pvc-a", "namespace": "default", "uid": "old"})],
            BOTH_CONFLICT,
            id="PV pre-bound to another uid of the claim's name is not taken",
        ),
        pytest.param(
            [
                _static_pv(
                    spec__claimRef={"name": "pvc-a", "namespace": "default"},
                    spec__capacity={"storage": "1Mi"},
                ),
                pv("pv-big", storage_class="static", size="5Gi", node_in=(ZONE, ["a"])),
            ],
            {"zone-a": SUCCESS, "zone-b": BIND},
            id="a pre-bound PV too small is passed over for another",
        ),
        pytest.param(
            [
                _static_pv(
                    spec__claimRef={"name": "pvc-a", "namespace": "default"},
                    spec__storageClassName="other",
                )
            ],
            BOTH_CONFLICT,
            id="a pre-bound PV of another class is not among the class's PVs",
        ),
        pytest.param(
            [
                _static_pv(
                    spec__nodeAffinity={
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {
                                            "key": "metadata.name",
                                            "operator": "In",
                                            "values": ["zone-b"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                )
            ],
            {"zone-a": SUCCESS, "zone-b": SUCCESS},
            id="PV node affinity on metadata.name is not checked (labels only)",
        ),
    ],
)
def test_find_matching_volume(objs: list[RawObj], want: dict[str, Status]) -> None:
    """The claim pvc-a (class static, 1Gi, no provisioner to fall back on)."""
    assert static_run([pvc("pvc-a", storage_class="static"), *objs]) == want


def test_two_claims_never_share_a_static_pv() -> None:
    """Each unbound claim takes a distinct PV (the smallest left that fits)."""
    objs = [
        pvc("pvc-a", storage_class="static"),
        pvc("pvc-b", storage_class="static"),
        pv("pv-1", storage_class="static", size="1Gi"),
        pv("pv-2", storage_class="static", size="2Gi"),
    ]
    pre, filters, scores = run(pod_with("pvc-a", "pvc-b"), ZONE_NODES, [STATIC, *objs])
    assert (pre, filters) == (SUCCESS, {"zone-a": SUCCESS, "zone-b": SUCCESS})
    # Both nodes bind 2Gi of requests to 3Gi of PVs: 66 % used -> 100 - 66 = 34.
    assert scores == {"zone-a": 34, "zone-b": 34}


def test_allowed_topologies_term_without_expressions_matches_nothing() -> None:
    """MatchTopologySelectorTerms: a term with no expressions selects no node."""
    wffc = storage_class("wffc", mode="WaitForFirstConsumer")
    wffc["allowedTopologies"] = [{"matchLabelExpressions": []}]
    pre, filters, _ = run(pod_with("pvc-a"), ZONE_NODES, [wffc, pvc("pvc-a", storage_class="wffc")])
    assert (pre, filters) == (SUCCESS, BOTH_CONFLICT)


def test_provisioning_where_allowed_topologies_allow() -> None:
    """An unbound WaitForFirstConsumer claim provisions on the nodes its class allows."""
    wffc = storage_class("wffc", mode="WaitForFirstConsumer", zones=["a"])
    pre, filters, scores = run(
        pod_with("pvc-a"), ZONE_NODES, [wffc, pvc("pvc-a", storage_class="wffc")]
    )
    assert (pre, filters) == (SUCCESS, {"zone-a": SUCCESS, "zone-b": BIND})
    assert scores == {"zone-a": 0, "zone-b": 0}


def test_class_without_binding_mode_is_an_error() -> None:
    """IsDelayBindingMode: a class without volumeBindingMode fails PreFilter (Error)."""
    objs = [sc("bare", None, "csi.example.com"), pvc("pvc-a", storage_class="bare")]
    assert run(pod_with("pvc-a"), ZONE_NODES, objs)[0] == Status(
        Code.ERROR, 'VolumeBindingMode not set for StorageClass "bare"'
    )


def test_claim_being_deleted() -> None:
    """A claim with a deletionTimestamp rejects the pod."""
    claim = pvc("pvc-a", volume="pv-a")
    claim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert run(pod_with("pvc-a"), ZONE_NODES, [claim, pv("pv-a")])[0] == Status(
        Code.UNRESOLVABLE, 'persistentvolumeclaim "pvc-a" is being deleted'
    )


def test_pre_score_skips_pods_without_unbound_claims() -> None:
    """Only a pod with unbound WaitForFirstConsumer claims can score apart from 0."""
    snapshot = Snapshot.from_objects(ZONE_NODES)
    state = CycleState()
    plugin = VolumeBinding()
    assert plugin.pre_filter(state, make_pod().obj(), snapshot) == SKIP
    assert plugin.pre_score(state, make_pod().obj(), [], snapshot) == SKIP


# ---- placement remembers verdicts only while the volume objects they read hold ---------

CSI = ("csi.example.com", "handle-a")


@pytest.mark.parametrize(
    ("objs", "changes", "before", "after"),
    [
        pytest.param(
            [pvc("pvc-a", volume="pv-a"), pv("pv-a", node_in=(ZONE, ["a"]))],
            [pv("pv-a", node_in=(ZONE, ["b"]))],
            ["zone-a"],
            ["zone-b"],
            id="a bound PV's node affinity moves to another zone",
        ),
        pytest.param(
            [
                pvc("pvc-a", storage_class="wffc"),
                storage_class("wffc", mode="WaitForFirstConsumer"),
            ],
            [
                pvc("pvc-a", storage_class="wffc", volume="pv-b"),
                pv("pv-b", node_in=(ZONE, ["b"]), storage_class="wffc"),
            ],
            ["zone-a", "zone-b"],
            ["zone-b"],
            id="a waiting claim gets bound to a zonal PV",
        ),
        pytest.param(
            [
                pvc("pvc-a", storage_class="wffc"),
                storage_class("wffc", mode="WaitForFirstConsumer", zones=["a"]),
            ],
            [storage_class("wffc", mode="WaitForFirstConsumer", zones=["b"])],
            ["zone-a"],
            ["zone-b"],
            id="a StorageClass's allowedTopologies change",
        ),
        pytest.param(
            [pvc("pvc-a", volume="pv-a"), pv("pv-a", csi=CSI), csinode("zone-a", {CSI[0]: 0})],
            [csinode("zone-a", {CSI[0]: 4})],
            ["zone-b"],
            ["zone-a", "zone-b"],
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
    snapshot = Snapshot.from_objects([*ZONE_NODES, *objs])
    fw = framework_of()
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
            *ZONE_NODES,
            pvc("pvc-a", volume="pv-a", ns="ns1"),
            pvc("pvc-a", volume="pv-b", ns="ns2"),
            pv("pv-a", node_in=(ZONE, ["a"])),
            pv("pv-b", node_in=(ZONE, ["b"])),
        ]
    )
    fw = framework_of()
    for ns, want in (("ns1", ["zone-a"]), ("ns2", ["zone-b"])):
        p = pod_with("pvc-a")
        p["metadata"]["namespace"] = ns
        assert [n.name for n in place(p, snapshot, framework=fw).feasible] == want
