"""The InterPodAffinity plugin: required pod (anti-)affinity Filter, preferred Score."""

from webhook.scheduler.plugins.interpodaffinity.plugin import (
    DEFAULT_ARGS,
    NAME,
    InterPodAffinity,
    InterPodAffinityArgs,
)

__all__ = ["DEFAULT_ARGS", "NAME", "InterPodAffinity", "InterPodAffinityArgs"]
