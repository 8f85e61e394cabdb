"""Properties of the workload drills on clusters shaped as real ones are
(tests/clusters.py: unscheduled and Pending pods, merged and unmerged selectors, nodes
without a zone, terminating pods, deletion costs somebody else set, other workloads'
matching pods, a rollout half done)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from tests.clusters import HASH, NS, ZONE, Drawn, examples, workload_clusters
from webhook.api.kube import named_controller_of as controller_of
from webhook.api.labels import compile_selector
from webhook.audit.drills.outcome import WhatIf
from webhook.audit.measure.spread import evaluate
from webhook.audit.state.inventory import ClusterState, pod_key
from webhook.audit.workloads.changes import run_workloads, with_deletion_costs
from webhook.audit.workloads.targets import WorkloadRequest, parse_target
from webhook.config import Settings

RawObj = dict[str, Any]
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
SETTINGS = examples(40)


def owned_by(pod: RawObj, rs: str) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.get("name") == rs


def active_after(drill: WhatIf, rs: str) -> int:
    """The pods ReplicaSet `rs` counts after the drill: running, unscheduled, waiting in
    the drill's queue, and those no scheduler here places."""
    state = drill.state
    live = [p for p in (*state.running, *state.unscheduled) if owned_by(p, rs)]
    waiting = [k for k, p in drill.replacements.items() if owned_by(p, rs)]
    return (
        len(live)
        + len(waiting)
        + sum(1 for k in drill.not_scheduled if k.startswith(f"{NS}/{rs}-"))
    )


def created_pods(drill: WhatIf) -> list[RawObj]:
    keys = {c["pod"] for change in drill.workload_changes for c in change["created"]}
    bound = [p for p in drill.state.running if pod_key(p) in keys]
    return bound + [p for k, p in drill.replacements.items() if k in keys]


@SETTINGS
@given(workload_clusters(), st.integers(0, 8), st.data())
def test_a_replicaset_scaled_to_n_keeps_n_active_pods_unscheduled_ones_going_first(
    c: Drawn, n: int, data: st.DataObject
) -> None:
    """After `--scale rs/shop/R=N` the ReplicaSet counts N active pods (bound,
    unscheduled or waiting), terminating pods neither counted nor deleted; a
    scale-down that keeps some deletes its unscheduled pods before any bound one."""
    rs = data.draw(st.sampled_from(c.revisions))
    state = ClusterState.from_objects(c.objects)
    unscheduled = {pod_key(p) for p in state.unscheduled if owned_by(p, rs)}
    terminating = {
        f"{NS}/{o['metadata']['name']}"
        for o in c.objects
        if o.get("kind") == "Pod" and o["metadata"].get("deletionTimestamp")
    }
    request = WorkloadRequest(scales=[(parse_target(f"rs/{NS}/{rs}"), n)], now=NOW)
    drill = run_workloads(state, request)
    (change,) = drill.workload_changes
    assert active_after(drill, rs) == n
    deleted = [d["pod"] for d in change["deleted"]]
    assert not set(deleted) & terminating
    before = sum(1 for p in (*state.running, *state.unscheduled) if owned_by(p, rs))
    if len(deleted) < before:
        # Ranked (when every pod goes, upstream deletes them in list order).
        first = deleted[: len(unscheduled)]
        assert set(first) == set(deleted) & unscheduled or set(first) <= unscheduled
    assert all(d["node"] is None for d in change["deleted"] if d["pod"] in unscheduled)
    event(f"unscheduled pods deleted: {len(set(deleted) & unscheduled)}")


def selects_itself(pod: RawObj) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(
        compile_selector(c["labelSelector"])(labels)
        for c in pod["spec"].get("topologySpreadConstraints") or []
    )


@SETTINGS
@given(workload_clusters(), st.integers(0, 9), st.booleans())
def test_every_new_pod_counts_itself(c: Drawn, n: int, rollout: bool) -> None:
    """A pod a scale-up or a rollout creates carries its own labels and a selector that
    selects them (merged once, with its own pod-template-hash), on clusters whose old
    pods' selectors were merged or not."""
    state = ClusterState.from_objects(c.objects)
    target = parse_target(f"deploy/{NS}/web")
    request = (
        WorkloadRequest(rollout=(target, None), now=NOW)
        if rollout
        else WorkloadRequest(scales=[(target, n)], now=NOW)
    )
    drill = run_workloads(state, request)
    fresh = created_pods(drill)
    for pod in fresh:
        assert selects_itself(pod), pod["spec"]["topologySpreadConstraints"]
        if c.hashed:
            exprs = pod["spec"]["topologySpreadConstraints"][0]["labelSelector"].get(
                "matchExpressions", []
            )
            assert {e["values"][0] for e in exprs if e["key"] == HASH} == {
                pod["metadata"]["labels"][HASH]
            }
    event(f"{len(fresh)} new pods, merged: {c.merged}, hashed: {c.hashed}")


@SETTINGS
@given(workload_clusters())
def test_a_rollout_counting_its_revision_alone_keeps_it_within_max_skew(c: Drawn) -> None:
    """With pod-template-hash in matchLabelKeys each new pod is placed against the new
    revision's counts only, so the new revision's zones never exceed maxSkew, whether
    the old pods' selectors were merged or not."""
    state = ClusterState.from_objects(c.objects)
    drill = run_workloads(
        state, WorkloadRequest(rollout=(parse_target(f"deploy/{NS}/web"), None), now=NOW)
    )
    if not c.hashed or not c.zones:
        return
    zone_of = {name: info.labels.get(ZONE) for name, info in drill.state.snapshot.nodes.items()}
    fresh = {pod_key(p) for p in created_pods(drill)}
    counts = dict.fromkeys(c.zones, 0)
    for p in drill.state.running:
        zone = zone_of.get(p["spec"]["nodeName"])
        if pod_key(p) in fresh and zone is not None:
            counts[zone] += 1
    assert max(counts.values()) - min(counts.values()) <= c.max_skew, counts
    event(f"stalled: {drill.stalled is not None}")


@SETTINGS
@given(workload_clusters(), st.integers(0, 8))
def test_with_deletion_costs_but_no_cost_is_the_drill_itself(c: Drawn, n: int) -> None:
    """The withDeletionCosts comparison plays the drill again on the same cluster, its
    unscheduled pods included: with no cost to add, it ends where the drill ends."""
    state = ClusterState.from_objects(c.objects)
    request = WorkloadRequest(scales=[(parse_target(f"deploy/{NS}/web"), n)], now=NOW)
    drill = run_workloads(state, request)
    after = drill.state
    web = [p for p in after.running if str(after.workload_of(p)) == f"Deployment {NS}/web"]
    plain = [
        entry.to_json()
        for w in evaluate(after, pods=web)
        if str(w.workload) == f"Deployment {NS}/web"
        for entry in w.constraints
    ]
    costs = with_deletion_costs(state, request, Settings(), costs_of=lambda *_: {})
    assert costs[f"Deployment {NS}/web"] == plain
