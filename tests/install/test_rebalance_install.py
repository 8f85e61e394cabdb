"""audit.rebalance in the install: the audit's ClusterRole gains `create` on
`pods/eviction` (the one write the rebalancing sends) and its command `--rebalance`
only when it is enabled, the same in render(), the kustomize overlay audit-rebalance/,
the Helm chart and `topospread manifests --audit-rebalance`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from tests.install.test_audit_install import audit_only, expected_grants, grants, named
from tests.install.test_helm import _tls_values, _without_labels, helm_template
from tests.install.test_kustomize import KUSTOMIZE, kustomize_build
from webhook.cli.audit import _watch_settings
from webhook.cli.main import build_parser, main
from webhook.config import RebalanceSettings, Settings
from webhook.install import manifests

EVICTION = ("", "pods/eviction")


def command_of(objs: list[dict[str, object]]) -> list[str]:
    deployment = named(objs, "Deployment")
    command: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["command"]  # type: ignore[index]
    return command


def watch_args(command: list[str]) -> argparse.Namespace:
    """The audit container's command as `topospread` parses it."""
    assert command[:2] == ["topospread", "audit"]
    return build_parser().parse_args(command[1:])


@pytest.mark.parametrize(
    ("install", "want"),
    [
        pytest.param(manifests.Install(audit=True), RebalanceSettings(), id="off"),
        pytest.param(
            manifests.Install(audit=True, audit_rebalance=True),
            RebalanceSettings(enabled=True),
            id="on",
        ),
        pytest.param(
            manifests.Install(
                audit=True,
                audit_rebalance=True,
                audit_rebalance_max_evictions=3,
                audit_rebalance_namespaces=("shop", "blog"),
            ),
            RebalanceSettings(True, 3, ("shop", "blog")),
            id="on, 3 per run, two namespaces",
        ),
    ],
)
def test_render_grants_evictions_only_when_rebalancing(
    install: manifests.Install, want: RebalanceSettings
) -> None:
    """The eviction verb and the flags come together; the flags parse back to the
    settings the Install asked for."""
    objs = manifests.render(install)
    expected = expected_grants(False, "wgpolicyk8s")
    if install.audit_rebalance:
        expected[EVICTION] = ["create"]
    assert grants(named(objs, "ClusterRole")) == expected
    args = watch_args(command_of(objs))
    assert _watch_settings(args, Settings()).audit.rebalance == want


def test_kustomize_audit_rebalance_overlay_builds_the_rendering() -> None:
    """`kubectl kustomize deploy/kustomize/audit-rebalance`: render()'s audit objects."""
    built = kustomize_build(KUSTOMIZE / "audit-rebalance")
    want = audit_only(manifests.render(manifests.Install(audit=True, audit_rebalance=True)))
    key = lambda o: (o["kind"], o["metadata"]["name"])  # noqa: E731 - a sort key
    assert sorted(built, key=key) == sorted(want, key=key)
    assert grants(named(built, "ClusterRole"))[EVICTION] == ["create"]


@pytest.mark.parametrize(
    ("values", "install"),
    [
        pytest.param({}, manifests.Install(audit=True), id="default: off"),
        pytest.param(
            {"rebalance": {"enabled": True}},
            manifests.Install(audit=True, audit_rebalance=True),
            id="enabled",
        ),
        pytest.param(
            {"rebalance": {"enabled": True, "maxEvictionsPerRun": 2, "namespaces": ["shop"]}},
            manifests.Install(
                audit=True,
                audit_rebalance=True,
                audit_rebalance_max_evictions=2,
                audit_rebalance_namespaces=("shop",),
            ),
            id="enabled, 2 per run, one namespace",
        ),
        pytest.param(
            {"rebalance": {"enabled": False, "namespaces": ["shop"]}},
            manifests.Install(audit=True),
            id="namespaces without enabled: off",
        ),
    ],
)
def test_helm_rebalance_equals_the_rendering(
    cert_dir: Path, values: dict[str, object], install: manifests.Install
) -> None:
    got = audit_only(helm_template({**_tls_values(cert_dir), "audit": {"enabled": True, **values}}))
    want = audit_only(manifests.render(install))
    assert _without_labels(got) == _without_labels(want)


def test_helm_rebalance_defaults_are_the_manifests_defaults() -> None:
    from tests.install.test_helm import CHART

    values = yaml.safe_load((CHART / "values.yaml").read_text())["audit"]["rebalance"]
    d = manifests.Install()
    assert values == {
        "enabled": d.audit_rebalance,
        "maxEvictionsPerRun": d.audit_rebalance_max_evictions,
        "namespaces": list(d.audit_rebalance_namespaces),
    }


@pytest.mark.parametrize(
    ("flags", "audit", "eviction"),
    [
        ([], False, False),
        (["--audit"], True, False),
        (["--audit-rebalance"], True, True),
    ],
)
def test_manifests_command_flags(
    cert_dir: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    audit: bool,
    eviction: bool,
) -> None:
    """`topospread manifests --audit-rebalance`: the audit with the eviction verb."""
    argv = ["manifests", "--namespace", "topospread", "--cert-dir", str(cert_dir), *flags]
    assert main(argv) == 0
    objs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert bool(audit_only(objs)) is audit
    if audit:
        assert (EVICTION in grants(named(objs, "ClusterRole"))) is eviction
        assert ("--rebalance" in command_of(objs)) is eviction


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rebalance-max-evictions", "0"], "--rebalance-max-evictions: must be 1 or more, got 0"),
        (["--rebalance-namespaces", "Shop"], "--rebalance-namespaces: 'Shop' is not a namespace"),
    ],
)
def test_watch_rebalance_flag_errors(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--watch", "--rebalance", *flags]) == 2
    assert message in capsys.readouterr().err
