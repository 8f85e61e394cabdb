"""topospread as users install it, judged by the real API server's authorizer."""

from __future__ import annotations

import json

import pytest

from tests.e2e.controlplane import ControlPlane
from tests.e2e.webhook import NAMESPACE, NOT_APPLIED, Webhook, rendered, to_url
from tests.install.test_helm import _tls_values, helm_template

SA = f"system:serviceaccount:{NAMESPACE}:{NAMESPACE}"
AUDIT_SA = f"system:serviceaccount:{NAMESPACE}:{NAMESPACE}-audit"


def can_i(cp: ControlPlane, who: str, verb: str, resource: str) -> bool:
    """`kubectl auth can-i`; "pods/eviction" is the pods resource's eviction subresource."""
    kind, _, sub = resource.partition("/")
    flags = [f"--subresource={sub}"] if sub else []
    out = cp.kubectl("auth", "can-i", verb, kind, *flags, f"--as={who}", "--all-namespaces")
    return out.stdout.strip() == "yes"


def test_the_webhook_syncs_with_its_own_token_and_is_never_forbidden(
    cp: ControlPlane, webhook: Webhook
) -> None:
    """The webhook lists and watches what it reads with its ServiceAccount's token: it
    became ready, and the API server refused it nothing."""
    assert webhook.process is not None and webhook.process.popen is not None
    assert webhook.process.popen.poll() is None
    log = webhook.process.log.read_text(errors="replace")
    assert "forbidden" not in log.lower(), webhook.process.tail(40)


READS = [
    ("list", "nodes"), ("watch", "pods"), ("list", "replicasets.apps"),
    ("list", "statefulsets.apps"), ("list", "poddisruptionbudgets.policy"),
    ("list", "persistentvolumeclaims"), ("list", "storageclasses.storage.k8s.io"),
    ("list", "csinodes.storage.k8s.io"), ("list", "priorityclasses.scheduling.k8s.io"),
    ("list", "namespaces"),
]
WRITES = [
    ("create", "pods"), ("patch", "pods"), ("delete", "pods"), ("create", "pods/eviction"),
    ("update", "nodes"), ("create", "policyreports.wgpolicyk8s.io"), ("get", "secrets"),
]


@pytest.mark.parametrize(("verb", "resource"), READS)
def test_the_webhook_may_read(cp: ControlPlane, webhook: Webhook, verb: str,
                              resource: str) -> None:
    assert can_i(cp, SA, verb, resource)


@pytest.mark.parametrize(("verb", "resource"), WRITES)
def test_the_webhook_may_write_nothing(cp: ControlPlane, webhook: Webhook, verb: str,
                                       resource: str) -> None:
    assert not can_i(cp, SA, verb, resource)


# (manifests flags, verb, resource, allowed) for the audit's ServiceAccount.
AUDIT_CASES = [
    ((), "list", "pods", True),
    ((), "patch", "pods", False),
    ((), "create", "pods/eviction", False),
    (("--deletion-costs",), "patch", "pods", True),
    (("--deletion-costs",), "create", "pods/eviction", False),
    (("--audit-rebalance",), "create", "pods/eviction", True),
    (("--audit-rebalance",), "patch", "pods", False),
]


@pytest.mark.parametrize(("flags", "verb", "resource", "allowed"), AUDIT_CASES,
                         ids=[f"{' '.join(c[0]) or 'audit'}:{c[1]}-{c[2]}" for c in AUDIT_CASES])
def test_the_audit_writes_only_what_its_option_turns_on(
    cp: ControlPlane, webhook: Webhook, flags: tuple[str, ...], verb: str, resource: str,
    allowed: bool,
) -> None:
    """The keeper's patch and the rebalancer's eviction exist only with their option."""
    objs = [o for o in rendered(webhook.cert_dir, "--audit", *flags)
            if o["kind"] in ("ClusterRole", "ClusterRoleBinding", "ServiceAccount")
            and o["metadata"]["name"].endswith("-audit")]
    assert objs, "the audit renders its own ServiceAccount and role"
    try:
        cp.apply(objs)
        # RBAC's authorizer follows roles through a watch: ask until it answers as the
        # role says (a role that grants the verb never answers "no", and the reverse).
        cp.wait_for(f"{AUDIT_SA} {verb} {resource}: {allowed}",
                    lambda: can_i(cp, AUDIT_SA, verb, resource) is allowed, timeout=15)
    finally:
        cp.kubectl("delete", "clusterrole,clusterrolebinding", f"{NAMESPACE}-audit",
                   "--ignore-not-found")


# Every install variant, rendered by `topospread manifests` and by the Helm chart.
VARIANTS = [(), ("--audit",), ("--audit-rebalance",), ("--deletion-costs",),
            ("--audit", "--audit-rebalance", "--deletion-costs")]


@pytest.mark.parametrize("flags", VARIANTS, ids=[" ".join(v) or "default" for v in VARIANTS])
def test_every_rendering_is_accepted_by_the_api_server(
    cp: ControlPlane, webhook: Webhook, flags: tuple[str, ...]
) -> None:
    """`kubectl apply --dry-run=server` of each rendering: the real API server validates
    every object (schemas, RBAC rules, webhook configurations) and accepts them all."""
    objs = rendered(webhook.cert_dir, *flags)
    out = cp.kubectl("apply", "--dry-run=server", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("(server dry run)") == len(objs)


def test_the_helm_chart_installs_and_admits_through_its_own_configurations(
    cp: ControlPlane, webhook: Webhook, ns: str
) -> None:
    """The chart rendered with the webhook's certificates, applied with kubectl (Service
    reference turned into the loopback URL): its ServiceAccount keeps read-only rights and
    its webhook configurations bring pods through /mutate."""
    chart = to_url(helm_template(_tls_values(webhook.cert_dir)), webhook.port)
    cp.apply([o for o in chart if o["kind"] not in NOT_APPLIED])
    for verb, resource in READS[:3]:
        assert can_i(cp, SA, verb, resource)
    for verb, resource in WRITES:
        assert not can_i(cp, SA, verb, resource)
    probe = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "probe", "annotations": {"topospread.io/dry-run": "true"}},
             "spec": {"containers": [{"name": "c", "image": "registry.test/c:1"}]}}
    status, body = cp.api("POST", f"/api/v1/namespaces/{ns}/pods", probe)
    assert status == 201, body
    assert "topospread.io/placement" in body["metadata"]["annotations"]
