"""The periodic audit's install: one Deployment of one replica running `audit --watch`,
its own ServiceAccount and ClusterRole (list on exactly what an audit lists; the
PolicyReport verbs exactly when PolicyReports are on), the same in render(), the
kustomize overlays audit/ and audit-policyreports/ (built by kustomize) and the Helm
chart (rendered by Helm), and nothing of it by default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests.install.test_helm import CHART, _tls_values, _without_labels, helm_template
from tests.install.test_kustomize import KUSTOMIZE, kustomize_build
from tests.install.test_manifests import K8S_VERSIONS, RawObj, by_kind, validate_schema
from webhook.cli.main import build_parser
from webhook.cluster.lister import AUDIT_RESOURCES
from webhook.install import manifests

AUDIT = manifests.AUDIT_NAME
REPORT_VERBS = ["create", "delete", "get", "list", "update"]


def named(objs: list[RawObj], kind: str, name: str = AUDIT) -> RawObj:
    found = [o for o in by_kind(objs, kind) if o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)}"
    return found[0]


def audit_only(objs: list[RawObj]) -> list[RawObj]:
    return [o for o in objs if o["metadata"]["name"] == AUDIT]


def grants(role: RawObj) -> dict[tuple[str, str], list[str]]:
    """(API group, resource) -> sorted verbs the role grants."""
    out: dict[tuple[str, str], list[str]] = {}
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out[(group, resource)] = sorted({*out.get((group, resource), []), *rule["verbs"]})
    return out


def listed() -> dict[tuple[str, str], list[str]]:
    """What `audit --watch` lists, from lister.AUDIT_RESOURCES' paths: list only."""
    out = {}
    for r in AUDIT_RESOURCES:
        parts = r.path.strip("/").split("/")
        group = "" if parts[0] == "api" else parts[1]
        out[(group, parts[-1])] = ["list"]
    return out


def expected_grants(policy_reports: bool) -> dict[tuple[str, str], list[str]]:
    want = listed()
    if policy_reports:
        want[("wgpolicyk8s.io", "policyreports")] = REPORT_VERBS
    return want


# ---- render() ---------------------------------------------------------------------------------


def test_nothing_of_the_audit_is_installed_by_default() -> None:
    """The default install (and so deploy/kustomize/base) has no audit object."""
    assert audit_only(manifests.render()) == []


@pytest.mark.parametrize("policy_reports", [False, True])
def test_audit_role_lists_exactly_what_an_audit_reads(policy_reports: bool) -> None:
    """list on every AUDIT_RESOURCES kind, nothing else; the PolicyReport verbs (get,
    list, create, update, delete) exactly when PolicyReports are on."""
    objs = manifests.render(manifests.Install(audit=True, audit_policy_reports=policy_reports))
    assert grants(named(objs, "ClusterRole")) == expected_grants(policy_reports)
    # The webhook's own role gains nothing.
    assert grants(named(objs, "ClusterRole", "topospread")) == grants(
        named(manifests.render(), "ClusterRole", "topospread")
    )


