"""Cluster state the scheduling model reads, kept up to date one object at a time.

A Snapshot holds the Nodes, the Pods bound to them (bucketed by node and by
namespace), and the Services / ReplicaSets / StatefulSets /
ReplicationControllers that DefaultSelector reads, and by (namespace, name) the
STORED_KINDS: what the volume plugins read, PodDisruptionBudgets and PriorityClasses.
`upsert` and `delete` take any handled kind, so a live informer feeds it event by
event.

It also keeps the one index PodTopologySpread needs to be fast on a large
cluster: for each (namespace, label selector) asked about, how many matching,
non-terminating pods each node holds. The index is built on the first question
(one scan of that namespace) and then maintained on every pod add and delete,
so a placement decision never rescans every pod.

Pods not bound yet but nominated to a node (status.nominatedNodeName, left by a
preemption) are held apart (`nominated_pods`): they count on that node only for
the filters of pods of equal or lower priority (RunFilterPluginsWithNominatedPods),
never in NodeInfo, the selector counts or `pods_in`. Unbound pods without a
nomination are not held.

CAVEAT: to keep a 150,000-pod snapshot small, pods are stored as a light view
(metadata name, namespace, uid, labels, deletionTimestamp, a DaemonSet controller
reference; spec.nodeName, and what preemption reads: spec.priority, priorityClassName,
preemptionPolicy, status.startTime, the DisruptionTarget condition,
status.nominatedNodeName).
Their resource requests are summed into NodeInfo.requested, and their cpu and
memory with the scoring defaults into NodeInfo.non_zero_requested, before the
rest is dropped.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from webhook.api.kube import RawObj, as_dict, controller_of, pod_namespace
from webhook.api.kube import meta as meta_of
from webhook.api.labels import compile_selector, find_untolerated_taint
from webhook.api.resources import non_zero_requests, pod_requests

# Pods in these phases hold no resources and no place in any spread: kube-scheduler's
# informer for assigned pods excludes them by field selector.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

WORKLOAD_KINDS = {
    "Service": "services",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "ReplicationController": "replicationcontrollers",
}

# Kinds held by (namespace, name) for the volume and affinity plugins; cluster-scoped
# ones under namespace "". `Snapshot.get(kind, namespace, name)` and `Snapshot.listed(kind)`
# read them.
STORED_KINDS = frozenset(
    {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "PodDisruptionBudget",
        "PriorityClass",
    }
)
_CLUSTER_SCOPED = frozenset({"PersistentVolume", "StorageClass", "CSINode", "PriorityClass"})
# Stored kinds no filter verdict depends on (evictions, preemption and priorities read
# them per decision): their changes leave objects_version alone, so a budget's status,
# which moves with every pod of its workload, does not void the volume plugins' memos.
_UNVERSIONED = frozenset({"PodDisruptionBudget", "PriorityClass"})

# Selector indexes kept per namespace; the least recently asked is dropped beyond this.
MAX_SELECTORS_PER_NAMESPACE = 64
# Sets of topology keys whose domain counts a selector index keeps up to date (a pod's
# constraints name one or two); all are forgotten beyond this.
MAX_DOMAIN_KEYS = 8
# Topology key sets indexed at once; all are dropped on any Node change anyway.
MAX_KEY_INDEXES = 64

# Every change to any NodeInfo draws a fresh number, so a remembered verdict is
# valid exactly while its node's generation is unchanged (even across re-adds).
_GENERATIONS = itertools.count(1)

PodKey = tuple[str, str]

# Node changes the journal keeps (Snapshot.changed_since); older marks read every node.
_JOURNAL_KEEP = 65536
# Distinct pod affinities shared between light pods before starting afresh.
MAX_SHARED_AFFINITIES = 65536
# Distinct pod label sets shared between light pods before starting afresh.
MAX_SHARED_LABELS = 65536


class _Absent:
    """Marks a key a node does not carry in memo.NodeClasses.values (a label may be
    present with a null value, which is not the same)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()
# Per key: the node's label value (ABSENT when it has none), or for a key read by
# presence only, True when the value is not null (None when it is, ABSENT when
# the key is missing).
ClassValues = tuple[Any, ...]
# (node name -> its values for the keys, for nodes carrying every key;
#  per key, the distinct values over those nodes)
KeyIndex = tuple[dict[str, tuple[str, ...]], tuple[tuple[str, ...], ...]]


def is_terminating(pod: RawObj) -> bool:
    return meta_of(pod).get("deletionTimestamp") is not None


