"""Properties of the scheduling model, checked with hypothesis.

- the incrementally kept matching counts always equal a recount from scratch;
- placing N replicas one by one never leaves a DoNotSchedule spread whose skew
  over the eligible domains exceeds maxSkew (starting from no matching pod);
- place() (which judges groups of alike nodes once and remembers filter
  outcomes across decisions) gives, node for node, what running every filter
  on every node and scoring the feasible ones one by one gives, before and
  after the cluster changes;
- explain() (the /validate foresight) says what a node-by-node look says, also
  after looks that ran out of their time budget partway.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    constraint,
    exists,
    make_node,
    make_pod,
    selector,
    with_affinity,
)
from tests.scheduler.frameworks import spread_only
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework import budget
from webhook.scheduler.framework.memo import memo_of
from webhook.scheduler.framework.runtime import filter as runtime_filter
from webhook.scheduler.framework.runtime import score as runtime_score
from webhook.scheduler.framework.runtime.framework import run_filter_plugins
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Code, CycleState
from webhook.scheduler.placement import (
    NodeVerdict,
    Placement,
    explain,
    feasible_nodes,
    place,
    pod_ref,
    selected_node,
    settle,
    simulate,
)
from webhook.scheduler.plugins.podtopologyspread.common import (
    PLUGIN_NAME,
    NodeInclusion,
    distribution,
    eligible_nodes,
    match_counts,
)
from webhook.scheduler.plugins.podtopologyspread.explain import blocked_constraints
from webhook.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    filter_node,
    pre_filter,
)
from webhook.scheduler.plugins.podtopologyspread.plugin import PodTopologySpread
from webhook.scheduler.profile import Framework, framework_of
from webhook.scheduler.schedule_one import find_nodes_that_fit_pod

NODES = ["n0", "n1", "n2", "n3"]
HASH = "pod-template-hash"
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


ZONE_KEY = "topology.kubernetes.io/zone"
RACK_KEY = "example.com/rack"
KEY_SETS = [(ZONE_KEY,), (ZONE_KEY, RACK_KEY), (RACK_KEY, "kubernetes.io/hostname")]
node_labels_st = st.fixed_dictionaries(
    {},
    optional={ZONE_KEY: st.sampled_from(["za", "zb"]), RACK_KEY: st.sampled_from(["r1", "r2"])},
)
node_op_st = st.tuples(
    st.sampled_from(["relabel", "delete node"]), st.sampled_from(NODES), node_labels_st
)


def _labelled_node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return make_node().name(name).labels({"kubernetes.io/hostname": name, **labels}).obj()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(node_labels_st, min_size=4, max_size=4),
    st.lists(st.one_of(add_st, delete_st, node_op_st), max_size=40),
)
@example(
    [{ZONE_KEY: "za"}] * 4,
    [("add", 0, "default", "n0", {"app": "a"}, False, "Running"), ("relabel", "n0", {})],
)
@example(
    [{ZONE_KEY: "za"}] * 4,
    [("add", 0, "default", "n0", {"app": "a"}, False, "Running"), ("delete node", "n0", {})],
)
def test_domain_counts_equal_match_counts_summed_per_domain(node_labels, ops) -> None:
    """Snapshot.domain_counts, kept up to date pod by pod (and dropped when a node's
    labels change or it goes), equals match_counts summed over key_index's nodes."""
    nodes = [_labelled_node(n, labels) for n, labels in zip(NODES, node_labels, strict=True)]
    snap = Snapshot.from_objects(nodes)
    for ns in NAMESPACES:  # build every index first, so every op updates it
        for sel in SELECTORS:
            for keys in KEY_SETS:
                snap.domain_counts(ns, selector(sel), keys)
    for op in ops:
        if op[0] == "add":
            _, name, ns, node, labels, terminating, phase = op
            snap.upsert(_pod(name, ns, node, labels, terminating, phase))
        elif op[0] == "delete":
            _, name, ns = op
            snap.delete({"kind": "Pod", "metadata": {"name": f"p{name}", "namespace": ns}})
        elif op[0] == "relabel":
            snap.upsert(_labelled_node(op[1], op[2]))
        else:
            snap.delete({"kind": "Node", "metadata": {"name": op[1]}})
    for ns in NAMESPACES:
        for sel in SELECTORS:
            per_node = snap.match_counts(ns, selector(sel))
            for keys in KEY_SETS:
                eligible = snap.key_index(keys)[0]
                want: list[dict[str, int]] = [{} for _ in keys]
                for name, n in per_node.items():
                    if name in eligible:
                        for j, value in enumerate(eligible[name]):
                            want[j][value] = want[j].get(value, 0) + n
                assert snap.domain_counts(ns, selector(sel), keys) == tuple(want)


cluster_st = st.lists(
    st.tuples(st.sampled_from(["za", "zb", "zc", "zd", None]), st.booleans()),
    min_size=1,
    max_size=8,
)


