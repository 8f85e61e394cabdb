"""The scheduler framework's vocabulary: status codes, Status, CycleState, and the
plugin Protocols per extension point (pkg/scheduler/framework/interface.go).

Outcomes are values, never exceptions: a node that does not fit is a Status with a
code and a reason, exactly as the scheduler's framework.Status.

The runtime (runtime.py) knows plugins only through the Protocols here. Besides
upstream's extension points, every plugin declares what it reads (`reads`): the
cluster kinds (so the informer watches, trim keeps and RBAC allows exactly those)
and the parts of a pod and of a node (so the runtime can group nodes a plugin cannot
tell apart and judge each group once).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from webhook.api.kube import RawObj

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.scheduler.framework.snapshot import Snapshot

__all__ = [
    "MAX_NODE_SCORE",
    "SKIP",
    "SUCCESS",
    "Code",
    "CycleState",
    "FilterPlugin",
    "NodeInfoLike",
    "NodeVerdict",
    "Plugin",
    "PreFilterPlugin",
    "PreScorePlugin",
    "Reads",
    "ScorePlugin",
    "Status",
]


class Code(StrEnum):
    """framework.Code, by the JSON spelling `simulate -o json` prints.

    SKIP is what a PreFilter or PreScore returns when the plugin has nothing to do for
    this pod: its Filter / Score then do not run, and a skipped filter reports Success.
    ERROR is an internal error: upstream fails the scheduling cycle.
    """

    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"
    SKIP = "Skip"


@dataclass(frozen=True, slots=True)
class Status:
    """One plugin's verdict; `reason` is empty on success.

    `reason` is the message as Status.Message() renders it (the reasons joined with
    ", "); `parts` holds the separate reasons when a plugin gives several
    (NodeResourcesFit), each of which kube-scheduler counts on its own in
    "0/N nodes are available: ...".
    """

    code: Code = Code.SUCCESS
    reason: str = ""
    parts: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ok(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def reasons(self) -> tuple[str, ...]:
        """The reasons to count for a failed node: parts, else the reason, else the code."""
        return self.parts or (self.reason or self.code.value,)

    def to_json(self) -> dict[str, str]:
        return {"code": self.code.value, "reason": self.reason}

    @classmethod
    def of(cls, code: Code, reasons: Sequence[str]) -> Status:
        """framework.NewStatus(code, reasons...): several reasons kept apart in `parts`."""
        parts = tuple(reasons)
        return cls(code, ", ".join(parts), parts)


SUCCESS = Status()
SKIP = Status(Code.SKIP)

# framework.MaxNodeScore: normalised scores lie in 0..MAX_NODE_SCORE.
MAX_NODE_SCORE = 100


class CycleState(dict[str, Any]):
    """framework.CycleState: what one plugin's PreFilter / PreScore leaves for its own
    Filter / Score in one scheduling cycle, under the plugin's own key. Never shared
    between cycles; a plugin reads only its own entries."""


class NodeVerdict(NamedTuple):
    """One node's outcome: every filter plugin's status, and scores when feasible.

    Immutable; a NamedTuple because a placement builds one per node (thousands).
    Nodes with the same outcome share the very same `filters` and `scores`
    dicts: read them, never edit them.
    """

    name: str
    feasible: bool
    filters: dict[str, Status]
    scores: dict[str, int]
    # The weighted sum of `scores` kube-scheduler ranks feasible nodes by.
    score: int = 0

    def to_json(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "feasible": self.feasible,
            "filters": {plugin: s.to_json() for plugin, s in self.filters.items()},
            "scores": dict(self.scores),
        }
        if self.feasible:
            out["score"] = self.score
        return out


@dataclass(frozen=True, slots=True)
class Reads:
    """What a plugin reads, declared so the rest of the system can follow from it.

    kinds: the cluster kinds it lists (beyond Node and Pod, which every profile reads),
        e.g. ("PersistentVolumeClaim", "PersistentVolume", "StorageClass").
    pod_fields: dotted paths of the incoming pod's spec it reads ("spec.tolerations").
    node_fields: dotted paths of a Node it reads ("spec.taints", "metadata.labels"),
        plus the pseudo-fields "pods" (the pods bound to the node), "requested" (their
        summed requests) and "name" (the node's name: nodes cannot be grouped).
    existing_pod_fields: dotted paths of the pods already bound that it reads
        ("spec.affinity", "spec.containers[].ports"): what trim must keep of them.
    """

    kinds: tuple[str, ...] = ()
    pod_fields: tuple[str, ...] = ()
    node_fields: tuple[str, ...] = ()
    existing_pod_fields: tuple[str, ...] = ()


@runtime_checkable
class NodeInfoLike(Protocol):
    """What plugins read from framework.snapshot.NodeInfo."""

    @property
    def name(self) -> str: ...
    @property
    def node(self) -> RawObj: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def pods(self) -> list[RawObj]: ...
    @property
    def requested(self) -> dict[str, int]: ...
    @property
    def non_zero_requested(self) -> dict[str, int]: ...
    @property
    def generation(self) -> int: ...


class Plugin(Protocol):
    """Every plugin: its upstream name and what it reads."""

    name: ClassVar[str]
    reads: ClassVar[Reads]


class PreFilterPlugin(Plugin, Protocol):
    """PreFilter: once per pod and cycle. Returns SUCCESS (and leaves its state in
    `state`), SKIP (its Filter does not run: Success on every node), or a failure
    status that applies to every node (the pod cannot be scheduled)."""

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status: ...


class FilterPlugin(Plugin, Protocol):
    """Filter: one node. `node_key` returns what the plugin reads of that node for this
    pod (two nodes with equal keys get the same Status), or None when the node must
    be judged on its own (its name, say). `node_key_reads_pod`: whether that key
    depends on the pod; when it does not, the runtime remembers each node's key across
    pods for as long as the node is unchanged."""

    node_key_reads_pod: ClassVar[bool]

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status: ...

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable | None: ...


class PreScorePlugin(Plugin, Protocol):
    """PreScore: once per pod over the feasible nodes; SKIP leaves the plugin out of
    scoring (absent from `scores`, nothing added to the sum)."""

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfoLike], snapshot: Snapshot
    ) -> Status: ...


class ScorePlugin(PreScorePlugin, Protocol):
    """Score one feasible node, then NormalizeScore over all of them (in place, to
    0..MAX_NODE_SCORE; a plugin without normalisation leaves the scores as they are).
    Every score plugin here has a PreScore (possibly doing nothing)."""

    def score(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> tuple[int, Status]: ...

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status: ...
