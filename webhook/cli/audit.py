"""`topospread audit`: the spread of what already runs, a plan that fixes it, the
drills (nodes deleted, unreachable, drained; a workload scaled or rolled out).

Reads a snapshot file (`--snapshot`, which also holds the workloads: Deployments,
DaemonSets, Jobs, CronJobs besides what `simulate` reads), a kubeconfig context
(`--kubeconfig`, `--context`), the cluster the pod runs in (`--in-cluster`), or by
default the current context of the default kubeconfig, as kubectl does. Exit 0 when
nothing is violated, 1 when something is (in the state reported: after the drill,
with one), 2 on usage, read or connection errors.

`--watch` is the server side (the audit Deployment): the same audit every
audit.intervalSeconds until SIGTERM, exported on --metrics-bind (/metrics, /healthz,
and with audit.report the HTML page /report) and, with audit.policyReports, written
as PolicyReports or OpenReports Reports (audit.reports; webhook/audit/serve/loop.py). A
failing list or write never ends it; it exits 0 on SIGTERM, 2 on bad flags or config.
"""

from __future__ import annotations

import argparse
import json
import logging
import logging.config
import multiprocessing
import signal
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TextIO

from webhook.api.kube import RawObj
from webhook.api.labels import parse_selector
from webhook.api.names import namespace_names_problem
from webhook.audit.act.keeper import CostKeeper
from webhook.audit.drills.outcome import DRAIN, UNREACHABLE, WITHOUT, matching_nodes
from webhook.audit.drills.ranges import add_ranges, range_lines
from webhook.audit.measure.costs import all_costs, costs_json, render_costs_text
from webhook.audit.pipeline import run_audit
from webhook.audit.report.metrics import AuditMetrics
from webhook.audit.report.policyreports import APIS, PolicyReportWriter
from webhook.audit.report.text import render_text
from webhook.audit.serve.loop import AuditLoop, AuditStopped, LatestReport, MetricsServer
from webhook.audit.state.inventory import ClusterState
from webhook.audit.state.reader import read_cluster, read_file
from webhook.audit.workloads.targets import (
    WorkloadRequest,
    check_target,
    known_workloads,
    parse_rollout,
    parse_scale,
)
from webhook.cli.common import colour, connect_live, modelled_settings, paint
from webhook.cli.simulate import (
    processes,
    sampling_asked,
    sampling_error,
    without_cyclic_gc,
)
from webhook.cluster.files import load_objects
from webhook.config import RebalanceSettings, SamplingOptions, Settings, load_settings
from webhook.controllers.gotime import parse_time
from webhook.errors import ConfigError, InputError
from webhook.render.html import audit_page, utc_now
from webhook.server.logs import dict_config, level_from_env

__all__ = ["cli_audit", "read_state"]

log = logging.getLogger("topospread.audit")


def read_state(args: argparse.Namespace, err: TextIO) -> ClusterState:
    """The cluster state as the flags say; InputError / ClusterError / ConfigError."""
    return read_state_and_version(args, err)[0]


def read_state_and_version(
    args: argparse.Namespace, err: TextIO
) -> tuple[ClusterState, tuple[int, int] | None]:
    """The cluster state as the flags say, and the live cluster's API server version
    (None from a snapshot); InputError / ClusterError / ConfigError."""
    if args.snapshot:
        return read_file(args.snapshot).state(), None
    from webhook.cluster.lister import server_version

    conn = connect_live(args)
    version = server_version(conn)
    return read_cluster(conn, progress=err).state(), version


# The drill flags: the drill each runs (run.DRILLS).
DRILL_FLAGS = {
    "without_nodes": WITHOUT,
    "unreachable_nodes": UNREACHABLE,
    "drain_nodes": DRAIN,
}


def _drill_text(args: argparse.Namespace) -> tuple[str, str] | None:
    """The drill flag given (`--drain-nodes`) and its selector as typed."""
    for attr in DRILL_FLAGS:
        text = getattr(args, attr, None)
        if text is not None:
            return f"--{attr.replace('_', '-')}", text
    return None