# Pods beside the replicas that must not count: another app's (anywhere), and the
# replicas' own kind that no spread counts: unscheduled, terminating, or (with
# pod-template-hash in matchLabelKeys) of the old revision.
OTHER_KINDS = ["other app", "unscheduled", "terminating", "old revision"]


@given(
    cluster_st,
    st.integers(1, 3),
    st.integers(1, 12),
    st.one_of(st.none(), st.integers(1, 5)),
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from(OTHER_KINDS)), max_size=6),
    st.sampled_from(["no matchLabelKeys", "merged (v1.34+)", "unmerged"]),
)
def test_replicas_never_exceed_max_skew(
    cluster, max_skew, replicas, min_domains, others, merge
) -> None:
    """From no matching pod, every placement keeps max - min <= maxSkew over the
    eligible domains (zones of nodes carrying the key), whatever else fails, on nodes
    with or without the zone, beside pods no spread counts; with pod-template-hash in
    matchLabelKeys, merged into the selector by the API server or not."""
    objs: list[dict[str, Any]] = []
    for i, (zone, unschedulable) in enumerate(cluster):
        b = make_node().name(f"n{i}")
        if zone:
            b = b.zone(zone)
        if unschedulable:
            b = b.unschedulable()
        objs.append(b.obj())
    hashed = merge != "no matchLabelKeys"
    for j, (idx, kind) in enumerate(others):
        if idx >= len(cluster) or (kind == "old revision" and not hashed):
            continue
        b = make_pod().name(f"o{j}")
        if kind == "other app":
            b = b.label("app", "other").node(f"n{idx}")
        elif kind == "unscheduled":
            b = b.labels({"app": "web", HASH: "new"}).phase("Pending")
        elif kind == "terminating":
            b = b.labels({"app": "web", HASH: "new"}).node(f"n{idx}").terminating()
        else:
            b = b.labels({"app": "web", HASH: "old"}).node(f"n{idx}")
        objs.append(b.obj())
    extra: dict[str, Any] = {"minDomains": min_domains} if min_domains is not None else {}
    if hashed:
        extra["matchLabelKeys"] = [HASH]
    web = selector({"app": "web"})
    if merge == "merged (v1.34+)":
        web["matchExpressions"] = [{"key": HASH, "operator": "In", "values": ["new"]}]
    pod = (
        make_pod()
        .name("web")
        .labels({"app": "web", HASH: "new"})
        .spread(max_skew, ZONE, DNS, web, **extra)
        .obj()
    )
    sim = simulate(pod, Snapshot.from_objects(objs), replicas=replicas, framework=spread_only())
    domains = sim.distribution.get(ZONE, {})
    if domains:
        assert max(domains.values()) - min(domains.values()) <= max_skew
    placed = [p for p in sim.placements if p is not None]
    assert sum(domains.values()) == len(placed)
    # Placements only ever land on schedulable nodes with a zone.
    for name in placed:
        zone, unschedulable = cluster[int(name[1:])]
        assert zone is not None and not unschedulable


# ---- place() against a one-node-at-a-time reference -------------------------------

RACK = "example.com/rack"


def spread_args_of(fw: Framework) -> SpreadArgs:
    """The profile's PodTopologySpread args (the defaults when it has none)."""
    plugin = fw.plugin(PLUGIN_NAME)
    return plugin.args if plugin is not None else SpreadArgs()


def reference_place(
    pod: dict[str, Any],
    snap: Snapshot,
    args: SpreadArgs,
    framework: Framework | None = None,
) -> Placement:
    """place() the straightforward way: every filter plugin (PodTopologySpread
    included) on every node, one node at a time, then each score plugin's PreScore,
    Score on every feasible node, and NormalizeScore over a map of every feasible node
    (`framework`: the profile, by default the five filters and PodTopologySpread)."""
    fw = framework if framework is not None else spread_only(args)
    prepared = fw.filters.prepare(pod, snap)
    rows = []
    reasons: dict[str, int] = {}
    for name in sorted(snap.nodes):
        info = snap.nodes[name]
        statuses = run_filter_plugins(prepared, info)
        assert list(statuses) == list(fw.filter_names)
        failed = [s for s in statuses.values() if not s.ok]
        for status in failed:
            for reason in status.reasons:
                reasons[reason] = reasons.get(reason, 0) + 1
        rows.append((info, statuses, not failed))
    feasible = [info for info, _, ok in rows if ok]
    columns: dict[str, dict[str, int]] = {}
    weights: dict[str, int] = {p.name: w for p, w in fw.scores}
    error: str | None = None
    if feasible:
        state = prepared.state
        for plugin, _ in fw.scores:
            status = plugin.pre_score(state, pod, feasible, snap)
            if status.code is Code.SKIP:
                continue
            if not status.ok:
                error = f"running PreScore plugin {plugin.name!r}: {status.reason}"
                break
            raw: dict[str, int] = {}
            for info in feasible:
                value, status = plugin.score(state, pod, info)
                if not status.ok:
                    error = f"running Score plugin {plugin.name!r}: {status.reason}"
                    break
                raw[info.name] = value
            if error is not None:
                break
            status = plugin.normalize_score(state, pod, raw)
            if not status.ok:
                error = f"running Normalize on Score plugins: {status.reason}"
                break
            columns[plugin.name] = raw
    order = [n for n in fw.score_names if n in columns] if error is None else []

    def scored(info: Any) -> dict[str, int]:
        return {n: columns[n][info.name] for n in order}

    nodes = [
        NodeVerdict(
            info.name,
            ok,
            statuses,
            scored(info) if ok else {},
            sum(weights[n] * s for n, s in scored(info).items()) if ok else 0,
        )
        for info, statuses, ok in rows
    ]
    best = max((v.score for v in nodes if v.feasible), default=None)
    tied = [v.name for v in nodes if v.feasible and v.score == best] if error is None else []
    return Placement(
        pod_ref(pod),
        nodes,
        tied[0] if tied else None,
        dict(sorted(reasons.items())),
        distribution(pod, snap, spread_args_of(fw)),
        tied_nodes=tied,
        error=error,
    )


