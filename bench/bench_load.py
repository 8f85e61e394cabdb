"""Admission latency under load (a script, not a test): `make bench-load`.

    .venv/bin/python bench/bench_load.py [--duration 10] [--rates 100,500,1000]
                                         [--variants] [--json OUT]
                                         [--big also|only|no] [--big-nodes 5000]
                                         [--big-pods 150000] [--big-runs 3]

The default run: the realistic review at fixed rates and at saturation (below), then
the big-cluster phase: the realistic review sent one after the other over one
keep-alive connection, under policy.denyUnschedulable (so the unschedulable
foresight looks at every created Pod), to a server on the demo snapshot and to one
on a generated 5,000-node / 150,000-pod snapshot, once as it is (some node fits) and
once requesting more cpu than any node has free; median and p99 latency of each of
--big-runs runs, the foresight outcomes counted by the server, and the memory of the
replica (RSS and PSS of the gunicorn master and workers) at that size.

Starts the real server, `topospread serve` over TLS with certificates made by
`topospread certs` in a temporary directory, on 127.0.0.1 and a free port, as a
separate process, and drives it from separate client processes over keep-alive
connections with a mix of AdmissionReviews (pods with 0, 1 and 2 constraints,
Deployments, a CronJob, invalid objects, a dry-run placement, malformed bodies) sent
to /validate and /mutate:

  - open loop at fixed offered rates: client processes with a fixed pool of
    persistent http.client.HTTPSConnection each; request i is due at start + i/rate,
    and its latency counts from that moment, so time spent waiting for a free
    connection is counted (no coordinated omission);
  - saturation: wrk (Debian package `wrk`) with a Lua script cycling through the
    same mix, or closed-loop Python clients when wrk is not installed.

For every phase: requests/s, p50/p99/p99.9 latency, and server CPU per request,
read from /proc (utime+stime of the gunicorn master and its workers) before and
after. The same phases run against a floor: the same gunicorn + TLS stack, built
the same way serve builds it, answering a fixed allowed AdmissionReview without
parsing. `--variants` also tries worker classes and counts (500 req/s and
saturation only).

Every phase stops by itself; only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import signal
import socket
import ssl
import statistics
import subprocess  # nosec B404  # runs our own server and wrk, fixed argument lists
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.builders import (  # noqa: E402
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    exists,
    expr,
    make_pod,
    review,
    selector,
    workload,
)
from tests.procs import CLK_TCK, children, cpu_seconds  # noqa: E402

HOST = "127.0.0.1"
SERVICE, NAMESPACE = "topospread", "bench"
CLIENT_PROCESSES = 2
CONNECTIONS_PER_PROCESS = 8
WRK_CONNECTIONS = 16

# Where the server and the floor are started from: serve's own code paths, with
# gunicorn's OPTIONS overridden for the worker class variants.
_SERVE = """
import sys
from webhook.server import gunicorn_conf
if sys.argv[1] != "default":
    gunicorn_conf.OPTIONS.update(worker_class=sys.argv[1])
gunicorn_conf.OPTIONS.update(threads=int(sys.argv[2]))
from webhook.cli.main import main
sys.exit(main(sys.argv[3:]))
"""

_FLOOR = """
import sys
from webhook.server import gunicorn_conf
from webhook.install.certs import CertReloader
from webhook.server.serve import WebhookApplication

cert_dir, bind, workers, worker_class, threads = sys.argv[1:6]
BODY = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":'
        b'{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","allowed":true}}')


def app(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    environ["wsgi.input"].read(length)
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(BODY)))])
    return [BODY]


reloader = CertReloader(cert_dir)
options = {**gunicorn_conf.OPTIONS, "bind": [bind], "workers": int(workers),
           "worker_class": worker_class, "threads": int(threads),
           "certfile": reloader.cert_file, "keyfile": reloader.key_file,
           "ssl_context": reloader.gunicorn_ssl_context}
