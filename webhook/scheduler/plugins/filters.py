"""The node filters kube-scheduler runs before PodTopologySpread, with its exact reasons.

    NodeUnschedulable  spec.unschedulable, unless the pod tolerates the
                       node.kubernetes.io/unschedulable:NoSchedule taint
    NodeName           spec.nodeName, when the pod names a node
    NodeAffinity       nodeSelector AND required node affinity
    TaintToleration    NoSchedule / NoExecute taints the pod does not tolerate
    NodeResourcesFit   pod count and requested resources against allocatable;
                       Unschedulable, or UnschedulableAndUnresolvable when a request
                       exceeds the node's whole allocatable (preemption cannot help)

Every plugin runs on every node (no short-circuit) so a caller can explain
every reason. Per-pod work (parsing selectors, tolerations, requests) happens
once in `prepare`; `run_filters` accepts the prepared pod so a placement over
thousands of nodes pays it once.

CAVEAT: NodeAffinity's PreFilter narrows the node list when every required
term names nodes through matchFields metadata.name; here such nodes simply
fail the Filter with the NodeAffinity reason, which is the same verdict.
CAVEAT: a node that reports status.allocatable is read as upstream does, so a
missing `pods` entry allows no pod at all; a node without status.allocatable
is treated as having unlimited resources and no pod cap.
CAVEAT: DRA is not modelled: an extended resource that a DeviceClass maps to
devices is still checked against allocatable here (no DeviceClass is known);
the one DRAExtendedResource rule kept is upstream's skip of a scalar resource
the node does not list when the pod requests no extended resource at all.
CAVEAT: node objects are read as immutable values: what the filters need from
a node (unschedulable, taints, name, allocatable) is cached by object identity,
so an update must replace the Node object, not edit it in place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from webhook.api.kube import RawObj
from webhook.api.labels import (
    NodeMatcher,
    compile_node_affinity,
    find_untolerated_taint,
    required_node_affinity,
    taint_tolerated,
)
from webhook.api.resources import (
    is_extended_resource_name,
    node_allocatable,
    pod_requests,
)
from webhook.scheduler.framework.types import Code, Status

__all__ = [
    "FILTER_PLUGINS",
    "PreparedPod",
    "REASON_NODE_AFFINITY",
    "REASON_NODE_NAME",
    "REASON_TOO_MANY_PODS",
    "REASON_UNSCHEDULABLE",
    "all_passing",
    "allocatable_of",
    "affinity_label_keys",
    "filter_inputs",
    "fit_reasons",
    "passes_filters",
    "node_key",
    "passing",
    "prepare",
    "run_filters",
]

FILTER_PLUGINS: tuple[str, ...] = (
    "NodeUnschedulable",
    "NodeName",
    "NodeAffinity",
    "TaintToleration",
    "NodeResourcesFit",
)

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS = "Too many pods"
UNSCHEDULABLE_TAINT: RawObj = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}

_OK = Status(Code.SUCCESS)
_UNSCHEDULABLE = Status(Code.UNRESOLVABLE, REASON_UNSCHEDULABLE)
_NODE_NAME = Status(Code.UNRESOLVABLE, REASON_NODE_NAME)
_NODE_AFFINITY = Status(Code.UNRESOLVABLE, REASON_NODE_AFFINITY)
_FIXED_RESOURCES = ("cpu", "memory", "ephemeral-storage")


class NodeInfoLike(Protocol):
    """What the filters read from snapshot.NodeInfo."""

    @property
    def name(self) -> str: ...
    @property
    def node(self) -> RawObj: ...
    @property
    def pods(self) -> list[RawObj]: ...
    @property
    def requested(self) -> dict[str, int]: ...


@dataclass(frozen=True, slots=True)
class PreparedPod:
    """Everything the filters need from one pod, computed once per decision."""

    # The pod as given.
    pod: RawObj
    # spec.nodeName, "" when unset.
    node_name: str
    # spec.tolerations as given (only dict entries kept).
    tolerations: list[RawObj]
    # Whether the tolerations cover node.kubernetes.io/unschedulable:NoSchedule.
    tolerates_unschedulable: bool
    # nodeSelector AND required node affinity; None when the pod constrains nothing.
    affinity: NodeMatcher | None
    # resources.pod_requests of the pod as an incoming pod (no resize status).
    requests: dict[str, int]
    # (resource, amount) pairs NodeResourcesFit compares, in upstream's order:
    # cpu, memory, ephemeral-storage when positive, then scalar resources when non-zero.
    checks: tuple[tuple[str, int], ...]
    # Whether any extended resource is requested: without one, a scalar resource the
    # node does not list is left to DRA (see _fit_reasons).
    requests_extended: bool


def prepare(pod: RawObj) -> PreparedPod:
    """Precompute the per-pod parts of the five filters."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        spec = {}
    node_name = spec.get("nodeName")
    raw_tolerations = spec.get("tolerations")
    tolerations = (
        [t for t in raw_tolerations if isinstance(t, dict)]
        if isinstance(raw_tolerations, list)
        else []
    )
    requests = pod_requests(pod, use_status=False) if isinstance(pod, dict) else pod_requests({})
    checks = [(name, requests[name]) for name in _FIXED_RESOURCES if requests.get(name, 0) > 0]
    checks += [
        (name, amount)
        for name, amount in sorted(requests.items())
        if name not in _FIXED_RESOURCES and name != "pods" and amount != 0
    ]
    return PreparedPod(
        pod=pod,
        node_name=node_name if isinstance(node_name, str) else "",
        tolerations=tolerations,
        tolerates_unschedulable=taint_tolerated(UNSCHEDULABLE_TAINT, tolerations),
        affinity=compile_node_affinity(pod) if isinstance(pod, dict) else None,
        requests=requests,
        checks=tuple(checks),
        requests_extended=any(
            is_extended_resource_name(name) for name, _ in checks if name not in _FIXED_RESOURCES
        ),
    )


