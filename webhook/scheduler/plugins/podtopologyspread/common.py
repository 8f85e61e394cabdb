"""What PreFilter and PreScore share: the pod's constraints, node inclusion and counting.

Follows kube-scheduler's podtopologyspread/common.go (newest release read:
kubernetes/kubernetes common.go @ 76b564f18e87, filtering.go @ 01c2588bf4a3,
scoring.go @ 7d6a59c19f31, plugin.go with SignPod). Feature gates are taken at
their current defaults: minDomains, node inclusion policies and matchLabelKeys
are all on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api.constraint import apply_match_label_keys
from webhook.api.kube import HOSTNAME, RawObj, as_dict, pod_labels, pod_namespace
from webhook.api.labels import (
    compile_node_affinity,
    compile_selector,
    find_untolerated_taint,
    selector_error,
)
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import NodeInfo, NodeTable, Snapshot
from webhook.scheduler.framework.types import Code, Reads, Status
from webhook.scheduler.plugins.helper.spread import READS as SPREAD_READS
from webhook.scheduler.plugins.podtopologyspread.defaults import default_constraints_for

# The plugin's name in profiles, statuses and scores (plugin.go Name).
PLUGIN_NAME = "PodTopologySpread"
# What it reads: node labels and taints/affinity for node inclusion, the labels of bound
# pods, and what DefaultSelector lists for the default constraints.
READS = Reads(
    kinds=SPREAD_READS.kinds,
    pod_fields=("spec.topologySpreadConstraints", "metadata.labels"),
    node_fields=("metadata.labels", "spec.taints"),
    existing_pod_fields=("metadata.labels", "metadata.deletionTimestamp"),
)

# The two Filter reasons, as kube-scheduler words them (filtering.go).
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
CONSTRAINTS_NOT_MATCH = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
NODE_LABEL_NOT_MATCH = Status(Code.UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = HOSTNAME  # hostname spreading is scored by node, not by domain

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

# The PodTopologySpreadArgs a scheduler runs with when configured with nothing.
DEFAULT_ARGS = SpreadArgs()


class ConstraintError(ValueError):
    """The pod's constraints cannot be turned into selectors (PreFilter/PreScore error)."""


@dataclass(frozen=True)
class Constraint:
    """One parsed topology spread constraint, as the plugin works with it.

    selector: the label selector pods are counted with, matchLabelKeys already
    merged in (None selects nothing); matches: that selector compiled;
    counts_nothing: the selector has no requirement at all, which upstream
    counts as zero matching pods everywhere (CAVEAT: kubernetes#141339, fixed
    after the newest release read; the pod itself still self-matches).
    """

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: RawObj | None
    matches: Callable[[Mapping[str, str]], bool]
    counts_nothing: bool
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str


@dataclass(frozen=True)
class PodConstraints:
    """The constraints of one phase and where they came from.

    defaulted: they come from PodTopologySpreadArgs because the pod has none;
    system_defaulted: the args' defaultingType is System (only then may nodes
    lacking a topology key still be scored).
    """

    constraints: tuple[Constraint, ...]
    defaulted: bool
    system_defaulted: bool


# ---- constraints -----------------------------------------------------------------


