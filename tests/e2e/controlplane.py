"""The real control plane as processes: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok's fake kubelets, built by `make control-plane` into build/.

One ControlPlane owns its processes: each has its flags in one place, a readiness probe,
a log file, and is stopped by its own PID. Tests get a kubeconfig and namespaces, never the
processes. `python -m tests.e2e.controlplane` (`make cluster`) runs one for a person.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("TOPOSPREAD_CONTROL_PLANE", ROOT / "build"))
DEFAULT_MINOR = "1.37"

# The label kwok manages nodes by: a node that loses it stops heartbeating.
KWOK_LABEL = "topospread.test/kwok"
# Off every real subnet: pod and node addresses are data here, never traffic.
POD_CIDR = "198.18.0.0/16"
NODE_IP = "198.19.0.1"

# kwok's own stages, from its module: nodes initialised and heartbeating with a lease,
# pods Running and Ready once bound, deleted pods finalised.
KWOK_STAGES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)


class ControlPlaneError(RuntimeError):
    """A process did not start or become ready; the message names its log."""


def binaries(minor: str = DEFAULT_MINOR) -> dict[str, Path]:
    """The paths `make control-plane K8S=minor` builds, checked to exist."""
    found = {
        "etcd": BUILD / "etcd" / "etcd",
        "kwok": BUILD / "kwok" / "kwok",
        **{
            name: BUILD / f"kubernetes-{minor}" / name
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
        },
    }
    missing = [str(p) for p in found.values() if not p.is_file()]
    if missing:
        raise ControlPlaneError(
            f"missing {', '.join(missing)}: run `make control-plane K8S={minor}` first"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kwok_module_dir() -> Path:
    """sigs.k8s.io/kwok's source in the module cache, at the version its wrapper module pins."""
    wrapper = ROOT / "tests" / "e2e" / "go" / "kwok"
    out = subprocess.run(
        ["go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok"],
        cwd=wrapper, capture_output=True, text=True, check=False,
    )
    if out.returncode == 0 and out.stdout.strip():
        return Path(out.stdout.strip())
    mod = next(
        (line.split()[1] for line in (wrapper / "go.mod").read_text().splitlines()
         if line.strip().startswith("sigs.k8s.io/kwok ")),
        None,
    )
    gomodcache = Path(os.environ.get("GOMODCACHE", Path.home() / "go" / "pkg" / "mod"))
    candidate = gomodcache / "sigs.k8s.io" / f"kwok@{mod}"
    if mod and candidate.is_dir():
        return candidate
    raise ControlPlaneError(f"kwok's module is not in the module cache: {out.stderr.strip()}")


# ---------------------------------------------------------------------------------------------
# PKI


@dataclass(frozen=True)
class Pki:
    """One CA and what the processes need from it, written into `dir`."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.crt"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"


def _pem_key(key: Any) -> bytes:
    return bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_pki(dir: Path, now: dt.datetime | None = None) -> Pki:
    """CA, API server serving certificate, admin client certificate and service-account keys."""
    now = now or dt.datetime.now(dt.UTC)
    dir.mkdir(parents=True, exist_ok=True)
    pki = Pki(dir)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "topospread-e2e-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.key("ca").write_bytes(_pem_key(ca_key))

    def leaf(
        name: str, cn: str, orgs: Sequence[str], *, server: bool,
    ) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
            + [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        )
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.DNSName("kubernetes.default.svc"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
        cert = builder.sign(ca_key, hashes.SHA256())
        pki.cert(name).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pki.key(name).write_bytes(_pem_key(key))

    leaf("apiserver", "kube-apiserver", (), server=True)
    leaf("admin", "topospread-e2e-admin", ("system:masters",), server=False)
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pki.key("sa").write_bytes(_pem_key(sa))
    pki.dir.joinpath("sa.pub").write_bytes(
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki


def kubeconfig(server: str, ca: Path, *, cert: Path | None = None, key: Path | None = None,
               token: str | None = None, user: str = "admin") -> dict[str, Any]:
    """A kubeconfig with one cluster, one user and one current context."""
    creds: dict[str, str] = {}
    if cert is not None and key is not None:
        creds = {"client-certificate": str(cert), "client-key": str(key)}
    if token is not None:
        creds = {"token": token}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca.read_bytes()).decode(),
        }}],
        "users": [{"name": user, "user": creds}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
        "current-context": "e2e",
    }


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass
class Process:
    """One process the control plane started: its flags in one place, its log, its PID."""

    name: str
    argv: list[str]
    log: Path
    ready: Callable[[], bool]
    popen: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float) -> None:
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(  # noqa: S603 - our own binaries, our own flags
                self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise ControlPlaneError(
                    f"{self.name} exited with {self.popen.returncode}; see {self.log}:\n"
                    + self.tail()
                )
            with contextlib.suppress(Exception):
                if self.ready():
                    return
            time.sleep(0.2)
        raise ControlPlaneError(f"{self.name} not ready after {timeout:.0f} s; see {self.log}:\n"
                                + self.tail())

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM to this process's own PID, SIGKILL after `timeout`."""
        p = self.popen
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None