# What the filters read from each node object, cached per object: the object is kept
# in the entry so its id cannot be reused while the entry lives.
_NodeFacts = tuple[bool, Any, str, "dict[str, int] | None"]  # unschedulable, taints, name, alloc
_FACTS_CACHE: dict[int, tuple[RawObj, _NodeFacts]] = {}
_FACTS_CACHE_LIMIT = 50_000
_MISSING: Any = object()


def _node_facts(node_info: NodeInfoLike) -> _NodeFacts:
    node = node_info.node
    entry = _FACTS_CACHE.get(id(node))
    if entry is not None and entry[0] is node:
        return entry[1]
    if not isinstance(node, dict):
        # A NodeInfo known only from its pods: nothing to read, nothing to cache.
        return (False, None, "", getattr(node_info, "allocatable", None))
    spec = node.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    metadata = node.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    allocatable = getattr(node_info, "allocatable", _MISSING)
    if allocatable is _MISSING:
        allocatable = node_allocatable(node)
    facts: _NodeFacts = (
        spec.get("unschedulable") is True,
        spec.get("taints") or None,
        name if isinstance(name, str) else "",
        allocatable,
    )
    if len(_FACTS_CACHE) >= _FACTS_CACHE_LIMIT:
        _FACTS_CACHE.clear()
    _FACTS_CACHE[id(node)] = (node, facts)
    return facts


def allocatable_of(node_info: NodeInfoLike) -> dict[str, int] | None:
    """resources.node_allocatable of the node (None: unlimited), cached per node object."""
    return _node_facts(node_info)[3]


def _taint_status(prepared: PreparedPod, taints: Any) -> Status:
    taint = find_untolerated_taint(taints, prepared.tolerations)
    if taint is None:
        return _OK
    key, value = taint.get("key") or "", taint.get("value") or ""
    return Status(Code.UNRESOLVABLE, f"node(s) had untolerated taint {{{key}: {value}}}")


def _fit_reasons(
    prepared: PreparedPod, node_info: NodeInfoLike, allocatable: dict[str, int] | None
) -> tuple[list[str], bool]:
    """fitsRequest: the reasons, and whether any is unresolvable (the pod asks for more
    than the node's whole allocatable, so no preemption can help)."""
    if allocatable is None:
        return [], False
    reasons = []
    unresolvable = False
    if len(node_info.pods) + 1 > allocatable.get("pods", 0):
        reasons.append(REASON_TOO_MANY_PODS)
    if prepared.checks:
        requested = node_info.requested
        for name, amount in prepared.checks:
            total = allocatable.get(name)
            if total is None and name not in _FIXED_RESOURCES and not prepared.requests_extended:
                # DRAExtendedResource (GA): with no extended resource requested there is
                # no device class mapping, and a scalar resource the node does not list
                # is left to the DynamicResources plugin.
                continue
            total = total or 0
            if amount > total - requested.get(name, 0):
                reasons.append("Insufficient " + name)
                unresolvable = unresolvable or amount > total
    return reasons, unresolvable


def run_filters(pod: RawObj | PreparedPod, node_info: NodeInfoLike) -> dict[str, Status]:
    """The status of each of FILTER_PLUGINS for the pod on this node, in that order.

    Several NodeResourcesFit reasons are joined with ", " as upstream's
    Status.Message() renders them. The dict is new on every call: callers may add to it.
    """
    prepared = pod if pod.__class__ is PreparedPod else prepare(pod)  # type: ignore[arg-type]
    node = node_info.node
    entry = _FACTS_CACHE.get(id(node))
    unschedulable, taints, name, allocatable = (
        entry[1] if entry is not None and entry[0] is node else _node_facts(node_info)
    )
    fit = _OK
    if allocatable is not None and (
        prepared.checks or len(node_info.pods) >= allocatable.get("pods", 0)
    ):
        reasons, unresolvable = _fit_reasons(prepared, node_info, allocatable)
        if reasons:
            code = Code.UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            fit = Status(code, ", ".join(reasons), tuple(reasons))
    return {
        "NodeUnschedulable": (
            _UNSCHEDULABLE if unschedulable and not prepared.tolerates_unschedulable else _OK
        ),
        "NodeName": _NODE_NAME if prepared.node_name and prepared.node_name != name else _OK,
        "NodeAffinity": (
            _NODE_AFFINITY
            if prepared.affinity is not None and not prepared.affinity(node or {})
            else _OK
        ),
        "TaintToleration": _taint_status(prepared, taints) if taints else _OK,
        "NodeResourcesFit": fit,
    }


