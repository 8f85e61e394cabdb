"""ImageLocality, from upstream's image_locality_test.go (TestImageLocalityPriority and
TestNormalizedImageName, case by case), plus image volumes and name spreading.

Legend: node403002000 lists gcr.io/40 (40 MiB), gcr.io/300 (300 MiB) and gcr.io/2000
(2000 MiB); node25010 lists gcr.io/250 (250 MiB) and gcr.io/10 (10 MiB). A score
is 100 * (sum - 23M) / (1000M * images - 23M), each image's size scaled by the
share of nodes holding it, worked in each case's comment.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from tests.builders import node_with, pod_with
from webhook.api.versions import Features, KubeVersion, features_for
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import MAX_NODE_SCORE, Code, CycleState
from webhook.scheduler.plugins.imagelocality import (
    MAX_CONTAINER_THRESHOLD,
    MB,
    MIN_THRESHOLD,
    PRE_SCORE_STATE_KEY,
    ImageLocality,
    ImageStateSummary,
    calculate_priority,
    normalized_image_name,
    pod_images,
    scaled_image_score,
)


def image(size_mb: int, *names: str) -> dict[str, Any]:
    return {"names": list(names), "sizeBytes": size_mb * MB}


NODE_40_300_2000 = [
    image(40, "gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"),
    image(300, "gcr.io/300:latest", "gcr.io/300:v1"),
    image(2000, "gcr.io/2000:latest"),
]
NODE_250_10 = [image(250, "gcr.io/250:latest"), image(10, "gcr.io/10:latest", "gcr.io/10:v1")]
NODE_600_40_900 = [
    image(600, "gcr.io/600:latest"),
    image(40, "gcr.io/40:latest"),
    image(900, "gcr.io/900:latest"),
]
NODE_300_600_900 = [
    image(300, "gcr.io/300:latest"),
    image(600, "gcr.io/600:latest"),
    image(900, "gcr.io/900:latest"),
]
NODE_4000_30 = [image(4000, "gcr.io/4000:latest"), image(30, "gcr.io/30:latest")]
NODE_20_30_40 = [
    image(20, "gcr.io/20:latest"),
    image(30, "gcr.io/30:latest"),
    image(40, "gcr.io/40:latest"),
]
NO_IMAGES: list[dict[str, Any]] = []


def spec_pod(
    *images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()
) -> dict[str, Any]:
    pod = pod_with()
    pod["spec"]["containers"] = [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]
    if init:
        pod["spec"]["initContainers"] = [
            {"name": f"i{i}", "image": im} for i, im in enumerate(init)
        ]
    if volumes:
        pod["spec"]["volumes"] = [
            {"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)
        ]
    return pod


def machines(*images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [node_with(f"machine{i}", images=im) for i, im in enumerate(images, 1)]


def nodes(*images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """makeImageNode("node1", ...), makeImageNode("node2", ...), ..."""
    return [node_with(f"node{i}", images=im) for i, im in enumerate(images, 1)]


def _scores(
    pod: dict[str, Any], nodes: list[dict[str, Any]], features: Features | None = None
) -> dict[str, int]:
    snapshot = Snapshot.from_objects(nodes)
    plugin = ImageLocality(features=features)
    state = CycleState()
    infos = [snapshot.nodes[n["metadata"]["name"]] for n in nodes]
    assert plugin.pre_score(state, pod, infos, snapshot).ok
    out = {}
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status.ok
        out[info.name] = score
    scores = dict(out)
    assert plugin.normalize_score(state, pod, scores).ok and scores == out
    return out


# Upstream TestImageLocalityPriority, case by case.
UPSTREAM_CASES = [
    pytest.param(
        # node1: 40M * 1/2 < 23M -> 0; node2: 100 * (250M/2 - 23M) / (2000M - 23M) = 5
        spec_pod("gcr.io/40", "gcr.io/250"),
        nodes(NODE_40_300_2000, NODE_250_10),
        {"node1": 0, "node2": 5},
        id="two images spread on two nodes, prefer the larger image one",
    ),
    pytest.param(
        # node1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7
        spec_pod("gcr.io/40", "gcr.io/300"),
        nodes(NODE_40_300_2000, NODE_250_10),
        {"node1": 7, "node2": 0},
        id="two images on one node, prefer this node",
    ),
    pytest.param(
        # node1: 4000M/2 >= 1000M * 2 -> 100; node2: 10M/2 < 23M -> 0
        spec_pod("gcr.io/10", "gcr.io/4000"),
        nodes(NODE_4000_30, NODE_250_10),
        {"node1": MAX_NODE_SCORE, "node2": 0},
        id="if exceed limit, use limit",
    ),
    pytest.param(
        # node1: 100 * (4000M/3 - 23M) / (2000M - 23M) = 66; node2: 10M/3 < 23M -> 0
        spec_pod("gcr.io/10", "gcr.io/4000"),
        nodes(NODE_4000_30, NODE_250_10, NO_IMAGES),
        {"node1": 66, "node2": 0, "node3": 0},
        id="if exceed limit, use limit (with node which has no images present)",
    ),
    pytest.param(
        # node1: 100 * (600M * 2/3 + 900M * 2/3 - 23M) / (3000M - 23M) = 32
        # node2: 100 * (300M * 1/3 + 600M * 2/3 + 900M * 2/3 - 23M) / (3000M - 23M) = 36
        spec_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        nodes(NODE_600_40_900, NODE_300_600_900, NO_IMAGES),
        {"node1": 32, "node2": 36, "node3": 0},
        id="pod with multiple large images, node2 is preferred",
    ),
    pytest.param(
        # node1: 100 * (30M + 40M * 1/2 - 23M) / (2000M - 23M) = 1; node2: 30M/2 -> 0
        spec_pod("gcr.io/30", "gcr.io/40"),
        nodes(NODE_20_30_40, NODE_4000_30),
        {"node1": 1, "node2": 0},
        id="pod with multiple small images",
    ),
    pytest.param(
        # node1: 100 * (300M * 1/2 - 23M) / (2000M - 23M) = 6; node2: 30M/2 -> 0
        spec_pod("gcr.io/30", init=("gcr.io/300",)),
        nodes(NODE_40_300_2000, NODE_20_30_40),
        {"node1": 6, "node2": 0},
        id="include InitContainers: two images spread on two nodes, prefer the larger image one",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "want"), UPSTREAM_CASES)
def test_image_locality_priority(
    pod: dict[str, Any], nodes: list[dict[str, Any]], want: dict[str, int]
) -> None:
    """Each node's ImageLocality score (upstream TestImageLocalityPriority)."""
    assert _scores(pod, nodes) == want


