"""simulate --percentage-of-nodes-to-score / --seed / --runs: the sampled answer on every
surface, the same seed giving the same answer, the ranges over runs (docs/simulate.md,
interfaces.md "At scale, as kube-scheduler runs it")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import DNS, ZONE, constraint, make_node, make_pod, selector
from webhook.cli import simulate as cli_simulate
from webhook.cli.main import main
from webhook.cli.simulate import outcome_ranges


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """150 nodes in 3 zones (so kube-scheduler samples: 100 of them), and a pod
    spreading over the zones."""
    root = tmp_path_factory.mktemp("sampling")
    nodes = [
        make_node()
        .name(f"node-{i:03d}")
        .zone(f"zone-{'abc'[i % 3]}")
        .hostname()
        .allocatable(cpu="8", memory="32Gi", pods="110")
        .obj()
        for i in range(150)
    ]
    snapshot = root / "cluster.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    pod = (
        make_pod()
        .name("web")
        .label("app", "web")
        .requests(cpu="250m")
        .constraints([constraint(1, ZONE, DNS, selector({"app": "web"}))])
        .obj()
    )
    pod_file = root / "web.json"
    pod_file.write_text(json.dumps(pod))
    return str(snapshot), str(pod_file)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def test_without_the_options_nothing_changes(capsys, cluster) -> None:
    """No sampling key, no runs, the best node first by name."""
    snapshot, pod = cluster
    doc = as_json(capsys, "--snapshot", snapshot, "--replicas", "3", pod)
    assert "sampling" not in doc and "runs" not in doc
    assert doc["selectedNode"] == "node-000"
    assert doc["placements"] == ["node-000", "node-001", "node-002"]


def test_the_same_seed_gives_the_same_answer(capsys, cluster) -> None:
    """--seed: sampled (100 of 150 nodes scored), the same document for the same seed;
    another seed places elsewhere."""
    snapshot, pod = cluster
    argv = ("--snapshot", snapshot, "--replicas", "6", pod)
    one = as_json(capsys, "--seed", "5", *argv)
    assert one == as_json(capsys, "--seed", "5", *argv)
    assert one["sampling"]["numFeasibleNodesToFind"] == 100
    assert one["sampling"]["percentageOfNodesToScore"] == 0
    assert len(one["sampling"]["scoredNodes"]) == 100
    assert one["selectedNode"] in one["sampling"]["scoredNodes"]
    other = as_json(capsys, "--seed", "6", *argv)
    assert other["placements"] != one["placements"]


def test_a_percentage_of_nodes_to_score(capsys, cluster) -> None:
    """--percentage-of-nodes-to-score 100: every node found and scored, ties drawn."""
    snapshot, pod = cluster
    doc = as_json(capsys, "--snapshot", snapshot, "--percentage-of-nodes-to-score", "100", pod)
    assert doc["sampling"]["numFeasibleNodesToFind"] == 150
    assert len(doc["sampling"]["scoredNodes"]) == 150


def test_runs_report_the_ranges(capsys, cluster) -> None:
    """--runs 4: the first run's document (seed 0) and `runs` as the spec shapes it: a
    zone spread of 6 copies ends 2/2/2 in every run; the first copy's node counted per
    run."""
    snapshot, pod = cluster
    doc = as_json(capsys, "--snapshot", snapshot, "--replicas", "6", "--runs", "4", pod)
    runs = doc["runs"]
    assert runs["count"] == 4
    assert runs["pending"] == {"min": 0, "median": 0, "max": 0}
    two = {"min": 2, "median": 2, "max": 2}
    assert runs["domains"] == {ZONE: {"zone-a": two, "zone-b": two, "zone-c": two}}
    assert sum(runs["selectedNodes"].values()) == 4
    assert doc["selectedNode"] in runs["selectedNodes"]
    seeds = [as_json(capsys, "--snapshot", snapshot, "--seed", str(s), pod) for s in range(4)]
    chosen: dict[str, int] = {}
    for d in seeds:
        chosen[d["selectedNode"]] = chosen.get(d["selectedNode"], 0) + 1
    assert runs["selectedNodes"] == chosen


def test_runs_in_worker_processes_equal_runs_one_by_one(
    capsys, cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forked workers answer what the runs give one after another."""
    snapshot, pod = cluster
    argv = ("--snapshot", snapshot, "--replicas", "4", "--runs", "5", pod)
    monkeypatch.setattr(cli_simulate, "processes", lambda jobs: 2)
    parallel = as_json(capsys, *argv)
    monkeypatch.setattr(cli_simulate, "processes", lambda jobs: 1)
    assert as_json(capsys, *argv) == parallel


