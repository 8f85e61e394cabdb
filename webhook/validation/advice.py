"""Warnings: what the API allows but users regret.

Upstream's own topology spread warnings (pkg/api/pod/warnings.go) come first, then
our advice. Each warning is an `Advice`: a stable id (WARNING_IDS, listed in
docs/rules.md), the field path and the message; its text is `<field>: <message>`,
what /validate returns in response.warnings. Pure: raw JSON in, Advice out.
Only constraints whose own fields validate are advised on: errors come first.

Suppression: the annotation `topospread.io/ignore: <id>[,<id>...]` on the object
(or on its pod template) drops those warnings, for the webhook and `check` alike.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api.constraint import DO_NOT_SCHEDULE
from webhook.api.kube import (
    REGION,
    WELL_KNOWN_TOPOLOGY_KEYS,
    ZONE,
    PodTemplate,
    RawObj,
    pod_template,
    string_labels,
)
from webhook.api.names import (
    selector_keys,
    selector_selects,
    validate_label_name,
    validate_label_selector,
)
from webhook.validation.rules import validate_constraints

__all__ = [
    "CONTROLLER_POD_LABELS",
    "FAILURE_DOMAIN_KEYS",
    "DEPRECATED_NODE_LABELS",
    "IGNORE_ANNOTATION",
    "REVISION_LABEL",
    "WARNING_IDS",
    "Advice",
    "counts_revisions_together",
    "did_you_mean",
    "ignored_ids",
    "object_advice",
    "object_warnings",
    "template_advice",
]

# pkg/api/node/util.go deprecatedNodeLabels, worded as upstream warns about them.
DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": (
        'deprecated since v1.17; use "topology.kubernetes.io/region" instead'
    ),
    "failure-domain.beta.kubernetes.io/zone": (
        'deprecated since v1.17; use "topology.kubernetes.io/zone" instead'
    ),
    "beta.kubernetes.io/instance-type": (
        'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead'
    ),
}

# Labels a controller adds to the pods it creates from a template: a
# matchLabelKeys entry naming one of them is not missing on the real pods.
CONTROLLER_POD_LABELS: dict[str, frozenset[str]] = {
    "Deployment": frozenset({"pod-template-hash"}),
    "StatefulSet": frozenset(
        {
            "controller-revision-hash",
            "statefulset.kubernetes.io/pod-name",
            "apps.kubernetes.io/pod-index",
        }
    ),
    "DaemonSet": frozenset({"controller-revision-hash", "pod-template-generation"}),
    "Job": frozenset(
        {
            "controller-uid",
            "job-name",
            "batch.kubernetes.io/controller-uid",
            "batch.kubernetes.io/job-name",
            "batch.kubernetes.io/job-completion-index",
        }
    ),
}
CONTROLLER_POD_LABELS["CronJob"] = CONTROLLER_POD_LABELS["Job"]

# The label the Deployment controller gives each ReplicaSet's pods: the hash of the pod
# template, one value per revision.
REVISION_LABEL = "pod-template-hash"

# The annotation that silences warnings by id, on an object or its pod template.
IGNORE_ANNOTATION = "topospread.io/ignore"

# Every warning id, with what it means (docs/rules.md lists the same). Stable: an id is
# never renamed or reused, so `--ignore` lists and annotations keep working.
WARNING_IDS: dict[str, str] = {
    "deprecated-topology-key": "topologyKey is a deprecated node label (upstream's warning)",
    "null-label-selector": "a null labelSelector matches no pod (upstream's warning)",
    "invalid-topology-key": "topologyKey is not a valid label key, so no node has it",
    "unknown-topology-key": (
        "topologyKey is not a well-known topology label (or, with cluster state, "
        "no node carries it)"
    ),
    "empty-label-selector": "labelSelector {} counts every pod of the namespace",
    "selector-misses-pod": "labelSelector does not select the pod's own labels (ghost pods)",
    "match-label-key-missing": "a matchLabelKeys entry the pod has no label for",
    "match-label-key-in-selector": (
        "a matchLabelKeys entry also in labelSelector: kube-apiserver v1.34+ rejects each pod"
    ),
    "match-label-key-duplicated": (
        "a matchLabelKeys entry listed twice: kube-apiserver v1.34+ rejects each pod"
    ),
    "outage-blocks-replacements": (
        "a DoNotSchedule constraint on a failure domain (zone, region, or a key the config "
        "declares) with the default nodeTaintsPolicy: after an outage its replacements "
        "cannot be scheduled"
    ),
    "revisions-counted-together": (
        "a Deployment's DoNotSchedule constraint counts old and new revisions together "
        "(pod-template-hash in neither labelSelector nor matchLabelKeys)"
    ),
    "unschedulable": "with cluster state: no node can take the pod because of its constraints",
    "internal-error": "topospread could not check the object",
}

# Failure domains that an outage takes down as a whole: their nodes stay, tainted
# unreachable, and with nodeTaintsPolicy unset still count as domains (the config's
# topologyKeys are failure domains too).
FAILURE_DOMAIN_KEYS = frozenset(
    {
        ZONE,
        REGION,
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)

# kube-apiserver merges matchLabelKeys into each created pod's labelSelector from here.
_MERGE_SINCE = (1, 34)


@dataclass(frozen=True)
class Advice:
    """One warning: its stable id, the field it is about and what is wrong there."""

    id: str
    field: str
    message: str

    def text(self) -> str:
        """The warning as /validate returns it: the field path first."""
        return f"{self.field}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "field": self.field, "message": self.message}


_ID_SPLIT = re.compile(r"[\s,]+")


def ignored_ids(obj: RawObj, template: PodTemplate | None = None) -> frozenset[str]:
    """The warning ids the object's (or its pod template's) ignore annotation names."""
    ids: set[str] = set()
    metas = [obj.get("metadata") if isinstance(obj, dict) else None]
    if template is not None:
        metas.append(template.metadata)
    for meta in metas:
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        value = annotations.get(IGNORE_ANNOTATION) if isinstance(annotations, dict) else None
        if isinstance(value, str):
            ids.update(x for x in _ID_SPLIT.split(value) if x)
    return frozenset(ids)


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The one candidate `word` is most probably a typo of, None when none is close."""
    pool = sorted({c for c in candidates if c != word})
    close = difflib.get_close_matches(word, pool, n=1, cutoff=0.8)
    return close[0] if close else None


