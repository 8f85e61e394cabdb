"""The audit documents the Headlamp plugin's tests and stories read, made at test time
by the real CLI on the docs' example snapshots, so the plugin cannot drift from the JSON.

    python -m tests.headlamp.fixtures OUT_DIR

Each FIXTURES entry is `topospread audit ... -o json` (exit 0 or 1: a violation is an
answer); `in-cluster.json` is what the in-cluster audit serves at /report.json:
`audit --watch --report` on the demo snapshot, fetched from its port on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess  # nosec B404 - runs the CLI whose output the plugin reads
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.paths import DEMO_SNAPSHOT, ROOT

EXAMPLES = ROOT / "docs" / "examples"
ZONE_A = "topology.kubernetes.io/zone=zone-a"

# name -> the audit's arguments (before -o json); what each one shows in the plugin.
FIXTURES: dict[str, list[str]] = {
    # every constraint holds: three workloads over three zones, 2/2/2 and 1/1/1
    "holds": ["--snapshot", str(EXAMPLES / "zone-outage.json")],
    # shop/api 1/2/0 over maxSkew 1: violated, with the plan that fixes it
    "violated": ["--snapshot", str(DEMO_SNAPSHOT), "--plan"],
    # zone-a unreachable: shop/web's replacements pending, no new node helps
    "outage": ["--snapshot", str(EXAMPLES / "zone-outage.json"), "--unreachable-nodes", ZONE_A],
    # eu-west-1a's node gone: the ReplicaSet's pod pending, reasons and scale-up verdict
    "pending": [
        "--snapshot",
        str(EXAMPLES / "pending" / "cluster.yaml"),
        "--without-nodes",
        "topology.kubernetes.io/zone=eu-west-1a",
    ],
}
CLI = [sys.executable, "-m", "webhook"]


def audit(args: list[str]) -> str:
    done = subprocess.run(  # nosec B603 - the CLI with fixed arguments
        [*CLI, "audit", *args, "-o", "json"], capture_output=True, text=True, check=False, cwd=ROOT
    )
    if done.returncode not in (0, 1):
        command = " ".join(args)
        raise SystemExit(f"topospread audit {command}: exit {done.returncode}\n{done.stderr}")
    json.loads(done.stdout)
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def in_cluster(deadline: float = 60.0) -> str:
    """/report.json of `audit --watch --report` on the demo snapshot (the first audit)."""
    port = free_port()
    proc = subprocess.Popen(  # nosec B603 - the CLI with fixed arguments
        [
            *CLI,
            "audit",
            "--watch",
            "--snapshot",
            str(DEMO_SNAPSHOT),
            "--report",
            "--metrics-bind",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}/report.json"
    end = time.monotonic() + deadline
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:  # nosec B310 - loopback
                    return str(r.read().decode())
            except (urllib.error.URLError, ConnectionError) as exc:
                if proc.poll() is not None or time.monotonic() > end:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise SystemExit(f"audit --watch served no {url}: {exc}\n{err}") from exc
                time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.headlamp.fixtures OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    made = {name: audit(args) for name, args in FIXTURES.items()}
    made["in-cluster"] = in_cluster()
    for name, text in made.items():
        tmp = out / f".{name}.json.{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(out / f"{name}.json")
    print(f"{len(made)} audit documents in {out}: {', '.join(sorted(made))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
