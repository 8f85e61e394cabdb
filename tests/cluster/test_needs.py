"""The kinds the cluster state holds follow from what the profile's plugins read."""

from __future__ import annotations

import pytest

from webhook.cluster import informer, needs, trim
from webhook.scheduler.framework.types import Reads


def test_the_default_profile_needs_exactly_these_kinds() -> None:
    """Node and Pod always, Namespace for admission, the four DefaultSelector lists,
    what the volume plugins read, and the budgets and priority classes."""
    assert [k.kind for k in needs.NEEDED] == [
        "Node",
        "Pod",
        "Service",
        "ReplicationController",
        "ReplicaSet",
        "StatefulSet",
        "Namespace",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "PodDisruptionBudget",
        "PriorityClass",
    ]


def test_a_plugin_reading_more_kinds_adds_them_in_catalog_order() -> None:
    kinds = needs.needed_kinds([Reads(kinds=("StorageClass", "PersistentVolumeClaim"))])
    assert [k.kind for k in kinds] == [
        "Node",
        "Pod",
        "Namespace",
        "PersistentVolumeClaim",
        "StorageClass",
        "PodDisruptionBudget",
        "PriorityClass",
    ]


def test_a_kind_with_no_known_collection_is_refused() -> None:
    with pytest.raises(ValueError, match="no way to list"):
        needs.needed_kinds([Reads(kinds=("ConfigMap",))])


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("Node", "/api/v1/nodes"),
        ("ReplicaSet", "/apis/apps/v1/replicasets"),
        ("CSINode", "/apis/storage.k8s.io/v1/csinodes"),
        ("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
        ("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    ],
)
def test_collection_paths(kind: str, path: str) -> None:
    assert needs.CATALOG[kind].path == path


def test_informer_and_trim_follow_the_declaration() -> None:
    """What is watched and what trim keeps are the declared kinds, nothing by hand."""
    assert [(r.kind, r.path) for r in informer.RESOURCES] == [
        (k.kind, k.path) for k in needs.NEEDED
    ]
    assert trim.API_VERSIONS == {k.kind: k.api_version for k in needs.NEEDED}