def _before_merge(server_version: tuple[int, int] | None) -> bool:
    """True when the target API server does not merge matchLabelKeys (before v1.34)."""
    try:
        return server_version is not None and tuple(server_version) < _MERGE_SINCE
    except TypeError:
        return False


def object_warnings(obj: RawObj, *, separate_revisions: bool = False) -> list[str]:
    """Upstream's topology spread warnings, then our advice; each starts with the field path.

    Only constraints whose own fields validate are advised on: errors come first.
    Warnings the object's `topospread.io/ignore` annotation names are left out.
    `separate_revisions`: see template_advice.
    """
    return [a.text() for a in object_advice(obj, separate_revisions=separate_revisions)]


def object_advice(
    obj: RawObj,
    *,
    topology_keys: Iterable[str] = (),
    node_label_keys: frozenset[str] | None = None,
    server_version: tuple[int, int] | None = None,
    separate_revisions: bool = False,
) -> list[Advice]:
    """object_warnings as Advice; see template_advice for the keyword arguments."""
    tpl = pod_template(obj)
    if tpl is None:
        return []
    return template_advice(
        obj,
        tpl,
        topology_keys=topology_keys,
        node_label_keys=node_label_keys,
        server_version=server_version,
        separate_revisions=separate_revisions,
    )


