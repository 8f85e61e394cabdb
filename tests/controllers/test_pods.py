"""The one builder of new pods: the API server's merge at creation per version
(strategy.go: mutateTopologySpreadConstraints, mutatePodAffinity), the template read
back from a merged or unmerged pod, and a new pod built from it merged once."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.builders import DNS, ZONE, make_pod, selector
from webhook.controllers.pods import merge_at_creation, new_pod, recreated, template_of

RawObj = dict[str, Any]
HASH = "pod-template-hash"
APP = selector({"app": "web"})
OWNER = {"kind": "ReplicaSet", "name": "web-new", "uid": "uid-web-new"}


def spread_pod(hash_value: str, merged_with: list[str] | None = None) -> RawObj:
    """A pod of revision `hash_value` with pod-template-hash in matchLabelKeys; its
    selector carries `In [v]` for each value of `merged_with` (what a merge appended)."""
    pod = (
        make_pod()
        .name(f"web-{hash_value}-1")
        .labels({"app": "web", HASH: hash_value})
        .owner("ReplicaSet", f"web-{hash_value}", f"uid-web-{hash_value}")
        .node("n1")
        .spread(1, ZONE, DNS, APP, matchLabelKeys=[HASH])
        .obj()
    )
    if merged_with:
        pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] = [
            {"key": HASH, "operator": "In", "values": [v]} for v in merged_with
        ]
    return pod


def affinity_pod() -> RawObj:
    """A pod with a required anti-affinity term: matchLabelKeys [app], mismatchLabelKeys
    [tenant]."""
    pod = make_pod().name("p").labels({"app": "web", "tenant": "t1"}).obj()
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": ZONE,
                    "labelSelector": {"matchLabels": {"role": "db"}},
                    "matchLabelKeys": ["app"],
                    "mismatchLabelKeys": ["tenant"],
                }
            ]
        }
    }
    return pod


def exprs_of(pod: RawObj) -> Any:
    return pod["spec"]["topologySpreadConstraints"][0]["labelSelector"].get("matchExpressions")


def term_exprs(pod: RawObj) -> Any:
    anti = pod["spec"]["affinity"]["podAntiAffinity"]
    return anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"].get(
        "matchExpressions"
    )


IN_A = [{"key": HASH, "operator": "In", "values": ["a"]}]
AFFINITY_MERGED = [
    {"key": "app", "operator": "In", "values": ["web"]},
    {"key": "tenant", "operator": "NotIn", "values": ["t1"]},
]


# version, the spread selector's matchExpressions after the merge, the affinity term's
@pytest.mark.parametrize(
    ("version", "spread", "affinity"),
    [
        (None, IN_A, AFFINITY_MERGED),
        ((1, 34), IN_A, AFFINITY_MERGED),
        ((1, 33), None, AFFINITY_MERGED),
        ((1, 31), None, AFFINITY_MERGED),
        ((1, 30), None, None),
    ],
    ids=["newest", "v1.34 merges both", "v1.33 affinity only", "v1.31 affinity only", "v1.30"],
)
def test_merge_at_creation_per_version(
    version: tuple[int, int] | None, spread: Any, affinity: Any
) -> None:
    pod = spread_pod("a")
    pod["spec"]["affinity"] = affinity_pod()["spec"]["affinity"]
    pod["metadata"]["labels"]["tenant"] = "t1"
    before = copy.deepcopy(pod)
    out = merge_at_creation(pod, version)
    assert exprs_of(out) == spread
    assert term_exprs(out) == affinity
    assert pod == before


# case, the pod, the template's selector matchExpressions read back
@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (spread_pod("a", ["a"]), None),
        (spread_pod("a"), None),
        # Someone's own requirement before the merged one stays.
        (spread_pod("a", ["x", "a"]), [{"key": HASH, "operator": "In", "values": ["x"]}]),
        # Not what the merge appends for this pod (another value): left as it is.
        (spread_pod("a", ["b"]), [{"key": HASH, "operator": "In", "values": ["b"]}]),
    ],
    ids=["merged (v1.34+)", "unmerged (older)", "own requirement kept", "foreign value kept"],
)
def test_template_of_strips_what_the_merge_appended(pod: RawObj, expected: Any) -> None:
    template = template_of(pod)
    assert exprs_of(template) == expected
    assert "nodeName" not in template["spec"]
    assert template["metadata"] == {"labels": pod["metadata"]["labels"]}


def test_template_of_strips_an_affinity_terms_merge() -> None:
    merged = merge_at_creation(affinity_pod())
    assert term_exprs(template_of(merged)) is None


@pytest.mark.parametrize("merged", [True, False], ids=["v1.34+ pod", "older pod"])
def test_a_new_revision_built_from_an_old_pod_is_merged_once_with_its_own_hash(
    merged: bool,
) -> None:
    """Old pod `In [old]` (or unmerged): the new pod carries `In [new]` only, not a
    selector matching nothing."""
    old = spread_pod("old", ["old"] if merged else None)
    fresh = new_pod(template_of(old), "web-new-1", "shop", OWNER, labels={HASH: "new"})
    assert exprs_of(fresh) == [{"key": HASH, "operator": "In", "values": ["new"]}]
    assert fresh["metadata"]["labels"] == {"app": "web", HASH: "new"}
    assert fresh["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", **OWNER, "controller": True}
    ]
    assert "nodeName" not in fresh["spec"] and "status" not in fresh


def test_new_pod_on_an_older_api_server_keeps_the_selector_unmerged() -> None:
    template = template_of(spread_pod("old"))
    fresh = new_pod(
        template,
        "web-new-1",
        "shop",
        OWNER,
        labels={HASH: "new"},
        now=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
        server_version=(1, 33),
    )
    assert exprs_of(fresh) is None
    assert fresh["metadata"]["creationTimestamp"] == "2026-11-27T12:00:00Z"
    assert fresh["metadata"]["uid"] == "drill-shop-web-new-1"


def test_recreated_keeps_identity_labels_and_controller() -> None:
    """A node drill's replacement: the same name, UID, creation time, labels and
    controller; no node; a deletion cost set on the old pod is not carried over."""
    old = spread_pod("a", ["a"])
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    old["metadata"]["uid"] = "uid-web-a-1"
    old["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": "7"}
    back = recreated(old)
    m = back["metadata"]
    assert (m["name"], m["uid"], m["creationTimestamp"]) == (
        "web-a-1",
        "uid-web-a-1",
        "2026-01-01T00:00:00Z",
    )
    assert m["labels"] == old["metadata"]["labels"] and "annotations" not in m
    assert m["ownerReferences"][0]["name"] == "web-a"
    assert exprs_of(back) == IN_A and "nodeName" not in back["spec"]
    assert recreated(old, "web-a-1-new")["metadata"]["name"] == "web-a-1-new"
