"""Fixtures shared by the audit tests: the fake API server and a connection to it, and
a headless browser (one per module) for the pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import Browser, BrowserMissing
from tests.cli.test_live import kubeconfig
from tests.fake_apiserver import FakeApiServer
from webhook.cluster.lister import Connection, connect


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer().start()
    yield fake
    fake.stop()


@pytest.fixture
def conn(server: FakeApiServer, tmp_path: Path) -> Connection:
    return connect(kubeconfig=kubeconfig(tmp_path, server.url), timeout=5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        b = Browser.start()
    except BrowserMissing as exc:
        pytest.skip(f"no browser: {exc}")
    with b:
        yield b
