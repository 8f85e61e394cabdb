"""NodeDeclaredFeatures on upstream's TestPreFilter and TestFilter tables
(pkg/scheduler/framework/plugins/nodedeclaredfeatures/nodedeclaredfeatures_test.go),
the registry's InferForScheduling per feature (component-helpers
nodedeclaredfeatures/features/*/..._test.go, one case per rule), and the plugin in the
default profile.

Legend: mock(name, infer, max) is upstream's createMockFeature: a feature `name` that a
pod needs when `infer`, up to release `max` (None: no bound).

Not ported, with why: "plugin disabled" (both tables) is the NodeDeclaredFeatures
feature gate off, which leaves the plugin out of the default profile (v1.35's default,
tests/scheduler/config/test_profiles.py); TestEnqueueExtensionsNodeUpdate,
TestIsSchedulableAfterTargetPodUpdate and TestEventsToRegister are queueing hints (the
model has no scheduling queue); TestNodeDeclaredFeatures_DeferredResizeSkipped needs a
deferred in-place resize, which only a bound pod has and PreFilter only sees for an
incoming pod.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_node, make_pod, node_info
from webhook.api.versions import KubeVersion, features_for
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.nodedeclaredfeatures import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    ERR_REASON_V1_35,
    FEATURES,
    Feature,
    NodeDeclaredFeatures,
    infer_for_pod_scheduling,
)


def mock(name: str, infer: bool, max_version: tuple[int, int, int] | None = None) -> Feature:
    return Feature(name, lambda _spec: infer, max_version)


F1, F2 = "TestFeature1", "TestFeature2"
V1_35, V1_34 = (1, 35, 0), (1, 34, 0)

# (name, registry, version, status, state)
PRE_FILTER: list[tuple[str, tuple[Feature, ...], Any, Status, frozenset[str] | None]] = [
    (
        "Pod with feature requirements",
        (mock(F1, True), mock(F2, False)),
        V1_35,
        SUCCESS,
        frozenset({F1}),
    ),
    (
        "Pod with multiple feature requirements",
        (mock(F1, True, (1, 38, 0)), mock(F2, True, (1, 38, 0))),
        V1_35,
        SUCCESS,
        frozenset({F1, F2}),
    ),
    (
        "Pod with no requirements",
        (mock(F1, False), mock(F2, False)),
        V1_35,
        SKIP,
        None,
    ),
    (
        "Feature not required, version > MaxVersion",
        (mock(F1, True, (1, 33, 0)), mock(F2, False)),
        V1_34,
        SKIP,
        None,
    ),
]


@pytest.mark.parametrize(
    ("registry", "version", "want", "state"),
    [c[1:] for c in PRE_FILTER],
    ids=[c[0] for c in PRE_FILTER],
)
def test_pre_filter(
    registry: tuple[Feature, ...], version: Any, want: Status, state: frozenset[str] | None
) -> None:
    """TestPreFilter: the status, and the requirements left in the cycle state."""
    plugin = NodeDeclaredFeatures(registry, version)
    cycle = CycleState()
    assert plugin.pre_filter(cycle, make_pod().name("test-pod").obj(), None) == want
    assert cycle.get(plugin.name) == state


A, B, C = "FeatureA", "FeatureB", "FeatureC"
NOT_MATCHED = Status(Code.UNRESOLVABLE, ERR_REASON_UNSATISFIED_REQUIREMENTS)

# (name, node, PreFilter's requirements or None for no state, status)
FILTER: list[tuple[str, Any, frozenset[str] | None, Status]] = [
    (
        "Node matches requirements",
        make_node().name("node-1").declared_features(A, B).obj(),
        frozenset({A}),
        SUCCESS,
    ),
    (
        "Node does not match requirements",
        make_node().name("node-1").declared_features(B).obj(),
        frozenset({A}),
        NOT_MATCHED,
    ),
    (
        "Node with multiple features, pod requires subset",
        make_node().name("node-multi").declared_features(A, B, C).obj(),
        frozenset({A, C}),
        SUCCESS,
    ),
    (
        "Node has no declared features",
        make_node().name("node-1").obj(),
        frozenset({A}),
        NOT_MATCHED,
    ),
    (
        "Node with some but not all required features",
        make_node().name("node-1").declared_features(A).obj(),
        frozenset({A, B}),
        NOT_MATCHED,
    ),
    (
        "Error getting pre-filter state",
        make_node().name("node-1").obj(),
        None,
        Status(
            Code.ERROR,
            'error reading "PreFilterNodeDeclaredFeatures" from cycle-state: not found',
        ),
    ),
]


@pytest.mark.parametrize(
    ("node", "reqs", "want"), [c[1:] for c in FILTER], ids=[c[0] for c in FILTER]
)
def test_filter(node: Any, reqs: frozenset[str] | None, want: Status) -> None:
    """TestFilter: code and message."""
    plugin = NodeDeclaredFeatures()
    cycle = CycleState()
    if reqs is not None:
        cycle[plugin.name] = reqs
    assert plugin.filter(cycle, make_pod().name("test-pod").obj(), node_info(node)) == want


# v1.35.4's TestFilter: the same cases, whose unmatched nodes name the unmet feature.
V1_35_UNMET = {
    "Node does not match requirements": A,
    "Node has no declared features": A,
    "Node with some but not all required features": B,
}


@pytest.mark.parametrize(
    ("name", "node", "reqs", "want"), FILTER, ids=[f"v1.35: {c[0]}" for c in FILTER]
)
def test_filter_v1_35(
    name: str, node: Any, reqs: frozenset[str] | None, want: Status
) -> None:
    """v1.35.4's TestFilter, under its case names: a node that does not match says
    "node declared features check failed - unsatisfied requirements: <feature>"."""
    if name in V1_35_UNMET:
        want = Status(Code.UNRESOLVABLE, f"{ERR_REASON_V1_35}: {V1_35_UNMET[name]}")
    plugin = NodeDeclaredFeatures(features=features_for(KubeVersion(1, 35)))
    cycle = CycleState()
    if reqs is not None:
        cycle[plugin.name] = reqs
    assert plugin.filter(cycle, make_pod().name("test-pod").obj(), node_info(node)) == want


def _container(**fields: Any) -> dict[str, Any]:
    return {"name": "c", "image": "i", **fields}


def _spec(**fields: Any) -> Any:
    pod = make_pod().obj()
    pod["spec"].update(fields)
    return pod


WRITABLE = {"mountMode": "Writable"}
RESTART_ALL = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
PROJECTED_CERT = {
    "name": "cert",
    "projected": {"sources": [{"podCertificate": {"signerName": "s", "keyType": "MLDSA65"}}]},
}
ASSIGNED_CPUSET = {
    "name": "cpus",
    "downwardAPI": {
        "items": [{"path": "cpus", "resourceFieldRef": {"resource": "assigned.cpuset"}}]
    },
}

# (name, pod, the features it needs)
INFER: list[tuple[str, Any, set[str]]] = [
    ("a plain pod needs nothing", make_pod().obj(), set()),
    (
        "a RestartAllContainers rule on a container",
        _spec(containers=[_container(restartPolicyRules=[RESTART_ALL])]),
        {"RestartAllContainersOnContainerExits"},
    ),
    (
        "a RestartAllContainers rule on an init container",
        _spec(initContainers=[_container(restartPolicyRules=[RESTART_ALL])]),
        {"RestartAllContainersOnContainerExits"},
    ),
    (
        "a Restart rule of another action",
        _spec(containers=[_container(restartPolicyRules=[{"action": "Restart"}])]),
        set(),
    ),
    (
        "host network with user namespaces",
        _spec(hostNetwork=True, hostUsers=False),
        {"UserNamespacesHostNetworkSupport"},
    ),
    ("host network with host users", _spec(hostNetwork=True, hostUsers=True), set()),
    ("user namespaces without host network", _spec(hostUsers=False), set()),
    (
        "a pod-level pid limit",
        _spec(resources={"limits": {"pid": "2048"}}),
        {"PerPodPIDLimit"},
    ),
    ("pod-level limits without pid", _spec(resources={"limits": {"cpu": "1"}}), set()),
    (
        "a cgroup mount mode",
        _spec(containers=[_container(securityContext={"cgroupOptions": WRITABLE})]),
        {"CgroupOptions"},
    ),
    (
        "ulimits on an ephemeral container",
        _spec(ephemeralContainers=[_container(securityContext={"ulimits": []})]),
        {"ContainerUlimits"},
    ),
    (
        "assigned.cpuset through the downward API",
        _spec(volumes=[ASSIGNED_CPUSET]),
        {"DownwardAPIAssignedResources"},
    ),
    ("an ML-DSA pod certificate", _spec(volumes=[PROJECTED_CERT]), {"PodCertificateMLDSA"}),
    ("defaultNetwork None", _spec(defaultNetwork="None"), {"PodDefaultNetworkNone"}),
    ("defaultNetwork Pod", _spec(defaultNetwork="Pod"), set()),
    (
        "an OCI seccomp profile on the pod",
        _spec(securityContext={"seccompProfile": {"type": "OCI"}}),
        {"SecurityProfileOCI"},
    ),
    (
        "bind mount options",
        _spec(containers=[_container(volumeMounts=[{"name": "v", "bindMountOptions": ["x"]}])]),
        {"VolumeBindMountOptions"},
    ),
]


@pytest.mark.parametrize(("pod", "want"), [c[1:] for c in INFER], ids=[c[0] for c in INFER])
def test_infer_for_pod_scheduling(pod: Any, want: set[str]) -> None:
    assert infer_for_pod_scheduling(pod) == want


def test_registry_is_sorted_by_name() -> None:
    """ndf.New sorts its registry: FeatureSet bits follow names."""
    names = [f.name for f in FEATURES]
    assert names == sorted(names) and len(set(names)) == len(names)


def test_in_the_default_profile_only_declaring_nodes_fit() -> None:
    """old (no declared features) and partial fail UnschedulableAndUnresolvable with
    upstream's reason; full declares it and takes the pod; an ordinary pod fits all."""
    needs = _spec(containers=[_container(restartPolicyRules=[RESTART_ALL])])
    nodes = [
        make_node().name("full").declared_features("RestartAllContainersOnContainerExits").obj(),
        make_node().name("old").obj(),
        make_node().name("partial").declared_features("PerPodPIDLimit").obj(),
    ]
    decision = place(needs, Snapshot.from_objects(nodes))
    assert decision.selected_node == "full"
    verdicts = {n.name: n.filters["NodeDeclaredFeatures"] for n in decision.nodes}
    assert verdicts == {"full": SUCCESS, "old": NOT_MATCHED, "partial": NOT_MATCHED}
    assert decision.reasons == {ERR_REASON_UNSATISFIED_REQUIREMENTS: 2}
    plain = place(make_pod().obj(), Snapshot.from_objects(nodes))
    assert all(n.feasible for n in plain.nodes)


