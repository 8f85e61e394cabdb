"""Shared fixtures and hypothesis profiles."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from webhook.scheduler.framework import budget

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _budgets_never_run_out(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In-process time budgets (foresight's 25 ms) read a clock that stands still, so
    what a test sees does not depend on how busy the machine is (under `-n 2` beside
    other work a 25 ms look on a tiny cluster did run out). The tests of the budget
    set their own clock over this one."""
    monkeypatch.setattr(budget, "_clock", lambda: 0.0)
    yield


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--e2e",
        action="store_true",
        help="collect tests/e2e: the real control plane (`make test-e2e` builds and runs it)",
    )


def pytest_ignore_collect(collection_path: os.PathLike[str], config: pytest.Config) -> bool | None:
    """tests/e2e runs only with --e2e: `make test` needs no Go and no control plane."""
    from pathlib import Path

    e2e = Path(__file__).parent / "e2e"
    path = Path(collection_path)
    if not config.getoption("--e2e") and (path == e2e or e2e in path.parents):
        return True
    return None
