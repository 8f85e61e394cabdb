"""A drill's HTML page says what its text says, read in a real browser (headless
Chromium, tests/browser.py; without it these tests skip and say why).

Each drill of DRILLS runs three times through the CLI (text, `-o json`, `-o html`).
The text's statements are read back from its lines (`text_statements`), the page's
from what the browser lays out (`page_statements`), and the two must be equal; every
key of the JSON document that the text prints must have its place on the page
(PAGE_PLACE). A new kind of drill is one more row of DRILLS (and, for a key the text
prints that these drills do not produce, one more entry of PAGE_PLACE and of both
readers).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from tests.audit.reports import cli
from tests.browser import Browser, Page
from tests.builders import ZONE

OUTAGE = str(paths.ROOT / "docs" / "examples" / "zone-outage.json")
PENDING = str(paths.ROOT / "docs" / "examples" / "pending" / "cluster.yaml")

# (id, the audit's arguments): the drills held to their text.
DRILLS = [
    pytest.param(["--snapshot", OUTAGE, "--unreachable-nodes", f"{ZONE}=zone-a"], id="zone outage"),
    pytest.param(["--snapshot", OUTAGE, "--drain-nodes", f"{ZONE}=zone-a"], id="zone drain"),
    pytest.param(
        ["--snapshot", PENDING, "--unreachable-nodes", f"{ZONE}=eu-west-1a"],
        id="outage, a node in no group",
    ),
    pytest.param(
        ["--snapshot", PENDING, "--without-nodes", f"{ZONE}=eu-west-1a"], id="nodes deleted"
    ),
]

# Each key of a drill's JSON document the text prints -> where the page shows it.
PAGE_PLACE = {
    "removedNodes": "p.drill-nodes[data-key=removedNodes]",
    "unreachableNodes": "p.drill-nodes[data-key=unreachableNodes]",
    "drainedNodes": "p.drill-nodes[data-key=drainedNodes]",
    "pending": "section.reason",
    "pendingReasons": "section.reason h3",
    "scaleUpReasons": "section.reason .scale-up-reason",
    "scaleUpSummary": ".scale-up-summary",
    "notRecreated": "section.not-recreated li code",
    "notRecreatedReason": ".not-recreated-reason",
    "blocked": "table tbody tr",
    "withHonor": "ul.honor li",
    "preempted": "section.preempted li code",
    "notScheduled": "ul.not-scheduled li",
}


@dataclass
class Statements:
    """What a drill says, in the text's words: pending pods by their reasons (the pods
    named, how many, the scale-up sentences), the scale-up summary, the pods down and
    why, blocked evictions, the Honor verdicts, preempted pods, pods not placed here."""

    pending: dict[str, tuple[int, list[str], list[str]]] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)
    not_recreated: tuple[int, str, list[str]] | None = None
    blocked: dict[str, str] = field(default_factory=dict)
    honor: list[str] = field(default_factory=list)
    preempted: tuple[int, list[str]] | None = None
    not_scheduled: dict[str, str] = field(default_factory=dict)


_NAMED = re.compile(r"^(?P<names>.*?)(?: and (?P<more>\d+) more)?$")


def _named(line: str) -> list[str]:
    """The pods a text line names (`a, b and 3 more`: a and b)."""
    m = _NAMED.match(line.strip())
    assert m is not None
    return [n for n in m.group("names").split(", ") if n]


def text_statements(text: str) -> Statements:
    """The statements of a drill's text output (report.render_text)."""
    out = Statements()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if m := re.match(r"^  (\d+) pending: (.*)$", line):
            pods = _named(lines[i + 1])
            i += 2
            said = []
            while i < len(lines) and lines[i].startswith("    "):
                said.append(lines[i].strip())
                i += 1
            out.pending[m.group(2)] = (int(m.group(1)), pods, said)
            continue
        if m := re.match(r"^  (\d+) not recreated \((.*)\):$", line):
            out.not_recreated = (int(m.group(1)), m.group(2), _named(lines[i + 1]))
            i += 2
            continue
        if m := re.match(r"^  (\d+) preempted by higher-priority replacements:$", line):
            out.preempted = (int(m.group(1)), _named(lines[i + 1]))
            i += 2
            continue
        if m := re.match(r"^  blocked (\S+): eviction refused by PodDisruptionBudget (\S+)$", line):
            out.blocked[m.group(1)] = m.group(2)
        elif m := re.match(r"^  (\S+/\S+): (not placed by this scheduler.*)$", line):
            out.not_scheduled[m.group(1)] = m.group(2)
        elif line == "  with nodeTaintsPolicy: Honor on their DoNotSchedule constraints:":
            i += 1
            while i < len(lines) and lines[i].startswith("    "):
                out.honor.append(lines[i].strip())
                i += 1
            continue
        elif re.match(r"^  (scale-up: |\d+ node\(s\) belong to no node group)", line):
            out.summary.append(line.strip())
        i += 1
    return out


