"""The advice's work stays linear in the number of constraints: each validation error
is looked at a bounded number of times, however many constraints there are."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.validation import advice

PATH = "spec.topologySpreadConstraints"


class _Counted:
    """A field error whose `field` counts its reads."""

    reads = 0

    def __init__(self, field: str) -> None:
        self._field = field

    @property
    def field(self) -> str:
        _Counted.reads += 1
        return self._field


@pytest.mark.parametrize("n", [10, 1000])
def test_invalid_indices_reads_each_error_a_bounded_number_of_times(
    n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors = [_Counted(f"{PATH}[{i}].{{topologyKey, whenUnsatisfiable}}") for i in range(n)]
    errors += [_Counted(f"{PATH}[{i}].maxSkew") for i in range(0, n, 2)]
    errors += [_Counted(f"{PATH}[{i}]") for i in range(1, n, 2)]
    errors += [_Counted("metadata.labels"), _Counted(f"{PATH}[{n + 5}].maxSkew")]

    def validate(*_args: Any, **_kwargs: Any) -> list[_Counted]:
        return errors

    monkeypatch.setattr(advice, "validate_constraints", validate)
    _Counted.reads = 0
    bad = advice._invalid_indices([{}] * n, PATH, None)
    # Even indices: maxSkew, a field the advice reads; odd: the whole constraint. The
    # duplicate pair names none of the fields, and index n + 5 is no constraint.
    assert bad == set(range(n))
    assert _Counted.reads <= 2 * len(errors)


def test_invalid_indices_ignores_fields_the_advice_does_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    errors = [_Counted(f"{PATH}[0].matchLabelKeys[0]"), _Counted(f"{PATH}[1].labelSelector.x")]
    monkeypatch.setattr(advice, "validate_constraints", lambda *_a, **_k: errors)
    assert advice._invalid_indices([{}, {}], PATH, None) == {1}
