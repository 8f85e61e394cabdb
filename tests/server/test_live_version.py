"""The live server models the cluster's own release: the API server's /version decides
unless the config names kubernetesVersion (webhook.server.app.live_settings)."""

from __future__ import annotations

import pytest

from webhook.api.versions import KubeVersion
from webhook.config import Settings, settings_from_dict
from webhook.server.app import api_server_version, live_settings


@pytest.mark.parametrize(
    ("server", "want", "declared_features"),
    [
        pytest.param((1, 35), KubeVersion(1, 35), False, id="v1.35 cluster"),
        pytest.param((1, 36), KubeVersion(1, 36), True, id="v1.36 cluster"),
        pytest.param((1, 33), KubeVersion(1, 35), False, id="older: the oldest supported"),
        pytest.param((1, 40), KubeVersion(1, 37), True, id="newer: the newest"),
        pytest.param(None, KubeVersion(1, 37), True, id="not known yet: the newest"),
    ],
)
def test_the_cluster_version_decides(
    server: tuple[int, int] | None, want: KubeVersion, declared_features: bool
) -> None:
    """Without kubernetesVersion in the config, the cluster's release is modelled."""
    settings = live_settings(Settings(), server)
    assert settings.modelled_version == want
    filters = settings.scheduler[0].enabled("filter")
    assert ("NodeDeclaredFeatures" in filters) is declared_features


def test_the_config_wins_over_the_cluster() -> None:
    """kubernetesVersion in the config is kept whatever the cluster says."""
    configured = settings_from_dict({"kubernetesVersion": "1.36"})
    assert live_settings(configured, (1, 35)).modelled_version == KubeVersion(1, 36)


def test_feature_gates_apply_to_the_cluster_release() -> None:
    """featureGates hold for the cluster's release: NodeDeclaredFeatures turned on in a
    v1.35 cluster, where it is off by default."""
    settings = settings_from_dict({"featureGates": {"NodeDeclaredFeatures": True}})
    live = live_settings(settings, (1, 35))
    assert live.modelled_version == KubeVersion(1, 35)
    assert "NodeDeclaredFeatures" in live.scheduler[0].enabled("filter")


def test_the_config_names_the_api_server_too() -> None:
    """One setting: with kubernetesVersion in the config, the API server's rules
    (validation, the matchLabelKeys merge) are that release's, whatever /version says;
    without it, the cluster's."""
    configured = settings_from_dict({"kubernetesVersion": "1.36"})
    assert api_server_version(configured, (1, 33)) == (1, 36)
    assert api_server_version(configured, None) == (1, 36)
    assert api_server_version(Settings(), (1, 33)) == (1, 33)
    assert api_server_version(Settings(), None) is None