def placed(pod: dict[str, Any], snap: Snapshot, args: SpreadArgs) -> Placement:
    """place() with the five filters and PodTopologySpread, as the reference runs."""
    return place(pod, snap, args, framework=spread_only(args))


def _same_placement(got: Placement, want: Placement) -> None:
    assert got.to_json() == want.to_json()
    assert got.nodes == want.nodes
    assert got.selected_node == want.selected_node
    assert got.reasons == want.reasons
    # Status equality leaves out parts: compare them too.
    assert [[s.parts for s in v.filters.values()] for v in got.nodes] == [
        [s.parts for s in v.filters.values()] for v in want.nodes
    ]


node_st = st.fixed_dictionaries(
    {
        "zone": st.sampled_from(["za", "zb", "zc", None]),
        "hostname": st.sampled_from([True, True, True, False]),
        "rack": st.sampled_from(["r1", "r2", None]),
        "unschedulable": st.sampled_from([False, False, False, False, True]),
        "taint": st.sampled_from([None, None, None, "NoSchedule", "NoExecute", "PreferNoSchedule"]),
        "allocatable": st.sampled_from([None, None, ("1", "2"), ("4", "10"), ("8", "6")]),
    }
)
resident_st = st.tuples(
    st.integers(0, 7),  # node index
    st.sampled_from(["default", "default", "other"]),
    st.sampled_from([{"app": "a"}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {}]),
    st.booleans(),  # terminating
    st.sampled_from(["100m", "500m", "1"]),
)
selector_st = st.sampled_from(
    [
        selector({"app": "a"}),
        selector({"app": "a"}),
        selector({"app": "b"}),
        selector({}),
        exists("tier"),
        None,
    ]
)
constraint_st = st.builds(
    lambda skew, key, when, sel, extra: constraint(skew, key, when, sel, **extra),
    st.integers(1, 3),
    st.sampled_from([ZONE, HOSTNAME, HOSTNAME, RACK]),
    st.sampled_from([DNS, SA, SA]),
    selector_st,
    st.fixed_dictionaries(
        {},
        optional={
            "minDomains": st.integers(1, 4),
            "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
            "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore"]),
            "matchLabelKeys": st.just(["tier"]),
        },
    ),
)
incoming_st = st.fixed_dictionaries(
    {
        "labels": st.sampled_from([{"app": "a"}, {"app": "a", "tier": "x"}, {"app": "b"}]),
        "constraints": st.lists(constraint_st, max_size=3),
        "node_selector": st.sampled_from([None, None, {ZONE: "za"}, {RACK: "r2"}]),
        "tolerates": st.booleans(),
        "cpu": st.sampled_from([None, None, "500m", "3"]),
        "node_name": st.sampled_from([None, None, None, None, "n1"]),
    }
)
# Changes between two decisions: bind a replica to a node, relabel, taint, remove, re-add.
change_st = st.tuples(
    st.sampled_from(["bind", "zone", "taint", "remove", "node"]),
    st.integers(0, 7),
    st.sampled_from(["za", "zb", "zd"]),
)


def _node_obj(i: int, spec: dict[str, Any], zone: str | None = None) -> dict[str, Any]:
    b = make_node().name(f"n{i}")
    if zone or spec["zone"]:
        b = b.zone(zone or spec["zone"])
    if spec["hostname"]:
        b = b.hostname()
    if spec["rack"]:
        b = b.label(RACK, spec["rack"])
    if spec["unschedulable"]:
        b = b.unschedulable()
    if spec["taint"]:
        b = b.taint("dedicated", "x", spec["taint"])
    if spec["allocatable"]:
        cpu, pods = spec["allocatable"]
        b = b.allocatable(cpu=cpu, pods=pods, **spec.get("memory", {}))
    if spec.get("images"):
        b = b.images(spec["images"])
    if spec.get("declared"):
        b = b.declared_features(*spec["declared"])
    return b.obj()


