"""The supported Kubernetes releases, how a version is read, and the feature gates the
model knows with each release's default (pkg/features/kube_features.go of v1.35.4,
v1.36.3 and v1.37.2)."""

from __future__ import annotations

import pytest

from webhook.api.versions import (
    NEWEST,
    KubeVersion,
    VersionError,
    features_for,
    parse_kubernetes_version,
)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("1.35", KubeVersion(1, 35)),
        ("v1.36", KubeVersion(1, 36)),
        ("v1.37.2", KubeVersion(1, 37, 2)),
        ("1.35.3", KubeVersion(1, 35, 3)),
        ("v1.36.3-gke.1200", KubeVersion(1, 36, 3)),
        (" 1.37 ", KubeVersion(1, 37)),
    ],
)
def test_parse(text: str, want: KubeVersion) -> None:
    """A minor, with or without `v` and a patch; a build suffix is ignored."""
    assert parse_kubernetes_version(text) == want


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.34", "unsupported Kubernetes version 1.34: supported are 1.35, 1.36, 1.37"),
        ("1.38.0", "unsupported Kubernetes version 1.38.0: supported are 1.35, 1.36, 1.37"),
        ("2.0", "unsupported Kubernetes version 2.0: supported are 1.35, 1.36, 1.37"),
        ("latest", "not a Kubernetes version: 'latest' (supported: 1.35, 1.36, 1.37"),
        ("", "not a Kubernetes version: ''"),
    ],
)
def test_unsupported_version_names_the_supported_ones(text: str, message: str) -> None:
    """An unsupported or unreadable version is refused with the supported ones listed."""
    with pytest.raises(VersionError) as err:
        parse_kubernetes_version(text)
    assert str(err.value).startswith(message)


def test_newest_is_the_offline_default() -> None:
    """Offline, the model stands for the newest supported minor."""
    assert NEWEST == KubeVersion(1, 37)
    assert str(features_for().version) == "1.37"


@pytest.mark.parametrize(
    ("version", "gate", "want"),
    [
        # NodeDeclaredFeatures: alpha (off) 1.35, beta (on) 1.36, GA 1.37.
        (KubeVersion(1, 35), "NodeDeclaredFeatures", False),
        (KubeVersion(1, 36), "NodeDeclaredFeatures", True),
        (KubeVersion(1, 37), "NodeDeclaredFeatures", True),
        # StorageCapacityScoring: beta and on from 1.37.
        (KubeVersion(1, 35), "StorageCapacityScoring", False),
        (KubeVersion(1, 36), "StorageCapacityScoring", False),
        (KubeVersion(1, 37), "StorageCapacityScoring", True),
    ],
)
def test_gate_defaults_per_release(version: KubeVersion, gate: str, want: bool) -> None:
    """Each gate's default is the release's own."""
    assert features_for(version).enabled(gate) is want


def test_feature_gates_override_the_defaults() -> None:
    """featureGates turns a gate the model knows on or off."""
    features = features_for(KubeVersion(1, 36), {"StorageCapacityScoring": True})
    assert features.enabled("StorageCapacityScoring") is True
    off = features_for(KubeVersion(1, 36), {"NodeDeclaredFeatures": False})
    assert off.enabled("NodeDeclaredFeatures") is False


@pytest.mark.parametrize(
    ("version", "gates", "message"),
    [
        (
            KubeVersion(1, 37),
            {"NodeDeclaredFeatures": False},
            "featureGates.NodeDeclaredFeatures: cannot set feature gate NodeDeclaredFeatures "
            "to false, feature is locked to true in Kubernetes 1.37",
        ),
        (
            KubeVersion(1, 36),
            {"SchedulerQueueingHints": True},
            "featureGates: unknown feature gate 'SchedulerQueueingHints' (the model knows "
            "NodeDeclaredFeatures, StorageCapacityScoring)",
        ),
        (
            KubeVersion(1, 36),
            {"StorageCapacityScoring": "yes"},
            "featureGates.StorageCapacityScoring: must be true or false, got 'yes'",
        ),
    ],
)
def test_feature_gates_refused(
    version: KubeVersion, gates: dict[str, object], message: str
) -> None:
    """A gate the model does not know, a value not a bool, or a GA gate locked to its
    default set otherwise is refused with a message naming it."""
    with pytest.raises(VersionError) as err:
        features_for(version, gates)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("version", "minor", "patch", "want"),
    [
        (KubeVersion(1, 35, 3), 35, 4, False),
        (KubeVersion(1, 35, 4), 35, 4, True),
        (KubeVersion(1, 35), 35, 4, True),
        (KubeVersion(1, 36, 0), 35, 4, True),
        (KubeVersion(1, 35, 9), 36, 0, False),
    ],
)
def test_at_least(version: KubeVersion, minor: int, patch: int, want: bool) -> None:
    """A release compares by minor, then patch; a minor without a patch is its newest."""
    assert version.at_least(minor, patch) is want
