"""`topospread audit`: the spread of what already runs, a plan that fixes it, the
zone-loss drill.

Reads a snapshot file (`--snapshot`, which also holds the workloads: Deployments,
DaemonSets, Jobs, CronJobs besides what `simulate` reads), a kubeconfig context
(`--kubeconfig`, `--context`), the cluster the pod runs in (`--in-cluster`), or by
default the current context of the default kubeconfig, as kubectl does. Exit 0 when
nothing is violated, 1 when something is (in the state reported: after re-placement
with --without-nodes), 2 on usage, read or connection errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from webhook.api.labels import parse_selector
from webhook.audit.inventory import ClusterState, Collector
from webhook.audit.report import render_text
from webhook.audit.run import run_audit
from webhook.cli.common import colour, paint
from webhook.cli.simulate import without_cyclic_gc
from webhook.cluster.files import scan_list
from webhook.config import load_settings
from webhook.errors import InputError

__all__ = ["cli_audit", "read_state"]


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


def cli_audit(args: argparse.Namespace) -> int:
    settings = load_settings(args.config, args.scheduler_config)
    without = None
    if args.without_nodes is not None:
        try:
            without = parse_selector(args.without_nodes)
        except ValueError as exc:
            raise InputError(f"--without-nodes: {exc}") from exc
    with without_cyclic_gc():
        state = read_state(args, sys.stderr)
        report = run_audit(
            state,
            settings,
            include_soft=args.include_soft,
            plan=args.plan,
            without=without,
        )
    if args.output == "json":
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        on = colour(sys.stdout)
        sys.stdout.write(render_text(report, lambda text, style: paint(text, style, on)))
    return report.exit_code
