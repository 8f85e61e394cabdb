"""Admission through the real kube-apiserver: what a user sees on `kubectl apply`, and what
the pods the real ReplicaSet controller creates carry."""

from __future__ import annotations

import base64
import copy
import json
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.controlplane import ControlPlane
from tests.e2e.webhook import Webhook, topospread

APP = {"app": "web"}


def deployment(name: str, replicas: int, spread: list[dict[str, Any]] | None = None,
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.test/web:1",
                                            "resources": {"requests": {"cpu": "100m"}}}]}
    if spread is not None:
        spec["topologySpreadConstraints"] = spread
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": APP},
            "template": {"metadata": {"labels": APP, "annotations": annotations or {}},
                         "spec": spec},
        },
    }


def pod(name: str, spread: list[dict[str, Any]], labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels or APP, "annotations": annotations or {}},
        "spec": {"containers": [{"name": "c", "image": "registry.test/web:1"}],
                 "topologySpreadConstraints": spread},
    }


def zone(max_skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": APP},
            **extra}


def apply(cp: ControlPlane, ns: str, obj: dict[str, Any]) -> Any:
    return cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(obj))


def pods_of(cp: ControlPlane, ns: str) -> list[dict[str, Any]]:
    return list(cp.get("pods", "-n", ns)["items"])


# ---- refused with our message


def test_an_invalid_deployment_is_refused_with_the_words_of_topospread_check(
    cp: ControlPlane, webhook: Webhook, ns: str, tmp_path: Path
) -> None:
    """`kubectl apply` refuses it, and the API server's message is `topospread check`'s,
    word for word (kube-apiserver validates the template before validating webhooks run,
    so for a version that has the rule the API server itself answers first)."""
    bad = deployment("web", 2, [zone(max_skew=0, minDomains=0)])
    out = apply(cp, ns, bad)
    assert out.returncode != 0
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump({**bad, "metadata": {"name": "web", "namespace": ns}}))
    ours = topospread("check", "-o", "json", str(path))
    errors = json.loads(ours.stdout)[0]["errors"]
    assert errors, "topospread check refuses it too"
    expected = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    for e in errors:
        assert f"{e['field']}: {e['message']}" in out.stderr, (expected, out.stderr)


def test_the_webhook_refuses_what_only_it_knows_with_its_message(
    cp: ControlPlane, webhook: Webhook, ns: str
) -> None:
    """policy.denyUnschedulable: a Pod whose spread no node can satisfy (a DoNotSchedule
    constraint on a label no node carries) is refused by validate.topospread.io itself,
    through kubectl, with 403 Forbidden and the constraint named."""
    config = webhook.config
    webhook.restart(config + "\npolicy:\n  denyUnschedulable: true\n")
    try:
        out = apply(cp, ns, pod("nowhere", [
            {**zone(), "topologyKey": "example.com/rack-none-has"}]))
        assert out.returncode != 0
        assert ('admission webhook "validate.topospread.io" denied the request: pods '
                '"nowhere" is forbidden: unschedulable in the current cluster state '
                '(policy.denyUnschedulable): spec.topologySpreadConstraints[0]: no node fits'
                ) in out.stderr, out.stderr
    finally:
        webhook.restart(config)


def test_warnings_reach_kubectl_as_topospread_check_words_them(
    cp: ControlPlane, webhook: Webhook, ns: str, tmp_path: Path
) -> None:
    """A valid Deployment that counts both revisions together is admitted, and kubectl
    prints the webhook's warnings: those `topospread check` gives for the same object."""
    obj = deployment("web", 1, [zone()])
    out = apply(cp, ns, obj)
    assert out.returncode == 0, out.stderr
    path = tmp_path / "web.yaml"
    path.write_text(yaml.safe_dump({**obj, "metadata": {"name": "web", "namespace": ns}}))
    warnings = json.loads(topospread("check", "-o", "json", str(path)).stdout)[0]["warnings"]
    assert any("pod-template-hash" in w["message"] for w in warnings), warnings
    printed = [line.removeprefix("Warning: ") for line in out.stderr.splitlines()
               if line.startswith("Warning: ")]
    assert printed == [f"{w['field']}: {w['message']}" if w.get("field") else w["message"]
                       for w in warnings]


