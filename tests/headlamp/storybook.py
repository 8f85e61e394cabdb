"""The Headlamp plugin's stories in a real browser: its Storybook, built statically, served
on 127.0.0.1 and opened story by story in Debian's Chromium (tests/browser.py).

    python -m tests.headlamp.storybook STORYBOOK_DIR FIXTURES_DIR SHOTS_DIR [--docs DOCS_DIR]

For every story: it renders the state STORIES expects, the bars in the DOM hold the
counts of the CLI's JSON (the fixture the story shows, read here with json alone) and
each count above 0 is drawn with a width, the texts the state must show are there,
and the console has no error. Each story is
screenshotted into SHOTS_DIR; with --docs, the two docs/headlamp.md shows are written
there too. A story without a row in STORIES (or a row without a story) fails the run,
as does a missing Chromium: `make test-plugin` installs it (`make browser`).
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

from tests.browser import Browser, BrowserMissing, Page

# Seconds a story may take to render (webpack bundles of a few MB from loopback).
RENDER_TIMEOUT = 60.0
WIDTH = 1100
INSTALL = "helm upgrade --install topospread deploy/helm/topospread"

Workload = tuple[str, str, str]  # kind, namespace, name


class Story(NamedTuple):
    state: str  # the data-state the view renders
    fixture: str | None  # the CLI document it shows
    bars: list[Workload] | None  # whose bars, in order; None: the violated constraints
    texts: list[str]  # what it must say, besides (fixture keys resolved by expected_texts)


def _page(name: str) -> str:
    return f"topology-spread-cluster-page--{name}"


def _detail(name: str) -> str:
    return f"topology-spread-detail-section--{name}"


WEB = ("Deployment", "shop", "web")
API = ("Deployment", "shop", "api")
STORIES: dict[str, Story] = {
    _detail("holds"): Story("ready", "holds", [WEB], ["Holds", "No Pending pod."]),
    _detail("violated"): Story("ready", "in-cluster", [API], ["Violated"]),
    _detail("pending"): Story("ready", "outage", [WEB], ["pending", "scaleUpReasons"]),
    _detail("replica-set-of-a-deployment"): Story(
        "ready", "in-cluster", [API], ["The audit counts these pods with Deployment shop/api."]
    ),
    _detail("no-audit"): Story("missing", None, [], [INSTALL]),
    _detail("no-endpoint"): Story("no-endpoint", None, [], [INSTALL, "/report.json"]),
    _detail("unreachable"): Story("unreachable", None, [], ["HTTP 503", "services/proxy"]),
    _detail("malformed"): Story("malformed", None, [], ["not the document this plugin reads"]),
    _page("in-cluster"): Story("ready", "in-cluster", None, ["generated", "/report"]),
    _page("with-plan"): Story("ready", "violated", None, ["plan"]),
    _page("drill"): Story("ready", "outage", None, ["unreachableNodes", "pending"]),
    _page("holds"): Story("ready", "holds", None, ["Every audited constraint holds."]),
    _page("no-audit"): Story("missing", None, [], [INSTALL]),
    _page("malformed"): Story("malformed", None, [], ['"workloads" is not a list']),
}
# The screenshots docs/headlamp.md shows: story -> file name.
DOCS_SHOTS = {
    _detail("violated"): "headlamp-detail.png",
    _page("in-cluster"): "headlamp-cluster.png",
}


def expected_bars(doc: dict[str, Any], which: list[Workload] | None) -> list[list[Any]]:
    """[domain, count] of each constraint shown: the workloads' in order, domains by
    name; or (None) every violated constraint's, in any order, so sorted."""
    if which is None:
        found = [
            [domain, count]
            for w in doc["workloads"]
            for c in w["constraints"]
            if c["violated"]
            for domain, count in sorted(c["domains"].items())
        ]
        return sorted(found)
    return [
        [domain, count]
        for kind, namespace, name in which
        for w in doc["workloads"]
        if (w["kind"], w["namespace"], w["name"]) == (kind, namespace, name)
        for c in w["constraints"]
        for domain, count in sorted(c["domains"].items())
    ]


def expected_texts(doc: dict[str, Any] | None, texts: list[str]) -> list[str]:
    """The texts, a fixture key standing for what the view must show of it."""
    out: list[str] = []
    for text in texts:
        if doc is None or text not in doc:
            out.append(text)
        elif text == "generated":
            out.append(f"Audited {doc['generated']}")
        elif text == "plan":
            out += [m["pod"] for m in doc["plan"]]
        elif text == "scaleUpReasons":
            out += [doc["scaleUpReasons"][p] for p in doc["pending"]]
        else:  # a list of pod or node names
            out += list(doc[text])
    return out


def serve(directory: Path) -> ThreadingHTTPServer:
    handler = functools.partial(_Quiet, directory=str(directory))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Requests are not logged."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/favicon.ico":  # asked for by the browser, not by a story
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


