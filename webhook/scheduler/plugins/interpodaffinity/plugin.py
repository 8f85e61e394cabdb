"""The InterPodAffinity plugin: its args, what it reads, and its extension points.

Port of kube-scheduler's interpodaffinity/plugin.go (New, args defaults and
ValidateHardPodAffinityWeight's range), wiring filtering.py and scoring.py.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import ClassVar, Final

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import InterPodAffinityArgs
from webhook.scheduler.config.validation import validate_inter_pod_affinity_args
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import CycleState, Reads, Status
from webhook.scheduler.plugins.interpodaffinity import filtering, scoring
from webhook.scheduler.plugins.interpodaffinity.common import NAME, ExistingTermsIndex

__all__ = ["DEFAULT_ARGS", "NAME", "InterPodAffinity", "InterPodAffinityArgs"]

DEFAULT_ARGS: Final = InterPodAffinityArgs()


class InterPodAffinity:
    """PreFilter, Filter, PreFilterExtensions (types.PreFilterExtensions and
    RemovePods), PreScore, Score and NormalizeScore of InterPodAffinity.

    One instance per profile, built once (plugin.go New). It owns the index of the
    affinity terms of bound pods (common.ExistingTermsIndex), kept in step with
    whichever snapshot a decision reads; `warm(snapshot)` builds it ahead of the
    first decision.
    """

    name: ClassVar[str] = NAME
    node_key_reads_pod: ClassVar[bool] = True
    # Filter reads the node's labels and its PreFilter state only: the node's pods
    # ("pods" below, for PreFilter) reach it through the counts AddPod/RemovePod keep.
    filter_reads_pods_through_state: ClassVar[bool] = True
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        kinds=("Namespace",),
        pod_fields=(
            "metadata.namespace",
            "metadata.labels",
            "spec.affinity.podAffinity",
            "spec.affinity.podAntiAffinity",
        ),
        node_fields=("metadata.labels", "pods"),
        existing_pod_fields=(
            "metadata.namespace",
            "metadata.labels",
            "metadata.deletionTimestamp",
            "spec.affinity.podAffinity",
            "spec.affinity.podAntiAffinity",
        ),
    )

    def __init__(self, args: InterPodAffinityArgs = DEFAULT_ARGS) -> None:
        problems = validate_inter_pod_affinity_args(args)
        if problems:
            raise ValueError("; ".join(problems))
        self.args = args
        self.index = ExistingTermsIndex()

    def warm(self, snapshot: Snapshot) -> None:
        """Index every bound pod's terms now rather than in the first decision."""
        self.index.sync(snapshot)

    # ---- filter ---------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        return filtering.pre_filter(state, pod, snapshot, self.index)

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        return filtering.filter_node(state, node)

    def add_pod(
        self, state: CycleState, pod: RawObj, pod_to_add: RawObj, node: NodeInfo
    ) -> Status:
        """PreFilterExtensions.AddPod (preemption, nominated pods)."""
        return filtering.add_pod(state, pod, pod_to_add, node)

    def remove_pod(
        self, state: CycleState, pod: RawObj, pod_to_remove: RawObj, node: NodeInfo
    ) -> Status:
        """PreFilterExtensions.RemovePod (preemption)."""
        return filtering.remove_pod(state, pod, pod_to_remove, node)

    def remove_pods(
        self, state: CycleState, pod: RawObj, pods: Sequence[RawObj], node: NodeInfo
    ) -> Status:
        """RemovePod for each of `pods` (all on `node`), the state rebuilt once."""
        return filtering.remove_pods(state, pod, pods, node)

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        return filtering.filter_node_key(state, node)

    def node_label_keys(self, state: CycleState, pod: RawObj) -> tuple[str, ...] | None:
        """The node labels Filter reads (after PreFilter), unless one of them has a value
        per node: grouping by them would then make a group of every node."""
        return filtering.filter_label_keys(state)

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable | None:
        """What Filter reads of the pod and of the other nodes' pods (after PreFilter):
        the counts its verdicts depend on beyond the node itself."""
        return filtering.filter_pod_key(state)

    # ---- score ----------------------------------------------------------------------

    def pre_score(
        self, state: CycleState, pod: RawObj, nodes: Sequence[NodeInfo], snapshot: Snapshot
    ) -> Status:
        return scoring.pre_score(
            state,
            pod,
            snapshot,
            self.index,
            self.args.hard_pod_affinity_weight,
            self.args.ignore_preferred_terms_of_existing_pods,
        )

    def score(self, state: CycleState, pod: RawObj, node: NodeInfo) -> tuple[int, Status]:
        return scoring.score_node(state, node)

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        return scoring.normalize_score(state, scores)

    def score_label_keys(self, state: CycleState, pod: RawObj) -> tuple[str, ...] | None:
        """The node labels Score reads for this pod (after PreScore): the topology keys
        PreScore summed weights for."""
        return scoring.score_label_keys(state)