def test_runs_text_shows_the_ranges(capsys, cluster) -> None:
    snapshot, pod = cluster
    code, out, _ = run(capsys, "--snapshot", snapshot, "--runs", "3", "--seed", "2", pod)
    assert code == 0
    assert "Sampled as kube-scheduler (percentageOfNodesToScore adaptive): 100 node(s)" in out
    assert "Over 3 runs (seeds 2..4):" in out
    assert "  pending copies  0" in out


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--percentage-of-nodes-to-score", "101", "must be in 0..100, got 101"),
        ("--percentage-of-nodes-to-score", "-1", "must be in 0..100, got -1"),
        ("--runs", "0", "--runs must be at least 1, got 0"),
        ("--seed", "-3", "--seed must be 0 or more, got -3"),
    ],
)
def test_bad_sampling_flags_exit_2(capsys, cluster, flag: str, value: str, message: str) -> None:
    snapshot, pod = cluster
    code, out, err = run(capsys, "--snapshot", snapshot, flag, value, pod)
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err


def test_outcome_ranges() -> None:
    """min / median / max per domain (a domain absent from a run counts 0 there), the
    pending copies, the first copy's node per run."""
    outcomes: list[tuple[str | None, int, dict[str, dict[str, int]]]] = [
        ("a", 0, {ZONE: {"z1": 3, "z2": 1}}),
        ("b", 1, {ZONE: {"z1": 2}}),
        (None, 4, {}),
        ("a", 1, {ZONE: {"z1": 2, "z2": 2}}),
    ]
    assert outcome_ranges(outcomes) == {
        "count": 4,
        "pending": {"min": 0, "median": 1, "max": 4},
        "domains": {
            ZONE: {
                "z1": {"min": 0, "median": 2, "max": 3},
                "z2": {"min": 0, "median": 0.5, "max": 2},
            }
        },
        "selectedNodes": {"a": 2, "b": 1},
    }


def test_runs_html(capsys, cluster) -> None:
    """-o html: the sampled cycle and the ranges over the runs."""
    snapshot, pod = cluster
    code, out, _ = run(capsys, "--snapshot", snapshot, "--runs", "3", "-o", "html", pod)
    assert code == 0
    assert "Sampled as kube-scheduler: 100 of 150 nodes scored" in out
    assert "<h3>Over 3 sampled runs</h3><p>pending copies: 0</p>" in out
    assert "drawn at random from the seed" in out


def test_the_docs_examples_print_what_the_page_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/simulate.md's sampling examples on tests/data/snapshots/fleet-150.json: the
    first lines (and, elided with "...", the rest) are the command's own output."""
    import re
    import shlex

    from tests.paths import ROOT

    page = (ROOT / "docs" / "simulate.md").read_text()
    start = page.index("## Sampling, random ties and outcome ranges")
    section = page[start : page.index("## From Python")]
    blocks = re.findall(r"```\n\$ (topospread [^\n|]+?)(?: \| ([^\n]+))?\n(.*?)```", section, re.S)
    assert len(blocks) == 4
    monkeypatch.chdir(ROOT)
    for command, pipe, shown in blocks:
        main(shlex.split(command)[1:])
        out = capsys.readouterr().out
        if pipe == "tail -7":
            out = "".join(out.splitlines(keepends=True)[-7:])
        elif pipe:  # the jq filter of the JSON example: checked by its keys
            doc = json.loads(out)
            assert (
                json.loads(shown)["numFeasibleNodesToFind"]
                == (doc["sampling"]["numFeasibleNodesToFind"])
            )
            continue
        for part in shown.split("...\n"):
            assert part in out, part
