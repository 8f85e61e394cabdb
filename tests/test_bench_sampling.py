"""bench/bench_sampling.py runs at a small size (its check: the first of the --runs
runs equals one sampled run). The figures are not judged here (`make bench-sampling`
and the script itself on the 5,000-node cluster measure)."""

from __future__ import annotations

import subprocess  # nosec B404  # runs our own bench script, fixed argument list
import sys

from tests import paths

SCRIPT = paths.ROOT / "bench" / "bench_sampling.py"
DATA = paths.ROOT / "tests" / "data" / "snapshots"


def test_bench_sampling_runs_small() -> None:
    run = subprocess.run(  # nosec B603
        [
            sys.executable,
            str(SCRIPT),
            *("--snapshot", str(DATA / "fleet-150.json")),
            *("--pod", str(DATA / "fleet-web.yaml")),
            *("--replicas", "3", "--runs", "4", "--rounds", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "loaded 150 nodes" in run.stdout
    assert "4 runs" in run.stdout and "ratio" in run.stdout
