"""Pending, diagnosed: would a new node help a pod no node takes, and a node of which group?

    groups = node_groups(snapshot)                       # DEFAULT_GROUP_LABELS
    diagnosis = diagnose([Pending("ns/web-1", pod, framework)], snapshot, groups)
    diagnosis.verdicts["ns/web-1"].line(); diagnosis.to_json(); diagnosis.summary()

Decided as cluster-autoscaler and Karpenter decide a scale-up: the scheduler's
PreFilter and Filter plugins (not Score) run against the cluster state with one
node like those the autoscaler would add, one such template node at a time.

A **node group** is the set of nodes sharing the value of the first label of
DEFAULT_GROUP_LABELS (or the config's `nodeGroupLabels`) they carry; a node with none
belongs to no group. Its **templates**, one per zone where the group has a usable
node, are built as cluster-autoscaler builds one from an existing node
(simulator/node_info_utils.go: SanitizedTemplateNodeInfoFromNodeInfo): a fresh copy
of one of its nodes (same labels with a new hostname, the taints but those of a
transient state, allocatable and capacity, spec.unschedulable off, no status
conditions) holding copies of the source node's DaemonSet pods only.

A pending pod fits a template when the template node passes every filter of the
pod's profile with the rest of the cluster as it is; pods alike (namespace, labels,
spec, profile) share one answer. Pure: a Snapshot in, answers out; the caller's
snapshot is not modified (the templates are added to one private copy in turn).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from webhook.api.kube import (
    HOSTNAME,
    ZONE,
    RawObj,
    as_dict,
    controller_of,
    meta,
    pod_namespace,
    spec,
)
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.placement import Framework, adopt, feasible_nodes, place

__all__ = [
    "DEFAULT_GROUP_LABELS",
    "Diagnosis",
    "NodeGroups",
    "Pending",
    "ScaleUp",
    "Template",
    "diagnose",
    "node_groups",
]

# The labels that name a node's group, first match wins: Karpenter's NodePool, then
# the managed node groups of EKS, GKE and AKS, then the instance type as a fallback
# (nodes of one type are what a group of one shape would add).
DEFAULT_GROUP_LABELS = (
    "karpenter.sh/nodepool",
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
# Read when a node has no topology.kubernetes.io/zone (clusters older than v1.17).
_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"

# Taints a new node does not carry, as cluster-autoscaler's SanitizeTaints drops them
# (utils/taints/taints.go: NodeConditionTaints and its own scale-down taints): they
# describe the transient state of the source node, not the group.
_TRANSIENT_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/network-unavailable",
        "node.kubernetes.io/pid-pressure",
        "node.cloudprovider.kubernetes.io/uninitialized",
        "node.cloudprovider.kubernetes.io/shutdown",
        "ToBeDeletedByClusterAutoscaler",
        "DeletionCandidateOfClusterAutoscaler",
    }
)
_TRANSIENT_TAINT_PREFIXES = (
    "startup-taint.cluster-autoscaler.kubernetes.io/",
    "status-taint.cluster-autoscaler.kubernetes.io/",
)
# The node lifecycle controller's taints on a node that stopped reporting: such a node
# (an outage) is no model for a new one, and its zone counts as lost.
_LOST_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
# Kept of a Node's status on its template: what the filters read (allocatable,
# capacity); conditions, addresses, images and the node's own info are not the new
# node's.
_STATUS_KEPT = ("allocatable", "capacity")
# Kept of a Node's spec on its template; providerID, podCIDR(s) and unschedulable are
# the source node's own.
_SPEC_DROPPED = frozenset({"unschedulable", "providerID", "podCIDR", "podCIDRs", "configSource"})


def zone_of(labels: Mapping[str, str]) -> str:
    """A node's zone label ("" when it has none)."""
    return labels.get(ZONE) or labels.get(_BETA_ZONE) or ""