_READ_PAGE = """(() => {
  const text = el => el ? el.innerText.trim() : null;
  const all = (sel, root = document) => [...root.querySelectorAll(sel)];
  const down = document.querySelector('section.not-recreated');
  const preempted = document.querySelector('section.preempted');
  return {
    pending: all('section.reason').map(s => ({
      key: text(s.querySelector('h3')), count: +s.dataset.pods,
      pods: all('li code', s).map(text), said: all('.scale-up-reason', s).map(text)})),
    summary: all('.scale-up-summary').map(text),
    notRecreated: down && +down.dataset.pods ? {
      count: +down.dataset.pods, why: text(down.querySelector('.not-recreated-reason')),
      pods: all('li code', down).map(text)} : null,
    blocked: all('table tbody tr').map(tr => all('td', tr).map(text)),
    honor: all('ul.honor li').map(text),
    preempted: preempted ? {count: +preempted.dataset.pods,
      pods: all('li code', preempted).map(text)} : null,
    notScheduled: all('ul.not-scheduled li').map(text),
  };
})()"""


def page_statements(page: Page, named: Statements) -> Statements:
    """The statements of a drill's page, as laid out; the pods each list names are
    cut to those the text names (the text names 5 per list, the page 50)."""
    got = page.eval(_READ_PAGE)
    out = Statements()
    for s in got["pending"]:
        keep = named.pending.get(s["key"], (0, [], []))[1]
        out.pending[s["key"]] = (s["count"], [p for p in s["pods"] if p in keep], s["said"])
    out.summary = got["summary"]
    if got["notRecreated"]:
        n = got["notRecreated"]
        keep = named.not_recreated[2] if named.not_recreated else []
        out.not_recreated = (n["count"], n["why"], [p for p in n["pods"] if p in keep])
    out.blocked = {pod: budget for pod, budget in got["blocked"]}
    out.honor = got["honor"]
    if got["preempted"]:
        keep = named.preempted[1] if named.preempted else []
        p = got["preempted"]
        out.preempted = (p["count"], [x for x in p["pods"] if x in keep])
    for line in got["notScheduled"]:
        pod, _, why = line.partition(": ")
        out.not_scheduled[pod] = why
    return out


def _run(args: list[str]) -> tuple[str, dict[str, Any], str]:
    _, text = cli("audit", *args)
    _, doc = cli("audit", *args, "-o", "json")
    _, html = cli("audit", *args, "-o", "html")
    return text, json.loads(doc), html


def _printed(key: str, value: Any) -> bool:
    """Whether the text prints a key of this value (an empty list or map it does not)."""
    return value not in ([], {}, None, "")


@pytest.mark.parametrize("args", DRILLS)
def test_the_drill_page_says_what_the_text_says(
    args: list[str], browser: Browser, tmp_path: Path
) -> None:
    text, doc, html = _run(args)
    path = tmp_path / "drill.html"
    path.write_text(html, encoding="utf-8")
    page = browser.open(path)
    assert page.errors == []
    said = text_statements(text)
    assert page_statements(page, said) == said
    shown = {
        key: page.eval(f"document.querySelectorAll({json.dumps(sel)}).length")
        for key, sel in PAGE_PLACE.items()
    }
    for key, value in doc.items():
        if key in PAGE_PLACE and _printed(key, value):
            assert shown[key] > 0, f"{key} is in the text but not on the page"


def test_the_drills_say_something_to_compare() -> None:
    """The table covers what the comparison is for: an outage that Honor would let
    recover, pods down for good with why, a blocked eviction, scale-up sentences for
    pods no new node helps and pods one does, and the nodes in no group."""
    said = [text_statements(_run(p.values[0])[0]) for p in DRILLS]  # type: ignore[index]
    assert any("recovers, 2 of 2 pending placed" in h for s in said for h in s.honor)
    assert any(s.not_recreated for s in said)
    assert any(s.blocked for s in said)
    lines = [line for s in said for _, _, lines in s.pending.values() for line in lines]
    assert any(
        line.startswith("no new node would help") and "lost domain" in line for line in lines
    )
    assert any(line.startswith("fits on a new node") for line in lines)
    assert any("belong to no node group" in line for s in said for line in s.summary)


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "  2 pending: 4 reason a; 2 reason b\n    ns/a, ns/b\n    no new node would help: x\n",
            Statements(
                pending={
                    "4 reason a; 2 reason b": (2, ["ns/a", "ns/b"], ["no new node would help: x"])
                }
            ),
        ),
        (
            "  7 pending: r\n    ns/a, ns/b, ns/c, ns/d, ns/e and 2 more\n",
            Statements(pending={"r": (7, ["ns/a", "ns/b", "ns/c", "ns/d", "ns/e"], [])}),
        ),
        (
            "  1 not recreated (bare pods: no controller recreates them):\n    ns/x\n"
            "  blocked ns/y: eviction refused by PodDisruptionBudget ns/pdb\n",
            Statements(
                not_recreated=(1, "bare pods: no controller recreates them", ["ns/x"]),
                blocked={"ns/y": "ns/pdb"},
            ),
        ),
        (
            "  with nodeTaintsPolicy: Honor on their DoNotSchedule constraints:\n"
            "    Deployment ns/w: recovers, 2 of 2 pending placed\n"
            "  scale-up: a new node would place 0 of 2 pending pod(s)\n",
            Statements(
                honor=["Deployment ns/w: recovers, 2 of 2 pending placed"],
                summary=["scale-up: a new node would place 0 of 2 pending pod(s)"],
            ),
        ),
    ],
)
def test_text_statements_reads_the_drill_text(text: str, expected: Statements) -> None:
    assert text_statements(text) == expected
