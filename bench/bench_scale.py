"""The biggest clusters (a script, not a test): `audit -o json`, a webhook replica
(`serve --snapshot`, one worker) and the sampled zone drill on generated clusters of
20,000 and 65,000 nodes.

    .venv/bin/python bench/bench_scale.py                         # make bench-scale
    .venv/bin/python bench/bench_scale.py --sizes 5000,20000 --runs 3
    .venv/bin/python bench/bench_scale.py --only drill --drill-limit 900

For each size N: writes bench/bench_audit.py's cluster with N nodes, N / 10 Deployments
and 30 pods per node (65,000 nodes: 1,950,000 pods, GKE's limit) as one JSON List, then

  audit     `audit --snapshot F -o json`, --runs times: wall seconds and peak RSS
            (the process's own accounting, wait4's ru_maxrss)
  replica   `serve --snapshot F --workers 1` (TLS on a free loopback port), --runs
            times: the seconds until /readyz answers 200, then the resident memory of
            the master and the worker (VmRSS) and their proportional share (Pss from
            /proc/PID/smaps_rollup: the worker shares the master's pages, so Pss
            summed is what the replica holds, RSS summed counts shared pages twice)
  drill     `audit --snapshot F --without-nodes topology.kubernetes.io/zone=zone-a
            --percentage-of-nodes-to-score 0 -o json`: a third of the nodes lost, their
            pods re-placed sampled as kube-scheduler samples (adaptive
            percentageOfNodesToScore), --runs times, each stopped after --drill-limit
            seconds: wall seconds, peak RSS, and the pods re-placed per second of the
            drill's own (its wall time less that of `simulate --snapshot F pod.json`,
            load and one decision, timed once per size)

and prints each figure's median and the load average beside each run.
Targets at 65,000 nodes (docs/performance.md): audit <= 90 s; the replica ready within
60 s, holding no more than before (1.8 GB); the sampled drill done within 10 minutes
and 6 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

from bench_audit import CPU, ZONE, run, write_cluster  # noqa: E402
from bench_replica import children, rss_mib, wait_ready  # noqa: E402

from tests.live_server import free_port  # noqa: E402
from webhook.install.certs import generate  # noqa: E402

PODS_PER_NODE = 30
DRILL = f"{ZONE}=zone-a"


def zone_a_pods(nodes: int, pods: int, seed: int) -> int:
    """How many pods write_cluster binds to zone-a's nodes (node i is in zone-a when i %
    3 is 0): its random draws replayed, the file left unread (at 65,000 nodes decoding
    it whole would take 10 GB)."""
    rng = random.Random(seed)  # nosec B311  # the generator's own seeded draws
    deployments = max(nodes // 10, 1)
    per = pods // deployments
    return sum(1 for _ in range(per * deployments) if rng.randrange(nodes) % 3 == 0)


def bounded(argv: list[str], limit: float) -> tuple[float, float, str, int | None]:
    """(wall seconds, peak RSS MiB, stdout, exit code) of one `python -m webhook` process,
    killed after `limit` seconds (exit code None then); its CPU seconds appended to CPU."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(  # nosec B603  # our own interpreter and module
            [sys.executable, "-m", "webhook", *argv], stdout=out, cwd=ROOT
        )
        code: int | None = None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() - start > limit:
                proc.kill()
                _, _, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.5)
        wall = time.perf_counter() - start
        CPU.append(usage.ru_utime + usage.ru_stime)
        proc.returncode = code if code is not None else -9
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read().decode(), code


