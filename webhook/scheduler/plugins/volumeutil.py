"""What the volume plugins share: the claims a pod's volumes name, a claim's class,
and the messages upstream gives when an object is missing.

Ports of component-helpers storage/ephemeral (VolumeClaimName, VolumeIsForPod),
storage/volume helpers (GetPersistentVolumeClaimClass, IsDelayBindingMode) and
apimachinery's NotFound message.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any, Final

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.api.labels import compile_node_affinity
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import CycleState

__all__ = [
    "WAIT_FOR_FIRST_CONSUMER",
    "claim_class",
    "claim_volumes",
    "is_delay_binding",
    "not_found",
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


def owned_by(pvc: RawObj, pod: RawObj) -> bool:
    """Port of ephemeral.VolumeIsForPod: the claim's controller owner is the pod."""
    uid = as_dict(pod.get("metadata")).get("uid")
    for ref in as_dict(pvc.get("metadata")).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "Pod":
            return uid is None or ref.get("uid") == uid
    return False


def claim_class(pvc: RawObj) -> str:
    """Port of storage helpers GetPersistentVolumeClaimClass (beta annotation first);
    GetPersistentVolumeClass reads a PV the same way."""
    annotations = as_dict(as_dict(pvc.get("metadata")).get("annotations"))
    beta = annotations.get(_BETA_CLASS_ANNOTATION)
    if isinstance(beta, str):
        return beta
    name = as_dict(pvc.get("spec")).get("storageClassName")
    return name if isinstance(name, str) else ""


def is_delay_binding(pvc: RawObj, snapshot: Snapshot) -> bool:
    """Port of storage helpers IsDelayBindingMode: the claim's class exists and binds
    WaitForFirstConsumer (no class, or a class the snapshot lacks, binds Immediate;
    an absent volumeBindingMode is kube-apiserver's default, Immediate)."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = snapshot.get("StorageClass", "", name)
    return sc is not None and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def claim_of(pod: RawObj, claim: str, snapshot: Snapshot) -> RawObj | None:
    return snapshot.get("PersistentVolumeClaim", pod_namespace(pod), claim)


def pv_node_affinity_matches(pv: RawObj, node: RawObj) -> bool:
    """Port of storage helpers CheckNodeAffinity: the PV's required node selector terms
    (ORed; matchExpressions and matchFields) match the node; no affinity matches all."""
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
    return True if matcher is None else matcher(node)
