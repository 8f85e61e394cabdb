"""The periodic audit's install: one Deployment of one replica running `audit --watch`,
its own ServiceAccount and ClusterRole (list on exactly what an audit lists; the
PolicyReport verbs exactly when PolicyReports are on, on the API(s) audit.reports
names), the same in render(), the kustomize overlays audit/, audit-policyreports/,
audit-openreports/ and audit-report/ (built by kustomize) and the Helm chart (rendered
by Helm), and nothing of it by default.
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


def expected_grants(
    policy_reports: bool, reports: str = "wgpolicyk8s"
) -> dict[tuple[str, str], list[str]]:
    want = listed()
    if policy_reports and reports in ("wgpolicyk8s", "both"):
        want[("wgpolicyk8s.io", "policyreports")] = REPORT_VERBS
    if policy_reports and reports in ("openreports", "both"):
        want[("openreports.io", "reports")] = REPORT_VERBS
    return want


# (policyReports, reports, report): every way the audit's reporting can be set.
REPORTING = [
    pytest.param(False, "wgpolicyk8s", False, id="none"),
    pytest.param(True, "wgpolicyk8s", False, id="policyreports"),
    pytest.param(True, "openreports", False, id="openreports"),
    pytest.param(True, "both", False, id="both"),
    pytest.param(False, "openreports", False, id="openreports without policyReports"),
    pytest.param(False, "wgpolicyk8s", True, id="report page"),
]


def install(policy_reports: bool, reports: str, report: bool) -> manifests.Install:
    return manifests.Install(
        audit=True, audit_policy_reports=policy_reports, audit_reports=reports, audit_report=report
    )


# ---- render() ---------------------------------------------------------------------------------


def test_nothing_of_the_audit_is_installed_by_default() -> None:
    """The default install (and so deploy/kustomize/base) has no audit object."""
    assert audit_only(manifests.render()) == []


@pytest.mark.parametrize(("policy_reports", "reports", "report"), REPORTING)
def test_audit_role_lists_exactly_what_an_audit_reads(
    policy_reports: bool, reports: str, report: bool
) -> None:
    """list on every AUDIT_RESOURCES kind, nothing else; the report verbs (get, list,
    create, update, delete) exactly when PolicyReports are on, on the API(s) of
    audit.reports; the /report page needs no verb."""
    objs = manifests.render(install(policy_reports, reports, report))
    assert grants(named(objs, "ClusterRole")) == expected_grants(policy_reports, reports)
    command = named(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["command"]
    args = build_parser().parse_args(command[1:])
    assert (args.policy_reports, args.reports or "wgpolicyk8s", args.report) == (
        policy_reports,
        reports if policy_reports else "wgpolicyk8s",
        report,
    )
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
    ("overlay", "policy_reports", "reports", "report"),
    [
        ("audit", False, "wgpolicyk8s", False),
        ("audit-policyreports", True, "wgpolicyk8s", False),
        ("audit-openreports", True, "openreports", False),
        ("audit-report", False, "wgpolicyk8s", True),
    ],
)
def test_kustomize_audit_overlays_build_the_rendering(
    overlay: str, policy_reports: bool, reports: str, report: bool
) -> None:
    """`kubectl kustomize deploy/kustomize/<overlay>`: exactly render()'s audit objects;
    the report verbs and flags only in the overlay that turns them on."""
    built = kustomize_build(KUSTOMIZE / overlay)
    want = audit_only(manifests.render(install(policy_reports, reports, report)))
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731 - a sort key
    assert sorted(built, key=key) == sorted(want, key=key)
    assert grants(named(built, "ClusterRole")) == expected_grants(policy_reports, reports)
    command = named(built, "Deployment")["spec"]["template"]["spec"]["containers"][0]["command"]
    assert ("--policy-reports" in command) is policy_reports
    assert ("--report" in command) is report


# ---- Helm -------------------------------------------------------------------------------------


def helm_audit(cert_dir: Path, **audit: Any) -> list[RawObj]:
    return helm_template({**_tls_values(cert_dir), "audit": audit})


def test_helm_renders_no_audit_unless_enabled(cert_dir: Path) -> None:
    """audit.enabled false (the default): no audit object, whatever else is set."""
    assert audit_only(helm_template(_tls_values(cert_dir))) == []
    assert audit_only(helm_audit(cert_dir, enabled=False, policyReports=True)) == []


@pytest.mark.parametrize(("policy_reports", "reports", "report"), REPORTING)
def test_helm_audit_equals_the_rendering(
    cert_dir: Path, policy_reports: bool, reports: str, report: bool
) -> None:
    """audit.enabled: the same objects as render(Install(audit=True, ...)), labels aside."""
    got = audit_only(
        helm_audit(
            cert_dir, enabled=True, policyReports=policy_reports, reports=reports, report=report
        )
    )
    want = audit_only(manifests.render(install(policy_reports, reports, report)))
    assert _without_labels(got) == _without_labels(want)
    assert grants(named(got, "ClusterRole")) == expected_grants(policy_reports, reports)


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
        "reports": d.audit_reports,
        "report": d.audit_report,
        "includeSoft": d.audit_include_soft,
        "deletionCosts": d.audit_deletion_costs,
        "resources": d.audit_resources,
    }


@pytest.mark.parametrize(
    ("audit", "where"),
    [
        ({"enabled": "yes"}, "/audit/enabled"),
        ({"enabled": True, "intervalSeconds": -1}, "/audit/intervalSeconds"),
        ({"enabled": True, "policyReports": "true"}, "/audit/policyReports"),
        ({"enabled": True, "reports": "wgpolicy"}, "/audit/reports"),
        ({"enabled": True, "report": "yes"}, "/audit/report"),
        ({"enabled": True, "replicas": 2}, "'replicas' not allowed"),
    ],
)
def test_helm_schema_refuses_wrong_audit_values(cert_dir: Path, audit: RawObj, where: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as exc:
        helm_audit(cert_dir, **audit)
    assert where in str(exc.value)
