"""Which pod of a controller goes first: ActivePodsWithRanks and its Less, as the
newest kube-controller-manager sorts them (PodDeletionCost and the logarithmic
scale-down on, as they are by default), and FilterActivePods.

    ranked = ActivePodsWithRanks(pods, ranks, now)
    order = ranked.sorted()            # the pods, first to delete first

The rules, the first that tells two pods apart deciding:

1. unassigned before assigned;
2. Pending before Unknown before Running (any other phase counts as Pending);
3. not Ready before Ready;
4. lower `controller.kubernetes.io/pod-deletion-cost` first (missing or invalid: 0);
5. higher rank first (the rank: the related pods on the pod's node);
6. both Ready: more recently Ready first, the times since compared in log2 buckets,
   the same bucket broken by UID (a zero Ready time, or no clock: the plain times);
7. more restarts first: the regular containers' maximum, then the restartable init
   containers' (sidecars) maximum;
8. newer first, the ages compared in log2 buckets, the same bucket broken by UID
   (a zero creation time, or no clock: the plain times; a zero time first).

CAVEAT: upstream sorts with Go's sort.Sort, which is not stable: pods equal under
every rule (same UID) may come in any order there; here they keep their input order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cmp_to_key

from webhook.api.kube import RawObj, as_dict, meta, spec
from webhook.api.pods import is_ready as is_pod_ready
from webhook.api.pods import ready_condition
from webhook.controllers.gotime import duration_ns, parse_time

__all__ = [
    "DELETION_COST",
    "ActivePodsWithRanks",
    "deletion_cost",
    "filter_active_pods",
    "is_pod_active",
    "is_pod_ready",
    "logarithmic_rank_diff",
    "max_container_restarts",
    "pod_ready_time",
]

DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32 = (-(2**31), 2**31 - 1)


def is_pod_active(pod: RawObj) -> bool:
    """Neither Succeeded nor Failed, and not being deleted.

    Port of controller_utils.go: IsPodActive."""
    phase = as_dict(pod.get("status")).get("phase")
    return phase not in ("Succeeded", "Failed") and meta(pod).get("deletionTimestamp") is None


def filter_active_pods(pods: Iterable[RawObj]) -> list[RawObj]:
    """The active pods, in the order given.

    Port of controller_utils.go: FilterActivePods."""
    return [p for p in pods if is_pod_active(p)]


def pod_ready_time(pod: RawObj) -> datetime | None:
    """When a Ready pod became Ready; None for a pod not Ready or with no time.

    Port of controller_utils.go: podReadyTime."""
    c = ready_condition(pod)
    if c is None or c.get("status") != "True":
        return None
    return parse_time(c.get("lastTransitionTime"))


def deletion_cost(pod: RawObj) -> int:
    """The pod-deletion-cost annotation as an int32; missing or invalid: 0 (a leading
    plus sign or leading zeros are invalid).

    Port of pkg/apis/core/helper: GetDeletionCostFromPodAnnotations."""
    value = as_dict(meta(pod).get("annotations")).get(DELETION_COST)
    if not isinstance(value, str) or not value:
        return 0
    first = value[0]
    if not (first == "-" or value == "0" or "1" <= first <= "9"):
        return 0
    digits = value[1:] if first == "-" else value
    if not digits or not digits.isascii() or not digits.isdigit():
        return 0
    n = int(value)
    return n if _INT32[0] <= n <= _INT32[1] else 0


def _restarts(statuses: object, names: set[str] | None = None) -> int:
    most = 0
    for s in statuses if isinstance(statuses, list) else ():
        if not isinstance(s, dict) or (names is not None and s.get("name") not in names):
            continue
        n = s.get("restartCount")
        if isinstance(n, int) and not isinstance(n, bool):
            most = max(most, n)
    return most


def max_container_restarts(pod: RawObj) -> tuple[int, int]:
    """(the most restarts of a regular container, the most of a restartable init
    container: a sidecar, restartPolicy Always).

    Port of controller_utils.go: maxContainerRestarts."""
    status = as_dict(pod.get("status"))
    inits = spec(pod).get("initContainers")
    sidecars = {
        str(c.get("name"))
        for c in (inits if isinstance(inits, list) else ())
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    }
    regular = _restarts(status.get("containerStatuses"))
    sidecar = _restarts(status.get("initContainerStatuses"), sidecars) if sidecars else 0
    return regular, sidecar


def _go_log2(x: float) -> float:
    """Go's math.Log2 (frexp, then the natural log of the fraction): exact at powers
    of two, as the bucket boundaries need."""
    frac, exp = math.frexp(x)
    if frac == 0.5:
        return float(exp - 1)
    return math.log(frac) * (1 / math.log(2)) + exp


def logarithmic_rank_diff(t1: datetime, t2: datetime, now: datetime) -> int:
    """The log2 bucket of now - t1 minus that of now - t2 (durations in nanoseconds; a
    time not in the past is bucket -1).

    Port of controller_utils.go: logarithmicRankDiff."""
    d1, d2 = duration_ns(now, t1), duration_ns(now, t2)
    r1 = int(_go_log2(float(d1))) if d1 > 0 else -1
    r2 = int(_go_log2(float(d2))) if d2 > 0 else -1
    return r1 - r2


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    """t1 after t2, a zero time (None) counting as after every other."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


