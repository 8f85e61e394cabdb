"""What InterPodAffinity's Filter and Score share: affinity terms as the scheduler
parses them, namespace labels, and the index of the terms existing pods carry.

Follows kube-scheduler's pkg/scheduler/framework/types.go (PodInfo.Update,
newAffinityTerm, getNamespacesFromPodAffinityTerm, AffinityTerm.Matches) and
interpodaffinity/plugin.go (mergeAffinityTermNamespacesIfNotEmpty,
GetNamespaceLabelsSnapshot), newest release read (kubernetes/kubernetes
filtering.go with fwk "k8s.io/kube-scheduler/framework", scoring.go, types.go).
The InterPodAffinityHostnameFastPath feature gate (alpha, off by default) is not
modelled: it changes how upstream computes, not what it decides.

matchLabelKeys / mismatchLabelKeys are merged into a term's labelSelector as
kube-apiserver merges them when it stores a pod (MatchLabelKeysInPodAffinity, on
by default): `key In (value)` / `key NotIn (value)` for each key the pod carries.
The scheduler itself reads the stored selector; merging an already merged
selector again only repeats requirements, which selects the same pods.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from webhook.api.constraint import apply_match_label_keys, match_label_requirements
from webhook.api.kube import NAMESPACE_NAME_LABEL, RawObj, as_dict, pod_labels, pod_namespace
from webhook.api.labels import LabelMatcher, compile_selector, match_nothing, selector_error
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot, is_terminating

__all__ = [
    "NAME",
    "AffinityTerm",
    "ExistingTermsIndex",
    "PodTerms",
    "TermGroup",
    "all_namespaces",
    "counts_by_topology",
    "matching_pods_per_node",
    "merge_namespace_selector",
    "namespace_labels",
    "parse_pod_terms",
    "reads_all_namespaces",
]

# The plugin's name in profiles, statuses and scores (plugin.go Name).
NAME: Final = "InterPodAffinity"

# Term kinds, the four lists of framework.PodInfo.
REQUIRED_AFFINITY: Final = "requiredAffinityTerms"
REQUIRED_ANTI_AFFINITY: Final = "requiredAntiAffinityTerms"
PREFERRED_AFFINITY: Final = "preferredAffinityTerms"
PREFERRED_ANTI_AFFINITY: Final = "preferredAntiAffinityTerms"
KINDS: Final = (
    REQUIRED_AFFINITY,
    REQUIRED_ANTI_AFFINITY,
    PREFERRED_AFFINITY,
    PREFERRED_ANTI_AFFINITY,
)

_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


# ---- terms ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One parsed PodAffinityTerm (framework.AffinityTerm), with its weight.

    namespaces: namespaces the term names (the pod's own when it names none and
        has no namespaceSelector); namespace_selector: the namespaceSelector compiled
        (match_nothing when absent, match_everything when {}); selector: the
        labelSelector with matchLabelKeys / mismatchLabelKeys merged (None selects
        nothing), matches: it compiled; topology_key: "" when absent; weight: the
        preferred term's weight, 0 for a required term.
    """

    namespaces: frozenset[str]
    namespace_selector: LabelMatcher
    selects_all_namespaces: bool
    selector: RawObj | None
    matches_labels: LabelMatcher
    topology_key: str
    weight: int = 0

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        """Port of types.go: AffinityTerm.Matches."""
        if namespace in self.namespaces or self.namespace_selector(ns_labels):
            return self.matches_labels(labels)
        return False


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's four term lists (framework.PodInfo); a list that did not parse is empty
    and its error is in `errors` (the message PodInfo.Update aggregates)."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[AffinityTerm, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )

    def of_kind(self, kind: str) -> tuple[AffinityTerm, ...]:
        return {
            REQUIRED_AFFINITY: self.required_affinity,
            REQUIRED_ANTI_AFFINITY: self.required_anti_affinity,
            PREFERRED_AFFINITY: self.preferred_affinity,
            PREFERRED_ANTI_AFFINITY: self.preferred_anti_affinity,
        }[kind]

    def error_message(self) -> str:
        """utilerrors.NewAggregate(parseErrs).Error()."""
        if len(self.errors) == 1:
            return self.errors[0]
        return "[" + ", ".join(self.errors) + "]"