def drill(snap: Path, pod: Path, nodes: int, seed: int, runs: int, limit: float) -> None:
    """The sampled zone drill on `snap`, `runs` times (see the module docstring)."""
    load, _, _, code = run(["simulate", "--snapshot", str(snap), "--replicas", "1", str(pod)])
    if code != 0:
        raise SystemExit(f"simulate exited {code}")
    load_cpu = CPU[-1]
    displaced = zone_a_pods(nodes, nodes * PODS_PER_NODE, seed)
    print(f"  simulate (load + one decision): {load:.1f} s, {load_cpu:.1f} s CPU (load "
          f"{os.getloadavg()[0]:.1f}); zone-a holds {displaced} pods", flush=True)
    argv = ["audit", "--snapshot", str(snap), "--without-nodes", DRILL,
            "--percentage-of-nodes-to-score", "0", "-o", "json"]
    done = []
    for _ in range(runs):
        before = os.getloadavg()[0]
        wall, peak, out, code = bounded(argv, limit)
        cpu = CPU[-1]
        if code is None:
            print(f"  sampled zone drill: not done after {wall:.0f} s ({cpu:.0f} s CPU), peak "
                  f"RSS {peak:.0f} MiB (load {before:.1f} at its start, "
                  f"{os.getloadavg()[0]:.1f} at its end)", flush=True)
            continue
        if code not in (0, 1):
            raise SystemExit(f"the drill exited {code}")
        placed = displaced - len(json.loads(out).get("pending", []))
        rate = placed / max(wall - load, 1e-9)
        # On a shared machine the wall time mostly measures the others: per CPU second too.
        per_cpu = placed / max(cpu - load_cpu, 1e-9)
        done.append((wall, peak, rate, per_cpu))
        print(f"  sampled zone drill: {wall:.1f} s ({cpu:.1f} s CPU), peak RSS {peak:.0f} MiB, "
              f"{placed} pods re-placed, {rate:.0f} pods/s of its own ({per_cpu:.0f} per CPU "
              f"second; load {before:.1f} at its start, {os.getloadavg()[0]:.1f} at its end)",
              flush=True)
    if done:
        med = statistics.median
        print(f"  sampled zone drill, median of {len(done)}: {med(d[0] for d in done):.1f} s, "
              f"{med(d[1] for d in done):.0f} MiB, {med(d[2] for d in done):.0f} pods/s, "
              f"{med(d[3] for d in done):.0f} pods per CPU second",
              flush=True)


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
    parser.add_argument("--only", default="audit,replica,drill",
                        help="what to time, comma-separated (audit, replica, drill)")
    parser.add_argument("--drill-limit", type=float, default=1800.0, metavar="SECONDS",
                        help="stop a drill after this long (default 1800)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    work = Path(args.keep or tempfile.mkdtemp(prefix="topospread-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    generate("topospread", "topospread", work / "certs", days=2)
    print(f"load average before: {os.getloadavg()}", flush=True)
    try:
        for nodes in (int(n) for n in args.sizes.split(",")):
            snap = work / f"cluster-{nodes}.json"
            t0 = time.perf_counter()
            pod = work / f"pod-{nodes}.json"
            if not snap.exists() or not pod.exists():
                written = write_cluster(
                    snap, nodes, max(nodes // 10, 1), nodes * PODS_PER_NODE, args.seed
                )
                Path(written).replace(pod)
            size = snap.stat().st_size / 2**30
            print(f"{nodes} nodes, {nodes * PODS_PER_NODE} pods: {size:.2f} GiB snapshot "
                  f"({time.perf_counter() - t0:.0f} s to write)", flush=True)
            audits = []
            for _ in range(args.runs if "audit" in only else 0):
                wall, peak, _, code = run(["audit", "--snapshot", str(snap), "-o", "json"])
                if code not in (0, 1):
                    raise SystemExit(f"audit exited {code}")
                audits.append((wall, peak))
                print(f"  audit -o json: {wall:.1f} s, peak RSS {peak:.0f} MiB "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            replicas = []
            for _ in range(args.runs if "replica" in only else 0):
                ready, master, worker, pss = replica(snap, work)
                replicas.append((ready, master, worker, pss))
                print(f"  replica: ready after {ready:.1f} s; RSS master {master:.0f} MiB, "
                      f"worker {worker:.0f} MiB; Pss of both {pss:.0f} MiB "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            med = statistics.median
            if audits and replicas:
                print(f"  median of {args.runs}: audit {med(a[0] for a in audits):.1f} s, "
                      f"{med(a[1] for a in audits):.0f} MiB; replica ready "
                      f"{med(r[0] for r in replicas):.1f} s, Pss "
                      f"{med(r[3] for r in replicas):.0f} MiB", flush=True)
            if "drill" in only:
                drill(snap, pod, nodes, args.seed, args.runs, args.drill_limit)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
