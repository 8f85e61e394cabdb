"""What the volume plugins share: the claims a pod's volumes name, a claim's class,
and the messages upstream gives when an object is missing.

Ports of component-helpers storage/ephemeral (VolumeClaimName, VolumeIsForPod),
storage/volume helpers (GetPersistentVolumeClaimClass, IsDelayBindingMode,
CheckNodeAffinity) and apimachinery's NotFound message.

The NotFound messages are those of the informer listers kube-scheduler reads
(`persistentvolumeclaim "x" not found`, singular); upstream's unit tests use fake
listers that print the plural resource name instead.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import Any, Final

from webhook.api.kube import RawObj, as_dict, controller_of, pod_namespace
from webhook.api.labels import compile_node_affinity
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import CycleState

__all__ = [
    "WAIT_FOR_FIRST_CONSUMER",
    "binding_mode_error",
    "claim_class",
    "claim_volumes",
    "is_delay_binding",
    "not_found",
    "not_owner",
    "persistent_claim_names",
    "pv_node_affinity_matches",
    "record_objects_version",
    "volume_pod_key",
]

WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
# The CycleState key the volume plugins' PreFilters leave Snapshot.objects_version under.
OBJECTS_VERSION_KEY: Final = "VolumeObjectsVersion"
_BETA_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"


def record_objects_version(state: CycleState, snapshot: Snapshot | None) -> None:
    """Keep the snapshot's objects_version for volume_pod_key (PreFilter)."""
    state[OBJECTS_VERSION_KEY] = getattr(snapshot, "objects_version", None)


def volume_pod_key(state: CycleState, pod: RawObj) -> Hashable:
    """What a volume plugin's Filter reads besides the node (after PreFilter): the pod's
    identity (claims are looked up by its namespace; an ephemeral volume's claim is
    named after the pod and owned by its uid), its spec, and the version of the
    PVCs, PVs, StorageClasses and CSINodes it read, which no node generation covers:
    a verdict remembered by this key holds while the node is unchanged."""
    meta = as_dict(pod.get("metadata"))
    return (
        pod_namespace(pod),
        meta.get("name"),
        meta.get("generateName"),
        meta.get("uid"),
        pod.get("spec"),
        state.get(OBJECTS_VERSION_KEY),
    )


def not_found(resource: str, name: str) -> str:
    """apierrors.NewNotFound(...).Error(): `persistentvolumeclaim "x" not found`."""
    return f'{resource} "{name}" not found'


def pod_name(pod: RawObj) -> str:
    name = as_dict(pod.get("metadata")).get("name")
    return name if isinstance(name, str) else ""


def claim_volumes(pod: RawObj) -> Iterator[tuple[RawObj, str, bool]]:
    """(volume, claim name, ephemeral) for each volume backed by a PVC.

    Port of ephemeral.VolumeClaimName: an ephemeral volume's claim is
    "<pod name>-<volume name>".
    """
    volumes = as_dict(pod.get("spec")).get("volumes")
    if not isinstance(volumes, list):
        return
    for vol in volumes:
        if not isinstance(vol, dict):
            continue
        pvc = vol.get("persistentVolumeClaim")
        if isinstance(pvc, dict):
            name = pvc.get("claimName")
            yield vol, name if isinstance(name, str) else "", False
        elif isinstance(vol.get("ephemeral"), dict):
            yield vol, f"{pod_name(pod)}-{vol.get('name', '')}", True


def persistent_claim_names(pod: RawObj) -> list[str]:
    """The claimName of every persistentVolumeClaim volume, in order ("" when unset);
    ephemeral volumes are not among them (VolumeRestrictions and VolumeZone read only
    these)."""
    return [name for _vol, name, ephemeral in claim_volumes(pod) if not ephemeral]


def owned_by(pvc: RawObj, pod: RawObj) -> bool:
    """Port of ephemeral.go: VolumeIsForPod (metav1.IsControlledBy). The claim's controller
    reference (the first with controller: true, whatever its kind) names the pod's uid.

    CAVEAT: a pod without a uid (one not created yet, as at admission) owns any
    claim with a controller reference; upstream always has the uid.
    """
    ref = controller_of(pvc)
    if ref is None:
        return False
    uid = as_dict(pod.get("metadata")).get("uid")
    return uid is None or ref.get("uid") == uid


def not_owner(pvc: RawObj, pod: RawObj) -> str:
    """The claim was made for another pod.

    Port of ephemeral.go: VolumeIsForPod (its error).
    """
    claim_meta, pod_meta = as_dict(pvc.get("metadata")), as_dict(pod.get("metadata"))
    return (
        f"PVC {claim_meta.get('namespace', 'default')}/{claim_meta.get('name', '')} was not "
        f"created for pod {pod_namespace(pod)}/{pod_meta.get('name', '')} (pod is not owner)"
    )


def claim_class(pvc: RawObj) -> str:
    """Port of storage helpers GetPersistentVolumeClaimClass (beta annotation first);
    GetPersistentVolumeClass reads a PV the same way."""
    annotations = as_dict(as_dict(pvc.get("metadata")).get("annotations"))
    beta = annotations.get(_BETA_CLASS_ANNOTATION)
    if isinstance(beta, str):
        return beta
    name = as_dict(pvc.get("spec")).get("storageClassName")
    return name if isinstance(name, str) else ""


def binding_mode_error(class_name: str) -> str:
    """The error of a StorageClass without volumeBindingMode (kube-apiserver defaults
    it to Immediate, so only hand-written objects lack it)."""
    return f'VolumeBindingMode not set for StorageClass "{class_name}"'


def is_delay_binding(pvc: RawObj, snapshot: Snapshot) -> bool | str:
    """Port of storage helpers IsDelayBindingMode: whether the claim's class binds
    WaitForFirstConsumer. No class, or a class the snapshot lacks, binds Immediate;
    a class without volumeBindingMode is an error (its message)."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = snapshot.get("StorageClass", "", name)
    if sc is None:
        return False
    mode = sc.get("volumeBindingMode")
    if mode is None:
        return binding_mode_error(name)
    return bool(mode == WAIT_FOR_FIRST_CONSUMER)


def claim_of(pod: RawObj, claim: str, snapshot: Snapshot) -> RawObj | None:
    return snapshot.get("PersistentVolumeClaim", pod_namespace(pod), claim)


def pv_node_affinity_matches(pv: RawObj, labels: Mapping[str, str]) -> bool:
    """Port of storage helpers CheckNodeAffinity: the PV's required node selector terms
    (ORed) match a node with these labels; no affinity matches all.

    Upstream matches the terms against a Node that carries only the labels: a node
    without a name has no fields, so matchFields requirements are not checked.
    """
    required = as_dict(as_dict(pv.get("spec")).get("nodeAffinity")).get("required")
    if required is None:
        return True
    fake: dict[str, Any] = {
        "spec": {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            }
        }
    }
    matcher = compile_node_affinity(fake)
    return True if matcher is None else matcher({"metadata": {"labels": dict(labels)}})