@dataclass(frozen=True)
class Template:
    """A node as its group would add it in one zone.

    group, zone: what it stands for (zone "" for nodes without a zone label); source:
    the existing node it was copied from; node: the fresh Node object; daemon_pods:
    (namespace, name) of the source node's DaemonSet pods, copied onto it.
    """

    group: str
    zone: str
    source: str
    node: RawObj
    daemon_pods: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return str(meta(self.node).get("name") or "")

    def where(self) -> str:
        """ "group X in zone Y", as the text says it."""
        zone = f"zone {self.zone}" if self.zone else "no zone"
        return f"group {self.group} in {zone}"

    def to_json(self) -> dict[str, str]:
        return {"group": self.group, "zone": self.zone}


@dataclass(frozen=True)
class NodeGroups:
    """The cluster's node groups and their templates.

    labels: the group labels read, in order; templates: one per group and zone, sorted
    by group then zone; ungrouped: nodes carrying none of `labels` (in no group),
    sorted; lost: nodes no template is made from because the node lifecycle
    controller marked them not ready or unreachable, sorted.
    """

    labels: tuple[str, ...]
    templates: list[Template]
    ungrouped: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    def zones(self) -> set[str]:
        return {t.zone for t in self.templates}

    def ungrouped_line(self) -> str | None:
        """The sentence saying which nodes belong to no group, None when all do."""
        if not self.ungrouped:
            return None
        shown = ", ".join(self.ungrouped[:5]) + (" ..." if len(self.ungrouped) > 5 else "")
        return (
            f"{len(self.ungrouped)} node(s) belong to no node group (none of the labels "
            f"{', '.join(self.labels)}): {shown}"
        )


def _lost(node: RawObj) -> bool:
    taints = spec(node).get("taints")
    if isinstance(taints, list) and any(
        isinstance(t, dict) and t.get("key") in _LOST_TAINTS for t in taints
    ):
        return True
    conditions = as_dict(node.get("status")).get("conditions")
    if isinstance(conditions, list):
        for c in conditions:
            if isinstance(c, dict) and c.get("type") == "Ready":
                return c.get("status") != "True"
    return False


def _kept_taint(taint: Any) -> bool:
    if not isinstance(taint, dict):
        return False
    key = str(taint.get("key") or "")
    return key not in _TRANSIENT_TAINTS and not key.startswith(_TRANSIENT_TAINT_PREFIXES)


def fresh_node(node: RawObj, name: str) -> RawObj:
    """`node` as a new node of its group named `name`.

    Port of simulator/node_info_utils.go: createSanitizedNode (the new name also in
    the hostname label; taints sanitized as utils/taints: SanitizeTaints).
    """
    labels = dict(as_dict(meta(node).get("labels")))
    labels[HOSTNAME] = name
    new_meta: RawObj = {"name": name, "labels": labels}
    annotations = meta(node).get("annotations")
    if isinstance(annotations, dict):
        new_meta["annotations"] = dict(annotations)
    new_spec = {k: v for k, v in spec(node).items() if k not in _SPEC_DROPPED}
    taints = new_spec.get("taints")
    if isinstance(taints, list):
        kept = [t for t in taints if _kept_taint(t)]
        if kept:
            new_spec["taints"] = kept
        else:
            del new_spec["taints"]
    status = as_dict(node.get("status"))
    out: RawObj = {"apiVersion": "v1", "kind": "Node", "metadata": new_meta}
    if new_spec:
        out["spec"] = new_spec
    kept_status = {k: status[k] for k in _STATUS_KEPT if k in status}
    if kept_status:
        out["status"] = kept_status
    return out


def _daemon_pods(info: NodeInfo) -> tuple[tuple[str, str], ...]:
    """The DaemonSet pods on a node that a new node would run too (not terminating)."""
    out = []
    for pod in info.pods:
        m = meta(pod)
        if m.get("deletionTimestamp") is not None:
            continue
        ref = controller_of(pod)
        if ref is not None and ref.get("kind") == "DaemonSet":
            out.append((pod_namespace(pod), str(m.get("name") or "")))
    return tuple(sorted(out))