@pytest.mark.parametrize(
    ("pod", "nodes", "want"),
    [
        pytest.param(
            # One image on the only node: 2000M clamps to 1000M * 1 -> 100.
            spec_pod("gcr.io/2000"),
            machines(NODE_40_300_2000),
            {"machine1": MAX_NODE_SCORE},
            id="one image over the per-image maximum scores 100",
        ),
        pytest.param(
            # An image volume is an image source, in the sum and in the count:
            # 300M / 2 = 150M over 2 images -> 100 * 127M / 1977M = 6 (12 were it left
            # out of the count, as before v1.37).
            spec_pod("gcr.io/none", volumes=("gcr.io/300:v1",)),
            machines(NODE_40_300_2000, NODE_250_10),
            {"machine1": 6, "machine2": 0},
            id="image volume references are scored",
        ),
        pytest.param(
            # gcr.io/40:v1 is listed on both nodes: spread 1 -> 40M over 1 image:
            # 100 * 17M / 977M = 1 on both.
            spec_pod("gcr.io/40:v1"),
            machines(NODE_40_300_2000, [image(40, "gcr.io/40:v1")]),
            {"machine1": 1, "machine2": 1},
            id="spread counts every node listing the name",
        ),
        pytest.param(
            spec_pod(),
            machines(NODE_40_300_2000),
            {"machine1": 0},
            id="a pod without images scores 0",
        ),
    ],
)
def test_image_locality_more(
    pod: dict[str, Any], nodes: list[dict[str, Any]], want: dict[str, int]
) -> None:
    """Image volumes, spread over names, a pod without images."""
    assert _scores(pod, nodes) == want


@pytest.mark.parametrize(
    ("minor", "want"),
    [
        # v1.35: image volumes are not image sources: gcr.io/30 is on node2 only, 30M
        # over 1 image is under the 23M minimum once spread (30M * 1/2): both 0.
        pytest.param(35, {"node1": 0, "node2": 0}, id="v1.35: image volumes not counted"),
        # v1.36.3's "pod with ImageVolume": in the sum, not the bound:
        # 100 * (300M * 1/2 - 23M) / (1000M - 23M) = 12.
        pytest.param(36, {"node1": 12, "node2": 0}, id="v1.36: pod with ImageVolume"),
        # v1.37.2's "pod with ImageVolume": in the sum and the bound:
        # 100 * (300M * 1/2 - 23M) / (1000M * 2 - 23M) = 6.
        pytest.param(37, {"node1": 6, "node2": 0}, id="v1.37: pod with ImageVolume"),
    ],
)
def test_pod_with_image_volume_per_release(minor: int, want: dict[str, int]) -> None:
    """Upstream's "pod with ImageVolume" (container gcr.io/30, image volume gcr.io/300) as
    each release scores it: image volumes joined the sum in v1.36 and the bound in v1.37."""
    pod = spec_pod("gcr.io/30", volumes=("gcr.io/300",))
    got = _scores(pod, nodes(NODE_300_600_900, NODE_4000_30), features_for(KubeVersion(1, minor)))
    assert got == want


