"""Dry-run placement annotations through /mutate, and what happens when cluster state fails.

Legend: a cluster is drawn as node(zone)[matching pods]; `web` pods carry app=web and
every constraint here selects app=web. Scores are PodTopologySpread's after
NormalizeScore, worked out by hand from upstream's scoring.go: raw score per node =
sum over ScheduleAnyway constraints of matching pods in its domain * log(domains + 2)
+ (maxSkew - 1), rounded (the hostname weight counts the scored nodes as domains);
normalised as 100 * (max + min - raw) / max, integer division; nodes ignored for
lacking a topology key score 0.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest

from tests import paths
from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    RawObj,
    make_node,
    make_pod,
    review,
    selector,
    workload,
)
from tests.scheduler.frameworks import spread_only_settings
from webhook.admission.annotate import DRY_RUN, PLACEMENT, SCALE_UP_ENTRIES, SELECTED_NODE
from webhook.admission.context import ReviewContext
from webhook.admission.handlers import answer_review
from webhook.cluster.source import StaticSource
from webhook.config import Settings
from webhook.scheduler import placement
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.server.app import create_app

WEB = {"app": "web"}
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
UNSCHEDULABLE = "node(s) were unschedulable"


def node(name: str, zone: str | None = None) -> Any:
    builder = make_node().name(name).hostname()
    return builder.zone(zone) if zone else builder


def web_pod(name: str, on: str) -> RawObj:
    return make_pod().name(name).labels(WEB).node(on).obj()


def incoming(when: str = SA, key: str = ZONE) -> Any:
    return make_pod().name("web").labels(WEB).spread(1, key, when, selector(WEB))


# a1(a)[1] a2(a)[0] b1(b)[0]; incoming zone maxSkew 1 ScheduleAnyway.
# zone a holds 1, zone b 0; weight log(2+2); raw a1 = a2 = round(1.386) = 1, b1 = 0;
# normalised a1 = a2 = 100 * (1 + 0 - 1) / 1 = 0, b1 = 100 * (1 + 0 - 0) / 1 = 100.
SPREAD_CLUSTER = [
    node("a1", "a").obj(), node("a2", "a").obj(), node("b1", "b").obj(), web_pod("w1", "a1")
]
# post() serves a v1.34 API server: the oldest supported release, v1.35, is modelled.
SPREAD_PLACEMENT = {
    "kubernetesVersion": "1.35",
    "selectedNode": "b1",
    "feasible": 3,
    "nodes": 3,
    "top": [{"node": "b1", "score": 100}, {"node": "a1", "score": 0}, {"node": "a2", "score": 0}],
    "preemption": None,
    "reasons": {},
    "distribution": {ZONE: {"a": 1, "b": 0}},
}

# a1(a)[2] b1(b, unschedulable)[0]; incoming zone maxSkew 1 DoNotSchedule.
# a1: 2 + 1 - 0 = 3 > 1 fails the spread; b1 passes it but is cordoned.
BLOCKED_CLUSTER = [
    node("a1", "a").obj(), node("b1", "b").unschedulable().obj(),
    web_pod("w1", "a1"), web_pod("w2", "a1"),
]
BLOCKED_PLACEMENT = {
    "kubernetesVersion": "1.35",
    "selectedNode": None,
    "feasible": 0,
    "nodes": 2,
    "top": [],
    "preemption": None,
    "reasons": {SPREAD_MISMATCH: 1, UNSCHEDULABLE: 1},
    "distribution": {ZONE: {"a": 2, "b": 0}},
    "scaleUp": [],
    "scaleUpReason": "no new node would help: no node group to add a node from (no node "
    "carries any of the labels karpenter.sh/nodepool, eks.amazonaws.com/nodegroup, "
    "cloud.google.com/gke-nodepool, kubernetes.azure.com/agentpool, "
    "node.kubernetes.io/instance-type)",
}
# The same nodes in node group "general": a new node of the group in zone b (not
# cordoned, as a new node is) takes the pod; one in zone a would break the spread.
NODEGROUP = "eks.amazonaws.com/nodegroup"
GROUPED_CLUSTER = [
    node("a1", "a").label(NODEGROUP, "general").obj(),
    node("b1", "b").label(NODEGROUP, "general").unschedulable().obj(),
    web_pod("w1", "a1"),
    web_pod("w2", "a1"),
]
GROUPED_PLACEMENT = {
    **BLOCKED_PLACEMENT,
    "scaleUp": [{"group": "general", "zone": "b"}],
    "scaleUpReason": "fits on a new node of group general in zone b",
}


def post(
    cluster: list[RawObj] | None,
    pod: RawObj,
    settings: Settings | None = None,
    **review_kw: Any,
) -> RawObj:
    """/mutate's response for `pod` against `cluster` (None: a source never synced)."""
    snapshot = Snapshot.from_objects(cluster) if cluster is not None else None
    app = create_app(settings or spread_only_settings(), source=StaticSource(snapshot, (1, 34)))
    with app.test_client() as client:
        response: RawObj = client.post("/mutate", json=review(pod, **review_kw)).get_json()[
            "response"
        ]
    assert response["allowed"] is True
    return response


