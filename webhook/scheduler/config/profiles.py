"""KubeSchedulerConfiguration v1 read as kube-scheduler reads it: defaults applied,
validated, and every profile resolved once into the plugins it runs per extension
point, its score weights and each plugin's args.

Follows pkg/scheduler/apis/config/v1/defaults.go (SetDefaults_KubeSchedulerConfiguration,
setDefaults_KubeSchedulerProfile), pkg/scheduler/apis/config/validation/validation.go
(ValidateKubeSchedulerConfiguration, validateKubeSchedulerProfile,
validatePluginConfig, validateCommonQueueSort) and the profile half of
pkg/scheduler/framework/runtime/framework.go (NewFramework: updatePluginList,
expandMultiPointPlugins, the queue-sort / bind checks, getScoreWeights).

`resolve_configuration` never raises: it answers the resolved profiles and the
error messages kube-scheduler would refuse to start with (empty when valid).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from webhook.api.field import JSONValue, duplicate, invalid, required
from webhook.api.versions import Features
from webhook.scheduler.config.defaults import (
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    PLUGIN_EXTENSION_POINTS,
    default_args,
    merge_plugins,
    plugin_names,
)
from webhook.scheduler.config.types import (
    DefaultPreemptionArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    SpreadArgs,
    UtilizationShapePoint,
    VolumeBindingArgs,
)
from webhook.scheduler.config.validation import (
    validate_balanced_allocation_args,
    validate_default_preemption_args,
    validate_inter_pod_affinity_args,
    validate_node_affinity_args,
    validate_node_resources_fit_args,
    validate_spread_args,
    validate_volume_binding_args,
)

__all__ = [
    "API_VERSION",
    "KIND",
    "ResolvedProfile",
    "decode_args",
    "resolve_configuration",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
# framework.MaxTotalScore (math.MaxInt64) and MaxNodeScore: the weighted sum must not
# overflow.
_MAX_TOTAL_SCORE = 2**63 - 1
_MAX_NODE_SCORE = 100

# The framework's name for each extension point's plugin interface, as its errors say.
_INTERFACE = {
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "reserve": "ReservePlugin",
    "permit": "PermitPlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
}


@dataclass(frozen=True)
class ResolvedProfile:
    """One profile as the framework runs it, built once at start.

    scheduler_name: the pods it schedules (their spec.schedulerName);
    plugins: extension point (v1 spelling: "filter", "score", ...) -> the enabled
    plugin names in the order the framework runs them, every extension point
    present (possibly empty); score_weights: score plugin -> its weight (>= 1),
    exactly the plugins of plugins["score"]; args: plugin -> its decoded args
    (SpreadArgs, NodeResourcesFitArgs, ...) for each enabled plugin with an Args
    kind, or the raw object for one topospread does not decode;
    percentage_of_nodes_to_score: the profile's percentageOfNodesToScore, else the
    configuration's (0..100, 0 adaptive), None when neither sets it (the model then
    scores every node unless told to sample);
    features: the Kubernetes release (and its feature gates) the profile was resolved
    for; its plugins are built with it.
    """

    scheduler_name: str
    plugins: Mapping[str, tuple[str, ...]]
    score_weights: Mapping[str, int]
    args: Mapping[str, Any] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None
    features: Features = field(default_factory=Features)

    def enabled(self, point: str) -> tuple[str, ...]:
        """The plugins run at one extension point, in order."""
        return self.plugins.get(point, ())


# ---- decoding args ---------------------------------------------------------------


class _DecodeError(ValueError):
    pass


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _DecodeError(f"{path}: must be an integer, got {value!r}")
    return value


def _strings(raw: Any, path: str) -> tuple[str, ...]:
    """A list of strings ([]string in the Args), None as empty."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise _DecodeError(f"{path}: must be a list of strings, got {raw!r}")
    return tuple(raw)