def template_advice(
    obj: RawObj,
    tpl: PodTemplate,
    *,
    topology_keys: Iterable[str] = (),
    node_label_keys: frozenset[str] | None = None,
    server_version: tuple[int, int] | None = None,
    controller_labels: Iterable[str] | None = None,
    separate_revisions: bool = False,
) -> list[Advice]:
    """The warnings on the pod template `tpl` of `obj`, the ignored ids left out.

    topology_keys: keys the user declared as topology labels of their nodes (no
    unknown-topology-key for them); node_label_keys: every label key some node of the
    cluster carries, None without cluster state: given, the topology-key warning
    fires exactly when no node carries the key; server_version: the target API
    server (None: newest); the matchLabelKeys merge advice is for v1.34+, whose
    create-time merge an older server does not do (it refuses such a template
    itself). controller_labels: the labels the controller adds to each pod (default:
    CONTROLLER_POD_LABELS of the kind). separate_revisions: the webhook's
    policy.separateRevisions is on, so /mutate adds pod-template-hash to each pod of a
    Deployment itself: no revisions-counted-together advice then.
    """
    constraints = tpl.spec.get("topologySpreadConstraints")
    if not isinstance(constraints, list):
        return []
    path = tpl.spec_path + ".topologySpreadConstraints"
    labels = string_labels(tpl.metadata.get("labels"))
    added = (
        frozenset(controller_labels)
        if controller_labels is not None
        else CONTROLLER_POD_LABELS.get(tpl.kind, frozenset())
    )
    known = _KnownKeys(frozenset(topology_keys), node_label_keys)
    merges = not _before_merge(server_version)
    invalid = _invalid_indices(constraints, path, server_version)
    rolls = not separate_revisions and _rolls_revisions_together(obj, tpl)
    warnings: list[Advice] = []
    for i, raw in enumerate(constraints):
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            continue
        sub = f"{path}[{i}]"
        key = raw.get("topologyKey")
        sel = raw.get("labelSelector")
        # pkg/api/pod/warnings.go
        if isinstance(key, str) and key in DEPRECATED_NODE_LABELS:
            warnings.append(
                Advice(
                    "deprecated-topology-key",
                    f"{sub}.topologyKey",
                    f"{key} is {DEPRECATED_NODE_LABELS[key]}",
                )
            )
        if sel is None:
            warnings.append(
                Advice(
                    "null-label-selector",
                    f"{sub}.labelSelector",
                    "a null labelSelector results in matching no pod",
                )
            )
        warnings.extend(_advice(raw, sub, tpl.kind, labels, added, known, merges))
        if i not in invalid:
            outage = _outage_advice(raw, sub, known)
            if outage is not None:
                warnings.append(outage)
            if rolls:
                revisions = _revisions_advice(raw, sub, labels)
                if revisions is not None:
                    warnings.append(revisions)
    ignored = ignored_ids(obj, tpl)
    return [a for a in warnings if a.id not in ignored]


@dataclass(frozen=True)
class _KnownKeys:
    """What is known about topology keys: declared ones, and the nodes' (None: no nodes)."""

    declared: frozenset[str]
    on_nodes: frozenset[str] | None

    def candidates(self) -> set[str]:
        return {
            *WELL_KNOWN_TOPOLOGY_KEYS,
            *self.declared,
            *(self.on_nodes or ()),
        }


def _hint(key: str, known: _KnownKeys) -> str:
    if key in WELL_KNOWN_TOPOLOGY_KEYS or key in known.declared:
        return ""  # a real key, only missing from the nodes: no typo to point at
    near = did_you_mean(key, known.candidates())
    return f"; did you mean {near}?" if near else ""


def _topology_key_advice(key: Any, sub: str, when: Any, known: _KnownKeys) -> Advice | None:
    if not isinstance(key, str) or not key:
        return None
    unschedulable = " and cannot run this pod" if when == DO_NOT_SCHEDULE else ""
    if validate_label_name(key, ""):
        # kube-apiserver does not check the format of a pod's topologyKey; no node can carry it.
        return Advice(
            "invalid-topology-key",
            f"{sub}.topologyKey",
            f"{key} is not a valid label key, so no node has it; "
            f"every node is left out of the spread{unschedulable}{_hint(key, known)}",
        )
    if known.on_nodes is not None:
        if key in known.on_nodes:
            return None
        return Advice(
            "unknown-topology-key",
            f"{sub}.topologyKey",
            f"no node of the cluster has the label {key}; every node is left out of the "
            f"spread{unschedulable}{_hint(key, known)}",
        )
    if key in WELL_KNOWN_TOPOLOGY_KEYS or key in DEPRECATED_NODE_LABELS or key in known.declared:
        return None
    return Advice(
        "unknown-topology-key",
        f"{sub}.topologyKey",
        f"{key!s} is not a well-known topology label "
        f"({', '.join(WELL_KNOWN_TOPOLOGY_KEYS)}); nodes without it are left out of the spread"
        f"{unschedulable}{_hint(key, known)}",
    )


