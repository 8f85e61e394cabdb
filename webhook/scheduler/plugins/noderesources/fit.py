"""NodeResourcesFit's Filter (pkg/scheduler/framework/plugins/noderesources/fit.go).

Pod count and requested resources against allocatable: Unschedulable, or
UnschedulableAndUnresolvable when a request exceeds the node's whole allocatable
(preemption cannot help). Several reasons are joined with ", " as Status.Message()
renders them and counted one by one.

CAVEAT: a node that reports status.allocatable is read as upstream does, so a missing
`pods` entry allows no pod at all; a node without status.allocatable is treated as
having unlimited resources and no pod cap.
The args' `ignoredResources` and `ignoredResourceGroups` (the part of an extended
resource's name before the "/") leave those extended resources unchecked, as upstream;
native scalar resources (`kubernetes.io/`-prefixed, hugepages-*) are never ignored.

CAVEAT: DRA is not modelled: an extended resource that a DeviceClass maps to devices
is still checked against allocatable here (no DeviceClass is known); the one
DRAExtendedResource rule kept is upstream's skip of a scalar resource the node does
not list when the pod requests no extended resource at all, never for a
`kubernetes.io/`-prefixed native resource (counted as upstream counts it:
"Insufficient kubernetes.io/something", unresolvable on a node without it) other
than DRA's implicit `deviceclass.resource.kubernetes.io/` names.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import and_, eq, le, ne, not_
from typing import ClassVar

from webhook.api.kube import RawObj
from webhook.api.resources import is_extended_resource_name, pod_requests
from webhook.scheduler.config.types import NodeResourcesFitArgs
from webhook.scheduler.framework.nodefacts import node_facts
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLike,
    Reads,
    Status,
)
from webhook.scheduler.plugins.noderesources.fit_scoring import FitScoring
from webhook.scheduler.plugins.noderesources.resource_allocation import resources_key

__all__ = ["REASON_TOO_MANY_PODS", "FitState", "NodeResourcesFit", "fit_reasons", "fit_state"]

REASON_TOO_MANY_PODS = "Too many pods"
FIXED_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# DRAExtendedResource's implicit extended resource name of a DeviceClass
# ("deviceclass.resource.kubernetes.io/<class>"): the one kubernetes.io name DRA serves.
_DRA_IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"


@dataclass(frozen=True, slots=True)
class FitState:
    """preFilterState: what the Filter compares, computed once per pod."""

    # resources.pod_requests of the pod as an incoming pod (no resize status).
    requests: dict[str, int]
    # (resource, amount) pairs compared, in upstream's order: cpu, memory,
    # ephemeral-storage when positive, then scalar resources when non-zero.
    checks: tuple[tuple[str, int], ...]
    # Whether any extended resource is requested: without one, a scalar resource the
    # node does not list is left to DRA (see fit_reasons).
    requests_extended: bool


def _ignored(name: str, args: NodeResourcesFitArgs) -> bool:
    """Whether fitsRequest skips this scalar resource: an extended resource named in
    ignoredResources, or whose prefix (before the "/") is in ignoredResourceGroups.

    Port of fit.go: fitsRequest (its ignoredExtendedResources / ignoredResourceGroups
    check, which applies to extended resources only)."""
    if not is_extended_resource_name(name):
        return False
    return name in args.ignored_resources or name.split("/")[0] in args.ignored_resource_groups


def fit_state(pod: RawObj, args: NodeResourcesFitArgs | None = None) -> FitState:
    """Port of fit.go: computePodResourceRequest, as the comparisons fitsRequest makes
    with the plugin's args (ignored extended resources left out)."""
    requests = pod_requests(pod, use_status=False) if isinstance(pod, dict) else pod_requests({})
    checks = [(name, requests[name]) for name in FIXED_RESOURCES if requests.get(name, 0) > 0]
    scalars = [
        (name, amount)
        for name, amount in sorted(requests.items())
        if name not in FIXED_RESOURCES and name != "pods" and amount != 0
    ]
    requests_extended = any(is_extended_resource_name(name) for name, _ in scalars)
    if args is not None and (args.ignored_resources or args.ignored_resource_groups):
        scalars = [(name, amount) for name, amount in scalars if not _ignored(name, args)]
    return FitState(
        requests=requests,
        checks=(*checks, *scalars),
        requests_extended=requests_extended,
    )


