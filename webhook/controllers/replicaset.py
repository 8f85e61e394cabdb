"""Which pods a ReplicaSet (or ReplicationController) deletes when it has too many:
its active pods ranked by ActivePodsWithRanks (ranking.py), the rank of a pod being
the number of active related pods on its node, the related pods those of every
ReplicaSet with the same controller (a Deployment's old and new ReplicaSets).

    doomed = get_pods_to_delete(active, related, diff, now)

CAVEAT: related pods are found here by controller reference (a pod whose controller
is one of the related ReplicaSets); upstream lists them by each ReplicaSet's
selector, which also counts a matching pod another controller owns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from webhook.api.kube import RawObj, meta, pod_namespace, spec
from webhook.api.kube import controller_of as controller_ref
from webhook.controllers.ranking import ActivePodsWithRanks, is_pod_active

__all__ = [
    "controller_ref",
    "get_indirectly_related_pods",
    "get_pods_to_delete",
    "get_replica_sets_with_same_controller",
    "pods_ranked_by_related_pods_on_same_node",
]


def _ref_key(ref: RawObj) -> tuple[str, str, str]:
    # The UID when there is one (upstream indexes by it); kind and name otherwise.
    uid = ref.get("uid")
    if isinstance(uid, str) and uid:
        return ("uid", uid, "")
    return ("ref", str(ref.get("kind") or ""), str(ref.get("name") or ""))


def get_replica_sets_with_same_controller(
    rs: RawObj, replica_sets: Iterable[RawObj]
) -> list[RawObj]:
    """The ReplicaSets of `rs`'s namespace whose controller is `rs`'s controller (`rs`
    included); none when `rs` has no controller.

    Port of replica_set.go: getReplicaSetsWithSameController."""
    ref = controller_ref(rs)
    if ref is None:
        return []
    key = _ref_key(ref)
    ns = pod_namespace(rs)
    out = []
    for other in replica_sets:
        theirs = controller_ref(other)
        if theirs is not None and pod_namespace(other) == ns and _ref_key(theirs) == key:
            out.append(other)
    return out


def get_indirectly_related_pods(
    rs: RawObj, replica_sets: Iterable[RawObj], pods: Iterable[RawObj]
) -> list[RawObj]:
    """The pods of every ReplicaSet with the same controller as `rs`, each once.

    Port of replica_set.go: getIndirectlyRelatedPods (see the CAVEAT above)."""
    related = get_replica_sets_with_same_controller(rs, replica_sets)
    names = {(pod_namespace(r), str(meta(r).get("name") or "")) for r in related}
    out: list[RawObj] = []
    seen: set[tuple[str, str]] = set()
    for pod in pods:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            continue
        ns = pod_namespace(pod)
        if (ns, str(ref.get("name") or "")) not in names:
            continue
        key = (ns, str(meta(pod).get("uid") or meta(pod).get("name") or ""))
        if key in seen:
            continue
        seen.add(key)
        out.append(pod)
    return out


def pods_ranked_by_related_pods_on_same_node(
    pods_to_rank: Sequence[RawObj], related: Iterable[RawObj], now: datetime | None
) -> ActivePodsWithRanks:
    """Each pod ranked by the number of active related pods on its node.

    Port of replica_set.go: getPodsRankedByRelatedPodsOnSameNode."""
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = str(spec(pod).get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1
    ranks = [on_node.get(str(spec(p).get("nodeName") or ""), 0) for p in pods_to_rank]
    return ActivePodsWithRanks(pods_to_rank, ranks, now)


def get_pods_to_delete(
    filtered: Sequence[RawObj], related: Iterable[RawObj], diff: int, now: datetime | None
) -> list[RawObj]:
    """The first `diff` of the active pods `filtered`, ranked (unsorted when all go).

    Port of replica_set.go: getPodsToDelete."""
    if diff < len(filtered):
        return pods_ranked_by_related_pods_on_same_node(filtered, related, now).sorted()[:diff]
    return list(filtered[:diff])
