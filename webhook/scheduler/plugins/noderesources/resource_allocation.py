"""The scorer NodeResourcesFit's strategies and NodeResourcesBalancedAllocation share:
per configured resource, what the node can allocate and what would be requested
with the pod on it, handed to a strategy's function
(pkg/scheduler/framework/plugins/noderesources/resource_allocation.go).

Newest release read: kubernetes/kubernetes master of the 1.35 cycle
(resource_allocation.go with DRA extended resources, balanced_allocation.go with
the best-effort PreScore Skip, fit.go's PreScore). Feature gates at their
defaults: pod-level resources on; in-place resize state read for bound pods only.

Two ways of counting requests, as upstream:

- NodeResourcesFit's strategies (useRequested false) count cpu and memory with
  GetNonzeroRequests' defaults (resources.non_zero_requests): a container that
  does not request cpu counts 100m, one that does not request memory counts 200Mi
  (an explicit 0 stays 0). On the node side this is NodeInfo.non_zero_requested
  (upstream's NonZeroRequested), kept by the Snapshot as pods come and go.
- NodeResourcesBalancedAllocation (useRequested true) counts requests as they
  are, on both sides.

A resource with allocatable 0 on the node is left out of the score; so is an
extended (scalar) resource the pod does not request.

CAVEAT: DRA-backed extended resources (DeviceClass extendedResourceName) are not
modelled; such a resource scores as absent from the node.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from webhook.api.kube import RawObj
from webhook.api.resources import is_scalar_resource_name, non_zero_requests, pod_requests
from webhook.scheduler.config.types import ResourceSpec
from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.nodefacts import node_facts
from webhook.scheduler.framework.types import SUCCESS, Code, NodeInfoLike, Status

__all__ = [
    "RESOURCES_NOT_FOUND",
    "ResourceAllocationScorer",
    "Scorer",
    "allocatable_and_requested",
    "is_best_effort",
    "resources_key",
]

# A strategy's function: (requested, allocatable), one entry per configured resource
# in order, allocatable 0 for a resource left out -> the node's raw score.
Scorer = Callable[[Sequence[int], Sequence[int]], int]
# (requested with the pod, requested without it, allocatable) -> score.
DeltaScorer = Callable[[Sequence[int], Sequence[int], Sequence[int]], int]

RESOURCES_NOT_FOUND = Status(Code.ERROR, "resources not found")


def resources_key(node: NodeInfoLike) -> Hashable:
    """Everything of a node ResourceAllocationScorer.score reads (allocatable, requested,
    non-zero requested), as a key: nodes with equal keys score alike for any pod."""
    allocatable = node_facts(node).allocatable
    return (
        None if allocatable is None else tuple(sorted(allocatable.items())),
        tuple(sorted(node.requested.items())),
        tuple(sorted(node.non_zero_requested.items())),
    )


def is_best_effort(pod_requests_list: Sequence[int]) -> bool:
    """No configured resource is requested.

    Port of resource_allocation.go: isBestEffortPod.
    """
    return all(request == 0 for request in pod_requests_list)


# How calculateResourceAllocatableRequest counts a resource (resource_kind).
CPU_MEMORY, EPHEMERAL_STORAGE, SCALAR, LEFT_OUT = range(4)

# A node's side of one configured resource: (kind, allocatable, what its pods request);
# None for what they request when the resource is left out whatever the pod asks.
NodeSide = tuple[int, int, int | None]

# Node sides remembered per scorer (by node generation) before starting afresh.
MAX_REMEMBERED_SIDES = 65536


def resource_kind(resource: str) -> int:
    """CPU_MEMORY (non-zero or plain requests), EPHEMERAL_STORAGE (plain requests),
    SCALAR (plain requests, only when the pod requests it), or LEFT_OUT."""
    if resource in ("cpu", "memory"):
        return CPU_MEMORY
    if resource == "ephemeral-storage":
        return EPHEMERAL_STORAGE
    return SCALAR if is_scalar_resource_name(resource) else LEFT_OUT


def node_side(
    kind: int,
    resource: str,
    allocatable: Mapping[str, int],
    requested: Mapping[str, int],
    node_requested: Mapping[str, int],
) -> NodeSide:
    """The node's side of one resource (`node_requested`: the requests cpu and memory
    count, non-zero or plain): what calculateResourceAllocatableRequest reads of the node."""
    if kind == CPU_MEMORY:
        return kind, allocatable.get(resource, 0), node_requested.get(resource, 0)
    if kind == EPHEMERAL_STORAGE:
        return kind, allocatable.get(resource, 0), requested.get(resource, 0)
    if kind == SCALAR and resource in allocatable:
        return kind, allocatable[resource], requested.get(resource, 0)
    return kind, 0, None


def with_pod(side: NodeSide, pod_request: int) -> tuple[int, int]:
    """(allocatable, requested with the pod) of one resource from the node's side; (0, 0)
    when the resource is left out: not listed by the node, or a scalar resource the pod
    does not request."""
    kind, alloc, held = side
    if held is None or (pod_request == 0 and kind == SCALAR):
        return 0, 0
    return alloc, held + pod_request


def allocatable_and_requested(
    allocatable: Mapping[str, int],
    requested: Mapping[str, int],
    non_zero_requested: Mapping[str, int],
    resource: str,
    pod_request: int,
    use_requested: bool,
) -> tuple[int, int]:
    """(what the node can allocate, what its pods plus this pod request) of one resource;
    (0, 0) when the resource is left out of the score.

    cpu and memory count the non-zero requests unless `use_requested`;
    ephemeral-storage and scalar resources always count plain requests. An extended
    (scalar) resource the pod does not request, and a resource the node does not
    list, are left out.

    Port of resource_allocation.go: calculateResourceAllocatableRequest.
    """
    node_requested = requested if use_requested else non_zero_requested
    side = node_side(resource_kind(resource), resource, allocatable, requested, node_requested)
    return with_pod(side, pod_request)


@dataclass(frozen=True)
class ResourceAllocationScorer:
    """resourceAllocationScorer: one strategy bound to its resources.

    name: the strategy's name (for messages); scorer: its function; resources: the
    configured resources in order (their weights are the scorer's business);
    use_requested: count cpu / memory as requested (BalancedAllocation) rather
    than with the non-zero defaults (NodeResourcesFit); delta_scorer: when set, it
    scores instead of `scorer`, given what the node's pods request without the pod
    too (BalancedAllocation from v1.36: requested, allocated, allocatable).

    The node's side of every resource (node_side) is remembered per node generation:
    a score then only adds the pod's requests, on every feasible node of a decision.
    """

    name: str
    scorer: Scorer
    resources: tuple[ResourceSpec, ...]
    use_requested: bool = False
    delta_scorer: DeltaScorer | None = None
    _kinds: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _sides: dict[int, tuple[NodeSide, ...]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_kinds", tuple(resource_kind(r.name) for r in self.resources))

    def pod_request_list(self, pod: RawObj) -> tuple[int, ...]:
        """The pod's request of each configured resource, in order (cpu in millicores).

        Port of resource_allocation.go: calculatePodResourceRequestList.
        """
        if self.use_requested:
            totals = pod_requests(pod, use_status=False)
        else:
            totals = non_zero_requests(pod)
        # pod_requests reports "pods": 1 for the filter; no container requests pods.
        return tuple(0 if r.name == "pods" else totals.get(r.name, 0) for r in self.resources)

    def node_sides(self, node: NodeInfoLike) -> tuple[NodeSide, ...]:
        """node_side of each configured resource, in order (remembered per generation)."""
        generation = node.generation
        sides = self._sides.get(generation)
        if sides is None:
            allocatable = node_facts(node).allocatable or {}
            requested = node.requested
            counted = requested if self.use_requested else node.non_zero_requested
            sides = tuple(
                node_side(kind, r.name, allocatable, requested, counted)
                for kind, r in zip(self._kinds, self.resources, strict=True)
            )
            if len(self._sides) >= MAX_REMEMBERED_SIDES:
                self._sides.clear()
            self._sides[generation] = sides
        return sides

    def score(self, pod_request_list: Sequence[int], node: NodeInfoLike) -> tuple[int, Status]:
        """The node's raw score for a pod requesting `pod_request_list`.

        Port of resource_allocation.go: resourceAllocationScorer.score.
        """
        if not self.resources:
            return 0, RESOURCES_NOT_FOUND
        allocs: list[int] = []
        reqs: list[int] = []
        held: list[int] = []
        for side, pod_request in zip(self.node_sides(node), pod_request_list, strict=True):
            alloc, req = with_pod(side, pod_request)
            # A resource the node cannot allocate is left out (both stay 0).
            allocs.append(alloc)
            reqs.append(req if alloc else 0)
            held.append(req - pod_request if alloc else 0)
        if self.delta_scorer is not None:
            return self.delta_scorer(reqs, held, allocs), SUCCESS
        return self.scorer(reqs, allocs), SUCCESS

    def score_many(
        self, pod_request_list: Sequence[int], nodes: Sequence[NodeInfoLike]
    ) -> tuple[list[int], Status]:
        """score() of each of `nodes`, in order, in one loop (a decision scores every
        feasible node of a cluster whose nodes' requests all differ)."""
        if not nodes:
            return [], SUCCESS
        if not self.resources:
            return [], RESOURCES_NOT_FOUND
        remembered = self._sides.get
        sides_of = self.node_sides
        scorer = self.scorer
        # A scalar resource the pod does not request is left out on every node.
        requests = tuple(
            None if (r == 0 and kind == SCALAR) else r
            for kind, r in zip(self._kinds, pod_request_list, strict=True)
        )
        out: list[int] = []
        delta = self.delta_scorer
        for node in nodes:
            sides = remembered(node.generation) or sides_of(node)
            allocs: list[int] = []
            reqs: list[int] = []
            helds: list[int] = []
            for (_, alloc, held), r in zip(sides, requests, strict=True):
                if held is None or r is None or not alloc:
                    allocs.append(0)
                    reqs.append(0)
                    helds.append(0)
                else:
                    allocs.append(alloc)
                    reqs.append(held + r)
                    helds.append(held)
            out.append(scorer(reqs, allocs) if delta is None else delta(reqs, helds, allocs))
        return out, SUCCESS


def weighted_mean_scorer(
    resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]
) -> Scorer:
    """A Scorer: the weighted mean of per_resource(requested, allocatable) over the
    resources the node has (allocatable > 0), truncated; 0 when it has none of them.

    Port of least_allocated.go: leastResourceScorer and most_allocated.go:
    mostResourceScorer (the same loop around their per-resource scores).
    """
    weights = tuple(r.weight for r in resources)

    def scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            node_score += per_resource(req, alloc) * weight
            weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_div(node_score, weight_sum)

    return scorer