def _left_to_dra(name: str, state: FitState) -> bool:
    """DRAExtendedResource: a scalar resource the node does not list, when the pod asks
    no extended resource, is the DynamicResources plugin's; a native kubernetes.io
    resource is not (upstream counts it: "kubernetes.io resource capacity enforced")."""
    if name in FIXED_RESOURCES or state.requests_extended:
        return False
    return "kubernetes.io/" not in name or name.startswith(_DRA_IMPLICIT_PREFIX)


def fit_reasons(state: FitState, node: NodeInfoLike) -> tuple[list[str], bool]:
    """Port of fit.go: fitsRequest. The reasons, and whether any is unresolvable (the pod
    asks for more than the node's whole allocatable, so no preemption can help)."""
    allocatable = node_facts(node).allocatable
    if allocatable is None:
        return [], False
    reasons = []
    unresolvable = False
    if len(node.pods) + 1 > allocatable.get("pods", 0):
        reasons.append(REASON_TOO_MANY_PODS)
    if state.checks:
        requested = node.requested
        for name, amount in state.checks:
            total = allocatable.get(name)
            if total is None and _left_to_dra(name, state):
                continue
            total = total or 0
            if amount > total - requested.get(name, 0):
                reasons.append("Insufficient " + name)
                unresolvable = unresolvable or amount > total
    return reasons, unresolvable


def _fits(checks: tuple[tuple[str, int], ...], node: NodeInfoLike) -> bool:
    """Whether the pod fits the node for certain: a node without allocatable, or one
    with room for a pod and for every request. False leaves it to fit_reasons (a
    reason, or the DRA rule for a resource the node lacks)."""
    allocatable = node_facts(node).allocatable
    if allocatable is None:
        return True
    if len(node.pods) >= allocatable.get("pods", 0):
        return False
    requested = node.requested
    for name, amount in checks:
        total = allocatable.get(name)
        if total is None or amount > total - requested.get(name, 0):
            return False
    return True


# A resource the node does not list: no request fits in it (fit_reasons decides).
_ABSENT = float("-inf")
# A node without status.allocatable: every request fits.
_UNLIMITED = float("inf")


class _Room:
    """What the nodes of one list have free, by position: whether each has room for one
    more pod, and per resource (read when a pod first asks for it) allocatable less
    requested. Kept while the nodes' generations are the same; rebuilt only for the
    nodes whose generation moved. Threads share it: a column once built is never
    changed, and a new one is added by replacing the dict (one lost to a race is only
    read again)."""

    def __init__(self, nodes: Sequence[NodeInfoLike], last: _Room | None) -> None:
        self.generations = [n.generation for n in nodes]
        self.pod_room: list[bool]
        self.free: dict[str, list[float]] = {}
        if last is not None and len(last.generations) == len(self.generations):
            moved = list(compress(range(len(nodes)), map(ne, self.generations, last.generations)))
            self.pod_room = list(last.pod_room)
            for i in moved:
                self.pod_room[i] = _pod_room(nodes[i])
            for name, column in last.free.items():
                column = list(column)
                for i in moved:
                    column[i] = _free(nodes[i], name)
                self.free[name] = column
        else:
            self.pod_room = [_pod_room(n) for n in nodes]

    def holds(self, nodes: Sequence[NodeInfoLike]) -> bool:
        """Whether these are the very nodes, at the same generations."""
        return len(nodes) == len(self.generations) and all(
            map(eq, (n.generation for n in nodes), self.generations)
        )

    def fits(
        self, checks: tuple[tuple[str, int], ...], nodes: Sequence[NodeInfoLike]
    ) -> list[bool]:
        """Per node of `nodes` (the ones it holds), whether the pod fits for certain
        (see _fits)."""
        fits = self.pod_room
        for name, amount in checks:
            column = self.free.get(name)
            if column is None:
                column = [_free(n, name) for n in nodes]
                self.free = {**self.free, name: column}
            fits = list(map(and_, fits, map(le, repeat(amount), column)))
        return fits


def _pod_room(node: NodeInfoLike) -> bool:
    allocatable = node_facts(node).allocatable
    return allocatable is None or len(node.pods) < allocatable.get("pods", 0)


