"""`topospread mutate`: manifests as the mutating webhook would leave them.

For the API server `--server-version` names (default: the newest), exactly what
/mutate does: from v1.34 (matchLabelKeysMerge: auto) the API server merges
matchLabelKeys itself, so nothing is merged here and `topospread mutate x.yaml |
topospread check -` round-trips; for an older one the keys are merged and moved
out. An object carrying server state is mutated as an UPDATE of itself, as the
webhook sees a re-applied object. The output is YAML, one document per object,
written as each is done (libyaml's C emitter when PyYAML has it).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

import yaml

from webhook.admission.context import ReviewContext
from webhook.admission.handlers import mutate_reviewed
from webhook.api.kube import RawObj
from webhook.cli.common import load_target
from webhook.cli.inputs import Document, expand_inputs, read_documents
from webhook.cli.results import is_stored, title
from webhook.errors import InputError

__all__ = ["cli_mutate", "dump_yaml"]

# libyaml's emitter is about ten times faster than the pure-Python one.
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(obj: RawObj, out: TextIO, *, first: bool) -> None:
    """Write one object as a YAML document (a `---` line before every one but the first)."""
    if not first:
        out.write("---\n")
    yaml.dump(obj, out, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def cli_mutate(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Exit 0, or 2 (and no output at all) when an input cannot be read."""
    out = out or sys.stdout
    err = err or sys.stderr
    target = load_target(args, err=err)
    ctx = ReviewContext(
        settings=target.settings, server_version=target.server_version, snapshot=target.snapshot
    )
    docs: list[Document] = []
    unreadable = False
    for path in expand_inputs(args):
        try:
            docs.extend(read_documents(path))
        except InputError as exc:
            print(f"{getattr(args, 'prog', 'topospread')} mutate: {exc}", file=err)
            unreadable = True
    if unreadable:
        return 2
    for i, doc in enumerate(docs):
        obj = doc.obj
        stored = is_stored(obj)
        meta = obj.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        result = mutate_reviewed(
            obj,
            ctx,
            operation="UPDATE" if stored else "CREATE",
            namespace=ns if isinstance(ns, str) and ns else target.namespace,
            old=obj if stored else None,
        )
        for warning in result.warnings:
            print(f"{doc.source}: {title(obj)}: warning: {warning}", file=err)
        dump_yaml(result.mutated, out, first=i == 0)
    out.flush()
    return 0