def merge_label_keys(term: RawObj, labels: Mapping[str, str]) -> Any:
    """The term's labelSelector with matchLabelKeys (In) and mismatchLabelKeys (NotIn)
    merged, as kube-apiserver stores it.

    Port of pkg/registry/core/pod/strategy.go: applyMatchLabelKeysAndMismatchLabelKeys
    (a nil labelSelector is left nil; keys the pod lacks add nothing).
    """
    selector = term.get("labelSelector")
    if not isinstance(selector, dict):
        return selector
    selector = apply_match_label_keys(selector, term.get("matchLabelKeys"), labels)
    mismatch = term.get("mismatchLabelKeys")
    if isinstance(mismatch, list) and mismatch and isinstance(selector, dict):
        exprs = selector.get("matchExpressions")
        extra = match_label_requirements(mismatch, labels)
        if extra and (exprs is None or isinstance(exprs, list)):
            selector = dict(selector)
            selector["matchExpressions"] = list(exprs or []) + [
                {"key": k, "operator": "NotIn", "values": [v]} for k, v in extra
            ]
    return selector


def _namespaces_of(term: RawObj, pod_ns: str) -> frozenset[str]:
    """Port of types.go: getNamespacesFromPodAffinityTerm."""
    names = term.get("namespaces")
    names = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    if not names and term.get("namespaceSelector") is None:
        return frozenset((pod_ns,))
    return frozenset(names)


def _new_term(raw: Any, pod_ns: str, labels: Mapping[str, str], weight: int) -> AffinityTerm | str:
    """Port of types.go: newAffinityTerm (the error message when a selector does not parse)."""
    term = as_dict(raw)
    selector = merge_label_keys(term, labels)
    problem = selector_error(selector)
    if problem is not None:
        return problem
    ns_selector = term.get("namespaceSelector")
    problem = selector_error(ns_selector)
    if problem is not None:
        return problem
    key = term.get("topologyKey")
    return AffinityTerm(
        namespaces=_namespaces_of(term, pod_ns),
        namespace_selector=compile_selector(ns_selector),
        selects_all_namespaces=isinstance(ns_selector, dict)
        and not ns_selector.get("matchLabels")
        and not ns_selector.get("matchExpressions"),
        selector=selector,
        matches_labels=compile_selector(selector),
        topology_key=key if isinstance(key, str) else "",
        weight=weight,
    )


def _terms(
    raw: Any, pod_ns: str, labels: Mapping[str, str], weighted: bool
) -> tuple[AffinityTerm, ...] | str:
    """Port of types.go: GetAffinityTerms / getWeightedAffinityTerms (first error wins)."""
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if weighted:
            item = as_dict(item)
            weight = item.get("weight")
            made = _new_term(
                item.get("podAffinityTerm"),
                pod_ns,
                labels,
                weight if isinstance(weight, int) and not isinstance(weight, bool) else 0,
            )
        else:
            made = _new_term(item, pod_ns, labels, 0)
        if isinstance(made, str):
            return made
        out.append(made)
    return tuple(out)


def parse_pod_terms(pod: RawObj) -> PodTerms:
    """A pod's affinity terms as framework.NewPodInfo parses them.

    Port of types.go: PodInfo.Update (each list that fails is left empty and its
    error recorded as "<list>: <error>").
    """
    affinity = as_dict(as_dict(pod.get("spec")).get("affinity"))
    if not affinity:
        return _NO_TERMS
    ns = pod_namespace(pod)
    labels = pod_labels(pod)
    pa = as_dict(affinity.get("podAffinity"))
    paa = as_dict(affinity.get("podAntiAffinity"))
    sources = (
        (REQUIRED_AFFINITY, pa.get("requiredDuringSchedulingIgnoredDuringExecution"), False),
        (REQUIRED_ANTI_AFFINITY, paa.get("requiredDuringSchedulingIgnoredDuringExecution"), False),
        (PREFERRED_AFFINITY, pa.get("preferredDuringSchedulingIgnoredDuringExecution"), True),
        (PREFERRED_ANTI_AFFINITY, paa.get("preferredDuringSchedulingIgnoredDuringExecution"), True),
    )
    lists: list[tuple[AffinityTerm, ...]] = []
    errors: list[str] = []
    for kind, raw, weighted in sources:
        made = _terms(raw, ns, labels, weighted)
        if isinstance(made, str):
            errors.append(f"{kind}: {made}")
            made = ()
        lists.append(made)
    if not errors and not any(lists):
        return _NO_TERMS
    return PodTerms(lists[0], lists[1], lists[2], lists[3], tuple(errors))


