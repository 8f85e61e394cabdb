"""matchLabelKeys merge on /mutate: modes, API server versions, idempotence, the patch guard.

Legend: HASH is a Deployment pod's pod-template-hash; `web_pod()` carries
`matchLabelKeys: [pod-template-hash]` beside `labelSelector: {matchLabels: {app: web}}`,
the shape every Deployment with matchLabelKeys produces.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import pytest

from tests.builders import DNS, ZONE, RawObj, exists, expr, make_pod, selector, workload
from webhook.admission.context import MutationContext
from webhook.admission.merge import MERGED_KEYS_ANNOTATION, merge_form
from webhook.admission.mutation import mutate, mutate_object
from webhook.config import Settings

HASH = "7c9f8d6b5"
KEY = "pod-template-hash"
TSC0 = "/spec/topologySpreadConstraints/0"
REQ = {"key": KEY, "operator": "In", "values": [HASH]}


def web_pod(**extra: Any) -> RawObj:
    extra.setdefault("matchLabelKeys", [KEY])
    return (
        make_pod()
        .name("web")
        .label("app", "web")
        .label(KEY, HASH)
        .spread(1, ZONE, DNS, selector({"app": "web"}), **extra)
        .obj()
    )


def ctx(mode: str = "auto", version: tuple[int, int] | None = None, **kw: Any) -> MutationContext:
    return MutationContext(
        settings=Settings(match_label_keys_merge=mode),  # type: ignore[arg-type]
        server_version=version,
        namespace="default",
        **kw,
    )


def by_path(patch: list[RawObj]) -> list[RawObj]:
    return sorted(patch, key=lambda op: (op["path"], op["op"]))


# ---------------------------------------------------------------------------------------
# Which form each mode takes, per API server version


@pytest.mark.parametrize(
    ("mode", "version", "form"),
    [
        ("auto", None, "keep-keys"),
        ("auto", (1, 33), "move-keys"),
        ("auto", (1, 34), "none"),
        ("auto", (1, 35), "none"),
        ("webhook", None, "keep-keys"),
        ("webhook", (1, 27), "move-keys"),
        ("webhook", (1, 33), "move-keys"),
        ("webhook", (1, 34), "keep-keys"),
        ("apiserver", None, "none"),
        ("apiserver", (1, 33), "none"),
        ("apiserver", (1, 34), "none"),
    ],
)
def test_merge_form_per_mode_and_version(
    mode: str, version: tuple[int, int] | None, form: str
) -> None:
    """auto defers to a v1.34+ API server, moves keys for an older one, previews v1.34 alone."""
    assert merge_form(mode, version) == form


# ---------------------------------------------------------------------------------------
# The v1.34 result (no cluster: keys kept)


def test_present_key_is_appended_as_in_requirement() -> None:
    """One label present: one `key In [value]` added, matchLabelKeys kept, nothing else."""
    assert mutate_object(web_pod(), ctx()) == [
        {"op": "add", "path": f"{TSC0}/labelSelector/matchExpressions", "value": [REQ]}
    ]


def test_requirement_goes_after_existing_expressions() -> None:
    """Existing matchExpressions stay first; the merged requirement is appended at the end."""
    pod = web_pod()
    pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] = [
        expr("tier", "In", "frontend")
    ]
    assert mutate_object(pod, ctx()) == [
        {"op": "add", "path": f"{TSC0}/labelSelector/matchExpressions/1", "value": REQ}
    ]


def test_key_the_pod_lacks_is_skipped() -> None:
    """A matchLabelKeys key with no such pod label adds nothing (upstream skips it)."""
    pod = web_pod(matchLabelKeys=["version"])
    assert mutate_object(pod, ctx()) == []


def test_only_present_keys_of_several_are_merged_in_order() -> None:
    """Keys are merged in matchLabelKeys order, absent ones skipped."""
    pod = web_pod(matchLabelKeys=["track", KEY, "version"])
    pod["metadata"]["labels"]["track"] = "stable"
    result = mutate(pod, ctx())
    exprs = result.mutated["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    assert exprs["matchExpressions"] == [
        {"key": "track", "operator": "In", "values": ["stable"]},
        REQ,
    ]


def test_constraint_without_label_selector_is_left_alone() -> None:
    """A nil labelSelector matches nothing; upstream merges nothing into it."""
    pod = make_pod().label(KEY, HASH).spread(1, ZONE, DNS, None, matchLabelKeys=[KEY]).obj()
    assert mutate_object(pod, ctx()) == []


def test_each_constraint_is_merged_at_its_own_index() -> None:
    """Two constraints: each gets its own requirement, at its own index."""
    pod = web_pod()
    pod["spec"]["topologySpreadConstraints"].append(
        {
            "maxSkew": 2,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": exists("app"),
            "matchLabelKeys": [KEY],
        }
    )
    patch = mutate_object(pod, ctx())
    assert by_path(patch) == [
        {"op": "add", "path": f"{TSC0}/labelSelector/matchExpressions", "value": [REQ]},
        {
            "op": "add",
            "path": "/spec/topologySpreadConstraints/1/labelSelector/matchExpressions/1",
            "value": REQ,
        },
    ]


def test_unknown_version_merge_says_what_it_assumes() -> None:
    """Without a cluster the merge is a preview; a warning starting with the path says so."""
    result = mutate(web_pod(), ctx())
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("spec.topologySpreadConstraints[0].matchLabelKeys: ")
    assert len(result.warnings[0]) <= 256


def test_second_call_adds_nothing() -> None:
    """Idempotent: /mutate on its own output (reinvocationPolicy IfNeeded) returns no patch."""
    first = mutate(web_pod(), ctx())
    assert first.patch
    assert mutate_object(first.mutated, ctx()) == []


def test_mutated_is_the_patch_applied() -> None:
    """MutationResult.mutated is exactly the received object with the patch applied."""
    pod = web_pod()
    result = mutate(pod, ctx())
    assert jsonpatch.apply_patch(pod, result.patch) == result.mutated


def test_received_object_is_not_modified() -> None:
    """Steps work on a deep copy: the caller's dict is untouched."""
    pod = web_pod()
    before = copy.deepcopy(pod)
    mutate(pod, ctx("auto", (1, 33)))
    assert pod == before