def _int32(value: Any, field: str) -> int:
    """`value` as a Go int32, or ConstraintError (what decoding the pod would refuse)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConstraintError(f"{field} must be a 32-bit integer, got {value!r}")
    if not INT32_MIN <= value <= INT32_MAX:
        raise ConstraintError(f"{field} must be a 32-bit integer, got {value!r}")
    return value


def has_no_requirements(selector: RawObj | None) -> bool:
    """labels.Selector.Empty(): true for {} (select everything), false for None.

    Port of labels/selector.go: internalSelector.Empty.
    """
    if selector is None:
        return False
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def parse_constraint(
    raw: RawObj, pod_labels_: Mapping[str, str], *, merge_keys: bool = True
) -> Constraint:
    """Turn one API constraint into a Constraint; raise ConstraintError when unusable.

    Port of common.go: filterTopologySpreadConstraints (one constraint).
    """
    selector = raw.get("labelSelector")
    problem = selector_error(selector)
    if problem:
        raise ConstraintError(problem)
    if merge_keys:
        selector = apply_match_label_keys(selector, raw.get("matchLabelKeys"), pod_labels_)
    max_skew = _int32(raw.get("maxSkew"), "maxSkew")
    key = raw.get("topologyKey")
    if not isinstance(key, str):
        raise ConstraintError(f"topologyKey must be a string, got {key!r}")
    raw_min = raw.get("minDomains")
    min_domains = 1 if raw_min is None else _int32(raw_min, "minDomains")
    affinity = raw.get("nodeAffinityPolicy")
    taints = raw.get("nodeTaintsPolicy")
    return Constraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=raw.get("whenUnsatisfiable"),  # type: ignore[arg-type]
        selector=selector,
        matches=compile_selector(selector),
        counts_nothing=has_no_requirements(selector),
        min_domains=min_domains,
        node_affinity_policy=affinity if affinity is not None else HONOR,
        node_taints_policy=taints if taints is not None else IGNORE,
    )


def pod_constraints(
    pod: RawObj, snapshot: Snapshot, args: SpreadArgs, action: str
) -> PodConstraints:
    """The pod's constraints with whenUnsatisfiable == action, or its defaults when it has none.

    Raises ConstraintError for constraints kube-scheduler could not parse.

    Port of plugin.go: getConstraints (for either action).
    """
    raw_list = as_dict(pod.get("spec")).get("topologySpreadConstraints")
    system = args.defaulting_type == "System"
    labels = pod_labels(pod)
    if raw_list:
        if not isinstance(raw_list, list):
            raise ConstraintError("topologySpreadConstraints must be a list")

        def parse() -> PodConstraints:
            parsed = []
            for raw in raw_list:
                if not isinstance(raw, dict):
                    raise ConstraintError("each topologySpreadConstraint must be an object")
                if raw.get("whenUnsatisfiable") == action:
                    parsed.append(parse_constraint(raw, labels))
            return PodConstraints(tuple(parsed), defaulted=False, system_defaulted=system)

        # The replicas of one workload carry the same constraints and labels.
        return _parsed_once((action, system), raw_list, _labels_key(labels), parse)
    # Defaults carry DefaultSelector as their selector, which replaces any
    # matchLabelKeys merge (buildDefaultConstraints overwrites the selector).
    wanted = [
        raw
        for raw in default_constraints_for(pod, snapshot, args)
        if isinstance(raw, dict) and raw.get("whenUnsatisfiable") == action
    ]

    def parse_defaults() -> PodConstraints:
        defaults = [parse_constraint(raw, labels, merge_keys=False) for raw in wanted]
        return PodConstraints(tuple(defaults), defaulted=True, system_defaulted=system)

    # The replicas of one workload get the same defaults.
    return _parsed_once((action, system), wanted, (), parse_defaults)


# (action, defaulting type is System, the constraints as JSON, the pod's labels (none
# for defaults: their selector is never merged)) -> their parse; forgotten past
# _PARSED_LIMIT (a cache, as compile_selector's).
_Seen = tuple[str, bool, str, tuple[tuple[str, Any], ...]]
_PARSED: dict[_Seen, PodConstraints] = {}
_PARSED_LIMIT = 4096


def _parsed_once(
    phase: tuple[str, bool],
    raws: Any,
    labels: tuple[tuple[str, Any], ...],
    parse: Callable[[], PodConstraints],
) -> PodConstraints:
    """parse(), once per (action and defaulting type, the constraints `raws` as JSON, the
    labels they read): remembered in _PARSED. Constraints that are not JSON, or labels
    no key can hold, are parsed every time; a parse error is never remembered."""
    try:
        seen: _Seen = (*phase, json.dumps(raws, sort_keys=True), labels)
        hash(seen)
    except (TypeError, ValueError):
        return parse()
    hit = _PARSED.get(seen)
    if hit is None:
        hit = parse()
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[seen] = hit
    return hit


def _labels_key(labels: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The pod's labels as a key (matchLabelKeys reads their values)."""
    return tuple(sorted(labels.items(), key=lambda kv: str(kv[0])))


