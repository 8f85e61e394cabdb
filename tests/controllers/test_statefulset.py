"""A StatefulSet's scale: the highest ordinals go first, the lowest missing come first."""

from __future__ import annotations

import pytest

from tests.builders import make_pod
from webhook.controllers.statefulset import ordinal_of, scale_statefulset


def pods(*names: str) -> list[dict[str, object]]:
    return [make_pod().name(n).obj() for n in names]


@pytest.mark.parametrize(
    ("have", "replicas", "start", "deleted", "created"),
    [
        (("db-0", "db-1", "db-2", "db-3"), 2, 0, ["db-3", "db-2"], []),
        (("db-0", "db-1"), 4, 0, [], ["db-2", "db-3"]),
        (("db-0", "db-2"), 3, 0, [], ["db-1"]),
        (("db-0", "db-1"), 0, 0, ["db-1", "db-0"], []),
        (("db-5", "db-6", "db-7"), 2, 5, ["db-7"], []),
        (("db-0", "db-01", "other-1"), 1, 0, [], []),
    ],
    ids=[
        "down-highest-first",
        "up-next-ordinals",
        "up-fills-a-gap",
        "to-zero",
        "start-ordinal",
        "not-ordinals",
    ],
)
def test_scale_statefulset(
    have: tuple[str, ...], replicas: int, start: int, deleted: list[str], created: list[str]
) -> None:
    gone, new = scale_statefulset("db", pods(*have), replicas, start)
    assert [p["metadata"]["name"] for p in gone] == deleted
    assert new == created


@pytest.mark.parametrize(
    ("name", "expected"),
    [("db-0", 0), ("db-12", 12), ("db-", None), ("db-x", None), ("dbx-1", None), ("db-007", None)],
)
def test_ordinal_of(name: str, expected: int | None) -> None:
    assert ordinal_of("db", make_pod().name(name).obj()) == expected