# ---- the pods the real controllers create


def test_replicaset_pods_carry_the_injected_defaults_and_the_dry_run_annotation(
    cp: ControlPlane, webhook: Webhook, ns: str
) -> None:
    """A Deployment without constraints: the ReplicaSet controller's pods come back with
    kube-scheduler's system defaults written in, selected by the ReplicaSet's selector,
    and the dry-run placement annotations."""
    out = apply(cp, ns, deployment("web", 3, annotations={"topospread.io/dry-run": "true"}))
    assert out.returncode == 0, out.stderr
    got = cp.wait_for("3 pods", lambda: len(pods_of(cp, ns)) == 3 and pods_of(cp, ns))
    for p in got:
        # Not mutated at all (no annotations either) would point at the webhook call;
        # annotated but without constraints, at the defaults (see the webhook's log).
        assert "topologySpreadConstraints" in p["spec"], p["metadata"].get("annotations")
        spread = p["spec"]["topologySpreadConstraints"]
        assert [(c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) for c in spread] == [
            ("kubernetes.io/hostname", 3, "ScheduleAnyway"),
            ("topology.kubernetes.io/zone", 5, "ScheduleAnyway"),
        ]
        assert all(c["labelSelector"]["matchLabels"].items() >= APP.items() for c in spread)
        notes = p["metadata"]["annotations"]
        assert "topospread.io/selected-node" in notes
        placement = json.loads(notes["topospread.io/placement"])
        assert placement["feasible"] >= 1 and notes["topospread.io/selected-node"]


# ---- matchLabelKeys: merged once, whoever merges


MERGE_MODES = ["auto", "webhook", "apiserver"]


@pytest.mark.parametrize("mode", MERGE_MODES)
def test_match_label_keys_are_merged_exactly_once(
    cp: ControlPlane, webhook: Webhook, ns: str, mode: str
) -> None:
    """The API server merges matchLabelKeys at creation (v1.34+); with each of our merge
    modes the stored pod's selector holds the key's expression once."""
    config = webhook.config
    webhook.restart(config.replace("matchLabelKeysMerge: auto", f"matchLabelKeysMerge: {mode}"))
    try:
        spread = [zone(matchLabelKeys=["version"])]
        created = pod("merged", spread, labels={**APP, "version": "v1"})
        status, body = cp.api("POST", f"/api/v1/namespaces/{ns}/pods", created)
        assert status == 201, body
        sel = body["spec"]["topologySpreadConstraints"][0]["labelSelector"]
        version = [e for e in sel.get("matchExpressions", []) if e["key"] == "version"]
        assert version == [{"key": "version", "operator": "In", "values": ["v1"]}], sel
    finally:
        webhook.restart(config)


# ---- failurePolicy


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers: a hung webhook."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(sock.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield int(sock.getsockname()[1])
    stop.set()
    t.join()
    for c in conns:
        c.close()
    sock.close()


def _configured(webhook: Webhook, policy: str, port: int | None, timeout: int = 2
                ) -> list[dict[str, Any]]:
    out = []
    for obj in copy.deepcopy(webhook.configurations()):
        for hook in obj["webhooks"]:
            hook["failurePolicy"] = policy
            hook["timeoutSeconds"] = timeout
            if port is not None:
                url = hook["clientConfig"]["url"]
                hook["clientConfig"]["url"] = url.replace(f":{webhook.port}/", f":{port}/")
        out.append(obj)
    return out


