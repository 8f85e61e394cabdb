"""framework.budget: a deadline per thread, checked between chunks of work."""

from __future__ import annotations

import threading

import pytest

from webhook.scheduler.framework import budget


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The budget's clock, set by hand: now[0]."""
    now = [100.0]
    monkeypatch.setattr(budget, "_clock", lambda: now[0])
    return now


def test_without_a_budget_nothing_is_ever_spent(clock: list[float]) -> None:
    clock[0] = 1e12
    assert budget.spent() is False
    budget.checkpoint()


@pytest.mark.parametrize(
    ("elapsed", "spent"),
    [(0.0, False), (0.5, False), (1.0, False), (1.0001, True), (5.0, True)],
)
def test_spent_once_past_the_deadline(clock: list[float], elapsed: float, spent: bool) -> None:
    with budget.within(1.0):
        clock[0] += elapsed
        assert budget.spent() is spent
        if spent:
            with pytest.raises(budget.OutOfTime):
                budget.checkpoint()
        else:
            budget.checkpoint()


def test_the_budget_ends_with_its_block(clock: list[float]) -> None:
    with budget.within(1.0):
        clock[0] += 2
    assert budget.spent() is False


def test_a_nested_budget_keeps_the_earlier_deadline(clock: list[float]) -> None:
    with budget.within(1.0):
        with budget.within(10.0):
            clock[0] += 2
            assert budget.spent() is True
        clock[0] = 100.0
        with budget.within(0.5):
            clock[0] += 0.75
            assert budget.spent() is True
        assert budget.spent() is False


def test_a_budget_is_the_setting_thread_s_own(clock: list[float]) -> None:
    """Each request thread has its own deadline: another thread's budget never stops it."""
    seen: list[bool] = []
    with budget.within(1.0):
        clock[0] += 2
        thread = threading.Thread(target=lambda: seen.append(budget.spent()))
        thread.start()
        thread.join()
        assert budget.spent() is True
    assert seen == [False]