def all_passing() -> dict[str, Status]:
    """What run_filters answers for a node that passes all five filters."""
    return dict.fromkeys(FILTER_PLUGINS, _OK)


def fit_reasons(pod: RawObj | PreparedPod, node_info: NodeInfoLike) -> list[str]:
    """NodeResourcesFit's reasons one by one (empty when the pod fits)."""
    prepared = pod if isinstance(pod, PreparedPod) else prepare(pod)
    return _fit_reasons(prepared, node_info, _node_facts(node_info)[3])[0]


def passes_filters(prepared: PreparedPod, node_info: NodeInfoLike) -> bool:
    """Whether all five filters pass; cheaper than run_filters when reasons are not needed."""
    unschedulable, taints, name, allocatable = _node_facts(node_info)
    if unschedulable and not prepared.tolerates_unschedulable:
        return False
    if prepared.node_name and prepared.node_name != name:
        return False
    if taints and find_untolerated_taint(taints, prepared.tolerations) is not None:
        return False
    if prepared.affinity is not None and not prepared.affinity(node_info.node or {}):
        return False
    return not _fit_reasons(prepared, node_info, allocatable)[0]


def passing(prepared: PreparedPod, infos: Sequence[NodeInfoLike]) -> list[bool]:
    """passes_filters for each node, in one pass: what a decision over every node
    runs for a pod whose verdicts are not remembered."""
    cache = _FACTS_CACHE
    tolerates_unschedulable = prepared.tolerates_unschedulable
    node_name = prepared.node_name
    tolerations = prepared.tolerations
    affinity = prepared.affinity
    checks = prepared.checks
    extended = prepared.requests_extended
    out: list[bool] = []
    append = out.append
    for info in infos:
        node = info.node
        entry = cache.get(id(node))
        unschedulable, taints, name, allocatable = (
            entry[1] if entry is not None and entry[0] is node else _node_facts(info)
        )
        if (
            (unschedulable and not tolerates_unschedulable)
            or (node_name and node_name != name)
            or (taints and find_untolerated_taint(taints, tolerations) is not None)
            or (affinity is not None and not affinity(node or {}))
        ):
            append(False)
            continue
        if allocatable is None:
            append(True)
            continue
        if len(info.pods) + 1 > allocatable.get("pods", 0):
            append(False)
            continue
        requested = info.requested
        for resource, amount in checks:
            total = allocatable.get(resource)
            if total is None and resource not in _FIXED_RESOURCES and not extended:
                continue  # left to DRA, as in _fit_reasons
            if amount > (total or 0) - requested.get(resource, 0):
                append(False)
                break
        else:
            append(True)
    return out


def filter_inputs(prepared: PreparedPod) -> str:
    """Everything of the pod the five filters read, as one string: pods with the same
    string get the same verdict from each filter on every node, whatever else differs
    (image, labels, name), so verdicts can be remembered by it."""
    pod = prepared.pod
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        spec = {}
    required = required_node_affinity(spec)
    return json.dumps(
        [
            prepared.node_name,
            prepared.tolerations,
            spec.get("nodeSelector"),
            required,
            prepared.checks,
            prepared.requests_extended,
        ],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )


def affinity_label_keys(prepared: PreparedPod) -> tuple[str, ...] | None:
    """The node label keys the pod's nodeSelector and required node affinity read (the
    NodeAffinity filter reads nothing else of a node), or None when a term also
    reads the node's name (matchFields)."""
    pod = prepared.pod
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return ()
    keys: list[str] = []
    node_selector = spec.get("nodeSelector")
    if isinstance(node_selector, dict):
        keys += [k for k in node_selector if isinstance(k, str)]
    required = required_node_affinity(spec)
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for term in terms if isinstance(terms, list) else ():
        if not isinstance(term, dict):
            continue
        if term.get("matchFields"):
            return None
        expressions = term.get("matchExpressions")
        for e in expressions if isinstance(expressions, list) else ():
            if isinstance(e, dict) and isinstance(e.get("key"), str):
                keys.append(e["key"])
    return tuple(dict.fromkeys(keys))


def node_key(node_info: NodeInfoLike) -> tuple[Any, ...]:
    """Everything the filters read of a node but its name and labels: whether it is
    unschedulable, its taints, its allocatable, its pod count and requested resources.
    Nodes with the same key (and the same values for affinity_label_keys) get the
    same verdicts from a pod that names no node."""
    unschedulable, taints, _, allocatable = _node_facts(node_info)
    return (
        unschedulable,
        json.dumps(taints, sort_keys=True, default=str) if taints else None,
        None if allocatable is None else tuple(sorted(allocatable.items())),
        len(node_info.pods),
        tuple(sorted(node_info.requested.items())),
    )