def _template_name(group: str, zone: str, taken: Mapping[str, Any]) -> str:
    base = f"template-node-for-{group}-{zone or 'no-zone'}"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def node_groups(snapshot: Snapshot, labels: Sequence[str] = DEFAULT_GROUP_LABELS) -> NodeGroups:
    """The node groups of `snapshot` by `labels` and one template per group and zone."""
    members: dict[tuple[str, str], list[NodeInfo]] = {}
    ungrouped: list[str] = []
    lost: list[str] = []
    for name in snapshot.node_names():
        info = snapshot.nodes[name]
        group = next((info.labels[k] for k in labels if info.labels.get(k)), None)
        if group is None:
            ungrouped.append(name)
        elif _lost(info.node):
            lost.append(name)
        else:
            members.setdefault((group, zone_of(info.labels)), []).append(info)
    templates = []
    for (group, zone), infos in sorted(members.items()):
        # The first usable node by name: one that takes pods today, else any.
        source = next((i for i in infos if not spec(i.node).get("unschedulable")), infos[0])
        name = _template_name(group, zone, snapshot.nodes)
        templates.append(
            Template(group, zone, source.name, fresh_node(source.node, name), _daemon_pods(source))
        )
    return NodeGroups(tuple(labels), templates, ungrouped, lost)


class Pending(NamedTuple):
    """A pod no node takes: its name as reported ("ns/name"), the pod, and the
    Framework of the profile that schedules it."""

    ref: str
    pod: RawObj
    framework: Framework


# Causes of "no new node would help", each with the sentence that tells it apart.
CAPACITY = "capacity"
SPREAD = "spread"
SELECTION = "node selection"
ZONE_UNCOVERED = "zone"
TAINTS = "taints"
NO_GROUP = "no node group"
OTHER = "other filters"

_CAUSE_SUMMARY = {
    SPREAD: "blocked by the spread (skew against an empty or lost domain)",
    SELECTION: "with a node selector or affinity no node group satisfies",
    ZONE_UNCOVERED: "asking for a zone no node group covers",
    TAINTS: "tolerating no node group's taints",
    NO_GROUP: "with no node group to add a node from",
    OTHER: "that no node group's node passes",
}


@dataclass(frozen=True)
class ScaleUp:
    """The answer for one pending pod.

    fits: the templates whose node takes it (in NodeGroups order); blocked: filter ->
    (its reason on the first template it fails, on how many templates it fails), in
    the profile's filter order; templates: how many were tried; cause: CAPACITY when
    some template fits, else what blocks it (SPREAD, SELECTION, ZONE_UNCOVERED, TAINTS,
    NO_GROUP, OTHER); detail: the sentence telling that cause apart.
    """

    pod: str
    fits: tuple[Template, ...]
    blocked: dict[str, tuple[str, int]]
    templates: int
    cause: str
    detail: str = ""

    def to_json(self) -> list[dict[str, str]]:
        return [t.to_json() for t in self.fits]

    def line(self, reasons: bool = True) -> str:
        """ "fits on a new node of group X in zone Y" or "no new node would help: <the
        filters that block it (with their reasons unless `reasons` is False)>: <why>"."""
        if self.fits:
            first, *more = self.fits
            also = f" (also {', '.join(t.where() for t in more)})" if more else ""
            return f"fits on a new node of {first.where()}{also}"
        if not self.blocked:
            return f"no new node would help: {self.detail}"
        filters = "; ".join(
            plugin
            + (f" ({reason})" if reasons else "")
            + (f" on {n} of {self.templates} templates" if n < self.templates else "")
            for plugin, (reason, n) in self.blocked.items()
        )
        return f"no new node would help: {filters}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True)
