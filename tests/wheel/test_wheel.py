"""The package as users install it: the wheel, built from this tree, installed with its
dependencies into a fresh virtualenv outside the checkout, its commands run there.

The README's examples are the expected output: each `$ topospread ...` line of the
sections below is run in a scratch directory holding the files its `$ cat FILE` lines
show, and must print what the README prints (and exit as its `$ echo $?` says).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import paths
from webhook import __version__
from webhook.api.versions import NEWEST

README_SECTIONS = ("## Checking manifests in CI", "## Where would it go?", "## What runs now")
DEMO = "webhook/data/demo-snapshot.yaml"


@dataclass
class Installed:
    wheel: Path
    bin: Path
    cwd: Path  # a scratch directory outside the checkout

    def run(self, command: str, *args: str) -> subprocess.CompletedProcess[str]:
        # No PYTHONPATH, no cwd inside the checkout: only the venv's copy can be imported.
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["NO_COLOR"] = "1"
        return subprocess.run([str(self.bin / command), *args], cwd=self.cwd, env=env,
                              capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    tmp = tmp_path_factory.mktemp("dist")
    assert not tmp.resolve().is_relative_to(paths.ROOT)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / "dist"),
                    str(paths.ROOT)], check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp / "dist").glob("topospread-*.whl")
    venv.create(tmp / "venv", with_pip=True)
    bin_dir = tmp / "venv" / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    scratch = tmp / "work"
    scratch.mkdir()
    yield Installed(wheel, bin_dir, scratch)


def test_wheel_name_version_and_data(installed: Installed) -> None:
    """One version: the wheel's name and metadata carry webhook/__init__.py's."""
    assert installed.wheel.name == f"topospread-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(installed.wheel) as whl:
        names = set(whl.namelist())
        metadata = whl.read(f"topospread-{__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {__version__}\n" in metadata
    assert DEMO in names
    assert not any(n.startswith("tests/") for n in names)


def test_imports_from_the_venv(installed: Installed) -> None:
    out = installed.run("python", "-c", "import webhook, sys; print(webhook.__file__)")
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_relative_to(installed.bin.parent)


@pytest.mark.parametrize("command", ["topospread", "kubectl-topospread"])
def test_version(installed: Installed, command: str) -> None:
    out = installed.run(command, "--version")
    assert (out.returncode, out.stdout) == (0, f"topospread {__version__}\n")


def test_kubectl_plugin_names_itself(installed: Installed) -> None:
    out = installed.run("kubectl-topospread", "--help")
    assert out.returncode == 0
    assert out.stdout.startswith("usage: kubectl topospread")


# The commands whose text output names the release they modelled (on stderr).
MODELLING = ("simulate", "audit")


def readme_examples() -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """(section, [(command line, output lines)]) for each README section named above."""
    text = (paths.ROOT / "README.md").read_text()
    examples = []
    for heading in README_SECTIONS:
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        block = section.split("```\n", 2)[1]
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        examples.append((heading, steps))
    return examples


@pytest.mark.parametrize(("heading", "steps"), readme_examples(),
                         ids=[h.lstrip("# ") for h, _ in readme_examples()])
def test_readme_example(installed: Installed, heading: str,
                        steps: list[tuple[str, list[str]]]) -> None:
    """The example prints what the README says, with the demo snapshot of the wheel."""
    demo = installed.bin.parent.joinpath(
        "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages", DEMO)
    assert demo.is_file()
    ran = 0
    last: subprocess.CompletedProcess[str] | None = None
    for command, output in steps:
        words = command.split()
        if words[0] == "cat":
            while output and output[-1] == "":
                output.pop()
            (installed.cwd / words[1]).write_text("\n".join(output) + "\n")
        elif words[0] == "echo":
            assert last is not None and words[1] == "$?"
            assert [str(last.returncode)] == [line for line in output if line]
        else:
            assert words[0] == "topospread", command
            args = [str(demo) if w == DEMO else w for w in words[1:]]
            last = installed.run("topospread", *args)
            # simulate and audit say on stderr which release they modelled: offline, with
            # no version given, the newest; every other command prints nothing there.
            said = f"modelled as Kubernetes {NEWEST}\n" if words[1] in MODELLING else ""
            assert last.stderr == said
            expected = "\n".join(output).rstrip("\n") + "\n"
            assert last.stdout == expected
            ran += 1
    assert ran >= 1


def test_audit_html(installed: Installed) -> None:
    """`audit -o html` on the wheel's demo snapshot: a whole page naming the workloads."""
    demo = next(installed.bin.parent.rglob("site-packages/" + DEMO))
    out = installed.run("topospread", "audit", "--snapshot", str(demo), "-o", "html")
    assert out.returncode == 1, out.stderr  # the demo's shop/api is violated
    assert out.stdout.lstrip().lower().startswith("<!doctype html>")
    assert out.stdout.rstrip().endswith("</html>")
    assert "shop/api" in out.stdout
