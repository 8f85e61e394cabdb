"""PolicyReports: the audit's violations as wgpolicyk8s.io/v1alpha2 PolicyReports, or as
openreports.io/v1alpha1 Reports (their successor, written by Kyverno 1.15 and read by
Policy Reporter 3.2), one per namespace.

    results = desired_results(report, state, now=time.time())   # namespace -> results (pure)
    outcome = PolicyReportWriter(conn).sync(results)             # create, update, delete
    outcome = PolicyReportWriter(conn, OPENREPORTS).sync(results)   # the same as Reports

The two APIs share the result's shape (openreports/reports-api
apis/openreports.io/v1alpha1/report_types.go: ReportResult keeps wgpolicyk8s's JSON
names: policy, rule, result, severity, category, source, scored, timestamp,
resources, message, properties); a Report also names its `source` at the top.
Everything below holds for either API, each written by its own writer.

Each namespace with a violated constraint gets one PolicyReport named `topospread`,
labelled `app.kubernetes.io/managed-by: topospread`, with one result per violated
constraint evaluation (`policy: topospread`, `rule: <topologyKey>`, `source:
topospread`, `resources` naming the workload); a namespace with none left loses its
report. Only reports we own are touched: the name *and* the label, read back from a
list filtered by the label; another owner's `topospread` report is left alone and
the conflict counted. A result that did not change keeps its timestamp, and a report
whose results did not change is not written at all.

This module holds the only write verbs (POST, PUT, DELETE) of the package but the
deletion-cost keeper's PATCH (keeper.py): every other write of topospread goes
through `PolicyReportWriter._call`, and a test reads every module's source to keep
it so. Requests are raw JSON sent by webhook/cluster/rest.py, as lister.py reads;
no client model class is ever built.

No such API (404 on the collection: the CRD is not installed): one log line
when that starts, `crd_available = False` in the outcome, nothing written; the next
sync asks again. Any other failure is one log line and one error in the outcome,
and the sync goes on with the next namespace (a lost connection ends it: the next
run retries everything).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webhook.api.constraint import DO_NOT_SCHEDULE
from webhook.api.kube import RawObj, as_dict, meta
from webhook.audit.measure.spread import ConstraintSpread
from webhook.audit.report.document import AuditReport
from webhook.audit.state.inventory import ClusterState, Workload
from webhook.cluster.rest import Unreachable, send

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.cluster.lister import Connection

__all__ = [
    "API_PATH",
    "APIS",
    "MANAGED_BY",
    "OPENREPORTS",
    "REPORT_NAME",
    "WGPOLICYK8S",
    "PolicyReportWriter",
    "ReportApi",
    "SyncOutcome",
    "desired_results",
    "policy_report",
    "result_of",
]

log = logging.getLogger("topospread.audit.policyreports")


@dataclass(frozen=True)
class ReportApi:
    """One reporting API: its name in audit.reports, group/version, kind and plural."""

    name: str
    group_version: str
    kind: str
    plural: str

    @property
    def path(self) -> str:
        return f"/apis/{self.group_version}"


WGPOLICYK8S = ReportApi("wgpolicyk8s", "wgpolicyk8s.io/v1alpha2", "PolicyReport", "policyreports")
OPENREPORTS = ReportApi("openreports", "openreports.io/v1alpha1", "Report", "reports")
APIS = {api.name: api for api in (WGPOLICYK8S, OPENREPORTS)}
GROUP_VERSION = WGPOLICYK8S.group_version
API_PATH = WGPOLICYK8S.path
REPORT_NAME = "topospread"
POLICY = "topospread"
SOURCE = "topospread"
MANAGED_BY = ("app.kubernetes.io/managed-by", "topospread")
# Domains named in a result's message and properties; the rest are counted (a hostname
# constraint over 5,000 nodes must not make a report too big for etcd).
MAX_DOMAINS = 12

# apiVersion of the workload kinds an audit meets; other owner kinds go without one.
_API_VERSIONS = {
    "Pod": "v1",
    "ReplicationController": "v1",
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}


# ---- what the reports hold (pure) -----------------------------------------------------


def _domains_text(domains: Mapping[str, int]) -> str:
    """`a=4, b=1, c=1`; beyond MAX_DOMAINS the fullest and emptiest, and a count."""
    items = list(domains.items())
    if len(items) <= MAX_DOMAINS:
        return ", ".join(f"{d}={n}" for d, n in items)
    ranked = sorted(items, key=lambda kv: (-kv[1], kv[0]))
    half = MAX_DOMAINS // 2
    shown = ranked[:half] + ranked[-half:]
    rest = len(items) - len(shown)
    return ", ".join(f"{d}={n}" for d, n in shown) + f" (and {rest} more domains)"


def result_of(
    workload: Workload, c: ConstraintSpread, *, uid: str | None = None, now: float = 0.0
) -> RawObj:
    """The PolicyReportResult of one violated constraint evaluation."""
    hard = c.when_unsatisfiable == DO_NOT_SCHEDULE
    resource: RawObj = {}
    api_version = _API_VERSIONS.get(workload.kind)
    if api_version is not None:
        resource["apiVersion"] = api_version
    resource.update({"kind": workload.kind, "namespace": workload.namespace})
    resource["name"] = workload.name
    if uid:
        resource["uid"] = uid
    domains = _domains_text(c.domains)
    return {
        "policy": POLICY,
        "rule": c.topology_key,
        # ScheduleAnyway is the scheduler's preference, not its rule: a warning.
        "result": "fail" if hard else "warn",
        "severity": "medium" if hard else "low",
        "category": "Pod Topology Spread",
        "source": SOURCE,
        "scored": True,
        "message": (
            f"{workload}: skew {c.skew} > maxSkew {c.max_skew} over {c.topology_key} "
            f"({c.when_unsatisfiable}, constraint {c.index}); pods per domain: {domains}"
        ),
        "properties": {
            "constraintIndex": str(c.index),
            "whenUnsatisfiable": c.when_unsatisfiable,
            "skew": str(c.skew),
            "maxSkew": str(c.max_skew),
            "pods": str(c.pods),
            "domains": domains,
        },
        "resources": [resource],
        "timestamp": {"seconds": int(now), "nanos": 0},
    }


def _uid(state: ClusterState | None, workload: Workload) -> str | None:
    if state is None:
        return None
    owner = state.owners.get((workload.kind, workload.namespace, workload.name))
    uid = meta(owner).get("uid") if owner is not None else None
    return uid if isinstance(uid, str) else None


def desired_results(
    report: AuditReport, state: ClusterState | None = None, *, now: float = 0.0
) -> dict[str, list[RawObj]]:
    """namespace -> the results its PolicyReport should hold (only namespaces with a
    violation), in the report's order (workloads by kind and name, constraints by index).
    `state` supplies the workloads' uids when it holds their objects."""
    out: dict[str, list[RawObj]] = {}
    for w in report.spreads:
        violated = w.violated
        if not violated:
            continue
        uid = _uid(state, w.workload)
        out.setdefault(w.workload.namespace, []).extend(
            result_of(w.workload, c, uid=uid, now=now) for c in violated
        )
    return out


