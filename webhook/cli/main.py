"""The `topospread` command line (also `kubectl topospread`): a thin dispatcher.

Each subcommand lives in its own module (check, mutate, review, simulate, version;
serve, certs and manifests with the code they drive); this module only parses
arguments and maps errors to exit codes (0 ok, 1 invalid objects, 2 usage, input or
cluster errors), so no traceback ever reaches a user.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from webhook.errors import TopospreadError

Handler = Callable[[argparse.Namespace], int]

PLUGIN_NAME = "kubectl-topospread"


def _serve(args: argparse.Namespace) -> int:
    from webhook.server.serve import cli_serve

    return cli_serve(args)


def _review(args: argparse.Namespace) -> int:
    from webhook.cli.review import cli_review

    return cli_review(args)


def _check(args: argparse.Namespace) -> int:
    from webhook.cli.check import cli_check

    return cli_check(args)


def _field_validation(value: str) -> str:
    """--field-validation's value: Strict, Warn or Ignore, in any case (as kubectl's
    --validate)."""
    from webhook.validation.fields import parse_field_validation

    parsed = parse_field_validation(value)
    if parsed is None:
        raise argparse.ArgumentTypeError(f"{value!r}: choose from Strict, Warn, Ignore")
    return parsed


def _mutate(args: argparse.Namespace) -> int:
    from webhook.cli.mutate import cli_mutate

    return cli_mutate(args)


def _simulate(args: argparse.Namespace) -> int:
    from webhook.cli.simulate import cli_simulate

    return cli_simulate(args)


def _audit(args: argparse.Namespace) -> int:
    from webhook.cli.audit import cli_audit

    return cli_audit(args)


def _certs(args: argparse.Namespace) -> int:
    from webhook.install.certs import cli_certs

    return cli_certs(args)


def _manifests(args: argparse.Namespace) -> int:
    from webhook.install.manifests import cli_manifests

    return cli_manifests(args)


def _version(args: argparse.Namespace) -> int:
    from webhook.cli.version import cli_version

    return cli_version(args)


CHECK_EPILOG = """\
examples:
  {prog} check deploy/                       every *.yaml, *.yml, *.json of a directory
  helm template ./chart | {prog} check       stdin when no file is given
  {prog} check -R -o sarif manifests/ > topospread.sarif
  kubectl get pods -A -o yaml | {prog} check -   exported objects validate as stored
  {prog} check --server-version 1.33 --ignore selector-misses-pod web.yaml
  {prog} check --field-validation Warn web.yaml   unknown fields as warnings, not errors

Objects carrying server state (uid, resourceVersion, creationTimestamp, status) are
validated as kube-apiserver validates an update of a stored object, others as a
create. Kinds without a pod template are reported as skipped, never as valid.
Warnings can be silenced per run (--ignore ID) or per object with the annotation
topospread.io/ignore: ID[,ID...]. Warning ids: docs/rules.md. Unknown and duplicate
fields are refused as kubectl's default (fieldValidation=Strict) refuses them.

exit status:
  0  every checked object is valid (and, with --strict, has no warning)
  1  an object is invalid, or --strict and an object has a warning
  2  usage error, unreadable input, unusable config or unreachable cluster,
     or nothing to check with --fail-empty
"""

MUTATE_EPILOG = """\
examples:
  {prog} mutate pod.yaml > mutated.yaml
  {prog} mutate --server-version 1.33 deploy/ | {prog} check --server-version 1.33 -

For the API server --server-version names, exactly what the webhook's /mutate does:
from v1.34 the API server merges matchLabelKeys itself, so nothing is merged here.

exit status: 0 done, 2 usage error or unreadable input (then nothing is printed)
"""

REVIEW_EPILOG = """\
examples:
  {prog} review validate < review.json
  {prog} review mutate --server-version 1.33 < review.json | jq .response.patch

