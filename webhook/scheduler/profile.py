"""Scheduling profiles: each profile's plugins built once, as upstream's
frameworkruntime.NewFramework builds a profile once at start.

A `Framework` holds, for one KubeSchedulerConfiguration profile (config.profiles
resolves and validates it), the filter plugins in the profile's order, the score
plugins with their weights, and what they read; every plugin, PodTopologySpread
included, is run by the runtime (framework/runtime/) through the Protocols of
framework/types.py, whose optional hooks are checked here (types.check_hooks): a
plugin with a misspelt or half-implemented hook fails the build. Plugins topospread
does not model (queue sort, binding, preemption, gates, DRA:
config.defaults.UNMODELLED_PLUGINS) are left out: they do not change which nodes fit
or how they rank.

`framework_of` is the one way to get a Framework: built on first use per profile
(and PodTopologySpread args), then kept.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from webhook.scheduler.config.defaults import PRE_ENQUEUE_PLUGINS, UNMODELLED_PLUGINS
from webhook.scheduler.config.profiles import ResolvedProfile, resolve_configuration
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.runtime.framework import FilterCycle
from webhook.scheduler.framework.types import FilterPlugin, Reads, ScorePlugin, check_hooks
from webhook.scheduler.plugins.defaultpreemption import DefaultPreemption
from webhook.scheduler.plugins.podtopologyspread.common import PLUGIN_NAME as SPREAD
from webhook.scheduler.plugins.registry import new_plugin

__all__ = [
    "READS",
    "Framework",
    "HookError",
    "framework_of",
]


class HookError(ValueError):
    """A plugin whose optional hooks are misspelt or implemented in part."""


@dataclass(frozen=True)
class Framework:
    """One profile, built once.

    scheduler_name: the pods it schedules (spec.schedulerName);
    filter_names: every modelled filter plugin in the profile's order;
    filters: those plugins, run by the runtime;
    scores: every modelled score plugin with its weight, in the profile's order;
    score_names: their names in that order;
    plugins: every plugin built for the profile, by name (one instance per name, as
        upstream shares one plugin across its extension points);
    reads: what the profile's plugins read (cluster/needs.py follows it);
    pre_enqueue: the PreEnqueue plugins run (SchedulingGates, DynamicResources' refusal
        of pods with resource claims), in the profile's order;
    post_filter: DefaultPreemption when the profile runs it, else None;
    percentage_of_nodes_to_score: the profile's (or the configuration's)
        percentageOfNodesToScore, None when unset (framework/sampling.py).
    """

    scheduler_name: str
    filter_names: tuple[str, ...]
    filters: FilterCycle
    scores: tuple[tuple[ScorePlugin, int], ...]
    score_names: tuple[str, ...]
    plugins: dict[str, Any]
    reads: tuple[Reads, ...]
    pre_enqueue: tuple[Any, ...] = ()
    post_filter: DefaultPreemption | None = None
    percentage_of_nodes_to_score: int | None = None

    def plugin(self, name: str) -> Any | None:
        """The profile's plugin of that name, None when it is not enabled."""
        return self.plugins.get(name)


def _build(profile: ResolvedProfile, spread_args: SpreadArgs | None = None) -> Framework:
    """The Framework of a resolved profile. `spread_args` overrides the profile's
    PodTopologySpread args (the config file's older `podTopologySpread` key). Raises
    HookError for a plugin whose hooks do not check."""
    plugins: dict[str, Any] = {}

    def plugin(name: str) -> Any:
        if name not in plugins:
            args = profile.args.get(name)
            if name == SPREAD and spread_args is not None:
                args = spread_args
            built = new_plugin(name, args, profile.features)
            errors = check_hooks(built)
            if errors:
                raise HookError("; ".join(errors))
            plugins[name] = built
        return plugins[name]

    filter_names = tuple(n for n in profile.enabled("filter") if n not in UNMODELLED_PLUGINS)
    score_names = tuple(n for n in profile.enabled("score") if n not in UNMODELLED_PLUGINS)
    filters: list[FilterPlugin] = [plugin(n) for n in filter_names]
    scores: list[tuple[ScorePlugin, int]] = [
        (plugin(n), profile.score_weights.get(n, 1)) for n in score_names
    ]
    queued = profile.enabled("preEnqueue")
    pre_enqueue = tuple(plugin(n) for n in queued if n in PRE_ENQUEUE_PLUGINS)
    post_filters = [plugin(n) for n in profile.enabled("postFilter") if n == "DefaultPreemption"]
    return Framework(
        scheduler_name=profile.scheduler_name,
        filter_names=filter_names,
        filters=FilterCycle(filters),
        scores=tuple(scores),
        score_names=score_names,
        plugins=dict(plugins),
        reads=tuple(p.reads for p in plugins.values()),
        pre_enqueue=pre_enqueue,
        post_filter=post_filters[0] if post_filters else None,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
    )


@functools.cache
def _default_profile() -> ResolvedProfile:
    profiles, errors = resolve_configuration({})
    if errors or len(profiles) != 1:  # kube-scheduler's own defaults: never happens
        raise RuntimeError(f"the default KubeSchedulerConfiguration does not resolve: {errors}")
    return profiles[0]


# Frameworks built, by the profile's identity (a profile is resolved once at start and
# kept; the default profile once per process) and the PodTopologySpread args' JSON
# (they hold dicts), each with the profile it was built from.
_BUILT: dict[tuple[int, str], tuple[ResolvedProfile, Framework]] = {}
_BUILT_LIMIT = 32


def framework_of(
    profile: ResolvedProfile | None = None, spread_args: SpreadArgs | None = None
) -> Framework:
    """The Framework of a resolved profile (default: kube-scheduler's default profile),
    with PodTopologySpread's args when given; built on first use and kept."""
    resolved = profile if profile is not None else _default_profile()
    raw = (
        None
        if spread_args is None
        else [spread_args.defaulting_type, spread_args.default_constraints]
    )
    key = (id(resolved), json.dumps(raw, sort_keys=True, default=repr))
    hit = _BUILT.get(key)
    if hit is not None and hit[0] is resolved:
        return hit[1]
    if len(_BUILT) >= _BUILT_LIMIT:
        _BUILT.clear()
    fw = _build(resolved, spread_args)
    _BUILT[key] = (resolved, fw)
    return fw


# What the default profile's plugins read: the cluster state follows from it.
READS: tuple[Reads, ...] = framework_of().reads
