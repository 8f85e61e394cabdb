"""DefaultNormalizeScore and BuildBrokenLinearFunction, from upstream's
normalize_score_test.go and requested_to_capacity_ratio_test.go TestBrokenLinearFunction."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.scheduler.framework.types import MAX_NODE_SCORE, SUCCESS
from webhook.scheduler.plugins.helper.normalize_score import default_normalize_score
from webhook.scheduler.plugins.helper.shape_score import (
    FunctionShapePoint,
    build_broken_linear_function,
)


@pytest.mark.parametrize(
    ("reverse", "scores", "want"),
    [
        pytest.param(False, [1, 2, 3, 4], [25, 50, 75, 100], id="case_0"),
        pytest.param(True, [1, 2, 3, 4], [75, 50, 25, 0], id="case_1"),
        pytest.param(False, [1000, 10, 20, 30], [100, 1, 2, 3], id="case_2"),
        pytest.param(True, [1000, 10, 20, 30], [0, 99, 98, 97], id="case_3"),
        pytest.param(False, [1, 1, 1, 1], [100, 100, 100, 100], id="case_4"),
        pytest.param(False, [1000, 1, 1, 1], [100, 0, 0, 0], id="case_5"),
        pytest.param(True, [0, 1, 1, 1], [100, 0, 0, 0], id="case_6"),
        # Boundaries: all zero is left alone, or all max_priority when reversing.
        pytest.param(False, [0, 0, 0], [0, 0, 0], id="all zero stays zero"),
        pytest.param(True, [0, 0, 0], [100, 100, 100], id="all zero reversed is max"),
        pytest.param(False, [], [], id="no nodes"),
        pytest.param(False, [3, 2], [100, 66], id="division truncates"),
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], want: list[int]) -> None:
    """Scores scale to [0, 100] by the maximum, truncating; reverse subtracts from 100."""
    named = {f"node{i}": s for i, s in enumerate(scores)}
    assert default_normalize_score(MAX_NODE_SCORE, reverse, named) is SUCCESS
    assert list(named.values()) == want


@given(st.lists(st.integers(min_value=0, max_value=10**12), max_size=20), st.booleans())
def test_normalized_scores_stay_in_range(scores: list[int], reverse: bool) -> None:
    """Whatever the non-negative raw scores, normalised ones lie in [0, 100] and keep
    (or, reversed, invert) their order."""
    named = {f"n{i}": s for i, s in enumerate(scores)}
    default_normalize_score(MAX_NODE_SCORE, reverse, named)
    out = list(named.values())
    assert all(0 <= s <= MAX_NODE_SCORE for s in out)
    for (a, na), (b, nb) in itertools.pairwise(zip(scores, out, strict=True)):
        if a < b:
            assert (na >= nb) if reverse else (na <= nb)


def _shape(*points: tuple[int, int]) -> list[FunctionShapePoint]:
    return [FunctionShapePoint(u, s) for u, s in points]


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        pytest.param(
            _shape((10, 1), (90, 9)),
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
            id="case_0",
        ),
        pytest.param(
            _shape((0, 2), (40, 10), (100, 0)),
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="case_1",
        ),
        pytest.param(
            _shape((0, 2), (40, 2), (100, 2)),
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="case_2",
        ),
        # A falling segment truncates toward zero, as Go: 10 + (-10*10)/60 = 10 - 1.
        pytest.param(_shape((0, 2), (40, 10), (100, 0)), [(50, 9), (41, 10)], id="falling"),
    ],
)
def test_broken_linear_function(
    points: list[FunctionShapePoint], assertions: list[tuple[int, int]]
) -> None:
    """Constant before the first and after the last point, linear in between."""
    f = build_broken_linear_function(points)
    assert [(p, f(p)) for p, _ in assertions] == assertions
