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
