"""kube-scheduler's configuration types (pkg/scheduler/apis/config/types_pluginargs.go)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webhook.api.kube import RawObj

__all__ = [
    "DEFAULT_RESOURCES",
    "DEFAULT_VOLUME_BINDING_SHAPE",
    "DefaultPreemptionArgs",
    "DefaultingType",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "ResourceSpec",
    "ScoringStrategy",
    "ScoringStrategyType",
    "SpreadArgs",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
]

DefaultingType = Literal["System", "List"]


@dataclass(frozen=True)
class SpreadArgs:
    """kube-scheduler's PodTopologySpreadArgs."""

    default_constraints: tuple[RawObj, ...] = ()
    defaulting_type: DefaultingType = "System"


# ---- NodeResourcesFit and NodeResourcesBalancedAllocation -------------------------

ScoringStrategyType = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]


@dataclass(frozen=True)
class ResourceSpec:
    """config.ResourceSpec: a resource a scoring strategy looks at, and its weight."""

    name: str
    weight: int = 1


@dataclass(frozen=True)
class UtilizationShapePoint:
    """config.UtilizationShapePoint: at `utilization` percent (0..100) the score is
    `score` (0..10, scaled to 0..100 when scoring)."""

    utilization: int
    score: int


# The resources and weights the v1 defaults give a scoring strategy (and
# NodeResourcesBalancedAllocation) configured with none (defaults.go).
DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class ScoringStrategy:
    """config.ScoringStrategy of NodeResourcesFitArgs.

    type: which scorer; resources: the resources scored, in order, with their
    weights; shape: RequestedToCapacityRatio's utilization shape (its
    `requestedToCapacityRatio.shape`), None for the other types.
    """

    type: ScoringStrategyType = "LeastAllocated"
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] | None = None


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    """config.NodeResourcesFitArgs.

    ignored_resources: resource names the filter does not check;
    ignored_resource_groups: prefixes ("example.com" for "example.com/x") likewise;
    scoring_strategy: how Score ranks nodes.
    """

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    """config.NodeResourcesBalancedAllocationArgs: the resources balanced (weights are
    validated but the scorer does not use them, as upstream)."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


# ---- the other plugins' args ------------------------------------------------------


@dataclass(frozen=True)
class InterPodAffinityArgs:
    """config.InterPodAffinityArgs.

    hard_pod_affinity_weight: the score weight an existing pod's required affinity
    term counts with toward the incoming pod (0..100, default 1);
    ignore_preferred_terms_of_existing_pods: score only the incoming pod's terms.
    """

    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True)
class NodeAffinityArgs:
    """config.NodeAffinityArgs: added_affinity (a NodeAffinity object) is ANDed with
    every pod's own node affinity; None adds nothing."""

    added_affinity: RawObj | None = None


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """config.DefaultPreemptionArgs: how many candidate nodes DefaultPreemption dry-runs
    (minCandidateNodesPercentage of the potential nodes, at least minCandidateNodesAbsolute)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


# SetDefaults_VolumeBindingArgs with the StorageCapacityScoring gate on (Beta, on by
# default since v1.37): the node with the most room left scores best, 10 (the
# MaxCustomPriorityScore) at 0 % of the volumes' capacity requested, 0 at 100 %.
DEFAULT_VOLUME_BINDING_SHAPE: tuple[UtilizationShapePoint, ...] = (
    UtilizationShapePoint(0, 10),
    UtilizationShapePoint(100, 0),
)


@dataclass(frozen=True)
class VolumeBindingArgs:
    """config.VolumeBindingArgs.

    bind_timeout_seconds: how long binding may wait (default 600); shape: the
    capacity scoring shape, points of ascending utilization (default: v1 defaulting's
    DEFAULT_VOLUME_BINDING_SHAPE); None stands for upstream's nil shape, which
    validation refuses as the gate is on.
    """

    bind_timeout_seconds: int = 600
    shape: tuple[UtilizationShapePoint, ...] | None = DEFAULT_VOLUME_BINDING_SHAPE
