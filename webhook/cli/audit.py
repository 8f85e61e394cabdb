"""`topospread audit`: the spread of what already runs, a plan that fixes it, the
drills (nodes deleted, unreachable, drained).

Reads a snapshot file (`--snapshot`, which also holds the workloads: Deployments,
DaemonSets, Jobs, CronJobs besides what `simulate` reads), a kubeconfig context
(`--kubeconfig`, `--context`), the cluster the pod runs in (`--in-cluster`), or by
default the current context of the default kubeconfig, as kubectl does. Exit 0 when
nothing is violated, 1 when something is (in the state reported: after the drill,
with one), 2 on usage, read or connection errors.

`--watch` is the server side (the audit Deployment): the same audit every
audit.intervalSeconds until SIGTERM, exported on --metrics-bind (/metrics, /healthz,
and with audit.report the HTML page /report) and, with audit.policyReports, written
as PolicyReports or OpenReports Reports (audit.reports; webhook/audit/watch.py). A
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
from typing import Any, TextIO

from webhook.api.kube import RawObj
from webhook.api.labels import parse_selector
from webhook.audit.html import audit_page, utc_now
from webhook.audit.inventory import ClusterState, Collector
from webhook.audit.metrics import AuditMetrics
from webhook.audit.policyreports import APIS, PolicyReportWriter
from webhook.audit.ranges import add_ranges, range_lines
from webhook.audit.report import render_text
from webhook.audit.run import run_audit
from webhook.audit.watch import AuditLoop, AuditStopped, LatestReport, MetricsServer
from webhook.audit.whatif import DRAIN, UNREACHABLE, WITHOUT
from webhook.cli.common import colour, paint
from webhook.cli.simulate import (
    processes,
    sampling_asked,
    sampling_error,
    without_cyclic_gc,
)
from webhook.cluster.files import scan_list
from webhook.config import SamplingOptions, Settings, load_settings
from webhook.errors import ConfigError, InputError
from webhook.server.logs import dict_config, level_from_env

__all__ = ["cli_audit", "read_state"]

log = logging.getLogger("topospread.audit")


def read_state(args: argparse.Namespace, err: TextIO) -> ClusterState:
    """The cluster state as the flags say; InputError / ClusterError / ConfigError."""
    collector = Collector()
    if args.snapshot:
        scan_list(args.snapshot, collector.add)
        return collector.state()
    from webhook.cluster.lister import AUDIT_RESOURCES, connect, list_objects

    conn = connect(
        kubeconfig=args.kubeconfig,
        context=args.context,
        in_cluster=args.in_cluster,
        timeout=args.request_timeout,
    )
    for obj in list_objects(conn, AUDIT_RESOURCES, progress=err):
        collector.add(obj)
    return collector.state()


# The drill flags: the drill each runs (run.DRILLS).
DRILL_FLAGS = {
    "without_nodes": WITHOUT,
    "unreachable_nodes": UNREACHABLE,
    "drain_nodes": DRAIN,
}


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


def cli_audit(args: argparse.Namespace) -> int:
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
    drill = _drill(args)
    if runs > 1 and drill is None:
        raise InputError(
            "--runs repeats a drill: give --without-nodes, --unreachable-nodes or --drain-nodes"
        )
    with without_cyclic_gc():
        state = read_state(args, sys.stderr)
        report = run_audit(
            state,
            settings,
            include_soft=args.include_soft,
            plan=args.plan,
            drill=drill,
        )
        doc = report.to_json()
        if runs > 1:
            seeds = range(_seed(args) + 1, _seed(args) + runs)
            others = audit_runs(state, settings, seeds, args.include_soft, args.plan, drill)
            add_ranges(doc, [doc, *others])
    if args.output == "json":
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif args.output == "html":
        sys.stdout.write(audit_page(doc, generated=utc_now()))
    else:
        on = colour(sys.stdout)
        sys.stdout.write(render_text(report, lambda text, style: paint(text, style, on)))
        ranges = range_lines(doc, _seed(args))
        if ranges:
            sys.stdout.write("\n".join(ranges) + "\n")
    return report.exit_code


def _seed(args: argparse.Namespace) -> int:
    return getattr(args, "seed", None) or 0


# What the forked run workers read (set before the pool forks: the cluster state is
# shared copy-on-write, never pickled).
_RUN_INPUT: tuple[ClusterState, Settings, bool, bool, tuple[str, RawObj] | None] | None = None


def _one_run(seed: int) -> dict[str, Any]:
    """One sampled run of the drill in _RUN_INPUT with this seed: its JSON document."""
    assert _RUN_INPUT is not None
    state, settings, include_soft, plan, drill = _RUN_INPUT
    options = settings.sampling or SamplingOptions()
    seeded = replace(settings, sampling=replace(options, seed=seed))
    report = run_audit(state, seeded, include_soft=include_soft, plan=plan, drill=drill)
    return report.to_json()


def audit_runs(
    state: ClusterState,
    settings: Settings,
    seeds: range,
    include_soft: bool,
    plan: bool,
    drill: tuple[str, RawObj] | None,
) -> list[dict[str, Any]]:
    """The documents of the runs with these seeds: in forked worker processes when there
    are several runs and cores to spare (cli.simulate.processes), else one after
    another."""
    global _RUN_INPUT
    _RUN_INPUT = (state, settings, include_soft, plan, drill)
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
    if args.plan or any(getattr(args, attr, None) is not None for attr in DRILL_FLAGS):
        raise InputError(
            "--watch audits the current state: --plan and the drills (--without-nodes, "
            "--unreachable-nodes, --drain-nodes) are for a one-shot audit"
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
        ),
    )


def _read_live(conn: Any, stop: threading.Event) -> ClusterState:
    """A fresh ClusterState listed from the cluster (`conn`: a lister.Connection, not
    imported here so that a one-shot audit of a file never loads the cluster client);
    AuditStopped once `stop` is set."""
    from webhook.cluster.lister import AUDIT_RESOURCES, list_objects

    collector = Collector()
    for obj in list_objects(conn, AUDIT_RESOURCES):
        if stop.is_set():
            raise AuditStopped()
        collector.add(obj)
    return collector.state()


def _read_file(path: str) -> ClusterState:
    collector = Collector()
    scan_list(path, collector.add)
    return collector.state()


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
    if args.snapshot:
        path: str = args.snapshot

        def read() -> ClusterState:
            return _read_file(path)

        if settings.audit.policy_reports:
            log.warning("audit.policyReports is on but --snapshot has no cluster to write to")
    else:
        from webhook.cluster.lister import connect

        conn = connect(
            kubeconfig=args.kubeconfig,
            context=args.context,
            in_cluster=args.in_cluster,
            timeout=args.request_timeout,
        )

        def read() -> ClusterState:
            return _read_live(conn, stop)

        writers = [PolicyReportWriter(conn, APIS[name]) for name in settings.audit.report_apis]
    metrics = AuditMetrics(
        policy_reports=bool(writers), report_apis=tuple(w.api.name for w in writers)
    )
    page = LatestReport() if settings.audit.report else None
    try:
        server = MetricsServer(args.metrics_bind, metrics, page).start()
    except OSError as exc:
        raise ConfigError(f"--metrics-bind {args.metrics_bind}: {exc.strerror or exc}") from exc
    paths = "/metrics, /healthz and /report" if page else "/metrics and /healthz"
    log.info("serving %s on %s", paths, args.metrics_bind)
    try:
        on_report = page.update if page is not None else None
        AuditLoop(read, settings, metrics, writers, on_report=on_report).run(stop)
    finally:
        server.stop()
    log.info("stopped")
    return 0
