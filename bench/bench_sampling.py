"""Benchmark of sampled runs in one process (a script, not a test).

    .venv/bin/python bench/bench_sampling.py --snapshot DIR/cluster.json --pod DIR/pod.json
                                             [--replicas 10] [--runs 20] [--rounds 3]

Reads the cluster (`bench_audit.py --keep DIR` writes one: 5,000 nodes, 150,000 pods)
once, then times, each --rounds times: one sampled run of `simulate --replicas
REPLICAS` (seed 0, as `simulate --seed 0` runs it) and the RUNS runs of `simulate
--runs RUNS` after loading (the first in this process, the others in forked worker
processes, as cli/simulate.py runs them). Reports the medians, their ratio (target
<= 3), the same with every node scored (no sampling) for scale, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from webhook.cli.simulate import (  # noqa: E402
    _outcome,
    more_runs,
    outcome_ranges,
    read_pod,
    without_cyclic_gc,
)
from webhook.cluster.files import load_snapshot  # noqa: E402
from webhook.scheduler.placement import Sampler, simulate  # noqa: E402
from webhook.scheduler.profile import framework_of  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--pod", required=True)
    parser.add_argument("--replicas", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: one per core)"
    )
    args = parser.parse_args()
    with without_cyclic_gc():
        t = time.perf_counter()
        snap = load_snapshot(args.snapshot)
        print(f"loaded {len(snap.nodes)} nodes in {time.perf_counter() - t:.1f} s")
        pod = read_pod(args.pod)
        fw = framework_of()
        one: list[float] = []
        many: list[float] = []
        plain: list[float] = []
        loads: list[float] = []
        for i in range(args.rounds):
            loads.append(os.getloadavg()[0])
            t = time.perf_counter()
            simulate(pod, snap, replicas=args.replicas, framework=fw)
            plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            first = simulate(pod, snap, replicas=args.replicas, framework=fw, sampler=Sampler(0, 0))
            one.append(time.perf_counter() - t)
            t = time.perf_counter()
            sim = simulate(pod, snap, replicas=args.replicas, framework=fw, sampler=Sampler(0, 0))
            seeds = range(1, args.runs)
            others = more_runs(pod, snap, args.replicas, fw, 0, seeds, args.workers)
            runs = outcome_ranges([_outcome(sim), *others])
            many.append(time.perf_counter() - t)
            assert runs["count"] == args.runs and first.placements == sim.placements
            print(
                f"round {i + 1}: every node scored {plain[-1]:.2f} s, one sampled run "
                f"{one[-1]:.2f} s, {args.runs} runs {many[-1]:.2f} s (load {loads[-1]:.2f})"
            )
    m_one, m_many = statistics.median(one), statistics.median(many)
    each = ", ".join(f"{b / a:.2f}" for a, b in zip(one, many, strict=True))
    print(
        f"median: every node scored {statistics.median(plain):.2f} s, one sampled run "
        f"{m_one:.2f} s, {args.runs} runs {m_many:.2f} s: ratio {m_many / m_one:.2f} "
        f"(target <= 3; rounds: {each})"
    )
    print(f"cores {os.cpu_count()}, load average at each round's start: {loads}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
