"""The scheduler framework's vocabulary: status codes, Status, CycleState, and the
plugin Protocols per extension point (pkg/scheduler/framework/interface.go).

Outcomes are values, never exceptions: a node that does not fit is a Status with a
code and a reason, exactly as the scheduler's framework.Status.

The runtime (framework/runtime/) knows plugins only through the Protocols here. Besides
upstream's extension points, every plugin declares what it reads (`reads`): the
cluster kinds (so the informer watches, trim keeps and RBAC allows exactly those)
and the parts of a pod and of a node (so the runtime can group nodes a plugin cannot
tell apart and judge each group once).

Optional hooks (upstream has no such points; each says what a plugin reads, so the
runtime can judge or score a group of nodes once): the Protocols after ScorePlugin,
but for PreFilterExtensions (upstream's, optional there too) and RemovePods (its bulk
RemovePod).
`check_hooks` is run on every plugin when a profile is built: a method or attribute
named like a hook but not one (a misspelling), or half of a hook pair, fails the
build instead of silently falling back to node-by-node evaluation.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    NamedTuple,
    Protocol,
    runtime_checkable,
)

from webhook.api.kube import RawObj

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.scheduler.framework.snapshot import Snapshot

__all__ = [
    "FILTER_OUTCOMES",
    "HOOKS",
    "MAX_NODE_SCORE",
    "SKIP",
    "SUCCESS",
    "Code",
    "ClassFilter",
    "ColumnScore",
    "CycleState",
    "ClassScore",
    "FilterOutcomes",
    "FilterPlugin",
    "NodeLabelKeyed",
    "NodeStateKeyed",
    "NodeInfoLike",
    "NodeKeysBatch",
    "NodeVerdict",
    "Plugin",
    "PreFilterPlugin",
    "PodKeyed",
    "PreFilterExtensions",
    "PreScorePlugin",
    "Reads",
    "RemovePods",
    "ScoreBatch",
    "ScoreKeyed",
    "ScoreLabelKeyed",
    "ScorePlugin",
    "ScoreView",
    "Status",
    "ValueNormalizing",
    "check_hooks",
    "implements",
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


# ---- optional hooks ------------------------------------------------------------------
#
# Each is a way for a plugin to say what it reads, so the runtime judges or scores a
# group of nodes once; each grouping is held to node-by-node evaluation by
# tests/scheduler/test_properties.py.


@runtime_checkable
class PodKeyed(Protocol):
    """Filter: what its Filter reads of the pod (after PreFilter); pods with equal keys
    get the same Status on every node (else the whole spec is the key)."""

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable | None: ...


@runtime_checkable
class NodeLabelKeyed(Protocol):
    """Filter: the node labels its node_key reads for this pod, None when it reads more
    (nodes are then grouped by the node classes of those labels instead of reading
    node_key node by node)."""

    def node_label_keys(self, state: CycleState, pod: RawObj) -> tuple[str, ...] | None: ...


@runtime_checkable
class NodeStateKeyed(Protocol):
    """Filter whose node_key reads the pod: what its Filter reads of a node whatever the
    pod (equal keys, equal statuses for every pod), so nodes can be grouped once per
    node generation when those groups are few."""

    def node_state_key(self, node: NodeInfoLike) -> Hashable | None: ...


@runtime_checkable
class ClassFilter(Protocol):
    """Filter reading nothing of a node but its values for a few labels, and changing
    with every pod bound (PodTopologySpread): judged once per node class of those
    labels at every decision, apart from the outcomes remembered across decisions.

    filter_label_keys: the labels Filter reads (after PreFilter); filter_classes: the
    Status of every node of each class, for `classes` the values of `keys` (a superset
    of filter_label_keys, in any order) per class, ABSENT for a missing label."""

    def filter_label_keys(self, state: CycleState) -> tuple[str, ...]: ...

    def filter_classes(
        self, state: CycleState, keys: tuple[str, ...], classes: Sequence[tuple[Any, ...]]
    ) -> list[Status]: ...


@runtime_checkable
class ScoreKeyed(Protocol):
    """Score: what it reads of the pod (score_key, after PreScore) and, whatever the pod,
    of a node (score_node_key): equal pairs give equal raw scores, remembered per node
    class across decisions."""

    def score_key(self, state: CycleState, pod: RawObj) -> Hashable | None: ...

    def score_node_key(self, node: NodeInfoLike) -> Hashable | None: ...


@runtime_checkable
class ScoreLabelKeyed(Protocol):
    """Score: the node labels it reads for this pod (after PreScore), None when it
    reads more."""

    def score_label_keys(self, state: CycleState, pod: RawObj) -> tuple[str, ...] | None: ...


@runtime_checkable
class ValueNormalizing(Protocol):
    """NormalizeScore maps each raw score by a function of that score and of the set of
    raw scores (not names, not how many nodes share one): normalised over the distinct
    raw scores only."""

    normalize_reads_values: ClassVar[bool]


@runtime_checkable
class ColumnScore(Protocol):
    """PreScore + Score + NormalizeScore for all feasible nodes at once: the normalised
    scores of the nodes at positions `feasible` (ascending) of `table`, exactly what
    Score on each and NormalizeScore over them give (PodTopologySpread: once per node
    class, hostname by presence)."""

    def score_column(
        self, state: CycleState, pod: RawObj, snapshot: Snapshot, table: Any, feasible: list[int]
    ) -> list[int]: ...


class ScoreView(NamedTuple):
    """A score plugin's answer by classes of nodes (ClassScore, and the runtime's view of
    the other class-wise plugins).

    of_node[i]: the class of node i of the NodeTable (nodes of one class score alike);
    scores(first, counts, total): the normalised score of each class of `first` (the
    classes holding feasible nodes -> the first such node's position; counts: -> how
    many, when `counted`, else empty; total: the feasible nodes), normalised over those
    classes as NormalizeScore over their nodes; or the error that fails the cycle; or
    None when a node changed meanwhile and the caller must score node by node.
    """

    of_node: list[int]
    scores: Callable[[Mapping[int, int], Mapping[int, int], int], dict[int, int] | str | None]
    counted: bool = False


@runtime_checkable
class ClassScore(Protocol):
    """PreScore + Score + NormalizeScore by classes of nodes (after PreScore): the
    ScoreView of every node of `table` (PodTopologySpread: label classes, hostname by
    presence, and a class of its own for each node holding matching pods under a
    hostname constraint); None when the plugin cannot say."""

    def score_view(
        self, state: CycleState, pod: RawObj, snapshot: Snapshot, table: Any
    ) -> ScoreView | None: ...


@runtime_checkable
class NodeKeysBatch(Protocol):
    """FilterPlugin.node_key of many nodes in one call (a plugin whose key is its verdict
    for the pod, read on every node of a cluster): one key per node of `nodes`, in
    order, each exactly what node_key gives."""

    def node_keys(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfoLike]
    ) -> list[Hashable | None]: ...


@runtime_checkable
class ScoreBatch(Protocol):
    """Score on many nodes in one call: the raw scores of `nodes`, in order, each exactly
    what Score gives, and SUCCESS; or the Status of the first node whose Score fails."""

    def score_nodes(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfoLike]
    ) -> tuple[list[int], Status]: ...


@runtime_checkable
class PreFilterExtensions(Protocol):
    """framework.PreFilterExtensions: the plugin's PreFilter state (its own entries of
    the CycleState) as if `pod_to_add` were bound to `node` / `pod_to_remove` gone from
    it, for the incoming `pod` (preemption's dry run, nominated pods). `node` already
    holds the change. An entry is replaced, never changed in place (a copy of the
    CycleState keeps the original), and left as the very same object when the pod
    moves no count: preemption takes a state left as it was as "this pod counts
    nowhere", and then neither adds nor removes it again (see RemovePods)."""

    def add_pod(
        self, state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfoLike
    ) -> Status: ...

    def remove_pod(
        self, state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfoLike
    ) -> Status: ...


@runtime_checkable
class RemovePods(Protocol):
    """PreFilterExtensions' RemovePod for several pods of one node at once (preemption's
    first step: every potential victim removed), equal to removing them one by one;
    when it leaves every entry as it was, so does adding or removing any one of them."""

    def remove_pods(
        self, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfoLike
    ) -> Status: ...


# Hook -> the names its Protocol declares, for check_hooks. A plugin implements a hook
# when it has every one of them.
HOOKS: dict[type, tuple[str, ...]] = {
    PodKeyed: ("pod_key",),
    NodeLabelKeyed: ("node_label_keys",),
    NodeStateKeyed: ("node_state_key",),
    ClassFilter: ("filter_label_keys", "filter_classes"),
    ScoreKeyed: ("score_key", "score_node_key"),
    ScoreLabelKeyed: ("score_label_keys",),
    ValueNormalizing: ("normalize_reads_values",),
    ColumnScore: ("score_column",),
    ClassScore: ("score_view",),
    NodeKeysBatch: ("node_keys",),
    ScoreBatch: ("score_nodes",),
    PreFilterExtensions: ("add_pod", "remove_pod"),
    RemovePods: ("remove_pods",),
}
# Upstream's extension points and the declared attributes every plugin may have.
_POINTS = (
    "name",
    "reads",
    "pre_filter",
    "filter",
    "node_key",
    "node_key_reads_pod",
    "pre_score",
    "score",
    "normalize_score",
)


def check_hooks(plugin: object) -> list[str]:
    """What is wrong with a plugin's optional hooks: a public name close to a hook or
    extension point name without being one (a misspelling), or a hook implemented in
    part. Empty when nothing is."""
    known = {n for names in HOOKS.values() for n in names} | set(_POINTS)
    cls = type(plugin)
    public = {n for n in dir(cls) if not n.startswith("_")}
    errors = [
        f"plugin {getattr(plugin, 'name', cls.__name__)!r}: {n!r} is not a hook; "
        f"did you mean {close[0]!r}?"
        for n in sorted(public - known)
        if (close := difflib.get_close_matches(n, known, n=1, cutoff=0.8))
    ]
    for hook, names in HOOKS.items():
        present = [n for n in names if n in public]
        if present and len(present) < len(names):
            missing = [n for n in names if n not in public]
            errors.append(
                f"plugin {getattr(plugin, 'name', cls.__name__)!r} implements "
                f"{hook.__name__} in part: {', '.join(missing)} missing"
            )
    return errors


def implements(plugin: object, hook: type) -> bool:
    """Whether `plugin` has every name of the hook Protocol `hook` (HOOKS), decided once
    per plugin class (a runtime-checkable Protocol's isinstance reads every attribute
    each time, and this runs per plugin and decision)."""
    cls: Any = type(plugin)
    return _implements(cls, hook)


@functools.cache
def _implements(cls: Any, hook: Any) -> bool:
    names = HOOKS[hook]
    return all(hasattr(cls, name) for name in names)


# The CycleState key under which the runtime leaves the remembered filter outcomes of
# the node-wise plugins (FilterOutcomes) for class-wise plugins to read.
FILTER_OUTCOMES = "framework/filter-outcomes"


@dataclass(frozen=True, slots=True)
class FilterOutcomes:
    """Which nodes pass each node-wise filter plugin, from the outcomes the runtime
    remembered: `passing(name)` is one bool per node of `table` (a NodeTable), None
    when that plugin's Filter does not run for this pod. A plugin whose PreFilter
    reads the same rule (PodTopologySpread's node inclusion honours node affinity)
    takes it from here instead of matching every node again."""

    table: Any
    passing: Any  # Callable[[str], list[bool] | None]
