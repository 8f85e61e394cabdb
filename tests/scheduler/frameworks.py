"""Profiles for tests that pin one part of the model: built from a
KubeSchedulerConfiguration exactly as a user would write it."""

from __future__ import annotations

from webhook.config import Settings, settings_from_dict
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.profile import Framework, framework_of

# The five node filters and PodTopologySpread, scored by PodTopologySpread alone: the
# model the placement tests written before the whole profile pin.
SPREAD_ONLY_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {
                    "enabled": [
                        {"name": n}
                        for n in (
                            "PrioritySort",
                            "DefaultBinder",
                            "NodeUnschedulable",
                            "NodeName",
                            "NodeAffinity",
                            "TaintToleration",
                            "NodeResourcesFit",
                            "PodTopologySpread",
                        )
                    ],
                    "disabled": [{"name": "*"}],
                },
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "PodTopologySpread"}]},
            },
        }
    ],
}


def spread_only(args: SpreadArgs | None = None) -> Framework:
    """The five filters plus PodTopologySpread, scored by PodTopologySpread alone."""
    profiles, errors = resolve_configuration(SPREAD_ONLY_CONFIG)
    assert not errors, errors
    return framework_of(profiles[0], args)


def spread_only_settings(**kw: object) -> Settings:
    """Settings whose scheduler configuration is SPREAD_ONLY_CONFIG: placement
    annotations and foresight then rank by PodTopologySpread's score alone."""
    return settings_from_dict({"schedulerConfiguration": SPREAD_ONLY_CONFIG, **kw})
