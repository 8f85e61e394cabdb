"""The deletion-cost keeper: writes the costs of audit/measure/costs.py on the pods, in the
audit Deployment (`audit --watch`, opt-in audit.deletionCosts.enabled).

    planned, left = plan_writes(state, all_costs(state, settings), namespaces)   # pure
    keeper = CostKeeper(conn, settings.audit.deletion_costs, stop=stop)
    outcome = keeper.sync(state, settings)                   # after each audit

**What it writes**: `controller.kubernetes.io/pod-deletion-cost` and, beside it, the
mark `topospread.io/deletion-cost` holding the same value: what the keeper wrote
last. A pod is ours to write when it carries neither annotation, or both with equal
values; a cost without the mark, or different from it, was set or changed by someone
else (a user, a template, another controller) and is left alone for good. A pod
whose cost already equals the one wanted is not written: on an unchanged cluster a
pass writes nothing, also after a restart (the marks are on the pods, the costs come
from the cluster state alone).

**How**: for each planned pod, a GET of the pod (its fresh annotations decide again,
and give its resourceVersion), then a JSON merge patch of only those two annotations
carrying that resourceVersion, so the API server refuses it (409 Conflict) if the pod
changed in between; a conflict is read and decided again once, then left to the next
pass. 404: the pod is gone, nothing to do. 429: wait its Retry-After (at most
MAX_RETRY_AFTER seconds) and try once more; a second 429 ends the pass. An
unreachable API server ends the pass. Every request waits its turn at
audit.deletionCosts.qps (reads and writes alike, as client-go's QPS), and a pass plans
at most qps x interval / 2 pods (two requests each): its requests take one interval at
most; the rest waits for the next pass. One log line per pass;
`topospread_deletion_cost_writes_total{result}` counts each planned pod's outcome.

This module and policyreports.py are the only ones with write verbs (PATCH here).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from webhook.api.kube import RawObj, as_dict, meta, pod_namespace
from webhook.api.pods import pod_key
from webhook.audit.measure.costs import all_costs
from webhook.audit.state.inventory import ClusterState
from webhook.cluster.rest import Unreachable, send
from webhook.config import DeletionCostSettings, Settings
from webhook.controllers.costs import COST_ANNOTATION, MARK_ANNOTATION

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.cluster.lister import Connection

__all__ = [
    "MAX_RETRY_AFTER",
    "RESULTS",
    "CostKeeper",
    "KeeperOutcome",
    "decide",
    "plan_writes",
]

log = logging.getLogger("topospread.audit.keeper")

# The outcome of each planned pod (the metric's `result` label): written; unchanged
# (the fresh pod already had the cost); left_alone (someone else's cost); conflict
# (changed twice under us: next pass); gone (404); throttled (429 twice: the pass
# ended); error (any other failure).
RESULTS = ("written", "unchanged", "left_alone", "conflict", "gone", "throttled", "error")
# The longest Retry-After honoured before the one retry of a 429.
MAX_RETRY_AFTER = 30.0
MERGE_PATCH = "application/merge-patch+json"

# decide()'s answers.
WRITE, SAME, FOREIGN = "write", "same", "foreign"


def decide(annotations: Mapping[str, Any] | None, cost: int) -> str:
    """WRITE when the pod's cost is ours to set and differs from `cost`; SAME when it
    already is `cost` and ours; FOREIGN when someone else set or changed it."""
    ann = annotations or {}
    current, mark = ann.get(COST_ANNOTATION), ann.get(MARK_ANNOTATION)
    if current is None and mark is None:
        return WRITE
    if current is None or mark is None or current != mark:
        return FOREIGN
    return SAME if current == str(cost) else WRITE


def plan_writes(
    state: ClusterState,
    costs: Mapping[str, int],
    namespaces: Sequence[str] | None = None,
) -> tuple[list[tuple[str, int]], list[str]]:
    """(the pods to write with their cost, in pod order; the pods left alone because
    someone else set their cost), from the annotations the audit read. `namespaces`:
    only these (None: all)."""
    allowed = None if namespaces is None else set(namespaces)
    writes: list[tuple[str, int]] = []
    foreign: list[str] = []
    for pod in state.running:
        key = pod_key(pod)
        cost = costs.get(key)
        if cost is None or (allowed is not None and pod_namespace(pod) not in allowed):
            continue
        verdict = decide(as_dict(meta(pod).get("annotations")), cost)
        if verdict == WRITE:
            writes.append((key, cost))
        elif verdict == FOREIGN:
            foreign.append(key)
    writes.sort()
    foreign.sort()
    return writes, foreign


@dataclass
class KeeperOutcome:
    """What one pass did: pod keys by result (RESULTS), how many pods it planned and how
    many it left for the next pass."""

    results: dict[str, list[str]] = field(default_factory=lambda: {r: [] for r in RESULTS})
    planned: int = 0
    deferred: int = 0

    def add(self, result: str, key: str) -> None:
        self.results[result].append(key)

    def count(self, result: str) -> int:
        return len(self.results[result])


class _Throttled(Exception):
    """429 after the one retry: the pass ends."""


class CostKeeper:
    """Keeps the pods' deletion costs (one instance per audit process)."""

    def __init__(
        self,
        conn: Connection,
        config: DeletionCostSettings,
        *,
        stop: threading.Event | None = None,
        sleep: Callable[[float], Any] | None = None,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.conn = conn
        self.config = config
        self._timer = timer
        self._sleep = sleep
        self._next_at = 0.0
        # Set on SIGTERM: waits end at once and the pass stops before its next pod.
        self._stop = stop if stop is not None else threading.Event()

    # ---- requests ----------------------------------------------------------------------

    def _wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            self._stop.wait(seconds)

    def _pace(self) -> None:
        """Wait for this request's turn at config.qps."""
        now = self._timer()
        start = max(now, self._next_at)
        self._wait(start - now)
        self._next_at = start + 1.0 / self.config.qps

    def _call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any, float | None]:
        """(status, parsed JSON body or None, Retry-After seconds or None), paced;
        rest.Unreachable when nothing answered."""
        self._pace()
        reply = send(self.conn, method, path, body, content_type=content_type)
        return reply.status, reply.json(), reply.retry_after

    def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        """_call with the one retry of a 429 after its Retry-After; _Throttled after a
        second 429."""
        status, parsed, retry_after = self._call(method, path, body, content_type)
        if status != 429:
            return status, parsed
        self._wait(min(MAX_RETRY_AFTER, 1.0 if retry_after is None else retry_after))
        status, parsed, _ = self._call(method, path, body, content_type)
        if status == 429:
            raise _Throttled()
        return status, parsed

    # ---- one pod -----------------------------------------------------------------------

    def _keep(self, key: str, cost: int) -> str:
        """Bring one pod to `cost`; its result (RESULTS)."""
        namespace, _, name = key.partition("/")
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
        for _attempt in range(2):
            status, pod = self._request("GET", path)
            if status == 404:
                return "gone"
            if status != 200 or not isinstance(pod, dict):
                return "error"
            verdict = decide(as_dict(meta(pod).get("annotations")), cost)
            if verdict == SAME:
                return "unchanged"
            if verdict == FOREIGN:
                return "left_alone"
            value = str(cost)
            patch: RawObj = {
                "metadata": {
                    "resourceVersion": meta(pod).get("resourceVersion"),
                    "annotations": {COST_ANNOTATION: value, MARK_ANNOTATION: value},
                }
            }
            status, _ = self._request("PATCH", path, patch, MERGE_PATCH)
            if status == 200:
                return "written"
            if status == 404:
                return "gone"
            if status != 409:
                return "error"
        return "conflict"

    # ---- one pass ----------------------------------------------------------------------

    def sync(
        self,
        state: ClusterState,
        settings: Settings,
        *,
        limit: int | None = None,
    ) -> KeeperOutcome:
        """One pass over the audited state: plan, then write in pod order, at most
        `limit` pods (default: what qps allows in an audit interval). Never raises for
        the API server's answers."""
        started = self._timer()
        outcome = KeeperOutcome()
        namespaces = self.config.namespaces
        costs = _merged(all_costs(state, settings, namespaces=namespaces))
        writes, foreign = plan_writes(state, costs, namespaces)
        if limit is None:
            interval = settings.audit.interval_seconds
            limit = max(1, int(self.config.qps * interval / 2)) if interval > 0 else len(writes)
        outcome.planned = min(len(writes), limit)
        outcome.deferred = len(writes) - outcome.planned
        foreign_count = len(foreign)
        ended = ""
        for i, (key, cost) in enumerate(writes[:limit]):
            if self._stop.is_set():
                outcome.deferred += outcome.planned - i
                outcome.planned = i
                ended = "stopped"
                break
            try:
                outcome.add(self._keep(key, cost), key)
            except _Throttled:
                outcome.add("throttled", key)
                outcome.deferred += outcome.planned - i - 1
                outcome.planned = i + 1
                ended = "throttled (429)"
                break
            except Unreachable as exc:
                outcome.add("error", key)
                outcome.deferred += outcome.planned - i - 1
                outcome.planned = i + 1
                ended = f"unreachable: {exc}"
                break
        seconds = self._timer() - started
        log.info(
            "deletion costs: %d written of %d planned (%d already right, %d set by someone "
            "else meanwhile, %d conflicts, %d gone, %d errors), %d for the next pass, %d "
            "pods carry someone else's cost (%.1f s)%s",
            outcome.count("written"),
            outcome.planned,
            outcome.count("unchanged"),
            outcome.count("left_alone"),
            outcome.count("conflict"),
            outcome.count("gone"),
            outcome.count("error") + outcome.count("throttled"),
            outcome.deferred,
            foreign_count,
            seconds,
            f"; ended: {ended}" if ended else "",
        )
        return outcome


def _merged(every: Mapping[Any, Mapping[str, int]]) -> dict[str, int]:
    return {key: cost for costs in every.values() for key, cost in costs.items()}
