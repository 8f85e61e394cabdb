"""Headless Chromium driven by the DevTools protocol over a pipe (standard library only).

    with Browser.start() as browser:              # BrowserMissing when there is none
        page = browser.open(Path("report.html"), width=320)
        page.errors                               # console errors, exceptions, dialogs
        page.eval("document.querySelectorAll('article.card').length")
        page.screenshot()                         # PNG bytes

Chromium runs with --remote-debugging-pipe: the protocol's JSON messages, each ended
by a NUL byte, go in on fd 3 and come out on fd 4, so no port is opened and no
websocket library is needed. On a closed network Chromium hangs at start unless every
background service is off, hence the flags of FLAGS; a fresh --user-data-dir per run
keeps runs apart. Also a script: `python -m tests.browser PAGE.html OUT.png [WIDTH]`
renders a page to a PNG (`make report-screenshot`).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["Browser", "BrowserMissing", "Page", "find_chromium"]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]
# Seconds a protocol answer may take (a 5,000-node page lays out in well under this).
TIMEOUT = 60.0


class BrowserMissing(Exception):
    """No Chromium to run: the browser tests skip, saying so."""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One Chromium process; `open` loads a page in a new tab."""

    def __init__(self, proc: subprocess.Popen[bytes], to_fd: int, from_fd: int, tmp: str):
        self._proc = proc
        self._to = to_fd
        self._from = from_fd
        self._tmp = tmp
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    @classmethod
    def start(cls) -> Browser:
        binary = find_chromium()
        if binary is None:
            raise BrowserMissing("Chromium is not installed (Debian: apt-get install chromium)")
        tmp = tempfile.mkdtemp(prefix="topospread-chromium-")
        # Our end writes into fd 3 of the child, and reads what the child writes to fd 4.
        child_in, to_fd = os.pipe()
        from_fd, child_out = os.pipe()

        def fds() -> None:  # runs in the child before exec
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        args = [binary, *FLAGS, f"--user-data-dir={tmp}", "about:blank"]
        proc = subprocess.Popen(  # noqa: S603 - a fixed binary and fixed flags
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # 3 and 4 are kept open in the child (fds outside pass_fds are closed after
            # preexec_fn has run).
            pass_fds=(3, 4),
            preexec_fn=fds,  # noqa: PLW1509 - the tests start no threads before it
        )
        os.close(child_in)
        os.close(child_out)
        return cls(proc, to_fd, from_fd, tmp)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)
        os.close(self._to)
        os.close(self._from)
        shutil.rmtree(self._tmp, ignore_errors=True)

    # ---- the protocol ------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """The result of one command; events that arrive meanwhile are kept."""
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to, data) :]
        deadline = time.monotonic() + TIMEOUT
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == ident:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self._events.append(answer)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self._events.pop(i)
            self._events.append(self._read_message(deadline))

    def events(self, session: str) -> list[dict[str, Any]]:
        return [e for e in self._events if e.get("sessionId") == session]

    def open(self, path: Path, *, width: int = 1024, height: int = 800) -> Page:
        """Load `path` in a new tab of `width` CSS pixels and wait for its load event."""
        return self.open_url(path.resolve().as_uri(), width=width, height=height)

    def open_url(
        self, url: str, *, width: int = 1024, height: int = 800, context: str | None = None
    ) -> Page:
        """Load `url` (a file: or loopback URL) in a new tab, as `open` does; `context`:
        in that browser context (Target.createBrowserContext), apart from other tabs."""
        where = {} if context is None else {"browserContextId": context}
        target = self.send("Target.createTarget", url="about:blank", **where)["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(domain, session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.send("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        return Page(self, session)


class Page:
    """One loaded tab."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (by value)."""
        result = self.browser.send(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions, log errors (a CSP violation among them)
        and JavaScript dialogs the page produced so far."""
        self.eval("0")  # drain the events that arrived before now
        out = []
        for event in self.browser.events(self.session):
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(f"console: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(f"log: {params['entry'].get('text')}")
            elif method == "Page.javascriptDialogOpening":
                out.append(f"dialog: {params.get('message')}")
        return out

    def emulate(self, media: str = "", **features: str) -> None:
        """Emulate a CSS media type (`print`) and media features
        (`prefers_color_scheme="dark"`), as DevTools' rendering panel does."""
        self.browser.send(
            "Emulation.setEmulatedMedia",
            self.session,
            media=media,
            features=[{"name": k.replace("_", "-"), "value": v} for k, v in features.items()],
        )

    def screenshot(self) -> bytes:
        shot = self.browser.send(
            "Page.captureScreenshot", self.session, format="png", captureBeyondViewport=False
        )
        return base64.b64decode(shot["data"])


def main(argv: list[str]) -> int:
    """PAGE.html OUT.png [WIDTH [HEIGHT]]: a screenshot of the page's first screen."""
    if len(argv) not in (2, 3, 4):
        print("usage: python -m tests.browser PAGE.html OUT.png [WIDTH [HEIGHT]]", file=sys.stderr)
        return 2
    width = int(argv[2]) if len(argv) > 2 else 900
    height = int(argv[3]) if len(argv) > 3 else 700
    try:
        with Browser.start() as browser:
            page = browser.open(Path(argv[0]), width=width, height=height)
            Path(argv[1]).write_bytes(page.screenshot())
    except BrowserMissing as exc:
        print(f"{exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
