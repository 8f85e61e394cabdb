"""NodeVolumeLimits: the CSI volumes attached to a node stay within CSINode's limits.

Port of kube-scheduler's nodevolumelimits/csi.go (v1.37, the newest release
read): each CSI driver's limit is CSINode spec.drivers[].allocatable.count; the
volumes a node attaches are those of its pods plus the incoming pod's, each counted
once per driver and volume handle (PVC or ephemeral volume -> its claim -> the bound
PV's spec.csi; a claim whose PV is unknown counts under its StorageClass's
provisioner with a handle of its own). A claim the incoming pod names must exist
(an existing pod's missing claim is not counted), and an ephemeral volume's claim
must be controlled by its pod (else an Error, for any pod on the node).

CAVEAT: in-tree volumes migrated to CSI (translation of gcePersistentDisk,
awsElasticBlockStore, ... to their CSI drivers, on a node whose CSINode lists them
as migrated) are not counted, and PreFilter skips a pod whose only volumes are
such inline disks; VolumeAttachment objects (attachments not yet or no longer
backed by a pod) are not counted, and the VolumeLimitScaling check that a driver
marked preventPodSchedulingIfMissing is installed on the node is not made (the
snapshot holds neither VolumeAttachments nor CSIDrivers); node status.allocatable
"attachable-volumes-*" keys are not read (upstream reads only CSINode).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import ClassVar, Final

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Reads, Status
from webhook.scheduler.plugins.volumeutil import (
    claim_class,
    claim_of,
    claim_volumes,
    not_found,
    not_owner,
    owned_by,
    record_objects_version,
    volume_pod_key,
)

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NAME", "NodeVolumeLimits"]

NAME: Final = "NodeVolumeLimits"
STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Final = "node(s) exceed max volume count"
MISSING_STATE: Final = Status(Code.ERROR, f'reading "{STATE_KEY}" from cycleState: not found')
# An unbound claim's handle: upstream prefixes a random string so that it cannot
# collide with a real volume handle; "<" cannot start a handle CSI drivers return.
_UNBOUND_HANDLE_PREFIX: Final = "<unbound>"

# volume unique name ("<driver>/<handle>") -> driver
Attachable = dict[str, str]


def _driver_info(pvc: RawObj, snapshot: Snapshot) -> tuple[str, str]:
    """Port of csi.go: getCSIDriverInfo / getCSIDriverInfoFromSC: (driver, volume handle),
    ("", "") when the claim is not a CSI volume this plugin can count."""
    spec = as_dict(pvc.get("spec"))
    pv_name = spec.get("volumeName")
    if pv_name:
        pv = snapshot.get("PersistentVolume", "", str(pv_name))
        if pv is not None:
            csi = as_dict(as_dict(pv.get("spec")).get("csi"))
            driver, handle = csi.get("driver"), csi.get("volumeHandle")
            if isinstance(driver, str) and isinstance(handle, str):
                return driver, handle
            return "", ""
    cls = claim_class(pvc)
    sc = snapshot.get("StorageClass", "", cls) if cls else None
    provisioner = sc.get("provisioner") if sc is not None else None
    if not isinstance(provisioner, str) or not provisioner:
        return "", ""
    meta = as_dict(pvc.get("metadata"))
    namespace = meta.get("namespace") or "default"
    return provisioner, f"{_UNBOUND_HANDLE_PREFIX}-{namespace}/{meta.get('name', '')}"


def attachable_volumes(pod: RawObj, snapshot: Snapshot, new_pod: bool) -> Attachable | Status:
    """Port of csi.go: filterAttachableVolumes: volume unique name -> driver, or the
    status that stops the Filter: for the incoming pod a missing claim
    (UnschedulableAndUnresolvable); for any pod a claim without a name or an
    ephemeral volume's claim its pod does not control (Error). An existing pod's
    missing claim is skipped."""
    out: Attachable = {}
    ns = pod_namespace(pod)
    for _vol, name, ephemeral in claim_volumes(pod):
        if not name:
            return Status(Code.ERROR, "PersistentVolumeClaim had no name")
        pvc = claim_of(pod, name, snapshot)
        if pvc is None:
            if new_pod:
                return Status(
                    Code.UNRESOLVABLE,
                    f"looking up PVC {ns}/{name}: {not_found('persistentvolumeclaim', name)}",
                )
            continue
        if ephemeral and not owned_by(pvc, pod):
            return Status(Code.ERROR, not_owner(pvc, pod))
        driver, handle = _driver_info(pvc, snapshot)
        if driver and handle:
            out[f"{driver}/{handle}"] = driver
    return out


def volume_limits(csinode: RawObj | None) -> dict[str, int]:
    """Port of csi.go: getVolumeLimits: driver -> allocatable.count of CSINode."""
    out: dict[str, int] = {}
    if csinode is None:
        return out
    drivers = as_dict(csinode.get("spec")).get("drivers")
    for d in drivers if isinstance(drivers, list) else []:
        d = as_dict(d)
        count = as_dict(d.get("allocatable")).get("count")
        if (
            isinstance(d.get("name"), str)
            and isinstance(count, int)
            and not isinstance(count, bool)
        ):
            out[d["name"]] = count
    return out


def pre_filter(state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
    """Port of csi.go: PreFilter (Skip when the pod has no claim volume) plus the
    incoming pod's attachable volumes, computed once."""
    if not any(True for _ in claim_volumes(pod)):
        return SKIP
    new = attachable_volumes(pod, snapshot, new_pod=True)
    state[STATE_KEY] = (new, snapshot)
    return SUCCESS


def filter_node(state: CycleState, node: NodeInfo) -> Status:
    """Port of csi.go: Filter."""
    held = state.get(STATE_KEY)
    if not isinstance(held, tuple):
        return MISSING_STATE
    new, snapshot = held
    if isinstance(new, Status):
        return new
    if not new:
        return SUCCESS
    limits = volume_limits(snapshot.get("CSINode", "", node.name))
    if not limits:
        return SUCCESS
    attached: Attachable = {}
    for existing in node.pods:
        found = attachable_volumes(existing, snapshot, new_pod=False)
        if isinstance(found, Status):
            return found
        attached.update(found)
    attached_count: dict[str, int] = {}
    for driver in attached.values():
        attached_count[driver] = attached_count.get(driver, 0) + 1
    new_count: dict[str, int] = {}
    for unique, driver in new.items():
        if unique not in attached:
            new_count[driver] = new_count.get(driver, 0) + 1
    for driver, count in new_count.items():
        limit = limits.get(driver)
        if limit is not None and attached_count.get(driver, 0) + count > limit:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
    return SUCCESS


class NodeVolumeLimits:
    """PreFilter and Filter of NodeVolumeLimits (CSI limits)."""

    name: ClassVar[str] = NAME
    node_key_reads_pod: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        kinds=("CSINode", "PersistentVolumeClaim", "PersistentVolume", "StorageClass"),
        pod_fields=("metadata.namespace", "metadata.name", "spec.volumes"),
        node_fields=("name", "pods"),
        existing_pod_fields=("metadata.namespace", "metadata.name", "spec.volumes"),
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        record_objects_version(state, snapshot)
        return pre_filter(state, pod, snapshot)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return volume_pod_key(state, pod)

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        return filter_node(state, node)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        return None