def _resource_specs(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    out = []
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _DecodeError(f"{path}[{i}]: must be an object with a name")
        out.append(ResourceSpec(item["name"], _int(item.get("weight", 1), f"{path}[{i}].weight")))
    return tuple(out)


def _shape(raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    if raw is not None and not isinstance(raw, list):
        raise _DecodeError(f"{path}: must be a list, got {raw!r}")
    points = []
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(item, dict):
            raise _DecodeError(f"{path}[{i}]: must be an object")
        points.append(
            UtilizationShapePoint(
                _int(item.get("utilization", 0), f"{path}[{i}].utilization"),
                _int(item.get("score", 0), f"{path}[{i}].score"),
            )
        )
    return tuple(points)


def decode_args(name: str, raw: Any) -> Any:
    """One plugin's defaulted v1 args as its args dataclass (raw for a plugin without
    one). Raises ValueError on a field of the wrong type (kube-scheduler's strict
    decoding refuses the file)."""
    if not isinstance(raw, dict):
        if raw is None:
            raw = {}
        else:
            raise _DecodeError(f"args: must be an object, got {raw!r}")
    if name == "NodeResourcesFit":
        strategy = raw.get("scoringStrategy") or {}
        rtcr = strategy.get("requestedToCapacityRatio")
        shape = None
        if isinstance(rtcr, dict):
            shape = _shape(rtcr.get("shape"), "scoringStrategy.requestedToCapacityRatio.shape")
        return NodeResourcesFitArgs(
            ignored_resources=_strings(raw.get("ignoredResources"), "ignoredResources"),
            ignored_resource_groups=_strings(
                raw.get("ignoredResourceGroups"), "ignoredResourceGroups"
            ),
            scoring_strategy=ScoringStrategy(
                strategy.get("type", ""),
                _resource_specs(strategy.get("resources"), "scoringStrategy.resources"),
                shape,
            ),
        )
    if name == "NodeResourcesBalancedAllocation":
        return NodeResourcesBalancedAllocationArgs(
            _resource_specs(raw.get("resources"), "resources")
        )
    if name == "InterPodAffinity":
        return InterPodAffinityArgs(
            _int(raw.get("hardPodAffinityWeight", 1), "hardPodAffinityWeight"),
            bool(raw.get("ignorePreferredTermsOfExistingPods", False)),
        )
    if name == "NodeAffinity":
        added = raw.get("addedAffinity")
        return NodeAffinityArgs(added if isinstance(added, dict) else None)
    if name == "PodTopologySpread":
        constraints = raw.get("defaultConstraints") or ()
        return SpreadArgs(tuple(constraints), raw.get("defaultingType", "System"))
    if name == "DefaultPreemption":
        return DefaultPreemptionArgs(
            _int(raw.get("minCandidateNodesPercentage", 10), "minCandidateNodesPercentage"),
            _int(raw.get("minCandidateNodesAbsolute", 100), "minCandidateNodesAbsolute"),
        )
    if name == "VolumeBinding":
        shape = raw.get("shape")
        return VolumeBindingArgs(
            _int(raw.get("bindTimeoutSeconds", 600), "bindTimeoutSeconds"),
            None if shape is None else _shape(shape, "shape"),
        )
    return raw


def _validate_args(name: str, args: Any, path: str, features: Features) -> list[str]:
    """validatePluginConfig's per-plugin validators. NodeResourcesFit is checked when the
    plugin is built (NewFit), with no path prefix, as kube-scheduler does."""
    if isinstance(args, SpreadArgs):
        return [f"{path}.{e}" for e in validate_spread_args(args)]
    if isinstance(args, InterPodAffinityArgs):
        return validate_inter_pod_affinity_args(args, path)
    if isinstance(args, NodeAffinityArgs):
        return validate_node_affinity_args(args, path)
    if isinstance(args, NodeResourcesBalancedAllocationArgs):
        return validate_balanced_allocation_args(args, path)
    if isinstance(args, DefaultPreemptionArgs):
        return validate_default_preemption_args(args, path)
    if isinstance(args, VolumeBindingArgs):
        return validate_volume_binding_args(
            args, path, capacity_scoring=features.enabled("StorageCapacityScoring")
        )
    return []


# ---- the framework's view of a profile ------------------------------------------


def _expand(
    plugins: Mapping[str, Any], scheduler_name: str
) -> tuple[dict[str, tuple[str, ...]], dict[str, int], list[str]]:
    """Per extension point, the plugins run and in which order; score weights.

    Port of runtime/framework.go: updatePluginList, expandMultiPointPlugins,
    getScoreWeights and NewFramework's queue-sort / bind checks.
    """
    errors: list[str] = []
    multi = [p for p in plugins["multiPoint"]["enabled"] if isinstance(p, dict)]
    out: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        iface = _INTERFACE[point]
        explicit: list[str] = []
        for plugin in plugins[point]["enabled"]:
            name = str(plugin.get("name"))
            implements = PLUGIN_EXTENSION_POINTS.get(name)
            if implements is None:
                errors.append(f'{iface} "{name}" does not exist')
                continue
            if point not in implements:
                errors.append(f'plugin "{name}" does not extend {iface} plugin')
                continue
            if name in explicit:
                errors.append(f'plugin "{name}" already registered as "{iface}"')
                continue
            explicit.append(name)
        disabled = {p.get("name") for p in plugins[point]["disabled"]}
        if "*" in disabled or not multi:
            out[point] = tuple(explicit)
            continue
        overrides: list[str] = []
        from_multi: list[str] = []
        for plugin in multi:
            name = str(plugin.get("name"))
            implements = PLUGIN_EXTENSION_POINTS.get(name)
            if implements is None:
                errors.append(f'{iface} "{name}" does not exist')
                continue
            if point not in implements or name in disabled:
                continue
            if name in explicit:
                overrides.append(name)
                continue
            if name in from_multi:
                errors.append(f'plugin "{name}" already registered as "{iface}"')
                continue
            from_multi.append(name)
        first = [n for n in explicit if n in overrides]
        rest = [n for n in explicit if n not in overrides]
        out[point] = (*first, *from_multi, *rest)
    if len(out["queueSort"]) != 1:
        errors.append(
            "only one queue sort plugin required for profile with scheduler name "
            f'"{scheduler_name}", but got {len(out["queueSort"])}'
        )
    if not out["bind"]:
        errors.append(
            f'at least one bind plugin is needed for profile with scheduler name "{scheduler_name}"'
        )
    weights: dict[str, int] = {}
    total = 0
    scored = set(out["score"])
    for plugin in [*plugins["score"]["enabled"], *multi]:
        name = plugin.get("name")
        if name not in scored or name in weights:
            continue
        weight = plugin.get("weight") or 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            errors.append(f'plugin "{name}": weight must be an integer')
            weight = 1
        weights[name] = weight or 1
        if weights[name] * _MAX_NODE_SCORE > _MAX_TOTAL_SCORE - total:
            errors.append("total score of Score plugins could overflow")
        total += weights[name] * _MAX_NODE_SCORE
    # Dict-unique names keep the errors readable when a name repeats across points.
    return out, weights, list(dict.fromkeys(errors))


def _profile(
    raw: Mapping[str, Any], index: int, features: Features
) -> tuple[ResolvedProfile | None, list[str]]:
    path = f"profiles[{index}]"
    name = raw.get("schedulerName")
    errors: list[str] = []
    if not isinstance(name, str) or not name:
        errors.append(required(f"{path}.schedulerName").error())
        name = ""
    plugins = merge_plugins(raw.get("plugins"), features)
    configured = raw.get("pluginConfig")
    configured = configured if isinstance(configured, list) else []
    args: dict[str, Any] = {}
    seen: set[str] = set()
    for j, entry in enumerate(configured):
        entry_path = f"{path}.pluginConfig[{j}]"
        entry = entry if isinstance(entry, dict) else {}
        plugin = entry.get("name")
        if not isinstance(plugin, str):
            errors.append(required(f"{entry_path}.name").error())
            continue
        if plugin in seen:
            errors.append(duplicate(entry_path, plugin).error())
            continue
        seen.add(plugin)
        try:
            decoded = decode_args(plugin, default_args(plugin, entry.get("args"), features))
        except ValueError as exc:
            errors.append(
                invalid(f"{entry_path}.args", JSONValue(entry.get("args")), str(exc)).error()
            )
            continue
        args[plugin] = decoded
        errors.extend(_validate_args(plugin, decoded, f"{entry_path}.args", features))
    for plugin in plugin_names(plugins):
        if plugin not in args and plugin not in seen:
            defaulted = default_args(plugin, None, features)
            if defaulted is not None:
                args[plugin] = decode_args(plugin, defaulted)
    fit = args.get("NodeResourcesFit")
    if isinstance(fit, NodeResourcesFitArgs):
        errors.extend(validate_node_resources_fit_args(fit))
    points, weights, framework_errors = _expand(plugins, name)
    errors.extend(framework_errors)
    enabled = {n for names in points.values() for n in names}
    return (
        ResolvedProfile(
            name,
            points,
            weights,
            {k: v for k, v in args.items() if k in enabled},
            features=features,
        ),
        errors,
    )


def _percentage(raw: Mapping[str, Any], path: str) -> tuple[int | None, list[str]]:
    """percentageOfNodesToScore of the configuration or of a profile, with the error
    kube-scheduler refuses it with.

    Port of validation.go: the percentageOfNodesToScore checks of
    ValidateKubeSchedulerConfiguration and validateKubeSchedulerProfile."""
    value = raw.get("percentageOfNodesToScore")
    if value is None:
        return None, []
    if isinstance(value, bool) or not isinstance(value, int):
        return None, [invalid(path, JSONValue(value), "must be an integer").error()]
    if value < 0 or value > 100:
        return None, [invalid(path, value, "not in valid range [0-100]").error()]
    return value, []


def _queue_sort(raw_profiles: list[Mapping[str, Any]]) -> list[str]:
    """Port of validation.go: validateCommonQueueSort (after defaulting)."""

    def queue_sort(p: Mapping[str, Any]) -> Any:
        plugins = p.get("plugins")
        qs = plugins.get("queueSort") if isinstance(plugins, dict) else None
        return (
            merge_plugins({"queueSort": qs})["queueSort"]
            if qs is not None
            else ({"enabled": [], "disabled": []})
        )

    errors: list[str] = []
    canon = queue_sort(raw_profiles[0])
    if len(canon["enabled"]) > 1:
        errors.append(
            invalid(
                "profiles[0].plugins.queueSort.Enabled",
                len(canon["enabled"]),
                "only one queue sort plugin can be enabled",
            ).error()
        )
    for i in range(1, len(raw_profiles)):
        current = queue_sort(raw_profiles[i])
        if current != canon:
            errors.append(
                invalid(
                    f"profiles[{i}].plugins.queueSort",
                    JSONValue(current),
                    "queueSort must be the same for all profiles",
                ).error()
            )
    return errors


def resolve_configuration(
    cfg: Any, features: Features | None = None
) -> tuple[tuple[ResolvedProfile, ...], list[str]]:
    """Every profile of a KubeSchedulerConfiguration (a raw dict), resolved, and the
    messages kube-scheduler would refuse it with (empty when it starts), as the
    release `features` stands for (None: the newest, its gates at their defaults).

    Port of defaults.go: SetDefaults_KubeSchedulerConfiguration (profiles), of
    validation.go: ValidateKubeSchedulerConfiguration (profiles, schedulerName,
    pluginConfig, queueSort) and of runtime/framework.go: NewFramework (plugins).
    """
    if not isinstance(cfg, dict):
        return (), ["KubeSchedulerConfiguration must be an object"]
    features = features if features is not None else Features()
    errors: list[str] = []
    api_version, kind = cfg.get("apiVersion"), cfg.get("kind")
    if api_version not in (None, API_VERSION) or kind not in (None, KIND):
        errors.append(
            f'no kind "{kind}" is registered for version "{api_version}" '
            f"(want {KIND} {API_VERSION})"
        )
    raw_profiles = cfg.get("profiles")
    if raw_profiles is None or raw_profiles == []:
        raw_profiles = [{}]
    if not isinstance(raw_profiles, list):
        return (), [*errors, invalid("profiles", JSONValue(raw_profiles), "must be a list").error()]
    raw_profiles = [p if isinstance(p, dict) else {} for p in raw_profiles]
    if len(raw_profiles) == 1 and raw_profiles[0].get("schedulerName") is None:
        raw_profiles[0] = {**raw_profiles[0], "schedulerName": DEFAULT_SCHEDULER_NAME}
    profiles: list[ResolvedProfile] = []
    first_index: dict[str, int] = {}
    overall, percentage_errors = _percentage(cfg, "percentageOfNodesToScore")
    errors.extend(percentage_errors)
    for i, raw in enumerate(raw_profiles):
        profile, profile_errors = _profile(raw, i, features)
        errors.extend(profile_errors)
        if profile is None:
            continue
        own, percentage_errors = _percentage(raw, f"profiles[{i}].percentageOfNodesToScore")
        errors.extend(percentage_errors)
        # The profile's value wins over the configuration's (numFeasibleNodesToFind).
        percentage = own if own is not None else overall
        if percentage is not None:
            profile = replace(profile, percentage_of_nodes_to_score=percentage)
        if profile.scheduler_name in first_index:
            errors.append(
                duplicate(
                    f"profiles[{i}].schedulerName",
                    f"profiles[{first_index[profile.scheduler_name]}].schedulerName",
                ).error()
            )
        else:
            first_index[profile.scheduler_name] = i
        profiles.append(profile)
    errors.extend(_queue_sort(raw_profiles))
    return tuple(profiles), list(dict.fromkeys(errors))