def _cluster_of(nodes: list[Any], residents: list[Any]) -> Snapshot:
    """node_st nodes n0, n1, ... and resident_st pods r0, r1, ... bound to them."""
    objs = [_node_obj(i, spec) for i, spec in enumerate(nodes)]
    for j, (idx, ns, labels, terminating, _) in enumerate(residents):
        b = make_pod().name(f"r{j}").namespace(ns).labels(labels).node(f"n{idx}")
        objs.append((b.terminating() if terminating else b).obj())
    return Snapshot.from_objects(objs)


def _incoming(spec: dict[str, Any]) -> dict[str, Any]:
    b = make_pod().name("web").labels(spec["labels"]).constraints(spec["constraints"])
    if spec["node_selector"]:
        b = b.node_selector(spec["node_selector"])
    if spec["tolerates"]:
        b = b.toleration("dedicated", "x")
    if spec["cpu"]:
        b = b.requests(cpu=spec["cpu"])
    pod = b.obj()
    if spec["node_name"]:
        pod["spec"]["nodeName"] = spec["node_name"]
    if spec.get("image"):
        pod["spec"]["containers"][0]["image"] = spec["image"]
    if spec.get("userns_host_network"):  # needs NodeDeclaredFeatures' feature
        pod["spec"].update(hostNetwork=True, hostUsers=False)
    if spec.get("preferred_node"):
        key, value, weight = spec["preferred_node"]
        requirement = {"key": key, "operator": "In", "values": [value]}
        term = {"weight": weight, "preference": {"matchExpressions": [requirement]}}
        pod["spec"].setdefault("affinity", {})["nodeAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [term]
        }
    if spec.get("pod_affinity"):
        anti, key, weight, required = spec["pod_affinity"]
        with_affinity(pod, "In", "app", key, ["a"], anti=anti, required=required, weight=weight)
    return pod