def _node_name_of(pod: RawObj) -> str:
    spec = pod.get("spec")
    name = spec.get("nodeName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else ""


# What NodeInfo.non_zero_requested sums: upstream's NonZeroRequested holds cpu and
# memory only.
_NON_ZERO_RESOURCES = ("cpu", "memory")


def bound_pod_requests(pod: RawObj) -> tuple[dict[str, int], dict[str, int]]:
    """What a bound pod adds to its node: (its requests, read with its in-place resize
    state as resources.pod_requests reads a bound pod; its cpu and memory with the
    scoring defaults for containers that request none, resources.non_zero_requests)."""
    requests = pod_requests(pod)
    non_zero = non_zero_requests(pod, use_status=True, requests=requests)
    return requests, {k: non_zero.get(k, 0) for k in _NON_ZERO_RESOURCES}


def selector_fingerprint(selector: RawObj | None) -> str:
    """A stable key for a label selector (None and {} differ: nothing vs everything)."""
    return json.dumps(selector, sort_keys=True, separators=(",", ":"), default=str)


class NodeInfo:
    """One node and what is bound to it.

    name: the node's name; node: the Node object ({} only for a node known
    from its pods before its Node arrived, never listed in Snapshot.nodes);
    labels: its labels ({} when absent); pods: the (light) pods bound there,
    terminating ones included as they still hold resources; requested: the sum
    of resources.pod_requests over pods; non_zero_requested: the sum of their cpu
    and memory counted with the scoring defaults (upstream's NonZeroRequested, see
    bound_pod_requests); generation: changes whenever any of these does. A sum
    brought back to zero by a removal is dropped from its map.
    """

    __slots__ = (
        "name",
        "node",
        "labels",
        "pods",
        "requested",
        "non_zero_requested",
        "generation",
        "_slots",
    )

    def __init__(self, name: str, node: RawObj | None = None) -> None:
        self.name = name
        self.node: RawObj = {}
        self.labels: dict[str, str] = {}
        self.pods: list[RawObj] = []
        self.requested: dict[str, int] = {}
        self.non_zero_requested: dict[str, int] = {}
        # Pod key -> its index in pods; None until asked on a copy made by `without`
        # (its dry run mostly adds and takes back the pod added last: no key needed).
        self._slots: dict[PodKey, int] | None = {}
        self.generation = next(_GENERATIONS)
        if node is not None:
            self.set_node(node)

    def set_node(self, node: RawObj | None) -> None:
        self.node = node if node is not None else {}
        self.labels = dict(as_dict(meta_of(node).get("labels")))
        # Drawn after the change, never before: a reader that read the old number
        # while the change was under way keeps its result under that number only.
        self.generation = next(_GENERATIONS)

    def _slot_map(self) -> dict[PodKey, int]:
        slots = self._slots
        if slots is None:
            slots = self._slots = {_key_of(p): i for i, p in enumerate(self.pods)}
        return slots

    def _add(
        self,
        key: PodKey | None,
        pod: RawObj,
        requests: Mapping[str, int],
        non_zero: Mapping[str, int],
    ) -> None:
        if self._slots is not None:
            self._slots[key if key is not None else _key_of(pod)] = len(self.pods)
        self.pods.append(pod)
        for total, amounts in ((self.requested, requests), (self.non_zero_requested, non_zero)):
            for name, value in amounts.items():
                total[name] = total.get(name, 0) + value
        self.generation = next(_GENERATIONS)

    def _remove(
        self, key: PodKey, requests: Mapping[str, int], non_zero: Mapping[str, int]
    ) -> None:
        slots = self._slot_map()
        i = slots.pop(key)
        last = self.pods.pop()
        if i < len(self.pods):
            # Swap-remove: order carries no meaning and this keeps removal O(1).
            self.pods[i] = last
            slots[_key_of(last)] = i
        self._subtract(requests, non_zero)
        self.generation = next(_GENERATIONS)

    def _subtract(self, requests: Mapping[str, int], non_zero: Mapping[str, int]) -> None:
        """Take one pod's sums off the node's (a sum brought back to zero is dropped)."""
        for total, amounts in ((self.requested, requests), (self.non_zero_requested, non_zero)):
            for name, value in amounts.items():
                left = total.get(name, 0) - value
                if left:
                    total[name] = left
                else:
                    total.pop(name, None)

    def add_pod(
        self, pod: RawObj, requests: Mapping[str, int], non_zero: Mapping[str, int]
    ) -> None:
        """NodeInfo.AddPodInfo on a copy made by `snapshot()` (never on a stored one):
        `pod` with its requests (Snapshot.requests_of) counts here."""
        self._add(_key_of(pod) if self._slots is not None else None, pod, requests, non_zero)

    def remove_pod(
        self, pod: RawObj, requests: Mapping[str, int], non_zero: Mapping[str, int]
    ) -> None:
        """NodeInfo.RemovePod on a copy made by `snapshot()`; a pod not here is ignored."""
        key = _key_of(pod)
        if key in self._slot_map():
            self._remove(key, requests, non_zero)

    def remove_last(
        self, pod: RawObj, requests: Mapping[str, int], non_zero: Mapping[str, int]
    ) -> None:
        """remove_pod for the pod added last (add_pod), which needs no lookup by key: a
        dry run's reprieve taking back a pod it has just put back."""
        if not self.pods or self.pods[-1] is not pod:
            self.remove_pod(pod, requests, non_zero)
            return
        self.pods.pop()
        if self._slots is not None:
            self._slots.pop(_key_of(pod), None)
        self._subtract(requests, non_zero)
        self.generation = next(_GENERATIONS)

    def remove_pods(
        self, pods: Sequence[RawObj], amounts: Sequence[tuple[Mapping[str, int], Mapping[str, int]]]
    ) -> None:
        """remove_pod for each of `pods` (all held here) with its (requests, non-zero
        requests), in one pass: what preemption's first step does to a node copy."""
        gone = {_key_of(p) for p in pods}
        self.pods = [p for p in self.pods if _key_of(p) not in gone]
        self._slots = {_key_of(p): i for i, p in enumerate(self.pods)}
        requested: dict[str, int] = {}
        non_zero_requested: dict[str, int] = {}
        for requests, non_zero in amounts:
            for total, taken in ((requested, requests), (non_zero_requested, non_zero)):
                for name, value in taken.items():
                    total[name] = total.get(name, 0) + value
        self._subtract(requested, non_zero_requested)
        self.generation = next(_GENERATIONS)

    def without(
        self, pods: Sequence[RawObj], amounts: Sequence[tuple[Mapping[str, int], Mapping[str, int]]]
    ) -> NodeInfo:
        """snapshot() then remove_pods(pods, amounts), in one pass and lighter: `pods` are
        objects of this node's `pods` (told apart by identity), and the copy looks pods up
        by key only once asked to (remove_pod)."""
        return self.without_removal(Removal.of(pods, amounts))

    def without_removal(self, removal: Removal) -> NodeInfo:
        """without(pods, amounts) for a Removal worked out once (Removal.of), which a dry
        run may keep while this node's generation holds."""
        gone = removal.gone
        other = NodeInfo(self.name)
        other.node = self.node
        other.labels = self.labels
        other.pods = [p for p in self.pods if id(p) not in gone]
        other.requested = dict(self.requested)
        other.non_zero_requested = dict(self.non_zero_requested)
        other._slots = None
        other._subtract(removal.requested, removal.non_zero_requested)
        other.generation = next(_GENERATIONS)
        return other

    def snapshot(self) -> NodeInfo:
        """NodeInfo.Snapshot: a copy whose pods and sums can change (preemption's dry
        runs) without touching this one; the Node object and labels are shared."""
        other = self._copy()
        other.generation = next(_GENERATIONS)
        return other

    def _copy(self) -> NodeInfo:
        other = NodeInfo(self.name)
        other.node = self.node
        other.labels = self.labels
        other.pods = list(self.pods)
        other.requested = dict(self.requested)
        other.non_zero_requested = dict(self.non_zero_requested)
        other._slots = dict(self._slots) if self._slots is not None else None
        other.generation = self.generation
        return other

    def __repr__(self) -> str:
        return f"NodeInfo({self.name!r}, pods={len(self.pods)})"


class Removal(NamedTuple):
    """Pods to take off a node at once (NodeInfo.without_removal): their ids (the pod
    objects the node holds), and their summed requests and non-zero requests."""

    gone: frozenset[int]
    requested: dict[str, int]
    non_zero_requested: dict[str, int]

    @classmethod
    def of(
        cls,
        pods: Sequence[RawObj],
        amounts: Sequence[tuple[Mapping[str, int], Mapping[str, int]]],
    ) -> Removal:
        """`pods` with each one's (requests, non-zero requests) (Snapshot.requests_of)."""
        requested: dict[str, int] = {}
        non_zero_requested: dict[str, int] = {}
        for requests, non_zero in amounts:
            for total, taken in ((requested, requests), (non_zero_requested, non_zero)):
                for name, value in taken.items():
                    total[name] = total.get(name, 0) + value
        return cls(frozenset(id(p) for p in pods), requested, non_zero_requested)


def _key_of(pod: RawObj) -> PodKey:
    meta = pod.get("metadata")
    if type(meta) is not dict:
        meta = meta_of(pod)
    return (meta.get("namespace") or "default", meta.get("name") or "")


class NodeTable(NamedTuple):
    """The known nodes in name order, built once per change to the set of nodes.

    names: node names, sorted; infos: the NodeInfo of each, same order;
    position: node name -> its index in both.
    """

    names: list[str]
    infos: list[NodeInfo]
    position: dict[str, int]


class _PodEntry:
    __slots__ = ("key", "pod", "node", "labels", "terminating", "requests", "non_zero")

    def __init__(
        self,
        key: PodKey,
        pod: RawObj,
        node: str,
        labels: dict[str, str],
        terminating: bool,
        requests: Mapping[str, int],
        non_zero: Mapping[str, int],
    ) -> None:
        self.key = key
        self.pod = pod
        self.node = node
        self.labels = labels
        self.terminating = terminating
        self.requests = requests
        self.non_zero = non_zero


class _SelectorIndex:
    """Matching, non-terminating pods of one namespace per node, for one selector; and,
    for the topology keys asked for (Snapshot.domain_counts), per domain of each key
    over the nodes carrying all of them, kept up to date pod by pod."""

    __slots__ = ("domains", "matches", "per_node")

    def __init__(self, matches: Callable[[Mapping[str, str]], bool]) -> None:
        self.matches = matches
        self.per_node: dict[str, int] = {}
        # keys -> per key, domain -> matching pods (domains with none absent)
        self.domains: dict[tuple[str, ...], tuple[dict[Any, int], ...]] = {}

    def bump(self, node: str, delta: int, labels: Mapping[str, Any] | None) -> None:
        """`delta` matching pods on `node`; labels: the node's, None when no Node of the
        snapshot has that name (its pods count in no domain)."""
        left = self.per_node.get(node, 0) + delta
        if left:
            self.per_node[node] = left
        else:
            self.per_node.pop(node, None)
        if labels is None:
            return
        for keys, counts in self.domains.items():
            if all(k in labels for k in keys):
                for k, by_domain in zip(keys, counts, strict=True):
                    value = labels[k]
                    now = by_domain.get(value, 0) + delta
                    if now:
                        by_domain[value] = now
                    else:
                        del by_domain[value]


def _intern_labels(labels: Any) -> dict[str, str]:
    if not isinstance(labels, dict):
        return {}
    intern = sys.intern
    return {
        intern(k): intern(v) if isinstance(v, str) else v
        for k, v in labels.items()
        if isinstance(k, str)
    }


class Exclusion(NamedTuple):
    """Snapshot.exclusion for one key: the domains that keep a node, and the nodes left
    out of those domains -> their domain."""

    kept: tuple[Any, ...]
    partial: dict[str, Any]


def _taints_of(node: RawObj | None) -> list[RawObj] | None:
    """A Node's spec.taints when it is a non-empty list, else None."""
    taints = as_dict(as_dict(node).get("spec")).get("taints")
    return taints if isinstance(taints, list) and taints else None


class Snapshot:
    """Nodes, bound pods and workload objects, with incremental matching counts.

    nodes: node name -> NodeInfo, only nodes whose Node object is known.
    services / replicasets / statefulsets / replicationcontrollers: namespace ->
    objects, for DefaultSelector. Every mutation goes through upsert / delete /
    add_pod and takes the lock, so a reader never sees an index half updated.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.services: dict[str, list[RawObj]] = {}
        self.replicasets: dict[str, list[RawObj]] = {}
        self.statefulsets: dict[str, list[RawObj]] = {}
        self.replicationcontrollers: dict[str, list[RawObj]] = {}
        # Namespace objects by name (their labels, for injectNamespaceSelector).
        self.namespaces: dict[str, RawObj] = {}
        # STORED_KINDS objects: kind -> (namespace, name) -> object.
        self.objects: dict[str, dict[tuple[str, str], RawObj]] = {k: {} for k in STORED_KINDS}
        # Drawn afresh whenever a STORED_KINDS object but a budget or a priority class
        # comes, changes or goes: what the volume plugins read beside nodes and pods,
        # which no node generation covers.
        self.objects_version = next(_GENERATIONS)
        # Every node name that has a Node object or bound pods (pods may arrive first).
        self._infos: dict[str, NodeInfo] = {}
        self._pods: dict[PodKey, _PodEntry] = {}
        # Unbound pods with status.nominatedNodeName: by key, and by that node.
        self._nominated: dict[PodKey, _PodEntry] = {}
        self._nominated_on: dict[str, dict[PodKey, _PodEntry]] = {}
        self._by_ns: dict[str, dict[PodKey, _PodEntry]] = {}
        # The bound pods by stored spec.priority (DEFAULT_CLASS: none stored and no
        # class named; None: a class named but no priority stored), kept on every bind
        # and removal: what lowest_priority answers from.
        self._priorities: Counter[int | str | None] = Counter()
        self._indexes: dict[str, OrderedDict[str, _SelectorIndex]] = {}
        self._requests_cache: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
        # Pod (anti-)affinity as kept in light pods, one dict per distinct content.
        self._affinity_cache: dict[str, RawObj] = {}
        # Pod labels as kept in light pods and entries, one dict per content (the
        # replicas of a workload carry the same labels); cleared at MAX_SHARED_LABELS.
        self._labels_cache: dict[tuple[tuple[str, Any], ...], dict[str, Any]] = {}
        # Node name -> {"nodeName": it}: the light spec of every pod that keeps nothing
        # else of its spec (most pods), one dict per node.
        self._node_specs: dict[str, RawObj] = {}
        # A DaemonSet (name, uid) -> the controller reference its light pods keep.
        self._owner_cache: dict[tuple[str, str], list[RawObj]] = {}
        self._key_indexes: dict[tuple[str, ...], KeyIndex] = {}
        self._sorted_domains: dict[str, tuple[Any, ...]] = {}
        self._domain_sizes: dict[tuple[str, ...], tuple[Counter[Any], ...]] = {}
        # The nodes with taints, with them (None: not gathered since the last change of
        # a node's taints), and untolerated()'s answers by tolerations.
        self._tainted: list[tuple[str, list[RawObj]]] | None = None
        self._untolerated: dict[str, frozenset[str]] = {}
        self._exclusions: dict[tuple[tuple[str, ...], frozenset[str]], tuple[Exclusion, ...]] = {}
        self._sorted_names: list[str] | None = None
        self._table: NodeTable | None = None
        self._topology_version = 0
        self._lock = threading.RLock()
        # Drawn afresh (from the same counter as node generations, so unique across
        # snapshots) once every change is fully applied, never before: a reader caches
        # by the version it read before reading the state, so a change under way when
        # it read leaves its result under the old version, which no later reader takes.
        # Node generations and objects_version follow the same rule.
        self.version = next(_GENERATIONS)
        # The names of the nodes whose NodeInfo changed, in order (changed_since):
        # a reader that remembers journal_mark() re-reads only those, not every node.
        # Unique per snapshot (a copy draws its own), so a mark is never read against
        # another snapshot's journal.
        self.identity = next(_GENERATIONS)
        self._journal: list[str] = []
        self._journal_base = 0

    # ---- building -------------------------------------------------------------

    @classmethod
    def from_objects(cls, objs: Iterable[RawObj]) -> Snapshot:
        """A snapshot of every handled object in `objs` (other kinds are ignored)."""
        snap = cls()
        for obj in objs:
            snap.upsert(obj)
        return snap

    def upsert(self, obj: RawObj) -> None:
        """Add or replace one object of a handled kind (WORKLOAD_KINDS, STORED_KINDS, Node,
        Pod, Namespace)."""
        if not isinstance(obj, dict):
            return
        kind = obj.get("kind")
        with self._lock:
            try:
                self._upsert(kind, obj)
            finally:
                # After the change, never before (see `version` in __init__).
                self.version = next(_GENERATIONS)

    def _upsert(self, kind: Any, obj: RawObj) -> None:
        if kind == "Pod":
            self._upsert_pod(obj)
        elif kind == "Node":
            self._upsert_node(obj)
        elif kind in WORKLOAD_KINDS:
            self._upsert_workload(kind, obj)
        elif kind == "Namespace":
            name = meta_of(obj).get("name")
            if isinstance(name, str):
                self.namespaces[name] = obj
        elif kind in STORED_KINDS:
            key = _stored_key(kind, obj)
            if key is not None:
                self.objects[kind][key] = obj
                if kind not in _UNVERSIONED:
                    self.objects_version = next(_GENERATIONS)

    def delete(self, obj: RawObj) -> None:
        """Forget one object (by kind, namespace and name); unknown objects are ignored."""
        if not isinstance(obj, dict):
            return
        kind = obj.get("kind")
        with self._lock:
            try:
                self._delete(kind, obj)
            finally:
                self.version = next(_GENERATIONS)

    def _delete(self, kind: Any, obj: RawObj) -> None:
        if kind == "Pod":
            self._remove_pod(_key_of(obj))
        elif kind == "Node":
            name = meta_of(obj).get("name")
            info = self._infos.get(name) if isinstance(name, str) else None
            if info is not None:
                # Pods bound to a vanished node stay known: the node may come back.
                info.set_node(None)
                self.nodes.pop(info.name, None)
                self._sorted_names = None
                self._table = None
                self._changed(info.name)
                self._topology_changed()
                self._taints_changed()
                if not info.pods:
                    del self._infos[info.name]
        elif kind in WORKLOAD_KINDS:
            self._delete_workload(kind, obj)
        elif kind == "Namespace":
            name = meta_of(obj).get("name")
            if isinstance(name, str):
                self.namespaces.pop(name, None)
        elif kind in STORED_KINDS:
            key = _stored_key(kind, obj)
            if (
                key is not None
                and self.objects[kind].pop(key, None) is not None
                and kind not in _UNVERSIONED
            ):
                self.objects_version = next(_GENERATIONS)

    def add_pod(self, pod: RawObj, node_name: str) -> None:
        """Bind (a copy of) `pod` to `node_name`, as if the binding had happened."""
        bound = {**pod, "spec": {**as_dict(pod.get("spec")), "nodeName": node_name}}
        self.upsert(bound)

    def copy_pod(self, namespace: str, name: str, new_name: str, node_name: str) -> bool:
        """Bind a copy of the bound pod `namespace/name` to `node_name` as `new_name`:
        the same labels, kept spec and requests (what a template node's DaemonSet pods
        need, cluster-autoscaler's sanitized pod copies); False when the pod is unknown."""
        with self._lock:
            entry = self._pods.get((namespace, name))
            if entry is None:
                return False
            try:
                self._copy_pod(entry, new_name, node_name)
            finally:
                self.version = next(_GENERATIONS)
            return True

    def _copy_pod(self, entry: _PodEntry, new_name: str, node_name: str) -> None:
        key = (entry.key[0], new_name)
        self._remove_pod(key)
        node = sys.intern(node_name)
        pod = entry.pod
        light: RawObj = {
            "metadata": {**pod["metadata"], "name": new_name},
            "spec": {**pod["spec"], "nodeName": node},
        }
        light["metadata"].pop("uid", None)
        self._bind(
            _PodEntry(
                key,
                light,
                node,
                entry.labels,
                entry.terminating,
                entry.requests,
                entry.non_zero,
            )
        )

    def copy(self) -> Snapshot:
        """An independent snapshot sharing only the immutable pieces (for simulation)."""
        with self._lock:
            other = Snapshot()
            other._infos = {name: info._copy() for name, info in self._infos.items()}
            other.nodes = {name: other._infos[name] for name in self.nodes}
            for attr in WORKLOAD_KINDS.values():
                setattr(other, attr, {ns: list(v) for ns, v in getattr(self, attr).items()})
            other.namespaces = dict(self.namespaces)
            other.objects = {kind: dict(items) for kind, items in self.objects.items()}
            other.objects_version = self.objects_version
            other._pods = dict(self._pods)
            other._nominated = dict(self._nominated)
            other._nominated_on = {n: dict(p) for n, p in self._nominated_on.items()}
            other._by_ns = {ns: dict(pods) for ns, pods in self._by_ns.items()}
            other._priorities = Counter(self._priorities)
            for ns, indexes in self._indexes.items():
                copied: OrderedDict[str, _SelectorIndex] = OrderedDict()
                for fp, index in indexes.items():
                    dup = _SelectorIndex(index.matches)
                    dup.per_node = dict(index.per_node)
                    copied[fp] = dup
                other._indexes[ns] = copied
            other._requests_cache = self._requests_cache
            other._affinity_cache = self._affinity_cache
            other._labels_cache = self._labels_cache
            other._node_specs = self._node_specs
            other._owner_cache = self._owner_cache
            other._key_indexes = dict(self._key_indexes)
            other._sorted_domains = dict(self._sorted_domains)
            other._domain_sizes = dict(self._domain_sizes)
            other._tainted = self._tainted
            other._untolerated = dict(self._untolerated)
            other._exclusions = dict(self._exclusions)
            # The copy's NodeTable holds its own NodeInfos; the names list is shared,
            # and copied nodes keep their generations, so remembered verdicts stay valid.
            other._sorted_names = self._sorted_names
            return other

    # ---- reading --------------------------------------------------------------

    @property
    def topology_version(self) -> int:
        """Changes whenever a node's labels change or a node comes or goes."""
        return self._topology_version

    def journal_mark(self) -> tuple[int, int]:
        """Where the journal of node changes stands now: (identity, position)."""
        return (self.identity, self._journal_base + len(self._journal))

    def changed_since(self, mark: tuple[int, int] | None) -> set[str] | None:
        """The nodes whose NodeInfo changed (pods, Node object, removal) since `mark`
        (a journal_mark of this snapshot); None when that is unknown (a mark of
        another snapshot, or older than the journal keeps): read every node then."""
        if mark is None or mark[0] != self.identity or mark[1] < self._journal_base:
            return None
        with self._lock:
            return set(self._journal[mark[1] - self._journal_base :])

    def _changed(self, name: str) -> None:
        journal = self._journal
        journal.append(name)
        if len(journal) > _JOURNAL_KEEP:
            drop = len(journal) // 2
            del journal[:drop]
            self._journal_base += drop

    def pod_count(self) -> int:
        return len(self._pods)

    def get(self, kind: str, namespace: str, name: str) -> RawObj | None:
        """One STORED_KINDS object (namespace "" for cluster-scoped kinds), None if unknown."""
        scope = "" if kind in _CLUSTER_SCOPED else namespace
        return self.objects.get(kind, {}).get((scope, name))

    def listed(self, kind: str) -> list[RawObj]:
        """Every known object of one STORED_KINDS kind."""
        return list(self.objects.get(kind, {}).values())

    def requests_of(self, pod: RawObj) -> tuple[Mapping[str, int], Mapping[str, int]]:
        """What a held pod (bound or nominated) adds to a node: (its requests, its cpu and
        memory with the scoring defaults), as bound_pod_requests gave them when it came;
        worked out afresh for a pod not held."""
        key = _key_of(pod)
        entry = self._pods.get(key) or self._nominated.get(key)
        if entry is not None:
            return entry.requests, entry.non_zero
        return bound_pod_requests(pod)

    def nominated_pods(self, node_name: str) -> list[RawObj]:
        """The (light) unbound pods nominated to `node_name` (NominatedPodsForNode)."""
        held = self._nominated_on.get(node_name)
        return [e.pod for e in held.values()] if held else []

    def lowest_priority(self) -> tuple[int, bool] | None:
        """(the lowest spec.priority stored by a bound pod, PRIORITY_CEILING when none
        stores one; whether some bound pod stores none and names no PriorityClass, so
        that it has the global default class's priority); None when some bound pod
        names a class but stores no priority (the class would have to be resolved).
        Kept on every bind and removal, so it costs nothing: preemption asks it to know
        at once that no pod could be a victim."""
        if None in self._priorities:
            return None
        stored = [p for p in self._priorities if isinstance(p, int)]
        return min(stored, default=PRIORITY_CEILING), DEFAULT_CLASS in self._priorities

    def nominated_nodes(self) -> list[str]:
        """The nodes some unbound pod is nominated to, sorted."""
        return sorted(self._nominated_on)

    def has_pod(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self._pods

    def pods_in(self, namespace: str) -> list[RawObj]:
        """The (light) bound pods of one namespace."""
        return [e.pod for e in self._by_ns.get(namespace, {}).values()]

    def node_names(self) -> list[str]:
        """Names of the known nodes, sorted (cached until a node comes or goes)."""
        names = self._sorted_names
        if names is None:
            names = self._sorted_names = sorted(self.nodes)
        return names

    def node_table(self) -> NodeTable:
        """The known nodes in name order (cached until a node comes or goes)."""
        table = self._table
        if table is None:
            with self._lock:
                names = self.node_names()
                nodes = self.nodes
                table = NodeTable(
                    names, [nodes[n] for n in names], {n: i for i, n in enumerate(names)}
                )
                self._table = table
        return table

    def key_index(self, keys: tuple[str, ...]) -> KeyIndex:
        """The nodes carrying every one of `keys`, with their values, and each key's domains.

        Cached until the next Node change, so a decision reads topology without
        walking every node.
        """
        hit = self._key_indexes.get(keys)
        if hit is not None:
            return hit
        with self._lock:
            index: dict[str, tuple[str, ...]] = {}
            for name, info in self.nodes.items():
                labels = info.labels
                if all(k in labels for k in keys):
                    index[name] = tuple(labels[k] for k in keys)
            domains = tuple(
                tuple(dict.fromkeys(values[i] for values in index.values()))
                for i in range(len(keys))
            )
            if len(self._key_indexes) >= MAX_KEY_INDEXES:
                self._key_indexes.clear()
            hit = self._key_indexes[keys] = (index, domains)
            return hit

    def domain_sizes(self, keys: tuple[str, ...]) -> tuple[Counter[Any], ...]:
        """Per key of `keys`, domain -> how many nodes carrying every one of `keys` are in
        it (key_index's nodes counted per domain; cached like key_index)."""
        hit = self._domain_sizes.get(keys)
        if hit is not None:
            return hit
        with self._lock:
            index = self.key_index(keys)[0]
            hit = tuple(Counter(values[i] for values in index.values()) for i in range(len(keys)))
            if len(self._domain_sizes) >= MAX_KEY_INDEXES:
                self._domain_sizes.clear()
            self._domain_sizes[keys] = hit
            return hit

    def untolerated(self, tolerations: list[RawObj]) -> frozenset[str]:
        """The nodes with a NoSchedule or NoExecute taint `tolerations` do not tolerate
        (FindMatchingUntoleratedTaint). Remembered per tolerations until a node's taints
        change, so pods of one workload look at the tainted nodes once."""
        key = json.dumps(tolerations, sort_keys=True, separators=(",", ":"), default=str)
        hit = self._untolerated.get(key)
        if hit is not None:
            return hit
        with self._lock:
            tainted = self._tainted
            if tainted is None:
                tainted = self._tainted = [
                    (name, taints)
                    for name, info in self.nodes.items()
                    if (taints := _taints_of(info.node))
                ]
            hit = frozenset(
                name
                for name, taints in tainted
                if find_untolerated_taint(taints, tolerations) is not None
            )
            if len(self._untolerated) >= MAX_KEY_INDEXES:
                self._untolerated.clear()
            self._untolerated[key] = hit
            return hit

    def exclusion(self, keys: tuple[str, ...], left_out: frozenset[str]) -> tuple[Exclusion, ...]:
        """Per key of `keys`, key_index's nodes less those in `left_out`: the domains that
        keep a node, in key_index's order, and each node left out in one of them -> that
        domain. Cached by `left_out` until a Node's labels change."""
        hit = self._exclusions.get((keys, left_out))
        if hit is not None:
            return hit
        with self._lock:
            index, domains = self.key_index(keys)
            sizes = self.domain_sizes(keys)
            out = []
            for j in range(len(keys)):
                gone = Counter(index[name][j] for name in left_out if name in index)
                empty = {d for d, n in gone.items() if n == sizes[j][d]}
                out.append(
                    Exclusion(
                        tuple(d for d in domains[j] if d not in empty),
                        {
                            name: index[name][j]
                            for name in left_out
                            if name in index and index[name][j] not in empty
                        },
                    )
                )
            if len(self._exclusions) >= MAX_KEY_INDEXES:
                self._exclusions.clear()
            hit = self._exclusions[(keys, left_out)] = tuple(out)
            return hit

    def sorted_domains(self, key: str) -> tuple[Any, ...]:
        """The distinct values of `key` over the nodes carrying it, sorted (cached
        until the next Node change, like key_index)."""
        hit = self._sorted_domains.get(key)
        if hit is not None:
            return hit
        with self._lock:
            hit = self._sorted_domains[key] = tuple(sorted(self.key_index((key,))[1][0]))
            return hit

    def match_counts(self, namespace: str, selector: RawObj | None) -> dict[str, int]:
        """Node name -> number of non-terminating pods of `namespace` matching `selector`.

        Nodes with no match are absent. The answer is a copy, safe to read while
        the snapshot keeps changing.
        """
        with self._lock:
            return dict(self._selector_index(namespace, selector).per_node)

    def domain_counts(
        self, namespace: str, selector: RawObj | None, keys: tuple[str, ...]
    ) -> tuple[dict[Any, int], ...]:
        """Per key of `keys`, domain -> number of non-terminating pods of `namespace`
        matching `selector` on the nodes carrying every one of `keys` (key_index's
        nodes); domains with none are absent. What summing match_counts over
        key_index gives, kept up to date as pods come and go, so a decision reads it
        without walking the nodes with matches. Copies, like match_counts."""
        with self._lock:
            index = self._selector_index(namespace, selector)
            counts = index.domains.get(keys)
            if counts is None:
                eligible = self.key_index(keys)[0]
                counts = tuple({} for _ in keys)
                for name, n in index.per_node.items():
                    values = eligible.get(name)
                    if values is not None:
                        for by_domain, value in zip(counts, values, strict=True):
                            by_domain[value] = by_domain.get(value, 0) + n
                if len(index.domains) >= MAX_DOMAIN_KEYS:
                    index.domains.clear()
                index.domains[keys] = counts
            return tuple(dict(by_domain) for by_domain in counts)

    def _selector_index(self, namespace: str, selector: RawObj | None) -> _SelectorIndex:
        """The index of `selector` in `namespace`, made on first use (lock held)."""
        fp = selector_fingerprint(selector)
        indexes = self._indexes.setdefault(namespace, OrderedDict())
        index = indexes.get(fp)
        if index is not None:
            indexes.move_to_end(fp)
            return index
        index = _SelectorIndex(compile_selector(selector))
        matches = index.matches
        per_node = index.per_node
        for entry in self._by_ns.get(namespace, {}).values():
            if not entry.terminating and matches(entry.labels):
                per_node[entry.node] = per_node.get(entry.node, 0) + 1
        indexes[fp] = index
        if len(indexes) > MAX_SELECTORS_PER_NAMESPACE:
            indexes.popitem(last=False)
        return index

    # ---- internals ------------------------------------------------------------

    def _topology_changed(self) -> None:
        for indexes in self._indexes.values():
            for index in indexes.values():
                index.domains.clear()
        self._key_indexes.clear()
        self._sorted_domains.clear()
        self._domain_sizes.clear()
        self._exclusions.clear()
        self._topology_version += 1

    def _taints_changed(self) -> None:
        self._tainted = None
        self._untolerated = {}

    def _info(self, name: str) -> NodeInfo:
        info = self._infos.get(name)
        if info is None:
            info = self._infos[name] = NodeInfo(name)
        return info

    def _upsert_node(self, node: RawObj) -> None:
        name = meta_of(node).get("name")
        if not isinstance(name, str) or not name:
            return
        info = self._info(name)
        before = info.labels if name in self.nodes else None
        taints = _taints_of(info.node) if before is not None else None
        if before is None:
            self._sorted_names = None
            self._table = None
        info.set_node(node)
        self.nodes[name] = info
        self._changed(name)
        if before != info.labels:
            self._topology_changed()
        if before is None or taints != _taints_of(node):
            self._taints_changed()

    def _upsert_pod(self, pod: RawObj) -> None:
        meta = meta_of(pod)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return
        ns = pod_namespace(pod)
        key = (sys.intern(ns), name)
        self._remove_pod(key)
        node = _node_name_of(pod)
        status = as_dict(pod.get("status"))
        phase = status.get("phase")
        if isinstance(phase, str) and phase in TERMINAL_PHASES:
            return
        nominated = status.get("nominatedNodeName")
        if not node and not (isinstance(nominated, str) and nominated):
            return
        labels = self._shared_labels(_intern_labels(meta.get("labels")))
        light_meta: RawObj = {"name": name, "namespace": key[0], "labels": labels}
        if isinstance(meta.get("uid"), str):
            light_meta["uid"] = meta["uid"]
        terminating = meta.get("deletionTimestamp") is not None
        if terminating:
            light_meta["deletionTimestamp"] = meta["deletionTimestamp"]
        owner = _daemon_set_owner(pod)
        if owner is not None:
            light_meta["ownerReferences"] = self._shared_owner(owner)
        spec = _light_spec(as_dict(pod.get("spec")), node, self._shared_affinity)
        if node and len(spec) == 1:
            # Only its node: one dict per node for all such pods.
            spec = self._node_specs.setdefault(sys.intern(node), spec)
        light: RawObj = {"metadata": light_meta, "spec": spec}
        light_status = _light_status(status, bool(node))
        if light_status:
            light["status"] = light_status
        requests, non_zero = map(self._shared_requests, bound_pod_requests(pod))
        if not node:
            # Nominated, not bound: held apart (see the module docstring).
            at = sys.intern(str(nominated))
            entry = _PodEntry(key, light, at, labels, terminating, requests, non_zero)
            self._nominated[key] = entry
            self._nominated_on.setdefault(at, {})[key] = entry
            return
        node = sys.intern(node)
        self._bind(_PodEntry(key, light, node, labels, terminating, requests, non_zero))

    def _bind(self, entry: _PodEntry) -> None:
        key, node = entry.key, entry.node
        self._pods[key] = entry
        self._priorities[_stored_priority(entry.pod)] += 1
        self._by_ns.setdefault(key[0], {})[key] = entry
        self._info(node)._add(key, entry.pod, entry.requests, entry.non_zero)
        self._changed(node)
        if not entry.terminating:
            labels = self._infos[node].labels if node in self.nodes else None
            for index in self._indexes.get(key[0], {}).values():
                if index.matches(entry.labels):
                    index.bump(node, 1, labels)

    def _shared_owner(self, owner: tuple[str, str]) -> list[RawObj]:
        # A DaemonSet's pods, one per node, share one reference list.
        shared = self._owner_cache.get(owner)
        if shared is None:
            name, uid = owner
            ref: RawObj = {"kind": "DaemonSet", "name": name, "controller": True}
            if uid:
                ref["uid"] = uid
            shared = self._owner_cache[owner] = [ref]
        return shared

    def _remove_pod(self, key: PodKey) -> None:
        held = self._nominated.pop(key, None)
        if held is not None:
            on = self._nominated_on[held.node]
            del on[key]
            if not on:
                del self._nominated_on[held.node]
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        stored = _stored_priority(entry.pod)
        self._priorities[stored] -= 1
        if not self._priorities[stored]:
            del self._priorities[stored]
        in_ns = self._by_ns.get(key[0])
        if in_ns is not None:
            in_ns.pop(key, None)
            if not in_ns:
                del self._by_ns[key[0]]
        info = self._infos.get(entry.node)
        if info is not None:
            info._remove(key, entry.requests, entry.non_zero)
            self._changed(entry.node)
            if entry.node not in self.nodes and not info.pods:
                del self._infos[entry.node]
        if not entry.terminating:
            node = entry.node
            labels = info.labels if info is not None and node in self.nodes else None
            for index in self._indexes.get(key[0], {}).values():
                if index.matches(entry.labels):
                    index.bump(node, -1, labels)

    def _shared_affinity(self, affinity: RawObj) -> RawObj:
        # The pods of one workload carry the same terms: share one dict per content
        # (less memory, and the affinity index parses each content once).
        key = json.dumps(affinity, sort_keys=True, separators=(",", ":"), default=str)
        shared = self._affinity_cache.get(key)
        if shared is None:
            if len(self._affinity_cache) >= MAX_SHARED_AFFINITIES:
                self._affinity_cache = {}
            shared = self._affinity_cache[key] = affinity
        return shared

    def _shared_labels(self, labels: dict[str, Any]) -> dict[str, Any]:
        # Never modified once stored (readers never modify the snapshot): equal
        # contents may share one dict.
        sig = tuple(labels.items())
        shared = self._labels_cache.get(sig)
        if shared is None:
            if len(self._labels_cache) >= MAX_SHARED_LABELS:
                self._labels_cache = {}
            shared = self._labels_cache[sig] = labels
        return shared

    def _shared_requests(self, requests: Mapping[str, int]) -> dict[str, int]:
        # Most pods ask for one of a few request sets: share one dict per set.
        sig = tuple(sorted(requests.items()))
        shared = self._requests_cache.get(sig)
        if shared is None:
            shared = self._requests_cache[sig] = dict(sig)
        return shared

    def _upsert_workload(self, kind: str, obj: RawObj) -> None:
        ns, name = _workload_key(obj)
        store: dict[str, list[RawObj]] = getattr(self, WORKLOAD_KINDS[kind])
        items = [o for o in store.get(ns, []) if meta_of(o).get("name") != name]
        items.append(obj)
        store[ns] = items

    def _delete_workload(self, kind: str, obj: RawObj) -> None:
        ns, name = _workload_key(obj)
        store: dict[str, list[RawObj]] = getattr(self, WORKLOAD_KINDS[kind])
        items = [o for o in store.get(ns, []) if meta_of(o).get("name") != name]
        if items:
            store[ns] = items
        else:
            store.pop(ns, None)


def _stored_key(kind: str, obj: RawObj) -> tuple[str, str] | None:
    meta = meta_of(obj)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    if kind in _CLUSTER_SCOPED:
        return ("", name)
    ns = meta.get("namespace")
    return (ns if isinstance(ns, str) and ns else "default", name)


# Volume sources read by VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone.
_VOLUME_SOURCES = frozenset(
    {
        "persistentVolumeClaim",
        "ephemeral",
        "csi",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "azureDisk",
        "cinder",
        "rbd",
        "iscsi",
    }
)


def _daemon_set_owner(pod: RawObj) -> tuple[str, str] | None:
    """(name, uid) of the pod's controller when it is a DaemonSet, else None: what a
    template node (scheduler.scaleup) copies of a node is its DaemonSet pods."""
    ref = controller_of(pod)
    if ref is None or ref.get("kind") != "DaemonSet":
        return None
    uid = ref.get("uid")
    return str(ref.get("name") or ""), uid if isinstance(uid, str) else ""


def _host_ports_only(containers: Any) -> list[RawObj] | None:
    """Containers reduced to the ports that claim a host port and, for init containers,
    their restartPolicy (what NodePorts reads)."""
    if not isinstance(containers, list):
        return None
    out = []
    for c in containers:
        ports = c.get("ports") if isinstance(c, dict) else None
        if not isinstance(ports, list):
            continue
        claimed = [p for p in ports if isinstance(p, dict) and p.get("hostPort")]
        if claimed:
            kept: RawObj = {"ports": claimed}
            if "restartPolicy" in c:  # a sidecar init container keeps its ports (NodePorts)
                kept["restartPolicy"] = c["restartPolicy"]
            out.append(kept)
    return out or None


# Above every pod priority (they are int32): lowest_priority of a snapshot without pods.
PRIORITY_CEILING = 2**31


# The key of the pods that store no priority and name no class (the default's).
DEFAULT_CLASS = ""


def _stored_priority(pod: RawObj) -> int | str | None:
    """A light pod's spec.priority; DEFAULT_CLASS when it stores none and names no
    class; None when it names a class but stores no priority."""
    spec = pod["spec"]
    value = spec.get("priority")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None if spec.get("priorityClassName") else DEFAULT_CLASS


# What preemption reads of a held pod's spec: its priority as stored (or the class to
# resolve it from, for a pod read from a manifest) and whether it may preempt.
_PRIORITY_FIELDS = ("priority", "priorityClassName", "preemptionPolicy")
# The condition kube-scheduler sets on a pod it preempts (podTerminatingByPreemption).
DISRUPTION_TARGET = "DisruptionTarget"


def _light_status(status: RawObj, bound: bool) -> RawObj:
    """What preemption reads of a held pod's status: its start time (MoreImportantPod,
    the latest-start-time criterion), the DisruptionTarget condition, and for an
    unbound pod the node it is nominated to."""
    light: RawObj = {}
    start = status.get("startTime")
    if start is not None:
        light["startTime"] = start
    conditions = status.get("conditions")
    if isinstance(conditions, list):
        kept = [
            c for c in conditions if isinstance(c, dict) and c.get("type") == DISRUPTION_TARGET
        ]
        if kept:
            light["conditions"] = kept
    if not bound and status.get("nominatedNodeName"):
        light["nominatedNodeName"] = status["nominatedNodeName"]
    return light


def _light_spec(spec: RawObj, node: str, share: Callable[[RawObj], RawObj]) -> RawObj:
    """What the plugins read of a held pod's spec (Reads.existing_pod_fields): its node,
    pod (anti)affinity (one dict per content, by `share`), volumes, the containers'
    host ports, and its priority fields; the rest is dropped."""
    light: RawObj = {"nodeName": node} if node else {}
    for field in _PRIORITY_FIELDS:
        if spec.get(field) is not None:
            light[field] = spec[field]
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        kept = {k: affinity[k] for k in ("podAffinity", "podAntiAffinity") if affinity.get(k)}
        if kept:
            light["affinity"] = share(kept)
    volumes = spec.get("volumes")
    if isinstance(volumes, list):
        # Only volumes a volume plugin counts or checks: the projected token, configMap,
        # secret and emptyDir volumes every pod has would cost memory for nothing.
        claimed = [v for v in volumes if isinstance(v, dict) and not _VOLUME_SOURCES.isdisjoint(v)]
        if claimed:
            light["volumes"] = claimed
    for field in ("containers", "initContainers"):
        ports = _host_ports_only(spec.get(field))
        if ports:
            light[field] = ports
    return light


def _workload_key(obj: RawObj) -> tuple[str, Any]:
    meta = meta_of(obj)
    ns = meta.get("namespace")
    return (ns if isinstance(ns, str) and ns else "default"), meta.get("name")
