"""Resident memory of the cluster state a LiveSource holds for a large cluster.

Generates realistic full Nodes and Pods in-process (labels, annotations,
managedFields, env, probes, volumes, conditions, container statuses: what a
real API server sends), serialises each one to a watch-event line and feeds
it through the live path: json.loads of the line, trim, Snapshot.upsert (via
LiveSource.apply_event). The full objects are dropped as they go, as in
production, so the figure is what the source keeps.

    .venv/bin/python bench/bench_memory.py                       # 5,000 nodes, 150,000 pods
    .venv/bin/python bench/bench_memory.py --nodes 500 --pods 15000

Prints RSS before and after (from /proc/self/status), the peak, the time, and
what a Snapshot.copy() costs in time and memory at that size.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes.client import Configuration  # noqa: E402

from webhook.cluster.informer import LiveSource  # noqa: E402

ZONES = ("zone-a", "zone-b", "zone-c")
MANAGED = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}}}},
        },
    }
]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def full_node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}.c.example-project.internal"
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"0000{i:04d}-aaaa-bbbb-cccc-{i:012d}",
            "resourceVersion": str(10_000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "n2-standard-8",
                "topology.kubernetes.io/region": "europe-west1",
                "topology.kubernetes.io/zone": ZONES[i % 3],
                "cloud.google.com/gke-nodepool": f"pool-{i % 7}",
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/x": "1"},
            "managedFields": MANAGED,
        },
        "spec": {
            "podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24",
            "providerID": f"gce://example-project/{ZONES[i % 3]}/{name}",
            "taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
            if i % 10 == 0
            else [],
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "32882000Ki", "pods": "110"},
            "allocatable": {"cpu": "7910m", "memory": "29028000Ki", "pods": "110"},
            "conditions": [
                {"type": t, "status": "False", "reason": "Fine", "message": "all good " * 4}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
            "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 256}.{i % 256}"}],
            "nodeInfo": {"kubeletVersion": "v1.30.2", "osImage": "Container-Optimized OS"},
            "images": [
                {"names": [f"registry.example/image-{j}@sha256:{'ab' * 32}"], "sizeBytes": j}
                for j in range(20)
            ],
        },
    }


def full_pod(i: int, nodes: int, per_rs: int) -> dict[str, Any]:
    rs = i // per_rs
    app = f"app-{rs % 997}"
    ns = f"team-{rs % 50}"
    name = f"{app}-{rs:06d}-{i:07d}"
    labels = {"app": app, "pod-template-hash": f"{rs:010x}", "tier": "backend"}
    requests = {"cpu": f"{100 + 50 * (rs % 5)}m", "memory": f"{128 * (1 + rs % 4)}Mi"}
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "generateName": f"{app}-{rs:06d}-",
            "namespace": ns,
            "uid": f"{i:08d}-1111-2222-3333-{i:012d}",
            "resourceVersion": str(1_000_000 + i),
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": labels,
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{rs:06d}",
                    "uid": f"rs-{rs:08d}-4444-5555-{rs:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": MANAGED,
        },
        "spec": {
            "nodeName": f"node-{i % nodes:05d}.c.example-project.internal",
            "containers": [
                {
                    "name": "app",
                    "image": f"registry.example/{app}:1.2.3",
                    "env": [{"name": f"VAR_{k}", "value": f"value-{k}"} for k in range(8)],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {"requests": requests, "limits": {"memory": "1Gi"}},
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                    "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets"}],
                }
            ],
            "volumes": [{"name": "token", "projected": {"sources": [{"serviceAccountToken": {}}]}}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
            ],
            "serviceAccountName": "default",
            "restartPolicy": "Always",
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "ready": True,
                    "restartCount": 0,
                    "image": f"registry.example/{app}:1.2.3",
                    "imageID": f"registry.example/{app}@sha256:{'cd' * 32}",
                    "containerID": f"containerd://{i:064d}",
                    "started": True,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                    "resources": {"requests": requests, "limits": {"memory": "1Gi"}},
                    "allocatedResources": requests,
                }
            ],
        },
    }


def feed(source: LiveSource, kind: str, obj: dict[str, Any]) -> int:
    line = json.dumps({"type": "ADDED", "object": obj}).encode()
    source.apply_event(kind, json.loads(line))
    return len(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--pods-per-replicaset", type=int, default=10)
    args = parser.parse_args()

    source = LiveSource(configuration=Configuration(host="http://127.0.0.1:1"))
    gc.collect()
    base = rss_mib()
    started = time.perf_counter()
    wire = 0
    for i in range(args.nodes):
        wire += feed(source, "Node", full_node(i))
    for i in range(args.pods):
        wire += feed(source, "Pod", full_pod(i, args.nodes, args.pods_per_replicaset))
    elapsed = time.perf_counter() - started
    gc.collect()
    after = rss_mib()
    snap = source._snapshot
    assert snap is not None
    held = len(snap.nodes), snap.pod_count()

    copy_started = time.perf_counter()
    duplicate = snap.copy()
    copy_ms = (time.perf_counter() - copy_started) * 1000
    with_copy = rss_mib()
    del duplicate

    mib = wire / 2**20
    print(f"objects fed        {args.nodes:,} nodes, {args.pods:,} pods ({mib:,.0f} MiB JSON)")
    print(f"held by snapshot   {held[0]:,} nodes, {held[1]:,} pods")
    per_object = elapsed / (args.nodes + args.pods) * 1e6
    print(f"feed time          {elapsed:.1f} s ({per_object:.0f} us/object)")
    print(f"RSS before         {base:,.0f} MiB (interpreter + imports)")
    print(f"RSS after          {after:,.0f} MiB")
    print(f"RSS peak           {peak_mib():,.0f} MiB")
    print(
        f"state              {after - base:,.0f} MiB "
        f"({(after - base) * 2**20 / max(1, args.pods):,.0f} bytes per pod, nodes included)"
    )
    print(f"Snapshot.copy()    {copy_ms:,.0f} ms, +{with_copy - after:,.0f} MiB while held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
