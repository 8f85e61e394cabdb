"""The workloads the drills are asked about: KIND/NAMESPACE/NAME as the flags take it,
and what a drill request holds.

    request = WorkloadRequest(scales=[parse_scale("deploy/shop/web=3")], now=now)
    check_target(state, target)          # ValueError naming the namespace's workloads
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from webhook.api.kube import RawObj, pod_namespace
from webhook.audit.state.inventory import ClusterState, Workload

__all__ = [
    "KINDS",
    "Target",
    "WorkloadRequest",
    "check_target",
    "known_workloads",
    "parse_rollout",
    "parse_scale",
    "parse_target",
]

# KIND as the flags take it (case-insensitive; kubectl's short names) -> the kind.
KINDS = {
    "deployment": "Deployment",
    "deploy": "Deployment",
    "replicaset": "ReplicaSet",
    "rs": "ReplicaSet",
    "statefulset": "StatefulSet",
    "sts": "StatefulSet",
    "replicationcontroller": "ReplicationController",
    "rc": "ReplicationController",
}
# The kinds the drills scale.
_SCALED_KINDS = frozenset(KINDS.values())

# A workload named on the command line (Workload.flag is how the flags write it).
Target = Workload


@dataclass(frozen=True)
class WorkloadRequest:
    """What the flags ask: scales (target, replicas) in the order given, or one rollout
    (target, the Deployment read from FILE or None); `now`: the controllers' clock;
    `server_version`: the API server admitting the new pods (None: the newest)."""

    scales: list[tuple[Target, int]] = field(default_factory=list)
    rollout: tuple[Target, RawObj | None] | None = None
    now: datetime | None = None
    server_version: tuple[int, int] | None = None


def parse_target(text: str) -> Target:
    """KIND/NAMESPACE/NAME; ValueError saying what is wrong."""
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"{text!r}: expected KIND/NAMESPACE/NAME")
    kind = KINDS.get(parts[0].lower())
    if kind is None:
        raise ValueError(
            f"{text!r}: unknown kind {parts[0]!r} (deployment, replicaset, statefulset, "
            "replicationcontroller, or deploy, rs, sts, rc)"
        )
    return Workload(parts[1], kind, parts[2])


def parse_scale(text: str) -> tuple[Target, int]:
    """KIND/NAMESPACE/NAME=N with N >= 0; ValueError."""
    workload, sep, count = text.partition("=")
    if not sep:
        raise ValueError(f"{text!r}: expected KIND/NAMESPACE/NAME=N")
    target = parse_target(workload)
    if not count.isascii() or not count.isdigit():
        raise ValueError(f"{text!r}: N must be a whole number 0 or more, got {count!r}")
    return target, int(count)


def parse_rollout(text: str) -> tuple[Target, str | None]:
    """deployment/NAMESPACE/NAME[=FILE]; ValueError."""
    workload, sep, path = text.partition("=")
    target = parse_target(workload)
    if target.kind != "Deployment":
        raise ValueError(f"{text!r}: a rollout is a Deployment's (deployment/NAMESPACE/NAME)")
    if sep and not path:
        raise ValueError(f"{text!r}: FILE is empty")
    return target, path or None


def known_workloads(state: ClusterState, namespace: str) -> list[str]:
    """The workloads of `namespace` the drills can scale, as the flags name them."""
    found: set[Target] = set()
    for kind, ns, name in state.owners:
        if ns == namespace and kind in _SCALED_KINDS:
            found.add(Workload(ns, kind, name))
    for pod in (*state.running, *state.unscheduled):
        if pod_namespace(pod) != namespace:
            continue
        w = state.workload_of(pod)
        if w.kind in _SCALED_KINDS:
            found.add(w)
    return [t.flag for t in sorted(found)]


def check_target(state: ClusterState, target: Target) -> None:
    """ValueError naming the namespace's workloads when `target` is not one of them."""
    if (target.kind, target.namespace, target.name) in state.owners:
        return
    known = known_workloads(state, target.namespace)
    if target.flag not in known:
        listed = ", ".join(known) if known else "none"
        raise ValueError(
            f"{target.flag}: no such workload; the workloads of namespace "
            f"{target.namespace!r}: {listed}"
        )
