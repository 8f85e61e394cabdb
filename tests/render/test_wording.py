"""The words the text report and the HTML page share."""

from __future__ import annotations

import pytest

from tests.htmltree import parse
from webhook.render.html import audit_page
from webhook.render.wording import Verdict, honor_verdict

STUCK = "would not recover (what is left is capacity, or minDomains / ScheduleAnyway)"
UNCHANGED = "no change (no constraint leaves tainted nodes in its domains)"


@pytest.mark.parametrize(
    ("case", "pending", "placed", "changed", "tone", "words"),
    [
        ("every pending pod placed", 2, 2, True, "good", "recovers"),
        ("some placed", 3, 1, True, "bad", STUCK),
        ("none placed", 3, 0, True, "bad", STUCK),
        ("no policy to change, all placed anyway", 2, 2, False, "mute", UNCHANGED),
        ("no policy to change, none placed", 2, 0, False, "mute", UNCHANGED),
    ],
)
def test_honor_verdict(
    case: str, pending: int, placed: int, changed: bool, tone: str, words: str
) -> None:
    v = honor_verdict(pending, placed, changed)
    assert (v.tone, v.words) == (tone, words), case


def test_only_the_stuck_verdicts_head_is_coloured_apart() -> None:
    assert honor_verdict(3, 1, True) == Verdict("bad", "would not recover", STUCK[17:])


def test_the_page_says_each_workloads_honor_verdict() -> None:
    doc = {
        "workloads": [],
        "unreachableNodes": ["a1"],
        "pending": [],
        "withHonor": {
            "Deployment ns/good": {"pending": 2, "placedWithHonor": 2, "changed": True},
            "Deployment ns/bad": {"pending": 3, "placedWithHonor": 1, "changed": True},
            "Deployment ns/<mute>": {"pending": 2, "placedWithHonor": 0, "changed": False},
        },
    }
    page = audit_page(doc, generated="2026-01-01T00:00:00Z")
    items = {
        li.attrs["data-workload"]: li.text()
        for li in parse(page).find_all("li")
        if "data-workload" in li.attrs
    }
    assert items == {
        "Deployment ns/good": "Deployment ns/good: recovers, 2 of 2 pending placed",
        "Deployment ns/bad": f"Deployment ns/bad: {STUCK}, 1 of 3 pending placed",
        "Deployment ns/<mute>": f"Deployment ns/<mute>: {UNCHANGED}, 0 of 2 pending placed",
    }