exit status: 0 answered, 2 malformed AdmissionReview or usage error
"""

SIMULATE_EPILOG = """\
examples:
  {prog} simulate deploy.yaml                      on the current kubeconfig context
  helm template ./chart | {prog} simulate --kind Deployment --name web
  {prog} simulate --snapshot cluster.json --replicas 6 -o json web.yaml

Every workload of the input is simulated (or the one --kind/--name choose), with
spec.replicas copies placed one after another and the labels its controller adds
(pod-template-hash, controller-revision-hash) set for a new revision.

exit status: 0 simulated (also when a pod fits nowhere), 2 usage, input or cluster error
"""


AUDIT_EPILOG = """\
examples:
  {prog} audit                                   the current kubeconfig context
  {prog} audit --plan                            and the fewest moves that fix it
  {prog} audit --without-nodes topology.kubernetes.io/zone=eu-west-1a
  {prog} audit --unreachable-nodes topology.kubernetes.io/zone=eu-west-1a   an outage
  {prog} audit --drain-nodes kubernetes.io/hostname=node-a1                can it go?
  {prog} audit --scale deploy/shop/web=3                 which pods a scale-down leaves
  {prog} audit --rollout deployment/shop/web=web-v2.yaml  a rollout, step by step
  kubectl get nodes,pods,services,replicasets,statefulsets,replicationcontrollers,\\
deployments,daemonsets,jobs,cronjobs,pv,pvc,storageclasses,csinodes,\\
poddisruptionbudgets,priorityclasses -A -o json > c.json
  {prog} audit --snapshot c.json -o json
  {prog} audit --watch --in-cluster --metrics-bind 0.0.0.0:9090   the audit Deployment

A pod counts when it is bound to a node of the cluster, not terminating and not
finished; its workload is its top controller (a ReplicaSet's Deployment, a Job's
CronJob). Constraints are read from the running pods, and each is evaluated as
kube-scheduler would for one more such pod. See docs/audit.md.

--watch audits again every audit.intervalSeconds (config; --interval-seconds wins)
until SIGTERM, serves /metrics and /healthz, and with audit.policyReports (or
--policy-reports) writes one PolicyReport per namespace. See docs/audit-server.md.

--plan --apply carries the plan out on the live cluster, one eviction at a time,
after a confirmation on a terminal (--yes without one): each replacement must land
in the predicted domain and leave the predicted skew, else it stops.

exit status:
  0  nothing is violated (after the drill, with one); --watch: stopped;
     --apply: every step carried out as predicted
  1  a checked constraint is violated (--apply: the plan printed, not carried out)
  2  usage error, unreadable snapshot or config, unreachable cluster
  3  --apply stopped: the cluster departed from the prediction
  4  --apply stopped: a PodDisruptionBudget kept refusing an eviction
