"""The wheel tests build and install the package (about half a minute): run by
`make test-dist` (TOPOSPREAD_DIST=1), not collected by the default pytest run."""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("TOPOSPREAD_DIST") else ["test_*.py"]