class Diagnosis:
    """Every pending pod's answer (by its reported name, in the order given) and the
    node groups they were judged against."""

    groups: NodeGroups
    verdicts: dict[str, ScaleUp]

    def to_json(self) -> dict[str, list[dict[str, str]]]:
        """The `scaleUp` JSON: pod -> the templates where it would fit ([] when none)."""
        return {pod: v.to_json() for pod, v in self.verdicts.items()}

    def summary(self) -> str:
        """One line: how many pending pods a scale-up would place, where, how many it
        would not and why."""
        total = len(self.verdicts)
        fit = [v for v in self.verdicts.values() if v.fits]
        where = Counter(t.where() for v in fit for t in v.fits)
        line = f"scale-up: a new node would place {len(fit)} of {total} pending pod(s)"
        if where:
            line += " (" + ", ".join(f"{w}: {n}" for w, n in sorted(where.items())) + ")"
        rest = Counter(v.cause for v in self.verdicts.values() if not v.fits)
        if rest:
            why = ", ".join(f"{n} {_CAUSE_SUMMARY.get(c, c)}" for c, n in rest.most_common())
            line += f"; {sum(rest.values())} would stay pending: {why}"
        ungrouped = self.groups.ungrouped
        if ungrouped:
            line += f"; {len(ungrouped)} node(s) in no node group"
        return line


def _signature(item: Pending) -> tuple[int, str]:
    """Pods with equal signatures get the same answer: same profile, namespace,
    labels and spec (but the node)."""
    pod = item.pod
    body = json.dumps(
        [
            pod_namespace(pod),
            as_dict(meta(pod).get("labels")),
            {k: v for k, v in spec(pod).items() if k != "nodeName"},
        ],
        sort_keys=True,
        default=str,
    )
    return id(item.framework), body


class _Tried(NamedTuple):
    """What one template told about one pod: whether it fits, the filters failing on
    it (plugin -> reason), and the spread distribution of the decision."""

    fits: bool
    failed: dict[str, str]
    distribution: dict[str, dict[str, int]]


def diagnose(
    pending: Iterable[Pending],
    snapshot: Snapshot,
    groups: NodeGroups | None = None,
    *,
    placed: Iterable[tuple[RawObj, str]] = (),
) -> Diagnosis:
    """Whether a new node of some group would take each pending pod (see the module
    docstring). `groups`: node_groups(snapshot) unless given; `placed`: pods bound
    since `snapshot` was taken (pod, node), as a simulation placed them."""
    groups = groups if groups is not None else node_groups(snapshot)
    items = list(pending)
    by_signature: dict[tuple[int, str], Pending] = {}
    signature_of: list[tuple[int, str]] = []
    for item in items:
        sig = _signature(item)
        by_signature.setdefault(sig, item)
        signature_of.append(sig)
    tried: dict[tuple[int, str], list[_Tried]] = {sig: [] for sig in by_signature}
    if groups.templates and by_signature:
        work = snapshot.copy()
        adopt(work, snapshot)
        for pod, node in placed:
            work.add_pod(pod, node)
        # One node stands for each template in turn, under one name: the set of nodes
        # stays the same, so each decision judges again only that node (what the
        # model remembered of the others holds).
        slot = _template_name("scale-up", "slot", work.nodes)
        for template in groups.templates:
            _put(work, slot, template)
            for sig, item in by_signature.items():
                fits = slot in feasible_nodes(item.pod, work, framework=item.framework)
                tried[sig].append(_Tried(fits, {}, {}))
            _take(work, slot, template)
        # Why not, only for the pods no template takes: the filters failing on each.
        unfit = {sig: by_signature[sig] for sig, t in tried.items() if not any(r.fits for r in t)}
        for i, template in enumerate(groups.templates if unfit else ()):
            _put(work, slot, template)
            for sig, item in unfit.items():
                tried[sig][i] = _why_not(item, work, slot)
            _take(work, slot, template)
    answers = {
        sig: _answer(item, tried[sig], groups, snapshot) for sig, item in by_signature.items()
    }
    verdicts = {}
    for item, sig in zip(items, signature_of, strict=True):
        answer = answers[sig]
        verdicts[item.ref] = answer if answer.pod == item.ref else _renamed(answer, item.ref)
    return Diagnosis(groups, verdicts)


