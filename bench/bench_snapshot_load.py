"""Reading a snapshot file (a script, not a test): `load_snapshot` as a replica reads
it (trimmed) and as the CLI reads it (full), each in a fresh process, --runs times.

    .venv/bin/python bench/bench_snapshot_load.py                  # 5,000 nodes, 150,000 pods
    .venv/bin/python bench/bench_snapshot_load.py --nodes 20000 --runs 3
    .venv/bin/python bench/bench_snapshot_load.py --twins       # the twin check alone
    .venv/bin/python bench/bench_snapshot_load.py --check       # check on a large export

The cluster is bench/bench_audit.py's (N nodes, N / 10 Deployments, 30 pods per node,
one JSON List), written once to --file. Prints each run's CPU seconds (user + system:
on a shared machine the wall time mostly measures the others), wall seconds and peak
RSS (ru_maxrss), the load average beside each, and the medians. To compare two
commits, run the script of each from its own checkout on the same --file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess  # nosec B404 - runs our own interpreter, fixed arguments
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_audit import write_cluster  # noqa: E402

PODS_PER_NODE = 30
# One load in a fresh interpreter; prints "cpu wall peak_mib".
CHILD = """\
import resource, sys, time
from webhook.cluster.files import load_snapshot
t = time.perf_counter()
load_snapshot(sys.argv[1], trimmed=sys.argv[2] == "trimmed")
u = resource.getrusage(resource.RUSAGE_SELF)
print(u.ru_utime + u.ru_stime, time.perf_counter() - t, u.ru_maxrss / 1024)
"""


def twins(path: Path) -> None:
    import tracemalloc

    from webhook.cluster import files

    objects: list[object] = []
    files.scan_list(path, objects.append)
    times = []
    for _ in range(5):
        check = files._Twins(keep_index=False)
        start = time.process_time()
        for obj in objects:
            check.see(obj)
        times.append(time.process_time() - start)
    tracemalloc.start()
    check = files._Twins(keep_index=False)
    for obj in objects:
        check.see(obj)
    held = tracemalloc.get_traced_memory()[0]
    cpu = statistics.median(times)
    print(f"twin check, {len(objects)} objects: {cpu:.2f} s CPU ({cpu / len(objects) * 1e6:.2f} "
          f"us an object, median of 5), {held / 2**20:.1f} MiB held ({held / len(objects):.0f} "
          f"bytes an object) (load {os.getloadavg()[0]:.1f})")


def check(path: Path, runs: int) -> None:
    import json

    import yaml

    exports = {suffix: path.with_suffix(f".export.{suffix}") for suffix in ("yaml", "json")}
    if not all(p.exists() for p in exports.values()):
        items = json.loads(path.read_text())["items"]
        pods = [o for o in items if o["kind"] == "Pod"][:20000]
        workloads = [o for o in items if o["kind"] not in ("Pod", "Node")]
        listed = {"apiVersion": "v1", "kind": "List", "items": workloads + pods}
        exports["yaml"].write_text(yaml.safe_dump(listed, default_flow_style=False))
        exports["json"].write_text(json.dumps(listed, indent=2))
        # A child forked now would count this process's memory in its peak RSS.
        print(f"wrote {', '.join(map(str, exports.values()))}: run again to time check")
        return
    for suffix, export in exports.items():
        runs_ = []
        for _ in range(runs):
            start = time.perf_counter()
            proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                [sys.executable, "-B", "-m", "webhook", "check", "-o", "json", str(export)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _, _, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            runs_.append((usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024))
            print(f"check {suffix}: cpu {runs_[-1][0]:.2f} s, wall {wall:.2f} s, peak RSS "
                  f"{runs_[-1][2]:.0f} MiB (load {os.getloadavg()[0]:.1f})", flush=True)
        med = statistics.median
        print(f"check {suffix}, median of {runs}: cpu {med(r[0] for r in runs_):.2f} s, peak RSS "
              f"{med(r[2] for r in runs_):.0f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--file", default="/tmp/topospread-snapshot-load.json")
    parser.add_argument("--twins", action="store_true", help="time the twin check alone")
    parser.add_argument("--check", action="store_true", help="time check on a large export")
    args = parser.parse_args()
    path = Path(args.file)
    if not path.exists():
        write_cluster(path, args.nodes, max(args.nodes // 10, 1), args.nodes * PODS_PER_NODE, 1)
    if args.twins:
        twins(path)
        return 0
    if args.check:
        check(path, args.runs)
        return 0
    for mode in ("trimmed", "full"):
        runs = []
        for _ in range(args.runs):
            out = subprocess.run(  # noqa: S603 - our own interpreter
                [sys.executable, "-B", "-c", CHILD, str(path), mode],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            cpu, wall, peak = (float(x) for x in out.split())
            runs.append((cpu, wall, peak))
            print(f"{mode}: cpu {cpu:.2f} s, wall {wall:.2f} s, peak RSS {peak:.0f} MiB "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
        med = statistics.median
        print(f"{mode}, median of {args.runs}: cpu {med(r[0] for r in runs):.2f} s, wall "
              f"{med(r[1] for r in runs):.2f} s, peak RSS {med(r[2] for r in runs):.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