DIGEST = "sha256:" + hashlib.sha256(b"root").hexdigest()


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("root", "root:latest", id="add :latest postfix 1"),
        pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="add :latest postfix 2"),
        pytest.param("root:tag", "root:tag", id="keep it as is 1"),
        pytest.param(f"root@{DIGEST}", f"root@{DIGEST}", id="keep it as is 2"),
        pytest.param("localhost:5000/img", "localhost:5000/img:latest", id="registry port, no tag"),
        pytest.param("", ":latest", id="empty name"),
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    """A tagless name (no ':' after the last '/') gets ':latest'."""
    assert normalized_image_name(name) == want


@pytest.mark.parametrize(
    ("total", "images", "want"),
    [
        (0, 1, 0),
        (MIN_THRESHOLD, 1, 0),
        (MIN_THRESHOLD + 1, 1, 0),
        (MAX_CONTAINER_THRESHOLD, 1, 100),
        (MAX_CONTAINER_THRESHOLD * 5, 2, 100),
        (MAX_CONTAINER_THRESHOLD, 2, 49),
        (0, 0, 0),
    ],
)
def test_calculate_priority(total: int, images: int, want: int) -> None:
    """Clamped to [23M, 1000M x images], mapped onto 0..100, truncating."""
    assert calculate_priority(total, images) == want


def test_scaled_image_score_truncates() -> None:
    """size * (nodes holding it / all nodes), truncated; an empty cluster scores 0."""
    assert scaled_image_score(ImageStateSummary(100, 1), 3) == 33
    assert scaled_image_score(ImageStateSummary(100, 2), 3) == 66
    assert scaled_image_score(ImageStateSummary(100, 1), 0) == 0


def test_pod_images_order_and_count() -> None:
    """Init containers, then containers, then image volumes, duplicates kept."""
    pod = spec_pod("a", "a", init=("b",), volumes=("c:1",))
    assert pod_images(pod) == ("b:latest", "a:latest", "a:latest", "c:1")


def test_score_without_pre_score_is_an_error() -> None:
    """Score reads the spread PreScore computed; without it the status is Error."""
    snapshot = Snapshot.from_objects(machines(NODE_40_300_2000))
    score, status = ImageLocality().score(
        CycleState(), spec_pod("gcr.io/40"), snapshot.nodes["machine1"]
    )
    assert (score, status.code) == (0, Code.ERROR)
    assert PRE_SCORE_STATE_KEY in status.reason


def test_replaced_node_object_is_reread() -> None:
    """The remembered image table follows the Node object, not its name."""
    plugin = ImageLocality()
    pod = spec_pod("gcr.io/2000")
    snapshot = Snapshot.from_objects(machines(NODE_40_300_2000))
    state = CycleState()
    plugin.pre_score(state, pod, [], snapshot)
    assert plugin.score(state, pod, snapshot.nodes["machine1"])[0] == 100
    snapshot.upsert(node_with("machine1", images=NODE_250_10))
    state = CycleState()
    plugin.pre_score(state, pod, [], snapshot)
    assert plugin.score(state, pod, snapshot.nodes["machine1"])[0] == 0


def _add_machine3(snapshot: Snapshot) -> None:
    snapshot.upsert(node_with("machine3", images=NODE_40_300_2000))


def _drop_machine1(snapshot: Snapshot) -> None:
    snapshot.delete({"kind": "Node", "metadata": {"name": "machine1"}})


def _swap_images(snapshot: Snapshot) -> None:
    snapshot.upsert(node_with("machine2", images=NODE_40_300_2000))


def _bind_pod(snapshot: Snapshot) -> None:
    snapshot.upsert(pod_with({"cpu": "1"}, node="machine2", name="bound"))


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param([_add_machine3], id="a node comes"),
        pytest.param([_drop_machine1], id="a node goes"),
        pytest.param([_swap_images], id="a Node object is replaced with other images"),
        pytest.param([_bind_pod], id="a pod is bound (no image changes)"),
        pytest.param(
            [_bind_pod, _swap_images, _drop_machine1, _add_machine3], id="all, one by one"
        ),
    ],
)
def test_image_counts_kept_by_the_journal_equal_a_fresh_count(changes: list[Any]) -> None:
    """PreScore's per-image node counts, kept in step with the snapshot's journal of
    node changes, equal those of a plugin that never saw the snapshot before."""
    plugin = ImageLocality()
    pod = spec_pod("gcr.io/40", "gcr.io/250", "gcr.io/2000")
    snapshot = Snapshot.from_objects(machines(NODE_40_300_2000, NODE_250_10))

    def pre(p: ImageLocality) -> Any:
        state = CycleState()
        p.pre_score(state, pod, [], snapshot)
        return state[PRE_SCORE_STATE_KEY]

    pre(plugin)
    for change in changes:
        change(snapshot)
        got, want = pre(plugin), pre(ImageLocality())
        assert (dict(got.num_nodes), got.total_nodes) == (dict(want.num_nodes), want.total_nodes)


def test_plugin_surface() -> None:
    """The plugin declares its name and what it reads."""
    assert ImageLocality.name == "ImageLocality"
    assert ImageLocality.reads.node_fields == ("status.images",)
