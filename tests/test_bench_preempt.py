"""bench/bench_preempt.py runs at a small size and its correctness check passes: on the
full cluster the high-priority pod preempts, and its nomination equals a dry run of
every filter plugin. The figures are not judged here (`make bench-preempt` measures)."""

from __future__ import annotations

import subprocess  # nosec B404  # runs our own bench script, fixed argument list
import sys

from tests import paths

SCRIPT = paths.ROOT / "bench" / "bench_preempt.py"


def test_bench_preempt_runs_small_and_matches_the_reference() -> None:
    """Exit status 0, a preemption reported, the reference check passed."""
    run = subprocess.run(  # nosec B603
        [
            sys.executable,
            str(SCRIPT),
            *("--nodes", "60", "--pods", "1800", "--runs", "1", "--rounds", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "60 nodes" in run.stdout
    assert " preempts " in run.stdout
    assert "correctness: the nomination equals a dry run of every filter plugin" in run.stdout
