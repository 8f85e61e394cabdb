"""A plan carried out on a live cluster, one step at a time: `audit --plan --apply` and
the audit Deployment's opt-in rebalancing (audit.rebalance).

    applier = Applier(cluster, settings, ApplyOptions(max_evictions=3), clock=..., sleep=...)
    result = applier.run(seen, plan, spreads)     # ApplyResult(outcome, steps, reason)
    Rebalancer(cluster, settings, rebalance_settings, count=...).run_once()

Each step (steps.py decides, this module only sequences the I/O through `cluster`):

1. the pod must still run on the plan's node, and its workload must have no
   eviction in flight and no pending pod (a terminating pod, a pod not bound or not
   Ready): never two disruptions of one workload at a time;
2. the prediction is made on the state just read (the replacement's domains, the
   skews after);
3. the Eviction is POSTed with the pod's uid as a precondition; a 429 (a
   PodDisruptionBudget says no) is retried with a doubling wait (1 s up to 16 s
   each) for at most `budget_wait` seconds, then the run stops naming the budget;
4. the namespace's pods are polled (every `poll` seconds) until a new pod of the
   workload is bound and Ready and the evicted pod is gone, for at most
   `step_timeout` seconds;
5. the whole cluster is read and audited again and compared with the prediction; a
   difference stops the run, or with `replan` makes a new plan from what it sees.

Time is read from `clock` and waited with `sleep`, both injected: tests run the
retries and timeouts without waiting, and the audit Deployment's sleep wakes up on
SIGTERM.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from webhook.api.kube import RawObj
from webhook.api.kube import meta as meta_of
from webhook.api.pods import pod_key
from webhook.audit.act.evictor import Seen, eviction_request
from webhook.audit.act.steps import (
    BLOCKED,
    BUDGET,
    COMPLETED,
    CONFLICT,
    DIFFERED,
    DIFFERENCE,
    ERROR,
    EVICTED,
    EXIT_CODES,
    GONE,
    MATCHED,
    READY,
    REFUSED,
    STEP_OUTCOMES,
    TIMEOUT,
    Answer,
    StepRecord,
    backoff,
    compare,
    observe,
    predict,
    replacement,
    workloads_in_flight,
)
from webhook.audit.measure.spread import WorkloadSpread, evaluate
from webhook.audit.plan.planner import Move, Plan, make_plan
from webhook.config import RebalanceSettings, Settings
from webhook.errors import TopospreadError

__all__ = [
    "ApplyOptions",
    "ApplyResult",
    "Applier",
    "Cluster",
    "Rebalancer",
]

log = logging.getLogger("topospread.audit.apply")

# Waits between refused evictions: the first, and the longest.
BACKOFF_FIRST = 1.0
BACKOFF_CAP = 16.0


class Cluster(Protocol):
    """What carrying out a plan reads and writes (evictions.LiveCluster)."""

    def read(self) -> Seen: ...

    def pods(self, namespace: str) -> list[RawObj]: ...

    def evict(self, namespace: str, name: str, uid: str | None) -> Answer: ...


@dataclass(frozen=True)
class ApplyOptions:
    """max_evictions: evictions at most (None: the first plan's length); interval:
    seconds between steps; step_timeout: seconds a replacement has to be bound and
    Ready; budget_wait: seconds a refused eviction is retried; replan: after a
    difference, plan again from the state seen and go on; poll: seconds between looks
    at the replacement."""

    max_evictions: int | None = None
    interval: float = 0.0
    step_timeout: float = 300.0
    budget_wait: float = 120.0
    replan: bool = False
    poll: float = 2.0
    include_soft: bool = False


@dataclass
class ApplyResult:
    """outcome: COMPLETED, DIFFERENCE, BUDGET or ERROR; steps: every step tried, in
    order; reason: one sentence on why the run ended; plans: how many plans were made
    (1, more with replan)."""

    outcome: str
    steps: list[StepRecord] = field(default_factory=list)
    reason: str = ""
    plans: int = 1

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    @property
    def evictions(self) -> int:
        return sum(1 for s in self.steps if any(a.kind == EVICTED for a in s.answers))

    def to_json(self) -> dict[str, object]:
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "evictions": self.evictions,
            "plans": self.plans,
            "steps": [s.to_json() for s in self.steps],
        }


class _Stop(Exception):
    """A step ended the run (its record says why)."""


class Applier:
    """Carries out plans on `cluster` (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        settings: Settings,
        options: ApplyOptions,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        on_step: Callable[[StepRecord], None] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.options = options
        self.clock = clock
        self.sleep = sleep
        self.on_step = on_step
        # What a step is waiting for, said before each wait (a terminal's status line).
        self.progress = progress

    def _spreads(self, seen: Seen) -> list[WorkloadSpread]:
        return evaluate(
            seen.state, include_soft=self.options.include_soft, args=self.settings.spread
        )

    def run(
        self,
        seen: Seen,
        plan: Plan,
        spreads: list[WorkloadSpread],
        *,
        moves: list[Move] | None = None,
    ) -> ApplyResult:
        """Carry out `plan` (made on `seen`; `moves`: only these of its moves) step by
        step until it is done, the limit is reached, or a step stops the run."""
        todo = list(plan.moves if moves is None else moves)
        limit = self.options.max_evictions
        if limit is None:
            limit = len(todo)
        result = ApplyResult(COMPLETED)
        number = 0
        while todo:
            if result.evictions >= limit:
                result.reason = f"stopped at the limit of {limit} eviction(s)"
                return result
            if number and self.options.interval > 0:
                self.sleep(self.options.interval)
            number += 1
            record, after = self._step(number, todo[0], seen, spreads)
            result.steps.append(record)
            if self.on_step is not None:
                self.on_step(record)
            if record.result == MATCHED and after is not None:
                seen, spreads = after
                todo.pop(0)
                continue
            outcome = STEP_OUTCOMES[record.result]
            replannable = outcome == DIFFERENCE and record.result != BLOCKED
            if self.options.replan and replannable and result.plans <= limit:
                try:
                    seen = self.cluster.read()
                except TopospreadError as exc:
                    result.outcome, result.reason = ERROR, str(exc)
                    return result
                spreads = self._spreads(seen)
                fresh = make_plan(
                    seen.state, spreads, self.settings, include_soft=self.options.include_soft
                )
                result.plans += 1
                todo = list(fresh.moves)
                log.info("replanned from the state seen: %d move(s)", len(todo))
                continue
            result.outcome = outcome
            result.reason = "; ".join(record.differences) or record.result
            return result
        result.reason = "every step carried out as predicted"
        if result.plans > 1:
            result.reason += f" (the last of {result.plans} plans)"
        return result

    # ---- one step ------------------------------------------------------------------------

    def _step(
        self, number: int, move: Move, seen: Seen, spreads: list[WorkloadSpread]
    ) -> tuple[StepRecord, tuple[Seen, list[WorkloadSpread]] | None]:
        ns, _, name = move.pod.partition("/")
        record = StepRecord(number, move, eviction_request(ns, name, None))
        started = self.clock()
        try:
            after = self._carry_out(record, move, seen, spreads)
        except _Stop:
            after = None
        except TopospreadError as exc:
            record.result = ERROR
            record.differences.append(f"the cluster could not be read or written: {exc}")
            after = None
        record.seconds = self.clock() - started
        return record, after

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def _stop(self, record: StepRecord, result: str, why: str) -> _Stop:
        record.result = result
        record.differences.append(why)
        return _Stop()

    def _carry_out(
        self, record: StepRecord, move: Move, seen: Seen, spreads: list[WorkloadSpread]
    ) -> tuple[Seen, list[WorkloadSpread]]:
        state = seen.state
        ns, _, name = move.pod.partition("/")
        running = next((p for p in state.running if pod_key(p) == move.pod), None)
        node = None if running is None else (running.get("spec") or {}).get("nodeName")
        if running is None or node != move.from_node:
            where = "no longer runs" if running is None else f"runs on {node}"
            raise self._stop(record, DIFFERED, f"{move.pod} {where}, not on {move.from_node}")
        workload = state.workload_of(running)
        busy = workloads_in_flight(seen.pods, state.workload_of).get(workload)
        if busy is not None:
            raise self._stop(record, BLOCKED, f"{workload} is not settled: {busy}")
        record.prediction = predict(
            state, spreads, move, self.settings, include_soft=self.options.include_soft
        )
        before = self.cluster.pods(ns)
        live = next((p for p in before if meta_of(p).get("name") == name), None)
        if live is None:
            raise self._stop(record, GONE, f"{move.pod} is gone")
        uid = meta_of(live).get("uid")
        uid = uid if isinstance(uid, str) and uid else None
        record.request = eviction_request(ns, name, uid)
        uids = {str(meta_of(p).get("uid")) for p in before}

        waits = backoff(BACKOFF_FIRST, BACKOFF_CAP, self.options.budget_wait)
        while True:
            answer = self.cluster.evict(ns, name, uid)
            record.answers.append(answer)
            if answer.kind == EVICTED:
                break
            if answer.kind == REFUSED and waits:
                self._say(f"{move.pod}: eviction refused by {answer.budget or 'a budget'}, retried")
                self.sleep(waits.pop(0))
                continue
            if answer.kind == REFUSED:
                budget = answer.budget or "a PodDisruptionBudget"
                raise self._stop(
                    record,
                    BUDGET,
                    f"the eviction of {move.pod} was refused by PodDisruptionBudget {budget} "
                    f"for {self.options.budget_wait:g} s ({_tries(len(record.answers))}): "
                    f"{answer.message}",
                )
            if answer.kind in (GONE, CONFLICT):
                raise self._stop(
                    record, GONE, f"{move.pod} is gone (HTTP {answer.status}: {answer.message})"
                )
            raise self._stop(
                record,
                ERROR,
                f"the eviction of {move.pod} failed: HTTP {answer.status}: {answer.message}",
            )

        deadline = self.clock() + self.options.step_timeout
        while True:
            now = self.cluster.pods(ns)
            stage, pod = replacement(uids, now, workload, state.workload_of)
            # The eviction is in flight until the evicted pod is gone as well: while it
            # terminates, its workload is not settled for the next step.
            left = uid is not None and any(meta_of(p).get("uid") == uid for p in now)
            if stage == READY and pod is not None and not left:
                break
            if self.clock() >= deadline:
                if stage == READY and left:
                    why = f"{move.pod} is still terminating"
                else:
                    where = ""
                    if pod is not None:
                        bound = (pod.get("spec") or {}).get("nodeName")
                        where = f" ({pod_key(pod)}" + (f" on {bound})" if bound else ")")
                    why = f"the replacement of {move.pod} is {stage}{where}"
                raise self._stop(record, TIMEOUT, f"{why} after {self.options.step_timeout:g} s")
            self._say(f"{move.pod} evicted; its replacement is {stage}")
            self.sleep(self.options.poll)

        seen_after = self.cluster.read()
        spreads_after = self._spreads(seen_after)
        bound_to = (pod.get("spec") or {}).get("nodeName")
        observation = observe(
            record.prediction,
            seen_after.state,
            spreads_after,
            pod_key(pod),
            bound_to if isinstance(bound_to, str) else None,
        )
        record.observation = observation
        record.differences = compare(record.prediction, observation)
        if record.differences:
            record.result = DIFFERED
            raise _Stop()
        record.result = MATCHED
        return seen_after, spreads_after


def _tries(count: int) -> str:
    return f"{count} try" if count == 1 else f"{count} tries"


# ---- the audit Deployment ---------------------------------------------------------------


class Rebalancer:
    """audit.rebalance: after each periodic audit, at most `maxEvictionsPerRun` steps of
    the plan for the workloads of `namespaces` (all when empty), with the checks of
    Applier. Nothing is remembered between runs: what is in flight is read from the
    cluster (a terminating pod, a pod not bound or not Ready), so a restarted process
    neither repeats a step (the evicted pod is gone, the plan is made again from what
    runs) nor doubles an eviction in flight (that workload is not settled)."""

    def __init__(
        self,
        cluster: Cluster,
        settings: Settings,
        rebalance: RebalanceSettings,
        *,
        count: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        step_timeout: float = 300.0,
        budget_wait: float = 60.0,
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.rebalance = rebalance
        self.count = count
        self.clock = clock
        self.sleep = sleep
        self.options = ApplyOptions(
            max_evictions=rebalance.max_evictions_per_run,
            step_timeout=step_timeout,
            budget_wait=budget_wait,
            include_soft=settings.audit.include_soft,
        )

    def _ours(self, namespace: str) -> bool:
        return not self.rebalance.namespaces or namespace in self.rebalance.namespaces

    def run_once(self) -> ApplyResult | None:
        """One round of steps; None when there was nothing to do or it may not start."""
        seen = self.cluster.read()
        spreads = [
            w
            for w in evaluate(
                seen.state, include_soft=self.options.include_soft, args=self.settings.spread
            )
            if self._ours(w.workload.namespace)
        ]
        busy = workloads_in_flight(seen.pods, seen.state.workload_of)
        unsettled = sorted(str(w.workload) for w in spreads if w.workload in busy)
        if unsettled:
            first = next(w.workload for w in spreads if str(w.workload) == unsettled[0])
            log.info(
                "rebalance: waiting, %s is not settled: %s (no eviction while a pod of an "
                "audited workload is terminating or not Ready)",
                unsettled[0],
                busy[first],
            )
            return None
        if not any(w.violated for w in spreads):
            return None
        plan = make_plan(seen.state, spreads, self.settings, include_soft=self.options.include_soft)
        moves: list[Move] = []
        for move in plan.moves:
            if not self._ours(move.pod.partition("/")[0]):
                break  # the later moves count on this one
            moves.append(move)
        if not moves:
            return None
        applier = Applier(
            self.cluster,
            self.settings,
            self.options,
            clock=self.clock,
            sleep=self.sleep,
            on_step=self._log_step,
        )
        return applier.run(seen, plan, spreads, moves=moves)

    def _log_step(self, record: StepRecord) -> None:
        if self.count is not None:
            self.count(record.result)
        move = record.move
        if record.result == MATCHED:
            log.info(
                "rebalance: evicted %s (%s -> %s): replacement %s Ready, as predicted",
                move.pod,
                move.from_node,
                move.to_node,
                record.observation.pod if record.observation else "",
            )
        else:
            log.warning(
                "rebalance: step %s %s stopped (%s): %s",
                move.pod,
                move.workload,
                record.result,
                "; ".join(record.differences),
            )