def _invalid_indices(
    constraints: list[Any], path: str, server_version: tuple[int, int] | None
) -> set[int]:
    """The constraints with a field the outage advice reads that kube-apiserver (of
    `server_version`) would reject (matchLabelKeys aside: its rules depend on how the
    object is created, and the advice does not read it)."""
    errors = validate_constraints(constraints, path, server_version=server_version)
    read = tuple(f".{f}" for f in _OUTAGE_FIELDS)
    prefix = f"{path}["
    bad = set()
    # One look at each error, by the index its field names (not every error per
    # constraint: 20,000 duplicate constraints give as many errors).
    for e in errors:
        if not e.field.startswith(prefix):
            continue
        index, closed, rest = e.field[len(prefix) :].partition("]")
        if closed and index.isdigit() and (rest == "" or rest.startswith(read)):
            bad.add(int(index))
    return {i for i in bad if i < len(constraints)}


# The fields of a constraint _outage_advice reads (an error in one of them: no advice).
_OUTAGE_FIELDS = (
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeTaintsPolicy",
)


def _outage_advice(raw: Mapping[str, Any], sub: str, known: _KnownKeys) -> Advice | None:
    """A DoNotSchedule constraint over a failure domain with nodeTaintsPolicy unset: when
    the domain fails, the node lifecycle controller taints its nodes
    node.kubernetes.io/unreachable, but they still count as a domain holding 0 matching
    pods, so no replacement fits anywhere else (KEP-3094, kubernetes#106127). An
    explicit `nodeTaintsPolicy: Ignore` is taken as chosen; a constraint with a nil
    selector counts no pod and cannot block. Only on constraints kube-apiserver accepts
    (the caller checks)."""
    key = raw.get("topologyKey")
    if raw.get("labelSelector") is None:
        return None
    if raw.get("whenUnsatisfiable") != DO_NOT_SCHEDULE or "nodeTaintsPolicy" in raw:
        return None
    if not isinstance(key, str) or (key not in FAILURE_DOMAIN_KEYS and key not in known.declared):
        return None
    return Advice(
        "outage-blocks-replacements",
        f"{sub}.nodeTaintsPolicy",
        # At most 256 runes with the longest path (a CronJob's), as a warning must be.
        "unset (Ignore): a failed domain's nodes, tainted unreachable, still count with 0 "
        "pods, so replacements stay Pending; Honor includes only the nodes the pod tolerates",
    )


def _rolls_revisions_together(obj: RawObj, tpl: PodTemplate) -> bool:
    """Whether old and new pods of `obj` live side by side during a rollout: a
    Deployment whose strategy is RollingUpdate (or unset, which the API defaults to
    RollingUpdate). Recreate scales every old ReplicaSet to 0 and waits until their pods
    are gone before the new ReplicaSet creates any (the Deployment controller's
    rolloutRecreate), so no constraint ever sees two revisions at once. A StatefulSet
    or a DaemonSet replaces its pods in place, one at a time, without a second
    ReplicaSet: its revisions are not what this advice is about."""
    if tpl.kind != "Deployment" or obj.get("kind") != "Deployment":
        return False
    spec = obj.get("spec")
    strategy = spec.get("strategy") if isinstance(spec, dict) else None
    kind = strategy.get("type") if isinstance(strategy, dict) else None
    return kind != "Recreate"