def ops(response: RawObj) -> list[RawObj]:
    return json.loads(base64.b64decode(response["patch"])) if "patch" in response else []


def patched(pod: RawObj, response: RawObj) -> RawObj:
    return jsonpatch.apply_patch(pod, ops(response))


def annotations(pod: RawObj) -> dict[str, str]:
    return dict(pod["metadata"].get("annotations") or {})


# ---------------------------------------------------------------------------------------
# When the annotations are written


@pytest.mark.parametrize(
    ("dry_run", "annotation", "written"),
    [
        (True, None, True),
        (False, "true", True),
        (True, "false", True),
        (False, None, False),
        (False, "false", False),
        (False, "True", False),
    ],
    ids=["request dryRun", "pod annotation", "request dryRun wins over annotation false",
         "neither", "annotation false", "annotation must be exactly true"],
)
def test_annotations_written_on_dry_run_or_request(
    dry_run: bool, annotation: str | None, written: bool
) -> None:
    """request.dryRun or topospread.io/dry-run: "true" asks for the annotations."""
    pod = incoming().obj()
    if annotation is not None:
        pod["metadata"]["annotations"] = {DRY_RUN: annotation}
    got = annotations(patched(pod, post(SPREAD_CLUSTER, pod, dry_run=dry_run)))
    if written:
        assert got[SELECTED_NODE] == "b1"
        assert json.loads(got[PLACEMENT]) == SPREAD_PLACEMENT
    else:
        assert SELECTED_NODE not in got and PLACEMENT not in got


@pytest.mark.parametrize(
    ("cluster", "pod", "selected", "summary"),
    [
        (SPREAD_CLUSTER, incoming().obj(), "b1", SPREAD_PLACEMENT),
        (BLOCKED_CLUSTER, incoming(DNS).obj(), "", BLOCKED_PLACEMENT),
        (GROUPED_CLUSTER, incoming(DNS).obj(), "", GROUPED_PLACEMENT),
    ],
    ids=[
        "spread to the emptier zone",
        "unschedulable: empty selected node, reasons counted, no node group",
        "unschedulable: a new node of the group in the zone the spread allows",
    ],
)
def test_annotation_values(
    cluster: list[RawObj], pod: RawObj, selected: str, summary: RawObj
) -> None:
    """selected-node and placement hold the modelled decision, as interfaces.md shapes it."""
    got = annotations(patched(pod, post(cluster, pod, dry_run=True)))
    assert got[SELECTED_NODE] == selected
    assert json.loads(got[PLACEMENT]) == summary


@pytest.mark.parametrize(
    ("obj", "operation"),
    [
        (incoming().obj(), "UPDATE"),
        (workload("Deployment", incoming().obj()), "CREATE"),
    ],
    ids=["pod update", "deployment template"],
)
def test_only_created_pods_are_annotated(obj: RawObj, operation: str) -> None:
    """Placement is for a Pod being created; updates and templates are left alone."""
    old = obj if operation == "UPDATE" else None
    assert ops(post(SPREAD_CLUSTER, obj, dry_run=True, operation=operation, old=old)) == []


# n0 has no zone label; a1 is in zone a; nothing matches yet.
# Injected (explicit) System defaults: n0 lacks a key, so it is ignored (score 0) and a1
# wins. Left to the scheduler (internal System defaults): n0 is scored on hostname alone,
# raw 0 + (3 - 1) = 2, a1 adds the zone term 0 + (5 - 1): raw 6; n0 = 100 * (6 + 2 - 2) / 6
# = 100 wins over a1 = 100 * (6 + 2 - 6) / 6 = 33.
NO_ZONE_CLUSTER = [
    node("a1", "a").obj(),
    node("n0").obj(),
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
     "spec": {"selector": WEB}},
]


