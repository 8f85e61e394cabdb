"""Benchmark of one preemption decision on bench_profile.py's cluster made full (a
script, not a test).

    .venv/bin/python bench/bench_preempt.py [--nodes 5000] [--pods 150000] [--runs 10]
        [--rounds 3]

The cluster is bench_profile.py's (seeded: NODES nodes, PODS pods, affinities), with
pods of two priorities (the even apps at 1000, the odd ones at 0) and every node
then made full: one more pod of priority 0 per node takes what cpu and memory are
left, so no node has room for anything. The incoming pod is bench_profile.py's
(one more replica of app-0: a zone DoNotSchedule spread, hostname anti-affinity
against its own app), at priority 2000: no node fits it, so DefaultPreemption
dry-runs candidates (10 % of the potential nodes, at least 100) and nominates one.

Reports, with the load average: the first decision after loading; then decisions
with new filter inputs each time (the cpu request differs: cold) and the same pod
again (warm), wall and CPU medians per round and their median over --rounds rounds
(target: <= 100 ms), and the same decision without PostFilter (what of it is
preemption's); and checks that the nomination equals a node-by-node dry run that
runs every filter plugin (the property tests' reference).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import itertools
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_profile import (  # noqa: E402
    INCOMING_NAMESPACE,
    incoming_pod,
    load,
    report,
    with_requests,
    write_snapshot,
)

from webhook.api.resources import milli_value, parse_quantity, unit_value  # noqa: E402
from webhook.cluster.files import scan_list  # noqa: E402
from webhook.scheduler.framework.snapshot import Snapshot  # noqa: E402
from webhook.scheduler.placement import place  # noqa: E402
from webhook.scheduler.plugins.defaultpreemption import (  # noqa: E402
    cycle_handle,
    first_failures,
    post_filter,
)
from webhook.scheduler.profile import Framework, framework_of  # noqa: E402

TARGET_MS = 100.0
HIGH, LOW, PREEMPTOR = 1000, 0, 2000


def prioritised(obj: dict[str, Any]) -> dict[str, Any]:
    """Pods of the even apps at HIGH, the odd ones at LOW (spec.priority, as stored)."""
    if obj.get("kind") == "Pod":
        app = int(obj["metadata"]["labels"]["app"].rpartition("-")[2])
        obj["spec"]["priority"] = HIGH if app % 2 == 0 else LOW
    return obj


def fill(snap: Snapshot) -> int:
    """Bind to every node one LOW pod asking what cpu and memory it has left; return
    how many were added."""
    added = 0
    for name, info in list(snap.nodes.items()):
        alloc = info.node["status"]["allocatable"]
        cpu = milli_value(parse_quantity(alloc["cpu"]) or 0) - info.requested.get("cpu", 0)
        memory = unit_value(parse_quantity(alloc["memory"]) or 0) - info.requested.get("memory", 0)
        if cpu <= 0 and memory <= 0:
            continue
        requests = {"cpu": f"{max(cpu, 0)}m", "memory": str(max(memory, 0))}
        snap.upsert(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"filler-{name}",
                    "namespace": "batch",
                    "labels": {"app": "filler"},
                },
                "spec": {
                    "nodeName": name,
                    "priority": LOW,
                    "containers": [{"name": "main", "resources": {"requests": requests}}],
                },
                "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
            }
        )
        added += 1
    return added


def reference(pod: dict[str, Any], snap: Snapshot, fw: Framework) -> Any:
    """The nomination a dry run gives that runs every filter plugin on every node and
    every step of SelectVictimsOnNode (no shortcut)."""
    got = place(pod, snap, framework=fw)
    prepared = fw.filters.prepare(pod, snap)
    handle, state = cycle_handle(pod, snap, prepared, fw.filter_names)
    assert fw.post_filter is not None
    statuses = first_failures(got.nodes)
    return post_filter(fw.post_filter, handle, state, pod, statuses, shortcuts=False)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=10, help="timed decisions per round")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds per figure")
    parser.add_argument("--seed", type=int, default=1)
    opts = parser.parse_args(argv)

    snap = Snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.json"
        write_snapshot(path, opts.nodes, opts.pods, opts.seed)
        t = time.perf_counter()
        scan_list(path, lambda obj: snap.upsert(prioritised(obj)))
        load_s = time.perf_counter() - t
    fillers = fill(snap)
    print(
        f"loaded in {load_s:.1f} s: {snap.pod_count()} pods bound ({fillers} filling the "
        f"nodes to allocatable), {len(snap.nodes)} nodes ({load()})"
    )
    gc.freeze()

    fw = framework_of()
    namespaces = len(snap.namespaces)
    pod = incoming_pod(f"ns-{min(INCOMING_NAMESPACE, namespaces - 1)}")
    pod["spec"]["priority"] = PREEMPTOR
    c, t = time.process_time(), time.perf_counter()
    first = place(pod, snap, framework=fw)
    first_wall, first_cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
    assert first.selected_node is None and first.preemption is not None, first.reasons
    print(
        f"decision: {len(first.feasible)}/{len(first.nodes)} feasible, reasons {first.reasons}; "
        f"preempts {len(first.preemption.victims)} pod(s) on {first.preemption.node}: "
        f"{', '.join(first.preemption.victims)}"
    )
    print(
        f"first decision after load (builds the indexes): wall {first_wall:.0f} ms, "
        f"CPU {first_cpu:.0f} ms ({load()})"
    )
    want = reference(pod, snap, fw)
    assert want == first.preemption, (want, first.preemption)
    print("correctness: the nomination equals a dry run of every filter plugin")

    cold_pods: Iterator[dict[str, Any]] = (
        with_requests(pod, f"{251 + i}m") for i in itertools.count()
    )
    report(
        "place() with preemption, new filter inputs (cold)",
        lambda: place(next(cold_pods), snap, framework=fw),
        opts.runs,
        opts.rounds,
        TARGET_MS,
    )
    report(
        "place() with preemption, same pod (warm)",
        lambda: place(pod, snap, framework=fw),
        opts.runs,
        opts.rounds,
        TARGET_MS,
    )
    # What of it is preemption's: the same decision with no PostFilter in the profile.
    without = dataclasses.replace(fw, post_filter=None)
    report(
        "place() without PostFilter, same pod (the scheduling cycle alone)",
        lambda: place(pod, snap, framework=without),
        opts.runs,
        opts.rounds,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
