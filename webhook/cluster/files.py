"""Reading Kubernetes objects from files: JSON or YAML, multi-document, `kind: List` flattened."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from webhook.errors import InputError
from webhook.kube import RawObj

# A manifest larger than this is refused rather than parsed (YAML parsing is slow and
# memory hungry); a 5,000-node, 150,000-pod snapshot is well below it.
MAX_FILE_BYTES = 2 * 1024 * 1024 * 1024


def _flatten(doc: Any, where: str) -> Iterator[RawObj]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        got = type(doc).__name__
        raise InputError(f"{where}: expected a Kubernetes object (a mapping), got {got}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise InputError(f"{where}: items of a {kind} must be a list")
        for i, item in enumerate(items):
            yield from _flatten(item, f"{where}: items[{i}]")
        return
    yield doc


def parse_objects(text: str, source: str = "<input>") -> list[RawObj]:
    """Parse JSON or YAML text holding one or more objects or Lists."""
    stripped = text.lstrip()
    docs: list[Any]
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        else:
            docs = parsed if isinstance(parsed, list) else [parsed]
            return [o for i, d in enumerate(docs) for o in _flatten(d, f"{source}#{i}")]
    try:
        # CSafeLoader when libyaml is there: ten times faster on big snapshots.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        docs = list(yaml.load_all(text, Loader=loader))  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML or JSON: {exc}") from exc
    return [o for i, d in enumerate(docs) for o in _flatten(d, f"{source}#{i}")]


def load_objects(path: str | Path) -> list[RawObj]:
    """Read every object in a file ("-" reads stdin); raise InputError when unreadable."""
    import sys

    if str(path) == "-":
        return parse_objects(sys.stdin.read(), "<stdin>")
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise InputError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    return parse_objects(text, str(path))
