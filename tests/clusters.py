"""Hypothesis strategies for clusters shaped as real ones are, built from tests.builders:
the generators the workload, deletion-cost, drill and placement properties draw from.

    @examples(40)
    @given(workload_clusters())
    def test_...(c: Drawn) -> None: ClusterState.from_objects(c.objects) ...

What real clusters are full of, and each drawn cluster may hold:

- unscheduled pods (Pending, no node) and Pending pods already bound;
- pods whose selectors the API server merged (v1.34+: `pod-template-hash In [rev]`)
  beside clusters where it did not (older API servers);
- nodes without the topology label (outside every zone);
- terminating pods, and pods with a deletion cost somebody else set;
- another workload's pods matching the selector;
- a Deployment mid-rollout: two ReplicaSets (revisions) with pods.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.builders import DNS, ZONE, constraint, make_node, make_pod, selector

RawObj = dict[str, Any]

HASH = "pod-template-hash"
COST = "controller.kubernetes.io/pod-deletion-cost"
NS = "shop"
APP = {"app": "web"}
# The node without a zone, when drawn.
UNZONED = "nx"
# `make properties-deep` (HYPOTHESIS_PROFILE=long): the properties that draw from these
# clusters run DEEP examples each instead of their own count.
DEEP = 2000


def examples(n: int) -> settings:
    """Settings for a property drawing from these clusters: `n` examples, DEEP under the
    long profile; no deadline (a drill on a loaded machine takes its time)."""
    deep = os.environ.get("HYPOTHESIS_PROFILE") == "long"
    return settings(
        max_examples=DEEP if deep else n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )


@dataclass
class Drawn:
    """A drawn cluster: its objects, and what was drawn about it.

    revisions: the ReplicaSets of Deployment shop/web, oldest first; hashed: its
    constraint has pod-template-hash in matchLabelKeys; merged: the pods' selectors
    were merged at creation (a v1.34+ API server); zones: the zones with a node."""

    objects: list[RawObj]
    revisions: list[str]
    hashed: bool
    merged: bool
    max_skew: int
    zones: list[str] = field(default_factory=list)


def web_constraint(max_skew: int, hashed: bool) -> RawObj:
    extra: dict[str, Any] = {"matchLabelKeys": [HASH]} if hashed else {}
    return constraint(max_skew, ZONE, DNS, selector(APP), **extra)


def _owned(kind: str, name: str, replicas: int, owner: str, template: RawObj) -> RawObj:
    """A ReplicaSet or Deployment of namespace shop, with its template."""
    obj: RawObj = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {"replicas": replicas, "template": copy.deepcopy(template)},
    }
    if owner:
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner,
             "uid": f"uid-{owner}", "controller": True}
        ]  # fmt: skip
    return obj


@st.composite
def pod_state(draw: st.DrawFn, nodes: list[str]) -> tuple[str, str, str | None, bool]:
    """(node, or "" unscheduled; phase; Ready status or None; terminating)."""
    node = draw(st.sampled_from(["", *nodes, *nodes]))
    if not node:
        return "", "Pending", None, False
    phase = draw(st.sampled_from(["Running", "Running", "Running", "Pending"]))
    ready = draw(st.sampled_from(["True", "True", "False"])) if phase == "Running" else None
    return node, phase, ready, draw(st.integers(0, 7)) == 0


@st.composite
def workload_clusters(draw: st.DrawFn) -> Drawn:
    """2-5 zoned nodes in zones a-c (room for 2-6 pods), maybe a node without a zone;
    Deployment shop/web (zone constraint, maxSkew 1-2, pod-template-hash in
    matchLabelKeys or not) with one or two ReplicaSets of 0-5 pods each in any state
    of the module docstring; maybe 0-3 pods of Deployment shop/other matching its
    selector."""
    zones = "abc"
    n = draw(st.integers(2, 5))
    nodes = [
        make_node()
        .name(f"n{i}")
        .hostname()
        .zone(draw(st.sampled_from(zones)))
        .allocatable(cpu="4", memory="8Gi", pods=str(draw(st.integers(2, 6))))
        .obj()
        for i in range(n)
    ]
    if draw(st.booleans()):
        nodes.append(make_node().name(UNZONED).hostname().allocatable(cpu="4", memory="8Gi").obj())
    names = [node["metadata"]["name"] for node in nodes]
    hashed, merged = draw(st.booleans()), draw(st.booleans())
    max_skew = draw(st.integers(1, 2))
    spread = web_constraint(max_skew, hashed)
    template: RawObj = {
        "metadata": {"labels": dict(APP)},
        "spec": {
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
            "topologySpreadConstraints": [spread],
        },
    }
    revisions = [f"web-r{i}" for i in range(1, draw(st.integers(1, 2)) + 1)]
    total = 0
    objects: list[RawObj] = [*nodes]
    pods: list[RawObj] = []
    minute = 0
    for number, rs in enumerate(revisions, start=1):
        labels = {**APP, HASH: rs}
        count = draw(st.integers(0, 5))
        active = 0
        for j in range(count):
            node, phase, ready, terminating = draw(pod_state(names))
            minute += 1
            b = (
                make_pod()
                .name(f"{rs}-{j}")
                .namespace(NS)
                .uid(f"uid-{rs}-{j}")
                .labels(labels)
                .owner("ReplicaSet", rs, f"uid-{rs}")
                .phase(phase)
                .requests(cpu="100m")
                .constraints([spread])
            )
            if node:
                b = b.node(node)
            if ready is not None:
                b = b.ready(ready)
            if terminating:
                b = b.terminating()
            if draw(st.integers(0, 3)) == 0:
                b = b.annotation(COST, str(draw(st.integers(-5, 5))))
            pod = b.obj()
            pod["metadata"]["creationTimestamp"] = (
                f"2026-11-01T{minute // 60:02d}:{minute % 60:02d}:00Z"
            )
            if merged and hashed:
                pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] = [
                    {"key": HASH, "operator": "In", "values": [rs]}
                ]
            pods.append(pod)
            active += not terminating
        rs_template = {**template, "metadata": {"labels": labels}}
        rs_obj = _owned("ReplicaSet", rs, active, "web", rs_template)
        rs_obj["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": str(number)}
        rs_obj["metadata"]["creationTimestamp"] = f"2026-10-0{number}T00:00:00Z"
        objects.append(rs_obj)
        total += active
    objects.append(_owned("Deployment", "web", total, "", template))
    for j in range(draw(st.integers(0, 3))):
        other = (
            make_pod()
            .name(f"other-{j}")
            .namespace(NS)
            .uid(f"uid-other-{j}")
            .labels({**APP, HASH: "other"})
            .owner("ReplicaSet", "other-1", "uid-other-1")
            .node(draw(st.sampled_from(names)))
            .phase("Running")
            .ready()
            .requests(cpu="100m")
            .obj()
        )
        pods.append(other)
    zoned = sorted(
        {node["metadata"]["labels"][ZONE] for node in nodes if ZONE in node["metadata"]["labels"]}
    )
    return Drawn([*objects, *pods], revisions, hashed, merged, max_skew, zoned)
