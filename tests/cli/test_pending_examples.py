"""docs/pending.md's worked examples hold: each `$ topospread ...` block prints what the
page shows (run from the repository root, as the page does)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.paths import ROOT
from webhook.cli.main import main

PAGE = ROOT / "docs" / "pending.md"


def examples(page: Path = PAGE) -> list[tuple[str, str]]:
    """(command line, the output shown under it) of each shell block of `page`."""
    found: list[tuple[str, str]] = re.findall(
        r"```\n\$ (topospread [^\n]+)\n(.*?)```", page.read_text(), re.S
    )
    return found


def test_the_page_has_its_worked_examples() -> None:
    commands = [c for c, _ in examples()]
    assert [c.split()[1] for c in commands] == [*["simulate"] * 4, "audit"]


@pytest.mark.parametrize(("command", "shown"), examples(), ids=lambda v: str(v)[:60])
def test_each_example_prints_what_the_page_shows(
    command: str, shown: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    argv = shlex.split(command)[1:]
    main(argv)
    assert capsys.readouterr().out == shown
