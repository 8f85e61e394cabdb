"""The audit's deletion costs per workload: a ReplicaSet deleting the lowest costs first
keeps the spread, counting as the scheduler counts (other workloads' matching pods,
eligible domains, matchLabelKeys), each ReplicaSet of a rollout on its own.

Legend: "a:3 b:1" is the count of matching running pods per zone."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from tests import paths
from tests.builders import DNS, HOSTNAME, SA, ZONE, make_node, make_pod, scaled, selector
from webhook.audit.measure.costs import all_costs, workload_costs
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.cli.main import main
from webhook.config import Settings
from webhook.controllers.costs import INT32_MAX
from webhook.render.html import audit_page

RawObj = dict[str, Any]
APP = selector({"app": "web"})
SETTINGS = Settings()


def node(name: str, zone: str | None, **labels: str) -> RawObj:
    b = make_node().name(name).hostname()
    if zone is not None:
        b = b.zone(zone)
    return b.labels(labels).obj()


def pod(
    name: str,
    on: str,
    *,
    rs: str = "web-1",
    created: str = "2026-01-01T00:00:00Z",
    labels: Mapping[str, str] | None = None,
    constraints: list[RawObj] | None = None,
    ready: bool = True,
) -> RawObj:
    """A Running pod of ReplicaSet `rs` (of Deployment "web") on node `on`."""
    b = make_pod().name(name).labels(dict(labels or {"app": "web"})).node(on)
    if rs:
        b = b.owner("ReplicaSet", rs)
    b = b.ready("True" if ready else "False")
    out = b.constraints(
        constraints
        if constraints is not None
        else [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS, "labelSelector": APP}]
    ).obj()
    out["metadata"]["creationTimestamp"] = created
    return out


def replicaset(name: str, deployment: str = "web") -> RawObj:
    return scaled("ReplicaSet", name, 1, owner=("Deployment", deployment, "d"))


ZONES = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("c1", "c")]
WEB = Workload("default", "Deployment", "web")


def zone_pods(counts: Mapping[str, int], rs: str = "web-1", start: int = 0) -> list[RawObj]:
    out = []
    i = start
    for zone, n in counts.items():
        for _ in range(n):
            out.append(
                pod(f"{rs}-{i:03d}", f"{zone}1", rs=rs, created=f"2026-01-01T00:{i:02d}:00Z")
            )
            i += 1
    return out


def delete_lowest(costs: Mapping[str, int], k: int, reverse_ties: bool) -> list[str]:
    """The k pods a ReplicaSet deletes among Running Ready pods: lowest cost first, ties
    broken one way or the other (the controller's later rules are blind to the spread)."""
    by_name = sorted(costs, reverse=reverse_ties)
    return sorted(by_name, key=lambda key: costs[key])[:k]


def zone_counts(state: ClusterState, gone: set[str]) -> dict[str, int]:
    nodes = state.snapshot.nodes
    out: dict[str, int] = {}
    for p in state.running:
        key = f"default/{p['metadata']['name']}"
        if key in gone:
            continue
        zone = nodes[p["spec"]["nodeName"]].labels.get(ZONE)
        if zone is not None and p["metadata"].get("labels", {}).get("app") == "web":
            out[zone] = out.get(zone, 0) + 1
    return out


def state_of(*objects: RawObj) -> ClusterState:
    return ClusterState.from_objects([*ZONES, replicaset("web-1"), replicaset("web-2"), *objects])


@pytest.mark.parametrize(
    ("name", "counts", "k", "after"),
    [
        # The HPA case (kubernetes#96748): 9 -> 3 over three zones keeps one per zone.
        ("a:3 b:3 c:3, delete 6", {"a": 3, "b": 3, "c": 3}, 6, {"a": 1, "b": 1, "c": 1}),
        ("a:3 b:3 c:3, delete 2", {"a": 3, "b": 3, "c": 3}, 2, None),
        ("a:4 b:1 c:1, delete 3", {"a": 4, "b": 1, "c": 1}, 3, {"a": 1, "b": 1, "c": 1}),
        ("a:5 b:3 c:0, delete 4", {"a": 5, "b": 3}, 4, {"a": 2, "b": 2}),
    ],
)
def test_lowest_costs_first_keeps_the_zone_spread(
    name: str, counts: dict[str, int], k: int, after: dict[str, int] | None
) -> None:
    """Whatever the tie-break, deleting the k lowest costs leaves the most even zones."""
    state = state_of(*zone_pods(counts))
    costs = workload_costs(state, WEB, SETTINGS)
    assert len(costs) == sum(counts.values())
    assert all(0 <= c <= INT32_MAX for c in costs.values())
    for reverse in (False, True):
        left = {"a": 0, "b": 0, "c": 0, **zone_counts(state, set(delete_lowest(costs, k, reverse)))}
        if after is None:
            assert max(left.values()) - min(left.values()) == 1
        else:
            assert left == {"a": 0, "b": 0, "c": 0, **after}


def test_other_workloads_matching_pods_count_but_stay() -> None:
    """a:2 of another ReplicaSet (same labels) + ours a:1 b:2 c:2: our pod in a goes first."""
    others = [
        pod("other-0", "a1", rs="other", created="2025-01-01T00:00:00Z"),
        pod("other-1", "a2", rs="other", created="2025-01-01T00:00:00Z"),
    ]
    ours = zone_pods({"a": 1, "b": 2, "c": 2})
    state = state_of(*others, *ours)
    costs = workload_costs(state, WEB, SETTINGS)
    assert set(costs) == {f"default/{p['metadata']['name']}" for p in ours}
    first = min(costs, key=lambda key: costs[key])
    assert first == "default/web-1-000"  # the pod in zone a (3 matching pods there)


def test_a_rollout_gets_costs_per_replicaset_counted_over_the_selector() -> None:
    """Old ReplicaSet a:2 b:1 c:1 and new a:0 b:1 c:1 share the selector: zone a holds 2,
    b 2, c 2: the old ReplicaSet's first deletion is in a, b or c alike, its second
    is not where the first was."""
    old = zone_pods({"a": 2, "b": 1, "c": 1}, rs="web-1")
    new = zone_pods({"b": 1, "c": 1}, rs="web-2", start=10)
    state = state_of(*old, *new)
    costs = workload_costs(state, WEB, SETTINGS)
    assert set(costs) == {f"default/{p['metadata']['name']}" for p in old + new}
    old_costs = {k: v for k, v in costs.items() if "/web-1-" in k}
    for reverse in (False, True):
        left = zone_counts(state, set(delete_lowest(old_costs, 2, reverse)))
        assert max(left.values()) - min(left.values()) <= 1 and len(left) == 3


# (case, our pods per zone, the first two to go): one more pod of ours runs on x1, a
# node without the zone label, which no zone counts.
OUTSIDE_CASES = [
    # Deleting a counted pod lowers the largest count (a:3 -> a:2); the uncounted pod
    # would leave the skew at 3.
    (
        "a pod outside every domain goes after the fullest zone's",
        {"a": 3, "b": 1, "c": 1},
        ["default/web-1-002", "default/web-1-001"],
    ),
    # Zones a:1 b:1 c:1 are level: any counted deletion makes the skew 1, the uncounted
    # pod keeps it 0.
    (
        "a pod outside every domain goes first when the zones are level",
        {"a": 1, "b": 1, "c": 1},
        ["default/web-1-x"],
    ),
]


@pytest.mark.parametrize(
    ("counts", "first"),
    [case[1:] for case in OUTSIDE_CASES],
    ids=[case[0] for case in OUTSIDE_CASES],
)
def test_pods_outside_the_eligible_domains(counts: dict[str, int], first: list[str]) -> None:
    """A pod on a node without the zone label is not counted: it goes after the counted
    pods above the least zone and before the rest."""
    state = ClusterState.from_objects(
        [
            *ZONES,
            node("x1", None),
            replicaset("web-1"),
            *zone_pods(counts),
            pod("web-1-x", "x1", created="2025-01-01T00:00:00Z"),
        ]
    )
    costs = workload_costs(state, WEB, SETTINGS)
    assert sorted(costs, key=lambda key: (costs[key], key))[: len(first)] == first


def test_workloads_without_constraints_or_replicasets_have_no_costs() -> None:
    bare = make_pod().name("bare").label("app", "web").node("a1").spread(1, ZONE, DNS, APP).obj()
    plain = pod("web-1-000", "a1", constraints=[])
    state = state_of(bare, plain)
    assert workload_costs(state, Workload("default", "Pod", "bare"), SETTINGS) == {}
    assert workload_costs(state, WEB, SETTINGS) == {}
    assert all_costs(state, SETTINGS) == {}


def test_an_unchanged_cluster_gets_the_same_costs() -> None:
    """Costs come from the state alone: computing twice, or from a reordered list, agrees."""
    pods = zone_pods({"a": 3, "b": 2, "c": 1})
    first = workload_costs(state_of(*pods), WEB, SETTINGS)
    again = workload_costs(state_of(*reversed(pods)), WEB, SETTINGS)
    assert first == again


def test_a_scale_up_changes_only_the_new_pods_costs() -> None:
    """Two new pods (newer than all) in a and c: the old pods keep their costs."""
    pods = zone_pods({"a": 2, "b": 2, "c": 2})
    before = workload_costs(state_of(*pods), WEB, SETTINGS)
    added = [
        pod("web-1-100", "a1", created="2026-02-01T00:00:00Z"),
        pod("web-1-101", "c1", created="2026-02-01T00:00:01Z"),
    ]
    after = workload_costs(state_of(*pods, *added), WEB, SETTINGS)
    changed = {k for k in after if before.get(k) != after[k]}
    assert changed == {"default/web-1-100", "default/web-1-101"}


def test_zone_then_hostname_break_ties_by_the_fuller_host() -> None:
    """Zones a:2 b:2; in a both pods on a1 (host level 2 for the newer), in b on b1 and
    b2: the first deletion is in a (its host is the fullest) whatever the tie-break."""
    nodes = [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("b2", "b")]
    both = [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS, "labelSelector": APP},
        {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA, "labelSelector": APP},
    ]
    pods = [
        pod("web-1-0", "a1", created="2026-01-01T00:00:00Z", constraints=both),
        pod("web-1-1", "a1", created="2026-01-01T00:00:01Z", constraints=both),
        pod("web-1-2", "b1", created="2026-01-01T00:00:02Z", constraints=both),
        pod("web-1-3", "b2", created="2026-01-01T00:00:03Z", constraints=both),
    ]
    state = ClusterState.from_objects([*nodes, replicaset("web-1"), *pods])
    costs = workload_costs(state, WEB, SETTINGS)
    a0, a1, b1, b2 = (costs[f"default/web-1-{i}"] for i in range(4))
    # Levels (zone, host): a1 (2, 2), b2 (2, 1), then a0 (1, 1) and b1 (1, 1) tied.
    assert a1 < b2 < a0 == b1


