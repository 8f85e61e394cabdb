"""Cluster state per replica (a script, not a test): memory and watches of one
`topospread serve --kubeconfig` against a fake API server holding a generated cluster.

    .venv/bin/python bench/bench_replica.py --nodes 500 --pods 15000            # the default
    .venv/bin/python bench/bench_replica.py --nodes 500 --pods 15000 --workers 2

Fills tests/fake_apiserver.FakeApiServer with the full Nodes and Pods of
bench/bench_memory.py, starts the real server on it (TLS, a free loopback port, `--workers`
as given, serve's default when not), waits until /readyz answers 200 and the state has
settled, then prints the resident memory (VmRSS) of the gunicorn master and each worker,
their sum (what the pod uses), and how many watches each kind has open on the API
server (watch requests seen), i.e. how many copies of the state the replica keeps.
"""

from __future__ import annotations

import argparse
import http.client
import os
import ssl
import subprocess  # nosec B404  # runs our own server, fixed argument list
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_memory import full_node, full_pod  # noqa: E402

from tests.fake_apiserver import FakeApiServer  # noqa: E402
from tests.live_server import free_port  # noqa: E402
from webhook.install.certs import generate  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return sorted(out)


def wait_ready(
    proc: subprocess.Popen[bytes], port: int, ctx: ssl.SSLContext, log: Path, poll: float
) -> None:
    """Return once the server's /readyz answers 200; its log's tail if it exits first."""
    while True:
        if proc.poll() is not None:
            raise SystemExit(log.read_text()[-2000:])
        try:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(poll)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=15000)
    parser.add_argument("--workers", type=int, default=None, help="default: serve's")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after ready")
    args = parser.parse_args()

    api = FakeApiServer().start()
    t0 = time.monotonic()
    for i in range(args.nodes):
        api.add(full_node(i))
    for i in range(args.pods):
        api.add(full_pod(i, args.nodes, 10))
    print(f"fake API server: {args.nodes} nodes, {args.pods} pods "
          f"({time.monotonic() - t0:.0f} s to generate)", flush=True)
    work = Path(tempfile.mkdtemp(prefix="topospread-replica-"))
    kubeconfig = work / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        f"clusters: [{{name: fake, cluster: {{server: '{api.url}'}}}}]\n"
        "users: [{name: me, user: {token: t}}]\n"
        "contexts: [{name: fake, context: {cluster: fake, user: me}}]\n"
    )
    generate("topospread", "topospread", work / "certs", days=2)
    port = free_port()
    argv = [sys.executable, "-m", "webhook.cli.main", "serve", "--kubeconfig", str(kubeconfig),
            "--cert-dir", str(work / "certs"), "--bind", f"127.0.0.1:{port}"]
    if args.workers is not None:
        argv += ["--workers", str(args.workers)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOPOSPREAD_LOG_LEVEL": "WARNING"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log = (work / "serve.log").open("wb")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=log)  # nosec B603
    ctx = ssl.create_default_context(cafile=str(work / "certs" / "ca.crt"))
    try:
        t0 = time.monotonic()
        wait_ready(proc, port, ctx, work / "serve.log", 0.5)
        # Every worker must have synced, not only the one that answered.
        time.sleep(args.settle)
        ready = time.monotonic() - t0
        master = rss_mib(proc.pid)
        workers = {pid: rss_mib(pid) for pid in children(proc.pid)}
        watches = Counter(r.kind for r in api.requests if r.watch)
        lists = Counter(r.kind for r in api.requests if not r.watch and r.kind)
        print(f"workers: {len(workers)}; ready after {ready:.0f} s", flush=True)
        print(f"RSS master {master:.0f} MiB; workers "
              + ", ".join(f"{v:.0f}" for v in workers.values())
              + f" MiB; replica total {master + sum(workers.values()):.0f} MiB")
        print("watches open on the API server, by kind: "
              + ", ".join(f"{k} {v}" for k, v in sorted(watches.items()))
              + f" (total {sum(watches.values())}); list requests {sum(lists.values())}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
