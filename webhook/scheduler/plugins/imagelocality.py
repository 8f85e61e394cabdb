"""The ImageLocality score plugin: nodes that already hold the pod's images score
higher, scaled by how widely each image has spread
(pkg/scheduler/framework/plugins/imagelocality/image_locality.go, with the
scheduler cache's image states: backend/cache/snapshot.go createImageExistenceMap
and getNodeImageStates).

Per release: v1.35 counts the images of the containers and init containers; v1.36
adds image volumes (spec.volumes[].image.reference) to the sum but not to the number
of images that sets the upper bound; v1.37 counts them in both.

Per node: each image the node lists (node.status.images, under every one of its
names) scores its size times spread = (nodes holding it) / (all nodes), truncated;
the sum is clamped to [23 MiB, 1000 MiB x number of images] and mapped linearly
onto 0..100 with Go's integer division. An image name without a tag is looked up
with ":latest" appended.

Spread is counted as backend/cache/snapshot.go NewSnapshot counts it
(createImageExistenceMap): over all the snapshot's Node objects, each node once per
image name however often it lists the name, with the size the node itself reports.

CAVEAT: "all nodes" are the snapshot's nodes with a Node object, as the
scheduler's NodeInfos().List(); names are matched literally otherwise
(docker.io/library/x and x are different images, as upstream's TODO says). The
live scheduler cache differs in two corners: a node's image counts are copied when
that node last changed (not recounted when another node pulls the image), and an
image name keeps the size of the first node that reported it.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from webhook.api.kube import RawObj
from webhook.api.versions import Features
from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SUCCESS,
    Code,
    CycleState,
    Reads,
    Status,
)

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "PLUGIN_NAME",
    "PRE_SCORE_STATE_KEY",
    "ImageLocality",
    "ImageLocalityPreScoreState",
    "ImageStateSummary",
    "calculate_priority",
    "node_image_sizes",
    "normalized_image_name",
    "pod_images",
    "scaled_image_score",
]

PLUGIN_NAME = "ImageLocality"
PRE_SCORE_STATE_KEY = "PreScore" + PLUGIN_NAME
MISSING_STATE = Status(Code.ERROR, f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')

MB = 1024 * 1024
# The bounds of the image score range: a reasonable size range for compressed
# container images (90% of Docker Hub's fall in it); the upper bound is per image.
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
DEFAULT_IMAGE_TAG = "latest"
# Nodes whose image table is remembered (by Node object identity) before starting afresh.
MAX_REMEMBERED_NODES = 50_000


@dataclass(frozen=True, slots=True)
class ImageStateSummary:
    """framework.ImageStateSummary: an image's size on a node and on how many of the
    cluster's nodes it is present (under this name)."""

    size: int
    num_nodes: int


@dataclass(frozen=True)
class ImageLocalityPreScoreState:
    """What PreScore leaves for Score.

    images: the pod's normalized image names, one per image source (containers,
    init containers, image volumes), duplicates kept as upstream counts them;
    num_nodes: for each distinct name, how many nodes list it; total_nodes: the
    number of nodes in the snapshot (0 only for an empty snapshot).
    """

    images: tuple[str, ...]
    num_nodes: Mapping[str, int]
    total_nodes: int
    # The number of images that sets the upper bound (calculatePriority's count); None:
    # len(images).
    bound: int | None = None


def normalized_image_name(name: str) -> str:
    """The name with ":latest" appended when it carries no tag (no ':' after the last
    '/'); a digest reference keeps its '@sha256:...' and so is left as is.

    Port of image_locality.go: normalizedImageName.
    """
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:{DEFAULT_IMAGE_TAG}"
    return name


def _images_of(containers: Any) -> Iterable[str]:
    for container in containers if isinstance(containers, list) else ():
        image = container.get("image") if isinstance(container, dict) else None
        yield image if isinstance(image, str) else ""


