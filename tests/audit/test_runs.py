"""`audit --percentage-of-nodes-to-score / --seed / --runs` with a drill: the queue's
cycles sample and draw their ties from the seed, and --runs reports the range of the
outcomes over seeds (docs/simulate.md, interfaces.md "At scale, as kube-scheduler runs
it").

Legend: zones a, b, c of two nodes each (a1 a2 | b1 b2 | c1 c2), two web pods on every
node but a2 (one), a loose zone DoNotSchedule constraint (maxSkew 3, nodeTaintsPolicy
Honor); zone a becomes unreachable and its three pods come back on b and c, where the
nodes are alike: each replacement goes to one of the nodes holding the fewest (the
scores' tie kube-scheduler draws), so b ends with 5 or 6 and c with the rest.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import DNS, ZONE, make_node, make_pod, selector
from webhook.audit.drills.ranges import add_ranges, range_lines
from webhook.cli.main import main

RawObj = dict[str, Any]
DRILL = ("--unreachable-nodes", f"{ZONE}=a")


def _objects() -> list[RawObj]:
    nodes = [
        make_node().name(n).hostname().zone(n[0]).allocatable(cpu="4", memory="8Gi", pods="10")
        for n in ("a1", "a2", "b1", "b2", "c1", "c2")
    ]
    pods = [
        make_pod()
        .name(f"web-{n.obj()['metadata']['name']}-{i}")
        .label("app", "web")
        .node(n.obj()["metadata"]["name"])
        .owner("ReplicaSet", "web")
        .spread(3, ZONE, DNS, selector({"app": "web"}), nodeTaintsPolicy="Honor")
        .obj()
        for n in nodes
        for i in range(2)
        if (n.obj()["metadata"]["name"], i) != ("a2", 1)
    ]
    return [*(n.obj() for n in nodes), *pods]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("runs") / "c.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _objects()}))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv], prog="topospread")
    out = capsys.readouterr()
    return code, out.out, out.err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code in (0, 1), err
    return json.loads(out)


def _zone_counts(doc: Any) -> dict[str, int]:
    [workload] = doc["workloads"]
    [entry] = workload["constraints"]
    return dict(entry["domains"])


def test_runs_report_what_each_seed_gives(snapshot: str, capsys: Any) -> None:
    """--runs 6: the first run is seed 0's document; each domain's range and the
    pending count are those of the six runs done one seed at a time."""
    doc = as_json(capsys, "--snapshot", snapshot, *DRILL, "--runs", "6")
    singles = [as_json(capsys, "--snapshot", snapshot, *DRILL, "--seed", str(s)) for s in range(6)]
    assert _zone_counts(doc) == _zone_counts(singles[0])
    assert doc["runs"]["count"] == 6
    pending = sorted(len(s["pending"]) for s in singles)
    assert doc["runs"]["pending"]["min"] == pending[0]
    assert doc["runs"]["pending"]["max"] == pending[-1]
    [entry] = doc["workloads"][0]["constraints"]
    for zone in ("b", "c"):
        counts = [_zone_counts(s)[zone] for s in singles]
        got = entry["runs"]["domains"][ZONE][zone]
        assert (got["min"], got["max"]) == (min(counts), max(counts))
    violated = sum(1 for s in singles if s["workloads"][0]["constraints"][0]["violated"])
    assert entry["runs"]["violated"] == violated
    # the draws differ between seeds: b and c do not always end alike
    assert len({_zone_counts(s)["b"] for s in singles}) > 1


def test_the_same_seed_gives_the_same_drill(snapshot: str, capsys: Any) -> None:
    one = as_json(capsys, "--snapshot", snapshot, *DRILL, "--seed", "4")
    assert one == as_json(capsys, "--snapshot", snapshot, *DRILL, "--seed", "4")


def test_without_the_options_the_drill_is_unchanged(snapshot: str, capsys: Any) -> None:
    """No flag: ties by name, so the replacements go to b1, b2, then c1."""
    doc = as_json(capsys, "--snapshot", snapshot, *DRILL)
    assert "runs" not in doc
    assert _zone_counts(doc) == {"b": 6, "c": 5}


def test_runs_text(snapshot: str, capsys: Any) -> None:
    code, out, _ = run(capsys, "--snapshot", snapshot, *DRILL, "--runs", "4", "--seed", "1")
    assert code in (0, 1)
    assert "Over 4 runs (seeds 1..4):" in out
    assert "  pending pods  " in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--runs", "3"), "--runs repeats a drill"),
        ((*DRILL, "--runs", "0"), "--runs must be at least 1, got 0"),
        ((*DRILL, "--percentage-of-nodes-to-score", "200"), "must be in 0..100, got 200"),
    ],
)
def test_bad_sampling_flags_exit_2(
    snapshot: str, capsys: Any, argv: tuple[str, ...], message: str
) -> None:
    code, out, err = run(capsys, "--snapshot", snapshot, *argv)
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err


def test_add_ranges_counts_a_missing_constraint_as_zero() -> None:
    """A run whose report lacks the workload counts 0 in every domain, not violated."""
    entry = {"index": 0, "topologyKey": ZONE, "domains": {"a": 2, "b": 1}, "violated": True}
    first = {
        "workloads": [
            {"kind": "Deployment", "namespace": "ns", "name": "w", "constraints": [entry]}
        ],
        "pending": ["ns/p"],
    }
    second = {"workloads": [], "pending": []}
    add_ranges(first, [first, second])
    assert first["runs"] == {
        "count": 2,
        "pending": {"min": 0, "median": 0.5, "max": 1},
    }
    assert entry["runs"] == {
        "domains": {
            ZONE: {
                "a": {"min": 0, "median": 1, "max": 2},
                "b": {"min": 0, "median": 0.5, "max": 1},
            }
        },
        "violated": 1,
    }
    assert "  Deployment ns/w topology.kubernetes.io/zone: violated in 1 of 2 runs" in (
        range_lines(first, 3)
    )
    assert range_lines(first, 3)[0] == "Over 2 runs (seeds 3..4):"


def test_add_ranges_keeps_apart_entries_of_one_index_and_key() -> None:
    """Two entries of one workload with the same index and topologyKey (one revision's
    DoNotSchedule, the other's ScheduleAnyway) each get their own counts' range."""

    def doc(hard: dict[str, int], soft: dict[str, int]) -> dict[str, Any]:
        entries = [
            {"index": 0, "whenUnsatisfiable": when, "topologyKey": ZONE, "domains": domains}
            for when, domains in (("DoNotSchedule", hard), ("ScheduleAnyway", soft))
        ]
        w = {"kind": "Deployment", "namespace": "ns", "name": "w", "constraints": entries}
        return {"workloads": [w], "pending": []}

    first, second = doc({"a": 1}, {"a": 5}), doc({"a": 3}, {"a": 7})
    add_ranges(first, [first, second])
    hard, soft = first["workloads"][0]["constraints"]
    assert hard["runs"]["domains"] == {ZONE: {"a": {"min": 1, "median": 2, "max": 3}}}
    assert soft["runs"]["domains"] == {ZONE: {"a": {"min": 5, "median": 6, "max": 7}}}


def test_runs_html(snapshot: str, capsys: Any) -> None:
    """-o html shows the ranges of the constraints that vary, names escaped."""
    code, out, _ = run(capsys, "--snapshot", snapshot, *DRILL, "--runs", "5", "-o", "html")
    assert code in (0, 1)
    assert "<h3>Over 5 sampled runs</h3>" in out
    assert "<b>Deployment default/web</b>" in out or "<b>ReplicaSet default/web</b>" in out


WORKLOADS = "docs/examples/workloads.json"


def test_runs_repeat_a_workload_drill(capsys: Any) -> None:
    """--runs with --scale: the first run is seed 0's scale-up, and the ranges cover
    the changed workload's constraint (a workload drill is a drill like the node ones)."""
    argv = (
        *("--snapshot", WORKLOADS, "--scale", "deploy/shop/web=12"),
        *("--now", "2026-11-27T12:00:00Z"),
    )
    doc = as_json(capsys, *argv, "--runs", "3")
    single = as_json(capsys, *argv, "--seed", "0")
    assert doc["runs"]["count"] == 3
    assert doc["workloadChanges"] == single["workloadChanges"]
    [entry] = doc["workloads"][0]["constraints"]
    assert set(entry["runs"]["domains"][ZONE]) == set(entry["domains"])
