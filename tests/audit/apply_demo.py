"""The run docs/audit.md shows under "Carrying out the plan", against the fake API server.

    .venv/bin/python -m tests.audit.apply_demo [difference]

Starts tests/fake_apiserver.py with the cluster of tests/audit/test_apply.py (Deployment
shop/web, six pods 4/1/1 over zones a, b, c) and its test scheduler, which binds each
replacement where the plan said (with `difference`: the first one back in zone a),
writes a kubeconfig for it, and runs `topospread audit --plan --apply --yes --record`,
printing the command's output, its exit status and the recorded first line.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from tests.audit.test_apply import TestScheduler, cluster_objects, planned
from tests.cli.test_live import kubeconfig
from tests.fake_apiserver import FakeApiServer
from webhook.cli.main import main


def demo(difference: bool) -> int:
    server = FakeApiServer().start()
    try:
        objects = cluster_objects()
        for obj in objects:
            server.add(obj)
        nodes = ["a2", "a2"] if difference else [m.to_node for m in planned(objects)]
        TestScheduler(server, nodes)
        with tempfile.TemporaryDirectory() as tmp:
            config = kubeconfig(Path(tmp), server.url)
            record = Path(tmp) / "steps.jsonl"
            argv = ["audit", "--context", "fake", "--plan", "--apply", "--yes"]
            print("$ topospread " + " ".join(argv) + " --record steps.jsonl")
            sys.stdout.flush()
            code = main([*argv, "--kubeconfig", config, "--record", str(record)])
            print(f"$ echo $?\n{code}")
            first = json.loads(record.read_text().splitlines()[0])
            print("$ head -1 steps.jsonl | jq .")
            print(json.dumps(first, indent=2, ensure_ascii=False))
        return code
    finally:
        server.stop()


if __name__ == "__main__":
    demo("difference" in sys.argv[1:])
