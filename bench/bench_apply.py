"""Benchmark of the work `audit --apply` does per step besides the API calls (a script,
not a test).

    .venv/bin/python bench/bench_apply.py [--nodes 5000] [--deployments 500] [--pods 150000]
                                          [--steps 5]

Builds bench_audit.py's cluster (the same generator and seed), reads it into a
ClusterState as a live read does, audits it and makes its plan once, then for the
first STEPS moves of the plan times, in one process:

  predict   steps.predict: the replacement's domains and the skews after the move
            (the planner's copy of the cluster, the pod's namespace tracked)
  audit     spread.evaluate on the state after the move: the audit a step runs again
            on what it reads (the read itself, a paginated list, is not included)

and prints the median of each with the load average. The state after each move is
built by moving the pod in the objects and collecting them again, as a fresh read
would give it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_audit import write_cluster  # noqa: E402 - after the path is set
from webhook.audit.act.evictor import seen_from  # noqa: E402
from webhook.audit.act.steps import predict  # noqa: E402
from webhook.audit.measure.spread import evaluate  # noqa: E402
from webhook.audit.plan.planner import make_plan  # noqa: E402
from webhook.config import Settings  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--deployments", type=int, default=500)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        write_cluster(path, args.nodes, args.deployments, args.pods, args.seed)
        items: list[dict[str, Any]] = json.loads(path.read_text())["items"]
    started = time.perf_counter()
    seen = seen_from(items)
    spreads = evaluate(seen.state)
    print(f"read and audit: {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    plan = make_plan(seen.state, spreads, settings)
    print(f"plan: {len(plan.moves)} moves in {time.perf_counter() - started:.1f} s", flush=True)
    pods = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in items
        if o.get("kind") == "Pod"
    }
    timings: dict[str, list[float]] = {"predict": [], "audit": []}
    for move in plan.moves[: args.steps]:
        started = time.perf_counter()
        predict(seen.state, spreads, move, settings)
        timings["predict"].append(time.perf_counter() - started)
        pods[move.pod]["spec"]["nodeName"] = move.to_node
        seen = seen_from(items)
        started = time.perf_counter()
        spreads = evaluate(seen.state)
        timings["audit"].append(time.perf_counter() - started)
    for name, values in timings.items():
        if values:
            print(
                f"{name}: median {statistics.median(values):.2f} s over {len(values)} steps "
                f"(min {min(values):.2f}, max {max(values):.2f})"
            )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