def _drill(args: argparse.Namespace) -> tuple[str, RawObj] | None:
    """The drill the flags ask for, with its node selector parsed; InputError if bad."""
    for attr, name in DRILL_FLAGS.items():
        text = getattr(args, attr, None)
        if text is None:
            continue
        try:
            return name, parse_selector(text)
        except ValueError as exc:
            raise InputError(f"--{attr.replace('_', '-')}: {exc}") from exc
    return None


# Flags that mean something only with --apply, or only with --watch (argparse dests;
# an unset one is None or False).
_APPLY_ONLY = (
    "yes",
    "replan",
    "max_evictions",
    "interval",
    "step_timeout",
    "budget_wait",
    "record",
)
_WATCH_ONLY = ("rebalance", "rebalance_max_evictions", "rebalance_namespaces")


def _only_with(args: argparse.Namespace) -> None:
    """A flag given without the mode it belongs to is a usage error, not ignored."""
    for mode, flags in (("apply", _APPLY_ONLY), ("watch", _WATCH_ONLY)):
        if getattr(args, mode, False):
            continue
        given = [f for f in flags if getattr(args, f, None) not in (None, False)]
        if given:
            names = ", ".join("--" + f.replace("_", "-") for f in given)
            raise InputError(f"{names}: only with --{mode}")


def _workload_flags(args: argparse.Namespace) -> tuple[list[str], str | None, str | None]:
    return (
        list(getattr(args, "scale", None) or []),
        getattr(args, "rollout", None),
        getattr(args, "now", None),
    )


def _workload_request(args: argparse.Namespace) -> WorkloadRequest | None:
    """The workload drill the flags ask for, its values parsed (not yet checked against
    the cluster); InputError if malformed."""
    scales, rollout, now_text = _workload_flags(args)
    now = datetime.now(UTC)
    if now_text is not None:
        parsed = parse_time(now_text)
        if parsed is None:
            raise InputError(f"--now: {now_text!r} is not an RFC 3339 time (2026-01-02T15:04:05Z)")
        now = parsed
        if not scales and rollout is None:
            raise InputError("--now is the controllers' clock: give it with --scale or --rollout")
    flag, value = ("--rollout", rollout) if rollout is not None else ("--scale", "")
    try:
        if rollout is not None:
            target, path = parse_rollout(rollout)
            return WorkloadRequest(rollout=(target, _deployment_file(path)), now=now)
        parsed_scales = []
        for value in scales:
            parsed_scales.append(parse_scale(value))
        if parsed_scales:
            return WorkloadRequest(scales=parsed_scales, now=now)
    except ValueError as exc:
        parts = value.split("/")
        namespace = parts[1] if len(parts) >= 3 and parts[1] else None
        raise BadWorkload(f"{flag}: {exc}", namespace) from exc
    return None


class BadWorkload(InputError):
    """A malformed --scale or --rollout value; `namespace`: the namespace it names, if
    it names one (the usage error then lists that namespace's workloads)."""

    def __init__(self, message: str, namespace: str | None) -> None:
        super().__init__(message)
        self.namespace = namespace


def _with_workloads_of(exc: BadWorkload, args: argparse.Namespace) -> InputError:
    """The usage error naming the workloads of the namespace the bad value names."""
    if exc.namespace is None:
        return exc
    known = known_workloads(read_state(args, sys.stderr), exc.namespace)
    listed = ", ".join(known) if known else "none"
    return InputError(f"{exc}; the workloads of namespace {exc.namespace!r}: {listed}")


def _deployment_file(path: str | None) -> RawObj | None:
    """The Deployment in FILE (the only one, or the first of several documents)."""
    if path is None:
        return None
    objects = [o for o in load_objects(path) if isinstance(o, dict)]
    found = [o for o in objects if o.get("kind") == "Deployment"]
    if not found:
        raise InputError(f"--rollout: {path} holds no Deployment")
    return found[0]


def _check_workloads(state: ClusterState, request: WorkloadRequest) -> None:
    targets = (
        [request.rollout[0]] if request.rollout is not None else [t for t, _ in request.scales]
    )
    flag = "--rollout" if request.rollout is not None else "--scale"
    for target in targets:
        try:
            check_target(state, target)
        except ValueError as exc:
            raise InputError(f"{flag}: {exc}") from exc


# Values of a label key named when a drill's selector matches no node (a hostname key has
# one per node).
VALUES_SHOWN = 20


