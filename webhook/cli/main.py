"""The `topospread` command line: a thin dispatcher over the subcommand modules.

Each subcommand lives with the code it drives; this module only parses
arguments and maps errors to exit codes (0 ok, 1 invalid objects, 2 usage or
input errors), so no traceback ever reaches a user.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from webhook.errors import TopospreadError

Handler = Callable[[argparse.Namespace], int]


def _serve(args: argparse.Namespace) -> int:
    from webhook.server.serve import cli_serve

    return cli_serve(args)


def _review(args: argparse.Namespace) -> int:
    from webhook.cli.commands import cli_review

    return cli_review(args)


def _check(args: argparse.Namespace) -> int:
    from webhook.cli.commands import cli_check

    return cli_check(args)


def _mutate(args: argparse.Namespace) -> int:
    from webhook.cli.commands import cli_mutate

    return cli_mutate(args)


def _simulate(args: argparse.Namespace) -> int:
    from webhook.cli.simulate import cli_simulate

    return cli_simulate(args)


def _certs(args: argparse.Namespace) -> int:
    from webhook.install.certs import cli_certs

    return cli_certs(args)


def _manifests(args: argparse.Namespace) -> int:
    from webhook.install.manifests import cli_manifests

    return cli_manifests(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="topospread",
        description="Admission webhook and CI checker for Pod topology spread constraints.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(handler=handler)
        return p

    p = add("serve", _serve, "Serve /validate, /mutate, /healthz, /readyz, /metrics over TLS.")
    p.add_argument("--config", metavar="FILE")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--snapshot", metavar="FILE")
    source.add_argument("--kubeconfig", metavar="FILE")
    source.add_argument("--in-cluster", action="store_true")
    p.add_argument("--cert-dir", metavar="DIR", default="certs")
    p.add_argument("--bind", metavar="HOST:PORT", default="127.0.0.1:8443")
    p.add_argument("--workers", metavar="N", type=int, default=None)

    p = add("review", _review, "Answer one AdmissionReview read on stdin, as the server would.")
    p.add_argument("operation", choices=["validate", "mutate"])
    p.add_argument("--config", metavar="FILE")
    p.add_argument("--snapshot", metavar="FILE")

    p = add("check", _check, "Validate manifests (YAML or JSON, multi-document, List).")
    p.add_argument("--config", metavar="FILE")
    p.add_argument("--snapshot", metavar="FILE")
    p.add_argument("-o", "--output", choices=["text", "json"], default="text")
    p.add_argument("files", metavar="FILE", nargs="+")

    p = add("mutate", _mutate, "Print manifests as the mutating webhook would change them.")
    p.add_argument("--config", metavar="FILE")
    p.add_argument("--snapshot", metavar="FILE")
    p.add_argument("files", metavar="FILE", nargs="+")

    p = add("simulate", _simulate, "Show where kube-scheduler would place a pod, node by node.")
    p.add_argument("--snapshot", metavar="FILE", required=True)
    p.add_argument("--config", metavar="FILE")
    p.add_argument("--replicas", metavar="N", type=int, default=1)
    p.add_argument("-o", "--output", choices=["json", "table"], default="table")
    p.add_argument("pod_file", metavar="POD_FILE")

    p = add("certs", _certs, "Generate a CA and a serving certificate for the webhook Service.")
    p.add_argument("--service", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--out", metavar="DIR", required=True)
    p.add_argument("--days", metavar="N", type=int, default=365)
    p.add_argument("--force", action="store_true", help="replace an existing valid CA")

    p = add("manifests", _manifests, "Render the install manifests with the caBundle filled in.")
    p.add_argument("--namespace", required=True)
    ca = p.add_mutually_exclusive_group(required=True)
    ca.add_argument("--cert-dir", metavar="DIR")
    ca.add_argument("--ca-bundle", metavar="FILE")
    ca.add_argument(
        "--cert-manager", action="store_true", help="let cert-manager issue and inject the CA"
    )
    p.add_argument("--image", metavar="IMAGE", help="container image (default topospread:VERSION)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except TopospreadError as exc:
        print(f"topospread {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
