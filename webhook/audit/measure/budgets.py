"""PodDisruptionBudgets as the disruption controller counts them and the Eviction API
applies them.

    budgets = Budgets.from_state(state)
    budgets.blocker(pod)     # None: an eviction is allowed now; else the budget refusing it
    budgets.remove(key); budgets.add(pod, healthy=False); budgets.set_healthy(key, True)

**The controller's arithmetic** (pkg/controller/disruption/disruption.go). A budget
selects the pods of its namespace its `spec.selector` matches (policy/v1: a nil
selector matches none, an empty one every pod). Its desired healthy count comes from
`maxUnavailable` (expected - the scaled value, at least 0) or `minAvailable` (an int
as is; a percent scaled); percents are scaled over the expected count and rounded up
(intstr.GetScaledValueFromIntOrPercent with roundUp). The expected count is the number
of selected pods for an int `minAvailable`, else the sum of the scales (spec.replicas)
of the selected pods' controllers, a ReplicaSet owned by a Deployment counting as that
Deployment; a pod whose controller has no known scale (a Job, an owner the state does
not hold) fails the budget, which then allows nothing (the controller's failSafe).
Healthy pods: the selected pods that are not terminating and are Ready.
disruptionsAllowed = healthy - desired, 0 when negative or when nothing is expected.

**The Eviction API** (pkg/registry/core/pod/storage/eviction.go). A pod that is
terminating, finished or Pending is deleted without looking at budgets. The budgets
guarding an eviction are those of the pod's namespace whose selector is valid, not
empty, and matches the pod. More than one: the eviction is refused. One: a pod that is
not Ready may go while the budget is met (healthy >= desired > 0), or always with
`unhealthyPodEvictionPolicy: AlwaysAllow`; otherwise the eviction needs
disruptionsAllowed >= 1 (the default policy, IfHealthyBudget).

Ready is podutil.IsPodReady (webhook/api/pods.py: is_ready), as both read it: a pod
reporting no Ready condition is not Ready. Budgets are recounted from the pods at every
question, never read from the PDB's own status (which lags; kubernetes#89012).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.api.kube import RawObj, as_dict, named_controller_of, pod_labels, pod_namespace
from webhook.api.kube import meta as meta_of
from webhook.api.labels import compile_selector, selector_requirements
from webhook.api.pods import is_ready, pod_key
from webhook.audit.state.inventory import ClusterState, OwnerKey
from webhook.scheduler.framework.snapshot import TERMINAL_PHASES, is_terminating

__all__ = [
    "BudgetStatus",
    "Budgets",
    "is_ready",
    "scaled_value",
]

KIND = "PodDisruptionBudget"
ALWAYS_ALLOW = "AlwaysAllow"
# A workload controller's scale when its spec.replicas is unset (the API's default).
DEFAULT_REPLICAS = 1
_PERCENT = re.compile(r"^(-?[0-9]+)%$")


def scaled_value(value: Any, total: int, *, round_up: bool = True) -> int:
    """An IntOrString against `total`: an int as is, "N%" as N percent of total
    (rounded up, or down); ValueError for anything else.

    Port of apimachinery/pkg/util/intstr/intstr.go: GetScaledValueFromIntOrPercent.
    """
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        found = _PERCENT.match(value)
        if found is None:
            raise ValueError(
                f"invalid value for IntOrString: invalid type: string is not a percentage: {value}"
            )
        percent = int(found.group(1))
        product = percent * total
        # Go: math.Ceil / math.Floor of a float; exact with integers.
        return -(-product // 100) if round_up else product // 100
    raise ValueError(f"invalid value for IntOrString: {value!r}")


def _skips_budgets(pod: RawObj) -> bool:
    """Port of eviction.go: canIgnorePDB (finished, Pending or terminating pods)."""
    phase = as_dict(pod.get("status")).get("phase")
    return phase in TERMINAL_PHASES or phase == "Pending" or is_terminating(pod)


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    """One budget as the disruption controller would write its status now.

    expected: ExpectedPods; desired: DesiredHealthy; healthy: CurrentHealthy;
    allowed: DisruptionsAllowed; error: why the controller could not count (then
    allowed is 0), None when it could.
    """

    expected: int
    desired: int
    healthy: int
    allowed: int
    error: str | None = None


@dataclass(slots=True)
class _Pod:
    """What a budget reads of one pod: labels, health, controller, terminating."""

    namespace: str
    labels: Mapping[str, str]
    healthy: bool
    controller: tuple[str, str] | None


class Budgets:
    """Every PodDisruptionBudget of a cluster state with the pods they count, kept up to
    date as a drill or a plan evicts and places pods.

    budgets: "ns/name" -> the PDB object; pods: pod key -> what budgets read of it;
    owners: the state's owner objects (their spec.replicas is a controller's scale).
    """

    def __init__(
        self,
        pdbs: Iterable[RawObj],
        pods: Iterable[RawObj],
        owners: Mapping[OwnerKey, RawObj],
    ) -> None:
        self.budgets: dict[str, RawObj] = {}
        self._by_ns: dict[str, list[str]] = {}
        for pdb in pdbs:
            meta = meta_of(pdb)
            name = meta.get("name")
            if not isinstance(name, str) or not name:
                continue
            ns = meta.get("namespace")
            ns = ns if isinstance(ns, str) and ns else "default"
            key = f"{ns}/{name}"
            self.budgets[key] = pdb
            self._by_ns.setdefault(ns, []).append(key)
        for keys in self._by_ns.values():
            keys.sort()
        self.owners = owners
        self.pods: dict[str, _Pod] = {}
        self._pods_by_ns: dict[str, set[str]] = {}
        self._status: dict[str, BudgetStatus] = {}
        self._matchers: dict[str, Any] = {}
        for pod in pods:
            self.add(pod, healthy=not is_terminating(pod) and is_ready(pod))

    @classmethod
    def from_state(cls, state: ClusterState) -> Budgets:
        """The state's budgets over its running pods."""
        return cls(state.snapshot.listed(KIND), state.running, state.owners)

    def __bool__(self) -> bool:
        return bool(self.budgets)

    # ---- the pods they count ---------------------------------------------------------

    def add(self, pod: RawObj, *, healthy: bool) -> None:
        """A pod comes (a replacement, healthy once placed and Ready)."""
        key = pod_key(pod)
        ns = pod_namespace(pod)
        ref = named_controller_of(pod)
        controller = (str(ref["kind"]), str(ref["name"])) if ref is not None else None
        self.pods[key] = _Pod(ns, pod_labels(pod), healthy, controller)
        self._pods_by_ns.setdefault(ns, set()).add(key)
        self._changed(ns)

    def remove(self, key: str) -> None:
        """A pod goes (evicted, or deleted by its node's eviction)."""
        entry = self.pods.pop(key, None)
        if entry is not None:
            self._pods_by_ns[entry.namespace].discard(key)
            self._changed(entry.namespace)

    def set_healthy(self, key: str, healthy: bool) -> None:
        entry = self.pods.get(key)
        if entry is not None and entry.healthy != healthy:
            entry.healthy = healthy
            self._changed(entry.namespace)

    def _changed(self, ns: str) -> None:
        for key in self._by_ns.get(ns, ()):
            self._status.pop(key, None)

    # ---- the controller's arithmetic ---------------------------------------------------

    def _matcher(self, key: str) -> Any:
        hit = self._matchers.get(key)
        if hit is None:
            selector = as_dict(self.budgets[key].get("spec")).get("selector")
            hit = self._matchers[key] = compile_selector(
                selector if isinstance(selector, dict) else None
            )
        return hit

    def selected(self, key: str) -> list[str]:
        """The pods budget `key` counts (its namespace, its selector)."""
        ns = key.partition("/")[0]
        matches = self._matcher(key)
        return sorted(k for k in self._pods_by_ns.get(ns, ()) if matches(self.pods[k].labels))

    def _scale(self, ns: str, controller: tuple[str, str]) -> tuple[OwnerKey, int] | None:
        """The controller whose scale counts for a pod of `controller`, and that scale.

        Port of disruption.go: getPodReplicaSet / getPodDeployment /
        getPodReplicationController / getPodStatefulSet / getScaleController.
        """
        kind, name = controller
        owner = self.owners.get((kind, ns, name))
        if kind == "ReplicaSet":
            rs = owner
            up = named_controller_of(rs) if rs is not None else None
            if up is not None and up.get("kind") == "Deployment":
                deployment = self.owners.get(("Deployment", ns, str(up["name"])))
                if deployment is None:
                    return None
                return ("Deployment", ns, str(up["name"])), _replicas(deployment)
            if rs is None:
                return None
            return (kind, ns, name), _replicas(rs)
        if owner is None or kind in ("Job", "CronJob", "DaemonSet", "Node"):
            return None
        if kind in ("ReplicationController", "StatefulSet") or "replicas" in as_dict(
            owner.get("spec")
        ):
            return (kind, ns, name), _replicas(owner)
        return None

    def _expected_scale(self, ns: str, pods: list[str]) -> int | str:
        """The sum of the scales of the pods' controllers, or why it cannot be counted.

        Port of disruption.go: getExpectedScale (pods without a controller are left out).
        """
        scales: dict[OwnerKey, int] = {}
        seen: set[tuple[str, str]] = set()
        for key in pods:
            controller = self.pods[key].controller
            if controller is None or controller in seen:
                continue
            seen.add(controller)
            found = self._scale(ns, controller)
            if found is None:
                return f'found no controllers for pod "{key.partition("/")[2]}"'
            scales[found[0]] = found[1]
        return sum(scales.values())

    def status(self, key: str) -> BudgetStatus:
        """Budget `key` ("ns/name") as the disruption controller counts it now.

        Port of disruption.go: getExpectedPodCount, countHealthyPods, updatePdbStatus.
        """
        hit = self._status.get(key)
        if hit is not None:
            return hit
        ns = key.partition("/")[0]
        spec = as_dict(self.budgets[key].get("spec"))
        pods = self.selected(key)
        healthy = sum(1 for k in pods if self.pods[k].healthy)
        expected = desired = 0
        error: str | None = None
        try:
            if spec.get("maxUnavailable") is not None:
                scale = self._expected_scale(ns, pods)
                if isinstance(scale, str):
                    raise ValueError(scale)
                expected = scale
                desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected))
            elif spec.get("minAvailable") is not None:
                value = spec["minAvailable"]
                if isinstance(value, int) and not isinstance(value, bool):
                    desired, expected = value, len(pods)
                else:
                    scale = self._expected_scale(ns, pods)
                    if isinstance(scale, str):
                        raise ValueError(scale)
                    expected = scale
                    desired = scaled_value(value, expected)
        except ValueError as exc:
            error = str(exc)
        allowed = healthy - desired
        if error is not None or expected <= 0 or allowed <= 0:
            allowed = 0
        hit = self._status[key] = BudgetStatus(expected, desired, healthy, allowed, error)
        return hit

    # ---- the Eviction API ----------------------------------------------------------------

    def guarding(self, pod: RawObj) -> list[str]:
        """The budgets an eviction of `pod` consults (eviction.go:
        getPodDisruptionBudgets: a nil, empty or invalid selector guards nothing)."""
        labels = pod_labels(pod)
        out = []
        for key in self._by_ns.get(pod_namespace(pod), ()):
            selector = as_dict(self.budgets[key].get("spec")).get("selector")
            if not selector_requirements(selector if isinstance(selector, dict) else None):
                continue
            if self._matcher(key)(labels):
                out.append(key)
        return out

    def blocker(self, pod: RawObj) -> str | None:
        """None when the Eviction API lets `pod` go now; else the budget refusing it
        ("ns/name"; several joined by ", " when more than one guards the pod, which the
        Eviction API refuses outright).

        Port of eviction.go: EvictionREST.Create (the budget checks) and checkAndDecrement.
        """
        if _skips_budgets(pod):
            return None
        guards = self.guarding(pod)
        if not guards:
            return None
        if len(guards) > 1:
            return ", ".join(guards)
        key = guards[0]
        status = self.status(key)
        entry = self.pods.get(pod_key(pod))
        ready = entry.healthy if entry is not None else is_ready(pod)
        if not ready:
            policy = as_dict(self.budgets[key].get("spec")).get("unhealthyPodEvictionPolicy")
            if policy == ALWAYS_ALLOW:
                return None
            if status.healthy >= status.desired > 0:
                return None
        return None if status.allowed >= 1 else key

    def describe(self, key: str) -> str:
        """One line on budget `key` now: what it needs and has."""
        s = self.status(key)
        if s.error is not None:
            return f"PodDisruptionBudget {key} allows no disruption: {s.error}"
        return (
            f"PodDisruptionBudget {key} needs {s.desired} healthy pod(s) and has "
            f"{s.healthy}: {s.allowed} disruption(s) allowed"
        )


def _replicas(obj: RawObj) -> int:
    value = as_dict(obj.get("spec")).get("replicas")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return DEFAULT_REPLICAS