# ---- audit --deletion-costs ------------------------------------------------------------

EXAMPLE = paths.ROOT / "docs" / "examples" / "scale-down.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv], prog="topospread")
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_has_a_cost_per_pod_and_the_lowest_keep_the_spread(capsys: Any) -> None:
    """docs/examples/scale-down.json: zones a:4 b:3 c:2+1 (a canary's pod); web 9 -> 6
    by the lowest costs leaves a:2 b:2 c:3 in any tie order."""
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--deletion-costs", "-o", "json")
    doc = json.loads(out)
    assert code == 0
    costs = doc["deletionCosts"]
    assert len(costs) == 10 and all(isinstance(v, int) for v in costs.values())
    web_costs = {k: v for k, v in costs.items() if k.startswith("shop/web-7c9f8d-")}
    state = ClusterState.from_objects(json.loads(EXAMPLE.read_text())["items"])
    zone_of = {name: info.labels.get(ZONE) for name, info in state.snapshot.nodes.items()}
    for reverse in (False, True):
        gone = set(delete_lowest(web_costs, 3, reverse))
        left: dict[str, int] = {}
        for p in state.running:
            if f"shop/{p['metadata']['name']}" not in gone:
                zone = str(zone_of[p["spec"]["nodeName"]])
                left[zone] = left.get(zone, 0) + 1
        assert sorted(left.values()) == [2, 2, 3]


