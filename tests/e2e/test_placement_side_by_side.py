"""Placement, side by side: on generated clusters, kube-scheduler's binding against
`topospread simulate` (live, as users run it) and against the webhook's dry-run annotation.

Each world is a set of kwok nodes (zones and hostnames, some without a zone, taints,
capacity, labels, one cordoned) with existing pods bound to them (requests, labels, spreads,
pod affinity and anti-affinity). The incoming pods of a world are decided against the same
state: `simulate` predicts all of them at once, then each is created (its annotation written
by /mutate), bound or left Pending by kube-scheduler (percentageOfNodesToScore 100), and
deleted before the next. Before each pod is created the test waits until the webhook has
seen the deletion of the one before (`wait_seen`): the same state for all three. A case
counts as:

- agree: the scheduler bound it where we predicted (or left it Pending when we did);
- tie: the bound node is one of the nodes we score equal best (the scheduler picks one of
  them at random);
- disagree: anything else.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import ControlPlane, node_object
from tests.e2e.report import record
from tests.e2e.webhook import Webhook, topospread

WORLDS = int(os.environ.get("TOPOSPREAD_E2E_WORLDS", "20"))
PER_WORLD = int(os.environ.get("TOPOSPREAD_E2E_PODS_PER_WORLD", "25"))
APPS = ["a", "b", "c"]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
TAINT = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
DRY_RUN = {"topospread.io/dry-run": "true"}
# The default profile's score weights (pkg/scheduler/apis/config/v1/default_plugins.go):
# kube-scheduler logs each plugin's score already weighted, simulate before the weight.
WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
           "PodTopologySpread": 2, "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1,
           "ImageLocality": 1, "DynamicResources": 1}
# A node of no world, in no topology domain (no hostname or zone label): its pods mark a
# point in the pods watch that the webhook is then asked to see (wait_seen).
SENTINEL = "placement-sentinel"
SENTINEL_KEY = "topospread.test/sentinel"
SCORED = re.compile(r'"Plugin scored node for pod" pod="([^"]+)" plugin="([^"]+)" '
                    r'node="([^"]+)" score=(-?\d+)')


class ScoreLog:
    """kube-scheduler's -v=10 log read as it grows: each pod's scores once, from where the
    previous read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size

    def scores(self, pod: str) -> dict[tuple[str, str], int]:
        """(node, plugin) -> weighted score the scheduler logged for `pod` since last read."""
        out = {}
        with self.path.open("rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        self.offset += chunk.rfind(b"\n") + 1
        for m in SCORED.finditer(chunk.decode(errors="replace")):
            if m.group(1) == pod:
                out[(m.group(3), m.group(2))] = int(m.group(4))
        return out


def score_differences(sim: dict[str, Any], theirs: dict[tuple[str, str], int]
                      ) -> list[dict[str, Any]]:
    """Every (node, plugin) whose weighted score differs from the scheduler's log; a
    plugin the model does not run counts as 0."""
    ours = {(n["name"], plugin): score * WEIGHTS.get(plugin, 1)
            for n in sim["nodes"] if n.get("feasible")
            for plugin, score in (n.get("scores") or {}).items()}
    return [{"node": node, "plugin": plugin, "scheduler": value,
             "topospread": ours.get((node, plugin), 0)}
            for (node, plugin), value in sorted(theirs.items())
            if ours.get((node, plugin), 0) != value]


def world_nodes(rng: random.Random, world: str) -> list[dict[str, Any]]:
    zones = [f"{world}-z{i}" for i in range(rng.randint(2, 4))]
    nodes = []
    for i in range(rng.randint(4, 10)):
        zone: str | None = rng.choice(zones)
        if rng.random() < 0.08:
            zone = None
        labels = {"world": world}
        if rng.random() < 0.4:
            labels["disk"] = "ssd"
        node = node_object(
            f"{world}-n{i}", zone,
            cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 8, 16, 32])}Gi",
            pods=str(rng.choice([8, 20, 110])), labels=labels,
            taints=[dict(TAINT)] if rng.random() < 0.15 else None,
        )
        if rng.random() < 0.05:
            node["spec"]["unschedulable"] = True
        nodes.append(node)
    return nodes


def requests(rng: random.Random) -> dict[str, Any]:
    return {"requests": {"cpu": f"{rng.choice([0, 100, 250, 500, 1000, 1500])}m",
                         "memory": f"{rng.choice([0, 128, 512, 1024, 3072])}Mi"}}


def affinity_term(rng: random.Random) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
            "topologyKey": rng.choice([ZONE, HOST])}


def pod_affinity(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.25:
            out.setdefault(kind, {})["requiredDuringSchedulingIgnoredDuringExecution"] = [
                affinity_term(rng)]
        if rng.random() < 0.3:
            out.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.choice([1, 50, 100]), "podAffinityTerm": affinity_term(rng)}]
    return out


