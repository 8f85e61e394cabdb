"""VolumeBinding: can the pod's PersistentVolumeClaims be bound on this node, and how
well do the volumes it would bind fit there?

Port of kube-scheduler's volumebinding/{volume_binding,binder,scorer}.go and
pv_helpers.go FindMatchingVolume (v1.37, the newest release read):
- PreFilter looks up every claim of the pod (persistentVolumeClaim and ephemeral
  volumes) and rejects the pod outright when one is missing, Lost (its status.phase:
  bound to a PV that no longer exists), being deleted, not controlled by its pod
  (ephemeral), or unbound with Immediate binding; it sorts the rest into bound
  claims and unbound WaitForFirstConsumer ones. A claim is bound once the PV
  controller has finished with it: spec.volumeName and the
  pv.kubernetes.io/bind-completed annotation; a claim naming a volume without that
  annotation (pre-bound by hand) counts as unbound Immediate, whatever its class.
- Filter checks each bound claim's PV (it exists; its node affinity matches the
  node's labels) and, whatever that gave, the unbound claims: one carrying the
  volume.kubernetes.io/selected-node annotation (a provisioning already started)
  fits only the node it names, and any other node fails at once; the others look,
  smallest request first, for a distinct available PV of their class on the node
  (static binding); the claims left (selected-node ones first) need their
  StorageClass to provision there (a provisioner other than
  kubernetes.io/no-provisioner, allowedTopologies admitting the node). The reasons
  come in upstream's order.
- Score: only with the StorageCapacityScoring gate on (Beta and on by default since
  v1.37; off in v1.35 and v1.36, where the plugin builds no scorer and PreScore
  always skips). With it on, upstream's PreScore never skips: a node where the pod's
  unbound claims would bind to static PVs scores, per storage class, the broken-
  linear shape of the profile's VolumeBindingArgs at the share of the PVs' capacity
  the claims request (averaged over classes, rounded); every other node scores 0.
  The default shape prefers the least utilised node: 100 at 0 %, 0 at 100 %. A pod
  without unbound WaitForFirstConsumer claims, 0 on every node, skips PreScore here.

CAVEAT: not modelled: CSIStorageCapacity (the check "node(s) did not have enough
free storage" and the dynamic-provisioning half of the score, which therefore
scores 0); the binder's assume cache of volumes bound in flight;
volumeAttributesClassName matching; in-tree PVs translated to CSI for the node
affinity check; the PreFilterResult that narrows the nodes to those named by bound
local PVs (those nodes fail Filter here with the node affinity reason instead).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from webhook.api.kube import RawObj, as_dict
from webhook.api.kube import spec as spec_of
from webhook.api.labels import compile_selector
from webhook.api.resources import parse_quantity, unit_value
from webhook.api.versions import Features
from webhook.scheduler.config.types import UtilizationShapePoint, VolumeBindingArgs
from webhook.scheduler.config.validation import validate_volume_binding_args
from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Reads,
    Status,
)
from webhook.scheduler.plugins.helper.shape_score import (
    FunctionShapePoint,
    build_broken_linear_function,
)
from webhook.scheduler.plugins.noderesources.requested_to_capacity_ratio import (
    MAX_CUSTOM_PRIORITY_SCORE,
)
from webhook.scheduler.plugins.volumeutil import (
    claim_class,
    claim_of,
    claim_volumes,
    is_delay_binding,
    not_found,
    not_owner,
    owned_by,
    pv_node_affinity_matches,
    record_objects_version,
    volume_pod_key,
)

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "NAME",
    "VolumeBinding",
    "find_matching_volume",
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
MISSING_STATE: Final = Status(Code.ERROR, f'reading "{STATE_KEY}" from cycleState: not found')
# Set by the PV controller once it has bound a claim (volume.AnnBindCompleted).
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
# The node a claim's provisioning was started for (volume.AnnSelectedNode).
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
CLAIM_LOST: Final = "Lost"
DEFAULT_ARGS: Final = VolumeBindingArgs()
_MAX_UTILIZATION: Final = 100

# A node's score from each storage class's (requested, capacity) in bytes.
ScorerFn = Callable[[dict[str, tuple[int, int]]], int]


@dataclass(frozen=True, slots=True)
class PodVolumeClaims:
    """PreFilter's sorting of the pod's claims (binder.go PodVolumeClaims), with the
    snapshot they were read from.

    bound: claims fully bound (is_fully_bound); delayed: unbound claims naming no volume
    whose class binds WaitForFirstConsumer. An unbound Immediate claim (or a pre-bound
    one) never gets here (PreFilter fails).
    """

    bound: tuple[RawObj, ...]
    delayed: tuple[RawObj, ...]
    snapshot: Snapshot


def _annotations(obj: RawObj) -> dict[str, Any]:
    return as_dict(as_dict(obj.get("metadata")).get("annotations"))


def is_fully_bound(pvc: RawObj) -> bool:
    """Port of binder.go: isPVCFullyBound: the claim names its volume and carries the
    bind-completed annotation (whatever its value)."""
    return bool(spec_of(pvc).get("volumeName")) and ANN_BIND_COMPLETED in _annotations(pvc)


def _claim_problem(pod: RawObj, name: str, ephemeral: bool, pvc: RawObj | None) -> str | None:
    """Why the pod cannot have the claim `name` (None when it can).

    Port of volume_binding.go: podHasPVCs (one volume, in its order): missing, Lost,
    being deleted, an ephemeral volume's claim not controlled by the pod.
    """
    if pvc is None:
        if ephemeral:
            return (
                "waiting for ephemeral volume controller to create the "
                f'persistentvolumeclaim "{name}"'
            )
        return not_found("persistentvolumeclaim", name)
    if as_dict(pvc.get("status")).get("phase") == CLAIM_LOST:
        volume = spec_of(pvc).get("volumeName") or ""
        return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
    if as_dict(pvc.get("metadata")).get("deletionTimestamp") is not None:
        return f'persistentvolumeclaim "{name}" is being deleted'
    if ephemeral and not owned_by(pvc, pod):
        return not_owner(pvc, pod)
    return None


def pre_filter(state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
    """Port of volume_binding.go: PreFilter with podHasPVCs, and binder.go:
    GetPodVolumeClaims."""
    claims = list(claim_volumes(pod))
    if not claims:
        return SKIP
    found: list[RawObj] = []
    for _vol, name, ephemeral in claims:
        pvc = claim_of(pod, name, snapshot)
        problem = _claim_problem(pod, name, ephemeral, pvc)
        if problem is not None:
            return Status(Code.UNRESOLVABLE, problem)
        if pvc is not None:
            found.append(pvc)
    bound: list[RawObj] = []
    delayed: list[RawObj] = []
    immediate: list[RawObj] = []
    for pvc in found:
        if is_fully_bound(pvc):
            bound.append(pvc)
            continue
        delay = is_delay_binding(pvc, snapshot)
        if isinstance(delay, str):
            return Status(Code.ERROR, delay)
        # A pre-bound claim (volumeName without bind-completed) counts as Immediate.
        (delayed if delay and not spec_of(pvc).get("volumeName") else immediate).append(pvc)
    if immediate:
        return Status(Code.UNRESOLVABLE, UNBOUND_IMMEDIATE)
    state[STATE_KEY] = PodVolumeClaims(tuple(bound), tuple(delayed), snapshot)
    return SUCCESS


def _access_modes(obj: RawObj) -> set[str]:
    modes = spec_of(obj).get("accessModes")
    return {m for m in modes if isinstance(m, str)} if isinstance(modes, list) else set()


def _quantity(value: object) -> int:
    parsed = parse_quantity(value)
    return parsed if parsed is not None else 0


def _storage_request(pvc: RawObj) -> int:
    """The claim's resources.requests.storage in nano-units (0 when unset)."""
    return _quantity(as_dict(as_dict(spec_of(pvc).get("resources")).get("requests")).get("storage"))