WebhookApplication(options, lambda: app).run()
"""


# ---------------------------------------------------------------------------------------
# The request mix


def request_mix() -> list[tuple[str, bytes, int]]:
    """(path, body, expected status) in the proportions sent; cycled through in order."""
    web = selector({"app": "web"})
    zero = make_pod().name("zero").label("app", "web").obj()
    one = make_pod().name("one").label("app", "web").spread(1, ZONE, DNS, web).obj()
    two = (
        make_pod()
        .name("two")
        .labels({"app": "web", "pod-template-hash": "7f9c"})
        .spread(1, ZONE, DNS, web, matchLabelKeys=["pod-template-hash"])
        .spread(2, HOSTNAME, SA, selector(None, expr("app", "In", "web", "api")))
        .obj()
    )
    invalid = make_pod().name("bad").spread(0, "", "Sometimes", exists("app")).obj()
    deploy = workload(
        "Deployment",
        make_pod().label("app", "web").spread(1, ZONE, SA, web, matchLabelKeys=["app"]).obj(),
        name="web",
    )
    cron = workload(
        "CronJob",
        make_pod().label("job", "x").spread(1, ZONE, DNS, exists("job")).obj(),
        name="nightly",
    )
    dry = make_pod().name("dry").label("app", "web").spread(1, ZONE, DNS, web).obj()

    def body(doc: Any) -> bytes:
        return json.dumps(doc, separators=(",", ":")).encode()

    # Weights out of 20, roughly what a cluster sends: most pods carry no or one constraint.
    weighted: list[tuple[int, str, bytes, int]] = [
        (4, "/validate", body(review(zero)), 200),
        (3, "/validate", body(review(one)), 200),
        (2, "/validate", body(review(two)), 200),
        (1, "/validate", body(review(deploy)), 200),
        (1, "/validate", body(review(invalid)), 200),
        (3, "/mutate", body(review(zero)), 200),
        (2, "/mutate", body(review(two)), 200),
        (1, "/mutate", body(review(deploy, "UPDATE", old=deploy)), 200),
        (1, "/mutate", body(review(cron)), 200),
        (1, "/mutate", body(review(dry, dry_run=True)), 200),
        (1, "/validate", b'{"kind":"AdmissionReview","request":[]}', 400),
    ]
    mix = [(path, data, status) for n, path, data, status in weighted for _ in range(n)]
    # A fixed interleaving, so every short window sees the whole mix.
    random.Random(7).shuffle(mix)  # nosec B311  # request order only, nothing secret
    return mix


def realistic_pod() -> dict[str, Any]:
    """A Pod as a ReplicaSet's controller sends it for creation (about 5 KB as JSON):
    generateName, pod-template-hash, ownerReferences, managedFields, a projected service
    account token volume, tolerations, required node affinity, probes, resources and two
    spread constraints (zone DoNotSchedule with matchLabelKeys, hostname ScheduleAnyway)."""
    labels = {"app": "web", "tier": "frontend", "pod-template-hash": "7c9f8d6b5"}
    container = {
        "name": "web",
        "image": "registry.example.com/shop/web:1.4.2",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": "LOG_LEVEL", "value": "info"},
                {"name": "HTTP_PORT", "value": "8080"},
                {"name": "UPSTREAM_URL", "value": "http://api.shop.svc.cluster.local:8080"},
                {"name": "CACHE_TTL_SECONDS", "value": "30"},
                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                "fieldPath": "spec.nodeName"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                "fieldPath": "metadata.name"}}}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                      "limits": {"memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                           "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1,
                           "failureThreshold": 3},
        "livenessProbe": {"httpGet": {"path": "/live", "port": "http", "scheme": "HTTP"},
                          "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1,
                          "successThreshold": 1, "failureThreshold": 3},
        "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": True,
                          "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}},
    }
    web = {"matchLabels": {"app": "web"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "web-7c9f8d6b5-",
            "namespace": "shop",
            "labels": labels,
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-05-01T12:00:00Z",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "8080",
                            "prometheus.io/path": "/metrics",
                            "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-7c9f8d6b5",
                                 "uid": "6f1c2a9e-0d1b-4c3e-9a55-2b7e8f4d1c30",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{
                "manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "v1", "time": "2024-05-01T12:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {
                    "f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:tier": {},
                                                       "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, 'k:{"uid":"6f1c2a9e"}': {}}},
                    "f:spec": {"f:containers": {'k:{"name":"web"}': {
                        ".": {}, "f:env": {}, "f:image": {}, "f:imagePullPolicy": {},
                        "f:livenessProbe": {}, "f:name": {}, "f:ports": {},
                        "f:readinessProbe": {}, "f:resources": {}, "f:securityContext": {}}},
                        "f:affinity": {}, "f:dnsPolicy": {}, "f:enableServiceLinks": {},
                        "f:restartPolicy": {}, "f:schedulerName": {},
                        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
                        "f:tolerations": {}, "f:topologySpreadConstraints": {}}},
            }],
        },
        "spec": {
            "volumes": [{"name": "kube-api-access-x7k2p", "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt",
                                   "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "web",
            "serviceAccount": "web",
            "securityContext": {"fsGroup": 2000},
            "schedulerName": "default-scheduler",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}]}}},
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}],
            "topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS,
                 "labelSelector": web, "matchLabelKeys": ["pod-template-hash"]},
                {"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA,
                 "labelSelector": web}],
        },
    }


def realistic_review(pod: dict[str, Any] | None = None) -> bytes:
    """The AdmissionReview kube-apiserver sends for realistic_pod (CREATE, with userInfo),
    or for `pod` when given."""
    doc = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0b7f4e1c-3c2a-4d4b-9a1e-6f7c2d9e8a10",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "shop",
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                         "uid": "3c1d7e2a-8b4f-4e6a-9d0c-5f2b1a7e6c48",
                         "groups": ["system:serviceaccounts",
                                    "system:serviceaccounts:kube-system",
                                    "system:authenticated"]},
            "object": pod if pod is not None else realistic_pod(),
            "oldObject": None,
            "dryRun": False,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        },
    }
    return json.dumps(doc, separators=(",", ":")).encode()


# ---------------------------------------------------------------------------------------
# Processes and their CPU time


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its children (gunicorn master and workers)."""
    return cpu_seconds(pid) + sum(cpu_seconds(c) for c in children(pid))


