"""PodTopologySpread's default constraints: what its args resolve to for a pod.

A pod without topologySpreadConstraints is spread by the scheduler's default
constraints (PodTopologySpreadArgs, pkg/scheduler/framework/plugins/podtopologyspread/
plugin.go):

- defaultingType System: SYSTEM_DEFAULT_CONSTRAINTS, hostname maxSkew 3 and
  zone maxSkew 5, both ScheduleAnyway;
- defaultingType List: the config's own defaultConstraints (maybe none).

Their labelSelector is helper.DefaultSelector. `default_constraints_for` returns
those defaults as explicit constraints for injection; docs/defaults.md says how that
differs from leaving them to the scheduler.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.api.constraint import SCHEDULE_ANYWAY
from webhook.api.kube import HOSTNAME, ZONE, RawObj, spec
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.plugins.helper.spread import WorkloadSnapshot, default_selector

__all__ = [
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "default_constraints_for",
    "defaults_for_args",
]

SYSTEM_DEFAULT_CONSTRAINTS: tuple[RawObj, ...] = (
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)


def defaults_for_args(args: SpreadArgs) -> tuple[RawObj, ...]:
    """The default constraints the scheduler configured by `args` applies."""
    if args.defaulting_type == "System":
        return SYSTEM_DEFAULT_CONSTRAINTS
    return tuple(c for c in args.default_constraints if isinstance(c, dict))


def default_constraints_for(
    pod: RawObj, snapshot: WorkloadSnapshot | Any, args: SpreadArgs
) -> list[RawObj]:
    """The constraints kube-scheduler would apply to this pod by default, made explicit.

    [] when the pod has constraints of its own, when `args` configures none, or
    when DefaultSelector selects nothing. Each constraint is a copy of the
    configured one with `labelSelector` set to the default selector; its
    matchLabelKeys are dropped because the scheduler replaces a default's selector
    wholesale, so they never apply to a default.

    Port of common.go: buildDefaultConstraints.
    """
    if not isinstance(pod, dict):
        return []
    own = spec(pod).get("topologySpreadConstraints")
    if isinstance(own, list) and own:
        return []
    configured = defaults_for_args(args)
    if not configured:
        return []
    selector = default_selector(pod, snapshot)
    if selector is None:
        return []
    out = []
    for constraint in configured:
        made = copy.deepcopy(constraint)
        made.pop("matchLabelKeys", None)
        made["labelSelector"] = copy.deepcopy(selector)
        out.append(made)
    return out
