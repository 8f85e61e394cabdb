"""The biggest clusters (a script, not a test): `audit -o json` and a webhook replica
(`serve --snapshot`, one worker) on generated clusters of 20,000 and 65,000 nodes.

    .venv/bin/python bench/bench_scale.py                         # make bench-scale
    .venv/bin/python bench/bench_scale.py --sizes 5000,20000 --runs 3

For each size N: writes bench/bench_audit.py's cluster with N nodes, N / 10 Deployments
and 30 pods per node (65,000 nodes: 1,950,000 pods, GKE's limit) as one JSON List, then

  audit     `audit --snapshot F -o json`, --runs times: wall seconds and peak RSS
            (the process's own accounting, wait4's ru_maxrss)
  replica   `serve --snapshot F --workers 1` (TLS on a free loopback port), --runs
            times: the seconds until /readyz answers 200, then the resident memory of
            the master and the worker (VmRSS) and their proportional share (Pss from
            /proc/PID/smaps_rollup: the worker shares the master's pages, so Pss
            summed is what the replica holds, RSS summed counts shared pages twice)

and prints each figure's median and the load average before and after.
Targets at 65,000 nodes (docs/performance.md): audit <= 180 s and <= 4 GB peak; the
replica ready within 180 s, holding <= 2 GB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import ssl
import statistics
import subprocess  # nosec B404  # runs our own server, fixed argument list
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_audit import run, write_cluster  # noqa: E402
from bench_replica import children, rss_mib, wait_ready  # noqa: E402

from tests.live_server import free_port  # noqa: E402
from webhook.install.certs import generate  # noqa: E402

PODS_PER_NODE = 30


def pss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def replica(snapshot: Path, work: Path) -> tuple[float, float, float, float]:
    """(seconds to ready, master RSS, worker RSS, Pss of both) of one serve process."""
    port = free_port()
    argv = [sys.executable, "-m", "webhook.cli.main", "serve", "--snapshot", str(snapshot),
            "--cert-dir", str(work / "certs"), "--bind", f"127.0.0.1:{port}",
            "--workers", "1"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOPOSPREAD_LOG_LEVEL": "WARNING"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log_path = work / "serve.log"
    ctx = ssl.create_default_context(cafile=str(work / "certs" / "ca.crt"))
    with log_path.open("wb") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=log)  # nosec B603
        try:
            wait_ready(proc, port, ctx, log_path, 0.2)
            ready = time.monotonic() - t0
            time.sleep(2.0)
            workers = children(proc.pid)
            master = rss_mib(proc.pid)
            worker = sum(rss_mib(w) for w in workers)
            pss = pss_mib(proc.pid) + sum(pss_mib(w) for w in workers)
        finally:
            proc.terminate()
            proc.wait(timeout=120)
    return ready, master, worker, pss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,65000", help="node counts, comma-separated")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="write the clusters here and keep them")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="topospread-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    generate("topospread", "topospread", work / "certs", days=2)
    print(f"load average before: {os.getloadavg()}", flush=True)
    try:
        for nodes in (int(n) for n in args.sizes.split(",")):
            snap = work / f"cluster-{nodes}.json"
            t0 = time.perf_counter()
            if not snap.exists():
                write_cluster(snap, nodes, max(nodes // 10, 1), nodes * PODS_PER_NODE, args.seed)
            size = snap.stat().st_size / 2**30
            print(f"{nodes} nodes, {nodes * PODS_PER_NODE} pods: {size:.2f} GiB snapshot "
                  f"({time.perf_counter() - t0:.0f} s to write)", flush=True)
            audits = []
            for _ in range(args.runs):
                wall, peak, _, code = run(["audit", "--snapshot", str(snap), "-o", "json"])
                if code not in (0, 1):
                    raise SystemExit(f"audit exited {code}")
                audits.append((wall, peak))
                print(f"  audit -o json: {wall:.1f} s, peak RSS {peak:.0f} MiB "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            replicas = []
            for _ in range(args.runs):
                ready, master, worker, pss = replica(snap, work)
                replicas.append((ready, master, worker, pss))
                print(f"  replica: ready after {ready:.1f} s; RSS master {master:.0f} MiB, "
                      f"worker {worker:.0f} MiB; Pss of both {pss:.0f} MiB "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            med = statistics.median
            print(f"  median of {args.runs}: audit {med(a[0] for a in audits):.1f} s, "
                  f"{med(a[1] for a in audits):.0f} MiB; replica ready "
                  f"{med(r[0] for r in replicas):.1f} s, Pss {med(r[3] for r in replicas):.0f} "
                  f"MiB", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