@pytest.mark.parametrize("state", ["down", "slow"])
@pytest.mark.parametrize("policy", ["Ignore", "Fail"])
def test_failure_policy_while_the_webhook_is_down_or_slow(
    cp: ControlPlane, webhook: Webhook, ns: str, silent_port: int, policy: str, state: str
) -> None:
    """Ignore admits the pod without our mutations; Fail refuses it, naming the webhook."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = int(s.getsockname()[1])
    port = silent_port if state == "slow" else closed
    cp.apply(_configured(webhook, policy, port))
    try:
        status, body = cp.api("POST", f"/api/v1/namespaces/{ns}/pods",
                              pod("p", [zone()], annotations={"topospread.io/dry-run": "true"}))
        if policy == "Ignore":
            assert status == 201, body
            assert "topospread.io/placement" not in body["metadata"].get("annotations", {})
        else:
            assert status >= 400, body
            assert "failed calling webhook" in body["message"], body
            assert "topospread.io" in body["message"]
    finally:
        cp.apply(webhook.configurations())


# ---- certificate rotation


def _with_ca(objs: list[dict[str, Any]], bundle: bytes, policy: str) -> list[dict[str, Any]]:
    out = copy.deepcopy(objs)
    for obj in out:
        for hook in obj["webhooks"]:
            hook["clientConfig"]["caBundle"] = base64.b64encode(bundle).decode()
            hook["failurePolicy"] = policy
    return out


def _serves(port: int, ca: Path) -> bool:
    ctx = ssl.create_default_context(cafile=str(ca))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as raw, \
                ctx.wrap_socket(raw, server_hostname="topospread.topospread.svc"):
            return True
    except (ssl.SSLError, OSError):
        return False


def test_replacing_the_ca_refuses_no_request(
    cp: ControlPlane, webhook: Webhook, ns: str, tmp_path: Path
) -> None:
    """The documented CA replacement (docs/install.md): both CAs in the caBundle, the new
    certificate swapped into the served directory, then the old CA dropped. With
    failurePolicy Fail, every pod created meanwhile is admitted through the webhook (it
    carries the dry-run annotation /mutate writes)."""
    old_ca = (webhook.cert_dir / "ca.crt").read_bytes()
    new = tmp_path / "new"
    topospread("certs", "--service", "topospread", "--namespace", "topospread",
               "--out", str(new))
    new_ca = (new / "ca.crt").read_bytes()
    assert new_ca != old_ca
    cp.apply(_with_ca(webhook.configurations(), old_ca, "Fail"))
    results: list[tuple[int, bool]] = []
    stop = threading.Event()

    def stream() -> None:
        i = 0
        while not stop.is_set():
            status, body = cp.api("POST", f"/api/v1/namespaces/{ns}/pods",
                                  pod(f"r{i}", [zone()], annotations={
                                      "topospread.io/dry-run": "true"}))
            notes = (body.get("metadata") or {}).get("annotations") or {} if status == 201 else {}
            results.append((status, "topospread.io/placement" in notes))
            i += 1

    t = threading.Thread(target=stream, daemon=True)
    t.start()
    try:
        time.sleep(2)
        cp.apply(_with_ca(webhook.configurations(), old_ca + new_ca, "Fail"))
        time.sleep(3)
        for name in ("tls.key", "tls.crt"):
            shutil.copyfile(new / name, webhook.cert_dir / name)
        cp.wait_for("the new certificate served",
                    lambda: _serves(webhook.port, new / "ca.crt"), timeout=30)
        time.sleep(3)
        cp.apply(_with_ca(webhook.configurations(), new_ca, "Fail"))
        time.sleep(3)
    finally:
        stop.set()
        t.join(30)
        shutil.copyfile(new / "ca.crt", webhook.cert_dir / "ca.crt")
        webhook.objects = _with_ca(webhook.configurations(), new_ca, "Ignore") + [
            o for o in webhook.objects if not o["kind"].endswith("WebhookConfiguration")]
        cp.apply(webhook.configurations())
    assert len(results) > 10
    refused = [r for r in results if r != (201, True)]
    assert not refused, f"{len(refused)} of {len(results)} requests refused or not mutated"