def _renamed(answer: ScaleUp, pod: str) -> ScaleUp:
    return ScaleUp(pod, answer.fits, answer.blocked, answer.templates, answer.cause, answer.detail)


def _why_not(item: Pending, work: Snapshot, slot: str) -> _Tried:
    """The filters failing on the template node `slot`, and the spread distribution."""
    decision = place(item.pod, work, framework=item.framework)
    verdict = next(v for v in decision.nodes if v.name == slot)
    failed = {p: s.reason or s.code.value for p, s in verdict.filters.items() if not s.ok}
    return _Tried(verdict.feasible, failed, decision.distribution)


def _put(work: Snapshot, slot: str, template: Template) -> None:
    """Make node `slot` of `work` the template's node, with its DaemonSet pods."""
    node = template.node
    labels = {**as_dict(meta(node).get("labels")), HOSTNAME: slot}
    work.upsert({**node, "metadata": {**meta(node), "name": slot, "labels": labels}})
    for ns, name in template.daemon_pods:
        work.copy_pod(ns, name, f"{name}-{slot}", slot)


def _take(work: Snapshot, slot: str, template: Template) -> None:
    """Remove the template's DaemonSet pods from node `slot` (the node stays for the
    next template)."""
    for ns, name in template.daemon_pods:
        work.delete({"kind": "Pod", "metadata": {"namespace": ns, "name": f"{name}-{slot}"}})


def _answer(item: Pending, tried: list[_Tried], groups: NodeGroups, snapshot: Snapshot) -> ScaleUp:
    templates = groups.templates
    if not templates:
        detail = "no node group to add a node from"
        if groups.ungrouped:
            detail += f" (no node carries any of the labels {', '.join(groups.labels)})"
        elif groups.lost:
            detail += " (every grouped node is not ready or unreachable)"
        return ScaleUp(item.ref, (), {}, 0, NO_GROUP, detail)
    fits = tuple(t for t, r in zip(templates, tried, strict=True) if r.fits)
    if fits:
        return ScaleUp(item.ref, fits, {}, len(templates), CAPACITY)
    order = list(item.framework.filter_names)
    counts: Counter[str] = Counter(p for r in tried for p in r.failed)
    first_reason: dict[str, str] = {}
    for r in tried:
        for p, reason in r.failed.items():
            first_reason.setdefault(p, reason)
    blocked = {
        p: (first_reason[p], counts[p])
        for p in sorted(counts, key=lambda p: order.index(p) if p in order else len(order))
    }
    cause, detail = _cause(item, tried, groups, snapshot)
    return ScaleUp(item.ref, (), blocked, len(templates), cause, detail)


_SPREAD = "PodTopologySpread"


def _cause(
    item: Pending, tried: list[_Tried], groups: NodeGroups, snapshot: Snapshot
) -> tuple[str, str]:
    """Which distinction applies when no template takes the pod, and its sentence."""
    every = set.intersection(*(set(r.failed) for r in tried))
    spread_only = [r for r in tried if set(r.failed) == {_SPREAD}]
    if spread_only:
        return SPREAD, _spread_sentence(item.pod, tried, groups, snapshot)
    wanted = _wanted_zones(item.pod)
    covered = groups.zones()
    in_zones = ", ".join(sorted(z for z in covered if z)) or "no zone"
    if wanted is not None and not wanted & covered:
        return ZONE_UNCOVERED, (
            f"it asks for zone {', '.join(sorted(wanted))}, which no node group covers "
            f"(node groups have nodes in: {in_zones})"
        )
    if every & {"VolumeZone", "VolumeBinding"}:
        return ZONE_UNCOVERED, (
            "its volumes bind it to a zone no node group covers "
            f"(node groups have nodes in: {in_zones})"
        )
    if "NodeAffinity" in every:
        return SELECTION, "its node selector or affinity matches no node group's labels"
    if "TaintToleration" in every:
        return TAINTS, "it tolerates the taints of no node group"
    if _SPREAD in every:
        return SPREAD, _spread_sentence(item.pod, tried, groups, snapshot)
    return OTHER, "no node group's node would pass every filter"