_NO_TERMS = PodTerms()


# ---- namespaces -------------------------------------------------------------------


def namespace_labels(snapshot: Snapshot, namespace: str) -> dict[str, str]:
    """The labels of a namespace, for matching a namespaceSelector.

    Port of plugin.go: GetNamespaceLabelsSnapshot. kube-apiserver gives every
    Namespace the label kubernetes.io/metadata.name=<name>; a namespace the
    snapshot lacks still carries it here (upstream would read it from its
    informer; a snapshot file may simply not list Namespaces).
    """
    obj = snapshot.namespaces.get(namespace)
    labels = dict(as_dict(as_dict(obj.get("metadata")).get("labels"))) if obj else {}
    labels.setdefault(NAMESPACE_NAME_LABEL, namespace)
    return labels


def merge_namespace_selector(
    term: AffinityTerm, snapshot: Snapshot, known_namespaces: Iterable[str]
) -> AffinityTerm:
    """The incoming pod's term with its namespaceSelector unrolled into namespaces.

    Port of plugin.go: mergeAffinityTermNamespacesIfNotEmpty. A {} selector stays
    "every namespace"; any other (a nil one selects none) is replaced by the names
    it selects among `known_namespaces` and then selects nothing more.
    """
    if term.selects_all_namespaces or term.namespace_selector is match_nothing:
        return term  # a nil selector selects no namespace: the term is left as it was
    selected = {
        ns for ns in known_namespaces if term.namespace_selector(namespace_labels(snapshot, ns))
    }
    return AffinityTerm(
        namespaces=term.namespaces | selected,
        namespace_selector=match_nothing,
        selects_all_namespaces=False,
        selector=term.selector,
        matches_labels=term.matches_labels,
        topology_key=term.topology_key,
        weight=term.weight,
    )


# ---- the index of existing pods' terms -----------------------------------------------


class TermGroup:
    """The terms of one kind that existing pods carry, alike: same kind, same pod
    namespace, same term (after the merge), so they match the same incoming pods.

    kind: one of KINDS; term: the parsed term; counts: topology value (the value of
    term.topology_key on the node of each pod carrying the term) -> how many such
    (pod, term) pairs; nodes lacking the key add nothing. Never empty while indexed.
    ns_selector: the term's raw namespaceSelector as JSON, None when it has none.
    """

    __slots__ = ("kind", "term", "counts", "ns_selector")

    def __init__(self, kind: str, term: AffinityTerm, ns_selector: str | None = None) -> None:
        self.kind = kind
        self.term = term
        self.counts: dict[str, int] = {}
        self.ns_selector = ns_selector


GroupKey = tuple[str, str, str, int]  # (kind, pod namespace, term JSON, weight)


class _NodeEntry:
    """What one node added to the index, to take it back when the node changes.

    generation: the NodeInfo.generation it was taken at; adds: (group key, topology
    value) per (pod, term) pair; terminating: (namespace, labels) of its
    terminating pods; namespaces: pods per namespace.
    """

    __slots__ = ("generation", "adds", "terminating", "namespaces")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.adds: list[tuple[GroupKey, str]] = []
        self.terminating: list[tuple[str, Mapping[str, str]]] = []
        self.namespaces: Counter[str] = Counter()