@pytest.mark.parametrize(
    ("inject", "selected"),
    [(True, "a1"), (False, "n0")],
    ids=["defaults injected", "defaults left to the scheduler"],
)
def test_placement_sees_the_pod_as_mutated(inject: bool, selected: str) -> None:
    """The pod is placed with the constraints the earlier steps injected."""
    pod = make_pod().name("web").labels(WEB).obj()
    response = post(NO_ZONE_CLUSTER, pod, spread_only_settings(injectDefaults=inject), dry_run=True)
    got = patched(pod, response)
    assert bool(got["spec"].get("topologySpreadConstraints")) is inject
    assert got["metadata"]["annotations"][SELECTED_NODE] == selected
    assert json.loads(got["metadata"]["annotations"][PLACEMENT])["top"][0] == {
        "node": selected, "score": 100
    }


def test_two_calls_give_the_same_patch() -> None:
    """No timestamps or random ids: the same review twice gives byte-identical patches."""
    pod = incoming().obj()
    first = post(SPREAD_CLUSTER, pod, dry_run=True)
    second = post(SPREAD_CLUSTER, pod, dry_run=True)
    assert first["patch"] == second["patch"]


def test_reinvocation_with_annotations_present_changes_nothing() -> None:
    """reinvocationPolicy IfNeeded: the mutated pod sent again gets no patch."""
    pod = make_pod().name("web").labels(WEB).obj()
    cluster = [*SPREAD_CLUSTER, NO_ZONE_CLUSTER[2]]
    once = patched(pod, post(cluster, pod, dry_run=True))
    assert PLACEMENT in annotations(once)
    assert once["spec"]["topologySpreadConstraints"]
    again = post(cluster, once, dry_run=True)
    assert "patch" not in again
    assert again.get("warnings", []) == []


def test_existing_annotations_are_kept() -> None:
    """Only the two placement annotations are added; the pod's own stay as they were."""
    pod = incoming().obj()
    pod["metadata"]["annotations"] = {"team": "web", DRY_RUN: "true"}
    got = annotations(patched(pod, post(SPREAD_CLUSTER, pod)))
    assert set(got) == {"team", DRY_RUN, SELECTED_NODE, PLACEMENT}
    assert got["team"] == "web"


# ---------------------------------------------------------------------------------------
# 32 KiB whatever the cluster size


def test_annotations_stay_under_32_kib_on_5000_nodes() -> None:
    """5,000 nodes in 50 zones, a hostname spread: every node is a domain, yet the
    annotations stay under 32 KiB and say how many domains were left out."""
    nodes = [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"node-{i:04d}",
                      "labels": {HOSTNAME: f"node-{i:04d}", ZONE: f"zone-{i % 50:02d}"}}}
        for i in range(5000)
    ]
    pods = [web_pod(f"w{i}", f"node-{i:04d}") for i in range(0, 5000, 7)]
    pod = incoming(SA, HOSTNAME).obj()
    got = annotations(patched(pod, post(nodes + pods, pod, dry_run=True)))
    size = sum(len(k.encode()) + len(v.encode()) for k, v in got.items())
    assert size < 32 * 1024
    summary = json.loads(got[PLACEMENT])
    assert summary["nodes"] == 5000
    assert summary["feasible"] == 5000
    assert len(summary["top"]) == 10
    kept = len(summary["distribution"][HOSTNAME])
    assert kept + summary["omittedDomains"][HOSTNAME] == 5000
    # Domains with most pods are kept first: the 715 nodes holding a web pod (every 7th) all stay.
    assert sum(summary["distribution"][HOSTNAME].values()) == 715


def test_scale_up_entries_are_capped_under_32_kib() -> None:
    """1,000 cordoned nodes in 25 zones and 4 node groups: 100 templates would each take
    the pod; 20 are listed, the rest counted, and the annotations stay under 32 KiB."""
    nodes = [
        node(f"node-{i:04d}", f"zone-{i % 25:02d}").label(NODEGROUP, f"pool-{i % 4}")
        .unschedulable().obj()
        for i in range(1000)
    ]  # fmt: skip
    pod = incoming(DNS, HOSTNAME).obj()
    got = annotations(patched(pod, post(nodes, pod, dry_run=True)))
    assert sum(len(k.encode()) + len(v.encode()) for k, v in got.items()) < 32 * 1024
    summary = json.loads(got[PLACEMENT])
    assert len(summary["scaleUp"]) == SCALE_UP_ENTRIES
    assert summary["scaleUp"][:2] == [
        {"group": "pool-0", "zone": "zone-00"},
        {"group": "pool-0", "zone": "zone-01"},
    ]
    assert summary["scaleUpOmitted"] == 100 - SCALE_UP_ENTRIES
    assert summary["scaleUpReason"].startswith(
        "fits on a new node of group pool-0 in zone zone-00 (also group pool-0 in zone zone-01,"
    )
    assert len(summary["scaleUpReason"]) <= 256


