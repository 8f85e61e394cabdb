"""Properties of the scheduling model, checked with hypothesis.

- the incrementally kept matching counts always equal a recount from scratch;
- placing N replicas one by one never leaves a DoNotSchedule spread whose skew
  over the eligible domains exceeds maxSkew (starting from no matching pod).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.builders import DNS, ZONE, make_node, make_pod, selector
from webhook.scheduling.placement import simulate
from webhook.scheduling.snapshot import Snapshot

NODES = ["n0", "n1", "n2", "n3"]
NAMESPACES = ["default", "other"]
SELECTORS = [{"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {"tier": "y"}]

labels_st = st.dictionaries(
    st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b", "x", "y"]), max_size=2
)
add_st = st.tuples(
    st.just("add"),
    st.integers(0, 7),  # pod name
    st.sampled_from(NAMESPACES),
    st.sampled_from([*NODES, ""]),  # "" leaves the pod unbound
    labels_st,
    st.booleans(),  # terminating
    st.sampled_from(["Running", "Succeeded"]),
)
delete_st = st.tuples(st.just("delete"), st.integers(0, 7), st.sampled_from(NAMESPACES))
ops_st = st.lists(st.one_of(add_st, delete_st), max_size=40)


def _pod(name: int, ns: str, node: str, labels: dict[str, str], terminating: bool, phase: str):
    b = make_pod().name(f"p{name}").namespace(ns).labels(labels).phase(phase)
    if node:
        b = b.node(node)
    if terminating:
        b = b.terminating()
    return b.obj()


def _recount(live: dict[tuple[str, str], dict[str, Any]], ns: str, sel: dict[str, str]):
    """Counts straight from the pod objects, without the snapshot's index."""
    out: dict[str, int] = {}
    for (pod_ns, _), pod in live.items():
        meta, spec = pod["metadata"], pod["spec"]
        if pod_ns != ns or not spec.get("nodeName") or "deletionTimestamp" in meta:
            continue
        if pod["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        labels = meta.get("labels", {})
        if all(labels.get(k) == v for k, v in sel.items()):
            out[spec["nodeName"]] = out.get(spec["nodeName"], 0) + 1
    return out


@given(ops_st)
def test_incremental_counts_equal_a_full_recount(ops) -> None:
    snap = Snapshot.from_objects([make_node().name(n).obj() for n in NODES])
    for ns in NAMESPACES:  # build every index first, so every op updates it
        for sel in SELECTORS:
            snap.match_counts(ns, selector(sel))
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for op in ops:
        if op[0] == "add":
            _, name, ns, node, labels, terminating, phase = op
            pod = _pod(name, ns, node, labels, terminating, phase)
            live[(ns, f"p{name}")] = pod
            snap.upsert(pod)
        else:
            _, name, ns = op
            live.pop((ns, f"p{name}"), None)
            snap.delete({"kind": "Pod", "metadata": {"name": f"p{name}", "namespace": ns}})
    fresh = Snapshot.from_objects([make_node().name(n).obj() for n in NODES] + list(live.values()))
    for ns in NAMESPACES:
        for sel in SELECTORS:
            want = _recount(live, ns, sel)
            assert snap.match_counts(ns, selector(sel)) == want
            assert fresh.match_counts(ns, selector(sel)) == want
    bound = sum(
        1 for p in live.values() if p["spec"].get("nodeName") and p["status"]["phase"] == "Running"
    )
    assert snap.pod_count() == bound


cluster_st = st.lists(
    st.tuples(st.sampled_from(["za", "zb", "zc", "zd", None]), st.booleans()),
    min_size=1,
    max_size=8,
)


@given(
    cluster_st,
    st.integers(1, 3),
    st.integers(1, 12),
    st.one_of(st.none(), st.integers(1, 5)),
    st.lists(st.integers(0, 7), max_size=6),
)
def test_replicas_never_exceed_max_skew(cluster, max_skew, replicas, min_domains, others) -> None:
    """From no matching pod, every placement keeps max - min <= maxSkew over the
    eligible domains (zones of nodes carrying the key), whatever else fails."""
    objs: list[dict[str, Any]] = []
    for i, (zone, unschedulable) in enumerate(cluster):
        b = make_node().name(f"n{i}")
        if zone:
            b = b.zone(zone)
        if unschedulable:
            b = b.unschedulable()
        objs.append(b.obj())
    # Pods that do not match the selector may sit anywhere.
    for j, idx in enumerate(others):
        if idx < len(cluster):
            objs.append(make_pod().name(f"o{j}").label("app", "other").node(f"n{idx}").obj())
    extra = {"minDomains": min_domains} if min_domains is not None else {}
    pod = (
        make_pod()
        .name("web")
        .label("app", "web")
        .spread(max_skew, ZONE, DNS, selector({"app": "web"}), **extra)
        .obj()
    )
    sim = simulate(pod, Snapshot.from_objects(objs), replicas=replicas)
    domains = sim.distribution.get(ZONE, {})
    if domains:
        assert max(domains.values()) - min(domains.values()) <= max_skew
    placed = [p for p in sim.placements if p is not None]
    assert sum(domains.values()) == len(placed)
    # Placements only ever land on schedulable nodes with a zone.
    for name in placed:
        zone, unschedulable = cluster[int(name[1:])]
        assert zone is not None and not unschedulable
