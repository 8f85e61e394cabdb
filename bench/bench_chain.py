"""The webhook inside the real admission chain, under the controllers' load and faults
(issue 38), measured by kube-apiserver's own metrics.

The real control plane (`make control-plane`), kube-controller-manager at
`--kube-api-qps 100 --kube-api-burst 100`, kwok nodes in three zones; topospread installed
as users install it, failurePolicy Fail, as two `serve --share-port` replicas on one port.
Six Deployments (four with zone and hostname constraints, two without, so the defaults
are injected) are scaled from 0 to --pods pods in all and back to 0: with the webhook
configurations and without them, alternating, --rounds times; then each fault under the
same load (tests/e2e/chain.py says how each is made).

    make bench-chain                       # BENCH_CHAIN_FLAGS="--pods 3000 --rounds 3"
    .venv/bin/python bench/bench_chain.py [--pods N] [--fault-pods N] [--nodes N]
        [--rounds N] [--faults rolling-restart,kill-9,...] [--no-placement] [--floor]
        [--json FILE]

Every pod asks for the dry-run placement annotations (a scheduling cycle in /mutate);
--no-placement leaves them out, as pods that do not opt in.

--floor runs bench/nullwebhook (Go, built here) in place of topospread: two replicas
that answer every review at once with a fixed patch, no cluster state. Its figures are
the floor kube-apiserver measures for any webhook on the machine at that load (the
defaults it does not inject count as missing mutations).

Per phase: pods per second (first pod seen to last Ready, on a watch), the share of each
webhook's calls within kube-apiserver's 5, 25 and 100 ms buckets
(apiserver_admission_webhook_admission_duration_seconds) and the worst bucket reached,
rejections by error_type, fail-open calls, the ReplicaSets' FailedCreate events, pods
missing the placement annotation or the injected defaults, pod create latency with
webhooks (apiserver_request_duration_seconds) and without them
(apiserver_request_sli_duration_seconds), each replica's CPU seconds per 1,000 pods and
peak RSS, how long the webhook's state took to catch up after the fault, and the load
average. --json FILE writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.chain import (  # noqa: E402
    FAULTS,
    Phase,
    Runner,
    add,
    chain_nodes,
    chain_plane,
    installed,
    median,
    pod_create_latency,
    webhook_figures,
)
from tests.e2e.controlplane import DEFAULT_MINOR  # noqa: E402


def row(p: Phase) -> str:
    f = p.figures()
    hooks = " ".join(
        f"{name.split('.')[0]} {h['le5ms']:.3f}/{h['le25ms']:.4f}/{h['le100ms']:.4f}"
        for name, h in f["admission"].items()) or "-"
    create = f["podCreate"]
    lat = "/".join(f"{create[k]['meanMs']:.0f}" if k in create else "-"
                   for k in ("withWebhooks", "withoutWebhooks"))
    catch = f["faultFigures"].get("catchUpSeconds", "")
    return (f"| {p.name} | {'on' if p.webhooks else 'off'} | {p.pods}×{p.cycles} "
            f"| {f['seconds']:.1f} | {f['podsPerSecond']:.1f} | {hooks} | {f['worstBucket']} "
            f"| {f['callingWebhookError']} | {f['failOpen']} | {f['failedCreate']}"
            f"+{f['failedCreateOther']} | {f['missingMutation']} | {lat} "
            f"| {'/'.join(f'{c:.1f}' for c in f['replicaCpuSecondsPer1000Pods'])} "
            f"| {'/'.join(f'{r:.0f}' for r in f['replicaPeakRssMiB'])} | {catch} "
            f"| {f['loadAverage']:.1f} |")


HEADER = ("| phase | webhooks | pods×cycles | s | pods/s | share ≤5/≤25/≤100 ms per webhook "
          "| worst bucket | calling_webhook_error | fail-open | FailedCreate (webhook+other) "
          "| missing mutation | pod create mean ms (with/without webhooks) "
          "| replica CPU s per 1,000 pods | replica peak RSS MiB | catch-up s | load |\n"
          "|" + " --- |" * 16)


def summary(steady: list[Phase], faults: list[Phase], args: argparse.Namespace,
            command: str) -> dict[str, Any]:
    on = [p for p in steady if p.webhooks]
    off = [p for p in steady if not p.webhooks]
    on_delta: dict[Any, float] = {}
    for p in on:
        on_delta = add(on_delta, p.delta)
    rate_on, rate_off = median([p.rate for p in on]), median([p.rate for p in off])
    out: dict[str, Any] = {
        "command": command,
        "kubernetes": args.k8s, "nodes": args.nodes, "pods": args.pods,
        "server": "bench/nullwebhook" if args.floor else "topospread",
        "placementAnnotations": not args.no_placement,
        "faultPods": args.fault_pods, "rounds": args.rounds,
        "steady": {
            "rateRatio": round(rate_on / rate_off, 3) if rate_off else None,
            "podsPerSecondWith": [round(p.rate, 1) for p in on],
            "podsPerSecondWithout": [round(p.rate, 1) for p in off],
            "webhooks": webhook_figures(on_delta),
            "podCreate": pod_create_latency(on_delta),
            "phases": [p.figures() for p in steady],
        },
        "faults": {},
    }
    for p in faults:
        f = p.figures()
        out["faults"][p.fault] = {
            "callingWebhookError": f["callingWebhookError"], "failOpen": f["failOpen"],
            "failedCreate": f["failedCreate"], "failedCreateOther": f["failedCreateOther"],
            "missingMutation": f["missingMutation"], "worstBucket": f["worstBucket"],
            **f["faultFigures"], "figures": f,
        }
    return out


def null_webhook() -> list[str]:
    """bench/nullwebhook built into build/ (Go, standard library only)."""
    out = ROOT / "build" / "nullwebhook"
    subprocess.run(["go", "build", "-o", str(out), "."], cwd=ROOT / "bench" / "nullwebhook",
                   check=True)
    return [str(out)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k8s", default=os.environ.get("K8S", DEFAULT_MINOR))
    ap.add_argument("--pods", type=int, default=3000, help="pods per steady phase")
    ap.add_argument("--fault-pods", type=int, default=None,
                    help="pods per fault phase (default --pods)")
    ap.add_argument("--nodes", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3, help="steady rounds with and without")
    ap.add_argument("--faults", default=",".join(FAULTS),
                    help="comma-separated, in this order (empty: none)")
    ap.add_argument("--no-placement", action="store_true",
                    help="pods without the dry-run placement annotation (opt-in per pod)")
    ap.add_argument("--floor", action="store_true",
                    help="bench/nullwebhook instead of topospread: the machine's floor")
    ap.add_argument("--json", metavar="FILE", help="write every figure to FILE")
    args = ap.parse_args(argv)
    # SIGTERM stops it as Ctrl-C does: the control plane and the replicas are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args.fault_pods = args.fault_pods or args.pods
    faults = [f for f in args.faults.split(",") if f]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        ap.error(f"--faults: unknown {sorted(unknown)}; known: {', '.join(FAULTS)}")
    command = "bench/bench_chain.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    server = null_webhook() if args.floor else None
    print(f"{command}\nKubernetes {args.k8s}, {args.nodes} nodes, two replicas"
          f"{' of bench/nullwebhook' if server else ''}; "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    steady: list[Phase] = []
    fault_phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="topospread-bench-chain-") as tmp:
        cp = chain_plane(Path(tmp), args.k8s)
        try:
            cp.start()
            cp.add_nodes(chain_nodes(args.nodes), timeout=300)
            with installed(cp, Path(tmp) / "webhook", server) as chain:
                runner = Runner(cp, chain, args.pods)
                runner.placement = not args.no_placement
                print(HEADER, flush=True)
                for r in range(args.rounds):
                    # Alternate which goes first, so a drifting machine favours neither.
                    for on in ((True, False) if r % 2 == 0 else (False, True)):
                        name = f"steady-{r + 1}"
                        steady.append(runner.phase(name, webhooks=on))
                        print(row(steady[-1]), flush=True)
                runner.pods = args.fault_pods
                for fault in faults:
                    fault_phases.append(runner.phase(fault, webhooks=True, fault=fault))
                    print(row(fault_phases[-1]), flush=True)
                    time.sleep(2)
        finally:
            cp.stop()
    out = summary(steady, fault_phases, args, command)
    print(f"rate with / without the webhook (medians of {args.rounds} rounds): "
          f"{out['steady']['rateRatio']}")
    for label, phases in (("with", [p for p in steady if p.webhooks]),
                          ("without", [p for p in steady if not p.webhooks])):
        if phases:
            mib = median([p.figures()["podWatchMiBPer1000Pods"] for p in phases])
            print(f"pod watch events {label} the webhook, every watcher: {mib} MiB per "
                  "1,000 pods (median of the rounds)")
    for name, h in out["steady"]["webhooks"].items():
        print(f"{name}: {h['calls']} calls; {h['le5ms']:.4f} within 5 ms, "
              f"{h['le25ms']:.4f} within 25 ms, {h['le100ms']:.4f} within 100 ms")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