def _apply_change(
    snap: Snapshot,
    nodes: list[Any],
    pod: dict[str, Any],
    n: int,
    change: tuple[str, int, Any],
    taint: str,
) -> None:
    """One change_st change to the cluster: bind a copy of `pod`, relabel, taint with
    `taint`, remove or re-add a node."""
    what, i, zone = change
    name = f"n{i % len(nodes)}"
    if what == "bind":
        snap.add_pod({**pod, "metadata": {**pod["metadata"], "name": f"web-{n}"}}, name)
    elif what == "zone":
        snap.upsert(_node_obj(i % len(nodes), nodes[i % len(nodes)], zone))
    elif what == "taint":
        snap.upsert(_node_obj(i % len(nodes), {**nodes[i % len(nodes)], "taint": taint}))
    elif what == "remove":
        snap.delete({"kind": "Node", "metadata": {"name": name}})
    else:
        snap.upsert(_node_obj(i, nodes[i % len(nodes)]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(node_st, min_size=1, max_size=8),
    st.lists(resident_st, max_size=16),
    incoming_st,
    st.sampled_from(["System", "List", "Service"]),
    st.lists(change_st, max_size=4),
    incoming_st,
)
def test_place_equals_one_node_at_a_time(
    nodes, residents, incoming, defaults, changes, second
) -> None:
    """Same verdicts, scores, choice, reasons and distribution as the reference, for
    the first decision, for each decision after a change to the cluster, and for a
    second pod decided in between (its own remembered filter verdicts)."""
    objs = [_node_obj(i, spec) for i, spec in enumerate(nodes)]
    for j, (idx, ns, labels, terminating, cpu) in enumerate(residents):
        b = make_pod().name(f"r{j}").namespace(ns).labels(labels).node(f"n{idx}")
        b = b.requests(cpu=cpu)
        objs.append((b.terminating() if terminating else b).obj())
    args = SpreadArgs()
    if defaults == "List":
        args = SpreadArgs(
            default_constraints=(constraint(1, ZONE, DNS), constraint(2, HOSTNAME, SA)),
            defaulting_type="List",
        )
    if defaults != "System":
        # A Service selecting app=a gives pods without constraints a default selector.
        objs.append(
            {
                "kind": "Service",
                "metadata": {"name": "svc", "namespace": "default"},
                "spec": {"selector": {"app": "a"}},
            }
        )
    snap = Snapshot.from_objects(objs)
    pod = _incoming(incoming)
    _same_placement(placed(pod, snap, args), reference_place(pod, snap, args))
    # The filter phase alone: the same feasible nodes.
    full = place(pod, snap, args)
    assert feasible_nodes(pod, snap, framework=framework_of(None, args)) == [
        v.name for v in full.nodes if v.feasible
    ]
    for n, (what, i, zone) in enumerate(changes):
        _apply_change(snap, nodes, pod, n, (what, i, zone), "NoSchedule")
        _same_placement(placed(pod, snap, args), reference_place(pod, snap, args))
        if n == 0:
            other = _incoming(second)
            _same_placement(placed(other, snap, args), reference_place(other, snap, args))


soft_st = st.builds(
    lambda skew, key, sel, extra: constraint(skew, key, SA, sel, **extra),
    st.integers(1, 4),
    st.sampled_from([ZONE, HOSTNAME, RACK]),
    selector_st,
    st.fixed_dictionaries(
        {}, optional={"nodeAffinityPolicy": st.just("Ignore"), "nodeTaintsPolicy": st.just("Honor")}
    ),
)
open_node_st = st.fixed_dictionaries(
    {
        "zone": st.sampled_from(["za", "zb", "zc", None]),
        "hostname": st.sampled_from([True, True, True, False]),
        "rack": st.sampled_from(["r1", "r2", None]),
        "unschedulable": st.just(False),
        "taint": st.sampled_from([None, None, "PreferNoSchedule", "NoSchedule"]),
        "allocatable": st.just(None),
    }
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(open_node_st, min_size=2, max_size=8),
    st.lists(resident_st, min_size=1, max_size=20),
    st.lists(soft_st, min_size=1, max_size=3),
    st.booleans(),
)
def test_place_scores_equal_one_node_at_a_time(nodes, residents, soft, tolerates) -> None:
    """Scores, most nodes feasible: the same normalised score on every node as the
    reference, with nodes holding matching pods scored among alike nodes without."""
    snap = _cluster_of(nodes, residents)
    incoming = {
        "labels": {"app": "a"},
        "constraints": soft,
        "node_selector": None,
        "tolerates": tolerates,
        "cpu": None,
        "node_name": None,
    }
    pod = _incoming(incoming)
    _same_placement(
        place(pod, snap, framework=spread_only()), reference_place(pod, snap, SpreadArgs())
    )


# ---- the default profile against the same reference --------------------------------

MB = 1024 * 1024


USERNS = "UserNamespacesHostNetworkSupport"


def _image(name: str, mb: int) -> dict[str, Any]:
    return {"names": [name], "sizeBytes": mb * MB}


profile_node_st = st.fixed_dictionaries(
    {
        "zone": st.sampled_from(["za", "zb", "zc", None]),
        "hostname": st.sampled_from([True, True, True, False]),
        "rack": st.sampled_from(["r1", "r2", None]),
        "unschedulable": st.sampled_from([False, False, False, False, True]),
        "taint": st.sampled_from(
            [None, None, "PreferNoSchedule", "PreferNoSchedule", "NoSchedule"]
        ),
        "allocatable": st.sampled_from([None, ("2", "10"), ("4", "10"), ("4", "10"), ("8", "6")]),
        "memory": st.sampled_from([{}, {"memory": "4Gi"}, {"memory": "16Gi"}]),
        "images": st.sampled_from(
            [None, None, [_image("web:1", 300)], [_image("web:1", 300), _image("side:2", 40)]]
        ),
        "declared": st.sampled_from(
            [None, None, [USERNS], ["PerPodPIDLimit"], ["PerPodPIDLimit", USERNS]]
        ),
    }
)
profile_resident_st = st.tuples(
    st.integers(0, 7),  # node index
    st.sampled_from(["default", "default", "other"]),
    st.sampled_from([{"app": "a"}, {"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {}]),
    st.booleans(),  # terminating
    st.sampled_from(["100m", "500m", "1", None]),
    # its own term: (anti, topology key, weight, required)
    st.sampled_from(
        [
            None,
            None,
            None,
            (False, ZONE, 4, False),
            (True, HOSTNAME, 2, False),
            (True, ZONE, 1, True),
            (True, HOSTNAME, 1, True),
        ]
    ),
)
profile_incoming_st = st.fixed_dictionaries(
    {
        "labels": st.sampled_from([{"app": "a"}, {"app": "a", "tier": "x"}, {"app": "b"}]),
        "constraints": st.lists(constraint_st, max_size=2),
        "node_selector": st.sampled_from([None, None, {ZONE: "za"}, {RACK: "r2"}]),
        "tolerates": st.booleans(),
        "cpu": st.sampled_from([None, "100m", "500m", "3"]),
        "node_name": st.sampled_from([None, None, None, None, "n1"]),
        "image": st.sampled_from([None, "web:1", "side:2"]),
        "userns_host_network": st.sampled_from([False, False, True]),
        "preferred_node": st.sampled_from([None, None, (ZONE, "zb", 5), (RACK, "r1", 30)]),
        "pod_affinity": st.sampled_from(
            [
                None,
                None,
                (False, ZONE, 3, False),
                (True, HOSTNAME, 7, False),
                (True, ZONE, 1, True),
                (False, ZONE, 1, True),
                (True, HOSTNAME, 1, True),
            ]
        ),
    }
)


def _profile_cluster(nodes: list[Any], residents: list[Any]) -> list[dict[str, Any]]:
    """The Nodes of profile_node_st specs and the Pods of profile_resident_st ones."""
    objs = [_node_obj(i, spec) for i, spec in enumerate(nodes)]
    for j, (idx, ns, labels, terminating, cpu, term) in enumerate(residents):
        b = make_pod().name(f"r{j}").namespace(ns).labels(labels).node(f"n{idx}")
        if cpu:
            b = b.requests(cpu=cpu)
        resident = (b.terminating() if terminating else b).obj()
        if term:
            anti, key, weight, required = term
            with_affinity(
                resident, "In", "app", key, ["a"], anti=anti, required=required, weight=weight
            )
        objs.append(resident)
    return objs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=16),
    profile_incoming_st,
    st.sampled_from(["System", "List"]),
    st.lists(change_st, max_size=4),
    profile_incoming_st,
)
def test_default_profile_equals_one_node_at_a_time(
    nodes, residents, incoming, defaults, changes, second
) -> None:
    """kube-scheduler's default profile (every filter, seven score plugins and
    PodTopologySpread): the same verdicts, scores, sums, choice and reasons as every
    plugin run on every node, for the first decision, after each change to the
    cluster, and for a second pod decided in between (its own remembered verdicts
    and scores)."""
    objs = _profile_cluster(nodes, residents)
    args = SpreadArgs()
    if defaults == "List":
        args = SpreadArgs(
            default_constraints=(constraint(1, ZONE, DNS), constraint(2, HOSTNAME, SA)),
            defaulting_type="List",
        )
    fw = framework_of(None, None if defaults == "System" else args)
    snap = Snapshot.from_objects(objs)
    pod = _incoming(incoming)

    def check(p: dict[str, Any]) -> None:
        want = reference_place(p, snap, args, fw)
        # The best-node path (simulate's copies after the first) first, so the whole
        # decision after it runs on what it left remembered.
        chosen = selected_node(p, snap, framework=fw)
        if isinstance(chosen, Placement):
            chosen = chosen.selected_node
        assert chosen == want.selected_node
        _same_placement(place(p, snap, framework=fw), want)

    check(pod)
    for n, (what, i, zone) in enumerate(changes):
        _apply_change(snap, nodes, pod, n, (what, i, zone), "PreferNoSchedule")
        check(pod)
        if n == 0:
            check(_incoming(second))


SCORE_PLUGINS = [
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
]


def _views_except(node_by_node: set[str]) -> Any:
    """runtime/score.py's _view with the plugins named scoring node by node (no view)."""
    by_classes = runtime_score._view

    def view(plugin: Any, *rest: Any) -> Any:
        return None if plugin.name in node_by_node else by_classes(plugin, *rest)

    return view


def _replica_fits(nodes: Any, residents: Any, incoming: Any, replicas: int) -> Any:
    """(framework, snapshot, replica, fit, feasible) for each replica of the incoming pod
    while one fits; the caller binds each where it decides before asking for the next."""
    fw = framework_of(None, None)
    snap = Snapshot.from_objects(_profile_cluster(nodes, residents))
    pod = _incoming(incoming)
    for i in range(replicas):
        copy = {**pod, "metadata": {**pod["metadata"], "name": f"web-{i}"}}
        fit = find_nodes_that_fit_pod(copy, snap, fw)
        if not fit.diagnosis.feasible:
            return
        yield fw, snap, copy, fit, fit.diagnosis.feasible


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=16),
    profile_incoming_st,
    st.integers(1, 6),
    st.sets(st.sampled_from(SCORE_PLUGINS)),
)
def test_best_position_equals_the_first_best_weighted_sum(
    nodes, residents, incoming, replicas, node_by_node
) -> None:
    """The drills' best node by joint classes (runtime/score.py: best_position) is the
    first feasible node with the highest weighted sum, replica after replica bound,
    with the plugins of `node_by_node` scoring node by node beside the others' classes
    (_best_by_columns)."""
    view = _views_except(node_by_node)
    for fw, snap, copy, fit, feasible in _replica_fits(nodes, residents, incoming, replicas):
        sums = runtime_score.weighted_sums(fw.scores, fit.prepared, snap, fit.table, feasible)
        fit = find_nodes_that_fit_pod(copy, snap, fw)  # a cycle of its own
        ok = {key: verdict[0] for key, verdict in fit.diagnosis.per_key.items()}
        with mock.patch.object(runtime_score, "_view", view):
            got = runtime_score.best_position(
                fw.scores, fit.prepared, snap, fit.table, feasible, fit.diagnosis.keys, ok
            )
        if isinstance(sums, str):
            assert got == sums
            break
        assert got == feasible[sums.index(max(sums))]
        snap.add_pod(copy, fit.table.names[got])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=16),
    profile_incoming_st,
    st.integers(1, 6),
    st.randoms(use_true_random=False),
    st.sets(st.sampled_from(SCORE_PLUGINS)),
)
def test_sums_by_classes_equal_weighted_sums_on_any_scan(
    nodes, residents, incoming, replicas, rnd, node_by_node
) -> None:
    """A sampled cycle's weighted sums by classes (runtime/score.py: sums_by_classes)
    are the plain column path's (weighted_sums) on any subset of the feasible nodes a
    scan may find, replica after replica bound where the sums put it, with the plugins
    of `node_by_node` scoring node by node beside the others' classes."""
    view = _views_except(node_by_node)
    for fw, snap, copy, fit, feasible in _replica_fits(nodes, residents, incoming, replicas):
        scored = sorted(rnd.sample(feasible, rnd.randint(1, len(feasible))))
        want = runtime_score.weighted_sums(fw.scores, fit.prepared, snap, fit.table, scored)
        fit = find_nodes_that_fit_pod(copy, snap, fw)  # a cycle of its own
        with mock.patch.object(runtime_score, "_view", view):
            got = runtime_score.sums_by_classes(fw.scores, fit.prepared, snap, fit.table, scored)
        assert got == want
        if isinstance(want, str):
            break
        snap.add_pod(copy, fit.table.names[scored[want.index(max(want))]])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=16),
    profile_incoming_st,
    st.integers(1, 6),
)
def test_simulate_equals_place_replica_after_replica(nodes, residents, incoming, replicas) -> None:
    """simulate() (whole decisions for the first copy, the best-node path for the rest)
    places each copy where place() on the cluster with the copies before it bound
    does, and place() there chooses what the node-by-node reference chooses."""
    fw = framework_of(None, None)
    snap = Snapshot.from_objects(_profile_cluster(nodes, residents))
    pod = _incoming(incoming)
    sim = simulate(pod, snap, replicas=replicas, framework=fw)
    work = snap.copy()
    for i in range(replicas):
        name = "web" if i == 0 else f"web-{i + 1}"
        while i > 0 and work.has_pod("default", name):
            name += "-x"
        copy = {**pod, "metadata": {**pod["metadata"], "name": name}}
        decision = place(copy, work, framework=fw)
        if decision.preemption is None:
            want = reference_place(copy, work, SpreadArgs(), fw)
            assert decision.selected_node == want.selected_node
        node, _ = settle(decision, work)
        assert sim.placements[i] == node, i
        if node is not None:
            work.add_pod(copy, node)