# (group key, the term, its raw namespaceSelector as JSON or None) per term of a pod.
_TermParse = tuple[tuple[GroupKey, AffinityTerm, str | None], ...]
# Groups by key, for one namespace or one namespaceSelector (with its matcher).
_Groups = dict[GroupKey, TermGroup]


class ExistingTermsIndex:
    """The affinity terms of the pods bound in a snapshot, grouped and counted per
    topology value, kept in step with the snapshot node by node.

    groups[kind]: group key -> TermGroup; terminating[node]: that node's terminating
    pods (Snapshot.match_counts leaves them out, upstream's NodeInfo.Pods does not);
    namespaces: namespace -> bound pods (the namespaces a namespaceSelector can pick).
    `matching` finds the groups whose term matches an incoming pod through two
    lookups kept with the groups: by each namespace a term names, and by each
    distinct namespaceSelector, evaluated once per decision rather than once per
    group (thousands of namespaces each with their own Deployment's terms).

    `sync` re-reads only the nodes the snapshot's journal names as changed since the
    last sync (every node when the journal cannot say: another snapshot, or too
    long ago); the first sync reads every pod once (150,000 pods: about a tenth of a second),
    which a caller can pay at load time with `sync`. Alike terms of thousands of
    pods (one Deployment's anti-affinity) are one group, so PreFilter evaluates
    each group's selector once, not each pod's.
    """

    def __init__(self) -> None:
        self.groups: dict[str, dict[GroupKey, TermGroup]] = {kind: {} for kind in KINDS}
        # kind -> namespace named by the term -> its groups
        self._by_namespace: dict[str, dict[str, _Groups]] = {kind: {} for kind in KINDS}
        # kind -> raw namespaceSelector (JSON) -> (its matcher, its groups)
        self._by_selector: dict[str, dict[str, tuple[LabelMatcher, _Groups]]] = {
            kind: {} for kind in KINDS
        }
        self.namespaces: Counter[str] = Counter()
        self._nodes: dict[str, _NodeEntry] = {}
        # Snapshot.version of the last sync (versions are unique across snapshots).
        self._synced_version: int | None = None
        # Snapshot.journal_mark() at the last sync: the next one reads only the nodes
        # changed since (Snapshot.changed_since), not every node.
        self._mark: tuple[int, int] | None = None
        self._parsed: dict[tuple[str, str], _TermParse] = {}
        # id(affinity) -> (that object, its JSON, whether it reads the pod's labels)
        self._fingerprints: dict[int, tuple[Any, str, bool]] = {}
        self._terminating: dict[str, list[tuple[str, Mapping[str, str]]]] = {}
        self.lock = threading.RLock()

    def matching(
        self, kind: str, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> list[TermGroup]:
        """The groups of `kind` whose term matches a pod of `namespace` with `labels`
        (AffinityTerm.matches; `ns_labels`: the namespace's labels), call with `lock`
        held after `sync`."""
        found: _Groups = {}
        for key, group in self._by_namespace[kind].get(namespace, {}).items():
            if group.term.matches_labels(labels):
                found[key] = group
        for selects, groups in self._by_selector[kind].values():
            if selects(ns_labels):
                for key, group in groups.items():
                    if key not in found and group.term.matches_labels(labels):
                        found[key] = group
        return list(found.values())

    def _new_group(self, key: GroupKey, term: AffinityTerm, ns_selector: str | None) -> TermGroup:
        kind = key[0]
        group = self.groups[kind][key] = TermGroup(kind, term, ns_selector)
        for ns in term.namespaces:
            self._by_namespace[kind].setdefault(ns, {})[key] = group
        if ns_selector is not None:
            entry = self._by_selector[kind].setdefault(ns_selector, (term.namespace_selector, {}))
            entry[1][key] = group
        return group

    def _drop_group(self, key: GroupKey, group: TermGroup) -> None:
        kind = key[0]
        del self.groups[kind][key]
        by_namespace = self._by_namespace[kind]
        for ns in group.term.namespaces:
            groups = by_namespace[ns]
            del groups[key]
            if not groups:
                del by_namespace[ns]
        if group.ns_selector is not None:
            by_selector = self._by_selector[kind]
            groups = by_selector[group.ns_selector][1]
            del groups[key]
            if not groups:
                del by_selector[group.ns_selector]

    def terminating_pods(self) -> Iterable[tuple[str, str, Mapping[str, str]]]:
        """(node, namespace, labels) of every terminating bound pod."""
        for node, pods in self._terminating.items():
            for ns, labels in pods:
                yield node, ns, labels

    def sync(self, snapshot: Snapshot) -> None:
        """Bring the index in step with `snapshot` (call with `lock` held or not: it locks)."""
        with self.lock:
            version = getattr(snapshot, "version", None)
            if version is not None and version == self._synced_version:
                return  # nothing changed since the last sync (versions are never reused)
            # The mark before any node is read: a change made while reading is in the
            # journal after it, so the next sync reads that node again.
            mark = getattr(snapshot, "journal_mark", None)
            new_mark = mark() if mark is not None else None
            nodes = snapshot.nodes
            entries = self._nodes
            journal = getattr(snapshot, "changed_since", None)
            changed = journal(self._mark) if journal is not None else None
            names = nodes if changed is None else changed
            for name in names:
                info = nodes.get(name)
                entry = entries.get(name)
                if info is None:  # a node that is gone (only a journal names these)
                    if entry is not None:
                        self._take_back(name, entries.pop(name))
                    continue
                if entry is not None and entry.generation == info.generation:
                    continue
                if entry is not None:
                    self._take_back(name, entry)
                entries[name] = self._add_node(info)
            if changed is None and len(entries) > len(nodes):
                for name in [n for n in entries if n not in nodes]:
                    self._take_back(name, entries.pop(name))
            self._synced_version = version
            self._mark = new_mark

    def _fingerprint(self, affinity: Any) -> tuple[str, bool]:
        """The affinity's content as JSON, and whether it reads the pod's labels; once
        per affinity object (the Snapshot shares one object per content)."""
        hit = self._fingerprints.get(id(affinity))
        if hit is not None and hit[0] is affinity:
            return hit[1], hit[2]
        fingerprint = json.dumps(affinity, sort_keys=True, default=str)
        # The merge reads the pod's labels only through matchLabelKeys/mismatchLabelKeys.
        reads = '"matchLabelKeys"' in fingerprint or '"mismatchLabelKeys"' in fingerprint
        if len(self._fingerprints) > 4096:
            self._fingerprints.clear()
        self._fingerprints[id(affinity)] = (affinity, fingerprint, reads)
        return fingerprint, reads

    def _parse(self, pod: RawObj) -> _TermParse:
        affinity = as_dict(pod.get("spec")).get("affinity")
        ns = pod_namespace(pod)
        labels = pod_labels(pod)
        fingerprint, reads_labels = self._fingerprint(affinity)
        if reads_labels:
            fingerprint += json.dumps(labels, sort_keys=True)
        hit = self._parsed.get((ns, fingerprint))
        if hit is not None:
            return hit
        terms = parse_pod_terms(pod)
        out = []
        for kind in KINDS:
            for i, term in enumerate(terms.of_kind(kind)):
                # The namespaceSelector is kept raw in the key: it is matched against
                # the incoming pod's namespace labels, not unrolled.
                raw = _raw_ns_selector(pod, kind, i)
                identity = json.dumps(
                    [sorted(term.namespaces), term.selector, term.topology_key, raw],
                    sort_keys=True,
                    default=str,
                )
                ns_selector = None if raw is None else json.dumps(raw, sort_keys=True, default=str)
                out.append(((kind, ns, identity, term.weight), term, ns_selector))
        parsed = tuple(out)
        if len(self._parsed) > 4096:
            self._parsed.clear()
        self._parsed[(ns, fingerprint)] = parsed
        return parsed

    def _add_node(self, info: NodeInfo) -> _NodeEntry:
        entry = _NodeEntry(info.generation)
        labels = info.labels
        for pod in info.pods:
            ns = pod_namespace(pod)
            entry.namespaces[ns] += 1
            if is_terminating(pod):
                entry.terminating.append((ns, pod_labels(pod)))
            if not as_dict(pod.get("spec")).get("affinity"):
                continue
            for key, term, ns_selector in self._parse(pod):
                value = labels.get(term.topology_key)
                if term.topology_key not in labels or not isinstance(value, str):
                    continue
                group = self.groups[key[0]].get(key)
                if group is None:
                    group = self._new_group(key, term, ns_selector)
                group.counts[value] = group.counts.get(value, 0) + 1
                entry.adds.append((key, value))
        self.namespaces.update(entry.namespaces)
        if entry.terminating:
            self._terminating[info.name] = entry.terminating
        return entry

    def _take_back(self, name: str, entry: _NodeEntry) -> None:
        self._terminating.pop(name, None)
        for key, value in entry.adds:
            group = self.groups[key[0]][key]
            left = group.counts[value] - 1
            if left:
                group.counts[value] = left
            else:
                del group.counts[value]
                if not group.counts:
                    self._drop_group(key, group)
        self.namespaces.subtract(entry.namespaces)
        for ns in entry.namespaces:
            if self.namespaces[ns] <= 0:
                del self.namespaces[ns]


def _raw_ns_selector(pod: RawObj, kind: str, i: int) -> Any:
    affinity = as_dict(as_dict(pod.get("spec")).get("affinity"))
    side = as_dict(affinity.get("podAffinity" if "AntiAffinity" not in kind else "podAntiAffinity"))
    field = (
        "requiredDuringSchedulingIgnoredDuringExecution"
        if kind.startswith("required")
        else "preferredDuringSchedulingIgnoredDuringExecution"
    )
    items = side.get(field)
    item = as_dict(items[i]) if isinstance(items, list) and i < len(items) else {}
    if kind.startswith("preferred"):
        item = as_dict(item.get("podAffinityTerm"))
    return item.get("namespaceSelector")


def counts_by_topology(
    per_node: Mapping[str, int],
    keys: Iterable[str],
    snapshot: Snapshot,
    into: dict[tuple[str, str], int],
) -> None:
    """Add `per_node` (node -> matching pods) into (topology key, node's value) -> count
    for each of `keys` the node carries (nodes the snapshot does not list add nothing)."""
    nodes = snapshot.nodes
    keys = tuple(keys)
    for node, count in per_node.items():
        info = nodes.get(node)
        if info is None or not count:
            continue
        labels = info.labels
        for key in keys:
            value = labels.get(key)
            if key in labels and isinstance(value, str):
                pair = (key, value)
                left = into.get(pair, 0) + count
                if left:
                    into[pair] = left
                else:
                    del into[pair]


def matching_pods_per_node(
    namespaces: Iterable[str],
    selector: RawObj | None,
    matches: Callable[[Mapping[str, str]], bool],
    snapshot: Snapshot,
    index: ExistingTermsIndex,
) -> dict[str, int]:
    """Node -> bound pods (terminating ones included) of `namespaces` matching `selector`.

    The live pods come from the snapshot's incremental selector counts; the
    terminating ones, which those counts leave out, from the index.
    """
    out: dict[str, int] = {}
    if selector is None:
        return out
    wanted = set(namespaces)
    for ns in wanted:
        for node, count in snapshot.match_counts(ns, selector).items():
            out[node] = out.get(node, 0) + count
    for node, ns, labels in index.terminating_pods():
        if ns in wanted and matches(labels):
            out[node] = out.get(node, 0) + 1
    return out


def all_namespaces(snapshot: Snapshot, index: ExistingTermsIndex) -> set[str]:
    """Every namespace known: listed Namespaces and those with bound pods."""
    return set(snapshot.namespaces) | set(index.namespaces)


def reads_all_namespaces(terms: Iterable[AffinityTerm]) -> bool:
    """Whether any of the terms needs the list of every namespace: it selects them all,
    or has a namespaceSelector to unroll (merge_namespace_selector)."""
    return any(t.selects_all_namespaces or t.namespace_selector is not match_nothing for t in terms)
