"""`topospread version` and `--version`: the installed package's version."""

from __future__ import annotations

import argparse
import sys
from importlib import metadata

__all__ = ["cli_version", "version"]


def version() -> str:
    """The installed topospread version ("unknown" when run from an uninstalled tree)."""
    try:
        return metadata.version("topospread")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed in tests
        return "unknown"


def cli_version(args: argparse.Namespace) -> int:
    """Print `topospread VERSION` (Python and platform with -v)."""
    print(f"topospread {version()}")
    if getattr(args, "verbose", False):
        import platform

        print(f"python {platform.python_version()} ({sys.executable})")
        print(f"platform {platform.platform()}")
    return 0