def reference_explain(
    pod: dict[str, Any], snap: Snapshot, fw: Framework
) -> tuple[int, list[Any]] | None:
    """explain() the straightforward way: every other filter on every node, then
    PodTopologySpread's PreFilter (node inclusion worked out node by node) and Filter
    on the nodes left. (candidates, blocked constraints), None when nothing to say."""
    pre = pre_filter(pod, snap, spread_args_of(fw))
    if not isinstance(pre, PreFilterState) or not pre.constraints:
        return None
    prepared = fw.filters.prepare(pod, snap)
    candidates = []
    for name in sorted(snap.nodes):
        info = snap.nodes[name]
        others = run_filter_plugins(prepared, info)
        if all(s.ok for n, s in others.items() if n != PLUGIN_NAME):
            if filter_node(pre, info).ok:
                return None
            candidates.append(info)
    if not candidates:
        return None
    return len(candidates), blocked_constraints(pre, candidates)


def _interrupted(pod: dict[str, Any], snap: Snapshot, fw: Framework, stop_after: int) -> None:
    """explain() under a budget spent after `stop_after` clock readings, judging one
    node per chunk: it stops partway, leaving what it judged behind."""
    ticks = iter(range(10**6))
    with (
        mock.patch.object(budget, "_clock", lambda: next(ticks)),
        mock.patch.object(runtime_filter, "CHUNK", 1),
    ):
        try:
            with budget.within(stop_after):
                explain(pod, snap, framework=fw)
        except budget.OutOfTime:
            pass


