"""The live source (webhook/cluster/informer.py) against a real watch: after churn it holds
exactly what a fresh list holds, and a watch whose resourceVersion etcd compacted away
(410 Gone) lists again and carries on.

These run on a control plane of their own, etcd and kube-apiserver only, with the watch
cache off so that watches are served by etcd itself, where compaction bites at once.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane
from webhook.cluster.informer import LiveSource


@pytest.fixture(scope="module")
def api_only() -> Iterator[ControlPlane]:
    with tempfile.TemporaryDirectory(prefix="topospread-e2e-api-") as tmp:
        plane = ControlPlane(
            Path(tmp), components=("etcd", "kube-apiserver"),
            extra_apiserver_flags=["--watch-cache=false", "--etcd-compaction-interval=0"],
        )
        try:
            plane.start()
            yield plane
        finally:
            plane.stop()


@pytest.fixture
def source(api_only: ControlPlane) -> Iterator[LiveSource]:
    src = LiveSource(kubeconfig=str(api_only.admin_kubeconfig), watch_timeout=2,
                     page_size=7, backoff_initial=0.1, backoff_cap=0.5)
    src.start()
    try:
        deadline = time.monotonic() + 60
        while not src.synced():
            assert time.monotonic() < deadline, "the live source never synced"
            time.sleep(0.1)
        yield src
    finally:
        src.stop()


def fresh_list(cp: ControlPlane, path: str) -> dict[tuple[str, str], str]:
    status, body = cp.api("GET", path)
    assert status == 200, body
    return {(i["metadata"].get("namespace", ""), i["metadata"]["name"]):
            i["metadata"]["resourceVersion"] for i in body["items"]}


def a_pod(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "churn", **labels}},
            "spec": {"containers": [{"name": "c", "image": "registry.test/c:1"}]}}


def churn(cp: ControlPlane, ns: str, n: int) -> None:
    for i in range(n):
        assert cp.api("POST", f"/api/v1/namespaces/{ns}/pods", a_pod(f"p{i}"))[0] == 201
    for i in range(0, n, 3):
        cp.api("DELETE", f"/api/v1/namespaces/{ns}/pods/p{i}", {"gracePeriodSeconds": 0})
    for i in range(1, n, 3):
        path = f"/api/v1/namespaces/{ns}/pods/p{i}"
        status, current = cp.api("GET", path)
        assert status == 200, current
        current["metadata"]["labels"]["round"] = "2"
        assert cp.api("PUT", path, current)[0] == 200


def converges(src: LiveSource, cp: ControlPlane, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        want = fresh_list(cp, "/api/v1/pods")
        got = src.keys("Pod")
        if got == want:
            return
        assert time.monotonic() < deadline, (
            f"held {len(got)} pods, the API lists {len(want)}; "
            f"missing {sorted(set(want) - set(got))[:5]}, extra {sorted(set(got) - set(want))[:5]}"
        )
        time.sleep(0.2)


def test_after_churn_the_live_state_equals_a_fresh_list(
    api_only: ControlPlane, source: LiveSource
) -> None:
    ns = api_only.namespace("churn")
    churn(api_only, ns, 60)
    converges(source, api_only)


def test_a_watch_past_an_etcd_compaction_lists_again_and_resumes(
    api_only: ControlPlane, source: LiveSource
) -> None:
    """Services see no event, so their watch resumes from the list's resourceVersion;
    once etcd compacted past it, the next watch gets 410 Gone: the source lists again
    and keeps following every kind."""
    relists = source.counts().get("relists", 0)
    ns = api_only.namespace("compaction")
    churn(api_only, ns, 30)
    api_only.compact()
    deadline = time.monotonic() + 30
    while source.counts().get("relists", 0) <= relists:
        assert time.monotonic() < deadline, f"no relist after compaction: {source.counts()}"
        time.sleep(0.2)
    churn(api_only, api_only.namespace("after-compaction"), 12)
    converges(source, api_only)
    assert source.keys("Service") == fresh_list(api_only, "/api/v1/services")