def _free(node: NodeInfoLike, name: str) -> float:
    allocatable = node_facts(node).allocatable
    if allocatable is None:
        return _UNLIMITED
    total = allocatable.get(name)
    return _ABSENT if total is None else total - node.requested.get(name, 0)


class NodeResourcesFit:
    """Filter and Score, built once with its args (fit.go NewFit): the Filter's state is
    the pod's FitState; the Score is the scoring strategy's (fit_scoring.FitScoring)."""

    name: ClassVar[str] = "NodeResourcesFit"
    # node_key is the verdict for this pod (see node_key).
    node_key_reads_pod: ClassVar[bool] = True
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        pod_fields=(
            "spec.containers[].resources",
            "spec.initContainers[].resources",
            "spec.overhead",
            "spec.resources",
        ),
        node_fields=("status.allocatable", "pods", "requested"),
    )

    def __init__(self, args: NodeResourcesFitArgs | None = None) -> None:
        self.args = args if args is not None else NodeResourcesFitArgs()
        self.scoring = FitScoring(args)
        self._room: _Room | None = None

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        """Port of fit.go: PreFilter."""
        state[self.name] = fit_state(pod, self.args)
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of fit.go: Filter. A node where the pod fits is answered without
        gathering reasons (it runs on every node of a cluster)."""
        fit: FitState = state[self.name]
        if _fits(fit.checks, node):
            return SUCCESS
        reasons, unresolvable = fit_reasons(fit, node)
        if not reasons:
            return SUCCESS
        return Status.of(Code.UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, reasons)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable:
        """The verdict for this pod: every node's requests differ from every other's on a
        real cluster, so nodes are grouped by what Filter answers, not by what it reads.
        Plain strings, cheap to hash ("" when the pod fits)."""
        status = self.filter(state, pod, node)
        return "" if status is SUCCESS else (status.code.value, status.reason, status.parts)

    def node_keys(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfoLike]
    ) -> list[Hashable | None]:
        """node_key of each of `nodes`, in order (the NodeKeysBatch hook: it is read on
        every node of a cluster for each new pod shape). The nodes where the pod fits
        for certain are found by comparing its requests with each node's free amounts
        column by column in C (_Room, kept per node generation); the others get
        node_key."""
        checks = state[self.name].checks
        room = self._room
        if room is None or not room.holds(nodes):
            room = self._room = _Room(nodes, room)
        fits = room.fits(checks, nodes)
        keys: list[Hashable | None] = [""] * len(nodes)
        for i in compress(range(len(nodes)), map(not_, fits)):
            keys[i] = self.node_key(state, pod, nodes[i])
        return keys

    def node_state_key(self, node: NodeInfoLike) -> Hashable:
        """What Filter reads of a node whatever the pod (allocatable, pod count,
        requests): nodes with equal keys get the same verdict for every pod."""
        allocatable = node_facts(node).allocatable
        return (
            None if allocatable is None else tuple(sorted(allocatable.items())),
            len(node.pods),
            tuple(sorted(node.requested.items())),
        )

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        fit: FitState = state[self.name]
        return (fit.checks, fit.requests_extended)

    # ---- score (the scoring strategy's) -------------------------------------------------

    def pre_score(
        self,
        state: CycleState,
        pod: RawObj,
        nodes: Sequence[NodeInfoLike],
        snapshot: Snapshot | None,
    ) -> Status:
        """Port of fit.go: PreScore."""
        return self.scoring.pre_score(state, pod, nodes, snapshot)  # type: ignore[arg-type]

    def score(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> tuple[int, Status]:
        """Port of fit.go: Score."""
        return self.scoring.score(state, pod, node)  # type: ignore[arg-type]

    def score_nodes(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfoLike]
    ) -> tuple[list[int], Status]:
        """Score on each of `nodes`, in order, in one call (the ScoreBatch hook)."""
        return self.scoring.score_nodes(state, pod, nodes)  # type: ignore[arg-type]

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        return self.scoring.normalize_score(state, pod, scores)

    def score_key(self, state: CycleState, pod: RawObj) -> Hashable:
        """What Score reads of the pod (after PreScore): its requests per strategy resource.
        The raw score reads nothing else but the node, so it holds while the node does."""
        return self.scoring.score_key(state)

    def score_node_key(self, node: NodeInfoLike) -> Hashable:
        """What Score reads of a node, whatever the pod: allocatable and requests."""
        return resources_key(node)