def _check_explain(pod: dict[str, Any], snap: Snapshot, fw: Framework, stop: int | None) -> None:
    """explain() and the feasible nodes (the filter outcomes explain leaves behind)
    equal the node-by-node references, each also right after looks that ran out of
    budget after `stop` clock readings."""
    feasible = [
        v.name for v in reference_place(pod, snap, spread_args_of(fw), fw).nodes if v.feasible
    ]
    if stop is not None:
        # Twice: the second look resumes from what the first left, and stops too.
        _interrupted(pod, snap, fw, stop)
        _interrupted(pod, snap, fw, stop)
    assert feasible_nodes(pod, snap, framework=fw) == feasible
    if stop is not None:
        _interrupted(pod, snap, fw, stop)
    why = explain(pod, snap, framework=fw)
    got = None if why is None else (why.candidates, why.blocked)
    assert got == reference_explain(pod, snap, fw)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(profile_node_st, min_size=1, max_size=8),
    st.lists(profile_resident_st, max_size=16),
    profile_incoming_st,
    st.lists(change_st, max_size=4),
    st.lists(st.one_of(st.none(), st.integers(1, 12)), min_size=5, max_size=5),
)
def test_explain_equals_one_node_at_a_time(nodes, residents, incoming, changes, stops) -> None:
    """The foresight's explain() (remembered filter outcomes, changed nodes read from
    the snapshot's journal, PodTopologySpread once per node class) says what the
    node-by-node reference says, for the first look and after each change to the
    cluster, also when earlier looks ran out of budget partway."""
    objs = _profile_cluster(nodes, residents)
    fw = framework_of()
    snap = Snapshot.from_objects(objs)
    pod = _incoming(incoming)
    _check_explain(pod, snap, fw, stops[0])
    for n, change in enumerate(changes):
        _apply_change(snap, nodes, pod, n, change, "NoSchedule")
        _check_explain(pod, snap, fw, stops[n + 1])


