"""kube-scheduler's defaults for KubeSchedulerConfiguration v1: the default profile's
plugins and score weights (pkg/scheduler/apis/config/v1/default_plugins.go), how a
profile's plugins are merged with them, and each plugin's args defaults
(pkg/scheduler/apis/config/v1/defaults.go).

Per release (webhook.api.versions.Features; default: the newest): DynamicResourceAllocation
is on in every supported release, so DynamicResources is a default plugin (topospread
does not model it: its PreEnqueue refuses pods with resource claims); with the
NodeDeclaredFeatures gate (off in v1.35, on in v1.36, GA in v1.37) applyFeatureGates
appends NodeDeclaredFeatures to the multiPoint list; with StorageCapacityScoring (on
from v1.37) VolumeBindingArgs without a shape get the default one. v1.37 lists NodeName
before NodeUnschedulable; v1.35 and v1.36 the other way round.

Args are defaulted as raw v1 JSON (camelCase keys), before decoding.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.versions import Features
from webhook.scheduler.config.types import DEFAULT_VOLUME_BINDING_SHAPE

__all__ = [
    "ARGS_PLUGINS",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "PLUGIN_EXTENSION_POINTS",
    "PRE_ENQUEUE_PLUGINS",
    "UNMODELLED_PLUGINS",
    "default_args",
    "default_multi_point",
    "merge_plugin_set",
    "merge_plugins",
    "plugin_names",
]

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# v1.Plugins' extension points, in the order the framework lists them.
EXTENSION_POINTS: tuple[str, ...] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)

# getDefaultPlugins of the newest release: the multiPoint list, in order, with score
# weights (None: the plugin does not score, or scores with the default weight 1);
# default_multi_point gives each release's.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeName", None),
    ("NodeUnschedulable", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
    # applyFeatureGates: DynamicResourceAllocation (GA, on).
    ("DynamicResources", None),
    # applyFeatureGates: NodeDeclaredFeatures (on by default since v1.36, GA in v1.37),
    # appended last: the last filter, after InterPodAffinity and DynamicResources.
    ("NodeDeclaredFeatures", None),
)


def default_multi_point(features: Features | None = None) -> tuple[tuple[str, int | None], ...]:
    """getDefaultPlugins of the release `features` stands for (None: the newest), with
    its applyFeatureGates: NodeDeclaredFeatures only while that gate is on; before
    v1.37, NodeUnschedulable comes before NodeName."""
    if features is None:
        return DEFAULT_MULTI_POINT
    out = list(DEFAULT_MULTI_POINT)
    if not features.version.at_least(37):
        i = out.index(("NodeName", None))
        out[i], out[i + 1] = out[i + 1], out[i]
    if not features.enabled("NodeDeclaredFeatures"):
        out.remove(("NodeDeclaredFeatures", None))
    return tuple(out)

_F = frozenset
# The in-tree registry (NewInTreeRegistry): the extension points each plugin
# implements, which is what multiPoint expands to.
PLUGIN_EXTENSION_POINTS: Mapping[str, frozenset[str]] = {
    "SchedulingGates": _F({"preEnqueue"}),
    "PrioritySort": _F({"queueSort"}),
    "NodeUnschedulable": _F({"filter"}),
    "NodeName": _F({"filter"}),
    "TaintToleration": _F({"filter", "preScore", "score"}),
    "NodeAffinity": _F({"preFilter", "filter", "preScore", "score"}),
    "NodePorts": _F({"preFilter", "filter"}),
    "NodeResourcesFit": _F({"preFilter", "filter", "preScore", "score"}),
    "VolumeRestrictions": _F({"preFilter", "filter"}),
    "NodeVolumeLimits": _F({"preFilter", "filter"}),
    "VolumeBinding": _F({"preFilter", "filter", "reserve", "preBind", "preScore", "score"}),
    "VolumeZone": _F({"preFilter", "filter"}),
    "PodTopologySpread": _F({"preFilter", "filter", "preScore", "score"}),
    "InterPodAffinity": _F({"preFilter", "filter", "preScore", "score"}),
    "DefaultPreemption": _F({"postFilter"}),
    "NodeResourcesBalancedAllocation": _F({"preScore", "score"}),
    "ImageLocality": _F({"score"}),
    "DefaultBinder": _F({"bind"}),
    "DynamicResources": _F(
        {"preEnqueue", "preFilter", "filter", "postFilter", "reserve", "preBind"}
    ),
    "NodeDeclaredFeatures": _F({"preFilter", "filter"}),
}

# Default plugins the placement model does not run: queue sort, binding, and
# DynamicResources (DRA is out of scope: only its PreEnqueue runs, refusing pods with
# resource claims, see plugins/schedulinggates.py). SchedulingGates has only a
# PreEnqueue, which placement.not_scheduled runs.
UNMODELLED_PLUGINS = frozenset(
    {"SchedulingGates", "PrioritySort", "DefaultBinder", "DynamicResources"}
)
# The PreEnqueue plugins placement runs (upstream's order is the profile's).
PRE_ENQUEUE_PLUGINS = frozenset({"SchedulingGates", "DynamicResources"})

_DEFAULT_RESOURCES = ({"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1})


def _resources(raw: Any) -> list[Any]:
    """Resource specs with weight 0 / absent defaulted to 1 (the list itself kept)."""
    out = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict) and not item.get("weight"):
            item = {**item, "weight": 1}
        out.append(item)
    return out


def _fit(args: dict[str, Any]) -> None:
    strategy = args.get("scoringStrategy")
    if strategy is None:
        args["scoringStrategy"] = {
            "type": "LeastAllocated",
            "resources": [dict(r) for r in _DEFAULT_RESOURCES],
        }
        return
    if isinstance(strategy, dict):
        if not strategy.get("resources"):
            strategy["resources"] = [dict(r) for r in _DEFAULT_RESOURCES]
        strategy["resources"] = _resources(strategy["resources"])


def _balanced(args: dict[str, Any]) -> None:
    if not args.get("resources"):
        args["resources"] = [dict(r) for r in _DEFAULT_RESOURCES]
    args["resources"] = _resources(args["resources"])


def _spread(args: dict[str, Any]) -> None:
    if not args.get("defaultingType"):
        args["defaultingType"] = "System"


def _inter_pod(args: dict[str, Any]) -> None:
    args.setdefault("hardPodAffinityWeight", 1)


def _preemption(args: dict[str, Any]) -> None:
    args.setdefault("minCandidateNodesPercentage", 10)
    args.setdefault("minCandidateNodesAbsolute", 100)


def _volume_binding(args: dict[str, Any], features: Features | None = None) -> None:
    if args.get("bindTimeoutSeconds") is None:
        args["bindTimeoutSeconds"] = 600
    capacity_scoring = features is None or features.enabled("StorageCapacityScoring")
    if not args.get("shape") and capacity_scoring:
        args["shape"] = [
            {"utilization": p.utilization, "score": p.score} for p in DEFAULT_VOLUME_BINDING_SHAPE
        ]


def _nothing(args: dict[str, Any]) -> None:
    return None


# Plugins with an Args kind (scheme.New(<Name>Args) succeeds), and their defaulting.
_DEFAULTERS = {
    "DefaultPreemption": _preemption,
    "InterPodAffinity": _inter_pod,
    "NodeAffinity": _nothing,
    "NodeResourcesBalancedAllocation": _balanced,
    "NodeResourcesFit": _fit,
    "PodTopologySpread": _spread,
    "VolumeBinding": _volume_binding,
    "DynamicResources": _nothing,
}
ARGS_PLUGINS = frozenset(_DEFAULTERS)


def default_args(name: str, raw: Any, features: Features | None = None) -> Any:
    """A defaulted copy of one plugin's raw v1 args (None: the plugin's defaults) as
    the release `features` stands for defaults them (None: the newest); args of a
    plugin without an Args kind, or that are not an object, unchanged.

    Port of defaults.go: SetDefaults_DefaultPreemptionArgs,
    SetDefaults_InterPodAffinityArgs, SetDefaults_NodeResourcesFitArgs,
    SetDefaults_NodeResourcesBalancedAllocationArgs, SetDefaults_PodTopologySpreadArgs,
    SetDefaults_VolumeBindingArgs.
    """
    defaulter = _DEFAULTERS.get(name)
    if defaulter is None:
        return copy.deepcopy(raw)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        return copy.deepcopy(raw)
    args = copy.deepcopy(raw)
    if defaulter is _volume_binding:
        _volume_binding(args, features)
    else:
        defaulter(args)
    return args


def _names(plugins: Any) -> list[Any]:
    return list(plugins) if isinstance(plugins, list) else []


def merge_plugin_set(default: Mapping[str, Any], custom: Mapping[str, Any]) -> dict[str, Any]:
    """One extension point's plugin set, the custom one merged over the default.

    Disabled names are kept (the multiPoint expansion reads them); unless "*" is
    disabled, default plugins not disabled stay in order, each replaced in place by
    a custom entry of the same name; custom entries that replaced nothing follow.

    Port of defaults.go: mergePluginSet.
    """
    disabled = [
        {"name": p.get("name")} for p in _names(custom.get("disabled")) if isinstance(p, dict)
    ]
    disabled_names = {p["name"] for p in disabled}
    custom_enabled = [p for p in _names(custom.get("enabled")) if isinstance(p, dict)]
    by_name = {p.get("name"): (i, p) for i, p in enumerate(custom_enabled)}
    replaced: set[int] = set()
    enabled: list[dict[str, Any]] = []
    if "*" not in disabled_names:
        for plugin in _names(default.get("enabled")):
            if plugin.get("name") in disabled_names:
                continue
            hit = by_name.get(plugin.get("name"))
            if hit is not None:
                plugin = hit[1]
                replaced.add(hit[0])
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom_enabled) if i not in replaced)
    return {"enabled": enabled, "disabled": disabled}


def default_plugins(features: Features | None = None) -> dict[str, Any]:
    """getDefaultPlugins as a v1 Plugins object (only multiPoint is set)."""
    return {
        "multiPoint": {
            "enabled": [
                {"name": n, **({"weight": w} if w is not None else {})}
                for n, w in default_multi_point(features)
            ]
        }
    }


def merge_plugins(custom: Any, features: Features | None = None) -> dict[str, Any]:
    """A profile's `plugins` merged with the release's defaults, every extension point
    set.

    Port of defaults.go: mergePlugins.
    """
    custom = custom if isinstance(custom, dict) else {}
    defaults = default_plugins(features)
    out: dict[str, Any] = {}
    for point in ("multiPoint", *EXTENSION_POINTS):
        default_set = defaults.get(point, {})
        custom_set = custom.get(point)
        if not isinstance(custom_set, dict):
            custom_set = {}
        out[point] = merge_plugin_set(default_set, custom_set)
    return out


def plugin_names(plugins: Mapping[str, Any]) -> Sequence[str]:
    """Every plugin named enabled at any extension point, sorted.

    Port of defaults.go: pluginsNames.
    """
    names: set[str] = set()
    for point in ("multiPoint", *EXTENSION_POINTS):
        for plugin in plugins.get(point, {}).get("enabled", []):
            name = plugin.get("name")
            if isinstance(name, str):
                names.add(name)
    return sorted(names)