def spread(rng: random.Random, app: str) -> list[dict[str, Any]]:
    out = []
    for key in rng.sample([ZONE, HOST], rng.choice([0, 1, 1, 2])):
        c: dict[str, Any] = {
            "maxSkew": rng.choice([1, 1, 2]), "topologyKey": key,
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.2:
            c["minDomains"] = rng.choice([2, 3, 5])
        if rng.random() < 0.2:
            c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.2:
            c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        out.append(c)
    return out


def a_pod(rng: random.Random, name: str, world: str, *, node: str | None) -> dict[str, Any]:
    app = rng.choice(APPS)
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.test/app:1", "resources": requests(rng)}],
        "topologySpreadConstraints": spread(rng, app),
        "affinity": pod_affinity(rng),
        "terminationGracePeriodSeconds": 0,
    }
    if node is not None:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {"world": world}
        if rng.random() < 0.2:
            spec["affinity"]["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                ]}}
        elif rng.random() < 0.25:
            spec["affinity"]["nodeAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": rng.choice([1, 20, 80]), "preference": {"matchExpressions": [
                        {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}
        if rng.random() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "batch",
                                    "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app},
                         "annotations": dict(DRY_RUN) if node is None else {}},
            "spec": spec}


def sentinel_node() -> dict[str, Any]:
    node = node_object(SENTINEL, None, pods="1000", labels={SENTINEL_KEY: "yes"},
                       taints=[{"key": SENTINEL_KEY, "value": "yes", "effect": "NoSchedule"}])
    del node["metadata"]["labels"][HOST]
    return node


def wait_seen(cp: ControlPlane, ns: str, mark: str) -> int:
    """Wait until the webhook holds every pod event the API server has sent so far.

    kube-scheduler takes a new pod from the pods watch, after every earlier event of it;
    the webhook is asked about the pod before it is stored, and its own watch may not
    yet have delivered the previous pod's deletion. So a sentinel pod is bound to the
    sentinel node, labelled `mark`, and a dry-run pod that requires affinity to it is
    placed until the webhook finds it a node: a watch delivers events in order, so the
    deletion has arrived too. The webhook runs one worker for this test, so that answer
    holds for the next review as well. Returns how many probes it took.
    """
    mark_pod = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"mark-{mark}", "labels": {SENTINEL_KEY: mark}},
                "spec": {"nodeName": SENTINEL, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "c", "image": "registry.test/app:1"}]}}
    status, body = cp.api("POST", f"/api/v1/namespaces/{ns}/pods", mark_pod)
    assert status == 201, body
    near_mark = {"labelSelector": {"matchLabels": {SENTINEL_KEY: mark}},
                 "topologyKey": SENTINEL_KEY}
    probe = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"probe-{mark}", "annotations": dict(DRY_RUN)},
             "spec": {"nodeSelector": {SENTINEL_KEY: "yes"},
                      "tolerations": [{"key": SENTINEL_KEY, "operator": "Exists"}],
                      "containers": [{"name": "c", "image": "registry.test/app:1"}],
                      "affinity": {"podAffinity": {
                          "requiredDuringSchedulingIgnoredDuringExecution": [near_mark]}}}}

    probes = 0

    def seen() -> bool:
        nonlocal probes
        probes += 1
        status, body = cp.api("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All", probe)
        assert status == 201, body
        return bool(body["metadata"].get("annotations", {}).get(
            "topospread.io/selected-node") == SENTINEL)

    cp.wait_for(f"the webhook to see {ns}/mark-{mark}", seen, timeout=30, every=0.02)
    return probes