def _selector_keys(selector: RawObj) -> list[str]:
    """The label keys a parsed selector reads, in the order written."""
    keys = list(selector.get("matchLabels") or {})
    keys += [e["key"] for e in selector.get("matchExpressions") or () if e["key"] not in keys]
    return keys


def _require_nodes(state: ClusterState, drill: tuple[str, RawObj], flag: str, text: str) -> None:
    """InputError when the drill's selector matches no node: a drill of nothing would
    report an unchanged cluster, which reads like a cluster that survives the drill.
    The error names the values each of the selector's keys has on the nodes."""
    if matching_nodes(state.snapshot, drill[1]):
        return
    labels = [info.labels for info in state.snapshot.nodes.values()]
    present = []
    for key in _selector_keys(drill[1]):
        values = sorted({str(lab[key]) or '""' for lab in labels if key in lab})
        shown = ", ".join(values[:VALUES_SHOWN])
        if len(values) > VALUES_SHOWN:
            shown += f" and {len(values) - VALUES_SHOWN:,} more"
        present.append(f"{key}: {shown}" if values else f"no node has the label {key}")
    where = f" ({'; '.join(present)})" if present else ""
    raise InputError(f"{flag}: no node matches {text}{where}")


def cli_audit(args: argparse.Namespace) -> int:
    _only_with(args)
    problem = sampling_error(args)
    if problem is not None:
        raise InputError(problem)
    settings = load_settings(args.config, args.scheduler_config)
    if sampling_asked(args):
        options = SamplingOptions(getattr(args, "percentage_of_nodes_to_score", None), _seed(args))
        settings = replace(settings, sampling=options)
    runs: int = getattr(args, "runs", None) or 1
    if getattr(args, "watch", False):
        if runs > 1:
            raise InputError("--runs repeats a drill: it is for a one-shot audit, not --watch")
        return cli_audit_watch(args, settings)
    if getattr(args, "apply", False):
        scales, rollout, _ = _workload_flags(args)
        if _drill(args) is not None or scales or rollout is not None:
            raise InputError("--apply carries out the plan of the current state: no drill with it")
        from webhook.cli.apply import cli_audit_apply

        return cli_audit_apply(args, settings)
    drill = _drill(args)
    try:
        workloads = _workload_request(args)
    except BadWorkload as exc:
        raise _with_workloads_of(exc, args) from exc
    if runs > 1 and drill is None and workloads is None:
        raise InputError(
            "--runs repeats a drill: give --without-nodes, --unreachable-nodes, --drain-nodes,"
            " --scale or --rollout"
        )
    with without_cyclic_gc():
        state, cluster_version = read_state_and_version(args, sys.stderr)
        settings, modelled, api_server = modelled_settings(args, settings, cluster_version)
        if workloads is not None:
            # The new pods are merged as the API server of the resolved release merges
            # them: one answer with the model's (flags, config, /version, newest).
            workloads = replace(workloads, server_version=api_server)
        given = _drill_text(args)
        if drill is not None and given is not None:
            _require_nodes(state, drill, *given)
        if workloads is not None:
            _check_workloads(state, workloads)
        try:
            report = run_audit(
                state,
                settings,
                include_soft=args.include_soft,
                plan=args.plan,
                drill=drill,
                workloads=workloads,
            )
        except ValueError as exc:
            if workloads is None:
                raise
            raise InputError(str(exc)) from exc
        # --deletion-costs: of the cluster as read (the costs a keeper would write now).
        costs = all_costs(state, settings) if getattr(args, "deletion_costs", False) else None
        doc = report.to_json()
        doc["kubernetesVersion"] = str(modelled)
        if costs is not None:
            doc["deletionCosts"] = costs_json(costs)
        if runs > 1:
            seeds = range(_seed(args) + 1, _seed(args) + runs)
            others = audit_runs(
                state, settings, seeds, args.include_soft, args.plan, drill, workloads
            )
            add_ranges(doc, [doc, *others])
    if args.output == "json":
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif args.output == "html":
        sys.stdout.write(audit_page(doc, generated=utc_now()))
    else:
        on = colour(sys.stdout)
        sys.stdout.write(render_text(report, lambda text, style: paint(text, style, on)))
        if costs is not None:
            sys.stdout.write(render_costs_text(costs))
        ranges = range_lines(doc, _seed(args))
        if ranges:
            sys.stdout.write("\n".join(ranges) + "\n")
    # Beside the report, not in it: the text report stays the spreads alone.
    sys.stderr.write(f"modelled as Kubernetes {modelled}\n")
    return report.exit_code


