"""The webhook inside the real admission chain, under the controllers' load and under
faults (issue 38): what `make bench-chain` (bench/bench_chain.py) measures and what
tests/e2e/test_chain.py asserts, written once.

The control plane is the e2e fixture's, with kube-controller-manager at
`--kube-api-qps 100 --kube-api-burst 100` and kwok nodes in three zones. topospread is
installed as users install it (tests/e2e/webhook.py: `topospread certs`, `topospread
manifests`, the Service reference turned into a loopback URL), with `failurePolicy: Fail`
and the rendered `timeoutSeconds`, and runs as two replicas: two `topospread serve
--share-port` processes on one port, each with a ServiceAccount token of its own and the
live informer, the kernel spreading connections over them as a Service spreads them over
pods.

A phase scales Deployments (zone and hostname constraints, and some without any, so the
defaults are injected) from 0 to its pods, waits until every pod is Ready, checks every
pod as the API server stored it, then scales back to 0; with a fault, the fault runs
meanwhile and the cycles go on until it is over. kube-apiserver's own /metrics are read
before and after each phase (and around its restart, which resets them).
"""

from __future__ import annotations

import contextlib
import copy
import http.client
import json
import os
import shutil
import signal
import ssl
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.controlplane import ControlPlane, ControlPlaneError, Process, node_object
from tests.e2e.webhook import NAMESPACE, TOPOSPREAD, Webhook, topospread
from tests.procs import cpu_seconds, descendants, rss_bytes

FAULTS = ("rolling-restart", "kill-9", "serving-cert", "new-ca", "apiserver-restart",
          "etcd-compaction")
GRACEFUL = tuple(f for f in FAULTS if f != "kill-9")
# kube-apiserver's buckets for webhook admission durations that the targets name.
BUCKETS = {"le5ms": "0.005", "le25ms": "0.025", "le100ms": "0.1"}
ALL_BUCKETS = ("0.005", "0.025", "0.1", "0.5", "1.0", "2.5", "10.0", "25.0", "+Inf")
KCM_FLAGS = ["--kube-api-qps=100", "--kube-api-burst=100"]
ZONES = ("zone-a", "zone-b", "zone-c")
DRY_RUN = {"topospread.io/dry-run": "true"}
PLACEMENT = "topospread.io/placement"
# kube-scheduler's system defaults, as the rendered config injects them.
SYSTEM_DEFAULTS = [("kubernetes.io/hostname", 3, "ScheduleAnyway"),
                   ("topology.kubernetes.io/zone", 5, "ScheduleAnyway")]
SPREAD = [("topology.kubernetes.io/zone", 1, "DoNotSchedule"),
          ("kubernetes.io/hostname", 1, "ScheduleAnyway")]
# Deployments per phase, and which of them have no constraints (defaults injected).
DEPLOYMENTS = 6
BARE = {4, 5}
JOINED = "ready: joined the shared port"


def chain_plane(workdir: Path, minor: str) -> ControlPlane:
    return ControlPlane(workdir, minor, extra_controller_manager_flags=list(KCM_FLAGS))


def chain_nodes(count: int) -> list[dict[str, Any]]:
    """`count` kwok nodes over three zones, room for 100 pods each."""
    return [node_object(f"chain-{ZONES[i % 3][-1]}-{i}", ZONES[i % 3], cpu="32",
                        memory="128Gi", pods="110") for i in range(count)]


def deployment(index: int, placement: bool = True) -> dict[str, Any]:
    """Deployment d<index>; its pods ask for the placement annotations unless not
    `placement`."""
    app = {"app": f"d{index}"}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.test/web:1",
                                            "resources": {"requests": {"cpu": "10m"}}}]}
    if index not in BARE:
        spec["topologySpreadConstraints"] = [
            {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": app}} for key, skew, when in SPREAD]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{index}"},
            "spec": {"replicas": 0, "selector": {"matchLabels": app},
                     "template": {"metadata": {"labels": app,
                                               "annotations": DRY_RUN if placement else {}},
                                  "spec": spec}}}


def shares(total: int) -> list[int]:
    """`total` pods over the Deployments, as evenly as they go."""
    return [total // DEPLOYMENTS + (1 if i < total % DEPLOYMENTS else 0)
            for i in range(DEPLOYMENTS)]