def wait_rendered(page: Page) -> str:
    """The view's data-state once the story rendered; raises on a story error."""
    end = time.monotonic() + RENDER_TIMEOUT
    while time.monotonic() < end:
        state = page.eval(
            "(() => { const e = document.querySelector('#storybook-root [data-state]');"
            " if (e) return e.getAttribute('data-state');"
            " if (document.body.classList.contains('sb-show-errordisplay'))"
            " return 'story error: ' + document.querySelector('#error-message')?.textContent;"
            " return null; })()"
        )
        if state is not None:
            return str(state)
        time.sleep(0.1)
    raise TimeoutError("the story did not render a view")


BARS_JS = (
    "Array.from(document.querySelectorAll('#storybook-root [data-testid=\"domain-bar\"]'))"
    ".map(e => [e.getAttribute('data-domain'), Number(e.getAttribute('data-count'))])"
)
# The bars of a count above 0 that the layout left without width (drawn, not seen).
HIDDEN_BARS_JS = (
    "Array.from(document.querySelectorAll('#storybook-root [data-testid=\"domain-bar\"]'))"
    ".filter(e => Number(e.getAttribute('data-count')) > 0 && !(e.querySelector("
    "'[data-testid=\"domain-fill\"]')?.getBoundingClientRect().width >= 2))"
    ".map(e => e.getAttribute('data-domain'))"
)


def check_story(page: Page, story: Story, fixtures: Path) -> list[str]:
    """What is wrong with one rendered story (empty: nothing)."""
    problems = []
    state = wait_rendered(page)
    if state != story.state:
        problems.append(f"renders {state!r}, expected {story.state!r}")
    doc = json.loads((fixtures / f"{story.fixture}.json").read_text()) if story.fixture else None
    got = page.eval(BARS_JS)
    if doc is not None:
        want = expected_bars(doc, story.bars)
        if story.bars is None:
            got = sorted(got)
        if got != want:
            problems.append(f"bars {got}, the CLI's JSON has {want}")
    elif got:
        problems.append(f"bars {got} without a document")
    hidden = page.eval(HIDDEN_BARS_JS)
    if hidden:
        problems.append(f"the bars of {hidden} have no width on the page")
    text = page.eval("document.querySelector('#storybook-root').innerText")
    problems += [f"does not say {t!r}" for t in expected_texts(doc, story.texts) if t not in text]
    problems += [f"console: {e}" for e in page.errors]
    return problems


def fit_height(page: Page) -> None:
    """Size the viewport to the story's content, so one screenshot holds all of it."""
    height = int(page.eval("document.querySelector('#storybook-root').scrollHeight")) + 32
    page.browser.send(
        "Emulation.setDeviceMetricsOverride",
        page.session,
        width=WIDTH,
        height=max(200, min(height, 2400)),
        deviceScaleFactor=1,
        mobile=False,
    )


def run(storybook: Path, fixtures: Path, shots: Path, docs: Path | None) -> int:
    index = json.loads((storybook / "index.json").read_text())
    built = {k for k, v in index["entries"].items() if v.get("type") == "story"}
    failures = [f"{s}: a story without a row in STORIES" for s in sorted(built - set(STORIES))]
    failures += [f"{s}: no such story was built" for s in sorted(set(STORIES) - built)]
    shots.mkdir(parents=True, exist_ok=True)
    httpd = serve(storybook)
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with Browser.start() as browser:
            for story_id, story in STORIES.items():
                if story_id not in built:
                    continue
                # each story in a browser context of its own: Storybook's mock service
                # worker (MSW) serves every tab of an origin within one context
                context = browser.send("Target.createBrowserContext")["browserContextId"]
                page = browser.open_url(
                    f"{base}/iframe.html?id={story_id}&viewMode=story",
                    width=WIDTH,
                    height=800,
                    context=context,
                )
                problems = check_story(page, story, fixtures)
                fit_height(page)
                png = page.screenshot()
                (shots / f"{story_id}.png").write_bytes(png)
                if docs is not None and story_id in DOCS_SHOTS:
                    (docs / DOCS_SHOTS[story_id]).write_bytes(png)
                browser.send("Target.disposeBrowserContext", browserContextId=context)
                failures += [f"{story_id}: {p}" for p in problems]
                print(f"{'FAIL' if problems else 'ok  '} {story_id}")
    except BrowserMissing as exc:
        print(f"FAILED: {exc}; `make browser` installs it", file=sys.stderr)
        return 1
    finally:
        httpd.shutdown()
        httpd.server_close()
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    print(f"{len(STORIES) - len({f.split(':')[0] for f in failures})}/{len(STORIES)} stories ok")
    return 1 if failures else 0


def main(argv: list[str]) -> int:
    docs = None
    if "--docs" in argv:
        at = argv.index("--docs")
        docs = Path(argv[at + 1])
        argv = argv[:at] + argv[at + 2 :]
    if len(argv) != 3:
        print(
            "usage: python -m tests.headlamp.storybook STORYBOOK_DIR FIXTURES_DIR SHOTS_DIR"
            " [--docs DOCS_DIR]",
            file=sys.stderr,
        )
        return 2
    return run(Path(argv[0]), Path(argv[1]), Path(argv[2]), docs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
