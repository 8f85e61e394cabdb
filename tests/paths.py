"""Where the tests find the repository, their data and the demo snapshot."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
DATA = TESTS / "data"
DEMO_SNAPSHOT = ROOT / "webhook" / "data" / "demo-snapshot.yaml"
