"""Writers to a real cluster: the deletion-cost keeper under the real ReplicaSet controller,
and `audit --plan --apply` against real PodDisruptionBudgets, the disruption controller
keeping their status and the Eviction API answering 429.

Both start from the same skew, made the way it happens in clusters: a Deployment whose
zones were unavailable (cordoned; the constraint honours taints) when its first pods ran,
so they all stand in one zone, and whose later pods fill the other zones.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane, Process, free_port, kubeconfig
from tests.e2e.test_controllers import live_pods, wait_ready
from tests.e2e.webhook import NAMESPACE, TOPOSPREAD, Webhook, rendered, topospread

ZONE = "topology.kubernetes.io/zone"
WORLD = "disruption"
ZONES = [f"dis-z{i}" for i in range(3)]


@pytest.fixture(scope="module")
def nodes(cp: ControlPlane) -> Iterator[list[str]]:
    """Six nodes in three zones of their own; the workloads here select them."""
    with cp.world(WORLD, "dis", ZONES) as names:
        yield names


def deployment(replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "nodeSelector": {"world": WORLD}, "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.test/web:1"}],
                "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": labels}, "nodeTaintsPolicy": "Honor",
                }],
            }},
        },
    }


def zones(cp: ControlPlane, ns: str) -> dict[str, int]:
    node_zone = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE)
                 for n in cp.get("nodes")["items"]}
    got = Counter(node_zone[p["spec"]["nodeName"]] for p in live_pods(cp, ns)
                  if p["spec"].get("nodeName"))
    return {z: got.get(z, 0) for z in ZONES}


def skewed(cp: ControlPlane, ns: str, nodes: list[str], first: int, total: int) -> None:
    """`first` pods in dis-z0 alone, then the Deployment scaled to `total` on all zones."""
    others = [n for n in nodes if not n.startswith("dis-0-")]
    for n in others:
        cp.kubectl("cordon", n, check=True)
    try:
        cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(deployment(first)),
                   check=True)
        wait_ready(cp, ns, first)
        assert zones(cp, ns) == {"dis-z0": first, "dis-z1": 0, "dis-z2": 0}
    finally:
        for n in others:
            cp.kubectl("uncordon", n, check=True)
    if total > first:
        time.sleep(3)  # Ready times a log2 bucket apart: the first pods are the oldest.
        cp.kubectl("scale", "-n", ns, "deployment/web", f"--replicas={total}", check=True)
        wait_ready(cp, ns, total)


def audit_token_kubeconfig(cp: ControlPlane, webhook: Webhook, flags: tuple[str, ...],
                           path: Path) -> Path:
    """The audit's ServiceAccount and role as `manifests --audit FLAGS` renders them, and a
    kubeconfig with its token: the real authorizer judges every request of the process."""
    objs = [o for o in rendered(webhook.cert_dir, "--audit", *flags)
            if o["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")
            and o["metadata"]["name"] == f"{NAMESPACE}-audit"]
    cp.apply(objs)
    token = cp.kubectl("create", "token", f"{NAMESPACE}-audit", "-n", NAMESPACE,
                       "--duration=1h", check=True).stdout.strip()
    path.write_text(json.dumps(kubeconfig(cp.server, cp.pki.ca, token=token, user="audit")))
    return path


def test_the_keepers_costs_keep_the_spread_through_a_real_scale_down(
    cp: ControlPlane, webhook: Webhook, nodes: list[str], ns: str, tmp_path: Path
) -> None:
    """3 pods in one zone, then 6 more over the others: scaled back to 3, the ReplicaSet
    controller would delete the 6 newest (3/0/0). With the keeper running (`audit --watch
    --deletion-costs`, the audit ServiceAccount's token, RBAC as rendered with
    --deletion-costs) the costs it writes make the real controller keep 1/1/1."""
    skewed(cp, ns, nodes, 3, 9)
    config = audit_token_kubeconfig(cp, webhook, ("--deletion-costs",), tmp_path / "kc")
    keeper = Process(
        "keeper",
        [TOPOSPREAD, "audit", "--watch", "--deletion-costs", "--kubeconfig", str(config),
         "--interval-seconds", "2", "--metrics-bind", f"127.0.0.1:{free_port()}"],
        cp.logs / "keeper.log",
        lambda: True,
    )
    keeper.start(timeout=10)
    try:
        cp.wait_for("every pod costed by the keeper", lambda: all(
            "topospread.io/deletion-cost" in (p["metadata"].get("annotations") or {})
            for p in live_pods(cp, ns)), timeout=90)
    finally:
        keeper.stop()
    assert "forbidden" not in keeper.log.read_text(errors="replace").lower()
    cp.kubectl("scale", "-n", ns, "deployment/web", "--replicas=3", check=True)
    wait_ready(cp, ns, 3)
    assert zones(cp, ns) == {"dis-z0": 1, "dis-z1": 1, "dis-z2": 1}


def pdb(max_unavailable: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": max_unavailable,
                     "selector": {"matchLabels": {"app": "web"}}}}


def budget_current(cp: ControlPlane, ns: str) -> bool:
    got = cp.get("pdb", "web", "-n", ns)
    return bool(got.get("status", {}).get("observedGeneration") == got["metadata"]["generation"])


def test_apply_waits_on_a_real_429_then_fixes_the_spread_within_the_budget(
    cp: ControlPlane, webhook: Webhook, nodes: list[str], ns: str, tmp_path: Path
) -> None:
    """6 pods in one zone after two zones came back (skew 6). While the disruption
    controller has not observed the budget's newest spec, the Eviction API answers 429:
    `audit --plan --apply` waits --budget-wait seconds and stops naming the budget
    (exit 4). Once the controller keeps the status again, the same command evicts one
    pod at a time through the budget and the spread ends 2/2/2 (exit 0)."""
    skewed(cp, ns, nodes, 6, 6)
    cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(pdb(1)), check=True)
    cp.wait_for("the budget observed", lambda: budget_current(cp, ns))
    config = audit_token_kubeconfig(cp, webhook, ("--audit-rebalance",), tmp_path / "kc")
    apply = ["audit", "--kubeconfig", str(config), "--plan", "--apply", "--yes",
             "--budget-wait", "4", "--step-timeout", "60"]
    manager = cp.process("kube-controller-manager")
    manager.stop()
    try:
        cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(pdb(2)), check=True)
        assert not budget_current(cp, ns)
        stopped = topospread(*apply, check=False)
        assert stopped.returncode == 4, stopped.stdout + stopped.stderr
        assert f"{ns}/web" in stopped.stdout + stopped.stderr
        assert zones(cp, ns) == {"dis-z0": 6, "dis-z1": 0, "dis-z2": 0}
    finally:
        manager.start(timeout=120)
    cp.wait_for("the budget observed again", lambda: budget_current(cp, ns), timeout=60)
    # The plan's targets are feasible nodes, not the scheduler's picks: a replacement
    # sent to the other of two equally empty zones is a difference, and --replan goes on.
    done = topospread(*apply, "--replan", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert zones(cp, ns) == {"dis-z0": 2, "dis-z1": 2, "dis-z2": 2}