# ---------------------------------------------------------------------------------------
# Cluster state trouble never blocks a pod


class BrokenSnapshot:
    """A snapshot whose every read fails, as a model bug would."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"model failure reading {name}")


class UnsyncedSource:
    """A source still listing: not synced, no snapshot (as LiveSource before its first list)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def synced(self) -> bool:
        return False

    def snapshot(self) -> None:
        return None

    def server_version(self) -> tuple[int, int] | None:
        return (1, 33)


HASH = "7c9f8d6b5"


def merge_pod() -> RawObj:
    """Has matchLabelKeys to merge (an API-rule patch) and asks for a placement."""
    return (
        make_pod().name("web").labels({**WEB, "pod-template-hash": HASH})
        .annotation(DRY_RUN, "true")
        .spread(1, ZONE, DNS, selector(WEB), matchLabelKeys=["pod-template-hash"])
        .obj()
    )


def bare_pod() -> RawObj:
    """No constraints (injection wanted) and asks for a placement."""
    return make_pod().name("web").labels(WEB).annotation(DRY_RUN, "true").obj()


MERGE_OPS = [
    {"op": "add", "path": "/metadata/annotations/topospread.io~1merged-match-label-keys",
     "value": '{"0":["pod-template-hash"]}'},
    {"op": "remove", "path": "/spec/topologySpreadConstraints/0/matchLabelKeys"},
    {"op": "add", "path": "/spec/topologySpreadConstraints/0/labelSelector/matchExpressions",
     "value": [{"key": "pod-template-hash", "operator": "In", "values": [HASH]}]},
]
NOT_INJECTED = "spec.topologySpreadConstraints: default constraints not injected"
NOT_ANNOTATED = f"metadata.annotations[{PLACEMENT}]: placement annotations not written"


def answer_with(snapshot: Any, pod: RawObj, version: tuple[int, int] | None = (1, 33)) -> RawObj:
    ctx = ReviewContext(settings=spread_only_settings(), server_version=version, snapshot=snapshot)
    body = json.dumps(review(pod)).encode()
    answer = answer_review(body, "mutate", ctx)
    assert answer.status == 200
    response: RawObj = answer.doc["response"]
    assert response["allowed"] is True
    return response


def sorted_ops(patch: list[RawObj]) -> list[RawObj]:
    return sorted(patch, key=lambda op: (op["path"], op["op"]))


def trouble_cases() -> list[Any]:
    return [
        pytest.param(lambda pod: answer_with(None, pod), id="snapshot None"),
        pytest.param(lambda pod: answer_with(BrokenSnapshot(), pod), id="model raising"),
        pytest.param(lambda pod: unsynced(pod), id="source not synced"),
    ]


def unsynced(pod: RawObj) -> RawObj:
    app = create_app(Settings(), source=UnsyncedSource())  # type: ignore[arg-type]
    with app.test_client() as client:
        response: RawObj = client.post("/mutate", json=review(pod)).get_json()["response"]
    assert response["allowed"] is True
    return response


@pytest.mark.parametrize("run", trouble_cases())
def test_trouble_keeps_the_merge_patch_and_warns(run: Any) -> None:
    """The API-rule patch (matchLabelKeys merge, v1.33) still comes; the placement is
    skipped with a warning."""
    response = run(merge_pod())
    assert sorted_ops(ops(response)) == sorted_ops(MERGE_OPS)
    assert [w for w in response["warnings"] if w.startswith(NOT_ANNOTATED)] != []


@pytest.mark.parametrize("run", trouble_cases())
def test_trouble_skips_injection_and_annotations_with_warnings(run: Any) -> None:
    """A pod wanting defaults and a placement is allowed unchanged, with both warnings."""
    response = run(bare_pod())
    assert "patch" not in response
    warnings = response["warnings"]
    assert len(warnings) == 2
    assert warnings[0].startswith(NOT_INJECTED)
    assert warnings[1].startswith(NOT_ANNOTATED)


