"""topospread as users install it, judged by the real API server's authorizer."""

from __future__ import annotations

import pytest

from tests.e2e.controlplane import ControlPlane
from tests.e2e.webhook import NAMESPACE, Webhook, rendered

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
