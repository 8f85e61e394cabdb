"""NodeDeclaredFeatures (pkg/scheduler/framework/plugins/nodedeclaredfeatures), with the
feature inference of component-helpers' nodedeclaredfeatures library.

A kubelet lists in node.status.declaredFeatures the features it supports; a pod whose
spec uses one of them (a container restart rule that restarts every container, user
namespaces with host networking, ...) fits only nodes declaring it. PreFilter infers
what the pod needs (Skip when nothing, so its Filter then reports Success everywhere);
Filter fails a node whose declared features are not a superset, as
UnschedulableAndUnresolvable (evicting pods cannot give a node a feature).

The registry: every feature of component-helpers' nodedeclaredfeatures/features whose
InferForScheduling can be true (the others are inferred for pod updates only:
GuaranteedQoSPodCPUResize, InPlacePodLevelResourcesVerticalScaling,
InPlacePodVerticalScalingInitContainers, InPlacePodVerticalScalingMemoryBackedVolumes,
DRANodeAllocatableResources, DRAOptionalNodeOperations, ExtendWebSocketsToKubelet).
No feature has a MaxVersion, so the scheduler's version never drops a requirement.

Per release (component-helpers nodedeclaredfeatures/features/registry.go of v0.35.4,
v0.36.3, v0.37.2): the features a pod can need for scheduling are
RestartAllContainersOnContainerExits in v1.35, plus UserNamespacesHostNetworkSupport
in v1.36, plus VolumeBindMountOptions in v1.37 (every other registered feature is
inferred for updates only); FEATURES also holds features of later trees, which no
supported release requires. v1.35's Filter names the unmet features ("node declared
features check failed - unsatisfied requirements: X"); v1.36 on say
ERR_REASON_UNSATISFIED_REQUIREMENTS.

CAVEAT: a feature added upstream after the newest release read is not inferred (the
pod is then placed as if it did not need it). The per-pod PID limit is read as
spec.resources.limits["pid"].
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from webhook.api.kube import RawObj, as_dict, spec
from webhook.api.versions import Features
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLike,
    Reads,
    Status,
)

__all__ = [
    "ERR_REASON_UNSATISFIED_REQUIREMENTS",
    "ERR_REASON_V1_35",
    "RELEASE_FEATURES",
    "FEATURES",
    "Feature",
    "NodeDeclaredFeatures",
    "declared_features",
    "infer_for_pod_scheduling",
    "release_registry",
]

ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"
# v1.35's Filter reason, followed by the unmet features joined with ", ".
ERR_REASON_V1_35 = "node declared features check failed - unsatisfied requirements"

# The kube-scheduler release the model stands for (a feature past its MaxVersion is no
# longer required: every node of a later release has it).
SCHEDULER_VERSION = (1, 37, 0)

PodSpec = dict[str, Any]


@dataclass(frozen=True)
class Feature:
    """One declared feature: its name, what a pod spec must use to need it for
    scheduling (InferForScheduling), and the last release where it may be missing
    (MaxVersion; None: no bound)."""

    name: str
    infer_for_scheduling: Callable[[PodSpec], bool]
    max_version: tuple[int, int, int] | None = None


def _objects(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _containers(pod_spec: PodSpec, *, ephemeral: bool = False) -> Iterator[dict[str, Any]]:
    """containers then initContainers (then ephemeralContainers when asked), as each
    feature walks them."""
    kinds = ("containers", "initContainers", *(("ephemeralContainers",) if ephemeral else ()))
    for kind in kinds:
        yield from _objects(pod_spec.get(kind))


def _restart_all_containers(pod_spec: PodSpec) -> bool:
    """Port of restart_all_containers.go: InferForScheduling."""
    return any(
        rule.get("action") == "RestartAllContainers"
        for c in _containers(pod_spec)
        for rule in _objects(c.get("restartPolicyRules"))
    )


def _user_namespaces_host_network(pod_spec: PodSpec) -> bool:
    """Port of user_namespaces_host_network.go: InferForScheduling."""
    return pod_spec.get("hostNetwork") is True and pod_spec.get("hostUsers") is False


def _per_pod_pid_limit(pod_spec: PodSpec) -> bool:
    """Port of perpodpidlimit/feature.go: InferForScheduling."""
    return "pid" in as_dict(as_dict(pod_spec.get("resources")).get("limits"))


def _cgroup_options(pod_spec: PodSpec) -> bool:
    """Port of cgroupoptions/feature.go: InferForScheduling (either mount mode)."""
    return any(
        as_dict(as_dict(c.get("securityContext")).get("cgroupOptions")).get("mountMode") is not None
        for c in _containers(pod_spec)
    )


def _container_ulimits(pod_spec: PodSpec) -> bool:
    """Port of container_ulimits.go: InferForScheduling."""
    return any(
        as_dict(c.get("securityContext")).get("ulimits") is not None
        for c in _containers(pod_spec, ephemeral=True)
    )


def _downward_items(volume: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from _objects(as_dict(volume.get("downwardAPI")).get("items"))
    for source in _objects(as_dict(volume.get("projected")).get("sources")):
        yield from _objects(as_dict(source.get("downwardAPI")).get("items"))


def _downward_api_assigned_resources(pod_spec: PodSpec) -> bool:
    """Port of downward_api_assigned_resources.go: podUsesAssignedResources."""
    return any(
        as_dict(item.get("resourceFieldRef")).get("resource") == "assigned.cpuset"
        for volume in _objects(pod_spec.get("volumes"))
        for item in _downward_items(volume)
    )


_MLDSA_KEY_TYPES = frozenset({"MLDSA44", "MLDSA65", "MLDSA87"})


def _pod_certificate_mldsa(pod_spec: PodSpec) -> bool:
    """Port of podcertificatesmldsa/feature.go:
    podSpecHasProjectedPodCertificateWithMLDSAKeyType."""
    return any(
        as_dict(source.get("podCertificate")).get("keyType") in _MLDSA_KEY_TYPES
        for volume in _objects(pod_spec.get("volumes"))
        for source in _objects(as_dict(volume.get("projected")).get("sources"))
    )


def _pod_default_network_none(pod_spec: PodSpec) -> bool:
    """Port of poddefaultnetworknone/feature.go: InferForScheduling."""
    return pod_spec.get("defaultNetwork") == "None"


def _is_oci(security_context: Any) -> bool:
    return as_dict(as_dict(security_context).get("seccompProfile")).get("type") == "OCI"


def _security_profile_oci(pod_spec: PodSpec) -> bool:
    """Port of securityprofileoci/feature.go: podSpecUsesSeccompProfileOCI."""
    if _is_oci(pod_spec.get("securityContext")):
        return True
    return any(_is_oci(c.get("securityContext")) for c in _containers(pod_spec, ephemeral=True))


def _volume_bind_mount_options(pod_spec: PodSpec) -> bool:
    """Port of volumebindmountoptions/feature.go: InferForScheduling."""
    return any(
        bool(mount.get("bindMountOptions"))
        for c in _containers(pod_spec, ephemeral=True)
        for mount in _objects(c.get("volumeMounts"))
    )


# features.AllFeatures, sorted by name as ndf.New sorts its registry.
FEATURES: tuple[Feature, ...] = tuple(
    sorted(
        (
            Feature("CgroupOptions", _cgroup_options),
            Feature("ContainerUlimits", _container_ulimits),
            Feature("DownwardAPIAssignedResources", _downward_api_assigned_resources),
            Feature("PerPodPIDLimit", _per_pod_pid_limit),
            Feature("PodCertificateMLDSA", _pod_certificate_mldsa),
            Feature("PodDefaultNetworkNone", _pod_default_network_none),
            Feature("RestartAllContainersOnContainerExits", _restart_all_containers),
            Feature("SecurityProfileOCI", _security_profile_oci),
            Feature("UserNamespacesHostNetworkSupport", _user_namespaces_host_network),
            Feature("VolumeBindMountOptions", _volume_bind_mount_options),
        ),
        key=lambda f: f.name,
    )
)


# The features each release's registry can infer for scheduling, by minor.
RELEASE_FEATURES: dict[int, frozenset[str]] = {
    35: frozenset({"RestartAllContainersOnContainerExits"}),
    36: frozenset({"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"}),
    37: frozenset(
        {
            "RestartAllContainersOnContainerExits",
            "UserNamespacesHostNetworkSupport",
            "VolumeBindMountOptions",
        }
    ),
}


def release_registry(features: Features) -> tuple[Feature, ...]:
    """FEATURES restricted to those the release's registry infers for scheduling."""
    known = RELEASE_FEATURES[features.version.minor]
    return tuple(f for f in FEATURES if f.name in known)


