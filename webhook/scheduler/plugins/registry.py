"""The in-tree plugins by name (pkg/scheduler/framework/plugins/registry.go
NewInTreeRegistry): each factory builds the plugin once from its decoded args."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from webhook.api.versions import Features
from webhook.scheduler.plugins.defaultpreemption import DefaultPreemption
from webhook.scheduler.plugins.imagelocality import ImageLocality
from webhook.scheduler.plugins.interpodaffinity import InterPodAffinity
from webhook.scheduler.plugins.nodeaffinity import NodeAffinity
from webhook.scheduler.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from webhook.scheduler.plugins.nodename import NodeName
from webhook.scheduler.plugins.nodeports import NodePorts
from webhook.scheduler.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
)
from webhook.scheduler.plugins.noderesources.fit import NodeResourcesFit
from webhook.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from webhook.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.plugins.schedulinggates import DynamicResources, SchedulingGates
from webhook.scheduler.plugins.tainttoleration import TaintToleration
from webhook.scheduler.plugins.volumebinding import VolumeBinding
from webhook.scheduler.plugins.volumerestrictions import VolumeRestrictions
from webhook.scheduler.plugins.volumezone import VolumeZone

__all__ = ["REGISTRY", "new_plugin"]


Factory = Callable[[Any, Features], Any]


def _no_args(cls: Callable[[], Any]) -> Factory:
    return lambda _args, _features: cls()


def _with_args(cls: Callable[..., Any]) -> Factory:
    return lambda args, _features: cls(args) if args is not None else cls()


def _with_features(cls: Callable[..., Any]) -> Factory:
    """A plugin whose rules differ between releases: built with its args (None: its
    defaults) and the release's Features."""
    return lambda args, features: (
        cls(features=features) if args is None else cls(args, features=features)
    )


REGISTRY: dict[str, Factory] = {
    "SchedulingGates": _no_args(SchedulingGates),
    "NodeUnschedulable": _no_args(NodeUnschedulable),
    "NodeName": _no_args(NodeName),
    "TaintToleration": _no_args(TaintToleration),
    "NodeAffinity": _with_args(NodeAffinity),
    "NodePorts": _no_args(NodePorts),
    "NodeResourcesFit": _with_args(NodeResourcesFit),
    "VolumeRestrictions": _no_args(VolumeRestrictions),
    "NodeVolumeLimits": _no_args(NodeVolumeLimits),
    "VolumeBinding": _with_features(VolumeBinding),
    "VolumeZone": _no_args(VolumeZone),
    "PodTopologySpread": _with_args(PodTopologySpread),
    "InterPodAffinity": _with_args(InterPodAffinity),
    "NodeResourcesBalancedAllocation": _with_features(NodeResourcesBalancedAllocation),
    "ImageLocality": lambda _args, features: ImageLocality(features=features),
    "NodeDeclaredFeatures": lambda _args, features: NodeDeclaredFeatures(features=features),
    # Its PreEnqueue only: the pods it would allocate devices for are not modelled.
    "DynamicResources": _no_args(DynamicResources),
    "DefaultPreemption": _with_args(DefaultPreemption),
}


def new_plugin(name: str, args: Any, features: Features | None = None) -> Any:
    """The plugin `name` built from its args (None: its defaults) for the release
    `features` stands for (None: the newest)."""
    return REGISTRY[name](args, features if features is not None else Features())
