"""The image tests run only under `make test-image`, which builds the image first and
names it in TOPOSPREAD_IMAGE; the default pytest run does not collect them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.image.imagefs import ImageConfig, Runner, image_root, runner_for

collect_ignore_glob = [] if os.environ.get("TOPOSPREAD_IMAGE") else ["test_*.py"]


@pytest.fixture(scope="session")
def runner() -> Iterator[Runner]:
    with runner_for(os.environ["TOPOSPREAD_IMAGE"]) as r:
        print(f"\nimage {r.image.ref} run by: {r.name}")
        yield r


@pytest.fixture(scope="session")
def image(runner: Runner) -> ImageConfig:
    return runner.image


@pytest.fixture(scope="session")
def root(runner: Runner) -> Iterator[Path]:
    """The image's files (imagefs.image_root)."""
    with image_root(runner) as path:
        yield path
