"""Warnings: what the API allows but users regret.

Upstream's own topology spread warnings (pkg/api/pod/warnings.go) come first, then
our advice; each warning starts with the field path. Pure: raw JSON in, strings out.
Only constraints whose own fields validate are advised on: errors come first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.constraint import DO_NOT_SCHEDULE
from webhook.api.kube import WELL_KNOWN_TOPOLOGY_KEYS, RawObj, pod_template, string_labels
from webhook.api.names import (
    selector_keys,
    selector_selects,
    validate_label_name,
    validate_label_selector,
)

__all__ = ["CONTROLLER_POD_LABELS", "DEPRECATED_NODE_LABELS", "object_warnings"]

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



def object_warnings(obj: RawObj) -> list[str]:
    """Upstream's topology spread warnings, then our advice; each starts with the field path.

    Only constraints whose own fields validate are advised on: errors come first.
    """
    tpl = pod_template(obj)
    if tpl is None:
        return []
    constraints = tpl.spec.get("topologySpreadConstraints")
    if not isinstance(constraints, list):
        return []
    path = tpl.spec_path + ".topologySpreadConstraints"
    labels = string_labels(tpl.metadata.get("labels"))
    controller_labels = CONTROLLER_POD_LABELS.get(tpl.kind, frozenset())
    warnings: list[str] = []
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
            warnings.append(f"{sub}.topologyKey: {key} is {DEPRECATED_NODE_LABELS[key]}")
        if sel is None:
            warnings.append(f"{sub}.labelSelector: a null labelSelector results in matching no pod")
        warnings.extend(_advice(raw, sub, tpl.kind, labels, controller_labels))
    return warnings


def _advice(
    raw: Mapping[str, Any],
    sub: str,
    kind: str,
    labels: Mapping[str, str],
    controller_labels: frozenset[str],
) -> list[str]:
    out: list[str] = []
    key = raw.get("topologyKey")
    when = raw.get("whenUnsatisfiable")
    sel = raw.get("labelSelector")
    mlk = raw.get("matchLabelKeys")
    keys = [k for k in mlk if isinstance(k, str)] if isinstance(mlk, list) else []
    unschedulable = " and cannot run this pod" if when == DO_NOT_SCHEDULE else ""
    label_keys, expr_keys = selector_keys(sel)
    in_selector = set(label_keys) | set(expr_keys)
    if isinstance(key, str) and key and validate_label_name(key, ""):
        # kube-apiserver does not check the format of a pod's topologyKey; no node can carry it.
        out.append(
            f"{sub}.topologyKey: {key} is not a valid label key, so no node has it; "
            f"every node is left out of the spread{unschedulable}"
        )
    elif (
        isinstance(key, str)
        and key
        and key not in WELL_KNOWN_TOPOLOGY_KEYS
        and key not in DEPRECATED_NODE_LABELS
    ):
        text = (
            f"{sub}.topologyKey: {key!s} is not a well-known topology label "
            f"({', '.join(WELL_KNOWN_TOPOLOGY_KEYS)}); nodes without it are left out of the spread"
            f"{unschedulable}"
        )
        out.append(text)
    selector_ok = isinstance(sel, Mapping) and not validate_label_selector(sel, "")
    if selector_ok:
        assert isinstance(sel, Mapping)
        if not sel.get("matchLabels") and not sel.get("matchExpressions") and not keys:
            out.append(
                f"{sub}.labelSelector: an empty labelSelector selects every pod in the namespace, "
                "so unrelated pods are counted in the spread"
            )
        elif not selector_selects(sel, labels):
            out.append(
                f"{sub}.labelSelector: does not select this pod's own labels; the constraint "
                "counts other pods but never this pod or its replicas, which can then pile up "
                "in one domain (ghost pods)"
            )
    for j, k in enumerate(mlk if isinstance(mlk, list) else []):
        if not isinstance(k, str) or not k or validate_label_name(k, ""):
            continue
        if k not in labels and k not in controller_labels:
            out.append(
                f"{sub}.matchLabelKeys[{j}]: the pod has no label {k}; "
                "the key is skipped and narrows nothing"
            )
        elif kind != "Pod" and isinstance(sel, Mapping) and k in labels:
            if k in in_selector:
                out.append(
                    f"{sub}.matchLabelKeys[{j}]: {k} is also in labelSelector; kube-apiserver "
                    "v1.34+ merges it into labelSelector when it creates each pod and then "
                    "rejects the pod (exists in both matchLabelKeys and labelSelector)"
                )
    return out


