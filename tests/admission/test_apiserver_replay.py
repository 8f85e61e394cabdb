"""What kube-apiserver does with our /mutate patch, replayed for every mode and version.

A small model of the API server's steps after the mutating webhooks, written here
independently of webhook.admission.mutation: apply the JSONPatch (jsonpatch, as the API server
applies RFC 6902), run its own matchLabelKeys merge from v1.34 (PrepareForCreate,
pkg/registry/core/pod/strategy.go: append `key In [value]` per present label, no
de-duplication), then validate the stored pod with the rules of that version.

Legend: `none` = no cluster connection (version unknown: nothing merges after us).
Expected: the pod is accepted, and each present key ends up selected exactly once:
in labelSelector, or (before v1.34) in matchLabelKeys that kube-scheduler applies itself.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from tests.builders import DNS, SA, ZONE, RawObj, make_pod, selector
from webhook.admission.context import MutationContext
from webhook.admission.merge import MERGED_KEYS_ANNOTATION
from webhook.admission.mutation import mutate
from webhook.config import Settings
from webhook.validation.rules import validate_constraints

HASH = "7c9f8d6b5"
KEY = "pod-template-hash"
Version = tuple[int, int] | None


def apiserver_create(pod: RawObj, patch: list[RawObj], version: Version) -> tuple[RawObj, list]:
    """The stored pod and the API server's validation errors for it."""
    stored = jsonpatch.apply_patch(pod, patch)
    if version is not None and version >= (1, 34):
        labels = stored["metadata"].get("labels") or {}
        for c in stored["spec"]["topologySpreadConstraints"]:
            if c.get("labelSelector") is None:
                continue
            for key in c.get("matchLabelKeys") or []:
                if key in labels:
                    c["labelSelector"].setdefault("matchExpressions", []).append(
                        {"key": key, "operator": "In", "values": [labels[key]]}
                    )
    errors = validate_constraints(
        stored["spec"]["topologySpreadConstraints"],
        "spec.topologySpreadConstraints",
        server_version=version,
    )
    return stored, errors


def selected_times(stored: RawObj, index: int, key: str, version: Version) -> int:
    """How many times constraint `index` selects on `key` once the scheduler reads it."""
    c = stored["spec"]["topologySpreadConstraints"][index]
    in_selector = sum(
        1 for e in c["labelSelector"].get("matchExpressions", []) if e["key"] == key
    )
    # Before v1.34 kube-scheduler applies matchLabelKeys itself when it schedules.
    by_scheduler = int(version is not None and version < (1, 34) and key in c.get(
        "matchLabelKeys", []
    ))
    return in_selector + by_scheduler


def one_key_pod() -> RawObj:
    return (
        make_pod()
        .name("web")
        .label("app", "web")
        .label(KEY, HASH)
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=[KEY])
        .obj()
    )


def two_constraint_pod() -> RawObj:
    return (
        make_pod()
        .name("web")
        .labels({"app": "web", KEY: HASH, "track": "stable"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=[KEY])
        .spread(
            2,
            "kubernetes.io/hostname",
            SA,
            selector({"app": "web"}),
            matchLabelKeys=["track", "version", KEY],
        )
        .obj()
    )


# (constraint index, key) pairs each pod carries as a label.
PODS: dict[str, tuple[Any, list[tuple[int, str]]]] = {
    "one key": (one_key_pod, [(0, KEY)]),
    "two constraints, one absent key": (two_constraint_pod, [(0, KEY), (1, "track"), (1, KEY)]),
}

VERSIONS: list[Version] = [None, (1, 33), (1, 34), (1, 35)]

# mode -> version -> where the merged requirement comes from:
#   "webhook": our patch, "apiserver": the API server's own merge, "scheduler": matchLabelKeys
#   left for a pre-1.34 kube-scheduler, "nobody": no merge anywhere (preview, apiserver mode).
MERGED_BY: dict[str, dict[Version, str]] = {
    "auto": {None: "webhook", (1, 33): "webhook", (1, 34): "apiserver", (1, 35): "apiserver"},
    "webhook": {None: "webhook", (1, 33): "webhook", (1, 34): "apiserver", (1, 35): "apiserver"},
    "apiserver": {
        None: "nobody",
        (1, 33): "scheduler",
        (1, 34): "apiserver",
        (1, 35): "apiserver",
    },
}

CASES = [
    pytest.param(mode, version, pod_name, id=f"{mode}-{version or 'none'}-{pod_name}")
    for mode in MERGED_BY
    for version in VERSIONS
    for pod_name in PODS
]


@pytest.mark.parametrize(("mode", "version", "pod_name"), CASES)
def test_pod_is_accepted_and_each_key_selected_once(
    mode: str, version: Version, pod_name: str
) -> None:
    """Whatever the mode and version, the API server accepts the pod; keys count once."""
    build, keys = PODS[pod_name]
    pod = build()
    ctx = MutationContext(
        settings=Settings(match_label_keys_merge=mode),  # type: ignore[arg-type]
        server_version=version,
    )
    result = mutate(copy.deepcopy(pod), ctx)
    stored, errors = apiserver_create(pod, result.patch, version)
    assert errors == []
    merged_by = MERGED_BY[mode][version]
    expected = 0 if merged_by == "nobody" else 1
    for index, key in keys:
        assert selected_times(stored, index, key, version) == expected, (index, key)
    assert bool(result.patch) == (merged_by == "webhook")


@pytest.mark.parametrize("mode", ["auto", "webhook"])
def test_old_api_server_gets_the_moved_keys_recorded(mode: str) -> None:
    """Before v1.34 the annotation says which keys left matchLabelKeys, per constraint."""
    pod = two_constraint_pod()
    ctx = MutationContext(
        settings=Settings(match_label_keys_merge=mode),  # type: ignore[arg-type]
        server_version=(1, 33),
    )
    stored, _ = apiserver_create(pod, mutate(pod, ctx).patch, (1, 33))
    assert stored["metadata"]["annotations"][MERGED_KEYS_ANNOTATION] == (
        '{"0":["pod-template-hash"],"1":["track","pod-template-hash"]}'
    )
    assert "matchLabelKeys" not in stored["spec"]["topologySpreadConstraints"][0]
    assert stored["spec"]["topologySpreadConstraints"][1]["matchLabelKeys"] == ["version"]


@pytest.mark.parametrize("version", [(1, 33), (1, 34)])
def test_the_naive_v134_patch_is_what_the_model_rejects(version: Version) -> None:
    """The trap the guard exists for: the plain v1.34 merge, kept keys and all, is rejected
    by v1.33 (key in both) and by v1.34 (key merged twice)."""
    pod = one_key_pod()
    naive = [
        {
            "op": "add",
            "path": "/spec/topologySpreadConstraints/0/labelSelector/matchExpressions",
            "value": [{"key": KEY, "operator": "In", "values": [HASH]}],
        }
    ]
    _, errors = apiserver_create(pod, naive, version)
    assert [e.detail for e in errors] == ["exists in both matchLabelKeys and labelSelector"]