def machine_busy() -> float:
    """CPU seconds the whole machine spent busy (every process, every core), /proc/stat."""
    parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(x) for x in parts]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / CLK_TCK


def client_context(ca_file: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(
    kind: str,
    cert_dir: str,
    workdir: Path,
    workers: int,
    worker_class: str,
    threads: int,
    extra: tuple[str, ...] = (),
    ready_within: float = 60.0,
) -> Server:
    """`topospread serve` (kind "webhook", `extra` added to its arguments) or the floor
    app on the same stack (kind "floor")."""
    port = free_port()
    bind = f"{HOST}:{port}"
    name = f"{kind}-{worker_class}-w{workers}-t{threads}"
    if kind == "webhook":
        argv = [sys.executable, "-c", _SERVE, worker_class, str(threads), "serve"]
        argv += ["--cert-dir", cert_dir, "--bind", bind, "--workers", str(workers), *extra]
    else:
        argv = [sys.executable, "-c", _FLOOR, cert_dir, bind, str(workers), worker_class]
        argv += [str(threads)]
    log = workdir / f"{name}.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)  # nosec B603
    server = Server(name, proc, port, log)
    ctx = client_context(os.path.join(cert_dir, "ca.crt"))
    path = "/readyz" if kind == "webhook" else "/"
    deadline = time.monotonic() + ready_within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited: see {log}\n{log.read_text()[-2000:]}")
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPSConnection(HOST, port, context=ctx, timeout=2)
            conn.request("GET" if kind == "webhook" else "POST", path, body=b"{}")
            if conn.getresponse().status == 200:
                conn.close()
                # Let every worker finish booting before measuring.
                time.sleep(1.0)
                return server
        time.sleep(0.2)
    server.stop()
    raise SystemExit(f"{name} not ready after {ready_within:.0f} s: see {log}")


# ---------------------------------------------------------------------------------------
# Python clients (open loop, or closed loop for saturation without wrk)


@dataclass
class Outcome:
    latencies: list[float] = field(default_factory=list)
    unexpected: int = 0
    errors: int = 0
    cpu: float = 0.0
    tls: str = ""


def _client_process(
    index: int,
    port: int,
    ca_file: str,
    mix: list[tuple[str, bytes, int]],
    rate: float | None,
    start: float,
    duration: float,
    out: Any,
) -> None:
    """One client process: CONNECTIONS_PER_PROCESS threads, one persistent connection each.

    With `rate`, request i (across all processes) is due at start + i/rate and this process
    sends those with i % CLIENT_PROCESSES == index; latency counts from the due time.
    Without, each thread sends back to back (closed loop).
    """
    ctx = client_context(ca_file)
    lock = threading.Lock()
    counter = iter(range(index, 10**12, CLIENT_PROCESSES))
    result = Outcome()
    end = start + duration

    def run() -> None:
        conn = http.client.HTTPSConnection(HOST, port, context=ctx, timeout=30)
        headers = {"Content-Type": "application/json"}
        while True:
            with lock:
                i = next(counter)
            due = start + i / rate if rate else time.monotonic()
            if due >= end:
                break
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            path, body, expected = mix[i % len(mix)]
            try:
                if body:
                    conn.request("POST", path, body=body, headers=headers)
                else:
                    conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPSConnection(HOST, port, context=ctx, timeout=30)
                with lock:
                    result.errors += 1
                continue
            done = time.monotonic()
            with lock:
                result.latencies.append(done - due)
                if status != expected:
                    result.unexpected += 1
                if not result.tls and conn.sock is not None:
                    sock: Any = conn.sock
                    result.tls = f"{sock.version()} {sock.cipher()[0]}"
        conn.close()

    threads = [threading.Thread(target=run) for _ in range(CONNECTIONS_PER_PROCESS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage = os.times()
    result.cpu = usage.user + usage.system
    out.put(asdict(result))


def python_load(
    port: int, ca_file: str, mix: list[tuple[str, bytes, int]], rate: float | None, duration: float
) -> tuple[Outcome, float]:
    """Run the client processes; their merged outcome and the wall time they covered."""
    queue: Any = mp.get_context("fork").Queue()
    # A short lead so every process is running before the first request is due.
    start = time.monotonic() + 0.5
    procs = [
        mp.get_context("fork").Process(
            target=_client_process, args=(i, port, ca_file, mix, rate, start, duration, queue)
        )
        for i in range(CLIENT_PROCESSES)
    ]
    for p in procs:
        p.start()
    merged = Outcome()
    for _ in procs:
        part = queue.get(timeout=duration + 120)
        merged.latencies += part["latencies"]
        merged.unexpected += part["unexpected"]
        merged.errors += part["errors"]
        merged.cpu += part["cpu"]
        merged.tls = merged.tls or part["tls"]
    for p in procs:
        p.join(timeout=30)
    wall = max(time.monotonic() - start, duration)
    return merged, wall


# ---------------------------------------------------------------------------------------
# wrk (saturation)

_WRK_LUA = """
local mix = {
%s
}
local i = 0
request = function()
  i = i + 1
  local r = mix[(i %% #mix) + 1]
  if r[2] == "" then
    return wrk.format("GET", r[1])
  end
  return wrk.format("POST", r[1], {["Content-Type"] = "application/json"}, r[2])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKRESULT {"requests": %%d, "duration_us": %%d, "p50_us": %%d, "p99_us": %%d, ' ..
    '"p999_us": %%d, "status_errors": %%d, "socket_errors": %%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency:percentile(99.9), e.status, e.connect + e.read + e.write + e.timeout))
end
"""


def wrk_script(mix: list[tuple[str, bytes, int]], workdir: Path) -> Path:
    rows = []
    for path, body, _ in mix:
        text = body.decode()
        if "]==]" in text:
            raise SystemExit("a request body holds ]==], which ends a Lua long string")
        rows.append(f'  {{"{path}", [==[{text}]==]}},')
    script = workdir / "mix.lua"
    script.write_text(_WRK_LUA % "\n".join(rows))
    return script


def wrk_load(port: int, script: Path, duration: float) -> tuple[dict[str, Any], float]:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed")
    argv = [wrk, "-t1", f"-c{WRK_CONNECTIONS}", f"-d{int(duration)}s", "--timeout", "10s"]
    argv += ["-s", str(script), f"https://{HOST}:{port}/"]
    before = os.times()
    done = subprocess.run(  # nosec B603  # fixed argument list, loopback target
        argv, capture_output=True, text=True, timeout=duration + 60, check=False
    )
    after = os.times()
    for line in done.stdout.splitlines():
        if line.startswith("WRKRESULT "):
            cpu = (after.children_user - before.children_user) + (
                after.children_system - before.children_system
            )
            return json.loads(line.split(" ", 1)[1]), cpu
    raise SystemExit(f"wrk failed: {done.stdout}\n{done.stderr}")


# ---------------------------------------------------------------------------------------
# Phases


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class Phase:
    server: str
    load: str
    offered: float | None
    achieved: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    requests: int
    bad: int
    server_cpu_ms_per_req: float
    client_cpu_s: float
    other_cpu_s: float
    wall_s: float
    tls: str = ""
    worker_cpu_s: str = ""


@contextlib.contextmanager
def measured(server: Server) -> Iterator[dict[str, Any]]:
    workers = children(server.proc.pid)
    per0 = {w: cpu_seconds(w) for w in workers}
    cpu0, busy0, t0 = tree_cpu(server.proc.pid), machine_busy(), time.monotonic()
    box: dict[str, Any] = {}
    yield box
    box["server_cpu"] = tree_cpu(server.proc.pid) - cpu0
    box["busy"] = machine_busy() - busy0
    box["wall"] = time.monotonic() - t0
    # How the work spread over the workers: keep-alive connections stay with the worker
    # that accepted them.
    box["split"] = "/".join(f"{cpu_seconds(w) - c:.1f}" for w, c in per0.items())


def run_phase(
    server: Server,
    ca_file: str,
    mix: list[tuple[str, bytes, int]],
    rate: float | None,
    duration: float,
    script: Path | None,
) -> Phase:
    with measured(server) as m:
        if rate is None and script is not None:
            res, client_cpu = wrk_load(server.port, script, duration)
            n = int(res["requests"])
            wall = res["duration_us"] / 1e6
            # The mix holds malformed bodies answered 400 on purpose; wrk counts them with
            # any other non-2xx, so only an excess over the mix's share is reported.
            expected_400 = math.ceil(n * sum(1 for _, _, s in mix if s != 200) / len(mix))
            if server.name.startswith("floor"):
                expected_400 = 0
            bad = max(0, int(res["status_errors"]) - expected_400) + int(res["socket_errors"])
            p50, p99, p999 = (res[k] / 1e3 for k in ("p50_us", "p99_us", "p999_us"))
            load, tls = f"wrk -c{WRK_CONNECTIONS} closed loop", ""
        else:
            outcome, wall = python_load(server.port, ca_file, mix, rate, duration)
            lat = sorted(outcome.latencies)
            n = len(lat)
            floor = server.name.startswith("floor")
            bad = outcome.errors + (0 if floor else outcome.unexpected)
            p50, p99, p999 = (percentile(lat, q) * 1e3 for q in (50, 99, 99.9))
            client_cpu = outcome.cpu
            conns = CLIENT_PROCESSES * CONNECTIONS_PER_PROCESS
            load = f"python open loop, {conns} conns" if rate else f"python closed, {conns} conns"
            tls = outcome.tls
    server_cpu = m["server_cpu"]
    return Phase(
        server=server.name,
        load=load,
        offered=rate,
        achieved=n / wall if wall else 0.0,
        p50_ms=p50,
        p99_ms=p99,
        p999_ms=p999,
        requests=n,
        bad=bad,
        server_cpu_ms_per_req=1e3 * server_cpu / n if n else math.nan,
        client_cpu_s=client_cpu,
        other_cpu_s=max(0.0, m["busy"] - server_cpu - client_cpu),
        wall_s=m["wall"],
        tls=tls,
        worker_cpu_s=m["split"],
    )


def print_phase(p: Phase) -> None:
    offered = f"{p.offered:>6.0f}" if p.offered else "   sat"
    print(
        f"{p.server:<24} {offered} {p.achieved:>8.0f} {p.p50_ms:>7.2f} {p.p99_ms:>8.2f} "
        f"{p.p999_ms:>8.2f} {p.server_cpu_ms_per_req:>7.3f} {p.requests:>7} {p.bad:>4} "
        f"{p.client_cpu_s:>6.1f} {p.other_cpu_s:>6.1f}  {p.load}; workers CPU s {p.worker_cpu_s}",
        flush=True,
    )


HEADER = (
    f"{'server':<24} {'offer':>6} {'req/s':>8} {'p50ms':>7} {'p99ms':>8} {'p99.9ms':>8} "
    f"{'cpu ms':>7} {'n':>7} {'bad':>4} {'cliCPU':>6} {'other':>6}  load"
)


def bench_server(
    kind: str,
    args: argparse.Namespace,
    cert_dir: str,
    workdir: Path,
    mix: list[tuple[str, bytes, int]],
    script: Path | None,
    workers: int,
    worker_class: str,
    threads: int,
    rates: list[float],
) -> list[Phase]:
    server = start_server(kind, cert_dir, workdir, workers, worker_class, threads)
    ca_file = os.path.join(cert_dir, "ca.crt")
    phases = []
    try:
        # Warm-up, not reported: imports, first connections, caches.
        run_phase(server, ca_file, mix, 200.0, 2.0, None)
        for rate in rates:
            phases.append(run_phase(server, ca_file, mix, rate, args.duration, None))
            print_phase(phases[-1])
        phases.append(run_phase(server, ca_file, mix, None, args.duration, script))
        print_phase(phases[-1])
    finally:
        server.stop()
    return phases


def bench_realistic(
    args: argparse.Namespace, cert_dir: str, workdir: Path, workers: int, threads: int
) -> list[Phase]:
    """The issue-13 scenario: the realistic review alone on /validate at fixed rates and
    on /mutate at 500 req/s (16 keep-alive connections, open loop), then saturation of
    /validate and of GET /healthz with wrk -c16 on the same server."""
    body = realistic_review()
    validate = [("/validate", body, 200)]
    mutate = [("/mutate", body, 200)]
    healthz = [("/healthz", b"", 200)]
    server = start_server("webhook", cert_dir, workdir, workers, "default", threads)
    ca_file = os.path.join(cert_dir, "ca.crt")
    phases = []
    try:
        run_phase(server, ca_file, validate, 200.0, 2.0, None)  # warm-up, not reported
        for label, mix, rate in [("validate", validate, r) for r in args.validate_rates] + [
            ("mutate", mutate, r) for r in args.mutate_rates
        ]:
            phase = run_phase(server, ca_file, mix, rate, args.duration, None)
            phase.load = f"{label} {phase.load}; load avg {os.getloadavg()[0]:.2f}"
            phases.append(phase)
            print_phase(phase)
        for label, mix in (("validate", validate), ("healthz", healthz)):
            script = None if args.no_wrk or shutil.which("wrk") is None else (
                wrk_script(mix, workdir)
            )
            phase = run_phase(server, ca_file, mix, None, args.duration, script)
            phase.load = f"{label} {phase.load}; load avg {os.getloadavg()[0]:.2f}"
            phases.append(phase)
            print_phase(phase)
    finally:
        server.stop()
    sat = [p for p in phases if p.offered is None]
    if len(sat) == 2 and sat[1].achieved:
        print(
            f"saturation: /validate {sat[0].achieved:.0f} req/s, GET /healthz "
            f"{sat[1].achieved:.0f} req/s, ratio {sat[0].achieved / sat[1].achieved:.2f}; "
            f"server CPU per request {sat[0].server_cpu_ms_per_req:.3f} ms vs "
            f"{sat[1].server_cpu_ms_per_req:.3f} ms",
            flush=True,
        )
    return phases


# ---------------------------------------------------------------------------------------
# Foresight on a big cluster: sequential reviews over one keep-alive connection

# The config of the big-cluster phase: under the deny policy every created Pod is looked
# at, the ReplicaSet's replicas of the realistic review included (without it their
# warning would have no reader and foresight would not run for them).
_DENY_CONFIG = "policy:\n  denyUnschedulable: true\n"


def _memory_kib(pid: int, field: str) -> int:
    """A /proc/<pid>/smaps_rollup field (Rss, Pss) in KiB; 0 when unreadable."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def replica_memory(pid: int) -> dict[str, float]:
    """MiB the serving processes (gunicorn master and workers) hold: RSS summed (counts
    pages the workers share with the master once per process) and PSS summed (shared
    pages split between their sharers: what the replica costs the node)."""
    pids = [pid, *children(pid)]
    return {
        "processes": len(pids),
        "rss_mib": sum(_memory_kib(p, "Rss") for p in pids) / 1024,
        "pss_mib": sum(_memory_kib(p, "Pss") for p in pids) / 1024,
    }


def sequential(port: int, ca_file: str, body: bytes, n: int) -> tuple[list[float], int]:
    """POST `body` to /validate n times over one keep-alive connection, one after the
    other: (latencies in ms, answers that were not an allowed 200)."""
    conn = http.client.HTTPSConnection(HOST, port, context=client_context(ca_file), timeout=30)
    headers = {"Content-Type": "application/json"}
    latencies, bad = [], 0
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            conn.request("POST", "/validate", body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            latencies.append((time.perf_counter() - t0) * 1000)
            if resp.status != 200 or json.loads(data)["response"]["allowed"] is not True:
                bad += 1
    finally:
        conn.close()
    return latencies, bad


def foresight_counts(port: int, ca_file: str) -> dict[str, float]:
    """topospread_foresight_total by outcome, from the server's /metrics."""
    conn = http.client.HTTPSConnection(HOST, port, context=client_context(ca_file), timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    counts = {}
    for line in text.splitlines():
        if line.startswith("topospread_foresight_total{"):
            label, value = line.rsplit(" ", 1)
            counts[label.split('"')[1]] = float(value)
    return counts


def big_snapshot(workdir: Path, nodes: int, pods: int) -> Path:
    """bench_scheduling's generated cluster: `nodes` nodes of 64 cpu in 3 zones, `pods`
    bound pods of 100m each spread at random (about 30 per node at the defaults)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_scheduling import write_snapshot

    path = workdir / f"cluster-{nodes}-{pods}.json"
    write_snapshot(path, nodes, pods)
    return path


def bench_big(
    args: argparse.Namespace, cert_dir: str, workdir: Path, workers: int, threads: int
) -> list[dict[str, Any]]:
    """The realistic review on /validate, sequentially over one keep-alive connection, on
    the demo snapshot and on a generated big one, with the deny policy on (foresight
    looks at every created Pod): as it is (some node fits) and requesting 63.5 cpu, more
    than any node of the big cluster has free (every node out of capacity; on the demo
    snapshot no node has that much either)."""
    config = workdir / "deny.yaml"
    config.write_text(_DENY_CONFIG)
    ca_file = os.path.join(cert_dir, "ca.crt")
    fits = realistic_pod()
    full = realistic_pod()
    full["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "63500m"
    cases = [("some node fits", realistic_review(fits)), ("no node fits", realistic_review(full))]
    print(f"generating {args.big_nodes} nodes / {args.big_pods} pods ...", flush=True)
    big = big_snapshot(workdir, args.big_nodes, args.big_pods)
    rows: list[dict[str, Any]] = []
    print(f"{'snapshot':<16} {'case':<16} {'median ms':>9} {'p99 ms':>8} {'bad':>4}  "
          "foresight / memory", flush=True)  # fmt: skip
    for label, snapshot in (("demo", None), (f"{args.big_nodes} nodes", big)):
        extra = ("--config", str(config))
        if snapshot is not None:
            extra += ("--snapshot", str(snapshot))
        started = time.monotonic()
        server = start_server(
            "webhook", cert_dir, workdir, workers, "default", threads, extra, ready_within=600
        )
        ready = time.monotonic() - started
        try:
            for case, body in cases:
                sequential(server.port, ca_file, body, 20)  # warm-up, not reported
                runs = []
                for _ in range(args.big_runs):
                    latencies, bad = sequential(server.port, ca_file, body, args.big_reviews)
                    latencies.sort()
                    runs.append((percentile(latencies, 50), percentile(latencies, 99), bad))
                median = statistics.median(r[0] for r in runs)
                p99 = statistics.median(r[1] for r in runs)
                bad = sum(r[2] for r in runs)
                row = {"snapshot": label, "case": case, "median_ms": median, "p99_ms": p99,
                       "bad": bad, "runs": [r[:2] for r in runs],
                       "load": os.getloadavg()[0]}  # fmt: skip
                rows.append(row)
                print(f"{label:<16} {case:<16} {median:>9.2f} {p99:>8.2f} {bad:>4}  "
                      f"runs {', '.join(f'{m:.2f}' for m, _, _ in runs)}; "
                      f"load avg {row['load']:.2f}", flush=True)  # fmt: skip
            memory = replica_memory(server.proc.pid)
            counts = foresight_counts(server.port, ca_file)
            rows.append({"snapshot": label, "memory": memory, "foresight": counts,
                         "ready_s": ready})  # fmt: skip
            print(f"{label:<16} ready in {ready:.1f} s; foresight {counts}; "
                  f"{memory['processes']} processes, RSS {memory['rss_mib']:.0f} MiB, "
                  f"PSS {memory['pss_mib']:.0f} MiB", flush=True)  # fmt: skip
        finally:
            server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per phase")
    parser.add_argument("--rates", default="100,500,1000", help="offered req/s, comma separated")
    parser.add_argument("--workers", type=int, default=None, help="default: serve's default")
    parser.add_argument("--variants", action="store_true", help="also try worker classes")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="CLASS:WORKERS:THREADS",
        help="also try this one (repeatable), e.g. gthread:2:8",
    )
    parser.add_argument("--no-wrk", action="store_true", help="closed-loop Python saturation")
    parser.add_argument("--json", metavar="OUT", help="write every phase as JSON here")
    parser.add_argument(
        "--mix", action="store_true",
        help="the earlier scenario: the mix of 20 reviews at --rates, and the floor",
    )
    parser.add_argument("--validate-rates", default="200,500,1000",
                        help="req/s of the realistic review on /validate")
    parser.add_argument("--mutate-rates", default="500",
                        help="req/s of the realistic review on /mutate")
    parser.add_argument("--big", choices=("also", "only", "no"), default="also",
                        help="the sequential phase on a generated big snapshot")
    parser.add_argument("--big-nodes", type=int, default=5000)
    parser.add_argument("--big-pods", type=int, default=150_000)
    parser.add_argument("--big-reviews", type=int, default=300,
                        help="sequential reviews per run and case")
    parser.add_argument("--big-runs", type=int, default=3)
    args = parser.parse_args(argv)
    args.validate_rates = [float(r) for r in args.validate_rates.split(",") if r]
    args.mutate_rates = [float(r) for r in args.mutate_rates.split(",") if r]
    args.duration = min(max(args.duration, 2.0), 60.0)
    rates = [float(r) for r in args.rates.split(",") if r]

    from webhook.server.gunicorn_conf import OPTIONS

    workers = args.workers or int(OPTIONS["workers"])
    worker_class, threads = str(OPTIONS["worker_class"]), int(OPTIONS["threads"])
    mix = request_mix()
    print(
        f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f} at start; "
        f"mix of {len(mix)} requests ({sum(len(b) for _, b, _ in mix) // len(mix)} bytes "
        "mean body)",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="topospread-bench-"))
    cert_dir = str(workdir / "certs")
    try:
        subprocess.run(  # nosec B603  # our own CLI, fixed arguments
            [sys.executable, "-m", "webhook.cli.main", "certs", "--service", SERVICE,
             "--namespace", NAMESPACE, "--out", cert_dir],
            check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        script = None if args.no_wrk or shutil.which("wrk") is None else wrk_script(mix, workdir)
        if script is None:
            print("wrk not found (apt-get install wrk): saturation by Python clients", flush=True)
        print(HEADER, flush=True)
        phases: list[Phase] = []
        if not args.mix:
            print(f"realistic review: {len(realistic_review())} bytes", flush=True)
            if args.big != "only":
                phases += bench_realistic(args, cert_dir, workdir, workers, threads)
            big = bench_big(args, cert_dir, workdir, workers, threads) if args.big != "no" else []
            if args.json:
                Path(args.json).write_text(
                    json.dumps({"phases": [asdict(p) for p in phases], "big": big}, indent=1)
                )
            print(f"load average {os.getloadavg()[0]:.2f} at end", flush=True)
            return 0
        common = (args, cert_dir, workdir, mix, script)
        phases += bench_server("webhook", *common, workers, worker_class, threads, rates)
        phases += bench_server("floor", *common, workers, worker_class, threads, rates)
        variants = (
            [
                ("sync", 2, 1),
                ("sync", 4, 1),
                ("gthread", 2, 1),
                ("gthread", 3, 2),
                ("gthread", 4, 4),
            ]
            if args.variants
            else []
        )
        for spec in args.variant:
            cls, w, t = spec.split(":")
            variants.append((cls, int(w), int(t)))
        for cls, w, t in variants:
            phases += bench_server("webhook", *common, w, cls, t, [500.0])
        webhook = [p for p in phases if p.server.startswith("webhook") and p.offered is None]
        floor = [p for p in phases if p.server.startswith("floor") and p.offered is None]
        if webhook and floor:
            w, f = webhook[0], floor[0]
            print(
                f"saturation: webhook {w.achieved:.0f} req/s, floor {f.achieved:.0f} req/s, "
                f"ratio {w.achieved / f.achieved:.2f}; server CPU per request "
                f"{w.server_cpu_ms_per_req:.3f} ms vs {f.server_cpu_ms_per_req:.3f} ms "
                f"(x{w.server_cpu_ms_per_req / f.server_cpu_ms_per_req:.1f})"
            )
        tls = next((p.tls for p in phases if p.tls), "")
        print(f"TLS negotiated: {tls}; load average {os.getloadavg()[0]:.2f} at end")
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(p) for p in phases], indent=1))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