# ---------------------------------------------------------------------------------------
# Older API servers: keys moved into the annotation


def test_old_api_server_gets_keys_moved_and_recorded() -> None:
    """v1.33: requirement added, key removed from matchLabelKeys, annotation records it."""
    patch = mutate_object(web_pod(), ctx("auto", (1, 33)))
    assert by_path(patch) == [
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {MERGED_KEYS_ANNOTATION: '{"0":["pod-template-hash"]}'},
        },
        {"op": "add", "path": f"{TSC0}/labelSelector/matchExpressions", "value": [REQ]},
        {"op": "remove", "path": f"{TSC0}/matchLabelKeys"},
    ]


def test_annotation_key_slash_is_escaped_in_pointer() -> None:
    """With annotations already there, the new key is added with '/' escaped as '~1'."""
    pod = web_pod()
    pod["metadata"]["annotations"] = {"team": "shop"}
    patch = mutate_object(pod, ctx("auto", (1, 33)))
    assert {
        "op": "add",
        "path": "/metadata/annotations/topospread.io~1merged-match-label-keys",
        "value": '{"0":["pod-template-hash"]}',
    } in patch


def test_keys_the_pod_lacks_stay_in_match_label_keys() -> None:
    """Only merged keys move; an absent one stays for the scheduler (which skips it too)."""
    pod = web_pod(matchLabelKeys=[KEY, "version"])
    result = mutate(pod, ctx("auto", (1, 33)))
    constraint = result.mutated["spec"]["topologySpreadConstraints"][0]
    assert constraint["matchLabelKeys"] == ["version"]
    assert constraint["labelSelector"]["matchExpressions"] == [REQ]


def test_moved_form_second_call_adds_nothing() -> None:
    """Idempotent for old API servers as well."""
    first = mutate(web_pod(), ctx("auto", (1, 33)))
    assert mutate_object(first.mutated, ctx("auto", (1, 33))) == []


def test_annotation_keeps_earlier_records() -> None:
    """An annotation already naming constraint 1 keeps it; constraint 0 is added in order."""
    pod = web_pod()
    pod["metadata"]["annotations"] = {MERGED_KEYS_ANNOTATION: '{"1":["track"]}'}
    result = mutate(pod, ctx("webhook", (1, 30)))
    ann = result.mutated["metadata"]["annotations"][MERGED_KEYS_ANNOTATION]
    assert json.loads(ann) == {"0": [KEY], "1": ["track"]}
    assert list(json.loads(ann)) == ["0", "1"]


# ---------------------------------------------------------------------------------------
# When the webhook does nothing


@pytest.mark.parametrize(
    ("mode", "version"),
    [("apiserver", None), ("apiserver", (1, 33)), ("auto", (1, 34)), ("auto", (1, 36))],
)
def test_merge_left_to_api_server_or_scheduler(
    mode: str, version: tuple[int, int] | None
) -> None:
    """apiserver mode never merges; auto leaves it to a v1.34+ API server."""
    result = mutate(web_pod(), ctx(mode, version))
    assert result.patch == []
    assert result.warnings == []


