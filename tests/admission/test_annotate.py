"""Dry-run placement annotations: shape, determinism and the 32 KiB cap."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from webhook.admission.annotate import (
    ANNOTATION_BUDGET,
    PLACEMENT,
    SELECTED_NODE,
    placement_annotations,
    wants_dry_run,
)
from webhook.scheduler.placement import Preemption


@dataclass(frozen=True)
class Verdict:
    name: str
    feasible: bool
    scores: dict[str, int] = field(default_factory=dict)
    score: int = 0


@dataclass(frozen=True)
class FakePlacement:
    nodes: list[Verdict]
    selected_node: str | None
    reasons: dict[str, int]
    distribution: dict[str, dict[str, int]]


def _small() -> FakePlacement:
    return FakePlacement(
        nodes=[
            Verdict("node-a", True, {"PodTopologySpread": 100}, 100),
            Verdict("node-b", True, {"PodTopologySpread": 50}, 50),
            Verdict("node-c", False),
        ],
        selected_node="node-a",
        reasons={"node(s) didn't match pod topology spread constraints": 1},
        distribution={"topology.kubernetes.io/zone": {"zone-a": 1, "zone-b": 2}},
    )


def test_small_placement_is_rendered_whole() -> None:
    """Every spec key is present and exact for a small cluster."""
    ann = placement_annotations(_small())
    assert ann[SELECTED_NODE] == "node-a"
    assert json.loads(ann[PLACEMENT]) == {
        "selectedNode": "node-a",
        "feasible": 2,
        "nodes": 3,
        "top": [{"node": "node-a", "score": 100}, {"node": "node-b", "score": 50}],
        "reasons": {"node(s) didn't match pod topology spread constraints": 1},
        "distribution": {"topology.kubernetes.io/zone": {"zone-a": 1, "zone-b": 2}},
        "preemption": None,
    }


def test_unschedulable_pod_gets_empty_selected_node() -> None:
    """No feasible node: selected-node is the empty string and selectedNode null."""
    p = FakePlacement([Verdict("n", False)], None, {"node(s) were unschedulable": 1}, {})
    ann = placement_annotations(p)
    assert ann[SELECTED_NODE] == ""
    assert json.loads(ann[PLACEMENT])["selectedNode"] is None


def test_top_keeps_ten_best_ties_by_name() -> None:
    """top lists at most ten feasible nodes, highest score first, ties broken by name."""
    nodes = [
        Verdict(f"n{i:02d}", True, {"PodTopologySpread": 100 - (i // 2)}, 100 - (i // 2))
        for i in range(30)
    ]
    top = json.loads(placement_annotations(FakePlacement(nodes, "n00", {}, {}))[PLACEMENT])["top"]
    assert [t["node"] for t in top] == [f"n{i:02d}" for i in range(10)]
    assert [t["score"] for t in top] == [100, 100, 99, 99, 98, 98, 97, 97, 96, 96]


@pytest.mark.parametrize("nodes", [5000, 20000])
def test_huge_cluster_stays_under_cap_and_says_what_it_cut(nodes: int) -> None:
    """A hostname distribution over thousands of nodes is cut to fit 32 KiB, the cut counted."""
    verdicts = [
        Verdict(f"node-{i:05d}", True, {"PodTopologySpread": i % 101}, i % 101)
        for i in range(nodes)
    ]
    dist = {
        "kubernetes.io/hostname": {f"node-{i:05d}": i % 7 for i in range(nodes)},
        "topology.kubernetes.io/zone": {"zone-a": 10, "zone-b": 11, "zone-c": 12},
    }
    ann = placement_annotations(FakePlacement(verdicts, "node-00100", {}, dist))
    size = sum(len(k) + len(v.encode()) for k, v in ann.items())
    assert size <= 32 * 1024
    summary = json.loads(ann[PLACEMENT])
    kept = summary["distribution"]["kubernetes.io/hostname"]
    assert summary["omittedDomains"]["kubernetes.io/hostname"] == nodes - len(kept)
    assert (
        summary["distribution"]["topology.kubernetes.io/zone"]
        == dist["topology.kubernetes.io/zone"]
    )
    # the domains kept are those with the most pods: nothing cut outranks what was kept
    cut = set(dist["kubernetes.io/hostname"]) - set(kept)
    assert max(dist["kubernetes.io/hostname"][d] for d in cut) <= min(kept.values())
    assert len(kept) > 100
    assert len(ann[PLACEMENT].encode()) <= ANNOTATION_BUDGET


def test_rendering_is_deterministic() -> None:
    """The same placement renders byte-identical annotations (reinvocation: same patch)."""
    a = _small()
    shuffled = FakePlacement(
        list(reversed(a.nodes)),
        a.selected_node,
        a.reasons,
        {"topology.kubernetes.io/zone": {"zone-b": 2, "zone-a": 1}},
    )
    assert placement_annotations(a) == placement_annotations(shuffled)


@pytest.mark.parametrize(
    ("pod", "dry_run", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"metadata": {"annotations": {"topospread.io/dry-run": "true"}}}, False, True),
        ({"metadata": {"annotations": {"topospread.io/dry-run": "True"}}}, False, False),
        ({"metadata": {"annotations": ["topospread.io/dry-run"]}}, False, False),
        ({"metadata": None}, False, False),
    ],
)
def test_wants_dry_run(pod: dict, dry_run: bool, expected: bool) -> None:
    assert wants_dry_run(pod, dry_run) is expected


@dataclass(frozen=True)
class PreemptingPlacement(FakePlacement):
    preemption: Preemption | None = None


def test_preemption_is_rendered_and_its_victims_cut_to_fit() -> None:
    """`preemption` carries the node and victims; thousands of victims are cut so the
    annotations stay under 32 KiB, the cut counted in omittedVictims."""
    few = Preemption("node-a", ("shop/batch-1", "shop/batch-2"))
    ann = placement_annotations(PreemptingPlacement([Verdict("node-a", False)], None, {}, {}, few))
    assert json.loads(ann[PLACEMENT])["preemption"] == {
        "node": "node-a",
        "victims": ["shop/batch-1", "shop/batch-2"],
    }
    many = Preemption("node-a", tuple(f"shop/batch-{i:05d}" for i in range(5000)))
    ann = placement_annotations(PreemptingPlacement([Verdict("node-a", False)], None, {}, {}, many))
    assert sum(len(k) + len(v.encode()) for k, v in ann.items()) <= 32 * 1024
    got = json.loads(ann[PLACEMENT])["preemption"]
    assert got["node"] == "node-a"
    assert 0 < len(got["victims"]) < 5000
    assert got["victims"] == list(many.victims[: len(got["victims"])])
    assert got["omittedVictims"] == 5000 - len(got["victims"])
