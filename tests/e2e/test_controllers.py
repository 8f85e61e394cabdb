"""The controllers, side by side: kube-controller-manager's real ReplicaSet, Deployment and
node lifecycle controllers against the audit's drills, on nodes of the test's own."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import KWOK_LABEL, ControlPlane
from tests.e2e.webhook import topospread

ZONE = "topology.kubernetes.io/zone"
WORLD = "controllers"
ZONES = [f"ctl-z{i}" for i in range(3)]
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


@pytest.fixture(scope="module")
def nodes(cp: ControlPlane) -> Iterator[list[str]]:
    """Six nodes in three zones of their own; the workloads here select them."""
    with cp.world(WORLD, "ctl", ZONES) as names:
        yield names


def deployment(name: str, replicas: int, *, hard: bool = True) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {"metadata": {"labels": labels}, "spec": {
                "nodeSelector": {"world": WORLD},
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.test/web:1",
                                "resources": {"requests": {"cpu": "100m"}}}],
                "topologySpreadConstraints": [{
                    "maxSkew": 1, "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
                    "labelSelector": {"matchLabels": labels},
                    "matchLabelKeys": ["pod-template-hash"],
                }],
            }},
        },
    }


def live_pods(cp: ControlPlane, ns: str) -> list[dict[str, Any]]:
    return [p for p in cp.get("pods", "-n", ns)["items"]
            if not p["metadata"].get("deletionTimestamp")]


def ready(p: dict[str, Any]) -> bool:
    return bool(p["spec"].get("nodeName")) and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in p.get("status", {}).get("conditions", []))


def wait_ready(cp: ControlPlane, ns: str, n: int, timeout: float = 90) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]] | None:
        pods = live_pods(cp, ns)
        return pods if len(pods) == n and all(ready(p) for p in pods) else None
    return list(cp.wait_for(f"{n} Ready pods in {ns}", check, timeout))


def zones_of(cp: ControlPlane, pods: list[dict[str, Any]]) -> Counter[str]:
    node_zone = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE)
                 for n in cp.get("nodes")["items"]}
    return Counter(node_zone[p["spec"]["nodeName"]] for p in pods)


SNAPSHOT_KINDS = ("nodes,pods,namespaces,services,replicasets,statefulsets,"
                  "replicationcontrollers,deployments,daemonsets,jobs,cronjobs,pv,pvc,"
                  "storageclasses,csinodes,poddisruptionbudgets,priorityclasses")


def audit(cp: ControlPlane, *args: str) -> dict[str, Any]:
    """`topospread audit -o json` on the live cluster (or on a --snapshot among args)."""
    source = [] if "--snapshot" in args else ["--kubeconfig", str(cp.admin_kubeconfig)]
    out = topospread("audit", *source, "-o", "json", *args)
    assert out.returncode in (0, 1), out.stderr
    return dict(json.loads(out.stdout))


def snapshot(cp: ControlPlane, path: Path) -> Path:
    """The cluster as `kubectl get ... -A -o json` prints it: the audit's snapshot file."""
    path.write_text(cp.kubectl("get", SNAPSHOT_KINDS, "-A", "-o", "json", check=True).stdout)
    return path


def test_scale_down_deletes_the_pods_audit_predicted(
    cp: ControlPlane, nodes: list[str], ns: str, tmp_path: Path
) -> None:
    """`kubectl scale` 6 → 3: the ReplicaSet controller deletes exactly the pods
    `audit --scale` names for the state just before and the moment of the scale.

    The three pods added by the scale to 6 get a pod-deletion-cost of 100, so the first
    three go, although they have been Ready longest. The cost is the ranking's rule 4,
    before the log2 buckets of Ready age (rule 6) and everything after: the halves are
    told apart whatever the timing. Ready age alone cannot: the buckets of pods seconds
    apart are the same or not depending on the moment the controller sorts, which no
    one outside it knows, and a busy machine moves that moment by seconds."""
    cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(deployment("web", 3)),
               check=True)
    first = {p["metadata"]["name"] for p in wait_ready(cp, ns, 3)}
    cp.kubectl("scale", "-n", ns, "deployment/web", "--replicas=6", check=True)
    before = wait_ready(cp, ns, 6)
    added = sorted({p["metadata"]["name"] for p in before} - first)
    assert len(added) == 3
    cp.kubectl("annotate", "-n", ns, "pods", *added, f"{DELETION_COST}=100", check=True)
    state = snapshot(cp, tmp_path / "before.json")
    now = dt.datetime.now(dt.UTC)
    cp.kubectl("scale", "-n", ns, "deployment/web", "--replicas=3", check=True)
    predicted = audit(cp, "--snapshot", str(state), "--scale", f"deployment/{ns}/web=3",
                      "--now", now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    change = predicted["workloadChanges"][0]
    expected = {d["pod"].split("/", 1)[1] for d in change["deleted"]}
    assert expected == first
    after = wait_ready(cp, ns, 3)
    deleted = {p["metadata"]["name"] for p in before} - {p["metadata"]["name"] for p in after}
    assert deleted == expected


def test_rollout_ends_in_the_domains_audit_predicted(
    cp: ControlPlane, nodes: list[str], ns: str
) -> None:
    """`kubectl rollout restart`: the new ReplicaSet's pods end spread over the zones as
    `audit --rollout` says: the same counts per zone, up to which zone takes the odd pod
    (5 pods on 3 zones end 2/2/1; where the 1 goes is a score tie the scheduler breaks at
    random). Both the drill's created pods and its constraint entry must say so."""
    cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(deployment("web", 5)),
               check=True)
    wait_ready(cp, ns, 5)
    predicted = audit(cp, "--rollout", f"deployment/{ns}/web")
    entry = next(w for w in predicted["workloads"]
                 if w["name"] == "web" and w["namespace"] == ns)
    # One entry per ReplicaSet (matchLabelKeys has pod-template-hash): the new one's
    # holds every pod once the rollout is done.
    domains = max((c["domains"] for c in entry["constraints"]), key=lambda d: sum(d.values()))
    cp.kubectl("rollout", "restart", "-n", ns, "deployment/web", check=True)
    cp.kubectl("rollout", "status", "-n", ns, "deployment/web", "--timeout=120s",
               check=True, timeout=150)
    after = wait_ready(cp, ns, 5)
    got = zones_of(cp, after)
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE)
               for n in cp.get("nodes")["items"]}
    created = Counter(zone_of[c["node"]] for c in predicted["workloadChanges"][0]["created"])
    real = sorted(got.get(z, 0) for z in ZONES)
    assert sorted(created.get(z, 0) for z in ZONES) == real
    assert sorted(domains.get(z, 0) for z in ZONES) == real


