"""VolumeBinding: can the pod's PersistentVolumeClaims be bound on this node?

Port of kube-scheduler's volumebinding/{plugin,binder}.go (newest release read):
PreFilter sorts the pod's claims into bound ones and unbound WaitForFirstConsumer
ones and rejects the pod outright when a claim is missing, being deleted, or unbound
with Immediate binding. Filter checks a bound claim's PV node affinity, and for an
unbound claim looks for an available PV that fits the node (static binding) or
else whether its StorageClass may provision there (allowedTopologies).

Score: upstream's VolumeBinding score only exists with the StorageCapacityScoring
feature gate (alpha, off by default), so PreScore Skips, as it does upstream.

CAVEAT: CSIStorageCapacity ("node(s) did not have enough free storage") and the
scheduler's assume cache of PVs bound in flight are not modelled; a PVC that names
a node in volume.kubernetes.io/selected-node is treated like any unbound claim.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.api.kube import spec as spec_of
from webhook.api.labels import compile_selector
from webhook.api.resources import parse_quantity
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Reads, Status
from webhook.scheduler.plugins.volumeutil import (
    claim_class,
    claim_of,
    claim_volumes,
    is_delay_binding,
    not_found,
    owned_by,
    pod_name,
    pv_node_affinity_matches,
    record_objects_version,
    volume_pod_key,
)

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "NAME",
    "VolumeBinding",
]

NAME: Final = "VolumeBinding"
STATE_KEY: Final = "PreFilter" + NAME

ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    """PreFilter's sorting of the pod's claims (binder.go podVolumeClaims).

    bound: claims with spec.volumeName set; delayed: unbound claims whose class binds
    WaitForFirstConsumer. An unbound Immediate claim never gets here (PreFilter fails).
    """

    bound: tuple[RawObj, ...]
    delayed: tuple[RawObj, ...]


def pre_filter(state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
    """Port of plugin.go: PreFilter and binder.go: GetPodVolumeClaims."""
    claims = list(claim_volumes(pod))
    if not claims:
        return SKIP
    ns = pod_namespace(pod)
    bound, delayed, immediate = [], [], []
    for _vol, name, ephemeral in claims:
        pvc = claim_of(pod, name, snapshot)
        if pvc is None:
            if ephemeral:
                msg = (
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{name}"'
                )
            else:
                msg = not_found("persistentvolumeclaim", name)
            return Status(Code.UNRESOLVABLE, msg)
        if ephemeral and not owned_by(pvc, pod):
            return Status(
                Code.UNRESOLVABLE,
                f"PVC {ns}/{name} was not created for pod {ns}/{pod_name(pod)} (pod is not owner)",
            )
        if as_dict(pvc.get("metadata")).get("deletionTimestamp") is not None:
            return Status(Code.UNRESOLVABLE, f'persistentvolumeclaim "{name}" is being deleted')
        if spec_of(pvc).get("volumeName"):
            bound.append(pvc)
        elif is_delay_binding(pvc, snapshot):
            delayed.append(pvc)
        else:
            immediate.append(pvc)
    if immediate:
        return Status(Code.UNRESOLVABLE, UNBOUND_IMMEDIATE)
    state[STATE_KEY] = PodVolumeClaims(tuple(bound), tuple(delayed))
    state[STATE_KEY + "/snapshot"] = snapshot
    return SUCCESS


def _access_modes(obj: RawObj) -> set[str]:
    modes = spec_of(obj).get("accessModes")
    return {m for m in modes if isinstance(m, str)} if isinstance(modes, list) else set()


def _quantity(value: object) -> int:
    parsed = parse_quantity(value)
    return parsed if parsed is not None else 0


def _bound_to(pv_spec: RawObj, pvc: RawObj) -> bool:
    """Port of pv_helpers.go IsVolumeBoundToClaim: the claimRef names this claim (and its
    uid, when the reference has one)."""
    ref = as_dict(pv_spec.get("claimRef"))
    meta = as_dict(pvc.get("metadata"))
    if ref.get("name") != meta.get("name"):
        return False
    if (ref.get("namespace") or "default") != (meta.get("namespace") or "default"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def find_matching_volume(pvc: RawObj, node: RawObj, snapshot: Snapshot) -> RawObj | None:
    """The smallest available PV the claim could bind to on this node, or None.

    Port of pv_helpers.go FindMatchingVolume, in its order: volume mode, deletion, a PV
    pre-bound to this claim (it wins at once, or nothing does when its node affinity
    fails), then only PVs in phase Available and not claimed, the claim's selector,
    class, node affinity, access modes, and the smallest capacity that suffices.
    """
    spec = spec_of(pvc)
    cls = claim_class(pvc)
    mode = spec.get("volumeMode") or "Filesystem"
    wanted = _access_modes(pvc)
    request = _quantity(as_dict(as_dict(spec.get("resources")).get("requests")).get("storage"))
    selector = spec.get("selector")
    selects = compile_selector(selector) if isinstance(selector, dict) else None
    best: RawObj | None = None
    best_size = 0
    for pv in snapshot.listed("PersistentVolume"):
        pv_spec = spec_of(pv)
        if (pv_spec.get("volumeMode") or "Filesystem") != mode:
            continue
        if as_dict(pv.get("metadata")).get("deletionTimestamp") is not None:
            continue
        if _bound_to(pv_spec, pvc):
            return pv if pv_node_affinity_matches(pv, node) else None
        if as_dict(pv.get("status")).get("phase") != "Available" or pv_spec.get("claimRef"):
            continue
        if selects is not None and not selects(as_dict(as_dict(pv.get("metadata")).get("labels"))):
            continue
        if claim_class(pv) != cls or not pv_node_affinity_matches(pv, node):
            continue
        if not wanted <= _access_modes(pv):
            continue
        size = _quantity(as_dict(pv_spec.get("capacity")).get("storage"))
        if size < request:
            continue
        if best is None or size < best_size:
            best, best_size = pv, size
    return best


def allowed_topologies_match(sc: RawObj, labels: dict[str, str]) -> bool:
    """Port of v1helper.MatchTopologySelectorTerms: no terms match every node; a term
    matches when the node carries every key with one of the listed values."""
    terms = sc.get("allowedTopologies")
    if not isinstance(terms, list) or not terms:
        return True
    for term in terms:
        exprs = as_dict(term).get("matchLabelExpressions")
        if not isinstance(exprs, list):
            continue
        if all(
            isinstance(e, dict) and labels.get(e.get("key", "")) in (e.get("values") or [])
            for e in exprs
        ):
            return True
    return False


def filter_node(state: CycleState, node: NodeInfo) -> Status:
    """Port of plugin.go: Filter and binder.go: FindPodVolumes (reasons in its order)."""
    claims = state.get(STATE_KEY)
    snapshot = state.get(STATE_KEY + "/snapshot")
    if not isinstance(claims, PodVolumeClaims) or not isinstance(snapshot, Snapshot):
        return Status(Code.ERROR, f'error reading "{STATE_KEY}" from cycleState: not found')
    bound_ok, pvs_found, unbound_ok = True, True, True
    for pvc in claims.bound:
        pv = snapshot.get("PersistentVolume", "", str(spec_of(pvc).get("volumeName")))
        if pv is None:
            pvs_found = False
            break
        if not pv_node_affinity_matches(pv, node.node):
            bound_ok = False
            break
    if bound_ok and pvs_found:
        chosen: set[str] = set()
        for pvc in claims.delayed:
            pv = find_matching_volume(pvc, node.node, snapshot)
            name = as_dict(pv.get("metadata")).get("name") if pv is not None else None
            if isinstance(name, str) and name not in chosen:
                chosen.add(name)
                continue
            cls = claim_class(pvc)
            sc = snapshot.get("StorageClass", "", cls)
            if sc is None:
                return Status(Code.ERROR, not_found("storageclass.storage.k8s.io", cls))
            if sc.get("provisioner") == NO_PROVISIONER or not allowed_topologies_match(
                sc, node.labels
            ):
                unbound_ok = False
                break
    reasons = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not pvs_found:
        reasons.append(ERR_REASON_PV_NOT_EXIST)
    return Status.of(Code.UNRESOLVABLE, reasons) if reasons else SUCCESS


class VolumeBinding:
    """PreFilter, Filter and (skipping) PreScore of VolumeBinding."""

    name: ClassVar[str] = NAME
    node_key_reads_pod: ClassVar[bool] = True
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        kinds=("PersistentVolumeClaim", "PersistentVolume", "StorageClass"),
        pod_fields=("metadata.name", "metadata.namespace", "metadata.uid", "spec.volumes"),
        node_fields=("metadata.name", "metadata.labels"),
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        record_objects_version(state, snapshot)
        return pre_filter(state, pod, snapshot)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return volume_pod_key(state, pod)

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        return filter_node(state, node)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        # PV node affinity may name nodes by metadata.name (matchFields).
        return None

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status:
        """Port of plugin.go: PreScore: Skip unless StorageCapacityScoring (off by default)."""
        return SKIP

    def score(self, state: CycleState, pod: RawObj, node: NodeInfo) -> tuple[int, Status]:
        return 0, SUCCESS

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        return SUCCESS
