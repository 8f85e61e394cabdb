"""The deletion-cost keeper's install: get and patch on pods, and `--deletion-costs` on
the audit's command, exactly when it is turned on (Install.audit_deletion_costs, the
kustomize overlay audit-deletion-costs/, the Helm value audit.deletionCosts,
`topospread manifests --deletion-costs`), never otherwise."""

from __future__ import annotations

from pathlib import Path

import helm_python
import pytest

from tests.install.test_audit_install import (
    audit_only,
    expected_grants,
    grants,
    helm_audit,
    named,
)
from tests.install.test_helm import _tls_values, _without_labels, helm_template
from tests.install.test_kustomize import KUSTOMIZE, kustomize_build
from tests.install.test_manifests import K8S_VERSIONS, RawObj, run_manifests, validate_schema
from webhook.cli.main import build_parser
from webhook.install import manifests

KEEPER = manifests.Install(audit=True, audit_deletion_costs=True)


def keeper_grants() -> dict[tuple[str, str], list[str]]:
    want = expected_grants(False)
    want[("", "pods")] = ["get", "list", "patch"]
    return want


def patches_pods(objs: list[RawObj]) -> bool:
    """Whether any ClusterRole or Role grants patch on pods."""
    return any(
        "patch" in verbs and resource == ("", "pods")
        for o in objs
        if o["kind"] in ("ClusterRole", "Role")
        for resource, verbs in grants(o).items()
    )


def command_of(objs: list[RawObj]) -> list[str]:
    return list(named(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["command"])


def test_render_grants_get_and_patch_on_pods_only_with_the_keeper() -> None:
    objs = manifests.render(KEEPER)
    assert grants(named(objs, "ClusterRole")) == keeper_grants()
    command = command_of(objs)
    assert command[-1] == "--deletion-costs"
    assert build_parser().parse_args(command[1:]).deletion_costs is True
    assert not patches_pods(manifests.render(manifests.Install(audit=True)))
    assert not patches_pods(manifests.render())


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_keeper_objects_are_schema_valid(version: str) -> None:
    for obj in audit_only(manifests.render(KEEPER)):
        validate_schema(obj, version)


def test_kustomize_overlay_builds_the_rendering() -> None:
    built = kustomize_build(KUSTOMIZE / "audit-deletion-costs")
    want = audit_only(manifests.render(KEEPER))
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731 - a sort key
    assert sorted(built, key=key) == sorted(want, key=key)
    assert not patches_pods(kustomize_build(KUSTOMIZE / "audit"))


def test_helm_value_equals_the_rendering(cert_dir: Path) -> None:
    got = audit_only(helm_audit(cert_dir, enabled=True, deletionCosts=True))
    assert _without_labels(got) == _without_labels(audit_only(manifests.render(KEEPER)))
    assert grants(named(got, "ClusterRole")) == keeper_grants()
    assert not patches_pods(helm_audit(cert_dir, enabled=True))
    assert not patches_pods(helm_template(_tls_values(cert_dir)))


def test_helm_schema_refuses_a_non_boolean(cert_dir: Path) -> None:
    with pytest.raises(helm_python.HelmValuesError) as exc:
        helm_audit(cert_dir, enabled=True, deletionCosts="yes")
    assert "/audit/deletionCosts" in str(exc.value)


def test_manifests_flag(cert_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`manifests --deletion-costs`: the audit with the keeper; without: no audit at all."""
    args = ("--namespace", "topospread", "--cert-dir", str(cert_dir))
    with_keeper = run_manifests(capsys, *args, "--deletion-costs")
    assert grants(named(with_keeper, "ClusterRole")) == keeper_grants()
    assert command_of(with_keeper)[-1] == "--deletion-costs"
    plain = run_manifests(capsys, *args)
    assert audit_only(plain) == [] and not patches_pods(plain)