def _seed(args: argparse.Namespace) -> int:
    return getattr(args, "seed", None) or 0


# What the forked run workers read (set before the pool forks: the cluster state is
# shared copy-on-write, never pickled).
_RUN_INPUT: (
    tuple[
        ClusterState,
        Settings,
        bool,
        bool,
        tuple[str, RawObj] | None,
        WorkloadRequest | None,
    ]
    | None
) = None


def _one_run(seed: int) -> dict[str, Any]:
    """One sampled run of the drill in _RUN_INPUT with this seed: its JSON document."""
    if _RUN_INPUT is None:
        raise RuntimeError("_one_run outside a --runs batch")
    state, settings, include_soft, plan, drill, workloads = _RUN_INPUT
    options = settings.sampling or SamplingOptions()
    seeded = replace(settings, sampling=replace(options, seed=seed))
    report = run_audit(
        state, seeded, include_soft=include_soft, plan=plan, drill=drill, workloads=workloads
    )
    return report.to_json()


def audit_runs(
    state: ClusterState,
    settings: Settings,
    seeds: range,
    include_soft: bool,
    plan: bool,
    drill: tuple[str, RawObj] | None,
    workloads: WorkloadRequest | None = None,
) -> list[dict[str, Any]]:
    """The documents of the runs with these seeds: in forked worker processes when there
    are several runs and cores to spare (cli.simulate.processes), else one after
    another."""
    global _RUN_INPUT
    _RUN_INPUT = (state, settings, include_soft, plan, drill, workloads)
    try:
        workers = processes(len(seeds))
        if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
            return [_one_run(seed) for seed in seeds]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return pool.map(_one_run, seeds, chunksize=1)
    finally:
        _RUN_INPUT = None


# ---- --watch ------------------------------------------------------------------------------


def _watch_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    """The config's audit section with the flags that override it."""
    if getattr(args, "apply", False):
        raise InputError(
            "--watch audits the current state: --apply is for a one-shot audit "
            "(the audit Deployment carries out plans with audit.rebalance.enabled)"
        )
    scales, rollout, now = _workload_flags(args)
    if (
        args.plan
        or any(getattr(args, attr, None) is not None for attr in DRILL_FLAGS)
        or scales
        or rollout is not None
        or now is not None
    ):
        raise InputError(
            "--watch audits the current state: --plan and the drills (--without-nodes, "
            "--unreachable-nodes, --drain-nodes, --scale, --rollout) are for a one-shot audit"
        )
    audit = settings.audit
    interval = args.interval_seconds
    if interval is not None and interval < 0:
        raise InputError(f"--interval-seconds: must be 0 or more, got {interval}")
    return replace(
        settings,
        audit=replace(
            audit,
            interval_seconds=audit.interval_seconds if interval is None else interval,
            policy_reports=audit.policy_reports or args.policy_reports,
            include_soft=audit.include_soft or args.include_soft,
            reports=getattr(args, "reports", None) or audit.reports,
            report=audit.report or getattr(args, "report", False),
            rebalance=_rebalance_settings(args, audit.rebalance),
            # --deletion-costs with --watch: keep them (the RBAC the install gave).
            deletion_costs=replace(
                audit.deletion_costs,
                enabled=audit.deletion_costs.enabled or getattr(args, "deletion_costs", False),
            ),
        ),
    )


def _rebalance_settings(args: argparse.Namespace, config: RebalanceSettings) -> RebalanceSettings:
    """audit.rebalance with --rebalance, --rebalance-max-evictions and
    --rebalance-namespaces over it (the flags win); InputError for a bad value."""
    most = getattr(args, "rebalance_max_evictions", None)
    if most is not None and most < 1:
        raise InputError(f"--rebalance-max-evictions: must be 1 or more, got {most}")
    text = getattr(args, "rebalance_namespaces", None)
    namespaces = config.namespaces
    if text is not None:
        namespaces = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
        problem = namespace_names_problem(namespaces, "--rebalance-namespaces")
        if problem is not None:
            raise InputError(problem)
    return RebalanceSettings(
        enabled=config.enabled or bool(getattr(args, "rebalance", False)),
        max_evictions_per_run=config.max_evictions_per_run if most is None else most,
        namespaces=namespaces,
    )