class ActivePodsWithRanks:
    """Pods with their ranks and the controller's clock; `less(i, j)`: pod i goes
    before pod j (see the module docstring for the rules).

    Port of controller_utils.go: ActivePodsWithRanks."""

    def __init__(self, pods: Sequence[RawObj], rank: Sequence[int], now: datetime | None) -> None:
        if len(pods) != len(rank):
            raise ValueError("one rank per pod")
        self.pods = list(pods)
        self.rank = list(rank)
        self.now = now
        self._cache: dict[
            int, tuple[str, int, bool, int, datetime | None, tuple[int, int], datetime | None, str]
        ] = {}

    def _facts(
        self, i: int
    ) -> tuple[str, int, bool, int, datetime | None, tuple[int, int], datetime | None, str]:
        """What Less reads of pod i, read once: node, phase ordinal, Ready, deletion
        cost, Ready time, restarts, creation time, UID."""
        facts = self._cache.get(i)
        if facts is None:
            pod = self.pods[i]
            m = meta(pod)
            facts = self._cache[i] = (
                str(spec(pod).get("nodeName") or ""),
                _PHASE_ORDINAL.get(str(as_dict(pod.get("status")).get("phase")), 0),
                is_pod_ready(pod),
                deletion_cost(pod),
                pod_ready_time(pod),
                max_container_restarts(pod),
                parse_time(m.get("creationTimestamp")),
                str(m.get("uid") or ""),
            )
        return facts

    def _bucketed(self, t1: datetime | None, t2: datetime | None, ui: str, uj: str) -> bool:
        if self.now is None or t1 is None or t2 is None:
            return _after_or_zero(t1, t2)
        diff = logarithmic_rank_diff(t1, t2, self.now)
        if diff == 0:
            return ui < uj
        return diff < 0

    def less(self, i: int, j: int) -> bool:
        """Port of controller_utils.go: ActivePodsWithRanks.Less."""
        ni, oi, ri, ci, rti, xi, cti, ui = self._facts(i)
        nj, oj, rj, cj, rtj, xj, ctj, uj = self._facts(j)
        # 1. An unassigned pod costs nothing to delete: it runs nowhere yet.
        if ni != nj and (not ni or not nj):
            return not ni
        # 2. The earlier in its life a pod is, the less work its deletion throws away.
        if oi != oj:
            return oi < oj
        # 3. A pod not Ready serves no traffic.
        if ri != rj:
            return not ri
        # 4. The owner's own say (PodDeletionCost, on by default).
        if ci != cj:
            return ci < cj
        # 5. Doubled up on a node: deleting it spreads the rest.
        if self.rank[i] != self.rank[j]:
            return self.rank[i] > self.rank[j]
        # 6. Ready for less time: less warmed up (the buckets make the choice among
        # pods of similar age depend on the UID, random-like: kubernetes#96748).
        if ri and rj and rti != rtj:
            return self._bucketed(rti, rtj, ui, uj)
        # 7. Restarting more: less healthy; sidecars' restarts only on a tie.
        if xi[0] != xj[0]:
            return xi[0] > xj[0]
        if xi[1] != xj[1]:
            return xi[1] > xj[1]
        # 8. Newer first, in the same buckets.
        if cti != ctj:
            return self._bucketed(cti, ctj, ui, uj)
        return False

    def order(self) -> list[int]:
        """The indexes of the pods, first to delete first (a stable sort by less)."""

        def cmp(i: int, j: int) -> int:
            if self.less(i, j):
                return -1
            return 1 if self.less(j, i) else 0

        return sorted(range(len(self.pods)), key=cmp_to_key(cmp))

    def sorted(self) -> list[RawObj]:
        """The pods, first to delete first."""
        return [self.pods[i] for i in self.order()]