# A pod for each feature some supported release infers for scheduling, and one for a
# feature of a later tree that none of them knows.
RESTART_ALL_POD = _spec(containers=[_container(restartPolicyRules=[RESTART_ALL])])
HOST_NETWORK_POD = _spec(hostNetwork=True, hostUsers=False)
BIND_OPTIONS_POD = _spec(
    containers=[_container(volumeMounts=[{"name": "v", "bindMountOptions": ["x"]}])]
)
PID_LIMIT_POD = _spec(resources={"limits": {"pid": "2048"}})


@pytest.mark.parametrize(
    ("minor", "pod", "want"),
    [
        pytest.param(35, RESTART_ALL_POD, {"RestartAllContainersOnContainerExits"}, id="v1.35"),
        pytest.param(35, HOST_NETWORK_POD, set(), id="v1.35: no UserNamespacesHostNetwork"),
        pytest.param(
            36, HOST_NETWORK_POD, {"UserNamespacesHostNetworkSupport"}, id="v1.36: host network"
        ),
        pytest.param(36, BIND_OPTIONS_POD, set(), id="v1.36: no VolumeBindMountOptions"),
        pytest.param(37, BIND_OPTIONS_POD, {"VolumeBindMountOptions"}, id="v1.37: bind options"),
        pytest.param(37, PID_LIMIT_POD, set(), id="v1.37: PerPodPIDLimit is of a later tree"),
    ],
)
def test_each_release_infers_its_own_registry(minor: int, pod: Any, want: set[str]) -> None:
    """features.AllFeatures of component-helpers v0.35.4, v0.36.3 and v0.37.2: only the
    features of that release's registry are required of a node."""
    plugin = NodeDeclaredFeatures(features=features_for(KubeVersion(1, minor)))
    state = CycleState()
    status = plugin.pre_filter(state, pod, None)
    assert (status is SKIP) is (not want)
    assert set(state.get(plugin.name, set())) == want


@pytest.mark.parametrize(
    ("minor", "reason"),
    [
        pytest.param(
            35,
            "node declared features check failed - unsatisfied requirements: "
            "RestartAllContainersOnContainerExits",
            id="v1.35 names the unmet feature",
        ),
        pytest.param(36, ERR_REASON_UNSATISFIED_REQUIREMENTS, id="v1.36"),
        pytest.param(37, ERR_REASON_UNSATISFIED_REQUIREMENTS, id="v1.37"),
    ],
)
def test_filter_reason_per_release(minor: int, reason: str) -> None:
    """nodedeclaredfeatures.go Filter: v1.35's reason lists the unsatisfied requirements,
    v1.36 and v1.37 say the generic one."""
    plugin = NodeDeclaredFeatures(features=features_for(KubeVersion(1, minor)))
    state = CycleState()
    assert plugin.pre_filter(state, RESTART_ALL_POD, None) is SUCCESS
    node = node_info(make_node().name("old").obj())
    assert plugin.filter(state, RESTART_ALL_POD, node) == Status(Code.UNRESOLVABLE, reason)