def mutation_problem(pod: dict[str, Any], placement: bool = True) -> str | None:
    """What the webhook should have written on this stored pod and did not: the placement
    annotation (when the pod asks for it: `placement`), and the system defaults on a pod
    without constraints of its own."""
    meta = pod.get("metadata") or {}
    name = meta.get("name", "?")
    note = (meta.get("annotations") or {}).get(PLACEMENT)
    try:
        note_doc = json.loads(note) if note else None
    except ValueError:
        note_doc = None
    if placement and (not isinstance(note_doc, dict) or "feasible" not in note_doc):
        return f"{name}: no {PLACEMENT} annotation"
    got = [(c.get("topologyKey"), c.get("maxSkew"), c.get("whenUnsatisfiable"))
           for c in (pod.get("spec") or {}).get("topologySpreadConstraints") or []]
    index = int(str((meta.get("labels") or {}).get("app", "d0"))[1:] or 0)
    want = SYSTEM_DEFAULTS if index in BARE else SPREAD
    if got != want:
        return f"{name}: constraints {got}, expected {want}"
    return None


# ---------------------------------------------------------------------------------------------
# kube-apiserver's metrics


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_metrics(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = float(s.value)
    return out


def subtract(after: Samples, before: Samples) -> Samples:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def add(a: Samples, b: Samples) -> Samples:
    return {k: a.get(k, 0.0) + b.get(k, 0.0) for k in a.keys() | b.keys()}


def total(samples: Samples, name: str, /, **match: str) -> float:
    """The sum of `name`'s samples with these labels (a counter under its name with or
    without `_total`, as exposition formats differ)."""
    names = {name, name.removesuffix("_total"), name.removesuffix("_total") + "_total"}
    return sum(v for (n, labels), v in samples.items()
               if n in names and all((k, w) in labels for k, w in match.items()))


def label_values(samples: Samples, name: str, label: str, /) -> set[str]:
    names = {name, name.removesuffix("_total"), name.removesuffix("_total") + "_total"}
    return {dict(labels)[label] for (n, labels), _ in samples.items()
            if n in names and label in dict(labels)}


ADMISSION = "apiserver_admission_webhook_admission_duration_seconds"


def webhook_figures(delta: Samples) -> dict[str, dict[str, float]]:
    """Per webhook (the API server's `name` label): calls, and the share within 5, 25 and
    100 ms."""
    out = {}
    for name in sorted(label_values(delta, f"{ADMISSION}_count", "name")):
        calls = total(delta, f"{ADMISSION}_count", name=name)
        if calls <= 0:
            continue
        row = {"calls": int(calls)}
        for key, le in BUCKETS.items():
            row[key] = round(total(delta, f"{ADMISSION}_bucket", name=name, le=le) / calls, 5)
        out[name] = row
    return out


def worst_bucket(delta: Samples) -> str | None:
    """The smallest bucket every webhook call of the phase fell within."""
    calls = total(delta, f"{ADMISSION}_count")
    if calls <= 0:
        return None
    for le in ALL_BUCKETS:
        if total(delta, f"{ADMISSION}_bucket", le=le) >= calls:
            return le
    return "+Inf"


def pod_watch(delta: Samples, name: str) -> float:
    """`name` summed over kube-apiserver's pod watches (every watcher's): the metric names
    the kind in a `kind` or a `resource` label, as releases differ."""
    return total(delta, name, kind="Pod") + total(delta, name, resource="pods")


def rejections(delta: Samples) -> dict[str, int]:
    name = "apiserver_admission_webhook_rejection_count_total"
    return {t: int(total(delta, name, error_type=t))
            for t in sorted(label_values(delta, name, "error_type"))}


def request_codes(delta: Samples) -> dict[str, int]:
    name = "apiserver_admission_webhook_request_total"
    return {c: int(total(delta, name, code=c)) for c in sorted(label_values(delta, name, "code"))}


def pod_create_latency(delta: Samples) -> dict[str, dict[str, float]]:
    """POST pods (not dry runs): the whole request (apiserver_request_duration_seconds)
    and without webhooks (apiserver_request_sli_duration_seconds): count, mean, p99."""
    out = {}
    for key, metric in (("withWebhooks", "apiserver_request_duration_seconds"),
                        ("withoutWebhooks", "apiserver_request_sli_duration_seconds")):
        match = {"verb": "POST", "resource": "pods", "subresource": ""}
        if key == "withWebhooks":  # the SLI histogram has no dry_run label
            match["dry_run"] = ""
        count = total(delta, f"{metric}_count", **match)
        if count <= 0:
            continue
        buckets = sorted(
            (float(dict(labels)["le"]), v) for (n, labels), v in delta.items()
            if n == f"{metric}_bucket" and all((k, w) in labels for k, w in match.items())
        )
        merged: dict[float, float] = {}
        for le, v in buckets:
            merged[le] = merged.get(le, 0.0) + v
        p99 = next((le for le, v in sorted(merged.items()) if v >= 0.99 * count), float("inf"))
        out[key] = {"count": int(count),
                    "meanMs": round(total(delta, f"{metric}_sum", **match) / count * 1000, 2),
                    "p99BucketMs": round(p99 * 1000, 1)}
    return out


# ---------------------------------------------------------------------------------------------
# Requests to the API server


class Api:
    """A few requests to the API server as the admin, over their own connections."""

    def __init__(self, cp: ControlPlane) -> None:
        self.cp = cp
        self.ctx = cp.ssl_context()

    def conn(self, timeout: float = 30) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.cp.ports["apiserver"],
                                           context=self.ctx, timeout=timeout)

    def call(self, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> tuple[int, Any]:
        conn = self.conn()
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers={"Content-Type": content_type,
                                                           "Accept": "application/json"})
            with conn.getresponse() as resp:
                raw = resp.read()
            text = raw.decode(errors="replace")
            try:
                return resp.status, json.loads(text) if text else None
            except ValueError:
                return resp.status, text
        finally:
            conn.close()

    def metrics(self) -> Samples:
        status, body = self.call("GET", "/metrics")
        if status != 200 or not isinstance(body, str):
            raise ControlPlaneError(f"GET /metrics: {status}")
        return parse_metrics(body)


