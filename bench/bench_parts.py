"""Where the time of one /validate goes, in process (a script, not a test).

    .venv/bin/python bench/bench_parts.py [--runs 2000]

The realistic review of bench_load.py (a ReplicaSet-created Pod, ~5 KB) through each
part of the application alone, CPU time (time.process_time) per call, best of 5 rounds:
JSON decode, the depth bound, the review without cluster state (parse, rules, warnings,
response), foresight (the same with the demo snapshot, less the former), the request
log line (rendered and written to /dev/null), the metrics (multiprocess files, as serve
runs them) and the response encoding; then the whole WSGI fast path as gunicorn calls
it, and json against orjson when orjson is installed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="topospread-parts-")

from bench_load import realistic_review  # noqa: E402

from webhook.admission.context import ReviewContext  # noqa: E402
from webhook.admission.handlers import answer_review  # noqa: E402
from webhook.admission.review import _too_deep  # noqa: E402
from webhook.cluster.source import FileSource  # noqa: E402
from webhook.config import Settings  # noqa: E402
from webhook.server import logs  # noqa: E402
from webhook.server.app import create_app  # noqa: E402
from webhook.server.metrics import Metrics  # noqa: E402
from webhook.server.serve import demo_snapshot_path  # noqa: E402


def per_call(fn: Callable[[], Any], runs: int) -> float:
    """Best of 5 rounds: CPU microseconds per call."""
    best = float("inf")
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(runs):
            fn()
        best = min(best, (time.process_time() - t0) / runs)
    return best * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    body = realistic_review()
    source = FileSource(demo_snapshot_path())
    source.load()
    bare = ReviewContext()
    with_state = ReviewContext(snapshot=source.snapshot())
    answer = answer_review(body, "validate", with_state)
    metrics = Metrics()
    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    results: list[tuple[str, float]] = []

    def part(name: str, fn: Callable[[], Any], runs: int = args.runs) -> float:
        value = per_call(fn, runs)
        results.append((name, value))
        return value

    part("JSON decode (json.loads of the body)", lambda: json.loads(body.decode()))
    part("depth bound from the bytes", lambda: _too_deep(body, 100))
    no_state = part("review without cluster state (parse, rules, warnings)",
                    lambda: answer_review(body, "validate", bare))
    full = per_call(lambda: answer_review(body, "validate", with_state), args.runs)
    results.append(("foresight (demo snapshot): review with state less without "
                    "(a ReplicaSet's replica: not looked at without the deny policy)",
                    full - no_state))
    deny = Settings(deny_unschedulable=True)
    denying = per_call(
        lambda: answer_review(body, "validate", ReviewContext(settings=deny,
                                                              snapshot=source.snapshot())),
        args.runs,
    )
    no_state_deny = per_call(
        lambda: answer_review(body, "validate", ReviewContext(settings=deny)), args.runs
    )
    results.append(("foresight (demo snapshot) under policy.denyUnschedulable, which looks "
                    "at every created Pod: with state less without", denying - no_state_deny))
    part("response encoding (json.dumps)",
         lambda: json.dumps(answer.doc, separators=(",", ":"), ensure_ascii=False).encode())
    part("metrics (observe_review + count_request, multiprocess files)",
         lambda: (metrics.observe_review("validate", answer, 0.001),
                  metrics.count_request("/validate", 200)))
    logs.configure("INFO")
    os.dup2(devnull, 2)
    try:
        part("request log line (rendered, one write)",
             lambda: logs.log_review("validate", answer, 0.001))
    finally:
        os.dup2(saved, 2)
    app = create_app(source=source)
    environ_base = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/validate", "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)), "wsgi.url_scheme": "https", "SERVER_NAME": "x",
        "SERVER_PORT": "8443", "SERVER_PROTOCOL": "HTTP/1.1",
    }

    def call() -> None:
        environ = dict(environ_base, **{"wsgi.input": io.BytesIO(body)})
        app.wsgi_app(environ, lambda status, headers: None)

    os.dup2(devnull, 2)
    try:
        part("whole application: WSGI fast path, log and metrics included", call)
    finally:
        os.dup2(saved, 2)
    try:
        import orjson  # type: ignore[import-not-found]
    except ImportError:
        orjson = None
    if orjson is not None:
        part("(orjson.loads of the body, for comparison)", lambda: orjson.loads(body))
        part("(orjson.dumps of the answer, for comparison)", lambda: orjson.dumps(answer.doc))
    print(f"realistic review {len(body)} bytes; load average {os.getloadavg()[0]:.2f}")
    for name, value in results:
        print(f"{value:8.1f} us  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