def test_update_is_not_merged() -> None:
    """The API server merges on create only; so does the webhook."""
    assert mutate_object(web_pod(), ctx(operation="UPDATE", old=web_pod())) == []


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "Job", "CronJob", "PodTemplate"])
def test_pod_templates_are_not_merged(kind: str) -> None:
    """Templates keep matchLabelKeys: each pod created from them is merged on its own."""
    assert mutate_object(workload(kind, web_pod()), ctx()) == []


@pytest.mark.parametrize(
    ("case", "edit"),
    [
        ("labels as a list", lambda p: p["metadata"].__setitem__("labels", ["app", "web"])),
        ("labels null", lambda p: p["metadata"].__setitem__("labels", None)),
        ("metadata null", lambda p: p.__setitem__("metadata", None)),
        ("spec null", lambda p: p.__setitem__("spec", None)),
        ("constraints a dict", lambda p: p["spec"].__setitem__("topologySpreadConstraints", {})),
        ("constraint null", lambda p: p["spec"]["topologySpreadConstraints"].__setitem__(0, None)),
        (
            "matchLabelKeys a string",
            lambda p: p["spec"]["topologySpreadConstraints"][0].__setitem__("matchLabelKeys", KEY),
        ),
        (
            "key not a string",
            lambda p: p["spec"]["topologySpreadConstraints"][0].__setitem__("matchLabelKeys", [7]),
        ),
        (
            "label value not a string",
            lambda p: p["metadata"]["labels"].__setitem__(KEY, 7),
        ),
        (
            "labelSelector a list",
            lambda p: p["spec"]["topologySpreadConstraints"][0].__setitem__("labelSelector", []),
        ),
        (
            "matchExpressions a dict",
            lambda p: p["spec"]["topologySpreadConstraints"][0]["labelSelector"].__setitem__(
                "matchExpressions", {}
            ),
        ),
    ],
)
def test_wrong_types_give_no_patch_and_no_exception(case: str, edit: Any) -> None:
    """Malformed shapes are left for validation to report; the merge skips them."""
    pod = web_pod()
    edit(pod)
    assert mutate_object(pod, ctx()) == [], case


# ---------------------------------------------------------------------------------------
# The guard: a patch the API server would reject is dropped


def test_double_merge_on_new_api_server_is_dropped_with_warning() -> None:
    """webhook mode on v1.34: the API server would merge again and reject the duplicate."""
    result = mutate(web_pod(), ctx("webhook", (1, 34)))
    assert result.patch == []
    assert len(result.warnings) == 1
    warning = result.warnings[0]
    assert warning.startswith("spec.topologySpreadConstraints[0]")
    assert "kube-apiserver v1.34 reject" in warning
    assert "exists in both matchLabelKeys and labelSelector" in warning


def test_key_also_in_match_labels_is_not_merged() -> None:
    """A key in matchLabels too would be rejected once merged: no patch, a warning instead."""
    pod = web_pod()
    pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"][KEY] = HASH
    result = mutate(pod, ctx())
    assert result.patch == []
    # Upstream names the key by its index right after the constraint's own (no
    # `.matchLabelKeys`): ValidateMatchLabelKeysAndMismatchLabelKeys gets the constraint path.
    assert [w.split(":")[0] for w in result.warnings] == ["spec.topologySpreadConstraints[0][0]"]


def test_invalid_pod_still_merged_when_patch_adds_no_error() -> None:
    """An error the received pod already has is not the patch's fault: the merge stands."""
    pod = web_pod()
    pod["spec"]["topologySpreadConstraints"][0]["maxSkew"] = 0
    assert mutate_object(pod, ctx()) == [
        {"op": "add", "path": f"{TSC0}/labelSelector/matchExpressions", "value": [REQ]}
    ]


def test_steps_compose_into_one_diff() -> None:
    """Later pipeline steps see earlier edits; the result is a single patch."""

    def annotate(obj: RawObj, _: MutationContext) -> list[str]:
        obj["metadata"].setdefault("annotations", {})["example.com/seen"] = "yes"
        return ["metadata.annotations: example"]

    from webhook.admission.mutation import STEPS

    result = mutate(web_pod(), ctx(), steps=(*STEPS, annotate))
    assert by_path(result.patch) == [
        {"op": "add", "path": "/metadata/annotations", "value": {"example.com/seen": "yes"}},
        {"op": "add", "path": f"{TSC0}/labelSelector/matchExpressions", "value": [REQ]},
    ]
    assert result.warnings[-1] == "metadata.annotations: example"
