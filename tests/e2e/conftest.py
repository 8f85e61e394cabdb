"""One real control plane for the whole e2e session; each test works in its own namespaces.

The control plane's work directory (logs, PKI, kubeconfigs) is removed when every test
passed and kept, with its path printed, when one failed.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.controlplane import DEFAULT_MINOR, ControlPlane, node_object
from tests.e2e.webhook import Webhook

_failed: list[str] = []
_names = itertools.count()

# The nodes every test shares: three zones of two nodes, 4 cpu and 16Gi each.
ZONES = ("zone-a", "zone-b", "zone-c")
SHARED_NODES = [f"node-{z[-1]}-{i}" for z in ZONES for i in range(2)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed:
        _failed.append(item.nodeid)


@pytest.fixture(scope="session")
def cp() -> Iterator[ControlPlane]:
    """The control plane of K8S (default the newest minor), with the shared nodes Ready."""
    workdir = Path(tempfile.mkdtemp(prefix="topospread-e2e-"))
    # Scheduler at -v=10: the placement suite compares every plugin's score per node.
    plane = ControlPlane(workdir, os.environ.get("K8S", DEFAULT_MINOR), scheduler_verbosity=10)
    try:
        plane.start()
        plane.add_nodes([
            node_object(name, f"zone-{name.split('-')[1]}") for name in SHARED_NODES
        ])
        yield plane
    finally:
        plane.stop()
        if _failed:
            keep = Path(os.environ.get("TOPOSPREAD_E2E_LOGS", "build/e2e-logs")).resolve()
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(workdir / "logs", keep, dirs_exist_ok=True)
            print(f"\ne2e: {len(_failed)} failed; control plane logs kept in {keep} "
                  f"(work dir {workdir})")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def ns(cp: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted after it (without waiting)."""
    base = request.node.name.lower().replace("_", "-")
    name = f"{base[:40].strip('-')}-{next(_names)}"
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name)
    cp.namespace(name)
    yield name
    cp.kubectl("delete", "namespace", name, "--wait=false")


@pytest.fixture(scope="session")
def webhook(cp: ControlPlane) -> Iterator[Webhook]:
    """topospread installed as users install it, serving on loopback with its own token."""
    hook = Webhook(cp, cp.workdir / "webhook")
    try:
        hook.install()
        yield hook
    finally:
        hook.stop()
