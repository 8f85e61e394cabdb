"""The side-by-side suites' counts, written where a person and the docs can read them:
build/e2e-results/SUITE-vMINOR.json holds the counts and every disagreement."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import ROOT

RESULTS = Path(os.environ.get("TOPOSPREAD_E2E_RESULTS", ROOT / "build" / "e2e-results"))


def record(suite: str, minor: str, counts: dict[str, int], cases: list[Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{suite}-v{minor}.json"
    path.write_text(json.dumps({"suite": suite, "kubernetes": minor, **counts,
                                "disagreements": cases}, indent=1, default=str))
    return path