def https_ok(url: str, ctx: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class ControlPlane:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback."""

    workdir: Path
    minor: str = DEFAULT_MINOR
    scheduler_config: dict[str, Any] | None = None
    # Taint-based eviction and node monitoring shortened so outage tests take seconds.
    unreachable_toleration_seconds: int = 10
    node_grace_seconds: int = 12
    # kube-scheduler's log level: at 10 it logs every plugin's score for every node.
    scheduler_verbosity: int = 2
    extra_apiserver_flags: list[str] = field(default_factory=list)
    extra_controller_manager_flags: list[str] = field(default_factory=list)
    # Which processes to run, in start order: a test of the API alone needs no more.
    components: tuple[str, ...] = ("etcd", "kube-apiserver", "kube-controller-manager",
                                   "kube-scheduler", "kwok")
    processes: list[Process] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def logs(self) -> Path:
        return self.workdir / "logs"

    def bin(self, name: str) -> str:
        return str(binaries(self.minor)[name])

    def _ctx(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca))
        ctx.load_cert_chain(str(self.pki.cert("admin")), str(self.pki.key("admin")))
        return ctx

    def start(self, timeout: float = 120) -> None:
        bins = binaries(self.minor)
        self.logs.mkdir(parents=True, exist_ok=True)
        self.pki = make_pki(self.workdir / "pki")
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler"):
            self.ports[name] = free_port()
        self.admin_kubeconfig.write_text(json.dumps(kubeconfig(
            self.server, self.pki.ca, cert=self.pki.cert("admin"), key=self.pki.key("admin"),
        )))
        starters = {
            "etcd": self._start_etcd, "kube-apiserver": self._start_apiserver,
            "kube-controller-manager": self._start_controller_manager,
            "kube-scheduler": self._start_scheduler, "kwok": self._start_kwok,
        }
        try:
            for name in self.components:
                starters[name](bins, timeout)
        except BaseException:
            self.stop()
            raise

    def _add(self, name: str, argv: list[str], ready: Callable[[], bool], timeout: float) -> None:
        proc = Process(name, argv, self.logs / f"{name}.log", ready)
        self.processes.append(proc)
        proc.start(timeout)

    def _start_etcd(self, bins: dict[str, Path], timeout: float) -> None:
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        self._add("etcd", [
            str(bins["etcd"]),
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync", "--quota-backend-bytes=4294967296",
            "--log-level=warn",
        ], lambda: _http_ok(f"{client}/health"), timeout)

    def _start_apiserver(self, bins: dict[str, Path], timeout: float) -> None:
        p = self.pki
        self._add("kube-apiserver", [
            str(bins["kube-apiserver"]),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports['apiserver']}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={p.cert('apiserver')}",
            f"--tls-private-key-file={p.key('apiserver')}",
            f"--client-ca-file={p.ca}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={p.dir / 'sa.pub'}",
            f"--service-account-signing-key-file={p.key('sa')}",
            "--authorization-mode=Node,RBAC",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            f"--default-not-ready-toleration-seconds={self.unreachable_toleration_seconds}",
            f"--default-unreachable-toleration-seconds={self.unreachable_toleration_seconds}",
            *self.extra_apiserver_flags,
        ], lambda: https_ok(f"{self.server}/readyz", self._ctx()), timeout)

    def _start_controller_manager(self, bins: dict[str, Path], timeout: float) -> None:
        port = self.ports["controller-manager"]
        self._add("kube-controller-manager", [
            str(bins["kube-controller-manager"]),
            f"--kubeconfig={self.admin_kubeconfig}",
            f"--authentication-kubeconfig={self.admin_kubeconfig}",
            f"--authorization-kubeconfig={self.admin_kubeconfig}",
            "--controllers=*", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'kcm-certs'}",
            f"--root-ca-file={self.pki.ca}",
            f"--service-account-private-key-file={self.pki.key('sa')}",
            "--use-service-account-credentials=true",
            "--node-monitor-period=1s",
            f"--node-monitor-grace-period={self.node_grace_seconds}s",
            "--allocate-node-cidrs=false",
            *self.extra_controller_manager_flags,
        ], lambda: https_ok(f"https://127.0.0.1:{port}/healthz", _insecure()), timeout)

    def _start_scheduler(self, bins: dict[str, Path], timeout: float) -> None:
        port = self.ports["scheduler"]
        config = self.scheduler_config or {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,
        }
        config = {**config,
                  "clientConnection": {**config.get("clientConnection", {}),
                                       "kubeconfig": str(self.admin_kubeconfig)},
                  "leaderElection": {"leaderElect": False}}
        path = self.workdir / "scheduler.yaml"
        path.write_text(yaml.safe_dump(config))
        self._add("kube-scheduler", [
            str(bins["kube-scheduler"]),
            f"--config={path}",
            f"--authentication-kubeconfig={self.admin_kubeconfig}",
            f"--authorization-kubeconfig={self.admin_kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'scheduler-certs'}",
            f"-v={self.scheduler_verbosity}",
        ], lambda: https_ok(f"https://127.0.0.1:{port}/healthz", _insecure()), timeout)

    def _start_kwok(self, bins: dict[str, Path], timeout: float) -> None:
        stages = kwok_module_dir() / "kustomize" / "stage"
        config = self.workdir / "kwok.yaml"
        port = self.ports["kwok"] = free_port()
        # A KwokConfiguration of our own gets none of kwok's defaults: every option that
        # must not be zero is set here (the defaults of its types, leases shortened).
        docs = [
            {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
             "options": {"enableCNI": False, "nodeLeaseDurationSeconds": 10,
                         "nodeLeaseParallelism": 4, "podPlayStageParallelism": 4,
                         "nodePlayStageParallelism": 4, "podsOnNodeSyncParallelism": 1,
                         "enablePodsOnNodeSyncListPager": True,
                         "enablePodsOnNodeSyncStreamWatch": False}},
        ]
        text = "\n---\n".join(yaml.safe_dump(d) for d in docs)
        for rel in KWOK_STAGES:
            text += "\n---\n" + (stages / rel).read_text()
        config.write_text(text)
        self._add("kwok", [
            str(bins["kwok"]),
            f"--kubeconfig={self.admin_kubeconfig}",
            f"--config={config}",
            f"--manage-nodes-with-label-selector={KWOK_LABEL}",
            f"--cidr={POD_CIDR}", f"--node-ip={NODE_IP}",
            "--node-lease-duration-seconds=10",
            f"--server-address=127.0.0.1:{port}",
        ], lambda: _http_ok(f"http://127.0.0.1:{port}/healthz"), timeout)

    def stop(self) -> None:
        """Stop every process, newest first, each by its own PID."""
        for proc in reversed(self.processes):
            proc.stop()
        self.processes.clear()

    def process(self, name: str) -> Process:
        return next(p for p in self.processes if p.name == name)

    def restart(self, name: str, timeout: float = 120) -> None:
        """Stop one process (SIGTERM, as a restart does) and start it again with the same
        flags, waiting until it is ready; its log goes on in the same file."""
        proc = self.process(name)
        proc.stop()
        proc.start(timeout)

    def ssl_context(self) -> ssl.SSLContext:
        """A client context as the admin: the cluster's CA and the admin's certificate."""
        return self._ctx()

    # ---- the API, as users reach it

    def etcd(self, method: str, body: dict[str, Any]) -> Any:
        """etcd's v3 JSON gateway: POST /v3/<method> with `body`."""
        req = urllib.request.Request(  # noqa: S310 - loopback etcd
            f"http://127.0.0.1:{self.ports['etcd']}/v3/{method}",
            data=json.dumps(body).encode(), method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310
            return json.loads(resp.read())

    def compact(self) -> int:
        """Compact etcd at its current revision; every older resourceVersion is gone."""
        rev = int(self.etcd("kv/range", {"key": base64.b64encode(b"\0").decode()})
                  ["header"]["revision"])
        self.etcd("kv/compaction", {"revision": str(rev), "physical": True})
        return rev

    def kubectl(self, *args: str, input: str | None = None, kubeconfig: Path | None = None,
                check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(  # noqa: S603
            [self.bin("kubectl"), f"--kubeconfig={kubeconfig or self.admin_kubeconfig}", *args],
            input=input, capture_output=True, text=True, timeout=timeout, check=False,
        )
        if check and out.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
        return out

    def apply(self, objs: Sequence[dict[str, Any]] | dict[str, Any], **kw: Any) -> str:
        items = [objs] if isinstance(objs, dict) else list(objs)
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
        return self.kubectl("apply", "-f", "-", input=doc, check=True, **kw).stdout

    def api(self, method: str, path: str, body: Any = None,
            timeout: float = 30) -> tuple[int, Any]:
        """One request to the API server as the admin: (HTTP status, decoded JSON body)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(  # noqa: S310 - the loopback API server
            self.server + path, data=data, method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        if not hasattr(self, "_api_ctx"):
            self._api_ctx = self._ctx()
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._api_ctx) as resp:  # noqa: S310
                return int(resp.status), json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return int(err.code), json.loads(err.read() or b"null")

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json", check=True).stdout)

    def wait_for(self, what: str, cond: Callable[[], Any], timeout: float = 60,
                 every: float = 0.25) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = cond()
            if last:
                return last
            time.sleep(every)
        raise ControlPlaneError(f"timed out after {timeout:.0f} s waiting for {what}")

    def add_nodes(self, nodes: Sequence[dict[str, Any]], timeout: float = 60) -> None:
        """Create Nodes kwok manages, and wait for them Ready and without the not-ready taint."""
        for node in nodes:
            node.setdefault("metadata", {}).setdefault("labels", {})[KWOK_LABEL] = "true"
            node["metadata"].setdefault("annotations", {})["kwok.x-k8s.io/node"] = "fake"
        self.apply(list(nodes))
        names = {n["metadata"]["name"] for n in nodes}

        def ready() -> bool:
            items = self.get("nodes")["items"]
            ok = {
                n["metadata"]["name"] for n in items
                if any(c["type"] == "Ready" and c["status"] == "True"
                       for c in n.get("status", {}).get("conditions", []))
                and not any(t["key"].startswith("node.kubernetes.io/not-ready")
                            for t in n.get("spec", {}).get("taints", []) or [])
            }
            return names <= ok

        self.wait_for(f"nodes {sorted(names)} Ready", ready, timeout)

    @contextlib.contextmanager
    def world(self, world: str, prefix: str, zones: Sequence[str],
              per_zone: int = 2) -> Iterator[list[str]]:
        """Nodes of a test's own, `per_zone` in each zone, labelled world=WORLD for its
        workloads to select (PREFIX-<zone's last character>-<i>); deleted on exit."""
        made = [node_object(f"{prefix}-{z[-1]}-{i}", z, labels={"world": world})
                for z in zones for i in range(per_zone)]
        self.add_nodes(made)
        try:
            yield [n["metadata"]["name"] for n in made]
        finally:
            self.kubectl("delete", "nodes", "-l", f"world={world}", "--wait=false")

    def namespace(self, name: str) -> str:
        """Create a namespace and wait for its default ServiceAccount (made here when no
        controller manager runs to make it)."""
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if "kube-controller-manager" not in self.components:
            self.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "default", "namespace": name}})
        self.wait_for(
            f"ServiceAccount {name}/default",
            lambda: self.kubectl("get", "sa", "default", "-n", name).returncode == 0,
        )
        return name


def _insecure() -> ssl.SSLContext:
    # The controller manager's and scheduler's self-signed serving certificates: only
    # their /healthz is read, on loopback.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


@contextlib.contextmanager
def running(minor: str = DEFAULT_MINOR, workdir: Path | None = None,
            **kw: Any) -> Iterator[ControlPlane]:
    """A started control plane, stopped on exit; its workdir kept when `workdir` is given."""
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="topospread-e2e-")
        workdir = Path(tmp)
    cp = ControlPlane(workdir, minor, **kw)
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] = ()) -> int:
    """`make cluster`: a control plane with a few nodes until Ctrl-C."""
    import argparse

    ap = argparse.ArgumentParser(prog="make cluster", description=main.__doc__)
    ap.add_argument("--k8s", default=os.environ.get("K8S", DEFAULT_MINOR))
    ap.add_argument("--workdir", default=str(ROOT / "build" / "cluster"))
    ap.add_argument("--zones", type=int, default=3)
    ap.add_argument("--nodes-per-zone", type=int, default=2)
    args = ap.parse_args(list(argv))
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    with running(args.k8s, workdir) as cp:
        cp.add_nodes([
            node_object(f"node-{z}-{i}", f"zone-{z}")
            for z in "abcdefgh"[: args.zones] for i in range(args.nodes_per_zone)
        ])
        print(f"control plane {args.k8s} up; logs in {cp.logs}\n"
              f"  export KUBECONFIG={cp.admin_kubeconfig}\n  Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
    return 0


def node_object(name: str, zone: str | None, *, cpu: str = "4", memory: str = "16Gi",
                pods: str = "110", labels: dict[str, str] | None = None,
                taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A Node as kwok will run it: hostname and zone labels, allocatable as given."""
    meta_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                   "kubernetes.io/arch": "amd64", "type": "kwok"}
    if zone is not None:
        meta_labels["topology.kubernetes.io/zone"] = zone
    meta_labels.update(labels or {})
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": meta_labels},
        "spec": {"taints": taints or []},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main(sys.argv[1:]))