def _summary(results: list[RawObj]) -> dict[str, int]:
    # The PolicyReport summary's keys ("pass" is a result, not a password).
    summary = {"pass": 0, "fail": 0, "warn": 0, "error": 0, "skip": 0}  # nosec B105
    for r in results:
        outcome = r.get("result")
        if isinstance(outcome, str) and outcome in summary:
            summary[outcome] += 1
    return summary


def policy_report(namespace: str, results: list[RawObj], api: ReportApi = WGPOLICYK8S) -> RawObj:
    """A new PolicyReport (or OpenReports Report) for `namespace` holding `results`."""
    report: RawObj = {
        "apiVersion": api.group_version,
        "kind": api.kind,
        "metadata": {
            "name": REPORT_NAME,
            "namespace": namespace,
            "labels": {MANAGED_BY[0]: MANAGED_BY[1]},
        },
    }
    if api is OPENREPORTS:
        report["source"] = SOURCE
    report["summary"] = _summary(results)
    report["results"] = results
    return report


def _identity(result: Any) -> str:
    body = {k: v for k, v in as_dict(result).items() if k != "timestamp"}
    return json.dumps(body, sort_keys=True, default=str)


def _keep_timestamps(results: list[RawObj], existing: Any) -> list[RawObj]:
    """`results` with the timestamp of each one that `existing` already holds unchanged."""
    seen: dict[str, Any] = {}
    for old in existing if isinstance(existing, list) else []:
        if isinstance(old, dict) and "timestamp" in old:
            seen.setdefault(_identity(old), old["timestamp"])
    out = []
    for r in results:
        stamp = seen.get(_identity(r))
        out.append(r if stamp is None else {**r, "timestamp": stamp})
    return out


def _ours(obj: Any) -> bool:
    m = meta(as_dict(obj))
    labels = as_dict(m.get("labels"))
    return m.get("name") == REPORT_NAME and labels.get(MANAGED_BY[0]) == MANAGED_BY[1]


# ---- writing them -----------------------------------------------------------------------