class Ledger:
    """kube-apiserver's counters over a phase, across restarts of kube-apiserver (which
    start them again from zero): the sum of each stretch's difference."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.done: Samples = {}
        self.base = api.metrics()
        self.lock = threading.Lock()

    def before_restart(self) -> None:
        with self.lock:
            self.done = add(self.done, subtract(self.api.metrics(), self.base))
            self.base = {}

    def delta(self) -> Samples:
        with self.lock:
            return add(self.done, subtract(self.api.metrics(), self.base))


# ---------------------------------------------------------------------------------------------
# Watching the pods of a phase


class WatchExpired(Exception):
    """410 Gone: the API server no longer has events from the watch's resourceVersion
    (kube-apiserver restarted: its watch cache begins at etcd's revision then)."""


@dataclass
class PodRecord:
    seen: float
    ready: float | None = None
    problem: str | None = None
    gone: bool = False


class PodWatch:
    """A watch on one namespace's pods from a thread: when each was first seen and became
    Ready, and what the webhook wrote on it as stored (checked once, when first seen)."""

    def __init__(self, api: Api, namespace: str, check: bool, placement: bool = True) -> None:
        self.api = api
        self.path = f"/api/v1/namespaces/{namespace}/pods"
        self.check = check
        self.placement = placement
        self.pods: dict[str, PodRecord] = {}
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.restarts = 0
        self.relists = 0
        status, body = api.call("GET", self.path + "?limit=1")
        if status != 200:
            raise ControlPlaneError(f"GET {self.path}: {status} {body}")
        self.rv = body["metadata"]["resourceVersion"]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.is_set():
            conn = self.api.conn(timeout=60)
            try:
                conn.request("GET", f"{self.path}?watch=1&allowWatchBookmarks=true"
                                    f"&resourceVersion={self.rv}&timeoutSeconds=600")
                resp = conn.getresponse()
                if resp.status == 410:
                    raise WatchExpired(self.path)
                if resp.status != 200:
                    raise ControlPlaneError(f"watch {self.path}: {resp.status}")
                while not self.stop_event.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    self._event(json.loads(line))
            except WatchExpired:
                self.relist()
            except (OSError, http.client.HTTPException, ValueError, ControlPlaneError):
                self.restarts += 1
                self.stop_event.wait(0.5)
            finally:
                conn.close()

    def relist(self) -> None:
        """List the pods and watch on from the list, as an informer does after 410 Gone:
        each listed pod taken as a MODIFIED event, each pod no longer listed as deleted.
        A failed list waits and leaves the old resourceVersion, to expire again."""
        status, body = self.api.call("GET", self.path)
        if status != 200 or not isinstance(body, dict):
            self.restarts += 1
            self.stop_event.wait(0.5)
            return
        self.relists += 1
        listed = set()
        for pod in body.get("items") or []:
            listed.add((pod.get("metadata") or {}).get("name", ""))
            self._event({"type": "MODIFIED", "object": pod})
        with self.lock:
            for name, rec in self.pods.items():
                if name not in listed:
                    rec.gone = True
        self.rv = body["metadata"]["resourceVersion"]

    def _event(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if event.get("type") == "ERROR":
            if obj.get("code") == 410:
                raise WatchExpired(str(obj.get("message")))
            raise ControlPlaneError(f"watch error: {obj}")
        self.rv = meta.get("resourceVersion", self.rv)
        if event.get("type") == "BOOKMARK":
            return
        name, now = meta.get("name", ""), time.monotonic()
        with self.lock:
            rec = self.pods.get(name)
            if rec is None:
                rec = self.pods[name] = PodRecord(now)
                if self.check:
                    rec.problem = mutation_problem(obj, self.placement)
            if event.get("type") == "DELETED":
                rec.gone = True
            elif rec.ready is None and any(
                    c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (obj.get("status") or {}).get("conditions") or []):
                rec.ready = now

    def live(self) -> tuple[int, int]:
        """(pods not deleted, of which Ready)."""
        with self.lock:
            alive = [r for r in self.pods.values() if not r.gone]
            return len(alive), sum(1 for r in alive if r.ready is not None)

    def stop(self) -> None:
        self.stop_event.set()


# ---------------------------------------------------------------------------------------------
# The replicas


class Usage:
    """CPU seconds and peak RSS of each replica slot's processes, sampled from /proc."""

    def __init__(self, chain: Chain, every: float = 0.5) -> None:
        self.chain = chain
        self.every = every
        self.cpu = [0.0] * chain.count
        self.peak = [0] * chain.count
        self.last: dict[int, float] = {}
        self.stop_event = threading.Event()
        self.sample()
        self.cpu = [0.0] * chain.count
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        for slot, proc in enumerate(list(self.chain.replicas)):
            if proc is None or proc.pid is None:
                continue
            rss = 0
            for pid in descendants(proc.pid):
                cpu = cpu_seconds(pid)
                self.cpu[slot] += max(0.0, cpu - self.last.get(pid, 0.0))
                self.last[pid] = cpu
                rss += rss_bytes(pid)
            self.peak[slot] = max(self.peak[slot], rss)

    def _run(self) -> None:
        while not self.stop_event.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(5)
        self.sample()


@dataclass
class Chain(Webhook):
    """topospread as two replicas sharing one port, installed with failurePolicy Fail."""

    count: int = 2
    # A replica's command before its --cert-dir and --bind: None for `topospread serve
    # --share-port` with a ServiceAccount token of its own, or bench/nullwebhook
    # (bench_chain --floor: the machine's floor for any webhook).
    server: list[str] | None = None
    replicas: list[Process | None] = field(default_factory=list)
    started: int = 0
    # A namespace for dry-run probes (Runner makes it).
    probe_namespace: str = ""

    def configurations(self) -> list[dict[str, Any]]:
        out = copy.deepcopy(super().configurations())
        for obj in out:
            for hook in obj["webhooks"]:
                hook["failurePolicy"] = "Fail"
        return out

    def webhook_names(self) -> list[str]:
        return sorted(h["name"] for o in self.configurations() for h in o["webhooks"])

    def start(self, timeout: float = 180) -> None:
        (self.dir / "config.yaml").write_text(self.config)
        self.replicas = [None] * self.count
        for slot in range(self.count):
            self.start_replica(slot, timeout)

    def replica_kubeconfig(self, slot: int) -> Path:
        path = self.token_kubeconfig()
        return path.rename(path.with_name(f"replica-{slot}-{self.started}.kubeconfig"))

    def start_replica(self, slot: int, timeout: float = 180) -> Process:
        """A new `serve` process in `slot`, waited for until it joined the port (synced)."""
        self.started += 1
        log = self.cp.logs / f"topospread-{slot}-{self.started}.log"
        if self.server is None:
            argv = [TOPOSPREAD, "serve", "--kubeconfig", str(self.replica_kubeconfig(slot)),
                    "--config", str(self.dir / "config.yaml"), "--share-port"]
        else:
            argv = list(self.server)
        argv += ["--cert-dir", str(self.cert_dir), "--bind", f"127.0.0.1:{self.port}"]
        proc = Process(f"topospread-{slot}", argv, log,
                       lambda: JOINED in log.read_text(errors="replace"))
        proc.start(timeout)
        self.replicas[slot] = proc
        return proc

    def stop(self) -> None:
        for proc in self.replicas:
            if proc is not None:
                proc.stop(timeout=60)

    def enable(self, on: bool) -> None:
        """The webhook configurations applied (on) or deleted (off)."""
        if on:
            self.cp.apply(self.configurations())
        else:
            for obj in self.configurations():
                kind = obj["kind"].lower() + "s"
                self.cp.kubectl("delete", kind, obj["metadata"]["name"], "--ignore-not-found")


# ---------------------------------------------------------------------------------------------
# Faults: each takes the chain and the phase's ledger, returns its figures


def _served_serial(port: int) -> int | None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with ssl.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                ctx.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    except OSError:
        return None
    from cryptography import x509

    return x509.load_der_x509_certificate(der).serial_number if der else None


def _swap_pair(source: Path, cert_dir: Path) -> int:
    """tls.key then tls.crt from `source` into the served directory, each replaced in one
    rename; returns the new certificate's serial."""
    from cryptography import x509

    for name in ("tls.key", "tls.crt"):
        tmp = cert_dir / f".{name}.new"
        shutil.copyfile(source / name, tmp)
        os.replace(tmp, cert_dir / name)
    return int(x509.load_pem_x509_certificate((source / "tls.crt").read_bytes()).serial_number)


def _wait_served(chain: Chain, serial: int, timeout: float = 30) -> float:
    """Until 10 connections in a row (spread over the replicas) get `serial`."""
    t0 = time.monotonic()
    chain.cp.wait_for("the new serving certificate on every replica", lambda: all(
        _served_serial(chain.port) == serial for _ in range(10)), timeout=timeout)
    return time.monotonic() - t0


def _with_bundle(chain: Chain, bundle: bytes) -> list[dict[str, Any]]:
    import base64

    out = chain.configurations()
    for obj in out:
        for hook in obj["webhooks"]:
            hook["clientConfig"]["caBundle"] = base64.b64encode(bundle).decode()
    return out


def fault_serving_cert(chain: Chain, ledger: Ledger) -> dict[str, float]:
    """A new serving certificate from the same CA (`topospread certs` on the CA alone)."""
    fresh = chain.dir / f"renew-{time.monotonic_ns()}"
    fresh.mkdir()
    for name in ("ca.crt", "ca.key"):
        shutil.copy2(chain.cert_dir / name, fresh / name)
    topospread("certs", "--service", NAMESPACE, "--namespace", NAMESPACE, "--out", str(fresh))
    serial = _swap_pair(fresh, chain.cert_dir)
    return {"catchUpSeconds": round(_wait_served(chain, serial), 2)}


def fault_new_ca(chain: Chain, ledger: Ledger, settle: float = 3.0) -> dict[str, float]:
    """A new CA: the caBundle holds both, the new pair is served, the old CA dropped."""
    old = (chain.cert_dir / "ca.crt").read_bytes()
    fresh = chain.dir / f"ca-{time.monotonic_ns()}"
    topospread("certs", "--service", NAMESPACE, "--namespace", NAMESPACE, "--out", str(fresh))
    new = (fresh / "ca.crt").read_bytes()
    chain.cp.apply(_with_bundle(chain, old + new))
    time.sleep(settle)  # the API server's webhook clients take the new bundle
    serial = _swap_pair(fresh, chain.cert_dir)
    seconds = _wait_served(chain, serial)
    time.sleep(settle)
    for name in ("ca.crt", "ca.key"):
        shutil.copy2(fresh / name, chain.cert_dir / name)
    chain.objects = [o for o in chain.objects if not o["kind"].endswith("Configuration")] + \
        _with_bundle(chain, new)
    chain.cp.apply(chain.configurations())
    time.sleep(settle)
    return {"catchUpSeconds": round(seconds, 2)}


def fault_rolling_restart(chain: Chain, ledger: Ledger) -> dict[str, float]:
    """SIGTERM one replica, start its successor; then the other."""
    ready = []
    for slot in range(chain.count):
        old = chain.replicas[slot]
        assert old is not None and old.popen is not None
        old.popen.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        chain.start_replica(slot)
        ready.append(time.monotonic() - t0)
        old.popen.wait(60)
    return {"catchUpSeconds": round(max(ready), 2)}


def fault_kill_9(chain: Chain, ledger: Ledger) -> dict[str, float]:
    """SIGKILL to one replica's processes (its container killed), then its successor."""
    old = chain.replicas[0]
    assert old is not None and old.pid is not None and old.popen is not None
    os.killpg(old.pid, signal.SIGKILL)  # its own session: master and workers
    old.popen.wait(30)
    t0 = time.monotonic()
    chain.start_replica(0)
    return {"catchUpSeconds": round(time.monotonic() - t0, 2)}


def probe_nodes(api: Api, namespace: str) -> int | None:
    """How many nodes the webhook's state holds, as the placement annotation of a dry-run
    pod says (None: no annotation)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "probe", "annotations": DRY_RUN},
           "spec": {"containers": [{"name": "c", "image": "registry.test/web:1"}]}}
    status, body = api.call("POST", f"/api/v1/namespaces/{namespace}/pods?dryRun=All", pod)
    if status != 201 or not isinstance(body, dict):
        return None
    note = (body["metadata"].get("annotations") or {}).get(PLACEMENT)
    return int(json.loads(note)["nodes"]) if note else None


def node_seen_after(chain: Chain, api: Api, probe_ns: str, timeout: float = 120) -> float:
    """Add a node; seconds until 6 probes in a row (spread over the replicas) count it."""
    name = f"late-{time.monotonic_ns() % 10**9}"
    node = node_object(name, ZONES[0])
    status, body = api.call("POST", "/api/v1/nodes", node)
    if status != 201:
        raise ControlPlaneError(f"POST node {name}: {status} {body}")
    t0 = time.monotonic()
    want = len(api.call("GET", "/api/v1/nodes")[1]["items"])
    chain.cp.wait_for(f"node {name} in the webhook's state", lambda: all(
        probe_nodes(api, probe_ns) == want for _ in range(6)), timeout=timeout, every=0.1)
    seconds = time.monotonic() - t0
    api.call("DELETE", f"/api/v1/nodes/{name}")
    return seconds


def fault_apiserver_restart(chain: Chain, ledger: Ledger) -> dict[str, float]:
    """kube-apiserver stopped (SIGTERM) and started again; then a node added, and the time
    until the webhook's state holds it."""
    ledger.before_restart()
    t0 = time.monotonic()
    chain.cp.restart("kube-apiserver")
    down = time.monotonic() - t0
    seen = node_seen_after(chain, ledger.api, chain.probe_namespace)
    return {"restartSeconds": round(down, 2), "catchUpSeconds": round(seen, 2)}


def fault_etcd_compaction(chain: Chain, ledger: Ledger) -> dict[str, float]:
    """etcd compacted at its current revision under the webhook's watches; then a node
    added, and the time until the webhook's state holds it."""
    chain.cp.compact()
    return {"catchUpSeconds": round(node_seen_after(chain, ledger.api,
                                                    chain.probe_namespace), 2)}


FAULT_STEPS: dict[str, Callable[[Chain, Ledger], dict[str, float]]] = {
    "rolling-restart": fault_rolling_restart,
    "kill-9": fault_kill_9,
    "serving-cert": fault_serving_cert,
    "new-ca": fault_new_ca,
    "apiserver-restart": fault_apiserver_restart,
    "etcd-compaction": fault_etcd_compaction,
}


# ---------------------------------------------------------------------------------------------
# Phases


@dataclass
class Phase:
    """What one phase measured."""

    name: str
    webhooks: bool
    fault: str | None
    pods: int
    cycles: int = 0
    seconds: float = 0.0  # first pod seen to last Ready, first cycle
    stuck: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed_create: int = 0  # FailedCreate events naming a webhook
    failed_create_other: int = 0
    examples: list[str] = field(default_factory=list)
    other_examples: list[str] = field(default_factory=list)
    fault_figures: dict[str, float] = field(default_factory=dict)
    fault_error: str | None = None
    delta: Samples = field(default_factory=dict)
    cpu: list[float] = field(default_factory=list)
    peak_rss: list[int] = field(default_factory=list)
    load: float = 0.0

    @property
    def rate(self) -> float:
        return self.pods / self.seconds if self.seconds else 0.0

    def figures(self) -> dict[str, Any]:
        d = self.delta
        errors = rejections(d)
        per_thousand = 1000 / max(1, self.pods * self.cycles)
        return {
            "webhooks": self.webhooks, "fault": self.fault, "pods": self.pods,
            "cycles": self.cycles, "seconds": round(self.seconds, 2),
            "podsPerSecond": round(self.rate, 1),
            "admission": webhook_figures(d), "worstBucket": worst_bucket(d),
            "requestCodes": request_codes(d), "rejections": errors,
            "callingWebhookError": errors.get("calling_webhook_error", 0),
            "failOpen": int(total(d, "apiserver_admission_webhook_fail_open_count_total")),
            "failedCreate": self.failed_create,
            "failedCreateExamples": self.examples,
            "failedCreateOther": self.failed_create_other,
            "failedCreateOtherExamples": self.other_examples,
            "missingMutation": len(self.missing),
            "missingExamples": self.missing[:5], "stuck": self.stuck,
            "podCreate": pod_create_latency(d),
            # What every pod watcher received (scheduler, controllers, kwok, replicas, the
            # test's own watch): the annotations the webhook writes travel with each event.
            "podWatchEventsPer1000Pods": round(
                pod_watch(d, "apiserver_watch_events_total") * per_thousand),
            "podWatchMiBPer1000Pods": round(
                pod_watch(d, "apiserver_watch_events_sizes_sum") * per_thousand / 2**20, 1),
            "replicaCpuSecondsPer1000Pods": [round(c * per_thousand, 2) for c in self.cpu],
            "replicaPeakRssMiB": [round(r / 2**20, 1) for r in self.peak_rss],
            "faultFigures": self.fault_figures,
            "faultError": self.fault_error, "loadAverage": round(self.load, 2),
        }


class Runner:
    """Phases on one chain, each in a namespace of its own."""

    def __init__(self, cp: ControlPlane, chain: Chain, pods: int,
                 wait_seconds: float = 600) -> None:
        self.cp = cp
        self.chain = chain
        self.api = Api(cp)
        self.pods = pods
        self.wait_seconds = wait_seconds
        # Whether the Deployments' pods ask for the placement annotations (dry-run).
        self.placement = True
        self.n = 0
        self.results: list[Phase] = []
        chain.probe_namespace = cp.namespace("chain-probe")

    def scale(self, namespace: str, counts: list[int]) -> None:
        for i, count in enumerate(counts):
            status, body = self.api.call(
                "PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/d{i}",
                {"spec": {"replicas": count}}, "application/merge-patch+json")
            if status != 200:
                raise ControlPlaneError(f"scale d{i}: {status} {body}")

    def wait_pods(self, watch: PodWatch, want: int, what: str, stuck: list[str]) -> bool:
        deadline = time.monotonic() + self.wait_seconds
        while time.monotonic() < deadline:
            alive, ready = watch.live()
            if alive == want and ready == want:
                return True
            time.sleep(0.1)
        alive, ready = watch.live()
        stuck.append(f"{what}: {alive} pods, {ready} Ready after {self.wait_seconds:.0f} s")
        return False

    def failed_creates(self, namespace: str) -> tuple[int, int, list[str], list[str]]:
        """The ReplicaSets' FailedCreate events: (those whose message names a webhook, the
        others, a few messages of each). With kube-apiserver restarted, creations fail
        while it is down, whatever the webhook does."""
        status, body = self.api.call(
            "GET", f"/api/v1/namespaces/{namespace}/events?fieldSelector=reason%3DFailedCreate")
        if status != 200:
            raise ControlPlaneError(f"events: {status} {body}")
        ours, others, our_examples, examples = 0, 0, [], []
        for event in body["items"]:
            count = max(1, int(event.get("count") or 1))
            message = str(event.get("message", ""))
            if "webhook" in message:
                ours += count
                our_examples.append(message[:300])
            else:
                others += count
                examples.append(message[:200])
        return ours, others, our_examples[:3], examples[:3]

    def phase(self, name: str, *, webhooks: bool, fault: str | None = None) -> Phase:
        self.n += 1
        ns = self.cp.namespace(f"chain-{self.n}-{name}")
        self._create_deployments(ns)
        self.chain.enable(webhooks)
        self._wait_configured(webhooks)
        result = Phase(name, webhooks, fault, self.pods)
        ledger = Ledger(self.api)
        watch = PodWatch(self.api, ns, check=webhooks, placement=self.placement)
        usage = Usage(self.chain)
        done = threading.Event()

        def run_fault() -> None:
            assert fault is not None
            try:
                result.fault_figures = FAULT_STEPS[fault](self.chain, ledger)
            except Exception as exc:  # noqa: BLE001 - reported with the phase, not lost
                result.fault_error = f"{type(exc).__name__}: {exc}"
            finally:
                done.set()

        thread = threading.Thread(target=run_fault, daemon=True) if fault else None
        if thread is None:
            done.set()
        try:
            while True:
                self.scale(ns, shares(self.pods))
                if thread is not None and not thread.is_alive() and not done.is_set():
                    # Start the fault once the load is under way.
                    self.cp.wait_for("the first pods", lambda: watch.live()[0] > 0, 120)
                    thread.start()
                up = self.wait_pods(watch, self.pods, f"cycle {result.cycles + 1} up",
                                    result.stuck)
                if result.cycles == 0 and up:
                    with watch.lock:
                        seen = [r.seen for r in watch.pods.values()]
                        ready = [r.ready for r in watch.pods.values() if r.ready is not None]
                    result.seconds = max(ready) - min(seen)
                result.cycles += 1
                self.scale(ns, [0] * DEPLOYMENTS)
                self.wait_pods(watch, 0, f"cycle {result.cycles} down", result.stuck)
                if done.is_set() or result.stuck:
                    break
            done.wait(self.wait_seconds)
        finally:
            watch.stop()
            usage.stop()
        result.delta = ledger.delta()
        result.missing = sorted(r.problem for r in watch.pods.values() if r.problem)
        (result.failed_create, result.failed_create_other, result.examples,
         result.other_examples) = self.failed_creates(ns)
        result.cpu, result.peak_rss = usage.cpu, usage.peak
        result.load = os.getloadavg()[0]
        self.cp.kubectl("delete", "namespace", ns, "--wait=false")
        self.results.append(result)
        return result

    def _create_deployments(self, namespace: str) -> None:
        for i in range(DEPLOYMENTS):
            status, body = self.api.call(
                "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments",
                deployment(i, self.placement))
            if status != 201:
                raise ControlPlaneError(f"create d{i}: {status} {body}")

    def _wait_configured(self, on: bool) -> None:
        """Until dry-run probes are (on) or are not (off) annotated, 5 in a row."""
        ns = self.chain.probe_namespace
        self.cp.wait_for(f"the webhooks {'on' if on else 'off'}", lambda: all(
            (probe_nodes(self.api, ns) is not None) == on for _ in range(5)), timeout=60)


@contextlib.contextmanager
def installed(cp: ControlPlane, workdir: Path,
              server: list[str] | None = None) -> Iterator[Chain]:
    chain = Chain(cp, workdir, server=server)
    try:
        chain.install()
        yield chain
    finally:
        chain.stop()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
