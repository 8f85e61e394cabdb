"""How the Deployment controller moves its ReplicaSets: the rolling update's steps
(reconcile the new ReplicaSet, clean up unhealthy old replicas, scale old ones
down within the unavailability budget), Recreate, and proportional scaling when the
Deployment's size changes mid-rollout; with deployment_util.go's arithmetic
(ResolveFenceposts, MaxSurge, MaxUnavailable, NewRSNewReplicas, GetProportion).

    d = DeploymentSpec(replicas=10, strategy=ROLLING, max_surge="25%", max_unavailable="25%")
    reconcile_new_replica_set(all_rss, new_rs, d)        # True when it scaled new_rs

The ReplicaSets are small mutable records (ReplicaSetState): a step sets their
`replicas` as the controller would update spec.replicas (and the desired/max
replicas annotations); the caller's ReplicaSet controller then creates or deletes
pods to match, and reports `available` back.

Go arithmetic: int32 values, integer division truncating, math.Round half away from
zero (gotime.go_round), intstr percentages rounded up (surge) or down
(unavailable).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from webhook.controllers.gotime import go_round

__all__ = [
    "RECREATE",
    "ROLLING",
    "DeploymentSpec",
    "ReplicaSetState",
    "cleanup_unhealthy_replicas",
    "find_active_or_latest",
    "get_proportion",
    "get_replica_set_fraction",
    "is_saturated",
    "max_surge",
    "max_unavailable",
    "min_available",
    "new_rs_new_replicas",
    "reconcile_new_replica_set",
    "reconcile_old_replica_sets",
    "resolve_fenceposts",
    "scale",
    "scale_down_old_replica_sets_for_recreate",
    "scale_down_old_replica_sets_for_rolling_update",
    "scaled_value",
]

ROLLING = "RollingUpdate"
RECREATE = "Recreate"
IntOrPercent = int | str | None


@dataclass
class ReplicaSetState:
    """A ReplicaSet as the Deployment controller reads it.

    replicas: spec.replicas; available: status.availableReplicas; created:
    creationTimestamp (None: the zero time); desired, max_replicas: the
    deployment.kubernetes.io/desired-replicas and max-replicas annotations (None:
    absent or unreadable)."""

    name: str
    replicas: int
    available: int = 0
    created: datetime | None = None
    desired: int | None = None
    max_replicas: int | None = None


@dataclass(frozen=True)
class DeploymentSpec:
    """What the controller reads of a Deployment: spec.replicas, the strategy and its
    rolling-update parameters (None: unset, read as 0 by ResolveFenceposts; the API
    server defaults both to 25%), and status.replicas (GetProportion's fallback)."""

    replicas: int
    strategy: str = ROLLING
    max_surge: IntOrPercent = None
    max_unavailable: IntOrPercent = None
    status_replicas: int = 0


def scaled_value(value: IntOrPercent, total: int, round_up: bool) -> int:
    """An int, or a percentage of `total` rounded up or down.

    Port of apimachinery intstr: GetScaledValueFromIntOrPercent (ValueOrDefault 0)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError(
            f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}"
        )
    digits = value[:-1]
    try:
        percent = int(digits)
    except ValueError:
        raise ValueError(f"invalid value {value!r}") from None
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(
    surge: IntOrPercent, unavailable: IntOrPercent, desired: int
) -> tuple[int, int]:
    """(maxSurge rounded up, maxUnavailable rounded down) of `desired`; both 0 makes
    maxUnavailable 1 (surge may be refused by quota). ValueError on a bad value.

    Port of deployment_util.go: ResolveFenceposts."""
    s = scaled_value(surge, desired, True)
    u = scaled_value(unavailable, desired, False)
    if s == 0 and u == 0:
        u = 1
    return s, u


def max_surge(d: DeploymentSpec) -> int:
    """Port of deployment_util.go: MaxSurge."""
    if d.strategy != ROLLING:
        return 0
    return resolve_fenceposts(d.max_surge, d.max_unavailable, d.replicas)[0]


def max_unavailable(d: DeploymentSpec) -> int:
    """Port of deployment_util.go: MaxUnavailable (never more than the replicas)."""
    if d.strategy != ROLLING or d.replicas == 0:
        return 0
    return min(resolve_fenceposts(d.max_surge, d.max_unavailable, d.replicas)[1], d.replicas)


def min_available(d: DeploymentSpec) -> int:
    """Port of deployment_util.go: MinAvailable."""
    if d.strategy != ROLLING:
        return 0
    return d.replicas - max_unavailable(d)


def _total(rss: Sequence[ReplicaSetState | None]) -> int:
    return sum(rs.replicas for rs in rss if rs is not None)


def _available(rss: Sequence[ReplicaSetState | None]) -> int:
    return sum(rs.available for rs in rss if rs is not None)


def _sorted_by_created(rss: Sequence[ReplicaSetState]) -> list[ReplicaSetState]:
    # controller.ReplicaSetsByCreationTimestamp: older first, then by name; the zero
    # time is before every other.
    zero = sorted((r for r in rss if r.created is None), key=lambda r: r.name)
    timed = sorted((r for r in rss if r.created is not None), key=lambda r: (r.created, r.name))
    return zero + timed


def new_rs_new_replicas(
    d: DeploymentSpec, all_rss: Sequence[ReplicaSetState | None], new: ReplicaSetState
) -> int:
    """The size the new ReplicaSet may grow to now.

    Port of deployment_util.go: NewRSNewReplicas."""
    if d.strategy == RECREATE:
        return d.replicas
    if d.strategy != ROLLING:
        raise ValueError(f"deployment type {d.strategy} isn't supported")
    surge = scaled_value(d.max_surge, d.replicas, True)
    current = _total(all_rss)
    most = d.replicas + surge
    if current >= most:
        return new.replicas
    return new.replicas + min(most - current, d.replicas - new.replicas)


def _scale_to(rs: ReplicaSetState, size: int, d: DeploymentSpec) -> bool:
    """Set a ReplicaSet's size and annotations as scaleReplicaSet does; whether the
    size changed."""
    changed = rs.replicas != size
    rs.replicas = size
    rs.desired = d.replicas
    rs.max_replicas = d.replicas + max_surge(d)
    return changed


def reconcile_new_replica_set(
    all_rss: Sequence[ReplicaSetState | None], new: ReplicaSetState, d: DeploymentSpec
) -> bool:
    """Scale the new ReplicaSet toward the Deployment's size within maxSurge (or down
    to it); whether it scaled.

    Port of rolling.go: reconcileNewReplicaSet."""
    if new.replicas == d.replicas:
        return False
    if new.replicas > d.replicas:
        return _scale_to(new, d.replicas, d)
    return _scale_to(new, new_rs_new_replicas(d, all_rss, new), d)


def cleanup_unhealthy_replicas(
    old: list[ReplicaSetState], d: DeploymentSpec, max_cleanup: int
) -> tuple[list[ReplicaSetState], int]:
    """Scale old ReplicaSets down by their unavailable replicas, oldest first, at most
    `max_cleanup` in all (their controller deletes not-Ready pods first, so this costs
    no availability); the ReplicaSets, oldest first, and how many went.

    Port of rolling.go: cleanupUnhealthyReplicas."""
    ordered = _sorted_by_created(old)
    total = 0
    for rs in ordered:
        if total >= max_cleanup:
            break
        if rs.replicas == 0 or rs.replicas == rs.available:
            continue
        count = min(max_cleanup - total, rs.replicas - rs.available)
        _scale_to(rs, rs.replicas - count, d)
        total += count
    return ordered, total


def scale_down_old_replica_sets_for_rolling_update(
    all_rss: Sequence[ReplicaSetState | None], old: list[ReplicaSetState], d: DeploymentSpec
) -> int:
    """Scale old ReplicaSets down, oldest first, by as many replicas as are available
    beyond minAvailable; how many went.

    Port of rolling.go: scaleDownOldReplicaSetsForRollingUpdate."""
    least = d.replicas - max_unavailable(d)
    available = _available(all_rss)
    if available <= least:
        return 0
    budget = available - least
    total = 0
    for rs in _sorted_by_created(old):
        if total >= budget:
            break
        if rs.replicas == 0:
            continue
        count = min(rs.replicas, budget - total)
        _scale_to(rs, rs.replicas - count, d)
        total += count
    return total


def reconcile_old_replica_sets(
    all_rss: Sequence[ReplicaSetState | None],
    old: list[ReplicaSetState],
    new: ReplicaSetState,
    d: DeploymentSpec,
) -> bool:
    """Scale old ReplicaSets down as far as maxUnavailable allows, their unhealthy
    replicas first; whether any scaled.

    Port of rolling.go: reconcileOldReplicaSets."""
    if _total(old) == 0:
        return False
    all_count = _total(all_rss)
    least = d.replicas - max_unavailable(d)
    new_unavailable = new.replicas - new.available
    most_down = all_count - least - new_unavailable
    if most_down <= 0:
        return False
    ordered, cleaned = cleanup_unhealthy_replicas(old, d, most_down)
    scaled = scale_down_old_replica_sets_for_rolling_update([*ordered, new], ordered, d)
    return cleaned + scaled > 0


def scale_down_old_replica_sets_for_recreate(
    old: Sequence[ReplicaSetState], d: DeploymentSpec
) -> bool:
    """Every old ReplicaSet to 0; whether any scaled.

    Port of recreate.go: scaleDownOldReplicaSetsForRecreate."""
    scaled = False
    for rs in old:
        if rs.replicas != 0:
            scaled = _scale_to(rs, 0, d) or scaled
    return scaled


def is_saturated(d: DeploymentSpec, rs: ReplicaSetState | None) -> bool:
    """The ReplicaSet has the Deployment's size, annotated so, all available.

    Port of deployment_util.go: IsSaturated."""
    if rs is None or rs.desired is None:
        return False
    return rs.replicas == d.replicas and rs.desired == d.replicas and rs.available == d.replicas


def find_active_or_latest(
    new: ReplicaSetState | None, old: Sequence[ReplicaSetState]
) -> ReplicaSetState | None:
    """The only ReplicaSet with replicas; with none, the newest (new first); with
    several, None.

    Port of deployment_util.go: FindActiveOrLatest."""
    if new is None and not old:
        return None
    newest_first = list(reversed(_sorted_by_created(old)))
    active = [rs for rs in [*newest_first, new] if rs is not None and rs.replicas > 0]
    if not active:
        return new if new is not None else newest_first[0]
    if len(active) == 1:
        return active[0]
    return None


def get_replica_set_fraction(rs: ReplicaSetState, d: DeploymentSpec) -> int:
    """How many replicas `rs` gains (or loses) when the Deployment's maximum size
    moves from the one annotated on `rs` to the current one.

    Port of deployment_util.go: getReplicaSetFraction."""
    if d.replicas == 0:
        return -rs.replicas
    most = d.replicas + max_surge(d)
    before = rs.max_replicas
    if before is None or before == 0:
        before = d.status_replicas
        if before == 0:
            return 0
    return go_round(rs.replicas * most / before) - rs.replicas


def get_proportion(rs: ReplicaSetState | None, d: DeploymentSpec, to_add: int, added: int) -> int:
    """`rs`'s share of `to_add` replicas, `added` already handed out, never past it.

    Port of deployment_util.go: GetProportion."""
    if rs is None or rs.replicas == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = get_replica_set_fraction(rs, d)
    allowed = to_add - added
    if to_add > 0:
        return min(fraction, allowed)
    return max(fraction, allowed)


def scale(d: DeploymentSpec, new: ReplicaSetState | None, old: Sequence[ReplicaSetState]) -> None:
    """A change of the Deployment's size: one active ReplicaSet takes it all; a
    saturated new one leaves the old ones at 0; otherwise (RollingUpdate) the
    change is split in proportion to the ReplicaSets' sizes, the largest first
    (newest first when scaling up, oldest first when scaling down), the leftover to
    the first.

    Port of sync.go: scale."""
    only = find_active_or_latest(new, old)
    if only is not None:
        if only.replicas != d.replicas:
            _scale_to(only, d.replicas, d)
        return
    if is_saturated(d, new):
        for rs in old:
            if rs.replicas > 0:
                _scale_to(rs, 0, d)
        return
    if d.strategy != ROLLING:
        return
    active = [rs for rs in [*old, new] if rs is not None and rs.replicas > 0]
    allowed = d.replicas + max_surge(d) if d.replicas > 0 else 0
    to_add = allowed - _total(active)
    if to_add > 0:
        # ReplicaSetsBySizeNewer: larger first, then newer first.
        ordered = sorted(_sorted_by_created(active)[::-1], key=lambda r: -r.replicas)
    elif to_add < 0:
        # ReplicaSetsBySizeOlder: larger first, then older first.
        ordered = sorted(_sorted_by_created(active), key=lambda r: -r.replicas)
    else:
        ordered = active
    sizes: dict[int, int] = {}
    added = 0
    for rs in ordered:
        if to_add != 0:
            share = get_proportion(rs, d, to_add, added)
            sizes[id(rs)] = rs.replicas + share
            added += share
        else:
            sizes[id(rs)] = rs.replicas
    for i, rs in enumerate(ordered):
        if i == 0 and to_add != 0:
            sizes[id(rs)] = max(sizes[id(rs)] + to_add - added, 0)
        _scale_to(rs, sizes[id(rs)], d)
