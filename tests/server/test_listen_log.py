"""`topospread serve` names where it listens: the address on gunicorn's `Listening at:`
line (empty with reuse_port, since each worker opens its own listener) and one line
per worker naming the listener it opened."""

from __future__ import annotations

import time
from pathlib import Path

from tests.live_server import start_server


def test_the_log_names_the_address_and_every_workers_listener(tmp_path: Path) -> None:
    srv = start_server(tmp_path, workers=2)
    try:
        # The server answers once one worker is up; the other may log its line just after.
        deadline = time.monotonic() + 15
        while True:
            messages = [(r["pid"], r["msg"]) for r in srv.log_records()]
            workers = [m for _, m in messages if m.startswith("worker ")]
            if len(workers) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        srv.kill()
    address = f"https://127.0.0.1:{srv.port}"
    listening = [m for _, m in messages if m.startswith("Listening at:")]
    assert listening == [
        f"Listening at: {address} ({srv.proc.pid}): each of the 2 workers opens its own listener"
    ]
    booted = {int(m.rsplit(" ", 1)[1]) for _, m in messages if m.startswith("Booting worker")}
    assert len(booted) == 2
    assert {(pid, m) for pid, m in messages if m.startswith("worker ")} == {
        (pid, f"worker {pid} listening at {address}") for pid in booted
    }
