"""Where the memory of a loaded cluster goes (a script, not a test).

    .venv/bin/python bench/bench_where.py CLUSTER.json            # as `audit` loads it
    .venv/bin/python bench/bench_where.py CLUSTER.json --replica  # as `serve --snapshot` does

Loads a snapshot file the way the command does (the audit's Collector, or FileSource's
trimmed Snapshot), then walks what it holds with sys.getsizeof, each object counted
once, in the first part that reaches it, in this order:

    audit pods      the running pods as the audit keeps them (audit only)
    pod entries     the Snapshot's light pods and their per-pod entries
    node objects    each NodeInfo's node, labels, sums and list of its pods
    indexes         pods by namespace, selector counts, caches
    owners          the audit's owner chain objects (audit only)

and within the pods, per top-level field (metadata, spec, status). Prints each part's
MiB, bytes per object, and the process's RSS (VmRSS) and peak (VmHWM) after the load.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webhook.audit.state.reader import read_file  # noqa: E402
from webhook.cluster.files import load_snapshot  # noqa: E402


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class Walk:
    """sys.getsizeof summed over everything reachable, each object once."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def size(self, roots: Iterable[Any]) -> int:
        total = 0
        stack = list(roots)
        while stack:
            obj = stack.pop()
            if id(obj) in self.seen or obj is None or isinstance(obj, (bool, type)):
                continue
            self.seen.add(id(obj))
            total += sys.getsizeof(obj)
            if isinstance(obj, dict):
                stack.extend(obj.keys())
                stack.extend(obj.values())
            elif isinstance(obj, (list, tuple, set, frozenset)):
                stack.extend(obj)
            elif hasattr(obj, "__slots__"):
                stack.extend(getattr(obj, s, None) for s in obj.__slots__)
            elif hasattr(obj, "__dict__") and not callable(obj):
                stack.append(vars(obj))
        return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshot")
    parser.add_argument("--replica", action="store_true", help="load as serve --snapshot does")
    args = parser.parse_args()
    base = status_kib("VmRSS")
    t0 = time.perf_counter()
    audit_pods: list[Any] = []
    owners: dict[Any, Any] = {}
    if args.replica:
        snap = load_snapshot(args.snapshot, trimmed=True)
    else:
        state = read_file(args.snapshot).state()
        snap, audit_pods, owners = state.snapshot, state.running, state.owners
    loaded = time.perf_counter() - t0
    gc.collect()
    rss, peak = status_kib("VmRSS"), status_kib("VmHWM")
    walk = Walk()
    infos = list(snap.nodes.values())
    entries = list(snap._pods.values())  # noqa: SLF001 - measuring the private state
    parts: list[tuple[str, int, int]] = []
    if audit_pods:
        fields: dict[str, int] = {}
        for key in ("metadata", "spec", "status"):
            fields[key] = walk.size(p.get(key) for p in audit_pods)
        whole = walk.size(audit_pods)
        parts.append(("audit pods", sum(fields.values()) + whole, len(audit_pods)))
        for key, size in fields.items():
            parts.append((f"  audit pods' {key}", size, len(audit_pods)))
    light = [e.pod for e in entries]
    fields = {key: walk.size(p.get(key) for p in light) for key in ("metadata", "spec", "status")}
    pod_total = walk.size(light) + walk.size(entries) + sum(fields.values())
    parts.append(("pod entries", pod_total, len(entries)))
    for key, size in fields.items():
        parts.append((f"  light pods' {key}", size, len(entries)))
    parts.append(
        ("node objects", walk.size([i.node for i in infos]) + walk.size(infos), len(infos))
    )
    parts.append(("indexes", walk.size([vars(snap)]), 1))
    if owners:
        parts.append(("owners", walk.size([owners]), len(owners)))
    print(f"{args.snapshot}: loaded in {loaded:.1f} s, {len(infos)} nodes, "
          f"{len(entries)} pods; RSS {(rss - base) / 1024:.0f} MiB above the "
          f"interpreter's {base / 1024:.0f}, peak {peak / 1024:.0f} MiB")
    for name, size, count in parts:
        print(f"{name:<24} {size / 2**20:8.1f} MiB  {size / max(count, 1):8.0f} B each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