def bound_or_pending(cp: ControlPlane, ns: str, name: str, timeout: float = 20) -> str | None:
    """The node kube-scheduler bound the pod to, or None once it reports it unschedulable."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = cp.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
        assert status == 200, body
        if body["spec"].get("nodeName"):
            return str(body["spec"]["nodeName"])
        for cond in body.get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond.get("reason") == "Unschedulable":
                return None
        time.sleep(0.05)
    raise AssertionError(f"{ns}/{name} neither bound nor unschedulable after {timeout} s")


def delete_now(cp: ControlPlane, ns: str, name: str) -> None:
    cp.api("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}", {"gracePeriodSeconds": 0})
    cp.wait_for(f"{ns}/{name} gone",
                lambda: cp.api("GET", f"/api/v1/namespaces/{ns}/pods/{name}")[0] == 404,
                timeout=20, every=0.05)


def verdict(bound: str | None, selected: str | None, tied: list[str]) -> str:
    if bound == selected:
        return "agree"
    if bound is not None and bound in tied:
        return "tie"
    return "disagree"


def run_world(cp: ControlPlane, seed: int, tmp: Path) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    world = f"w{seed}"
    ns = cp.namespace(f"placement-{world}")
    nodes = world_nodes(rng, world)
    cp.add_nodes(nodes)
    try:
        schedulable = [n["metadata"]["name"] for n in nodes]
        existing = [a_pod(rng, f"old-{i}", world, node=rng.choice(schedulable))
                    for i in range(rng.randint(0, 3 * len(nodes)))]
        if existing:
            cp.kubectl("apply", "-n", ns, "-f", "-", check=True,
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": existing}))
        incoming = [a_pod(rng, f"new-{i}", world, node=None) for i in range(PER_WORLD)]
        path = tmp / f"{world}.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {**p, "metadata": {**p["metadata"], "namespace": ns}} for p in incoming]}))
        # kwok has made the existing pods Running; the scheduler's cache has them.
        cp.wait_for("existing pods Running", lambda: all(
            p.get("status", {}).get("phase") == "Running"
            for p in cp.get("pods", "-n", ns)["items"]), timeout=60)
        out = topospread("simulate", "--kubeconfig", str(cp.admin_kubeconfig), "-o", "json",
                         str(path))
        sims = json.loads(out.stdout)
        sims = sims if isinstance(sims, list) else [sims]
        assert len(sims) == len(incoming), out.stderr
        cases = []
        log = ScoreLog(cp.process("kube-scheduler").log)
        for pod, sim in zip(incoming, sims, strict=True):
            name = pod["metadata"]["name"]
            probes = wait_seen(cp, ns, name)
            status, created = cp.api("POST", f"/api/v1/namespaces/{ns}/pods", pod)
            assert status == 201, created
            notes = created["metadata"].get("annotations", {})
            annotated = notes.get("topospread.io/selected-node")
            bound = bound_or_pending(cp, ns, name)
            tied = sim.get("tiedNodes") or []
            placement = json.loads(notes.get("topospread.io/placement", "{}"))
            annotation_ties = [t["node"] for t in placement.get("top", [])
                               if placement.get("top") and
                               t.get("score") == placement["top"][0].get("score")]
            scores = log.scores(f"{ns}/{name}")
            cases.append({
                "world": world, "pod": name, "bound": bound, "probes": probes,
                "scoresCompared": len(scores),
                "scoreDifferences": score_differences(sim, scores),
                "simulate": sim.get("selectedNode"), "tied": tied,
                "annotation": annotated or None,
                "simulateVerdict": verdict(bound, sim.get("selectedNode"), tied),
                "annotationVerdict": verdict(bound, annotated or None, annotation_ties),
                "spec": pod["spec"],
            })
            delete_now(cp, ns, name)
        return cases
    finally:
        cp.kubectl("delete", "namespace", ns, "--wait=false")
        cp.kubectl("delete", "nodes", "-l", f"world={world}", "--wait=false")


def test_placements_equal_kube_schedulers_bindings(
    cp: ControlPlane, webhook: Webhook, tmp_path: Path
) -> None:
    cases: list[dict[str, Any]] = []
    cp.add_nodes([sentinel_node()])
    assert HOST not in cp.get("node", SENTINEL)["metadata"]["labels"]
    webhook.restart(workers=1)
    try:
        for seed in range(WORLDS):
            cases += run_world(cp, seed, tmp_path)
    finally:
        webhook.restart(workers=2)
        cp.kubectl("delete", "node", SENTINEL, "--wait=false")
    sim = Counter(c["simulateVerdict"] for c in cases)
    ann = Counter(c["annotationVerdict"] for c in cases)
    pending = sum(c["bound"] is None for c in cases)
    compared = sum(c["scoresCompared"] for c in cases)
    differing = Counter(d["plugin"] for c in cases for d in c["scoreDifferences"])
    minor = cp.minor
    record("placement-scores", minor, {"cases": len(cases), "scores": compared,
                                       "differ": sum(differing.values()), **differing},
           [c for c in cases if c["scoreDifferences"]][:50])
    record("placement-simulate", minor, {"cases": len(cases), **sim, "pending": pending},
           [c for c in cases if c["simulateVerdict"] == "disagree"])
    record("placement-annotation", minor, {"cases": len(cases), **ann},
           [c for c in cases if c["annotationVerdict"] == "disagree"])
    print(f"\nplacement side by side (v{minor}): {len(cases)} cases ({pending} pending); "
          f"simulate: {sim['agree']} agree, {sim['tie']} tie, {sim['disagree']} disagree; "
          f"annotation: {ann['agree']} agree, {ann['tie']} tie, {ann['disagree']} disagree; "
          f"per-plugin scores: {compared} compared, {sum(differing.values())} differ "
          f"{dict(differing)}; the webhook was behind the API server before "
          f"{sum(c['probes'] > 1 for c in cases)} cases")
    bad = [c for c in cases if c["simulateVerdict"] == "disagree"]
    assert not bad, json.dumps(bad[:3], indent=1)
    bad = [c for c in cases if c["annotationVerdict"] == "disagree"]
    assert not bad, json.dumps(bad[:3], indent=1)
    assert compared > 0 and not differing, dict(differing)
