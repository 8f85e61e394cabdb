"""docs/workloads.md's worked examples hold: each `$ topospread ...` block prints what
the page shows (run from the repository root, as the page does), and the paths the
page names exist."""

from __future__ import annotations

import shlex

import pytest

from tests.cli.test_pending_examples import examples as page_examples
from tests.paths import ROOT
from webhook.cli.main import main

PAGE = ROOT / "docs" / "workloads.md"


def examples() -> list[tuple[str, str]]:
    return page_examples(PAGE)


def test_the_page_has_its_worked_examples() -> None:
    commands = [c for c, _ in examples()]
    assert [c.split()[4] for c in commands] == ["--scale", "--rollout"]


@pytest.mark.parametrize(("command", "shown"), examples(), ids=lambda v: str(v)[:70])
def test_each_example_prints_what_the_page_shows(
    command: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    code = main(shlex.split(command)[1:])
    assert capsys.readouterr().out == shown
    assert code == 1  # both examples end violated


def test_the_example_snapshot_exists() -> None:
    assert (ROOT / "docs" / "examples" / "workloads.json").is_file()