def _read_live(conn: Any, stop: threading.Event) -> ClusterState:
    """A fresh ClusterState listed from the cluster (`conn`: a lister.Connection, not
    imported here so that a one-shot audit of a file never loads the cluster client);
    AuditStopped once `stop` is set."""

    def check() -> None:
        if stop.is_set():
            raise AuditStopped()

    return read_cluster(conn, check=check).state()


def _rebalancer(conn: Any, settings: Settings, stop: threading.Event) -> Any:
    """apply.Rebalancer on the live cluster of `conn`; its waits end on SIGTERM."""
    from webhook.audit.act.applier import Rebalancer
    from webhook.audit.act.evictor import LiveCluster

    def sleep(seconds: float) -> None:
        if stop.wait(seconds):
            raise AuditStopped()

    rebalance = settings.audit.rebalance
    log.info(
        "audit.rebalance: up to %d eviction(s) after each audit, namespaces: %s",
        rebalance.max_evictions_per_run,
        ", ".join(rebalance.namespaces) or "all",
    )
    return Rebalancer(LiveCluster(conn), settings, rebalance, sleep=sleep)


def cli_audit_watch(args: argparse.Namespace, settings: Settings) -> int:
    """`audit --watch`: audit on the interval until SIGTERM or SIGINT; exit 0 then."""
    settings = _watch_settings(args, settings)
    if args.snapshot == "-":
        raise InputError("--watch reads its --snapshot again at every audit: give a file")
    logging.config.dictConfig(dict_config(level_from_env()))
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("%s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    writers = []
    keeper: CostKeeper | None = None
    if args.snapshot:
        path: str = args.snapshot
        settings = modelled_settings(args, settings, None)[0]

        def read() -> ClusterState:
            return read_file(path).state()

        if settings.audit.policy_reports:
            log.warning("audit.policyReports is on but --snapshot has no cluster to write to")
        if settings.audit.deletion_costs.enabled:
            log.warning("audit.deletionCosts is on but --snapshot has no cluster to write to")
    else:
        from webhook.cluster.lister import server_version

        conn = connect_live(args)
        # The cluster's release when neither the flags nor the config name one.
        settings = modelled_settings(args, settings, server_version(conn))[0]

        def read() -> ClusterState:
            return _read_live(conn, stop)

        writers = [PolicyReportWriter(conn, APIS[name]) for name in settings.audit.report_apis]
        if settings.audit.deletion_costs.enabled:
            keeper = CostKeeper(conn, settings.audit.deletion_costs, stop=stop)
    # audit.rebalance: steps of the plan after each audit, on a live cluster only.
    rebalance = settings.audit.rebalance
    rebalancer = None
    if rebalance.enabled and args.snapshot:
        log.warning("audit.rebalance is on but --snapshot has no cluster to evict in")
    elif rebalance.enabled:
        rebalancer = _rebalancer(conn, settings, stop)
    metrics = AuditMetrics(
        policy_reports=bool(writers),
        report_apis=tuple(w.api.name for w in writers),
        rebalance=rebalancer is not None,
        deletion_costs=keeper is not None,
    )
    if rebalancer is not None:
        rebalancer.count = metrics.count_rebalance
    page = LatestReport() if settings.audit.report else None
    try:
        server = MetricsServer(args.metrics_bind, metrics, page).start()
    except OSError as exc:
        raise ConfigError(f"--metrics-bind {args.metrics_bind}: {exc.strerror or exc}") from exc
    paths = "/metrics, /healthz and /report" if page else "/metrics and /healthz"
    log.info("serving %s on %s", paths, args.metrics_bind)
    try:
        on_report = page.update if page is not None else None
        AuditLoop(
            read,
            settings,
            metrics,
            writers,
            on_report=on_report,
            rebalancer=rebalancer,
            keeper=keeper,
        ).run(stop)
    finally:
        server.stop()
    log.info("stopped")
    return 0
