"""topospread installed into the real API server as users install it.

`topospread certs` makes the certificates and `topospread manifests` the objects, applied with
kubectl. The one change, as envtest makes it: the webhook configurations' Service
reference becomes `url: https://127.0.0.1:PORT/...` (this machine has no cluster network),
and the webhook runs as a process here, authenticated with its ServiceAccount's token, so
the real authorizer judges what it may do. The Deployment that would run it in a cluster
is not applied: this process takes its place.
"""

from __future__ import annotations

import copy
import json
import ssl
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import (
    ControlPlane,
    ControlPlaneError,
    Process,
    free_port,
    https_ok,
    kubeconfig,
)

NAMESPACE = "topospread"
TOPOSPREAD = str(Path(sys.executable).with_name("topospread"))
# Kinds the process replaces: applying them would start fake copies of the webhook.
NOT_APPLIED = {"Deployment", "PodDisruptionBudget"}


def topospread(*args: str, input: str | None = None,
               check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(  # noqa: S603 - the project's own console script
        [TOPOSPREAD, *args], input=input, capture_output=True, text=True, check=False,
        timeout=300,
    )
    if check and out.returncode not in (0, 1):
        raise ControlPlaneError(f"topospread {' '.join(args)}: {out.stderr.strip()}")
    return out


def rendered(cert_dir: Path, *flags: str) -> list[dict[str, Any]]:
    """`topospread manifests --namespace topospread --cert-dir DIR [flags]` as objects."""
    out = topospread("manifests", "--namespace", NAMESPACE, "--cert-dir", str(cert_dir), *flags)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def to_url(objs: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    """The webhook configurations with their Service reference turned into a loopback URL."""
    out = []
    for obj in objs:
        obj = copy.deepcopy(obj)
        for hook in obj.get("webhooks", []):
            svc = hook["clientConfig"].pop("service")
            hook["clientConfig"]["url"] = f"https://127.0.0.1:{port}{svc.get('path', '/')}"
        out.append(obj)
    return out


@dataclass
class Webhook:
    """The webhook process and the objects it was installed with."""

    cp: ControlPlane
    dir: Path
    port: int = 0
    workers: int = 2
    objects: list[dict[str, Any]] = field(default_factory=list)
    process: Process | None = None

    @property
    def cert_dir(self) -> Path:
        return self.dir / "certs"

    def install(self, config: str | None = None) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        topospread("certs", "--service", NAMESPACE, "--namespace", NAMESPACE,
                   "--out", str(self.cert_dir))
        self.port = free_port()
        self.objects = to_url(rendered(self.cert_dir), self.port)
        self.cp.apply([o for o in self.objects
                       if o["kind"] not in NOT_APPLIED | {"ValidatingWebhookConfiguration",
                                                         "MutatingWebhookConfiguration"}])
        configmap = next(o for o in self.objects if o["kind"] == "ConfigMap")
        self.config = config if config is not None else configmap["data"]["config.yaml"]
        self.start()
        self.cp.apply(self.configurations())

    def configurations(self) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"].endswith("WebhookConfiguration")]

    def token_kubeconfig(self) -> Path:
        token = self.cp.kubectl("create", "token", NAMESPACE, "-n", NAMESPACE,
                                "--duration=24h", check=True).stdout.strip()
        path = self.dir / "serviceaccount.kubeconfig"
        path.write_text(json.dumps(kubeconfig(self.cp.server, self.cp.pki.ca, token=token,
                                              user=f"system:serviceaccount:{NAMESPACE}:"
                                                   f"{NAMESPACE}")))
        return path

    def start(self, timeout: float = 120) -> None:
        config = self.dir / "config.yaml"
        config.write_text(self.config)
        ctx = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        self.process = Process(
            "topospread",
            [TOPOSPREAD, "serve", "--kubeconfig", str(self.token_kubeconfig()),
             "--config", str(config), "--cert-dir", str(self.cert_dir),
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers)],
            self.cp.logs / "topospread.log",
            lambda: https_ok(f"https://127.0.0.1:{self.port}/readyz", ctx),
        )
        self.process.start(timeout)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def restart(self, config: str | None = None, workers: int | None = None) -> None:
        self.stop()
        if config is not None:
            self.config = config
        if workers is not None:
            self.workers = workers
        self.start()
