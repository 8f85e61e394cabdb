"""Benchmark of the workload drills on the audit benchmark's cluster (a script, not a
test).

    .venv/bin/python bench/bench_workloads.py [--nodes 5000] [--deployments 500]
                                              [--pods 150000] [--runs 3]

The cluster is bench_audit.py's (NODES nodes in 3 zones, DEPLOYMENTS Deployments of
PODS / DEPLOYMENTS pods each, half of them with a zone DoNotSchedule constraint).
Each run times, as the user runs them (a fresh `python -m webhook` process each,
interleaved):

  simulate  load the snapshot and place one pod (load + decide)
  scale     `audit --snapshot F --scale deploy/ns-0/app-0=100 -o json` (300 pods -> 100)
  rollout   `audit --snapshot F --rollout deploy/ns-0/app-0 -o json` (300 replicas,
            maxSurge and maxUnavailable 25%: 75 new pods a step)

and reports the median wall time of each, its ratio to simulate in the same run
(targets: scale 2, rollout 10), each process's peak RSS (target 700 MB) and the load
average beside each run. `--now` is fixed, so every run drills the same thing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from bench_audit import add_cluster_args, make_cluster, run

NOW = "2026-11-27T12:00:00Z"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cluster_args(parser)
    args = parser.parse_args()

    snap, pod, seconds = make_cluster(args, "topospread-workloads-bench-")
    per = args.pods // args.deployments
    print(
        f"cluster: {args.nodes} nodes, {args.deployments} Deployments of {per} pods "
        f"({snap.stat().st_size / 2**20:.0f} MiB) written in {seconds:.1f} s"
    )
    target = "deploy/ns-0/app-0"
    commands = {
        "simulate": ["simulate", "--snapshot", str(snap), "--replicas", "1", pod],
        "scale": [
            "audit",
            "--snapshot",
            str(snap),
            "--scale",
            f"{target}={per // 3}",
            "--now",
            NOW,
            "-o",
            "json",
        ],
        "rollout": [
            "audit",
            "--snapshot",
            str(snap),
            "--rollout",
            target,
            "--now",
            NOW,
            "-o",
            "json",
        ],
    }
    walls: dict[str, list[float]] = {k: [] for k in commands}
    rss: dict[str, list[float]] = {k: [] for k in commands}
    ratios: dict[str, list[float]] = {k: [] for k in commands if k != "simulate"}
    docs: dict[str, dict[str, object]] = {}
    for i in range(args.runs):
        load = os.getloadavg()[0]
        for name, argv in commands.items():
            wall, peak, out, code = run(argv)
            if name != "simulate":
                if code not in (0, 1):
                    print(f"{name} failed (exit {code})")
                    return 2
                docs[name] = json.loads(out)
            walls[name].append(wall)
            rss[name].append(peak)
        for name in ratios:
            ratios[name].append(walls[name][-1] / walls["simulate"][-1])
        print(
            f"run {i + 1}: "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in walls.items())
            + f"  (load {load:.2f})"
        )
    print()
    for name in commands:
        median = statistics.median(walls[name])
        print(f"{name:>8}: median {median:.2f} s, peak RSS {max(rss[name]):.0f} MiB")
    limits = {"scale": 2.0, "rollout": 10.0}
    for name, values in ratios.items():
        print(
            f"{name}/simulate: median ratio {statistics.median(values):.2f} "
            f"(runs: {', '.join(f'{r:.2f}' for r in values)}; target <= {limits[name]})"
        )
    changes = docs["scale"]["workloadChanges"]
    assert isinstance(changes, list)
    print(f"scale: {len(changes[0]['deleted'])} pods deleted")
    steps = docs["rollout"].get("steps")
    assert isinstance(steps, list)
    print(f"rollout: {len(steps)} steps, stalled: {docs['rollout'].get('stalled')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
