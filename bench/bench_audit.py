"""Benchmark of `topospread audit` on a large cluster (a script, not a test).

    .venv/bin/python bench/bench_audit.py [--nodes 5000] [--deployments 500] [--pods 150000]
                                          [--runs 3] [--html] [--costs]

Generates NODES nodes in 3 zones and DEPLOYMENTS Deployments, each with a ReplicaSet
owning PODS / DEPLOYMENTS pods placed on nodes at random; half of the apps carry a
zone DoNotSchedule constraint (maxSkew 1) and a hostname ScheduleAnyway one. Writes
it as the kubectl-style JSON List `audit --snapshot` reads, then runs, as the user
would (each a fresh `python -m webhook` process, interleaved, --runs times):

  simulate     load the snapshot and place one pod (`simulate --snapshot F pod.json`)
  audit        `audit --snapshot F -o json`
  plan         `audit --snapshot F --plan -o json`
  without      `audit --snapshot F --without-nodes topology.kubernetes.io/zone=zone-a -o json`
  unreachable  `audit --snapshot F --unreachable-nodes topology.kubernetes.io/zone=zone-a -o json`
  drain        `audit --snapshot F --drain-nodes bench.topospread.io/batch=b00 -o json` (50 nodes)

and reports the median wall time of each, each one's ratio to simulate in the same run
(targets: audit 1.5, plan 4, the zone drills 15, drain 3), each process's peak RSS
(target 700 MB) and the load average. `--only NAME,...` runs those (and simulate).
With --html (`make bench-report`) each run also times

  html       `audit --snapshot F -o html`
  soft-json  `audit --snapshot F --include-soft -o json` (the hostname constraints too:
  soft-html  `... -o html`                                5,000 domains each)

and reports html/audit and soft-html/soft-json per run (target 1.2) and the size of
each page (target 5 MB). With --costs (`make bench-costs`) each run also times

  costs      `audit --snapshot F --deletion-costs -o json` (the costs of every pod of
             every constrained Deployment, docs/deletion-costs.md)

and reports costs/audit per run (target 1.5) and checks that every pod of a constrained
Deployment got a cost (exit 1 otherwise). With --sampling (`make bench-sampling`) each
run also times

  sampled    `simulate --snapshot F --replicas 10 --seed 0 pod.json` (one sampled run)
  runs20     `simulate --snapshot F --replicas 10 --runs 20 pod.json` (20 seeds)

and reports runs20/sampled per run (target 3), whole processes and without the load
(each minus simulate's wall time, which is almost all loading the snapshot).
`--percentage P` runs the drills sampled (`--percentage-of-nodes-to-score P`), and the
`without` drill reports the pods it re-placed per second of its own (its wall time
less simulate's; target 460 with P 0, scheduler_perf's figure).
Finally it applies the plan's moves to the snapshot and audits
the result: a complete plan must leave 0 violations (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
BATCH = "bench.topospread.io/batch"
# The CPU seconds (user + system) of each run() process, in order.
CPU: list[float] = []


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                HOSTNAME: name,
                ZONE: f"zone-{'abc'[i % 3]}",
                "topology.kubernetes.io/region": "region-1",
                "node.kubernetes.io/instance-type": "m5.2xlarge",
                # 100 batches of 50 nodes (across the zones): what --drain-nodes takes.
                BATCH: f"b{i % 100:02d}",
            },
        },
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
    }


def constraints(app: str) -> list[dict[str, Any]]:
    selector = {"matchLabels": {"app": app}}
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
            "matchLabelKeys": ["pod-template-hash"],
        },
        {
            "maxSkew": 1,
            "topologyKey": HOSTNAME,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": selector,
            "matchLabelKeys": ["pod-template-hash"],
        },
    ]


def template_spec(app: str, spread: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": f"registry.example.com/{app}:1.0",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ]
    }
    if spread:
        spec["topologySpreadConstraints"] = constraints(app)
    return spec


def write_cluster(path: Path, nodes: int, deployments: int, pods: int, seed: int) -> str:
    """The snapshot file, and one pod file for `simulate` (a new replica of app 0)."""
    rng = random.Random(seed)
    per = pods // deployments
    with path.open("w") as out:
        out.write('{"apiVersion":"v1","kind":"List","items":[')
        first = True

        def emit(obj: dict[str, Any]) -> None:
            nonlocal first
            out.write(("" if first else ",") + json.dumps(obj, separators=(",", ":")))
            first = False

        for i in range(nodes):
            emit(node(i))
        for d in range(deployments):
            ns, app = f"ns-{d % 50}", f"app-{d}"
            spread = d % 2 == 0
            rs = f"{app}-7d4b9c"
            labels = {"app": app, "pod-template-hash": "7d4b9c"}
            emit(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": app, "namespace": ns, "uid": f"uid-d-{d}"},
                    "spec": {
                        "replicas": per,
                        "selector": {"matchLabels": {"app": app}},
                        "template": {
                            "metadata": {"labels": {"app": app}},
                            "spec": template_spec(app, spread),
                        },
                    },
                }
            )
            emit(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": rs,
                        "namespace": ns,
                        "uid": f"uid-rs-{d}",
                        "labels": labels,
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": app,
                                "uid": f"uid-d-{d}",
                                "controller": True,
                            }
                        ],
                    },
                    "spec": {"replicas": per, "selector": {"matchLabels": labels}},
                }
            )
            for p in range(per):
                emit(
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {
                            "name": f"{rs}-{p:05d}",
                            "namespace": ns,
                            "uid": f"uid-p-{d}-{p}",
                            "labels": labels,
                            "creationTimestamp": "2026-11-01T00:00:00Z",
                            "ownerReferences": [
                                {
                                    "apiVersion": "apps/v1",
                                    "kind": "ReplicaSet",
                                    "name": rs,
                                    "uid": f"uid-rs-{d}",
                                    "controller": True,
                                }
                            ],
                        },
                        "spec": {
                            **template_spec(app, spread),
                            "nodeName": f"node-{rng.randrange(nodes):05d}",
                        },
                        "status": {"phase": "Running"},
                    }
                )
        out.write("]}")
    pod_file = path.with_name("pod.json")
    pod_file.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "app-0-7d4b9c-new",
                    "namespace": "ns-0",
                    "labels": {"app": "app-0", "pod-template-hash": "7d4b9c"},
                },
                "spec": template_spec("app-0", True),
            }
        )
    )
    return str(pod_file)


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    """The generated cluster's size and seed, the runs, and --keep (bench_workloads.py
    takes the same)."""
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--deployments", type=int, default=500)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")


def make_cluster(args: argparse.Namespace, prefix: str) -> tuple[Path, str, float]:
    """The cluster of `args` written as cluster.json in --keep DIR (or a new temporary
    folder named from `prefix`): (its path, the pod file simulate places, seconds)."""
    work = Path(args.keep or tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    snap = work / "cluster.json"
    t0 = time.perf_counter()
    pod = write_cluster(snap, args.nodes, args.deployments, args.pods, args.seed)
    return snap, pod, time.perf_counter() - t0


def run(argv: list[str]) -> tuple[float, float, str, int]:
    """(wall seconds, peak RSS MiB, stdout, exit code) of one `python -m webhook` process."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "webhook", *argv], stdout=out, cwd=ROOT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        # CPU seconds too: on a shared machine the wall time mostly measures the others.
        CPU.append(usage.ru_utime + usage.ru_stime)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read().decode(), proc.returncode


