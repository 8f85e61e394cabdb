"""The periodic audit's Prometheus metrics (`topospread audit --watch` serves them).

    metrics = AuditMetrics()
    metrics.observe_run(report, seconds=1.2, at=time.time())   # after each audit
    metrics.count_error("read")                                 # a run that failed
    metrics.observe_reports(outcome)                            # after a PolicyReport sync
    metrics.count_rebalance("matched")                          # a rebalancing step's result
    metrics.observe_costs(outcome)                              # after a keeper pass
    metrics.exposition()                                        # the /metrics text

Cardinality is bounded by what the cluster holds, never by time: violations by
namespace (namespaces with audited workloads), the skew of *violated* constraints
only (namespace, workload "Kind/name", topology key; a series is removed as soon as
its violation goes), and fixed label sets elsewhere. One process, one registry: the
audit runs in exactly one process per deployment, so no multiprocess mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.audit.act.keeper import KeeperOutcome
    from webhook.audit.report.document import AuditReport
    from webhook.audit.report.policyreports import SyncOutcome

__all__ = [
    "COST_RESULTS",
    "ERROR_STAGES",
    "REBALANCE_RESULTS",
    "REPORT_OPERATIONS",
    "AuditMetrics",
    "skew_labels",
]

# Where a run can fail: reading the cluster, or evaluating what was read.
ERROR_STAGES = ("read", "audit")
# What the PolicyReport writer does (list: reading our reports back).
REPORT_OPERATIONS = ("list", "create", "update", "delete")
# The deletion-cost keeper's results per pod (keeper.RESULTS).
COST_RESULTS = ("written", "unchanged", "left_alone", "conflict", "gone", "throttled", "error")

# What a rebalancing step ends in (apply.py's step results): as predicted, a difference,
# refused by a budget, a replacement not Ready in time, the pod gone, an error.
REBALANCE_RESULTS = ("matched", "differed", "budget", "timeout", "gone", "blocked", "error")

SkewKey = tuple[str, str, str]


def skew_labels(report: AuditReport) -> dict[SkewKey, tuple[int, int]]:
    """(namespace, "Kind/name", topologyKey) -> (skew, maxSkew) of every violated
    constraint; several violated entries on one key (a rollout's two ReplicaSets, a
    constraint per whenUnsatisfiable) keep the largest skew and its maxSkew."""
    out: dict[SkewKey, tuple[int, int]] = {}
    for w in report.spreads:
        workload = f"{w.workload.kind}/{w.workload.name}"
        for c in w.violated:
            key = (w.workload.namespace, workload, c.topology_key)
            if key not in out or c.skew > out[key][0]:
                out[key] = (c.skew, c.max_skew)
    return out


class AuditMetrics:
    """The collectors of the periodic audit, in a registry of their own."""

    def __init__(
        self,
        *,
        policy_reports: bool = False,
        report_apis: tuple[str, ...] = ("wgpolicyk8s",),
        rebalance: bool = False,
        deletion_costs: bool = False,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.violations = Gauge(
            "topospread_audit_violations",
            "Violated topology spread constraints of running pods, by namespace (every "
            "namespace with an audited workload; 0 when none is violated).",
            ["namespace"],
            registry=r,
        )
        self.skew = Gauge(
            "topospread_audit_constraint_skew",
            "Skew of a violated constraint (only violated ones), by namespace, workload "
            "(Kind/name) and topology key.",
            ["namespace", "workload", "topology_key"],
            registry=r,
        )
        self.max_skew = Gauge(
            "topospread_audit_constraint_max_skew",
            "maxSkew of the constraint topospread_audit_constraint_skew reports.",
            ["namespace", "workload", "topology_key"],
            registry=r,
        )
        self.constraints = Gauge(
            "topospread_audit_constraints_checked",
            "Constraint evaluations the last audit checked.",
            registry=r,
        )
        self.workloads = Gauge(
            "topospread_audit_workloads",
            "Workloads with constrained running pods the last audit checked.",
            registry=r,
        )
        self.last_run = Gauge(
            "topospread_audit_last_run_timestamp_seconds",
            "When the last successful audit ended, in Unix seconds.",
            registry=r,
        )
        self.duration = Gauge(
            "topospread_audit_last_run_duration_seconds",
            "Seconds the last successful audit took, the cluster read included.",
            registry=r,
        )
        self.runs = Counter(
            "topospread_audit_runs",
            "Audits completed successfully.",
            registry=r,
        )
        self.errors = Counter(
            "topospread_audit_run_errors",
            "Audits that failed, by stage (read: listing the cluster; audit: evaluating).",
            ["stage"],
            registry=r,
        )
        self.report_writes = Counter(
            "topospread_audit_policyreport_writes",
            "PolicyReports written, by operation (create, update, delete).",
            ["operation"],
            registry=r,
        )
        self.report_errors = Counter(
            "topospread_audit_policyreport_write_errors",
            "PolicyReport requests that failed, by operation (list, create, update, delete).",
            ["operation"],
            registry=r,
        )
        # Only registered with that API written to: an unlabelled gauge is always exported.
        self.crd_available: Gauge | None = None
        self.openreports_crd_available: Gauge | None = None
        if policy_reports and "wgpolicyk8s" in report_apis:
            self.crd_available = Gauge(
                "topospread_audit_policyreport_crd_available",
                "1 when the wgpolicyk8s.io/v1alpha2 PolicyReport API answered at the last "
                "sync, 0 when it is not installed (only with audit.policyReports).",
                registry=r,
            )
        if policy_reports and "openreports" in report_apis:
            self.openreports_crd_available = Gauge(
                "topospread_audit_openreports_crd_available",
                "1 when the openreports.io/v1alpha1 Report API answered at the last sync, "
                "0 when it is not installed (only with audit.reports openreports or both).",
                registry=r,
            )
        # Only registered with audit.deletionCosts.enabled.
        self.cost_writes: Counter | None = None
        if deletion_costs:
            self.cost_writes = Counter(
                "topospread_deletion_cost_writes",
                "Pods the deletion-cost keeper planned to write, by result (written, "
                "unchanged, left_alone, conflict, gone, throttled, error).",
                ["result"],
                registry=r,
            )
            for result in COST_RESULTS:
                self.cost_writes.labels(result)
        # Every label set starts at 0, so a rate() has a start and the series exist.
        for stage in ERROR_STAGES:
            self.errors.labels(stage)
        # audit.rebalance: only registered when enabled.
        self.rebalance_evictions: Counter | None = None
        if rebalance:
            self.rebalance_evictions = Counter(
                "topospread_rebalance_evictions",
                "Steps of the plan the audit Deployment carried out (audit.rebalance), by "
                "result: matched (as predicted), differed, budget (refused by a "
                "PodDisruptionBudget), timeout (replacement not Ready), gone, blocked, error.",
                ["result"],
                registry=r,
            )
            for result in REBALANCE_RESULTS:
                self.rebalance_evictions.labels(result)
        self._namespaces: set[str] = set()
        self._skews: set[SkewKey] = set()
        self._reports_seen = False

    def observe_run(self, report: AuditReport, seconds: float, at: float) -> None:
        """Record a successful audit that ended at `at` (Unix seconds)."""
        per_ns: dict[str, int] = {}
        for w in report.spreads:
            ns = w.workload.namespace
            per_ns[ns] = per_ns.get(ns, 0) + len(w.violated)
        for ns in self._namespaces - per_ns.keys():
            self.violations.remove(ns)
        for ns, count in per_ns.items():
            self.violations.labels(ns).set(count)
        self._namespaces = set(per_ns)

        skews = skew_labels(report)
        for key in self._skews - skews.keys():
            self.skew.remove(*key)
            self.max_skew.remove(*key)
        for key, (skew, max_skew) in skews.items():
            self.skew.labels(*key).set(skew)
            self.max_skew.labels(*key).set(max_skew)
        self._skews = set(skews)

        self.constraints.set(report.checked)
        self.workloads.set(len(report.spreads))
        self.duration.set(seconds)
        self.last_run.set(at)
        self.runs.inc()

    def count_error(self, stage: str) -> None:
        """Count a failed audit at `stage` (one of ERROR_STAGES)."""
        self.errors.labels(stage if stage in ERROR_STAGES else "audit").inc()

    def observe_reports(self, outcome: SyncOutcome) -> None:
        """Record what a PolicyReport (or OpenReports Report) sync did."""
        if not self._reports_seen:
            self._reports_seen = True
            for op in REPORT_OPERATIONS:
                self.report_errors.labels(op)
                if op != "list":
                    self.report_writes.labels(op)
        gauge = (
            self.openreports_crd_available if outcome.api == "openreports" else self.crd_available
        )
        if outcome.crd_available is not None and gauge is not None:
            gauge.set(1 if outcome.crd_available else 0)
        for op, count in (
            ("create", len(outcome.created)),
            ("update", len(outcome.updated)),
            ("delete", len(outcome.deleted)),
        ):
            if count:
                self.report_writes.labels(op).inc(count)
        for op, _ns, _message in outcome.errors:
            self.report_errors.labels(op if op in REPORT_OPERATIONS else "list").inc()

    def count_rebalance(self, result: str) -> None:
        """Count one rebalancing step by its result (one of REBALANCE_RESULTS)."""
        if self.rebalance_evictions is not None:
            self.rebalance_evictions.labels(
                result if result in REBALANCE_RESULTS else "error"
            ).inc()

    def observe_costs(self, outcome: KeeperOutcome) -> None:
        """Record what a deletion-cost keeper pass did."""
        if self.cost_writes is None:
            return
        for result, keys in outcome.results.items():
            if keys:
                self.cost_writes.labels(result).inc(len(keys))

    def exposition(self) -> bytes:
        """The text /metrics serves."""
        return bytes(generate_latest(self.registry))