def test_audit_deployment_runs_one_watch_under_its_own_account() -> None:
    """One replica, Recreate, `audit --watch` with the Install's settings as flags,
    /healthz on the metrics port, the webhook's config; selected by a label the
    webhook's Service, PDB and Deployment do not select."""
    opt = manifests.Install(
        audit=True, audit_policy_reports=True, audit_include_soft=True, audit_interval_seconds=60
    )
    objs = manifests.render(opt)
    deploy = named(objs, "Deployment")
    spec = deploy["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == AUDIT
    (container,) = pod["containers"]
    assert container["command"] == [
        "topospread",
        "audit",
        "--watch",
        "--in-cluster",
        "--config",
        manifests.CONFIG_PATH,
        "--metrics-bind",
        "0.0.0.0:9090",
        "--interval-seconds",
        "60",
        "--include-soft",
        "--policy-reports",
    ]
    build_parser().parse_args(container["command"][1:])  # the CLI takes these flags
    assert container["livenessProbe"]["httpGet"] == {
        "path": "/healthz",
        "port": "metrics",
        "scheme": "HTTP",
    }
    assert pod["volumes"] == [{"name": "config", "configMap": {"name": "topospread-config"}}]
    labels = spec["template"]["metadata"]["labels"]
    webhook_selector = named(objs, "Service", "topospread")["spec"]["selector"]
    assert not all(labels.get(k) == v for k, v in webhook_selector.items())
    assert named(objs, "Service")["spec"]["selector"] == spec["selector"]["matchLabels"]
    binding = named(objs, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": AUDIT, "namespace": "topospread"}
    ]
    assert binding["roleRef"]["name"] == AUDIT


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_audit_objects_are_schema_valid(version: str) -> None:
    for obj in audit_only(
        manifests.render(manifests.Install(audit=True, audit_policy_reports=True))
    ):
        validate_schema(obj, version)


# ---- kustomize --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overlay", "policy_reports"), [("audit", False), ("audit-policyreports", True)]
)
def test_kustomize_audit_overlays_build_the_rendering(overlay: str, policy_reports: bool) -> None:
    """`kubectl kustomize deploy/kustomize/<overlay>`: exactly render()'s audit objects;
    the PolicyReport verbs and --policy-reports only in audit-policyreports/."""
    built = kustomize_build(KUSTOMIZE / overlay)
    want = audit_only(
        manifests.render(manifests.Install(audit=True, audit_policy_reports=policy_reports))
    )
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731 - a sort key
    assert sorted(built, key=key) == sorted(want, key=key)
    assert grants(named(built, "ClusterRole")) == expected_grants(policy_reports)
    command = named(built, "Deployment")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert ("--policy-reports" in command) is policy_reports


# ---- Helm -------------------------------------------------------------------------------------


def helm_audit(cert_dir: Path, **audit: Any) -> list[RawObj]:
    return helm_template({**_tls_values(cert_dir), "audit": audit})


def test_helm_renders_no_audit_unless_enabled(cert_dir: Path) -> None:
    """audit.enabled false (the default): no audit object, whatever else is set."""
    assert audit_only(helm_template(_tls_values(cert_dir))) == []
    assert audit_only(helm_audit(cert_dir, enabled=False, policyReports=True)) == []


@pytest.mark.parametrize("policy_reports", [False, True])
def test_helm_audit_equals_the_rendering(cert_dir: Path, policy_reports: bool) -> None:
    """audit.enabled: the same objects as render(Install(audit=True, ...)), labels aside."""
    got = audit_only(helm_audit(cert_dir, enabled=True, policyReports=policy_reports))
    want = audit_only(
        manifests.render(manifests.Install(audit=True, audit_policy_reports=policy_reports))
    )
    assert _without_labels(got) == _without_labels(want)
    assert grants(named(got, "ClusterRole")) == expected_grants(policy_reports)


def test_helm_audit_values_become_flags(cert_dir: Path) -> None:
    """intervalSeconds, includeSoft and resources reach the audit container."""
    got = helm_audit(
        cert_dir,
        enabled=True,
        intervalSeconds=45,
        includeSoft=True,
        resources={"requests": {"cpu": "50m"}},
    )
    container = named(got, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    want = manifests.audit_command(
        manifests.Install(audit=True, audit_interval_seconds=45, audit_include_soft=True)
    )
    assert container["command"] == want
    # Helm merges the given values into the defaults.
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "256Mi"},
        "limits": {"memory": "1Gi"},
    }


def test_helm_audit_defaults_are_the_manifests_defaults() -> None:
    """values.yaml's audit section holds Install()'s audit defaults."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())["audit"]
    d = manifests.Install()
    assert values == {
        "enabled": d.audit,
        "intervalSeconds": d.audit_interval_seconds,
        "policyReports": d.audit_policy_reports,
        "includeSoft": d.audit_include_soft,
        "resources": d.audit_resources,
    }


@pytest.mark.parametrize(
    ("audit", "where"),
    [
        ({"enabled": "yes"}, "/audit/enabled"),
        ({"enabled": True, "intervalSeconds": -1}, "/audit/intervalSeconds"),
        ({"enabled": True, "policyReports": "true"}, "/audit/policyReports"),
        ({"enabled": True, "replicas": 2}, "'replicas' not allowed"),
    ],
)
def test_helm_schema_refuses_wrong_audit_values(cert_dir: Path, audit: RawObj, where: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as exc:
        helm_audit(cert_dir, **audit)
    assert where in str(exc.value)
