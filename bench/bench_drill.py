"""The zone drill in one process (a script, not a test): the snapshot loaded once, then
`--without-nodes topology.kubernetes.io/zone=zone-a` run with the drill alone timed, in
CPU seconds beside wall seconds (on a shared machine the wall time mostly measures the
others), and a digest of every re-placed pod and its node, so two trees can be shown
to place alike.

    .venv/bin/python bench/bench_audit.py --nodes 2000 --deployments 200 --pods 60000 \\
        --only simulate --runs 1 --keep /tmp/drill2k
    .venv/bin/python bench/bench_drill.py /tmp/drill2k/cluster.json            # sampled
    .venv/bin/python bench/bench_drill.py /tmp/drill2k/cluster.json --percentage 100

`--percentage P`: --percentage-of-nodes-to-score (default 0, adaptive); `--runs N`: the
drill N times on the one loaded state, each reported, then the median.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webhook.audit.drills.outcome import without_nodes  # noqa: E402
from webhook.cli.audit import read_state  # noqa: E402
from webhook.config import SamplingOptions, Settings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--percentage", type=int, default=0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    gc.disable()  # as the CLI runs a drill (without_cyclic_gc)
    t0 = time.perf_counter()
    state = read_state(argparse.Namespace(snapshot=args.snapshot), sys.stderr)
    print(f"loaded in {time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})")
    settings = replace(Settings(), sampling=SamplingOptions(args.percentage, args.seed))
    zone_a = {"matchLabels": {"topology.kubernetes.io/zone": "zone-a"}}
    rates = []
    for i in range(args.runs):
        load = os.getloadavg()[0]
        cpu, wall = time.process_time(), time.perf_counter()
        drill = without_nodes(state, zone_a, settings)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        placed = len(drill.placed)
        digest = hashlib.sha256(json.dumps(sorted(drill.placed.items())).encode()).hexdigest()
        rates.append(placed / cpu)
        print(f"run {i + 1}: {placed} placed, {len(drill.pending)} pending; {wall:.1f} s wall, "
              f"{cpu:.1f} s CPU: {placed / cpu:.0f} pods per CPU second (load {load:.1f}); "
              f"placements {digest[:16]}", flush=True)
    print(f"median: {statistics.median(rates):.0f} pods per CPU second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