def counts_revisions_together(constraint: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a constraint counts every revision of the pods with `labels` together: its
    labelSelector (a mapping, taken as valid) selects those labels and names
    pod-template-hash nowhere, neither in labelSelector nor in matchLabelKeys (also
    what /mutate's revisions step checks before adding the key)."""
    sel = constraint.get("labelSelector")
    if not isinstance(sel, Mapping):
        return False
    mlk = constraint.get("matchLabelKeys")
    if isinstance(mlk, list) and REVISION_LABEL in mlk:
        return False
    label_keys, expr_keys = selector_keys(sel)
    if REVISION_LABEL in label_keys or REVISION_LABEL in expr_keys:
        return False
    return selector_selects(sel, labels)


def _revisions_advice(
    raw: Mapping[str, Any], sub: str, labels: Mapping[str, str]
) -> Advice | None:
    """A DoNotSchedule constraint of a rolling Deployment that counts old and new pods
    together: during a rollout the scheduler places each new pod against the sum of both
    revisions, then the ReplicaSet controller deletes old pods by its topology-blind
    ranking, so the new revision alone can end skewed, and a surge pod whose only
    allowed domains are full stays Pending until the progress deadline. Counted
    together means the selector selects the template's own pods (otherwise it counts
    other workloads and the revisions do not matter) and names pod-template-hash
    nowhere: neither in labelSelector (any mention is taken as the author's choice) nor
    in matchLabelKeys. ScheduleAnyway constraints only score, so they skew but never
    stall: not warned. Only on constraints kube-apiserver accepts (the caller checks)."""
    if raw.get("whenUnsatisfiable") != DO_NOT_SCHEDULE:
        return None
    if not counts_revisions_together(raw, labels):
        return None
    return Advice(
        "revisions-counted-together",
        f"{sub}.matchLabelKeys",
        # At most 256 runes with an eleventh constraint's path, as a warning must be.
        "add pod-template-hash: a rollout spreads new pods together with old ones, then "
        "deletes old ones topology-blind; the new revision can end skewed and a surge pod "
        "stay Pending, stalling it",
    )


def _advice(
    raw: Mapping[str, Any],
    sub: str,
    kind: str,
    labels: Mapping[str, str],
    controller_labels: frozenset[str],
    known: _KnownKeys,
    merges: bool,
) -> list[Advice]:
    out: list[Advice] = []
    sel = raw.get("labelSelector")
    mlk = raw.get("matchLabelKeys")
    keys = [k for k in mlk if isinstance(k, str)] if isinstance(mlk, list) else []
    label_keys, expr_keys = selector_keys(sel)
    in_selector = set(label_keys) | set(expr_keys)
    topology = _topology_key_advice(
        raw.get("topologyKey"), sub, raw.get("whenUnsatisfiable"), known
    )
    if topology is not None:
        out.append(topology)
    selector_ok = isinstance(sel, Mapping) and not validate_label_selector(sel, "")
    if selector_ok:
        assert isinstance(sel, Mapping)
        if not sel.get("matchLabels") and not sel.get("matchExpressions") and not keys:
            out.append(
                Advice(
                    "empty-label-selector",
                    f"{sub}.labelSelector",
                    "an empty labelSelector selects every pod in the namespace, "
                    "so unrelated pods are counted in the spread",
                )
            )
        elif not selector_selects(sel, labels):
            out.append(
                Advice(
                    "selector-misses-pod",
                    f"{sub}.labelSelector",
                    "does not select this pod's own labels; the constraint "
                    "counts other pods but never this pod or its replicas, which can then pile "
                    "up in one domain (ghost pods)",
                )
            )
    seen: set[str] = set()
    for j, k in enumerate(mlk if isinstance(mlk, list) else []):
        if not isinstance(k, str) or not k or validate_label_name(k, ""):
            continue
        field = f"{sub}.matchLabelKeys[{j}]"
        first = k not in seen
        seen.add(k)
        if k not in labels and k not in controller_labels:
            if first:
                out.append(
                    Advice(
                        "match-label-key-missing",
                        field,
                        f"the pod has no label {k}; the key is skipped and narrows nothing",
                    )
                )
            continue
        if kind == "Pod" or not isinstance(sel, Mapping) or not merges:
            continue
        if k in labels and k in in_selector and first:
            out.append(
                Advice(
                    "match-label-key-in-selector",
                    field,
                    f"{k} is also in labelSelector; kube-apiserver "
                    "v1.34+ merges it into labelSelector when it creates each pod and then "
                    "rejects the pod (exists in both matchLabelKeys and labelSelector)",
                )
            )
        elif not first:
            out.append(
                Advice(
                    "match-label-key-duplicated",
                    field,
                    f"{k} is listed twice in matchLabelKeys; kube-apiserver v1.34+ merges it "
                    "into labelSelector twice when it creates each pod and then rejects the "
                    "pod (exists in both matchLabelKeys and labelSelector)",
                )
            )
    return out
