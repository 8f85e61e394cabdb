"""`topospread review {validate|mutate}`: one AdmissionReview on stdin, the answer on
stdout, through exactly the code the HTTP handler runs, for the API server
`--server-version` names (default: the newest)."""

from __future__ import annotations

import argparse
import json
import sys

from webhook.admission.context import ReviewContext
from webhook.admission.handlers import answer_review
from webhook.cli.common import load_target

__all__ = ["cli_review"]


def cli_review(args: argparse.Namespace) -> int:
    """Exit 0 with the response AdmissionReview, 2 (and the Status) for a malformed one."""
    target = load_target(args)
    ctx = ReviewContext(
        settings=target.settings, server_version=target.server_version, snapshot=target.snapshot
    )
    answer = answer_review(sys.stdin.buffer.read(), args.operation, ctx)
    print(json.dumps(answer.doc, indent=2, ensure_ascii=False))
    if answer.status != 200:
        print(f"topospread review: {answer.doc['message']}", file=sys.stderr)
        return 2
    return 0