# ---- PodTopologySpread's hooks against its own node-by-node phases ------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(node_st, min_size=1, max_size=8),
    st.lists(resident_st, max_size=16),
    incoming_st,
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_podtopologyspread_hooks_equal_its_node_by_node_phases(
    nodes, residents, incoming, feasible_mask
) -> None:
    """ClassFilter (Filter once per node class) gives every node what Filter gives it,
    and ColumnScore what Score on each feasible node and NormalizeScore over them give:
    the runtime's grouping of this plugin equals per-node plugin calls."""
    snap = _cluster_of(nodes, residents)
    pod = _incoming(incoming)
    plugin = PodTopologySpread()
    table = snap.node_table()
    state = CycleState()
    if plugin.pre_filter(state, pod, snap).code is Code.SUCCESS:
        keys = plugin.filter_label_keys(state)
        classes = memo_of(snap).node_classes(keys, (False,) * len(keys), table)
        by_class = plugin.filter_classes(state, keys, classes.values)
        got = [by_class[k] for k in classes.of_node]
        want = [plugin.filter(state, pod, info) for info in table.infos]
        assert [(s.code, s.reason) for s in got] == [(s.code, s.reason) for s in want]
        event("Filter compared")
    feasible = [i for i in range(len(table.infos)) if feasible_mask[i % 8]]
    infos = [table.infos[i] for i in feasible]
    state = CycleState()
    if feasible and plugin.pre_score(state, pod, infos, snap).code is Code.SUCCESS:
        column = plugin.score_column(state, pod, snap, table, feasible)
        raw = {}
        for info in infos:
            value, status = plugin.score(state, pod, info)
            assert status.ok
            raw[info.name] = value
        assert plugin.normalize_score(state, pod, raw).ok
        assert column == [raw[info.name] for info in infos]
        event("Score compared")


# ---- PreFilter's domain counts against its inclusion policies, node by node ----------


def _honoring_taints(spec: dict[str, Any], honor: list[bool]) -> dict[str, Any]:
    """The incoming pod spec with its constraints DoNotSchedule, nodeTaintsPolicy Honor
    where `honor` says so."""
    constraints = [
        {**c, "whenUnsatisfiable": DNS, **({"nodeTaintsPolicy": "Honor"} if h else {})}
        for c, h in zip(spec["constraints"], honor, strict=False)
    ]
    return {**spec, "constraints": constraints}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(node_st, min_size=1, max_size=8),
    st.lists(resident_st, max_size=16),
    incoming_st,
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.lists(change_st, max_size=5),
    st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
)
@example(
    # Zone za: n0 tainted, holding a matching pod, and n1 not: za stays, counting 0.
    [{"zone": "za", "hostname": True, "rack": None, "unschedulable": False,
      "taint": "NoSchedule", "allocatable": None},
     {"zone": "za", "hostname": True, "rack": None, "unschedulable": False, "taint": None,
      "allocatable": None}],
    [(0, "default", {"app": "a"}, False, "100m")],
    {"labels": {"app": "a"}, "constraints": [constraint(1, ZONE, DNS, selector({"app": "a"}))],
     "node_selector": None, "tolerates": False, "cpu": None, "node_name": None},
    [True, True, True],
    [],
    "NoSchedule",
)
def test_pre_filter_counts_equal_the_included_nodes_summed(
    nodes, residents, incoming, honor, changes, taint
) -> None:
    """calPreFilterState's domains and counts (the snapshot's per-domain counts, less the
    nodes whose taints the pod does not tolerate) equal matching pods summed over the
    nodes the inclusion policies take in, one node at a time; after each change too
    (binds, relabels, taints, nodes removed and added)."""
    snap = _cluster_of(nodes, residents)
    pod = _incoming(_honoring_taints(incoming, honor))
    for n, change in enumerate([None, *changes]):
        if change is not None:
            _apply_change(snap, nodes, pod, n, change, taint)
        pre = pre_filter(pod, snap, SpreadArgs())
        if not isinstance(pre, PreFilterState):
            continue
        included = eligible_nodes(snap, pre.constraints, NodeInclusion(pod))
        want = []
        for c, domains in zip(pre.constraints, included, strict=True):
            per_node = match_counts(snap, pod, c)
            counts: dict[str, int] = {}
            for name, domain in domains.items():
                counts[domain] = counts.get(domain, 0) + per_node.get(name, 0)
            want.append(counts)
        assert pre.tp_value_to_match_num == tuple(want)
        if any(c.node_taints_policy == "Honor" for c in pre.constraints):
            event("a constraint honours taints")
