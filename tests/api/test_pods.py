"""The pod nouns every layer shares: readiness, the controller reference, "namespace/name"."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.api.kube import controller_of, named_controller_of
from webhook.api.pods import is_ready, pod_key, ready_condition

RawObj = dict[str, Any]


def pod(phase: str | None = None, *conditions: RawObj) -> RawObj:
    status: RawObj = {}
    if phase is not None:
        status["phase"] = phase
    if conditions:
        status["conditions"] = list(conditions)
    return {"kind": "Pod", "metadata": {"name": "p"}, "status": status}


def ready(status: Any) -> RawObj:
    return {"type": "Ready", "status": status}


SCHEDULED = {"type": "PodScheduled", "status": "True"}


# Follows pkg/api/v1/pod/util.go: IsPodReady (GetPodReadyCondition's status == "True"),
# which the ReplicaSet controller's ranking, the disruption controller's healthy count
# and the Eviction API all read. The three copies this replaced disagreed on the rows
# marked *: one took a Running pod reporting no Ready condition as Ready, one wanted
# phase Running besides the condition.
@pytest.mark.parametrize(
    ("case", "obj", "want"),
    [
        ("Ready True, Running", pod("Running", ready("True")), True),
        ("Ready False, Running", pod("Running", ready("False")), False),
        ("Ready Unknown (node lost)", pod("Running", ready("Unknown")), False),
        ("* no Ready condition, Running", pod("Running", SCHEDULED), False),
        ("* no conditions, no phase (a hand-written pod)", pod(), False),
        ("* Ready True, no phase", pod(None, ready("True")), True),
        ("* Ready True, Pending", pod("Pending", ready("True")), True),
        ("Ready among other conditions", pod("Running", SCHEDULED, ready("True")), True),
        ("the first Ready condition decides", pod("Running", ready("False"), ready("True")), False),
        ("status is a bool, not the string", pod("Running", ready(True)), False),
        ("conditions not a list", {"status": {"conditions": {"type": "Ready"}}}, False),
        ("status not an object", {"status": "Running"}, False),
    ],
)
def test_is_ready_follows_upstream_is_pod_ready(case: str, obj: RawObj, want: bool) -> None:
    assert is_ready(obj) is want, case


def test_ready_condition_is_the_first_of_type_ready() -> None:
    first, second = ready("False"), ready("True")
    assert ready_condition(pod("Running", SCHEDULED, first, second)) is first
    assert ready_condition(pod("Running", SCHEDULED)) is None


def owned(*refs: Any) -> RawObj:
    return {"metadata": {"name": "p", "ownerReferences": list(refs)}}


RS = {"kind": "ReplicaSet", "name": "web", "controller": True}
NOT_CONTROLLER = {"kind": "Node", "name": "n1"}
UNNAMED = {"kind": "ReplicaSet", "controller": True}


# controller_of follows apimachinery meta/v1/controller_ref.go: GetControllerOf (the
# first ownerReference with controller: true); named_controller_of also wants that
# reference to name its owner (a kind and a name), as the audit keys workloads by them.
@pytest.mark.parametrize(
    ("case", "obj", "want", "want_named"),
    [
        ("one controller", owned(NOT_CONTROLLER, RS), RS, RS),
        ("no controller: true", owned(NOT_CONTROLLER), None, None),
        ("controller: 'true' is not true", owned({**RS, "controller": "true"}), None, None),
        ("the first controller wins", owned(RS, {**RS, "name": "other"}), RS, RS),
        ("a controller naming nothing", owned(UNNAMED), UNNAMED, None),
        ("an empty name", owned({**RS, "name": ""}), {**RS, "name": ""}, None),
        ("ownerReferences not a list", {"metadata": {"ownerReferences": RS}}, None, None),
        ("no metadata", {}, None, None),
    ],
)
def test_controller_of_follows_get_controller_of(
    case: str, obj: RawObj, want: RawObj | None, want_named: RawObj | None
) -> None:
    assert (controller_of(obj), named_controller_of(obj)) == (want, want_named), case


@pytest.mark.parametrize(
    ("meta", "want"),
    [
        ({"namespace": "shop", "name": "web-0"}, "shop/web-0"),
        ({"name": "web-0"}, "default/web-0"),
        ({"namespace": "shop", "generateName": "web-"}, "shop/web-"),
        ({"namespace": "shop", "name": "web-0", "generateName": "web-"}, "shop/web-0"),
        ({"namespace": "shop"}, "shop/"),
    ],
)
def test_pod_key_is_namespace_slash_name(meta: RawObj, want: str) -> None:
    assert pod_key({"metadata": meta}) == want
