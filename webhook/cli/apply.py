"""`topospread audit --plan --apply`: the plan carried out on a live cluster.

Reads the cluster (never a snapshot: there is nothing to evict in a file), prints the
audit and its plan, asks for a confirmation on a terminal (`--yes` skips it; without a
terminal and without `--yes` nothing is carried out and the exit status is the
audit's), then carries the plan out step by step (webhook/audit/act/applier.py): a line per
step, ✓ or what the cluster did instead, a JSON line per step with `--record FILE`,
and with `-o json` the audit document with an `apply` key. Exit status
(steps.EXIT_CODES): 0 every step as predicted, 3 stopped on a difference, 4 stopped
on a budget, 2 usage or cluster errors; 0/1 (the audit's) when not carried out.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any, TextIO

from webhook.audit.act.applier import Applier, ApplyOptions, ApplyResult
from webhook.audit.act.evictor import LiveCluster
from webhook.audit.act.steps import StepRecord, step_line
from webhook.audit.measure.spread import evaluate
from webhook.audit.plan.planner import make_plan
from webhook.audit.report.document import AuditReport
from webhook.audit.report.text import render_text
from webhook.cli.common import colour, connect_live, modelled_settings, paint
from webhook.cluster.lister import StatusLine, server_version
from webhook.config import Settings
from webhook.errors import InputError

__all__ = ["cli_audit_apply", "options_from"]

NOT_CARRIED_OUT = "not carried out"
DEFAULT_STEP_TIMEOUT = 300.0
DEFAULT_BUDGET_WAIT = 120.0


def options_from(args: argparse.Namespace) -> ApplyOptions:
    """The --apply flags checked; InputError (exit 2) for a bad combination or value."""
    if args.snapshot:
        raise InputError(
            "--apply evicts pods of a live cluster: give --kubeconfig, --context or "
            "--in-cluster (or nothing: the current context), not --snapshot"
        )
    if args.output == "html":
        raise InputError("--apply prints text or json (-o text|json)")
    interval = 0.0 if args.interval is None else args.interval
    step_timeout = DEFAULT_STEP_TIMEOUT if args.step_timeout is None else args.step_timeout
    budget_wait = DEFAULT_BUDGET_WAIT if args.budget_wait is None else args.budget_wait
    if args.max_evictions is not None and args.max_evictions < 1:
        raise InputError(f"--max-evictions: must be 1 or more, got {args.max_evictions}")
    if interval < 0:
        raise InputError(f"--interval: must be 0 or more seconds, got {interval:g}")
    if step_timeout <= 0:
        raise InputError(f"--step-timeout: must be more than 0 seconds, got {step_timeout:g}")
    if budget_wait < 0:
        raise InputError(f"--budget-wait: must be 0 or more seconds, got {budget_wait:g}")
    return ApplyOptions(
        max_evictions=args.max_evictions,
        interval=interval,
        step_timeout=step_timeout,
        budget_wait=budget_wait,
        replan=args.replan,
        include_soft=args.include_soft,
    )


def _confirm(count: int, where: str, err: TextIO) -> bool:
    """Ask on the terminal; False without one (then --yes is the way)."""
    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        err.write(
            f"{NOT_CARRIED_OUT}: no terminal to confirm on; give --yes to evict "
            f"{count} pod(s) on {where}\n"
        )
        return False
    err.write(f"evict {count} pod(s) on {where}, one at a time? [y/N] ")
    err.flush()
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        err.write(f"{NOT_CARRIED_OUT}\n")
        return False
    return True


def _summary(result: ApplyResult) -> str:
    done = f"{result.evictions} eviction(s)"
    if result.outcome == "completed" and result.reason.startswith("stopped"):
        return f"{result.reason}: {done}, every one as predicted\n"
    if result.outcome == "completed":
        return f"plan carried out: {done}, every step as predicted\n"
    return f"stopped ({result.outcome}) after {done}: {result.reason}\n"


def cli_audit_apply(args: argparse.Namespace, settings: Settings) -> int:
    options = options_from(args)
    conn = connect_live(args)
    # The cluster's release when neither the flags nor the config name one.
    settings = modelled_settings(args, settings, server_version(conn))[0]
    cluster = LiveCluster(conn)
    seen = cluster.read()
    spreads = evaluate(seen.state, include_soft=options.include_soft, args=settings.spread)
    plan = make_plan(seen.state, spreads, settings, include_soft=options.include_soft)
    report = AuditReport(spreads, plan=plan)
    as_json = args.output == "json"
    out = sys.stdout
    if not as_json:
        on = colour(out)
        out.write(render_text(report, lambda text, style: paint(text, style, on)))
        out.flush()
    moves = plan.moves
    if options.max_evictions is not None:
        moves = moves[: options.max_evictions]
    if not moves or not (args.yes or _confirm(len(moves), conn.name, sys.stderr)):
        if not moves and not as_json:
            out.write("nothing to carry out\n")
        if as_json:
            doc: dict[str, Any] = report.to_json()
            doc["apply"] = {"outcome": NOT_CARRIED_OUT, "steps": []}
            print(json.dumps(doc, indent=2, ensure_ascii=False))
        return report.exit_code

    record: IO[str] | None = None
    if args.record:
        try:
            record = open(args.record, "a", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise InputError(f"--record {args.record}: {exc.strerror or exc}") from exc
    total = len(moves)
    status = StatusLine(sys.stderr)

    def on_step(step: StepRecord) -> None:
        status.done()
        if record is not None:
            record.write(json.dumps(step.to_json(), ensure_ascii=False) + "\n")
            record.flush()
        if not as_json:
            out.write(step_line(step, max(total, step.number)) + "\n")
            out.flush()

    try:
        applier = Applier(cluster, settings, options, on_step=on_step, progress=status.show)
        result = applier.run(seen, plan, spreads)
    finally:
        status.done()
        if record is not None:
            record.close()
    if as_json:
        doc = report.to_json()
        doc["apply"] = result.to_json()
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        out.write(_summary(result))
    return result.exit_code