def pod_images(pod: RawObj, *, volumes: bool = True) -> tuple[str, ...]:
    """The normalized image of every image source of the pod: init containers,
    containers, then (unless `volumes` is False, as before v1.36) image volumes.

    Port of image_locality.go: sumImageScores (the sources it walks).
    """
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return ()
    names = [*_images_of(spec.get("initContainers")), *_images_of(spec.get("containers"))]
    listed = spec.get("volumes") if volumes else None
    for volume in listed if isinstance(listed, list) else ():
        image = volume.get("image") if isinstance(volume, dict) else None
        if isinstance(image, dict):
            reference = image.get("reference")
            names.append(reference if isinstance(reference, str) else "")
    return tuple(normalized_image_name(n) for n in names)


def node_image_sizes(node: RawObj) -> dict[str, int]:
    """Every name of every image the node lists -> the image's size in bytes.

    Port of backend/cache/snapshot.go: getNodeImageStates (the sizes; NumNodes is
    counted over all nodes by PreScore).
    """
    status = node.get("status") if isinstance(node, dict) else None
    images = status.get("images") if isinstance(status, dict) else None
    out: dict[str, int] = {}
    for image in images if isinstance(images, list) else ():
        if not isinstance(image, dict):
            continue
        size = image.get("sizeBytes")
        size = size if isinstance(size, int) and not isinstance(size, bool) else 0
        names = image.get("names")
        for name in names if isinstance(names, list) else ():
            if isinstance(name, str):
                out[name] = size
    return out


def scaled_image_score(state: ImageStateSummary, total_nodes: int) -> int:
    """The image's size scaled by its spread (nodes holding it / all nodes), truncated;
    this damps the pull of an image only a few nodes hold ("node heating").

    Port of image_locality.go: scaledImageScore.

    CAVEAT: an empty snapshot (total_nodes 0) scores 0, where Go would divide by zero.
    """
    if total_nodes <= 0:
        return 0
    spread = state.num_nodes / total_nodes
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_images: int) -> int:
    """sum_scores clamped to [MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD * num_images] and
    mapped onto 0..MAX_NODE_SCORE (truncating).

    Port of image_locality.go: calculatePriority.
    """
    max_threshold = MAX_CONTAINER_THRESHOLD * num_images
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class _ImageCounts(NamedTuple):
    """ImageLocality's image counts of one snapshot: nodes, its Node objects by name
    (those counted); counts, how many of them list each image name; version and mark,
    the snapshot's version and journal mark when they were taken."""

    nodes: dict[str, RawObj]
    counts: Counter[str]
    version: int
    mark: tuple[int, int]


