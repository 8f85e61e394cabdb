"""Benchmark of the scale-up diagnosis after the zone drill (a script, not a test).

    .venv/bin/python bench/bench_scaleup.py [--nodes 5000] [--deployments 500]
                                            [--pods 150000] [--max-pods 40] [--runs 3]

bench_audit's cluster (NODES nodes in 3 zones, one instance type, DEPLOYMENTS
Deployments, half with a zone DoNotSchedule spread) with `allocatable.pods` lowered
to MAX_PODS, so that losing zone a leaves pods pending for want of room. In one
process, --runs times, interleaved:

  drill     `audit --without-nodes topology.kubernetes.io/zone=zone-a`'s drill
            (audit.drills.outcome.without_nodes) without its diagnosis
  diagnosis audit.drills.outcome.diagnose_pending on the drill's pending pods and the state
            after it

and reports the median of each, the ratio diagnosis/drill (target <= 1) and the
load average at each run's start.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_audit  # noqa: E402 - a sibling script

from webhook.api.labels import parse_selector  # noqa: E402
from webhook.audit.drills import outcome as whatif  # noqa: E402
from webhook.audit.state.reader import read_file  # noqa: E402
from webhook.config import Settings  # noqa: E402


def lower_max_pods(path: Path, max_pods: int) -> None:
    doc = json.loads(path.read_text())
    for obj in doc["items"]:
        if obj.get("kind") == "Node":
            obj["status"]["allocatable"]["pods"] = str(max_pods)
    path.write_text(json.dumps(doc, separators=(",", ":")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--deployments", type=int, default=500)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--max-pods", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="topospread-scaleup-bench-"))
    snap = work / "cluster.json"
    bench_audit.write_cluster(snap, args.nodes, args.deployments, args.pods, args.seed)
    lower_max_pods(snap, args.max_pods)
    state = read_file(str(snap)).state()
    settings = Settings()
    selector = parse_selector("topology.kubernetes.io/zone=zone-a")
    print(
        f"cluster: {args.nodes} nodes, {args.pods} pods, allocatable pods {args.max_pods}; "
        "drill: without zone-a"
    )

    diagnose = whatif.diagnose_pending
    drills: list[float] = []
    diagnoses: list[float] = []
    loads: list[float] = []
    gc.disable()  # as the CLI runs (cli.simulate.without_cyclic_gc)
    for i in range(args.runs):
        loads.append(os.getloadavg()[0])
        whatif.diagnose_pending = lambda *_a, **_k: None  # type: ignore[assignment,misc]
        t0 = time.perf_counter()
        drill = whatif.without_nodes(state, selector, settings)
        drills.append(time.perf_counter() - t0)
        whatif.diagnose_pending = diagnose
        t0 = time.perf_counter()
        result = diagnose(drill.state, drill.replacements, settings)
        diagnoses.append(time.perf_counter() - t0)
        signatures = len({json.dumps(v.to_json()) + v.cause for v in result.verdicts.values()})
        print(
            f"run {i + 1}: drill {drills[-1]:.2f} s ({len(drill.placed)} re-placed, "
            f"{len(drill.pending)} pending), diagnosis {diagnoses[-1]:.2f} s "
            f"({len(result.groups.templates)} templates, {signatures} distinct answers)  "
            f"(load {loads[-1]:.2f})"
        )
        gc.collect()
    print(f"  {result.summary()}")
    drill_med, diag_med = statistics.median(drills), statistics.median(diagnoses)
    ratios = [d / r for d, r in zip(diagnoses, drills, strict=True)]
    print(f"drill: median {drill_med:.2f} s; diagnosis: median {diag_med:.2f} s")
    print(
        f"diagnosis/drill: median ratio {statistics.median(ratios):.4f} "
        f"(runs: {', '.join(f'{r:.4f}' for r in ratios)}; target <= 1)"
    )
    print(f"load average at each run's start: {', '.join(f'{x:.2f}' for x in loads)}")
    return 0 if statistics.median(ratios) <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
