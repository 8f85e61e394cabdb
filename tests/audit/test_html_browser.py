"""The HTML report in a real browser: headless Chromium over the DevTools protocol
(tests/browser.py). Without Chromium these tests skip and say why; `make test`
installs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests import paths
from tests.audit.reports import (
    PAYLOAD,
    WEB_POD,
    big_cluster,
    cli,
    demo_audit,
    drill_document,
    full_cluster,
    payload_cluster,
    write_snapshot,
)
from tests.browser import Browser, Page
from webhook.render.html import ROWS_SHOWN, audit_page

NARROW = 320


def load(browser: Browser, tmp_path: Path, html: str, width: int = 1024) -> Page:
    path = tmp_path / f"report-{width}.html"
    path.write_text(html, encoding="utf-8")
    return browser.open(path, width=width)


def horizontal_overflow(page: Page) -> int:
    return int(
        page.eval("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )


def test_demo_audit_renders_its_cards_bars_and_counts(browser: Browser, tmp_path: Path) -> None:
    doc, html = demo_audit("--plan")
    page = load(browser, tmp_path, html)
    assert page.errors == []
    drawn = page.eval(
        """[...document.querySelectorAll('article.card')].map(card => ({
             workload: card.dataset.workload,
             violated: card.classList.contains('violated'),
             bars: [...card.querySelectorAll('li.domain')].map(li => [
               li.querySelector('.name').textContent,
               li.querySelector('.count').textContent,
               li.querySelector('svg.bar rect.now').getBoundingClientRect().width])}))"""
    )
    expected = {f"{w['namespace']}/{w['name']}": w for w in doc["workloads"]}
    assert sorted(c["workload"] for c in drawn) == sorted(expected)
    for card in drawn:
        w = expected[card["workload"]]
        domains = {d: n for c in w["constraints"] for d, n in c["domains"].items()}
        assert card["violated"] == any(c["violated"] for c in w["constraints"])
        assert {name: count for name, count, _ in card["bars"]} == {
            d: str(n) for d, n in domains.items()
        }
        # Bars are drawn to scale: the fullest domain's bar is the widest, an empty one has none.
        widths = {name: width for name, _, width in card["bars"]}
        fullest = max(domains, key=lambda d: domains[d])
        assert widths[fullest] == max(widths.values()) > 0
        assert all(widths[d] == 0 for d, n in domains.items() if n == 0)
    evictions = page.eval(
        "[...document.querySelectorAll('li.eviction code')].map(e => e.textContent)"
    )
    assert evictions == [m["pod"] for m in doc["plan"]]


def test_drill_renders_before_after_pending_and_pods_that_stay_down(
    browser: Browser, tmp_path: Path
) -> None:
    doc = drill_document()
    page = load(browser, tmp_path, audit_page(doc))
    assert page.errors == []
    counts = page.eval(
        "Object.fromEntries([...document.querySelectorAll('li.domain')].map(li => "
        "[li.querySelector('.name').textContent, li.querySelector('.count').textContent]))"
    )
    [c] = doc["workloads"][0]["constraints"]
    assert counts == {d: f"{c['before'][d]} → {n}" for d, n in c["domains"].items()}
    pending = page.eval(
        "[...document.querySelectorAll('section.reason')].reduce((n, s) => n + +s.dataset.pods, 0)"
    )
    assert pending == len(doc["pending"])
    text = page.eval("document.body.innerText")
    for pod in doc["notRecreated"]:
        assert pod in text


def test_real_drill_renders_without_errors(browser: Browser, tmp_path: Path) -> None:
    """A zone lost with no room elsewhere: its removed node and its pending pods."""
    cluster = str(write_snapshot(tmp_path / "c.json", full_cluster()))
    args = ("audit", "--snapshot", cluster, "--without-nodes", "topology.kubernetes.io/zone=zone-a")
    doc = json.loads(cli(*args, "-o", "json")[1])
    page = load(browser, tmp_path, cli(*args, "-o", "html")[1])
    assert page.errors == []
    removed = page.eval("document.querySelector('p.drill-nodes').textContent")
    assert removed.split(" ", 1) == [str(len(doc["removedNodes"])), "removed node"]
    pods = page.eval(
        "[...document.querySelectorAll('section.reason li code')].map(e => e.textContent)"
    )
    assert sorted(pods) == sorted(doc["pending"]) != []


def test_simulate_of_5000_nodes_renders_its_summary(browser: Browser, tmp_path: Path) -> None:
    cluster = write_snapshot(tmp_path / "c.json", big_cluster(5000))
    args = ("simulate", "--snapshot", str(cluster), str(WEB_POD))
    doc = json.loads(cli(*args, "-o", "json")[1])
    page = load(browser, tmp_path, cli(*args, "-o", "html")[1])
    assert page.errors == []
    rows = page.eval("document.querySelectorAll('tr[data-node]').length")
    assert rows == min(ROWS_SHOWN, sum(n["feasible"] for n in doc["nodes"]))
    selected = page.eval("document.querySelector('tr.selected').dataset.node")
    assert selected == doc["selectedNode"]
    infeasible = sum(not n["feasible"] for n in doc["nodes"])
    shown = page.eval("document.querySelector('ul.stats').innerText")
    assert f"{len(doc['nodes']) - infeasible:,} of {len(doc['nodes']):,} nodes feasible" in shown
    assert horizontal_overflow(load(browser, tmp_path, cli(*args, "-o", "html")[1], NARROW)) == 0


def test_a_label_value_renders_as_text_and_runs_nothing(browser: Browser, tmp_path: Path) -> None:
    cluster = str(write_snapshot(tmp_path / "c.json", payload_cluster()))
    page = load(browser, tmp_path, cli("audit", "--snapshot", cluster, "-o", "html")[1])
    # No dialog opened (alert), no image requested (a CSP violation would log an error).
    assert page.errors == []
    assert page.eval("document.querySelectorAll('img').length") == 0
    names = page.eval("[...document.querySelectorAll('li.domain .name')].map(e => e.textContent)")
    assert PAYLOAD in names


@pytest.mark.parametrize("which", ["audit", "drill", "rollout", "simulate"])
def test_no_horizontal_scroll_at_320_px(browser: Browser, tmp_path: Path, which: str) -> None:
    pages: dict[str, Any] = {
        "audit": lambda: demo_audit("--plan")[1],
        "drill": lambda: audit_page(drill_document()),
        "rollout": lambda: cli(
            "audit",
            "--snapshot",
            str(paths.ROOT / "docs" / "examples" / "workloads.json"),
            "--rollout",
            "deploy/shop/web",
            "-o",
            "html",
        )[1],
        "simulate": lambda: cli(
            "simulate",
            "--snapshot",
            str(write_snapshot(tmp_path / "c.json", big_cluster(12))),
            str(WEB_POD),
            "--replicas",
            "3",
            "-o",
            "html",
        )[1],
    }
    page = load(browser, tmp_path, pages[which](), NARROW)
    assert page.errors == []
    assert page.eval("document.documentElement.clientWidth") == NARROW
    assert horizontal_overflow(page) == 0


def luminance(css_colour: str) -> float:
    """Relative luminance (0 black .. 1 white) of a computed `rgb(r, g, b)` colour."""
    r, g, b = (int(x) / 255 for x in css_colour[css_colour.index("(") + 1 : -1].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize(
    ("media", "scheme", "dark"),
    [("", "light", False), ("", "dark", True), ("print", "dark", False)],
)
def test_colours_follow_the_colour_scheme_and_print_is_light(
    browser: Browser, tmp_path: Path, media: str, scheme: str, dark: bool
) -> None:
    """Dark text on a light page, light on dark with prefers-color-scheme: dark, and
    always dark on light when printed; the violated bars stay distinct from the others."""
    page = load(browser, tmp_path, demo_audit("--plan")[1])
    page.emulate(media, prefers_color_scheme=scheme)
    background = luminance(page.eval("getComputedStyle(document.body).backgroundColor"))
    text = luminance(page.eval("getComputedStyle(document.body).color"))
    assert (background < text) is dark
    assert abs(background - text) > 0.5
    fills = page.eval(
        "[...new Set([...document.querySelectorAll('li.domain')].map(li => "
        "getComputedStyle(li.querySelector('rect.now')).fill))]"
    )
    assert len(fills) == 2  # over the limit, and within it
    assert page.errors == []


EXAMPLES = paths.ROOT / "docs" / "examples"
NOW = "2026-11-27T12:00:00Z"


@pytest.mark.parametrize(
    ("args", "answer", "lists"),
    [
        (
            [
                "--snapshot",
                str(EXAMPLES / "workloads.json"),
                "--rollout",
                "deploy/shop/web",
                "--now",
                NOW,
            ],
            ".workload-change .constraint",
            "details.pods",
        ),
        (
            [
                "--snapshot",
                str(EXAMPLES / "workloads.json"),
                "--scale",
                "deploy/shop/web=3",
                "--now",
                NOW,
            ],
            ".workload-change .constraint",
            "details.pods",
        ),
        (
            [
                "--snapshot",
                str(EXAMPLES / "zone-outage.json"),
                "--unreachable-nodes",
                "topology.kubernetes.io/zone=zone-a",
            ],
            ".drill-verdict",
            "p.drill-nodes",
        ),
    ],
    ids=["rollout", "scale", "zone outage"],
)
def test_a_drill_page_leads_with_the_answer(
    browser: Browser, tmp_path: Path, args: list[str], answer: str, lists: str
) -> None:
    """On the docs' examples the verdict and the before -> after bars are drawn above
    the drill's lists (a node drill's violating cards too), and a workload drill's pod
    lists and steps start folded."""
    html = cli("audit", *args, "-o", "html")[1]
    page = load(browser, tmp_path, html)
    assert page.errors == []
    top = page.eval(
        f"""[document.querySelector({json.dumps(answer)}).getBoundingClientRect().top,
             document.querySelector({json.dumps(lists)}).getBoundingClientRect().top,
             document.querySelector('article.card.violated').getBoundingClientRect().top]"""
    )
    assert top[0] < top[1], top
    if "--now" not in args:
        assert top[2] < top[1], top
    folded = page.eval(
        "[...document.querySelectorAll('details.pods, details.steps')].map(d => d.open)"
    )
    assert not any(folded)