def constraints_or_error(
    pod: RawObj, snapshot: Snapshot, args: SpreadArgs, action: str
) -> PodConstraints | Status:
    """pod_constraints, or the Status upstream's PreFilter / PreScore error amounts to
    (the pod cannot be scheduled anywhere) when they cannot be parsed."""
    try:
        return pod_constraints(pod, snapshot, args, action)
    except ConstraintError as exc:
        phase = "hard" if action == DO_NOT_SCHEDULE else "soft"
        reason = f"obtaining pod's {phase} topology spread constraints: {exc}"
        return Status(Code.UNRESOLVABLE, reason)


# ---- nodes -----------------------------------------------------------------------


class NodeInclusion:
    """Per-decision cache of the two node inclusion checks for one incoming pod.

    affinity(node): the pod's nodeSelector and required node affinity match;
    untainted(node): no NoSchedule/NoExecute taint the pod does not tolerate.
    """

    def __init__(self, pod: RawObj) -> None:
        tolerations = as_dict(pod.get("spec")).get("tolerations")
        self._tolerations: list[RawObj] = tolerations if isinstance(tolerations, list) else []
        self._matcher = compile_node_affinity(pod)
        self._affinity: dict[str, bool] = {}
        self._known: tuple[NodeTable, list[bool]] | None = None
        self._untainted: dict[str, bool] = {}

    def know_affinity(self, table: NodeTable, matches: list[bool]) -> None:
        """Take whether the pod's node affinity matches each node of `table`, as
        already worked out (by the NodeAffinity filter, which checks the very same)."""
        self._known = (table, matches)

    def known_affinity(self, c: Constraint) -> tuple[NodeTable, list[bool]] | None:
        """(table, includes(c, node) for each node of it) when node affinity alone
        decides inclusion in c and is known for every node; else None."""
        if c.node_affinity_policy != HONOR or c.node_taints_policy == HONOR:
            return None
        return self._known

    def affinity(self, info: NodeInfo) -> bool:
        if self._matcher is None:
            return True
        hit = self._affinity.get(info.name)
        if hit is None:
            known = self._known
            at = known[0].position.get(info.name) if known is not None else None
            if at is not None and known is not None and known[0].infos[at] is info:
                hit = known[1][at]
            else:
                hit = bool(self._matcher(info.node))
            self._affinity[info.name] = hit
        return hit

    def untainted(self, info: NodeInfo) -> bool:
        taints = as_dict(info.node.get("spec")).get("taints")
        if not taints:
            return True
        hit = self._untainted.get(info.name)
        if hit is None:
            hit = find_untolerated_taint(taints, self._tolerations) is None
            self._untainted[info.name] = hit
        return hit

    def taints_only(self, c: Constraint) -> bool:
        """Whether constraint c includes every node carrying the topology keys but those
        with a taint the pod does not tolerate (nodeTaintsPolicy Honor, and node
        affinity that includes every node)."""
        return c.node_taints_policy == HONOR and self._affinity_includes_all(c)

    def untolerated(self, snapshot: Snapshot) -> frozenset[str]:
        """The nodes of `snapshot` with a NoSchedule or NoExecute taint the pod does not
        tolerate (Snapshot.untolerated, for this pod's tolerations)."""
        return snapshot.untolerated(self._tolerations)

    def trivial(self, c: Constraint) -> bool:
        """Whether constraint c includes every node that carries the topology keys."""
        return c.node_taints_policy != HONOR and self._affinity_includes_all(c)

    def _affinity_includes_all(self, c: Constraint) -> bool:
        """Whether node affinity leaves every node in constraint c (policy Ignore, or no
        nodeSelector or required node affinity)."""
        return c.node_affinity_policy != HONOR or self._matcher is None

    def includes(self, c: Constraint, info: NodeInfo) -> bool:
        """matchNodeInclusionPolicies: does `info` take part in constraint c's spread?

        Port of common.go: matchNodeInclusionPolicies.
        """
        if c.node_affinity_policy == HONOR and not self.affinity(info):
            return False
        if c.node_taints_policy == HONOR and not self.untainted(info):
            return False
        return True