def infer_for_pod_scheduling(
    pod: RawObj,
    version: tuple[int, int, int] = SCHEDULER_VERSION,
    registry: tuple[Feature, ...] = FEATURES,
) -> frozenset[str]:
    """The features the pod needs of a node to be scheduled there.

    Port of component-helpers nodedeclaredfeatures/framework.go: InferForPodScheduling
    (a feature whose MaxVersion is below the target version is not required)."""
    pod_spec = spec(pod)
    return frozenset(
        f.name
        for f in registry
        if not (f.max_version is not None and version > f.max_version)
        and f.infer_for_scheduling(pod_spec)
    )


def declared_features(node: NodeInfoLike) -> frozenset[str]:
    """node.status.declaredFeatures (NodeInfo.GetNodeDeclaredFeatures)."""
    raw = as_dict(node.node.get("status")).get("declaredFeatures")
    return frozenset(f for f in raw if isinstance(f, str)) if isinstance(raw, list) else frozenset()


class NodeDeclaredFeatures:
    """PreFilter and Filter, built once (nodedeclaredfeatures.go New): the registry and
    the version are the plugin's; the pod's requirements are its PreFilter state."""

    name: ClassVar[str] = "NodeDeclaredFeatures"
    # node_key is the node's declared features, whatever the pod.
    node_key_reads_pod: ClassVar[bool] = False
    reads: ClassVar[Reads] = Reads(
        pod_fields=(
            "spec.containers[].restartPolicyRules",
            "spec.initContainers[].restartPolicyRules",
            "spec.containers[].securityContext",
            "spec.initContainers[].securityContext",
            "spec.ephemeralContainers[].securityContext",
            "spec.containers[].volumeMounts",
            "spec.initContainers[].volumeMounts",
            "spec.ephemeralContainers[].volumeMounts",
            "spec.securityContext.seccompProfile",
            "spec.hostNetwork",
            "spec.hostUsers",
            "spec.defaultNetwork",
            "spec.resources.limits",
            "spec.volumes",
        ),
        node_fields=("status.declaredFeatures",),
    )

    def __init__(
        self,
        registry: tuple[Feature, ...] = FEATURES,
        version: tuple[int, int, int] = SCHEDULER_VERSION,
        *,
        features: Features | None = None,
    ) -> None:
        """With `features`, the release's own registry and reason wording; without, the
        given registry (default: every feature known) and v1.36's wording."""
        if features is not None:
            registry = release_registry(features)
            release = features.version
            version = (release.major, release.minor, release.patch or 0)
        self.registry = registry
        self.version = version
        # v1.35 lists the unmet features in its reason (nodedeclaredfeatures.go Filter).
        self.names_unmet = features is not None and not features.version.at_least(36)

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        """Port of nodedeclaredfeatures.go: PreFilter (Skip when the pod needs nothing)."""
        reqs = infer_for_pod_scheduling(pod, self.version, self.registry)
        if not reqs:
            return SKIP
        state[self.name] = reqs
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of nodedeclaredfeatures.go: Filter."""
        reqs: frozenset[str] | None = state.get(self.name)
        if reqs is None:
            return Status(
                Code.ERROR,
                f'error reading "PreFilter{self.name}" from cycle-state: not found',
            )
        declared = declared_features(node)
        if reqs <= declared:
            return SUCCESS
        if self.names_unmet:
            # Upstream ranges over a set: with one feature in v1.35's registry the order
            # never shows; sorted here so that it is stable.
            unmet = ", ".join(sorted(reqs - declared))
            return Status(Code.UNRESOLVABLE, f"{ERR_REASON_V1_35}: {unmet}")
        return Status(Code.UNRESOLVABLE, ERR_REASON_UNSATISFIED_REQUIREMENTS)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable:
        return declared_features(node)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        reqs: frozenset[str] = state.get(self.name, frozenset())
        return tuple(sorted(reqs))