def _capacity(pv: RawObj) -> int:
    """The PV's capacity.storage in nano-units (0 when unset)."""
    return _quantity(as_dict(spec_of(pv).get("capacity")).get("storage"))


def _name(obj: RawObj) -> str:
    name = as_dict(obj.get("metadata")).get("name")
    return name if isinstance(name, str) else ""


def _bound_to(pv_spec: RawObj, pvc: RawObj) -> bool:
    """Port of pv_helpers.go: IsVolumeBoundToClaim. The claimRef names this claim (and its
    uid, when the reference has one)."""
    ref = as_dict(pv_spec.get("claimRef"))
    meta = as_dict(pvc.get("metadata"))
    if ref.get("name") != meta.get("name"):
        return False
    if (ref.get("namespace") or "default") != (meta.get("namespace") or "default"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def find_matching_volume(
    pvc: RawObj,
    labels: Mapping[str, str],
    volumes: Sequence[RawObj],
    excluded: frozenset[str] | set[str] = frozenset(),
) -> RawObj | None:
    """The PV of `volumes` (those of the claim's class) the claim would bind to on a
    node with these labels, or None.

    Port of pv_helpers.go: FindMatchingVolume (scheduler path), in its order: PVs in
    `excluded` and PVs claimed by another claim are passed over, then those too
    small, of another volume mode, or being deleted; a PV pre-bound to this claim wins
    at once (or nothing does, when its node affinity fails); of the rest, only
    Available PVs matching the claim's selector, class, node affinity and access modes
    are candidates, and the smallest wins (the first of equal sizes).
    """
    spec = spec_of(pvc)
    cls = claim_class(pvc)
    mode = spec.get("volumeMode") or "Filesystem"
    wanted = _access_modes(pvc)
    request = _storage_request(pvc)
    selector = spec.get("selector")
    selects = compile_selector(selector) if isinstance(selector, dict) else None
    best: RawObj | None = None
    best_size = 0
    for pv in volumes:
        if _name(pv) in excluded:
            continue
        pv_spec = spec_of(pv)
        bound_here = _bound_to(pv_spec, pvc)
        if pv_spec.get("claimRef") and not bound_here:
            continue
        size = _capacity(pv)
        if size < request:
            continue
        if (pv_spec.get("volumeMode") or "Filesystem") != mode:
            continue
        if as_dict(pv.get("metadata")).get("deletionTimestamp") is not None:
            continue
        affinity_ok = pv_node_affinity_matches(pv, labels)
        if bound_here:
            return pv if affinity_ok else None
        if as_dict(pv.get("status")).get("phase") != "Available":
            continue
        if selects is not None and not selects(as_dict(as_dict(pv.get("metadata")).get("labels"))):
            continue
        if claim_class(pv) != cls or not affinity_ok:
            continue
        if not wanted <= _access_modes(pv):
            continue
        if best is None or size < best_size:
            best, best_size = pv, size
    return best


def allowed_topologies_match(sc: RawObj, labels: Mapping[str, str]) -> bool:
    """Port of helpers.go: MatchTopologySelectorTerms. No terms match every node; a term
    matches when it has expressions and the node carries every key with one of the
    listed values (a term without expressions matches nothing)."""
    terms = sc.get("allowedTopologies")
    if not isinstance(terms, list) or not terms:
        return True
    for term in terms:
        exprs = as_dict(term).get("matchLabelExpressions")
        if not isinstance(exprs, list) or not exprs:
            continue
        if all(
            isinstance(e, dict) and labels.get(e.get("key", "")) in (e.get("values") or [])
            for e in exprs
        ):
            return True
    return False


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What FindPodVolumes decides for one node: the reasons it cannot host the pod
    (empty when it can) and the static bindings (claim, PV) it would make."""

    reasons: tuple[str, ...]
    static_bindings: tuple[tuple[RawObj, RawObj], ...]


def _check_provisions(
    claims: Sequence[RawObj], labels: Mapping[str, str], snapshot: Snapshot
) -> bool | Status:
    """Port of binder.go: checkVolumeProvisions (without the capacity check): whether
    every claim's class may provision on the node, or the error status."""
    for claim in claims:
        cls = claim_class(claim)
        if not cls:
            meta = as_dict(claim.get("metadata"))
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
            return Status(Code.ERROR, f'no class for claim "{key}"')
        sc = snapshot.get("StorageClass", "", cls)
        if sc is None:
            return Status(Code.ERROR, f'failed to find storage class "{cls}"')
        provisioner = sc.get("provisioner")
        if not provisioner or provisioner == NO_PROVISIONER:
            return False
        if not allowed_topologies_match(sc, labels):
            return False
    return True


def _match_static(
    claims: Sequence[RawObj], labels: Mapping[str, str], snapshot: Snapshot
) -> tuple[list[tuple[RawObj, RawObj]], list[RawObj]]:
    """The static bindings (claim, PV) the claims get on a node with these labels, and
    the claims left without a PV.

    Port of binder.go: findMatchingVolumes: smallest request first, each claim takes a
    distinct PV of its class (FindMatchingVolume).
    """
    by_class: dict[str, list[RawObj]] = {}
    chosen: set[str] = set()
    bindings: list[tuple[RawObj, RawObj]] = []
    unmatched: list[RawObj] = []
    for pvc in sorted(claims, key=_storage_request):
        cls = claim_class(pvc)
        volumes = by_class.get(cls)
        if volumes is None:
            listed = snapshot.listed("PersistentVolume")
            volumes = by_class[cls] = [pv for pv in listed if claim_class(pv) == cls]
        pv = find_matching_volume(pvc, labels, volumes, chosen)
        if pv is None:
            unmatched.append(pvc)
            continue
        chosen.add(_name(pv))
        bindings.append((pvc, pv))
    return bindings, unmatched


def find_pod_volumes(
    claims: PodVolumeClaims, node_name: str, labels: Mapping[str, str]
) -> PodVolumes | Status:
    """The verdict of the node `node_name` (with these labels) for the pod's claims, or
    the error status.

    Port of binder.go: FindPodVolumes with checkBoundClaims: the bound claims' PVs are
    checked first, then the unbound claims whatever that gave, so a node may get both
    reasons. An unbound claim whose selected-node annotation names another node fails
    the node at once (no static binding or provisioning is looked at); one naming this
    node is provisioned here, before the claims no PV matched.
    """
    snapshot = claims.snapshot
    bound_ok, pvs_found, unbound_ok = True, True, True
    for pvc in claims.bound:
        pv = snapshot.get("PersistentVolume", "", str(spec_of(pvc).get("volumeName")))
        if pv is None:
            pvs_found = False
            break
        if not pv_node_affinity_matches(pv, labels):
            bound_ok = False
            break
    bindings: list[tuple[RawObj, RawObj]] = []
    if claims.delayed:
        to_provision: list[RawObj] = []
        to_match: list[RawObj] = []
        for pvc in claims.delayed:
            annotations = _annotations(pvc)
            if ANN_SELECTED_NODE not in annotations:
                to_match.append(pvc)
            elif annotations[ANN_SELECTED_NODE] == node_name:
                to_provision.append(pvc)
            else:
                return PodVolumes(_reasons(bound_ok, False, pvs_found), ())
        if to_match:
            bindings, unmatched = _match_static(to_match, labels, snapshot)
            unbound_ok = not unmatched
            to_provision.extend(unmatched)
        if to_provision:
            provisionable = _check_provisions(to_provision, labels, snapshot)
            if isinstance(provisionable, Status):
                return provisionable
            unbound_ok = provisionable
    return PodVolumes(_reasons(bound_ok, unbound_ok, pvs_found), tuple(bindings))


def _reasons(bound_ok: bool, unbound_ok: bool, pvs_found: bool) -> tuple[str, ...]:
    """FindPodVolumes' reasons, in its order."""
    reasons = []
    if not bound_ok:
        reasons.append(ERR_REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(ERR_REASON_BIND_CONFLICT)
    if not pvs_found:
        reasons.append(ERR_REASON_PV_NOT_EXIST)
    return tuple(reasons)


def filter_node(state: CycleState, node: NodeInfo) -> Status:
    """Port of volume_binding.go: Filter."""
    claims = state.get(STATE_KEY)
    if not isinstance(claims, PodVolumeClaims):
        return MISSING_STATE
    found = find_pod_volumes(claims, node.name, node.labels)
    if isinstance(found, Status):
        return found
    return Status.of(Code.UNRESOLVABLE, found.reasons) if found.reasons else SUCCESS


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> ScorerFn:
    """The score of a node from the (requested, capacity) of each storage class.

    Port of scorer.go: buildScorerFunction: each class scores the shape (scaled to
    0..MAX_NODE_SCORE) at requested * 100 / capacity (at 100 % when the capacity is 0
    or too small); the node scores the classes' mean, rounded half away from zero;
    no class scores 0.
    """
    scale = go_div(MAX_NODE_SCORE, MAX_CUSTOM_PRIORITY_SCORE)
    raw = build_broken_linear_function(
        [FunctionShapePoint(p.utilization, p.score * scale) for p in shape]
    )

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(_MAX_UTILIZATION)
        return raw(requested * _MAX_UTILIZATION // capacity)

    def scorer(classes: dict[str, tuple[int, int]]) -> int:
        if not classes:
            return 0
        total = sum(class_score(req, cap) for req, cap in classes.values())
        # math.Round of total / len: half away from zero (scores are never negative).
        return (2 * total + len(classes)) // (2 * len(classes))

    return scorer


class VolumeBinding:
    """PreFilter, Filter, PreScore and Score of VolumeBinding (args: its shape)."""

    name: ClassVar[str] = NAME
    node_key_reads_pod: ClassVar[bool] = True
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        kinds=("PersistentVolumeClaim", "PersistentVolume", "StorageClass"),
        pod_fields=("metadata.name", "metadata.namespace", "metadata.uid", "spec.volumes"),
        node_fields=("metadata.labels", "name"),
    )

    def __init__(
        self, args: VolumeBindingArgs | None = None, *, features: Features | None = None
    ) -> None:
        """Port of volume_binding.go: New (args validated; the scorer built from their
        shape only with StorageCapacityScoring on, as from v1.37: without it the plugin
        never scores). Raises ValueError on invalid args."""
        self.features = features if features is not None else Features()
        capacity_scoring = self.features.enabled("StorageCapacityScoring")
        if args is None:
            args = DEFAULT_ARGS if capacity_scoring else VolumeBindingArgs(600, None)
        problems = validate_volume_binding_args(args, capacity_scoring=capacity_scoring)
        if problems or (capacity_scoring and not args.shape):
            raise ValueError("; ".join(problems) or "shape: must not be empty")
        self.args = args
        self._scorer = build_scorer(args.shape) if capacity_scoring and args.shape else None

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        record_objects_version(state, snapshot)
        return pre_filter(state, pod, snapshot)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        return volume_pod_key(state, pod)

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        return filter_node(state, node)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        """Each node on its own: Filter reads all of the node's labels, which its
        hostname label alone usually sets apart, and its name (a claim's selected
        node)."""
        return None

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status:
        """Port of volume_binding.go: PreScore. With StorageCapacityScoring on (its
        default) upstream never skips; here a pod without unbound WaitForFirstConsumer
        claims skips, as its Score would be 0 on every node (it adds nothing either way,
        and is left out of the scores shown)."""
        if self._scorer is None:
            return SKIP
        claims = state.get(STATE_KEY)
        if isinstance(claims, PodVolumeClaims) and claims.delayed:
            return SUCCESS
        return SKIP

    def score(self, state: CycleState, pod: RawObj, node: NodeInfo) -> tuple[int, Status]:
        """Port of volume_binding.go: Score: the static bindings the node would make,
        grouped by their PV's spec.storageClassName; 0 without any (a pod without
        claims, or one whose claims are bound or provisioned)."""
        claims = state.get(STATE_KEY)
        if self._scorer is None or not isinstance(claims, PodVolumeClaims) or not claims.delayed:
            return 0, SUCCESS
        found = find_pod_volumes(claims, node.name, node.labels)
        if isinstance(found, Status):
            return 0, found
        classes: dict[str, tuple[int, int]] = {}
        for pvc, pv in found.static_bindings:
            cls = spec_of(pv).get("storageClassName")
            key = cls if isinstance(cls, str) else ""
            requested, capacity = classes.get(key, (0, 0))
            classes[key] = (
                requested + unit_value(_storage_request(pvc)),
                capacity + unit_value(_capacity(pv)),
            )
        return self._scorer(classes), SUCCESS

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """No normalisation (ScoreExtensions nil)."""
        return SUCCESS

    def score_key(self, state: CycleState, pod: RawObj) -> Hashable:
        """The score is 0 on every node unless the pod has unbound claims; then each
        node is scored on its own (None)."""
        claims = state.get(STATE_KEY)
        if isinstance(claims, PodVolumeClaims) and claims.delayed:
            return None
        return ()

    def score_node_key(self, node: NodeInfo) -> Hashable:
        """Nothing of the node, for the pods whose score is 0 everywhere."""
        return ()
