"""kube-scheduler beside the zone drill, on the same cluster and the same machine.

The cluster of bench_audit.py (5,000 nodes, 150,000 pods, 500 Deployments by default) is
loaded into a real etcd and kube-apiserver (`make control-plane`): the nodes of every zone
but zone-a, the ReplicaSets (kube-scheduler's default spreading reads them), the pods of
the other zones bound to their nodes, and zone-a's pods created unbound, as the
ReplicaSet controller recreates the pods of deleted nodes. Then kube-scheduler starts and
binds them; its rate is the displaced pods over the time from its first binding to its
last (read from its own `scheduler_schedule_attempts_total`), and over the time from its
start (informer sync included).

`audit --without-nodes topology.kubernetes.io/zone=zone-a` re-places the same pods from
the snapshot file; its rate, as in docs/performance.md, is the displaced pods over the
drill's wall time less `simulate`'s (loading the file and deciding one pod).

    make control-plane && .venv/bin/python bench/bench_vs_scheduler.py [--nodes N --pods N
        --deployments N] [--percentage P]

--percentage: kube-scheduler's percentageOfNodesToScore and the drill's
--percentage-of-nodes-to-score (default 100: every node scored; 0: adaptive, as both
run by default). --qps: kube-scheduler's client rate limit (default its own, 50 requests
per second with bursts of 100, which caps its bindings; a large value shows the pace of
its scheduling itself). Prints one table row per run and the ratio of the rates.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import ssl
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_audit import ZONE, add_cluster_args, make_cluster, run  # noqa: E402

from tests.e2e.controlplane import ControlPlane  # noqa: E402

LOST = "zone-a"
SCHEDULED = re.compile(r'scheduler_schedule_attempts_total\{[^}]*result="scheduled"[^}]*\} (\d+)')


class Loader:
    """POSTs objects to the API server over a few kept-alive connections at once."""

    def __init__(self, cp: ControlPlane, workers: int = 8) -> None:
        self.cp = cp
        self.ctx = ssl.create_default_context(cafile=str(cp.pki.ca))
        self.ctx.load_cert_chain(str(cp.pki.cert("admin")), str(cp.pki.key("admin")))
        self.local = threading.local()
        self.pool = ThreadPoolExecutor(workers)

    def _conn(self) -> http.client.HTTPSConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(
                "127.0.0.1", self.cp.ports["apiserver"], context=self.ctx, timeout=60
            )
            self.local.conn = conn
        return conn

    def post(self, path: str, obj: dict[str, Any]) -> None:
        body = json.dumps(obj, separators=(",", ":"))
        for _ in range(5):
            conn = self._conn()
            try:
                conn.request("POST", path, body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                self.local.conn = None
                continue
            if resp.status in (201, 409):
                return
            if resp.status == 429:
                time.sleep(0.5)
                continue
            raise RuntimeError(f"POST {path}: {resp.status} {data[:300]!r}")
        raise RuntimeError(f"POST {path}: gave up")

    def all(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        for f in [self.pool.submit(self.post, path, obj) for path, obj in items]:
            f.result()


def load(cp: ControlPlane, snapshot: Path) -> tuple[int, float]:
    """Load the cluster as it stands after zone-a's nodes are deleted; (displaced, s)."""
    t0 = time.perf_counter()
    items = json.loads(snapshot.read_text())["items"]
    nodes = {o["metadata"]["name"]: o for o in items if o["kind"] == "Node"}
    lost = {n for n, o in nodes.items() if o["metadata"]["labels"].get(ZONE) == LOST}
    loader = Loader(cp)
    namespaces = sorted({o["metadata"]["namespace"] for o in items if o["kind"] == "Pod"})
    loader.all([("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": ns}}) for ns in namespaces])
    # No controller manager makes the namespaces' default ServiceAccount: made here.
    loader.all([(f"/api/v1/namespaces/{ns}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
                for ns in namespaces])
    loader.all([("/api/v1/nodes", o) for n, o in nodes.items() if n not in lost])
    loader.all([(f"/apis/apps/v1/namespaces/{o['metadata']['namespace']}/replicasets",
                 strip_uid({**o, "spec": {**o["spec"], "template": {
                     "metadata": {"labels": o["spec"]["selector"]["matchLabels"]},
                     "spec": {"containers": [{"name": "c", "image": "registry.test/c"}]}}}}))
                for o in items if o["kind"] == "ReplicaSet"])
    displaced = 0
    pods = []
    for o in items:
        if o["kind"] != "Pod":
            continue
        pod = strip_uid(o)
        pod.pop("status", None)
        if pod["spec"]["nodeName"] in lost:
            pod["spec"] = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
            pod["metadata"]["name"] += "-r"
            displaced += 1
        pods.append((f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", pod))
    loader.all(pods)
    return displaced, time.perf_counter() - t0


def strip_uid(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items()
            if k not in ("uid", "creationTimestamp", "ownerReferences")}
    return {**obj, "metadata": meta}


def scheduled(cp: ControlPlane) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(str(cp.pki.cert("admin")), str(cp.pki.key("admin")))
    conn = http.client.HTTPSConnection("127.0.0.1", cp.ports["scheduler"], context=ctx,
                                       timeout=30)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    return sum(int(m.group(1)) for m in SCHEDULED.finditer(text))


def kube_scheduler(cp: ControlPlane, displaced: int, percentage: int,
                   qps: int) -> tuple[float, float]:
    """Start kube-scheduler; (seconds first to last binding, seconds from its start)."""
    cp.scheduler_config = {"apiVersion": "kubescheduler.config.k8s.io/v1",
                           "kind": "KubeSchedulerConfiguration",
                           "percentageOfNodesToScore": percentage}
    if qps:
        cp.scheduler_config["clientConnection"] = {"qps": qps, "burst": qps}
    t0 = time.perf_counter()
    cp._start_scheduler({"kube-scheduler": Path(cp.bin("kube-scheduler"))}, 120)
    first = None
    while True:
        done = scheduled(cp)
        now = time.perf_counter()
        if done and first is None:
            first = now
        if done >= displaced:
            return now - (first or now), now - t0
        time.sleep(0.25)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cluster_args(parser)
    parser.add_argument("--percentage", type=int, default=100)
    parser.add_argument("--qps", type=int, default=0,
                        help="kube-scheduler's clientConnection qps and burst (default: its "
                        "own, 50 and 100: each binding is one API request)")
    args = parser.parse_args()
    snap, pod, _ = make_cluster(args, "topospread-vs-scheduler-")
    sampling = ["--percentage-of-nodes-to-score", str(args.percentage)] \
        if args.percentage != 100 else []
    print(f"cluster: {args.nodes} nodes, {args.pods} pods, {args.deployments} Deployments; "
          f"percentage {args.percentage}; kube-scheduler qps {args.qps or 'default'}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| run | displaced | kube-scheduler first→last | pods/s | from its start | pods/s "
          "| audit drill | simulate | pods/s | ours / theirs |")
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="topospread-vs-") as tmp:
            # No kubelet or node lifecycle controller clears the not-ready taint the
            # TaintNodesByCondition admission plugin puts on every new Node: off.
            cp = ControlPlane(Path(tmp), components=("etcd", "kube-apiserver"),
                              extra_apiserver_flags=[
                                  "--disable-admission-plugins=TaintNodesByCondition"])
            cp.start()
            try:
                displaced, loaded = load(cp, snap)
                span, since_start = kube_scheduler(cp, displaced, args.percentage, args.qps)
            finally:
                cp.stop()
        sim, _, _, _ = run(["simulate", "--snapshot", str(snap), pod, "-o", "json"])
        drill, _, _, code = run(["audit", "--snapshot", str(snap), "-o", "json",
                                 "--without-nodes", f"{ZONE}={LOST}", *sampling])
        assert code in (0, 1), code
        theirs = displaced / span
        ours = displaced / (drill - sim)
        print(f"| {i + 1} | {displaced} | {span:.1f} s | {theirs:.0f} | {since_start:.1f} s "
              f"| {displaced / since_start:.0f} | {drill:.1f} s | {sim:.1f} s | {ours:.0f} "
              f"| {ours / theirs:.2f} |  (loaded in {loaded:.0f} s; load average "
              f"{os.getloadavg()[0]:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
