"""VolumeRestrictions: ReadWriteOncePod claims in use and in-tree disk conflicts.

Port of kube-scheduler's volumerestrictions/volume_restrictions.go (v1.37, the
newest release read): a claim with access mode ReadWriteOncePod already used by
another bound pod blocks the pod on every node; a GCE PD, AWS EBS, RBD or iSCSI
volume of the pod already mounted by a pod on the node blocks that node (an EBS
volume always, the others unless both mount it read-only). Only
persistentVolumeClaim volumes are looked up (an ephemeral volume's claim is not).
PreFilter skips a pod with no such disk and no claim in conflict, once every claim
it names was found. Its PreFilterExtensions (AddPod, RemovePod) move the count of uses
of the pod's ReadWriteOncePod claims as preemption's dry run removes victims and adds
nominated pods, so a pod blocked only by a lower-priority pod holding its claim
preempts it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Reads, Status
from webhook.scheduler.plugins.volumeutil import (
    claim_of,
    not_found,
    persistent_claim_names,
    record_objects_version,
    volume_pod_key,
)

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "NAME",
    "VolumeRestrictions",
]

NAME: Final = "VolumeRestrictions"
STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT: Final = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
MISSING_STATE: Final = Status(Code.ERROR, f'cannot read "{STATE_KEY}" from cycleState')
_DISKS: Final = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass(frozen=True, slots=True)
class PreFilterState:
    """disks: the pod's in-tree disk volumes; conflicting_pvc_ref_count: uses by other
    pods of the pod's ReadWriteOncePod claims (> 0 blocks every node);
    read_write_once_pod_pvcs: the names of those claims (what AddPod and RemovePod
    count a pod's volumes against)."""

    disks: tuple[RawObj, ...]
    conflicting_pvc_ref_count: int
    read_write_once_pod_pvcs: frozenset[str] = frozenset()

    def conflicting_pvc_ref_count_for_pod(self, pod: RawObj) -> int:
        """How many of `pod`'s persistentVolumeClaim volumes name one of the claims (by
        name alone, as upstream counts them).

        Port of volume_restrictions.go: conflictingPVCRefCountForPod."""
        if not self.read_write_once_pod_pvcs:
            return 0
        claims = self.read_write_once_pod_pvcs
        volumes = as_dict(pod.get("spec")).get("volumes")
        if not isinstance(volumes, list):
            return 0
        return sum(
            1
            for v in volumes
            if isinstance(v, dict)
            and as_dict(v.get("persistentVolumeClaim")).get("claimName") in claims
        )


def _ro(src: Any) -> bool:
    return bool(as_dict(src).get("readOnly"))


def is_volume_conflict(volume: RawObj, existing: RawObj) -> bool:
    """Port of volume_restrictions.go: isVolumeConflict."""
    gce, egce = as_dict(volume.get("gcePersistentDisk")), as_dict(existing.get("gcePersistentDisk"))
    if gce and egce and gce.get("pdName") == egce.get("pdName") and not (_ro(gce) and _ro(egce)):
        return True
    ebs, eebs = (
        as_dict(volume.get("awsElasticBlockStore")),
        as_dict(existing.get("awsElasticBlockStore")),
    )
    if ebs and eebs and ebs.get("volumeID") == eebs.get("volumeID"):
        return True
    iscsi, eiscsi = as_dict(volume.get("iscsi")), as_dict(existing.get("iscsi"))
    if (
        iscsi
        and eiscsi
        and iscsi.get("iqn") == eiscsi.get("iqn")
        and not (_ro(iscsi) and _ro(eiscsi))
    ):
        return True
    rbd, erbd = as_dict(volume.get("rbd")), as_dict(existing.get("rbd"))
    if rbd and erbd:
        mons = set(rbd.get("monitors") or [])
        overlap = bool(mons & set(erbd.get("monitors") or []))
        same = (rbd.get("pool") or "rbd") == (erbd.get("pool") or "rbd") and rbd.get(
            "image"
        ) == erbd.get("image")
        if overlap and same and not (_ro(rbd) and _ro(erbd)):
            return True
    return False


def _claims_in_use(snapshot: Snapshot, namespace: str) -> set[str]:
    """The claims of `namespace` a bound pod's persistentVolumeClaim volume names
    (the snapshot's usedPVCSet, from NodeInfo.PVCRefCounts)."""
    return {name for p in snapshot.pods_in(namespace) for name in persistent_claim_names(p)}


def pre_filter(state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
    """Port of volume_restrictions.go: PreFilter with readWriteOncePodPVCsForPod and
    calPreFilterState: every claim must exist; Skip when the pod has no disk to compare
    and none of its ReadWriteOncePod claims is in use."""
    volumes = as_dict(pod.get("spec")).get("volumes")
    volumes = [v for v in volumes if isinstance(v, dict)] if isinstance(volumes, list) else []
    disks = tuple(v for v in volumes if any(v.get(k) is not None for k in _DISKS))
    rwop: set[str] = set()
    for name in persistent_claim_names(pod):
        pvc = claim_of(pod, name, snapshot)
        if pvc is None:
            return Status(Code.UNRESOLVABLE, not_found("persistentvolumeclaim", name))
        modes = as_dict(pvc.get("spec")).get("accessModes")
        if isinstance(modes, list) and "ReadWriteOncePod" in modes:
            rwop.add(name)
    conflicts = 0
    if rwop:
        in_use = _claims_in_use(snapshot, pod_namespace(pod))
        conflicts = sum(1 for name in rwop if name in in_use)
    if not disks and conflicts == 0:
        return SKIP
    state[STATE_KEY] = PreFilterState(disks, conflicts, frozenset(rwop))
    return SUCCESS


def update_with_pod(state: CycleState, other: RawObj, multiplier: int) -> Status:
    """The state with `other`'s uses of the pod's ReadWriteOncePod claims added
    (multiplier 1) or taken away (-1); the very same state object when it uses none.

    Port of volume_restrictions.go: AddPod / RemovePod (updateWithPod)."""
    s = state.get(STATE_KEY)
    if not isinstance(s, PreFilterState):
        return MISSING_STATE
    uses = s.conflicting_pvc_ref_count_for_pod(other)
    if uses:
        count = s.conflicting_pvc_ref_count + multiplier * uses
        state[STATE_KEY] = replace(s, conflicting_pvc_ref_count=count)
    return SUCCESS


def filter_node(state: CycleState, node: NodeInfo) -> Status:
    """Port of volume_restrictions.go: Filter (disk conflicts, then ReadWriteOncePod)."""
    s = state.get(STATE_KEY)
    if not isinstance(s, PreFilterState):
        return MISSING_STATE
    for volume in s.disks:
        for existing in node.pods:
            evols = as_dict(existing.get("spec")).get("volumes")
            if isinstance(evols, list) and any(
                isinstance(ev, dict) and is_volume_conflict(volume, ev) for ev in evols
            ):
                return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
    if s.conflicting_pvc_ref_count > 0:
        return Status(Code.UNSCHEDULABLE, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
    return SUCCESS


class VolumeRestrictions:
    """PreFilter and Filter of VolumeRestrictions."""

    name: ClassVar[str] = NAME
    node_key_reads_pod: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        kinds=("PersistentVolumeClaim",),
        pod_fields=("metadata.namespace", "metadata.name", "spec.volumes"),
        node_fields=("pods",),
        existing_pod_fields=("metadata.namespace", "metadata.name", "spec.volumes"),
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        record_objects_version(state, snapshot)
        return pre_filter(state, pod, snapshot)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return volume_pod_key(state, pod)

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        return filter_node(state, node)

    def add_pod(self, state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfo) -> Status:
        """PreFilterExtensions.AddPod (preemption, nominated pods)."""
        return update_with_pod(state, pod_to_add, 1)

    def remove_pod(
        self, state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfo
    ) -> Status:
        """PreFilterExtensions.RemovePod (preemption's victims)."""
        return update_with_pod(state, pod_to_remove, -1)

    def remove_pods(
        self, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfo
    ) -> Status:
        """RemovePod for each of `pods` at once (the state replaced once, or left the
        same object when none of them uses a claim of the pod's)."""
        s = state.get(STATE_KEY)
        if not isinstance(s, PreFilterState):
            return MISSING_STATE
        uses = sum(s.conflicting_pvc_ref_count_for_pod(p) for p in pods)
        if uses:
            state[STATE_KEY] = replace(
                s, conflicting_pvc_ref_count=s.conflicting_pvc_ref_count - uses
            )
        return SUCCESS

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        s = state.get(STATE_KEY)
        if isinstance(s, PreFilterState) and not s.disks:
            return ()
        return None
