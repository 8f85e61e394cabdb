"""AdmissionReview in and out: denials worded as kube-apiserver, warnings within its limits,
malformed reviews kept apart from bad objects, internal failures never blocking a pod."""

from __future__ import annotations

import base64
import copy
import importlib
import json
import logging
from typing import Any

import pytest

from tests.advice_messages import outage
from tests.builders import DNS, ZONE, RawObj, make_pod, review, selector, workload
from webhook.admission import review as admission
from webhook.admission.context import ReviewContext
from webhook.admission.handlers import answer_review, handle_review
from webhook.admission.review import (
    MAX_WARNING_RUNES,
    MAX_WARNINGS_TOTAL_RUNES,
    limit_warnings,
    object_name,
    qualified_kind,
)
from webhook.config import Settings

UID = "705ab4f5-6393-11e8-b7cc-42010a800002"
CTX = ReviewContext()


def body(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def answer(doc: Any, operation: str = "validate", ctx: ReviewContext = CTX) -> RawObj:
    status, out = handle_review(body(doc), operation, ctx)  # type: ignore[arg-type]
    assert status == 200, out
    return out


def bad_pod(name: str = "web") -> RawObj:
    pod = make_pod().name(name).label("app", "web")
    return pod.spread(0, ZONE, DNS, selector({"app": "web"})).obj()


# ---------------------------------------------------------------------------------------
# Denials, exactly as kube-apiserver words them


def test_pod_denial_is_worded_as_the_api_server() -> None:
    """A Pod with maxSkew 0: reason Invalid, code 422, one cause, the Go-formatted message."""
    out = answer(review(bad_pod()))
    assert out["apiVersion"] == "admission.k8s.io/v1"
    assert out["kind"] == "AdmissionReview"
    assert out["response"] == {
        "uid": UID,
        "allowed": False,
        "status": {
            "status": "Failure",
            "code": 422,
            "reason": "Invalid",
            "message": 'Pod "web" is invalid: spec.topologySpreadConstraints[0].maxSkew: '
            "Invalid value: 0: must be greater than zero",
            "details": {
                "name": "web",
                "kind": "Pod",
                "causes": [
                    {
                        "reason": "FieldValueInvalid",
                        "message": "Invalid value: 0: must be greater than zero",
                        "field": "spec.topologySpreadConstraints[0].maxSkew",
                    }
                ],
            },
        },
    }


def test_deployment_denial_names_group_and_template_paths() -> None:
    """Deployment.apps, group in details, paths under spec.template.spec, errors aggregated."""
    pod = make_pod().label("app", "web").spread(0, ZONE, "Sometimes", selector({"app": "web"}))
    out = answer(review(workload("Deployment", pod.obj(), name="web")))
    status = out["response"]["status"]
    prefix = "spec.template.spec.topologySpreadConstraints[0]"
    assert status["message"] == (
        f'Deployment.apps "web" is invalid: [{prefix}.maxSkew: Invalid value: 0: must be '
        f'greater than zero, {prefix}.whenUnsatisfiable: Unsupported value: "Sometimes": '
        'supported values: "DoNotSchedule", "ScheduleAnyway"]'
    )
    assert status["details"]["group"] == "apps"
    assert status["details"]["kind"] == "Deployment"
    assert [c["field"] for c in status["details"]["causes"]] == [
        f"{prefix}.maxSkew",
        f"{prefix}.whenUnsatisfiable",
    ]
    assert [c["reason"] for c in status["details"]["causes"]] == [
        "FieldValueInvalid",
        "FieldValueNotSupported",
    ]


def test_cronjob_denial_uses_job_template_path() -> None:
    """CronJob.batch, paths under spec.jobTemplate.spec.template.spec."""
    out = answer(review(workload("CronJob", bad_pod(), name="nightly")))
    status = out["response"]["status"]
    assert status["message"] == (
        'CronJob.batch "nightly" is invalid: spec.jobTemplate.spec.template.spec.'
        "topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"
    )
    assert status["details"]["group"] == "batch"


@pytest.mark.parametrize(
    ("group", "kind", "expected"),
    [("", "Pod", "Pod"), ("apps", "Deployment", "Deployment.apps"), ("batch", "Job", "Job.batch")],
)
def test_qualified_kind_is_group_kind_string(group: str, kind: str, expected: str) -> None:
    """schema.GroupKind.String(): the kind alone for the core group, else Kind.group."""
    assert qualified_kind(group, kind) == expected


def test_core_group_is_omitted_from_details() -> None:
    """StatusDetails.group is omitempty: a Pod's denial has no group key."""
    out = answer(review(bad_pod()))
    assert "group" not in out["response"]["status"]["details"]


# ---------------------------------------------------------------------------------------
# Names and namespaces


@pytest.mark.parametrize(
    ("obj", "request_name", "expected"),
    [
        ({"metadata": {"name": "web", "generateName": "web-"}}, "other", "web"),
        ({"metadata": {"generateName": "web-"}}, "from-request", "from-request"),
        ({"metadata": {"generateName": "web-7c9f8d6b5-"}}, "", "web-7c9f8d6b5-"),
        ({"metadata": None}, "", ""),
        ({"metadata": {"name": ["web"]}}, "", ""),
    ],
)
def test_object_name_prefers_metadata_then_request_then_generate_name(
    obj: RawObj, request_name: str, expected: str
) -> None:
    """Controller-made pods have no name yet: the denial names their generateName."""
    assert object_name(obj, request_name) == expected


def test_denial_of_generate_name_pod_names_the_prefix() -> None:
    """A ReplicaSet's pod (generateName only) is denied as "web-7c9f8d6b5-"."""
    pod = bad_pod()
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "web-7c9f8d6b5-"
    out = answer(review(pod))
    assert out["response"]["status"]["message"].startswith('Pod "web-7c9f8d6b5-" is invalid: ')
    assert out["response"]["status"]["details"]["name"] == "web-7c9f8d6b5-"


def test_namespace_comes_from_the_request() -> None:
    """kubernetes#88282: the object may lack its namespace; request.namespace is the truth."""
    pod = make_pod().obj()
    del pod["metadata"]["namespace"]
    parsed = admission.parse_review(body(review(pod, namespace="shop")))
    assert parsed.namespace == "shop"


# ---------------------------------------------------------------------------------------
# Versions and pass-through


def test_v1beta1_is_answered_in_v1beta1_with_uid() -> None:
    """A v1beta1 review gets a v1beta1 answer echoing request.uid."""
    out = answer(review(bad_pod(), uid="abc-123", api_version="admission.k8s.io/v1beta1"))
    assert out["apiVersion"] == "admission.k8s.io/v1beta1"
    assert out["response"]["uid"] == "abc-123"
    assert out["response"]["allowed"] is False


@pytest.mark.parametrize(
    ("case", "doc"),
    [
        ("DELETE", review(bad_pod(), "DELETE")),
        ("CONNECT", review(bad_pod(), "CONNECT")),
        ("other kind", review({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})),
        ("subresource", review(bad_pod())),
    ],
)
@pytest.mark.parametrize("operation", ["validate", "mutate"])
def test_untouched_requests_are_allowed_plainly(case: str, doc: RawObj, operation: str) -> None:
    """DELETE, CONNECT, other kinds and subresources: allowed, no patch, no warning."""
    doc = copy.deepcopy(doc)
    if case == "DELETE":
        doc["request"]["oldObject"] = doc["request"]["object"]
        doc["request"]["object"] = None
    if case == "subresource":
        doc["request"]["subResource"] = "status"
    out = answer(doc, operation)
    assert out["response"] == {"uid": UID, "allowed": True}, case


def test_valid_pod_is_allowed() -> None:
    """A valid pod that draws no advice: allowed, no status, no warning."""
    pod = (
        make_pod()
        .label("app", "web")
        .spread(1, ZONE, DNS, selector({"app": "web"}), nodeTaintsPolicy="Honor")
        .obj()
    )
    assert answer(review(pod))["response"] == {"uid": UID, "allowed": True}


def test_valid_pod_with_advice_is_allowed_with_the_warning() -> None:
    """Advice never denies: allowed, the warning in response.warnings."""
    pod = make_pod().label("app", "web").spread(1, ZONE, DNS, selector({"app": "web"})).obj()
    assert answer(review(pod))["response"] == {
        "uid": UID,
        "allowed": True,
        "warnings": [outage("spec.topologySpreadConstraints[0]")],
    }


def test_mutate_returns_base64_json_patch() -> None:
    """/mutate: patchType JSONPatch and a base64 JSON array the API server applies."""
    pod = (
        make_pod()
        .labels({"app": "web", "pod-template-hash": "h1"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
        .obj()
    )
    response = answer(review(pod), "mutate")["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == [
        {
            "op": "add",
            "path": "/spec/topologySpreadConstraints/0/labelSelector/matchExpressions",
            "value": [{"key": "pod-template-hash", "operator": "In", "values": ["h1"]}],
        }
    ]


def test_mutate_never_denies_an_invalid_pod() -> None:
    """Denial is /validate's job: /mutate allows, with no status."""
    response = answer(review(bad_pod()), "mutate")["response"]
    assert response["allowed"] is True
    assert "status" not in response


def test_validate_checks_the_stored_pod_without_merging_again() -> None:
    """A v1.34 API server calls /validate after its own merge: one merged key is valid."""
    pod = (
        make_pod()
        .labels({"app": "web", "pod-template-hash": "h1"})
        .spread(
            1,
            ZONE,
            DNS,
            selector(
                {"app": "web"},
                {"key": "pod-template-hash", "operator": "In", "values": ["h1"]},
            ),
            matchLabelKeys=["pod-template-hash"],
        )
        .obj()
    )
    ctx = ReviewContext(server_version=(1, 34))
    assert answer(review(pod), ctx=ctx)["response"]["allowed"] is True


def test_validate_applies_the_connected_server_rules() -> None:
    """Before v1.34 a key in both matchLabelKeys and labelSelector is invalid."""
    pod = (
        make_pod()
        .labels({"app": "web", "pod-template-hash": "h1"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["app"])
        .obj()
    )
    out = answer(review(pod), ctx=ReviewContext(server_version=(1, 33)))
    assert out["response"]["status"]["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "app": exists in both matchLabelKeys and labelSelector',
            "field": "spec.topologySpreadConstraints[0].matchLabelKeys[0]",
        }
    ]


# ---------------------------------------------------------------------------------------
# Wrong types inside a well formed review: a denial or an allowance, never a failure


def _tsc(p: RawObj) -> list[Any]:
    return p["spec"]["topologySpreadConstraints"]  # type: ignore[no-any-return]


NULL_CONSTRAINT = dict.fromkeys(["maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector"])


@pytest.mark.parametrize(
    ("case", "edit"),
    [
        ("maxSkew a string", lambda p: _tsc(p)[0].update(maxSkew="1")),
        ("labels a list", lambda p: p["metadata"].update(labels=["app", "web"])),
        ("metadata null", lambda p: p.update(metadata=None)),
        ("spec null", lambda p: p.update(spec=None)),
        ("constraints null", lambda p: p["spec"].update(topologySpreadConstraints=None)),
        ("constraint null", lambda p: _tsc(p).__setitem__(0, None)),
        ("constraint a string", lambda p: _tsc(p).__setitem__(0, "x")),
        ("selector a string", lambda p: _tsc(p)[0].update(labelSelector="app=web")),
        ("every field null", lambda p: _tsc(p).__setitem__(0, NULL_CONSTRAINT)),
    ],
)
@pytest.mark.parametrize("operation", ["validate", "mutate"])
def test_wrong_types_get_an_answer(case: str, edit: Any, operation: str) -> None:
    """Every malformed object gets a 200 AdmissionReview echoing the uid."""
    pod = make_pod().label("app", "web").spread(1, ZONE, DNS, selector({"app": "web"})).obj()
    doc = review(pod)
    edit(doc["request"]["object"])
    out = answer(doc, operation)
    assert out["response"]["uid"] == UID, case
    assert isinstance(out["response"]["allowed"], bool)


def test_max_skew_string_is_denied_with_type_error() -> None:
    """maxSkew "1" is a type error the API server's decoder reports; we deny it."""
    pod = make_pod().spread("1", ZONE, DNS, selector({"app": "web"})).obj()
    response = answer(review(pod))["response"]
    assert response["allowed"] is False
    causes = response["status"]["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.topologySpreadConstraints[0].maxSkew"]


# ---------------------------------------------------------------------------------------
# Internal failures: allowed, warned, logged


def test_rule_crash_allows_with_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception inside a rule allows the pod unchecked, says so, and logs the traceback."""
    import webhook.validation.rules

    def boom(*_: Any, **__: Any) -> Any:
        raise RuntimeError("rule bug")

    monkeypatch.setattr(webhook.validation.rules, "validate_constraints", boom)
    with caplog.at_level(logging.ERROR, logger="topospread.admission"):
        result = answer_review(body(review(bad_pod())), "validate", CTX)
    assert result.status == 200
    assert result.decision == "internal_error"
    assert result.doc["response"]["allowed"] is True
    assert result.doc["response"]["warnings"] == [
        "spec.topologySpreadConstraints: not validated by topospread because of an internal "
        "error; allowed unchecked"
    ]
    assert "rule bug" in caplog.text


def test_warning_crash_keeps_the_denial(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing warning helper does not hide real errors."""
    import webhook.admission.handlers

    monkeypatch.setattr(webhook.admission.handlers, "object_warnings", lambda _: 1 / 0)
    assert answer(review(bad_pod()))["response"]["allowed"] is False


def test_mutation_crash_allows_without_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception in a mutation step: allowed, no patch, a warning."""
    import webhook.admission.mutation

    def boom(*_: Any) -> list[str]:
        raise KeyError("step bug")

    monkeypatch.setattr(webhook.admission.mutation, "STEPS", (boom,))
    result = answer_review(body(review(bad_pod())), "mutate", CTX)
    assert result.decision == "internal_error"
    assert "patch" not in result.doc["response"]
    assert result.doc["response"]["warnings"] == [
        "spec.topologySpreadConstraints: not mutated by topospread because of an internal "
        "error; allowed unchecked"
    ]


# ---------------------------------------------------------------------------------------
# Warnings within kube-apiserver's limits


def test_object_warnings_are_passed_on() -> None:
    """rules.object_warnings reach response.warnings, each starting with the field path."""
    pod = make_pod().spread(1, ZONE, DNS, None).obj()
    warnings = answer(review(pod))["response"]["warnings"]
    assert warnings[0].startswith("spec.topologySpreadConstraints[0].labelSelector: ")


def test_long_warning_is_cut_to_256_runes() -> None:
    """Each warning at most 256 runes (the API server cuts longer ones when truncating)."""
    assert limit_warnings(["spec.x: " + "é" * 400]) == ["spec.x: " + "é" * 248]


def test_control_characters_are_replaced() -> None:
    """The API server drops a warning holding a control character; we blank them instead."""
    assert limit_warnings(["spec.x: a\nb\tc\x7f"]) == ["spec.x: a b c "]


def test_repeated_and_empty_warnings_are_dropped() -> None:
    """Duplicates are recorded once, as the API server's recorder does; empty ones never."""
    assert limit_warnings(["spec.a: x", "", "spec.a: x", "spec.b: y"]) == ["spec.a: x", "spec.b: y"]


def test_total_stays_under_4096_runes_and_counts_the_rest() -> None:
    """Past the total budget warnings are dropped and counted in a last warning."""
    many = [f"spec.topologySpreadConstraints[{i}]: " + "w" * 200 for i in range(40)]
    kept = limit_warnings(many)
    assert sum(len(w) for w in kept) <= MAX_WARNINGS_TOTAL_RUNES
    assert all(len(w) <= MAX_WARNING_RUNES for w in kept)
    shown = len(kept) - 1
    assert kept[:-1] == many[:shown]
    assert kept[-1] == f"topospread: {40 - shown} more warning(s) not shown"


def test_settings_reach_the_mutation() -> None:
    """matchLabelKeysMerge: apiserver in the settings: /mutate returns no patch."""
    pod = (
        make_pod()
        .labels({"app": "web", "pod-template-hash": "h1"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
        .obj()
    )
    ctx = ReviewContext(settings=Settings(match_label_keys_merge="apiserver"))
    assert "patch" not in answer(review(pod), "mutate", ctx)["response"]


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (
            "webhook.admission.handlers",
            {"answer_review", "handle_review", "review_object", "mutate_reviewed"},
        ),
        (
            "webhook.admission.context",
            {"ReviewContext", "Step", "MutationContext", "MutationResult"},
        ),
        ("webhook.admission.mutation", {"STEPS", "mutate", "mutate_object"}),
        ("webhook.admission.merge", {"MERGED_KEYS_ANNOTATION"}),
        ("webhook.admission.review", {"parse_review", "allowed_response", "denied_response"}),
    ],
)
def test_public_names_are_pinned(module: str, names: set[str]) -> None:
    """The names other modules and the CLI import; a change here is an interface change."""
    mod = importlib.import_module(module)
    assert set(mod.__all__) >= names
    assert all(hasattr(mod, n) for n in mod.__all__)


def test_the_app_factory_surface_is_pinned() -> None:
    """gunicorn and the tests reach the app through these names."""
    import webhook.server
    import webhook.server.app

    assert webhook.server.app.__all__ == ["EXTENSION", "Services", "create_app"]
    assert webhook.server.__all__ == webhook.server.app.__all__
    assert webhook.server.create_app is webhook.server.app.create_app