def _spread_sentence(
    pod: RawObj, tried: list[_Tried], groups: NodeGroups, snapshot: Snapshot
) -> str:
    """Why no new node satisfies the spread: the skew is measured from a domain no new
    node can go to, or the new node that could go there fails other filters."""
    hard = _hard_keys(pod)
    sample = next((r for r in tried if r.distribution), None)
    for key, domains in sample.distribution.items() if sample is not None else ():
        if not domains or (hard and key not in hard):
            continue
        low = min(domains.values())
        lows = sorted(d for d, n in domains.items() if n == low)
        where = [t.node["metadata"]["labels"].get(key) for t in groups.templates]
        stuck = [d for d in lows if d not in where]
        if stuck:
            why = _domain_state(snapshot, key, stuck, groups)
            return (
                f"the spread measures skew over {key} from {', '.join(stuck)} ({low} matching "
                f"pod(s)), {why}, so no new node in any zone a node group covers helps"
            )
        others = sorted(
            {p for d, r in zip(where, tried, strict=True) if d in lows for p in r.failed}
            - {_SPREAD}
        )
        if others:
            return (
                f"the spread allows only {key} {', '.join(lows)} ({low} matching pod(s)), "
                f"where a new node fails {', '.join(others)}"
            )
    return "the spread rules the pod out on every node a node group would add"


def _hard_keys(pod: RawObj) -> set[str]:
    """The topology keys of the pod's own DoNotSchedule constraints."""
    own = spec(pod).get("topologySpreadConstraints")
    return {
        str(c.get("topologyKey"))
        for c in (own if isinstance(own, list) else [])
        if isinstance(c, dict) and c.get("whenUnsatisfiable") == "DoNotSchedule"
    }


def _domain_state(snapshot: Snapshot, key: str, domains: list[str], groups: NodeGroups) -> str:
    """Why no node can be added to these domains: their nodes were lost (not ready or
    unreachable) or belong to no node group."""
    lost, ungrouped = set(groups.lost), set(groups.ungrouped)
    names = [n for n, info in snapshot.nodes.items() if info.labels.get(key) in domains]
    if names and all(n in lost for n in names):
        return "a lost domain: its nodes are not ready or unreachable"
    if names and all(n in lost or n in ungrouped for n in names):
        return "an empty domain for scale-up: its nodes belong to no node group"
    return "a domain no node group's new node passes the filters in"


def _wanted_zones(pod: RawObj) -> set[str] | None:
    """The zones the pod's nodeSelector or required node affinity restricts it to, None
    when it names none (every term must name the zone for the set to hold)."""
    s = spec(pod)
    selector = s.get("nodeSelector")
    if isinstance(selector, dict) and isinstance(selector.get(ZONE), str):
        return {selector[ZONE]}
    required = as_dict(
        as_dict(as_dict(s.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    )
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return None
    zones: set[str] = set()
    for term in terms:
        named = [
            e
            for e in as_dict(term).get("matchExpressions") or []
            if isinstance(e, dict)
            and e.get("key") in (ZONE, _BETA_ZONE)
            and e.get("operator") == "In"
        ]
        if not named:
            return None
        for e in named:
            zones.update(str(v) for v in e.get("values") or [])
    return zones