def test_placement_raising_still_injects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the failing step is skipped: the defaults are still injected."""

    def boom(*_args: Any, **_kw: Any) -> Any:
        raise RuntimeError("model failure")

    monkeypatch.setattr(placement, "place", boom)
    pod = bare_pod()
    response = answer_with(Snapshot.from_objects(NO_ZONE_CLUSTER), pod)
    assert [w.startswith(NOT_ANNOTATED) for w in response["warnings"]] == [True]
    got = patched(pod, response)
    assert [c["topologyKey"] for c in got["spec"]["topologySpreadConstraints"]] == [HOSTNAME, ZONE]
    assert PLACEMENT not in annotations(got)


def test_no_warning_when_nothing_needs_the_cluster_state() -> None:
    """A pod with constraints and no dry run does not need the cluster state: no warning."""
    pod = incoming().obj()
    assert "warnings" not in answer_with(None, pod)


# ---------------------------------------------------------------------------------------
# The example of docs/dry-run.md, on the demo snapshot

DEMO = paths.DEMO_SNAPSHOT


def test_documented_example_on_the_demo_snapshot() -> None:
    """docs/dry-run.md's api-canary pod: System defaults injected with the Service api
    selector, then placed.

    Nodes a1 a2 (eu-west-1a), b1 b2 (1b), c1 c2 (1c; c2 cordoned and tainted); api pods on
    a1, b1, b2. Five nodes scored: hostname weight log(5 + 2) = 1.946, zone weight
    log(3 + 2) = 1.609; raw = host count * 1.946 + 2 + zone count * 1.609 + 4:
    c1 0+0 -> 6, a2 0+1 -> 8, a1 1+1 -> 10, b1 and b2 1+2 -> 11;
    100 * (11 + 6 - raw) / 11: c1 100, a2 81, a1 63, b1 54, b2 54.
    """
    from webhook.cluster.files import load_snapshot

    pod = (
        make_pod().name("api-canary").namespace("shop")
        .labels({"app": "api", "tier": "backend"}).requests(cpu="250m").obj()
    )
    ctx = ReviewContext(settings=spread_only_settings(), snapshot=load_snapshot(DEMO))
    answer = answer_review(json.dumps(review(pod, dry_run=True)).encode(), "mutate", ctx)
    got = patched(pod, answer.doc["response"])
    api = {"matchLabels": {"app": "api", "tier": "backend"}}
    assert got["spec"]["topologySpreadConstraints"] == [
        {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA, "labelSelector": api},
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": SA, "labelSelector": api},
    ]
    assert got["metadata"]["annotations"][SELECTED_NODE] == "node-c1"
    assert json.loads(got["metadata"]["annotations"][PLACEMENT]) == {
        "kubernetesVersion": "1.37",  # no cluster version: the newest
        "selectedNode": "node-c1",
        "feasible": 5,
        "nodes": 6,
        "top": [
            {"node": "node-c1", "score": 100}, {"node": "node-a2", "score": 81},
            {"node": "node-a1", "score": 63}, {"node": "node-b1", "score": 54},
            {"node": "node-b2", "score": 54},
        ],
        "preemption": None,
        "reasons": {
            "node(s) had untolerated taint(s)": 1,
            UNSCHEDULABLE: 1,
        },
        "distribution": {
            HOSTNAME: {"node-a1": 1, "node-a2": 0, "node-b1": 1, "node-b2": 1, "node-c1": 0,
                       "node-c2": 0},
            ZONE: {"eu-west-1a": 1, "eu-west-1b": 2, "eu-west-1c": 0},
        },
    }


# ---------------------------------------------------------------------------------------
# Pods no scheduling cycle is run for


@pytest.mark.parametrize(
    ("pod", "not_scheduled"),
    [
        (
            incoming().scheduling_gates("example.com/quota").obj(),
            {
                "reason": "SchedulingGated",
                "message": "waiting for scheduling gates: [example.com/quota]",
                "plugin": "SchedulingGates",
            },
        ),
        (
            incoming().resource_claim("gpu").obj(),
            {
                "reason": "NotModelled",
                "message": "not modelled: DynamicResources",
                "plugin": "DynamicResources",
            },
        ),
        (
            incoming().scheduler_name("volcano").obj(),
            {"reason": "OtherScheduler", "message": 'schedulerName "volcano" has no profile here'},
        ),
    ],
    ids=["gated", "resource claims", "another scheduler's"],
)
def test_the_annotation_says_why_a_pod_is_not_placed(pod: RawObj, not_scheduled: RawObj) -> None:
    """The spread cluster would put the pod on b1; instead selected-node is empty and the
    placement carries notScheduled beside every key of interfaces.md's shape."""
    got = annotations(patched(pod, post(SPREAD_CLUSTER, pod, Settings(), dry_run=True)))
    assert got[SELECTED_NODE] == ""
    assert json.loads(got[PLACEMENT]) == {
        "selectedNode": None,
        "feasible": 0,
        "nodes": 0,
        "top": [],
        "reasons": {},
        "distribution": {},
        "preemption": None,
        "notScheduled": not_scheduled,
        "kubernetesVersion": "1.35",
    }
