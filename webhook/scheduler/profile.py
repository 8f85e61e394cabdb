"""Scheduling profiles: each profile's plugins built once, as upstream's
frameworkruntime.NewFramework builds a profile once at start.

A `Framework` holds, for one KubeSchedulerConfiguration profile (config.profiles
resolves and validates it), the filter plugins in the profile's order, the score
plugins with their weights, and what they read. Plugins topospread does not model
(queue sort, binding, preemption, gates, DRA: config.defaults.UNMODELLED_PLUGINS) are
left out: they do not change which nodes fit or how they rank.

CAVEAT: PodTopologySpread is held here (its args, its place in the filter order, its
weight) but evaluated by placement's grouped engine, not through FilterCycle.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from webhook.scheduler.config.defaults import UNMODELLED_PLUGINS
from webhook.scheduler.config.profiles import ResolvedProfile, resolve_configuration
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.runtime import FilterCycle
from webhook.scheduler.framework.types import FilterPlugin, Reads, ScorePlugin
from webhook.scheduler.plugins.defaultpreemption import DefaultPreemption
from webhook.scheduler.plugins.podtopologyspread.common import PLUGIN_NAME as SPREAD
from webhook.scheduler.plugins.registry import new_plugin

__all__ = [
    "READS",
    "Framework",
    "build",
    "default_framework",
    "framework_of",
]


@dataclass(frozen=True)
class Framework:
    """One profile, built once.

    scheduler_name: the pods it schedules (spec.schedulerName);
    filter_names: every modelled filter plugin in the profile's order,
        PodTopologySpread included when enabled;
    filters: the same minus PodTopologySpread, run by the generic runtime;
    spread_filter: whether PodTopologySpread filters; spread_args: its args;
    scores: every modelled score plugin but PodTopologySpread, with its weight, in
        the profile's order; spread_weight: PodTopologySpread's score weight, None
        when it does not score; score_names: every score plugin in order;
    reads: what the profile's plugins read (cluster/needs.py follows it);
    post_filter: DefaultPreemption when the profile runs it, else None.
    """

    scheduler_name: str
    filter_names: tuple[str, ...]
    filters: FilterCycle
    spread_filter: bool
    spread_args: SpreadArgs
    scores: tuple[tuple[ScorePlugin, int], ...]
    spread_weight: int | None
    score_names: tuple[str, ...]
    reads: tuple[Reads, ...]
    post_filter: DefaultPreemption | None = None


def build(profile: ResolvedProfile, spread_args: SpreadArgs | None = None) -> Framework:
    """The Framework of a resolved profile. `spread_args` overrides the profile's
    PodTopologySpread args (the config file's older `podTopologySpread` key)."""
    plugins: dict[str, Any] = {}

    def plugin(name: str) -> Any:
        if name not in plugins:
            args = profile.args.get(name)
            if name == SPREAD and spread_args is not None:
                args = spread_args
            plugins[name] = new_plugin(name, args)
        return plugins[name]

    filter_names = tuple(n for n in profile.enabled("filter") if n not in UNMODELLED_PLUGINS)
    score_names = tuple(n for n in profile.enabled("score") if n not in UNMODELLED_PLUGINS)
    filters: list[FilterPlugin] = [plugin(n) for n in filter_names if n != SPREAD]
    scores: list[tuple[ScorePlugin, int]] = [
        (plugin(n), profile.score_weights.get(n, 1)) for n in score_names if n != SPREAD
    ]
    spread = plugin(SPREAD) if SPREAD in (*filter_names, *score_names) else None
    post_filters = [plugin(n) for n in profile.enabled("postFilter") if n == "DefaultPreemption"]
    return Framework(
        scheduler_name=profile.scheduler_name,
        filter_names=filter_names,
        filters=FilterCycle(filters),
        spread_filter=SPREAD in filter_names,
        spread_args=spread.args if spread is not None else SpreadArgs(),
        scores=tuple(scores),
        spread_weight=profile.score_weights.get(SPREAD, 1) if SPREAD in score_names else None,
        score_names=score_names,
        reads=tuple(p.reads for p in plugins.values()),
        post_filter=post_filters[0] if post_filters else None,
    )


@functools.cache
def _default_profile() -> ResolvedProfile:
    profiles, errors = resolve_configuration({})
    if errors or len(profiles) != 1:  # kube-scheduler's own defaults: never happens
        raise RuntimeError(f"the default KubeSchedulerConfiguration does not resolve: {errors}")
    return profiles[0]


# Frameworks built for PodTopologySpread args, by the args' JSON (they hold dicts).
_BUILT: dict[str, Framework] = {}
_BUILT_LIMIT = 16


def default_framework(spread_args: SpreadArgs | None = None) -> Framework:
    """kube-scheduler's default profile, with PodTopologySpread's args when given;
    built once per distinct args."""
    raw = (
        None
        if spread_args is None
        else [spread_args.defaulting_type, spread_args.default_constraints]
    )
    key = json.dumps(raw, sort_keys=True, default=repr)
    fw = _BUILT.get(key)
    if fw is None:
        if len(_BUILT) >= _BUILT_LIMIT:
            _BUILT.clear()
        fw = _BUILT[key] = build(_default_profile(), spread_args)
    return fw


# Frameworks built for resolved profiles (Settings.scheduler), by identity: a profile
# is resolved once at start and kept, so each is built once.
_OF_PROFILE: dict[int, tuple[ResolvedProfile, Framework]] = {}


def framework_of(profile: ResolvedProfile) -> Framework:
    """The Framework of a resolved profile, built on first use and kept with it."""
    hit = _OF_PROFILE.get(id(profile))
    if hit is not None and hit[0] is profile:
        return hit[1]
    if len(_OF_PROFILE) >= _BUILT_LIMIT:
        _OF_PROFILE.clear()
    fw = build(profile)
    _OF_PROFILE[id(profile)] = (profile, fw)
    return fw


# What the default profile's plugins read: the cluster state follows from it.
READS: tuple[Reads, ...] = default_framework().reads
