"""kube-scheduler's plugin args validation (pkg/scheduler/apis/config/validation/
validation_pluginargs.go), with upstream's messages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from webhook.api.constraint import (
    BAD,
    SCHEDULE_ACTIONS,
    DecodedConstraint,
    type_errors_of,
    unique_pair,
)
from webhook.api.field import (
    ErrorType,
    FieldError,
    JSONValue,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from webhook.api.names import MUST_BE_OBJECT, validate_label_name
from webhook.scheduler.config.types import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    SpreadArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)

__all__ = [
    "validate_balanced_allocation_args",
    "validate_default_preemption_args",
    "validate_inter_pod_affinity_args",
    "validate_node_affinity_args",
    "validate_node_resources_fit_args",
    "validate_spread_args",
    "validate_volume_binding_args",
]


def validate_spread_args(args: SpreadArgs) -> list[str]:
    """kube-scheduler's ValidatePodTopologySpreadArgs, as rendered error strings (deduplicated)."""
    errs: list[FieldError] = []
    defaulting = args.defaulting_type
    constraints = list(args.default_constraints or ())
    if defaulting not in ("System", "List"):
        errs.append(not_supported("defaultingType", JSONValue(defaulting), ["System", "List"]))
    elif defaulting == "System" and constraints:
        errs.append(
            invalid(
                "defaultingType", JSONValue(defaulting), "when .defaultConstraints are not empty"
            )
        )
    decoded: list[DecodedConstraint | None] = []
    seen_pairs: set[tuple[str, str]] = set()
    for i, raw in enumerate(constraints):
        p = f"defaultConstraints[{i}]"
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            errs.append(invalid(p, JSONValue(raw), MUST_BE_OBJECT))
            decoded.append(None)
            continue
        c = DecodedConstraint(raw, p)
        decoded.append(c)
        errs.extend(type_errors_of(c, "maxSkew"))
        if c.max_skew is not BAD and c.max_skew <= 0:
            errs.append(invalid(p + ".maxSkew", c.max_skew, "not in valid range (0, inf)"))
        errs.extend(type_errors_of(c, "topologyKey"))
        if c.topology_key == "":
            errs.append(required(p + ".topologyKey", "can not be empty"))
        elif c.topology_key is not BAD:
            errs.extend(validate_label_name(c.topology_key, p + ".topologyKey"))
        errs.extend(type_errors_of(c, "whenUnsatisfiable"))
        if c.when == "":
            errs.append(required(p + ".whenUnsatisfiable", "can not be empty"))
        elif c.when is not BAD and c.when not in SCHEDULE_ACTIONS:
            errs.append(
                not_supported(p + ".whenUnsatisfiable", JSONValue(c.when), SCHEDULE_ACTIONS)
            )
        if raw.get("labelSelector") is not None:
            errs.append(
                forbidden(
                    p + ".labelSelector",
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        # kube-scheduler checks each default constraint against the ones before it.
        pair = unique_pair(c)
        if pair is not None:
            if pair in seen_pairs:
                errs.append(duplicate(p, f"{{{c.topology_key}, {c.when}}}"))
            seen_pairs.add(pair)
    return list(dict.fromkeys(e.error() for e in errs))


# ---- the other plugins' args (validation_pluginargs.go) ---------------------------

_SCORING_STRATEGY_TYPES = ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]


def _at(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


def _validate_function_shape(shape: Sequence[UtilizationShapePoint], path: str) -> list[FieldError]:
    """Port of validation_pluginargs.go: validateFunctionShape."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errs: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errs.append(
                invalid(
                    f"{path}[{i}].utilization",
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            errs.append(
                invalid(
                    f"{path}[{i}].utilization", point.utilization, "not in valid range [0, 100]"
                )
            )
        if not 0 <= point.score <= 10:
            errs.append(invalid(f"{path}[{i}].score", point.score, "not in valid range [0, 10]"))
    return errs


def _validate_resources(resources: Sequence[ResourceSpec], path: str) -> list[FieldError]:
    """Port of validation_pluginargs.go: validateResources."""
    return [
        invalid(
            f"{path}[{i}].weight",
            r.weight,
            f"resource weight of {r.name} not in valid range (0, 100]",
        )
        for i, r in enumerate(resources)
        if r.weight <= 0 or r.weight > 100
    ]


def validate_node_resources_fit_args(args: NodeResourcesFitArgs, path: str = "") -> list[str]:
    """kube-scheduler's ValidateNodeResourcesFitArgs, as rendered error strings.

    Port of validation_pluginargs.go: ValidateNodeResourcesFitArgs. kube-scheduler runs
    it when building the plugin (its profile validation keys it under the wrong
    name), so its paths carry no profile prefix.
    """
    errs: list[FieldError] = []
    for i, res in enumerate(args.ignored_resources):
        errs.extend(validate_label_name(res, f"{_at(path, 'ignoredResources')}[{i}]"))
    for i, group in enumerate(args.ignored_resource_groups):
        p = f"{_at(path, 'ignoredResourceGroups')}[{i}]"
        if "/" in group:
            errs.append(invalid(p, group, "resource group name can't contain '/'"))
        errs.extend(validate_label_name(group, p))
    strategy = args.scoring_strategy
    strategy_path = _at(path, "scoringStrategy")
    if strategy.type not in _SCORING_STRATEGY_TYPES:
        errs.append(
            not_supported(
                f"{strategy_path}.type", JSONValue(strategy.type), _SCORING_STRATEGY_TYPES
            )
        )
    errs.extend(_validate_resources(strategy.resources, f"{strategy_path}.resources"))
    if strategy.shape is not None:
        errs.extend(_validate_function_shape(strategy.shape, f"{strategy_path}.shape"))
    return list(dict.fromkeys(e.error() for e in errs))


def validate_balanced_allocation_args(
    args: NodeResourcesBalancedAllocationArgs, path: str = ""
) -> list[str]:
    """Port of validation_pluginargs.go: ValidateNodeResourcesBalancedAllocationArgs."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, r in enumerate(args.resources):
        p = f"{_at(path, 'resources')}[{i}]"
        if r.name in seen:
            errs.append(duplicate(f"{p}.name", r.name))
        seen.add(r.name)
        if r.weight != 1:
            errs.append(invalid(f"{p}.weight", r.weight, "must be 1"))
    return list(dict.fromkeys(e.error() for e in errs))


def validate_inter_pod_affinity_args(args: InterPodAffinityArgs, path: str = "") -> list[str]:
    """Port of validation_pluginargs.go: ValidateInterPodAffinityArgs."""
    w = args.hard_pod_affinity_weight
    if 0 <= w <= 100:
        return []
    return [invalid(_at(path, "hardPodAffinityWeight"), w, "not in valid range [0-100]").error()]


def validate_default_preemption_args(args: DefaultPreemptionArgs, path: str = "") -> list[str]:
    """Port of validation_pluginargs.go: ValidateDefaultPreemptionArgs."""
    errs: list[FieldError] = []
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    pct_path = _at(path, "minCandidateNodesPercentage")
    abs_path = _at(path, "minCandidateNodesAbsolute")
    if not 0 <= pct <= 100:
        errs.append(invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(
            invalid(pct_path, pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
        )
        errs.append(
            invalid(
                abs_path, absolute, "cannot be zero at the same time as minCandidateNodesPercentage"
            )
        )
    return list(dict.fromkeys(e.error() for e in errs))


def validate_volume_binding_args(
    args: VolumeBindingArgs, path: str = "", *, capacity_scoring: bool = True
) -> list[str]:
    """kube-scheduler's ValidateVolumeBindingArgs, as rendered error strings.

    Port of validation_pluginargs.go: ValidateVolumeBindingArgsWithOptions: a timeout
    of 0 or more; with StorageCapacityScoring on (its default since v1.37) a shape of
    at least one point, utilization strictly ascending within 0..100, score within
    0..10; with it off (v1.35, v1.36) no shape at all.
    """
    errs: list[FieldError] = []
    if args.bind_timeout_seconds < 0:
        errs.append(
            invalid(
                _at(path, "bindTimeoutSeconds"),
                args.bind_timeout_seconds,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    if capacity_scoring:
        errs.extend(_validate_function_shape(args.shape or (), _at(path, "shape")))
    elif args.shape is not None:
        # json.Marshal of the internal []UtilizationShapePoint: no json tags, so the Go
        # field names in declaration order (not a map's sorted keys), rendered here.
        shape = ",".join(f'{{"Utilization":{p.utilization},"Score":{p.score}}}' for p in args.shape)
        errs.append(
            FieldError(
                ErrorType.INVALID,
                _at(path, "shape"),
                detail=f"[{shape}]: unexpected field `shape`, remove it or turn on the "
                "feature gate StorageCapacityScoring",
            )
        )
    return list(dict.fromkeys(e.error() for e in errs))


def validate_node_affinity_args(args: NodeAffinityArgs, path: str = "") -> list[str]:
    """Port of validation_pluginargs.go: ValidateNodeAffinityArgs, for the shape of
    addedAffinity: its required node selector must hold terms, and preferred terms
    need a weight in 1..100 and a preference.

    CAVEAT: the requirement-level checks of nodeaffinity.NewNodeSelector (operator,
    values, label names) are not repeated here; a term that does not parse matches
    nothing at scheduling time.
    """
    added = args.added_affinity
    if added is None:
        return []
    errs: list[FieldError] = []
    base = _at(path, "addedAffinity")
    req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None and not isinstance(req, Mapping):
        errs.append(
            invalid(
                f"{base}.requiredDuringSchedulingIgnoredDuringExecution",
                JSONValue(req),
                MUST_BE_OBJECT,
            )
        )
    preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(preferred if isinstance(preferred, list) else []):
        p = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not isinstance(term, Mapping):
            errs.append(invalid(p, JSONValue(term), MUST_BE_OBJECT))
            continue
        weight = term.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            errs.append(invalid(f"{p}.weight", JSONValue(weight), "must be in the range 1-100"))
    return list(dict.fromkeys(e.error() for e in errs))
