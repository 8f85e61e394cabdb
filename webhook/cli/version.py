"""`topospread version` and `--version`: the project's one version string.

The string is `webhook.__version__`. Everything else is derived from it: the package
metadata (pyproject.toml reads it, `[tool.setuptools.dynamic]`), the image's
`org.opencontainers.image.version` label (`make image` passes it as the VERSION build
argument; the Dockerfile stops when it differs from the installed metadata), the
manifests' image tag and `app.kubernetes.io/version` label, the reports' version.
"""

from __future__ import annotations

import argparse
import sys

from webhook import __version__

__all__ = ["cli_version", "version"]


def version() -> str:
    """The topospread version, the same from a wheel, an image or a source tree."""
    return __version__


def cli_version(args: argparse.Namespace) -> int:
    """Print `topospread VERSION` (Python and platform with -v)."""
    print(f"topospread {version()}")
    if getattr(args, "verbose", False):
        import platform

        print(f"python {platform.python_version()} ({sys.executable})")
        print(f"platform {platform.platform()}")
    return 0