"""


# ---- sampling, ties and outcome ranges (simulate and audit) -------------------------------


def add_sampling_args(p: argparse.ArgumentParser, what: str) -> None:
    """--percentage-of-nodes-to-score, --seed, --runs: sample as kube-scheduler does on a
    big cluster, and the range of outcomes over seeds (docs/simulate.md)."""
    g = p.add_argument_group(
        "sampling as kube-scheduler samples (default: every node scored, ties by name)"
    )
    g.add_argument(
        "--percentage-of-nodes-to-score",
        metavar="P",
        type=int,
        default=None,
        help="stop filtering once P %% of the nodes (at least 100) are found feasible and "
        "score only those, as kube-scheduler does; 0: its adaptive default (50 %% less 1 %% "
        "per 125 nodes, at least 5 %%); ties are then drawn at random from --seed",
    )
    g.add_argument(
        "--seed",
        metavar="N",
        type=int,
        default=None,
        help="the seed of the random tie-breaks and preemption offsets (default 0; "
        "implies sampling): the same seed, the same answer",
    )
    g.add_argument(
        "--runs",
        metavar="N",
        type=int,
        default=None,
        help=f"{what} N times with seeds seed..seed+N-1 (implies sampling) and report "
        "the range of outcomes: pending pods, pods per domain, chosen nodes",
    )


def add_audit_args(p: argparse.ArgumentParser) -> None:
    from webhook.cli.common import parse_version

    source = p.add_argument_group("cluster state").add_mutually_exclusive_group()
    source.add_argument(
        "--snapshot",
        metavar="FILE",
        help="cluster state from a file: `kubectl get nodes,pods,services,replicasets,"
        "statefulsets,replicationcontrollers,deployments,daemonsets,jobs,cronjobs,pv,pvc,"
        "storageclasses,csinodes,poddisruptionbudgets,priorityclasses -A -o json` "
        "('-' reads stdin)",
    )
    source.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config)",
    )
    source.add_argument("--in-cluster", action="store_true", help="the cluster this pod runs in")
    p.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    p.add_argument(
        "--request-timeout",
        metavar="SECONDS",
        type=float,
        default=30.0,
        help="give up on an unreachable cluster after this long (default 30)",
    )
    p.add_argument(
        "--include-soft",
        action="store_true",
        help="also check ScheduleAnyway constraints (default: DoNotSchedule only)",
    )
    p.add_argument(
        "--plan",
        action="store_true",
        help="the fewest pod moves (evictions) after which nothing checked is violated",
    )
    drills = p.add_argument_group("drills (one per run)").add_mutually_exclusive_group()
    drills.add_argument(
        "--without-nodes",
        metavar="SELECTOR",
        help="delete the nodes this label selector matches and re-place their pods first "
        "(instances gone: topology.kubernetes.io/zone=eu-west-1a)",
    )
    drills.add_argument(
        "--unreachable-nodes",
        metavar="SELECTOR",
        help="an outage of these nodes as the cluster handles it: they stay, tainted "
        "unreachable; their pods are evicted and recreated elsewhere (StatefulSet pods not)",
    )
    drills.add_argument(
        "--drain-nodes",
        metavar="SELECTOR",
        help="kubectl drain these nodes: cordon, evict through the Eviction API as "
        "PodDisruptionBudgets allow, replacements placed before each next eviction",
    )
    drills.add_argument(
        "--scale",
        metavar="KIND/NAMESPACE/NAME=N",
        action="append",
        help="scale a deployment, replicaset, statefulset or replicationcontroller (deploy, "
        "rs, sts, rc) to N: the pods its controller deletes, the new ones placed (repeatable)",
    )
    drills.add_argument(
        "--rollout",
        metavar="deployment/NAMESPACE/NAME[=FILE]",
        help="roll a Deployment out step by step, as its controller does (FILE: the "
        "Deployment with the new template, strategy and replicas; default: a new revision "
        "of the same template)",
    )
    p.add_argument(
        "--now",
        metavar="TIME",
        help="the controllers' clock for --scale and --rollout (RFC 3339; default: now)",
    )
    p.add_argument(
        "--server-version",
        metavar="MAJOR.MINOR",
        type=parse_version,
        help="the kube-apiserver that admits the pods --scale and --rollout create: from "
        "1.34 it merges matchLabelKeys into their spread selectors (default: 1.34, the "
        "newest)",
    )
    p.add_argument(
        "--deletion-costs",
        action="store_true",
        help="also the controller.kubernetes.io/pod-deletion-cost each pod of a "
        "ReplicaSet-owned workload should carry so that scale-downs keep its spread "
        "(JSON deletionCosts; docs/deletion-costs.md)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=["text", "json", "html"],
        default="text",
        help="text (default), json (the document of docs/audit.md) or html (one "
        "self-contained page of that document)",
    )
    add_apply_args(p)
    watch = p.add_argument_group("periodic audit (the audit Deployment)")
    watch.add_argument(
        "--watch",
        action="store_true",
        help="audit again every audit.intervalSeconds until SIGTERM, export metrics and "
        "(with audit.policyReports) PolicyReports; never exits on a cluster error",
    )
    watch.add_argument(
        "--metrics-bind",
        metavar="HOST:PORT",
        default="127.0.0.1:9090",
        help="with --watch: serve /metrics and /healthz here, plain HTTP (default 127.0.0.1:9090)",
    )
    watch.add_argument(
        "--interval-seconds",
        metavar="N",
        type=int,
        default=None,
        help="with --watch: seconds between audits (default: audit.intervalSeconds of "
        "--config, 300; 0: no periodic audit)",
    )
    watch.add_argument(
        "--policy-reports",
        action="store_true",
        help="with --watch: write PolicyReports (as audit.policyReports: true)",
    )
    watch.add_argument(
        "--reports",
        choices=["wgpolicyk8s", "openreports", "both"],
        default=None,
        help="with --watch: the API the reports go to (as audit.reports; default "
        "wgpolicyk8s: wgpolicyk8s.io/v1alpha2 PolicyReports; openreports: "
        "openreports.io/v1alpha1 Reports)",
    )
    watch.add_argument(
        "--report",
        action="store_true",
        help="with --watch: serve the latest audit as an HTML page at /report on "
        "--metrics-bind (as audit.report: true)",
    )
    watch.add_argument(
        "--rebalance",
        action="store_true",
        help="with --watch: after each audit, carry out steps of the plan (evictions; as "
        "audit.rebalance.enabled: true; needs create on pods/eviction)",
    )
    watch.add_argument(
        "--rebalance-max-evictions",
        metavar="N",
        type=int,
        default=None,
        help="with --rebalance: evictions at most per audit (as "
        "audit.rebalance.maxEvictionsPerRun; default 1)",
    )
    watch.add_argument(
        "--rebalance-namespaces",
        metavar="NS[,NS...]",
        default=None,
        help="with --rebalance: only the workloads of these namespaces (as "
        "audit.rebalance.namespaces; default all)",
    )


def add_apply_args(p: argparse.ArgumentParser) -> None:
    """--apply and its limits: the plan carried out on a live cluster (docs/audit.md)."""
    apply = p.add_argument_group("carrying out the plan (a live cluster)")
    apply.add_argument(
        "--apply",
        action="store_true",
        help="carry the plan out (implies --plan): evict its pods one at a time through the "
        "Eviction API, checking each replacement against the prediction (asks first on a "
        "terminal)",
    )
    apply.add_argument(
        "--yes", action="store_true", help="with --apply: carry it out without asking"
    )
    apply.add_argument(
        "--replan",
        action="store_true",
        help="with --apply: when the cluster departs from a prediction, plan again from "
        "what it now sees and go on (default: stop)",
    )
    apply.add_argument(
        "--max-evictions",
        metavar="N",
        type=int,
        default=None,
        help="with --apply: evict at most N pods (default: the plan's length)",
    )
    apply.add_argument(
        "--interval",
        metavar="SECONDS",
        type=float,
        default=None,
        help="with --apply: wait this long between steps (default 0)",
    )
    apply.add_argument(
        "--step-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="with --apply: how long a replacement has to be bound and Ready (default 300)",
    )
    apply.add_argument(
        "--budget-wait",
        metavar="SECONDS",
        type=float,
        default=None,
        help="with --apply: how long an eviction a PodDisruptionBudget refuses (429) is "
        "retried, with a doubling wait (default 120)",
    )
    apply.add_argument(
        "--record",
        metavar="FILE",
        help="with --apply: append one JSON line per step (request, answers, prediction, "
        "observation) to FILE",
    )


def build_parser(prog: str = "topospread") -> argparse.ArgumentParser:
    from webhook.cli.common import (
        add_cluster_args,
        add_config_args,
        add_kubernetes_version_arg,
        add_server_version_arg,
    )
    from webhook.cli.inputs import add_input_args
    from webhook.cli.version import version

    plugin = prog.startswith("kubectl")
    description = "Validate, mutate and simulate Pod topology spread constraints."
    if plugin:
        description += " Running as a kubectl plugin: `kubectl topospread COMMAND`."
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=f"Run `{prog} COMMAND --help` for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"topospread {version()}")
    parser.set_defaults(prog=prog)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(
        name: str, handler: Handler, help_text: str, epilog: str = ""
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=epilog.format(prog=prog) or None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(handler=handler)
        return p

    # ---- check
    p = add(
        "check",
        _check,
        "Validate manifests with kube-apiserver's rules and warn about what is probably wrong.",
        CHECK_EPILOG,
    )
    add_input_args(p)
    add_config_args(p)
    add_server_version_arg(p)
    as_group = p.add_mutually_exclusive_group()
    as_group.add_argument(
        "--as-new",
        dest="validate_as",
        action="store_const",
        const="new",
        default="auto",
        help="validate every object as a create, even exported ones",
    )
    as_group.add_argument(
        "--as-stored",
        dest="validate_as",
        action="store_const",
        const="stored",
        help="validate every object as a stored object (an update: nothing merged)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=["text", "json", "junit", "sarif"],
        default="text",
        help="report format (default text; json: one entry per object; junit, sarif: for CI)",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="list every object, valid and skipped too"
    )
    p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    p.add_argument(
        "--field-validation",
        metavar="Strict|Warn|Ignore",
        type=_field_validation,
        default=None,
        help="unknown and duplicate fields, as kube-apiserver's fieldValidation: Strict "
        "(kubectl's default) makes them errors, Warn warnings, Ignore says nothing "
        "(default: the config's check.fieldValidation, else Strict)",
    )
    p.add_argument(
        "--fail-empty",
        action="store_true",
        help="exit 2 when there is nothing to check (an empty render)",
    )
    p.add_argument(
        "--ignore",
        metavar="ID[,ID]",
        action="append",
        help="leave out warnings with these ids (repeatable)",
    )
    add_cluster_args(p, live_by_default=False)

    # ---- mutate
    p = add(
        "mutate",
        _mutate,
        "Print manifests as the mutating webhook would change them.",
        MUTATE_EPILOG,
    )
    add_input_args(p)
    add_config_args(p)
    add_server_version_arg(p)
    p.add_argument(
        "--snapshot",
        metavar="FILE",
        help="cluster state for default constraints and dry-run placement annotations",
    )

    # ---- review
    p = add(
        "review",
        _review,
        "Answer one AdmissionReview read on stdin, exactly as the server would.",
        REVIEW_EPILOG,
    )
    p.add_argument("operation", choices=["validate", "mutate"], help="the endpoint to answer as")
    add_config_args(p)
    add_server_version_arg(p)
    p.add_argument("--snapshot", metavar="FILE", help="cluster state for foresight and placement")

    # ---- simulate
    p = add(
        "simulate",
        _simulate,
        "Show where kube-scheduler would place a workload's pods, node by node.",
        SIMULATE_EPILOG,
    )
    add_input_args(p, what="pods or workloads")
    add_config_args(p)
    add_kubernetes_version_arg(p)
    p.add_argument("--kind", metavar="KIND", help="simulate only workloads of this kind")
    p.add_argument("--name", metavar="NAME", help="simulate only the workload of this name")
    p.add_argument(
        "--replicas",
        metavar="N",
        type=int,
        default=None,
        help="pods to place one after another (default: the workload's spec.replicas)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=["json", "table", "html"],
        default="table",
        help="table (default), json (one document; a list for several workloads) or html "
        "(one self-contained page of that document)",
    )
    p.add_argument(
        "--all-nodes",
        action="store_true",
        help="table: a row for every node (default: a row per node on a small cluster, "
        "else the feasible count, the 10 best nodes and the failure reasons)",
    )
    add_cluster_args(p, live_by_default=True)
    add_sampling_args(p, "simulate")

    # ---- audit
    p = add(
        "audit",
        _audit,
        "Report the spread of what already runs, as kube-scheduler sees it; plan the "
        "fewest moves that fix it; drill the loss of nodes.",
        AUDIT_EPILOG,
    )
    add_config_args(p)
    add_kubernetes_version_arg(p)
    add_audit_args(p)
    add_sampling_args(p, "run the drill")

    # ---- serve
    p = add(
        "serve",
        _serve,
        "Serve /validate, /mutate, /healthz, /readyz, /metrics over TLS.",
        "example:\n  {prog} serve --cert-dir certs --kubeconfig ~/.kube/config\n",
    )
    add_config_args(p)
    source = p.add_mutually_exclusive_group()
    source.add_argument("--snapshot", metavar="FILE", help="cluster state from a file")
    source.add_argument("--kubeconfig", metavar="FILE", help="watch the cluster of a kubeconfig")
    source.add_argument(
        "--in-cluster", action="store_true", help="watch the cluster the pod runs in"
    )
    p.add_argument(
        "--cert-dir",
        metavar="DIR",
        default="certs",
        help="tls.crt, tls.key (and ca.crt) to serve with (default certs)",
    )
    p.add_argument("--bind", metavar="HOST:PORT", default="127.0.0.1:8443", help="listen address")
    p.add_argument(
        "--workers", metavar="N", type=int, default=None, help="gunicorn worker processes"
    )
    p.add_argument(
        "--share-port",
        action="store_true",
        help="listen beside other servers of this user on the same address (SO_REUSEPORT), "
        "as replicas on one host: the kernel spreads new connections over them",
    )

    # ---- certs
    p = add(
        "certs",
        _certs,
        "Generate a CA and a serving certificate for the webhook Service.",
        "example:\n  {prog} certs --service topospread --namespace topospread --out certs\n",
    )
    p.add_argument("--service", required=True, help="the webhook Service's name")
    p.add_argument("--namespace", required=True, help="the webhook Service's namespace")
    p.add_argument("--out", metavar="DIR", required=True, help="where to write the files")
    p.add_argument(
        "--days", metavar="N", type=int, default=365, help="serving certificate lifetime"
    )
    p.add_argument("--force", action="store_true", help="replace an existing valid CA")

    # ---- manifests
    p = add(
        "manifests",
        _manifests,
        "Render the install manifests with the caBundle filled in.",
        "example:\n"
        "  {prog} manifests --namespace topospread --cert-dir certs | kubectl apply -f -\n",
    )
    p.add_argument("--namespace", required=True, help="namespace to install into")
    ca = p.add_mutually_exclusive_group(required=True)
    ca.add_argument("--cert-dir", metavar="DIR", help="read ca.crt, tls.crt, tls.key from DIR")
    ca.add_argument("--ca-bundle", metavar="FILE", help="the CA bundle only (PEM)")
    ca.add_argument(
        "--cert-manager", action="store_true", help="let cert-manager issue and inject the CA"
    )
    p.add_argument("--image", metavar="IMAGE", help="container image (default topospread:VERSION)")
    p.add_argument(
        "--audit",
        action="store_true",
        help="also the periodic audit: its Deployment, read-only ClusterRole and Service",
    )
    p.add_argument(
        "--audit-rebalance",
        action="store_true",
        help="the periodic audit carrying out its plan (audit.rebalance; implies --audit): "
        "adds create on pods/eviction to its ClusterRole and --rebalance to its command",
    )
    p.add_argument(
        "--deletion-costs",
        action="store_true",
        help="also the audit Deployment with the deletion-cost keeper: get and patch on pods "
        "(docs/deletion-costs.md)",
    )

    # ---- version
    p = add("version", _version, "Print the version.", "example:\n  {prog} version\n")
    p.add_argument("-v", "--verbose", action="store_true", help="also Python and platform")
    return parser


def _prog(argv0: str) -> str:
    """`kubectl topospread` when run as the kubectl plugin, else `topospread`."""
    name = os.path.basename(argv0)
    return "kubectl topospread" if name.startswith(PLUGIN_NAME) else "topospread"


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    prog = prog or _prog(sys.argv[0] if sys.argv else "topospread")
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except TopospreadError as exc:
        print(f"{prog} {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `topospread mutate big.yaml | head`: the reader left; no traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        return 130


def kubectl_main() -> int:
    """The `kubectl-topospread` entry point: kubectl finds it on PATH as a plugin."""
    return main(prog="kubectl topospread")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
