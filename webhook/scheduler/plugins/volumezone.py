"""VolumeZone: a pod's bound PersistentVolumes must be in the node's zone and region.

Port of kube-scheduler's volumezone/volume_zone.go (v1.37, the newest release
read): PreFilter collects the topology labels of the PVs bound to the pod's
persistentVolumeClaim volumes (topology.kubernetes.io/zone and /region and their
deprecated failure-domain.beta.kubernetes.io twins; ephemeral volumes are not
read), skipping unbound claims of a WaitForFirstConsumer class; Filter requires a
node carrying any topology label to carry each of the PV's, with one of the PV's
values ("a__b" lists zones; a list with an empty member is ignored, as upstream's
parser rejects it). A PV's beta label also matches the node's GA label.

CAVEAT: upstream's Filter recomputes the topologies from its listers when
PreFilter left no state; here that is an Error (the runtime always runs PreFilter).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar, Final

from webhook.api.kube import REGION, ZONE, RawObj, as_dict
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Reads, Status
from webhook.scheduler.plugins.volumeutil import (
    WAIT_FOR_FIRST_CONSUMER,
    binding_mode_error,
    claim_class,
    claim_of,
    not_found,
    persistent_claim_names,
    record_objects_version,
    volume_pod_key,
)

__all__ = ["ERR_REASON_CONFLICT", "NAME", "VolumeZone"]

NAME: Final = "VolumeZone"
STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_CONFLICT: Final = "node(s) had no available volume zone"
CONFLICT: Final = Status(Code.UNRESOLVABLE, ERR_REASON_CONFLICT)

_BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
_BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
_ZONE: Final = ZONE
_REGION: Final = REGION
TOPOLOGY_LABELS: Final = (_BETA_ZONE, _BETA_REGION, _ZONE, _REGION)
_GA: Final = {_BETA_ZONE: _ZONE, _BETA_REGION: _REGION}


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a bound PV: key and the set of values it allows."""

    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """Port of volumehelpers.LabelZonesToSet: "a__b" -> {a, b}, each trimmed of
    whitespace; None (the label is ignored) when a member is empty, "" included."""
    zones = [v.strip() for v in value.split("__")]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


def pv_topologies(pv: RawObj) -> list[PVTopology]:
    """Port of volume_zone.go: getPVTopologies: the PV's topology labels, in
    topologyLabels order, each with the set of values it allows."""
    labels = as_dict(as_dict(pv.get("metadata")).get("labels"))
    out: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if isinstance(value, str):
            zones = label_zones_to_set(value)
            if zones is not None:
                out.append(PVTopology(key, zones))
    return out


def pre_filter(state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
    """Port of volume_zone.go: PreFilter and getPVbyPod."""
    topologies: list[PVTopology] = []
    for name in persistent_claim_names(pod):
        if not name:
            return Status(Code.UNRESOLVABLE, "PersistentVolumeClaim had no name")
        pvc = claim_of(pod, name, snapshot)
        if pvc is None:
            return Status(Code.UNRESOLVABLE, not_found("persistentvolumeclaim", name))
        pv_name = as_dict(pvc.get("spec")).get("volumeName")
        if not pv_name:
            cls = claim_class(pvc)
            if not cls:
                return Status(
                    Code.UNRESOLVABLE, "PersistentVolumeClaim had no pv name and storageClass name"
                )
            sc = snapshot.get("StorageClass", "", cls)
            if sc is None:
                return Status(Code.UNRESOLVABLE, not_found("storageclass.storage.k8s.io", cls))
            mode = sc.get("volumeBindingMode")
            if mode is None:
                return Status(Code.UNRESOLVABLE, binding_mode_error(cls))
            if mode == WAIT_FOR_FIRST_CONSUMER:
                continue
            return Status(Code.UNRESOLVABLE, "PersistentVolume had no name")
        pv = snapshot.get("PersistentVolume", "", str(pv_name))
        if pv is None:
            return Status(Code.UNRESOLVABLE, not_found("persistentvolume", str(pv_name)))
        topologies.extend(pv_topologies(pv))
    if not topologies:
        return SKIP
    state[STATE_KEY] = tuple(topologies)
    return SUCCESS


def filter_node(state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
    """Port of volume_zone.go: Filter (a pod without volumes and a node with no
    topology label at all pass)."""
    if not as_dict(pod.get("spec")).get("volumes"):
        return SUCCESS
    topologies = state.get(STATE_KEY)
    if not isinstance(topologies, tuple):
        return Status(Code.ERROR, f'reading "{STATE_KEY}" from cycleState: not found')
    labels = node.labels
    if not any(k in labels for k in TOPOLOGY_LABELS):
        return SUCCESS
    for t in topologies:
        value = labels.get(t.key)
        if value is None:
            # A PV's beta label also matches the node's GA label.
            value = labels.get(_GA.get(t.key, t.key))
        if value is None or value not in t.values:
            return CONFLICT
    return SUCCESS


class VolumeZone:
    """PreFilter and Filter of VolumeZone."""

    name: ClassVar[str] = NAME
    node_key_reads_pod: ClassVar[bool] = False
    reads: ClassVar[Reads] = Reads(
        kinds=("PersistentVolumeClaim", "PersistentVolume", "StorageClass"),
        pod_fields=("metadata.namespace", "metadata.name", "spec.volumes"),
        node_fields=("metadata.labels",),
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        record_objects_version(state, snapshot)
        return pre_filter(state, pod, snapshot)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return volume_pod_key(state, pod)

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        return filter_node(state, pod, node)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        return tuple(node.labels.get(k) for k in TOPOLOGY_LABELS)
