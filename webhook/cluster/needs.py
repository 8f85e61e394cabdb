"""Which kinds the cluster state holds, derived from what the scheduler profile reads.

One declaration instead of hand-kept lists: the informer lists and watches exactly
NEEDED, trim keeps them, `snapshot_objects` takes them, and a test holds the RBAC rules
of the install manifests to them. A kind is needed when a plugin of the profile
declares it (Reads.kinds), plus Node and Pod (every profile), Namespace (admission
reads namespace labels for injectNamespaceSelector), and PodDisruptionBudget and
PriorityClass (evictions, preemption and pod priorities, whatever the profile).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from webhook.scheduler.framework.types import Reads
from webhook.scheduler.profile import READS

__all__ = ["CATALOG", "NEEDED", "Kind", "needed_kinds"]


@dataclass(frozen=True)
class Kind:
    """A kind the cluster layer knows how to list: apiVersion, resource (plural), scope."""

    kind: str
    api_version: str
    resource: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        """The API group ("" for core)."""
        return self.api_version.rpartition("/")[0]

    @property
    def path(self) -> str:
        """The cluster-wide collection path (/api/v1/pods, /apis/apps/v1/replicasets)."""
        root = "/apis/" if self.group else "/api/"
        return f"{root}{self.api_version}/{self.resource}"


CATALOG: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind("Node", "v1", "nodes", namespaced=False),
        Kind("Pod", "v1", "pods"),
        Kind("Service", "v1", "services"),
        Kind("ReplicationController", "v1", "replicationcontrollers"),
        Kind("ReplicaSet", "apps/v1", "replicasets"),
        Kind("StatefulSet", "apps/v1", "statefulsets"),
        Kind("Namespace", "v1", "namespaces", namespaced=False),
        Kind("PersistentVolume", "v1", "persistentvolumes", namespaced=False),
        Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims"),
        Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", namespaced=False),
        Kind("CSINode", "storage.k8s.io/v1", "csinodes", namespaced=False),
        Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets"),
        Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", namespaced=False),
    )
}

# Read by every profile, and by admission itself.
ALWAYS = ("Node", "Pod")
ADMISSION = ("Namespace",)
# Read whatever the profile: the budgets that decide which evictions the Eviction API
# allows (the audit's drills and plans) and that preemption weighs, and the classes
# that resolve a manifest's priorityClassName as the Priority admission plugin does.
DISRUPTION = ("PodDisruptionBudget", "PriorityClass")


def needed_kinds(reads: Iterable[Reads]) -> tuple[Kind, ...]:
    """The kinds to hold for plugins declaring `reads`, in CATALOG order."""
    wanted = {*ALWAYS, *ADMISSION, *DISRUPTION}
    for r in reads:
        wanted.update(r.kinds)
    unknown = wanted - CATALOG.keys()
    if unknown:
        raise ValueError(f"no way to list {sorted(unknown)}: add them to CATALOG")
    return tuple(k for name, k in CATALOG.items() if name in wanted)


NEEDED: tuple[Kind, ...] = needed_kinds(READS)
