"""bench/bench_profile.py runs at a small size and its correctness check passes: the
default profile's decision equals the node-by-node evaluation on its generated
cluster. The script's figures are not judged here (speed is measured by `make
bench-profile`, never by a test)."""

from __future__ import annotations

import re
import subprocess  # nosec B404  # runs our own bench script, fixed argument list
import sys

import pytest

from tests import paths

SCRIPT = paths.ROOT / "bench" / "bench_profile.py"
CHECK_PASSED = "correctness: the decision equals the node-by-node evaluation"


@pytest.mark.parametrize(
    ("nodes", "pods", "selected"),
    [
        pytest.param(300, 9000, True, id="300 nodes, 9000 pods: a node is selected"),
        pytest.param(
            7, 100, False, id="fewer nodes than replicas: anti-affinity blocks every node"
        ),
    ],
)
def test_bench_profile_runs_small_and_matches_the_reference(
    nodes: int, pods: int, selected: bool
) -> None:
    """Exit status 0, the generated sizes loaded, the reference check passed."""
    run = subprocess.run(  # nosec B603
        [
            sys.executable,
            str(SCRIPT),
            *("--nodes", str(nodes), "--pods", str(pods)),
            *("--runs", "2", "--rounds", "1", "--replicas", "5"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert f"{pods} pods bound, {nodes} nodes" in run.stdout
    assert CHECK_PASSED in run.stdout
    decision = re.search(r"^decision: selected (\S+),", run.stdout, re.MULTILINE)
    assert decision is not None
    assert (decision.group(1) != "None") is selected
