"""Layering: the scheduling model and label matching import no web or cluster client code.

Imports are read with ast (nothing is executed), function-level imports included,
and followed through every webhook module they reach.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE = sorted((ROOT / "webhook" / "scheduler").rglob("*.py")) + sorted(
    (ROOT / "webhook" / "api").glob("*.py")
)
FORBIDDEN = ("flask", "werkzeug", "gunicorn", "kubernetes", "prometheus_client")


def imported_modules(path: Path, package: str | None = None) -> set[str]:
    """Every module an import statement in `path` names (relative imports resolved
    against `package`, by default the file's own package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if package is None:
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_file(name: str) -> Path | None:
    if not name.startswith("webhook"):
        return None
    parts = name.split(".")
    for candidate in (
        ROOT.joinpath(*parts).with_suffix(".py"),
        ROOT.joinpath(*parts, "__init__.py"),
    ):
        if candidate.is_file():
            return candidate
    return None


def reachable_imports(start: Path) -> dict[str, Path]:
    """Module name -> the project file that imports it, over the whole webhook closure."""
    seen_files: set[Path] = set()
    out: dict[str, Path] = {}
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen_files:
            continue
        seen_files.add(path)
        for name in imported_modules(path):
            out.setdefault(name, path)
            target = module_file(name)
            if target is not None:
                todo.append(target)
    return out


def test_the_pure_modules_exist() -> None:
    names = {p.name for p in PURE}
    assert {"snapshot.py", "filtering.py", "scoring.py", "placement.py", "labels.py"} <= names


@pytest.mark.parametrize("path", PURE, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_web_or_cluster_client_imports(path: Path) -> None:
    bad = {
        name: str(where.relative_to(ROOT))
        for name, where in reachable_imports(path).items()
        if name.split(".")[0] in FORBIDDEN
    }
    assert bad == {}


def test_the_checker_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    """The parser is not blind: lazy imports inside functions and relative ones count."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    import flask\n    from .x import y\n    from .. import kube\n")
    found = imported_modules(probe, package="webhook.scheduler")
    assert {"flask", "webhook.scheduler.x", "webhook.scheduler.x.y", "webhook.kube"} <= found