def test_an_unreachable_zone_moves_replacements_where_audit_predicted(
    cp: ControlPlane, nodes: list[str], ns: str
) -> None:
    """One zone's kwok nodes stop heartbeating: the real node lifecycle controller taints
    them unreachable, taint-based eviction removes the pods (10 s toleration here) and the
    ReplicaSet's replacements land as `audit --unreachable-nodes` predicted."""
    cp.kubectl("apply", "-n", ns, "-f", "-",
               input=json.dumps(deployment("web", 6, hard=False)), check=True)
    wait_ready(cp, ns, 6)
    lost = ZONES[2]
    predicted = audit(cp, "--include-soft", "--unreachable-nodes", f"{ZONE}={lost}")
    entry = next(w for w in predicted["workloads"]
                 if w["name"] == "web" and w["namespace"] == ns)
    domains = entry["constraints"][0]["domains"]
    lost_nodes = [n for n in nodes if n.startswith(f"ctl-{lost[-1]}-")]
    try:
        for n in lost_nodes:
            cp.kubectl("label", "node", n, f"{KWOK_LABEL}-", check=True)

        def replaced() -> Counter[str] | None:
            pods = [p for p in live_pods(cp, ns) if ready(p)]
            zones = zones_of(cp, pods)
            return zones if len(pods) == 6 and zones.get(lost, 0) == 0 else None

        got = cp.wait_for("replacements outside the lost zone", replaced, timeout=150)
        assert {z: got.get(z, 0) for z in ZONES} == {z: domains.get(z, 0) for z in ZONES}
    finally:
        for n in lost_nodes:
            cp.kubectl("label", "node", n, f"{KWOK_LABEL}=true", "--overwrite")


def test_scale_down_deletes_the_unscheduled_pod_first_as_audit_predicted(
    cp: ControlPlane, nodes: list[str], ns: str, tmp_path: Path
) -> None:
    """A ReplicaSet of 2 with one pod bound and one Pending (required anti-affinity on one
    allowed node), scaled to 1: the ReplicaSet controller deletes the Pending pod
    (unassigned before assigned), and `audit --scale` says so, with no node."""
    obj = deployment("lone", 1)
    spec = obj["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"world": WORLD, "kubernetes.io/hostname": nodes[0]}
    spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "lone"}},
         "topologyKey": "kubernetes.io/hostname"}]}}
    cp.kubectl("apply", "-n", ns, "-f", "-", input=json.dumps(obj), check=True)
    bound = wait_ready(cp, ns, 1)[0]["metadata"]["name"]
    cp.kubectl("scale", "-n", ns, "deployment/lone", "--replicas=2", check=True)

    def pending() -> str | None:
        for p in live_pods(cp, ns):
            conds = p.get("status", {}).get("conditions", [])
            if any(c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"
                   for c in conds):
                return str(p["metadata"]["name"])
        return None

    waiting = cp.wait_for("the second pod Unschedulable", pending)
    state = snapshot(cp, tmp_path / "before.json")
    predicted = audit(cp, "--snapshot", str(state), "--scale", f"deployment/{ns}/lone=1")
    assert predicted["workloadChanges"][0]["deleted"] == [{"pod": f"{ns}/{waiting}",
                                                           "node": None}]
    cp.kubectl("scale", "-n", ns, "deployment/lone", "--replicas=1", check=True)
    after = wait_ready(cp, ns, 1)
    assert [p["metadata"]["name"] for p in after] == [bound]