class ImageLocality:
    """The plugin (no args).

    Port of image_locality.go: New. Upstream's Score lists every node to count the
    image spread; here PreScore does that once per pod and never skips.
    """

    name: ClassVar[str] = PLUGIN_NAME
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        pod_fields=(
            "spec.containers[].image",
            "spec.initContainers[].image",
            "spec.volumes[].image.reference",
        ),
        node_fields=("status.images",),
    )

    def __init__(self, *, features: Features | None = None) -> None:
        version = (features if features is not None else Features()).version
        # Image volumes count in the sum from v1.36, in the upper bound from v1.37.
        self._volumes_in_sum = version.at_least(36)
        self._volumes_in_bound = version.at_least(37)
        # id(Node object) -> (that object, its node_image_sizes): Node objects in a
        # snapshot are replaced, never edited, so identity is a safe key while we
        # hold the object.
        self._sizes: dict[int, tuple[RawObj, dict[str, int]]] = {}
        # snapshot -> how many of its nodes list each image name, kept in step with the
        # snapshot's journal of node changes (only the nodes changed since are read).
        self._counts: weakref.WeakKeyDictionary[Snapshot, _ImageCounts] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def _image_sizes(self, node: RawObj) -> dict[str, int]:
        hit = self._sizes.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        if len(self._sizes) >= MAX_REMEMBERED_NODES:
            self._sizes = {}
        sizes = node_image_sizes(node)
        self._sizes[id(node)] = (node, sizes)
        return sizes

    def _image_counts(self, snapshot: Snapshot) -> tuple[Counter[str], int]:
        """How many of the snapshot's nodes list each image name, and how many nodes
        there are; counted once per snapshot, then only for the nodes the snapshot's
        journal names as changed (and of those, only Node objects replaced count)."""
        with self._lock:
            hit = self._counts.get(snapshot)
            version = snapshot.version
            if hit is not None and hit.version == version:
                return hit.counts, len(hit.nodes)  # nothing changed since
            # The mark first, then what changed up to now: a change journaled between
            # the two is read now and again next time, never missed.
            mark = snapshot.journal_mark()
            changed = snapshot.changed_since(hit.mark) if hit is not None else None
            if hit is None or changed is None:
                nodes = {name: info.node for name, info in snapshot.nodes.items()}
                counts: Counter[str] = Counter()
                for obj in nodes.values():
                    counts.update(self._image_sizes(obj).keys())
                self._counts[snapshot] = _ImageCounts(nodes, counts, version, mark)
                return counts, len(nodes)
            nodes, counts = hit.nodes, hit.counts
            replaced: list[tuple[str, RawObj | None]] = []
            for name in changed:
                info = snapshot.nodes.get(name)
                node = info.node if info is not None else None
                if node is not nodes.get(name):
                    replaced.append((name, node))
            if replaced:
                # A new Counter: a PreScore may still be reading the last one.
                counts = Counter(counts)
                for name, node in replaced:
                    old = nodes.pop(name, None)
                    if old is not None:
                        counts.subtract(self._image_sizes(old).keys())
                    if node is not None:
                        counts.update(self._image_sizes(node).keys())
                        nodes[name] = node
            self._counts[snapshot] = _ImageCounts(nodes, counts, version, mark)
            return counts, len(nodes)

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status:
        """The pod's images and, for each, how many of the snapshot's nodes hold it.

        Port of backend/cache/snapshot.go: createImageExistenceMap (restricted to the
        pod's images) and the node count image_locality.go's Score takes.
        """
        with_volumes = pod_images(pod)
        containers = pod_images(pod, volumes=False)
        images = with_volumes if self._volumes_in_sum else containers
        bound = len(with_volumes) if self._volumes_in_bound else len(containers)
        wanted = set(images)
        if wanted:
            held, total = self._image_counts(snapshot)
            counts = {name: max(0, held[name]) for name in wanted}
        else:
            counts, total = {}, len(snapshot.nodes)
        state[PRE_SCORE_STATE_KEY] = ImageLocalityPreScoreState(images, counts, total, bound)
        return SUCCESS

    def score(self, state: CycleState, pod: RawObj, node: NodeInfo) -> tuple[int, Status]:
        """The node's image locality score, 0..MAX_NODE_SCORE.

        Port of image_locality.go: ImageLocality.Score with sumImageScores.
        """
        pre = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(pre, ImageLocalityPreScoreState):
            return 0, MISSING_STATE
        sizes = self._image_sizes(node.node)
        total = 0
        for name in pre.images:
            size = sizes.get(name)
            if size is not None:
                summary = ImageStateSummary(size, pre.num_nodes.get(name, 0))
                total += scaled_image_score(summary, pre.total_nodes)
        bound = len(pre.images) if pre.bound is None else pre.bound
        return calculate_priority(total, bound), SUCCESS

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """No normalisation (ScoreExtensions nil)."""
        return SUCCESS

    def score_key(self, state: CycleState, pod: RawObj) -> Hashable:
        """What Score reads besides the node (after PreScore): the pod's images, how many
        nodes hold each and how many nodes there are; the raw score then reads only the
        node's own images, so it holds while the node does."""
        pre = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(pre, ImageLocalityPreScoreState):
            return None
        return (
            tuple(pre.images),
            tuple(sorted(pre.num_nodes.items())),
            pre.total_nodes,
            pre.bound,
        )

    def score_node_key(self, node: NodeInfo) -> Hashable:
        """What Score reads of a node, whatever the pod: its images' names and sizes."""
        return tuple(sorted(self._image_sizes(node.node).items()))
