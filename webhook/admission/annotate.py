"""Dry-run placement annotations: the mutation step and its 32 KiB rendering.

`topospread.io/selected-node` holds the node name ("" when unschedulable);
`topospread.io/placement` holds a JSON summary, with `notScheduled` when the scheduler
never runs a cycle for the pod (another scheduler's schedulerName, scheduling gates,
resource claims: placement.not_scheduled), and for an unschedulable pod whether a new
node of some node group would take it (`scaleUp`, `scaleUpReason`: docs/pending.md).
Both are deterministic (no timestamps, no random ids) so a reinvoked webhook writes
the same patch, and their total size stays under ANNOTATION_BUDGET whatever the
cluster size.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from webhook.admission.context import MutationContext
from webhook.api.kube import RawObj, as_created, meta
from webhook.api.pods import pod_key
from webhook.config import Settings
from webhook.scheduler import placement
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.scaleup import Pending, ScaleUp, diagnose, node_groups

log = logging.getLogger("topospread.inject")

SELECTED_NODE = "topospread.io/selected-node"
PLACEMENT = "topospread.io/placement"
DRY_RUN = "topospread.io/dry-run"

# kube-apiserver caps the total size of all annotations of an object at 256 KiB;
# ours promise to stay under 32 KiB (interfaces.md), so leave margin for the keys.
ANNOTATION_BUDGET = 32 * 1024 - 512
TOP_NODES = 10
# Templates listed in `scaleUp` (a node group per zone: a handful in most clusters).
SCALE_UP_ENTRIES = 20

_PLACEMENT_PATH = f"metadata.annotations[{PLACEMENT}]"
NO_STATE = "no cluster state (the source has not synced yet, or none is configured)"


class _Verdict(Protocol):
    name: str
    feasible: bool
    scores: Mapping[str, int]
    score: int


class PlacementLike(Protocol):
    """The parts of scheduling.placement.Placement this module reads."""

    @property
    def nodes(self) -> Any: ...
    @property
    def selected_node(self) -> str | None: ...
    @property
    def reasons(self) -> Mapping[str, int]: ...
    @property
    def distribution(self) -> Mapping[str, Mapping[str, int]]: ...


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _top(nodes: Any) -> list[dict[str, Any]]:
    """The best feasible nodes by the weighted score kube-scheduler ranks by (ties by name)."""
    scored = [(-int(v.score), v.name) for v in nodes if v.feasible]
    scored.sort()
    return [{"node": name, "score": -neg} for neg, name in scored[:TOP_NODES]]


def _fit_distribution(
    summary: dict[str, Any], distribution: Mapping[str, Mapping[str, int]], budget: int
) -> None:
    """Put as much of the distribution in `summary` as fits in `budget` bytes.

    Domains are kept in order of count (most pods first), then name, so a cut
    keeps the domains that say most about the spread; what is cut is counted
    in `omittedDomains` so the reader knows the map is partial.
    """
    ordered = {
        key: sorted(domains.items(), key=lambda kv: (-kv[1], kv[0]))
        for key, domains in sorted(distribution.items())
    }
    full = {key: dict(items) for key, items in ordered.items()}
    summary["distribution"] = full
    if len(_dumps(summary).encode()) <= budget:
        return
    # Binary search the per-key domain limit that fits.
    lo, hi = 0, max((len(items) for items in ordered.values()), default=0)
    best: tuple[dict[str, dict[str, int]], dict[str, int]] = ({k: {} for k in ordered}, {})
    while lo <= hi:
        mid = (lo + hi) // 2
        dist = {key: dict(items[:mid]) for key, items in ordered.items()}
        omitted = {key: len(items) - mid for key, items in ordered.items() if len(items) > mid}
        summary["distribution"], summary["omittedDomains"] = dist, omitted
        if len(_dumps(summary).encode()) <= budget:
            best, lo = (dist, omitted), mid + 1
        else:
            hi = mid - 1
    summary["distribution"], summary["omittedDomains"] = best


def _preemption(preemption: Any, budget: int) -> dict[str, Any] | None:
    """`{"node", "victims"}` of the pod's preemption (None when it has none), the victims
    cut to `budget` bytes, the rest counted in `omittedVictims`."""
    if preemption is None:
        return None
    out: dict[str, Any] = preemption.to_json()
    victims = list(out["victims"])
    while victims and len(_dumps(out).encode()) > budget:
        victims = victims[: len(victims) // 2]
        out["victims"] = victims
        out["omittedVictims"] = len(preemption.victims) - len(victims)
    return out


def _scale_up(summary: dict[str, Any], scale_up: ScaleUp) -> None:
    """`scaleUp` (the templates where a new node would take the pod, the first
    SCALE_UP_ENTRIES; `scaleUpOmitted` counts the rest) and `scaleUpReason` (the
    diagnosis' line, at most 256 characters)."""
    fits = scale_up.to_json()
    summary["scaleUp"] = fits[:SCALE_UP_ENTRIES]
    if len(fits) > SCALE_UP_ENTRIES:
        summary["scaleUpOmitted"] = len(fits) - SCALE_UP_ENTRIES
    line = scale_up.line()
    summary["scaleUpReason"] = line if len(line) <= 256 else line[:253] + "..."


def placement_summary(
    placement: PlacementLike,
    budget: int = ANNOTATION_BUDGET,
    scale_up: ScaleUp | None = None,
    kubernetes_version: str | None = None,
) -> dict[str, Any]:
    """The `topospread.io/placement` JSON object, cut to fit `budget` bytes; with
    `scale_up` (an unschedulable pod's diagnosis), its scaleUp keys; with
    `kubernetes_version`, the release modelled (`kubernetesVersion`)."""
    nodes = list(placement.nodes)
    summary: dict[str, Any] = {
        "selectedNode": placement.selected_node,
        "feasible": sum(1 for v in nodes if v.feasible),
        "nodes": len(nodes),
        "top": _top(nodes),
        "reasons": dict(sorted(placement.reasons.items())),
        "preemption": _preemption(getattr(placement, "preemption", None), budget // 4),
    }
    # Optional on PlacementLike: only placement.Placement says why no cycle ran.
    held = getattr(placement, "not_scheduled", None)
    if held is not None:
        summary["notScheduled"] = held.to_json()
    if scale_up is not None:
        _scale_up(summary, scale_up)
    if kubernetes_version is not None:
        summary["kubernetesVersion"] = kubernetes_version
    # Reasons are few (one per failing plugin and taint); names of taints could be long,
    # so cap each reason string defensively before fitting the distribution.
    if len(_dumps(summary).encode()) > budget // 2:
        summary["reasons"] = {r[:256]: c for r, c in list(summary["reasons"].items())[:20]}
    _fit_distribution(summary, placement.distribution, budget)
    return summary


def placement_annotations(
    placement: PlacementLike,
    scale_up: ScaleUp | None = None,
    kubernetes_version: str | None = None,
) -> dict[str, str]:
    """Both dry-run annotations for `placement`, together under ANNOTATION_BUDGET bytes."""
    selected = placement.selected_node or ""
    budget = ANNOTATION_BUDGET - len(selected.encode()) - len(SELECTED_NODE) - len(PLACEMENT)
    summary = placement_summary(placement, budget, scale_up, kubernetes_version)
    return {SELECTED_NODE: selected, PLACEMENT: _dumps(summary)}


def _diagnosis(
    pod: RawObj, snapshot: Snapshot, settings: Settings, framework: placement.Framework
) -> ScaleUp:
    """Whether a new node of some node group would take the unschedulable pod."""
    groups = node_groups(snapshot, settings.node_group_labels)
    ref = pod_key(pod)
    return diagnose([Pending(ref, pod, framework)], snapshot, groups).verdicts[ref]


def wants_dry_run(pod: Mapping[str, Any], request_dry_run: bool) -> bool:
    """True when the request is a dry run or the pod asks for placement annotations."""
    if request_dry_run:
        return True
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and annotations.get(DRY_RUN) == "true"


def annotate_placement(pod: RawObj, ctx: MutationContext) -> list[str]:
    """Write topospread.io/selected-node and topospread.io/placement on a created Pod
    in a dry run (request.dryRun) or carrying topospread.io/dry-run: "true".

    The pod is placed as the earlier steps left it: defaults injected, selectors
    merged. Deterministic: a reinvoked webhook writes the same values.
    """
    if not ctx.created_pod(pod) or not wants_dry_run(pod, ctx.dry_run):
        return []
    if ctx.snapshot is None:
        return [f"{_PLACEMENT_PATH}: placement annotations not written: {NO_STATE}"]
    framework = ctx.settings.framework_for(pod)
    try:
        created = as_created(pod, ctx.namespace)
        # Another scheduler's pod (no profile: framework None), a gated pod, a pod with
        # resource claims: the annotation says why instead of placing it.
        why = placement.not_scheduled(created, framework)
        scale_up = None
        if why is not None:
            decision = placement.Placement.held(created, why)
        else:
            decision = placement.place(created, ctx.snapshot, framework=framework)
            if (
                framework is not None
                and decision.selected_node is None
                and decision.preemption is None
                and decision.error is None
            ):
                scale_up = _diagnosis(created, ctx.snapshot, ctx.settings, framework)
        written = placement_annotations(
            decision, scale_up, str(ctx.settings.modelled_version)
        )
    except Exception:
        log.exception("placement failed for pod %r", meta(pod).get("name"))
        return [
            f"{_PLACEMENT_PATH}: placement annotations not written because of an "
            "internal error in the cluster model"
        ]
    metadata = pod.get("metadata")
    if not isinstance(metadata, dict):
        metadata = pod["metadata"] = {}
    annotations = metadata.get("annotations")
    if annotations is None:
        annotations = metadata["annotations"] = {}
    if isinstance(annotations, dict):  # any other type is the API server's to reject
        annotations.update(written)
    return []