def test_cli_text_one_line_per_workload_and_html_section(capsys: Any) -> None:
    code, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--deletion-costs")
    lines = out.splitlines()
    start = lines.index(
        "deletion costs (controller.kubernetes.io/pod-deletion-cost, lowest goes first):"
    )
    assert lines[start + 1].startswith("  Deployment shop/web: 9 pods, 6 distinct costs;")
    assert "first to go: web-7c9f8d-z6c3f" in lines[start + 1]
    assert lines[start + 2].startswith("  Deployment shop/web-canary: 1 pod, 1 distinct cost;")
    assert len(lines) == start + 3
    _, page, _ = run(capsys, "--snapshot", str(EXAMPLE), "--deletion-costs", "-o", "html")
    assert "<h2>Deletion costs</h2>" in page and "shop/web-7c9f8d-z6c3f 2147221499" in page


def test_cli_without_the_flag_has_no_costs(capsys: Any) -> None:
    _, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "-o", "json")
    assert "deletionCosts" not in json.loads(out)


def test_html_escapes_pod_names() -> None:
    page = audit_page({"workloads": [], "deletionCosts": {"ns/<b>x</b>": 1}})
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_the_docs_example_is_real_output(capsys: Any) -> None:
    """docs/deletion-costs.md shows what the command prints on its example snapshot."""
    doc = (paths.ROOT / "docs" / "deletion-costs.md").read_text()
    command = "$ topospread audit --snapshot docs/examples/scale-down.json --deletion-costs\n"
    shown = doc.split(command, 1)[1].split("```", 1)[0]
    _, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--deletion-costs")
    assert shown == out
    json_block = doc.split(command.replace("\n", " -o json\n"), 1)[1].split("```", 1)[0]
    costs_text = "{" + json_block.split('"deletionCosts": {', 1)[1].split("}", 1)[0] + "}"
    _, out, _ = run(capsys, "--snapshot", str(EXAMPLE), "--deletion-costs", "-o", "json")
    assert json.loads(costs_text) == json.loads(out)["deletionCosts"]