def eligible_nodes(
    snapshot: Snapshot, constraints: tuple[Constraint, ...], inclusion: NodeInclusion
) -> list[dict[str, str]]:
    """For each of `constraints` (those of one whenUnsatisfiable), every node taking part
    in its spread -> the node's domain: the node carries every topology key of
    `constraints` and passes the constraint's inclusion policies. These are the nodes
    whose domains PreFilter counts.

    Port of filtering.go: calPreFilterState's node loop (nodeLabelsMatchSpreadConstraints,
    matchNodeInclusionPolicies).
    """
    keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
    carrying = snapshot.key_index(keys)[0]
    nodes = snapshot.nodes
    out: list[dict[str, str]] = []
    for c in constraints:
        j = keys.index(c.topology_key)
        out.append(
            {
                name: values[j]
                for name, values in carrying.items()
                if (info := nodes.get(name)) is not None and inclusion.includes(c, info)
            }
        )
    return out


def match_counts(snapshot: Snapshot, pod: RawObj, c: Constraint) -> dict[str, int]:
    """countPodsMatchSelector for every node: node name -> matching pods of the pod's namespace.

    Port of common.go: countPodsMatchSelector.
    """
    if c.counts_nothing:
        return {}
    return snapshot.match_counts(pod_namespace(pod), c.selector)


def domain_match_counts(
    snapshot: Snapshot, pod: RawObj, c: Constraint, keys: tuple[str, ...]
) -> tuple[dict[Any, int], ...]:
    """match_counts summed per domain of each of `keys`, over the nodes carrying them
    all: per key, domain -> matching pods (domains with none absent)."""
    if c.counts_nothing:
        return tuple({} for _ in keys)
    return snapshot.domain_counts(pod_namespace(pod), c.selector, keys)


def distribution(pod: RawObj, snapshot: Snapshot, args: SpreadArgs) -> dict[str, dict[str, int]]:
    """Matching pods per domain for each topology key the pod spreads over.

    Over every node carrying the key, whatever its inclusion policies; the first
    constraint naming a key gives the selector. {} when the pod spreads over nothing
    (or its constraints cannot be parsed).
    """
    try:
        constraints = [
            *pod_constraints(pod, snapshot, args, DO_NOT_SCHEDULE).constraints,
            *pod_constraints(pod, snapshot, args, SCHEDULE_ANYWAY).constraints,
        ]
    except ConstraintError:
        return {}
    return distribution_of(pod, snapshot, constraints)


# id(sorted domains) -> (those domains, each -> 0): copying is cheaper than building anew.
_ZEROED: dict[int, tuple[tuple[Any, ...], dict[Any, int]]] = {}
_ZEROED_LIMIT = 64


def _zeroed(domains: tuple[Any, ...]) -> dict[Any, int]:
    """A new dict of `domains` (a cached sorted_domains answer), each mapped to 0."""
    hit = _ZEROED.get(id(domains))
    if hit is None or hit[0] is not domains:
        if len(_ZEROED) >= _ZEROED_LIMIT:
            _ZEROED.clear()
        hit = _ZEROED[id(domains)] = (domains, dict.fromkeys(domains, 0))
    return hit[1].copy()


def distribution_of(
    pod: RawObj, snapshot: Snapshot, constraints: Iterable[Constraint]
) -> dict[str, dict[str, int]]:
    """distribution() for constraints already parsed (DoNotSchedule ones first)."""
    out: dict[str, dict[str, int]] = {}
    for c in constraints:
        key = c.topology_key
        if key in out:
            continue
        nodes = snapshot.key_index((key,))[0]
        domains = _zeroed(snapshot.sorted_domains(key))  # sorted by domain
        for name, n in match_counts(snapshot, pod, c).items():
            carried = nodes.get(name)
            if carried is not None:
                domains[carried[0]] += n
        out[key] = domains
    return out