def pods_on(path: Path, zone: str) -> int:
    """How many pods of the cluster file are bound to a node of `zone`."""
    items = json.loads(path.read_text())["items"]
    nodes = {
        o["metadata"]["name"]
        for o in items
        if o["kind"] == "Node" and o["metadata"].get("labels", {}).get(ZONE) == zone
    }
    return sum(1 for o in items if o["kind"] == "Pod" and o["spec"].get("nodeName") in nodes)


def apply_moves(src: Path, dst: Path, moves: list[dict[str, str]]) -> None:
    where = {m["pod"]: m["to"] for m in moves}
    doc = json.loads(src.read_text())
    for obj in doc["items"]:
        if obj.get("kind") == "Pod":
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            if key in where:
                obj["spec"]["nodeName"] = where[key]
    dst.write_text(json.dumps(doc, separators=(",", ":")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_cluster_args(parser)
    parser.add_argument("--html", action="store_true", help="also time -o html (see above)")
    parser.add_argument("--only", metavar="NAMES", help="run only these commands (comma-separated)")
    parser.add_argument("--costs", action="store_true", help="also time --deletion-costs")
    parser.add_argument(
        "--sampling", action="store_true", help="also time simulate --runs 20 (see above)"
    )
    parser.add_argument(
        "--percentage", type=int, default=None, help="run the drills sampled (see above)"
    )
    args = parser.parse_args()

    snap, pod, seconds = make_cluster(args, "topospread-audit-bench-")
    work = snap.parent
    print(
        f"cluster: {args.nodes} nodes, {args.deployments} Deployments, {args.pods} pods "
        f"({snap.stat().st_size / 2**20:.0f} MiB) written in {seconds:.1f} s"
    )

    zone_a = f"{ZONE}=zone-a"
    commands = {
        "simulate": ["simulate", "--snapshot", str(snap), "--replicas", "1", pod],
        "audit": ["audit", "--snapshot", str(snap), "-o", "json"],
        "plan": ["audit", "--snapshot", str(snap), "--plan", "-o", "json"],
        "without": ["audit", "--snapshot", str(snap), "--without-nodes", zone_a, "-o", "json"],
        "unreachable": [
            *("audit", "--snapshot", str(snap), "--unreachable-nodes", zone_a, "-o", "json")
        ],
        "drain": ["audit", "--snapshot", str(snap), "--drain-nodes", f"{BATCH}=b00", "-o", "json"],
    }
    if args.percentage is not None:
        for name in ("without", "unreachable", "drain"):
            commands[name] += ["--percentage-of-nodes-to-score", str(args.percentage)]
    if args.only:
        wanted = {"simulate", *args.only.split(",")}
        commands = {k: v for k, v in commands.items() if k in wanted}
    if args.sampling:
        sampled = ["simulate", "--snapshot", str(snap), "--replicas", "10"]
        commands["sampled"] = [*sampled, "--seed", "0", pod]
        commands["runs20"] = [*sampled, "--runs", "20", pod]
    if args.html:
        soft = ["audit", "--snapshot", str(snap), "--include-soft", "-o"]
        commands["html"] = ["audit", "--snapshot", str(snap), "-o", "html"]
        commands["soft-json"] = [*soft, "json"]
        commands["soft-html"] = [*soft, "html"]
    if args.costs:
        commands.setdefault("audit", ["audit", "--snapshot", str(snap), "-o", "json"])
        commands["costs"] = ["audit", "--snapshot", str(snap), "--deletion-costs", "-o", "json"]
    sizes: dict[str, int] = {}
    walls: dict[str, list[float]] = {k: [] for k in commands}
    rss: dict[str, list[float]] = {k: [] for k in commands}
    timed_apart = ("simulate", "costs", "sampled", "runs20")  # costs: against audit, below
    ratios: dict[str, list[float]] = {k: [] for k in commands if k not in timed_apart}
    drills: dict[str, dict[str, Any]] = {}
    loads = []
    plan_doc: dict[str, Any] = {}
    costs_doc: dict[str, Any] = {}
    cpus: dict[str, list[float]] = {}
    audit_doc: dict[str, Any] = {}
    for i in range(args.runs):
        loads.append(os.getloadavg()[0])
        for name, argv in commands.items():
            wall, peak, out, code = run(argv)
            sizes[name] = len(out.encode())
            if name in ("html", "soft-json", "soft-html", "sampled", "runs20"):
                pass
            elif name == "costs":
                costs_doc = json.loads(out)
            elif name != "simulate":
                doc = json.loads(out)
                if name == "plan":
                    plan_doc = doc
                elif name == "audit":
                    audit_doc = doc
                else:
                    drills[name] = doc
            elif code != 0:
                print(f"simulate failed (exit {code})")
                return 2
            walls[name].append(wall)
            rss[name].append(peak)
            cpus.setdefault(name, []).append(CPU[-1])
        for name in ratios:
            ratios[name].append(walls[name][-1] / walls["simulate"][-1])
        print(
            f"run {i + 1}: "
            + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in walls.items())
            + f"  (load {loads[-1]:.2f})"
        )

    med = {k: statistics.median(v) for k, v in walls.items()}
    print()
    print(
        f"violations: {audit_doc.get('violations')} in {len(audit_doc.get('workloads', []))} "
        f"audited workloads"
    )
    for name in commands:
        print(f"{name:>9}: median {med[name]:.2f} s, peak RSS {max(rss[name]):.0f} MiB")
    target = {
        "audit": 1.5,
        "plan": 4.0,
        "without": 15.0,
        "unreachable": 15.0,
        "drain": 3.0,
    }
    for name, values in ratios.items():
        print(
            f"{name}/simulate: median ratio {statistics.median(values):.2f} "
            f"(runs: {', '.join(f'{r:.2f}' for r in values)}; target <= {target[name]})"
        )
    if args.html:
        for page, doc in (("html", "audit"), ("soft-html", "soft-json")):
            each = [h / j for h, j in zip(walls[page], walls[doc], strict=True)]
            print(
                f"{page}/{doc}: median ratio {statistics.median(each):.2f} (runs: "
                f"{', '.join(f'{r:.2f}' for r in each)}; target <= 1.2); page "
                f"{sizes[page] / 2**20:.2f} MiB, document {sizes[doc] / 2**20:.2f} MiB "
                f"(target <= 5 MB)"
            )
    if args.costs:
        each = [c / a for c, a in zip(walls["costs"], walls["audit"], strict=True)]
        cpu = [c / a for c, a in zip(cpus["costs"], cpus["audit"], strict=True)]
        print(
            f"costs/audit: median ratio {statistics.median(each):.2f} (runs: "
            f"{', '.join(f'{r:.2f}' for r in each)}; target <= 1.5); in CPU seconds "
            f"{statistics.median(cpu):.2f} (runs: {', '.join(f'{r:.2f}' for r in cpu)}; "
            f"audit {statistics.median(cpus['audit']):.1f} s, costs "
            f"{statistics.median(cpus['costs']):.1f} s)"
        )
    if args.sampling:
        whole = [r / o for r, o in zip(walls["runs20"], walls["sampled"], strict=True)]
        # Without the load: only where the sampled run took longer than simulate (else
        # the noise of loading swamps it; bench_sampling.py measures in one process).
        apart = [
            (r - s) / (o - s)
            for r, o, s in zip(walls["runs20"], walls["sampled"], walls["simulate"], strict=True)
            if o > s
        ]
        print(
            f"runs20/sampled: median ratio {statistics.median(whole):.2f} (runs: "
            f"{', '.join(f'{r:.2f}' for r in whole)}; target <= 3); without the load: "
            + (", ".join(f"{r:.2f}" for r in apart) or "n/a (loading times vary more)")
        )
    print(f"load average at each run's start: {', '.join(f'{x:.2f}' for x in loads)}")
    for name, doc in drills.items():
        print(
            f"{name}: {len(doc.get('pending', []))} pending, "
            f"{len(doc.get('notRecreated', []))} not recreated, "
            f"{len(doc.get('blocked', {}))} blocked, {doc.get('violations')} violations after"
        )
    if args.costs:
        costs = costs_doc.get("deletionCosts", {})
        per = args.pods // args.deployments
        constrained = {
            f"ns-{d % 50}/app-{d}-7d4b9c-{p:05d}"
            for d in range(0, args.deployments, 2)
            for p in range(per)
        }
        print(f"costs: {len(costs)} pods with a cost, {len(set(costs.values()))} distinct")
        if set(costs) != constrained:
            print(
                f"FAIL: {len(constrained ^ set(costs))} constrained pods without a cost (or extra)"
            )
            return 1
    if "without" in drills:
        placed = pods_on(snap, "zone-a") - len(drills["without"].get("pending", []))
        own = med["without"] - med["simulate"]
        print(
            f"without: {placed} pods re-placed in {own:.1f} s of its own: "
            f"{placed / max(own, 1e-9):.0f} pods/s"
        )
    if "plan" not in commands:
        return 0

    moves = plan_doc.get("plan", [])
    print(f"plan: {len(moves)} moves, planComplete {plan_doc.get('planComplete')}")
    moved = work / "cluster-after-plan.json"
    apply_moves(snap, moved, moves)
    _, _, out, _ = run(["audit", "--snapshot", str(moved), "-o", "json"])
    after = json.loads(out)["violations"]
    print(f"audit after the plan's moves: {after} violations")
    if plan_doc.get("planComplete") and after != 0:
        print("FAIL: a complete plan left violations")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
