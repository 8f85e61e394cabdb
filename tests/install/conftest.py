"""Fixtures shared by the install tests (manifests, Helm chart, kustomize overlays)."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.install import certs


@pytest.fixture(scope="module")
def cert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CA and serving certificate for Service topospread in namespace topospread."""
    d = tmp_path_factory.mktemp("certs")
    certs.generate("topospread", "topospread", d)
    return d