@dataclass
class SyncOutcome:
    """What one sync did: namespaces whose report was created, updated, deleted or left
    as it was; errors as (operation, namespace, message); crd_available: whether the
    API answered (None when the sync never got to ask); api: which one (its name in
    audit.reports)."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    crd_available: bool | None = None
    api: str = WGPOLICYK8S.name


class _Unreachable(Exception):
    """The API server did not answer at all: the sync stops here."""

    def __init__(self, operation: str, message: str) -> None:
        super().__init__(message)
        self.operation = operation
        self.message = message


# The operation (as counted in metrics) each verb performs.
_OPERATIONS = {"GET": "list", "POST": "create", "PUT": "update", "DELETE": "delete"}


def _message(body: Any, status: int) -> str:
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return f"HTTP {status}"


class PolicyReportWriter:
    """Keeps each namespace's `topospread` PolicyReport (or Report, per `api`) equal to
    the latest audit."""

    def __init__(self, conn: Connection, api: ReportApi = WGPOLICYK8S) -> None:
        self.conn = conn
        self.api = api
        self._missing_logged = False

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, str] | None = None,
    ) -> tuple[int, Any]:
        """(status, parsed JSON body or None); _Unreachable when nothing answered."""
        try:
            reply = send(self.conn, method, path, body, query=query)
        except Unreachable as exc:
            raise _Unreachable(_OPERATIONS[method], str(exc)) from exc.__cause__
        return reply.status, reply.json()

    def _collection(self, namespace: str | None = None) -> str:
        api = self.api
        if namespace is None:
            return f"{api.path}/{api.plural}"
        return f"{api.path}/namespaces/{namespace}/{api.plural}"

    def sync(self, desired: Mapping[str, list[RawObj]]) -> SyncOutcome:
        """Create, update and delete our reports so that exactly the namespaces of
        `desired` have one, holding those results. Never raises."""
        outcome = SyncOutcome(api=self.api.name)
        try:
            self._sync(desired, outcome)
        except _Unreachable as exc:
            self._error(outcome, exc.operation, "", exc.message)
        return outcome

    def _error(self, outcome: SyncOutcome, op: str, namespace: str, message: str) -> None:
        where = f" in namespace {namespace}" if namespace else ""
        log.warning(
            "%s %s%s failed: %s; retried at the next audit", self.api.kind, op, where, message
        )
        outcome.errors.append((op, namespace, message))

    def _sync(self, desired: Mapping[str, list[RawObj]], outcome: SyncOutcome) -> None:
        selector = f"{MANAGED_BY[0]}={MANAGED_BY[1]}"
        status, body = self._call("GET", self._collection(), query={"labelSelector": selector})
        if status == 404:
            outcome.crd_available = False
            if not self._missing_logged:
                self._missing_logged = True
                log.warning(
                    "audit.policyReports is on but the API server has no %s %s "
                    "(GET %s answered 404): install the %s CRD; no report is "
                    "written, asked again at every audit",
                    self.api.group_version,
                    self.api.kind,
                    self._collection(),
                    self.api.kind,
                )
            return
        if status != 200 or not isinstance(body, dict):
            self._error(outcome, "list", "", _message(body, status))
            return
        if self._missing_logged:
            log.info("the %s %s API is available now", self.api.group_version, self.api.kind)
            self._missing_logged = False
        outcome.crd_available = True
        ours: dict[str, RawObj] = {}
        for item in body.get("items") or []:
            if _ours(item):
                ns = meta(item).get("namespace")
                if isinstance(ns, str):
                    ours[ns] = item
        for ns in sorted(desired):
            self._put(ns, desired[ns], ours.pop(ns, None), outcome)
        for ns in sorted(ours):
            self._delete(ns, ours[ns], outcome)

    def _put(
        self, ns: str, results: list[RawObj], existing: RawObj | None, outcome: SyncOutcome
    ) -> None:
        if existing is None:
            report = policy_report(ns, results, self.api)
            status, body = self._call("POST", self._collection(ns), report)
            if status in (200, 201):
                outcome.created.append(ns)
            elif status == 409:
                self._error(
                    outcome,
                    "create",
                    ns,
                    f"a {self.api.kind} {ns}/{REPORT_NAME} exists that topospread does not "
                    f"manage (no label {MANAGED_BY[0]}={MANAGED_BY[1]}); left alone",
                )
            else:
                self._error(outcome, "create", ns, _message(body, status))
            return
        results = _keep_timestamps(results, existing.get("results"))
        summary = _summary(results)
        if existing.get("results") == results and existing.get("summary") == summary:
            outcome.unchanged.append(ns)
            return
        # Everything else of the stored object (its resourceVersion: a concurrent change
        # answers 409 and is retried next run; others' labels and annotations) is kept.
        updated = {**existing, "summary": summary, "results": results}
        path = f"{self._collection(ns)}/{REPORT_NAME}"
        status, body = self._call("PUT", path, updated)
        if status == 200:
            outcome.updated.append(ns)
        else:
            self._error(outcome, "update", ns, _message(body, status))

    def _delete(self, ns: str, existing: RawObj, outcome: SyncOutcome) -> None:
        path = f"{self._collection(ns)}/{REPORT_NAME}"
        options: RawObj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        uid = meta(existing).get("uid")
        if isinstance(uid, str) and uid:
            # Only the object we listed: one created again meanwhile is not ours to delete.
            options["preconditions"] = {"uid": uid}
        status, body = self._call("DELETE", path, options)
        if status in (200, 202):
            outcome.deleted.append(ns)
        elif status == 404:
            outcome.unchanged.append(ns)  # already gone
        else:
            self._error(outcome, "delete", ns, _message(body, status))
