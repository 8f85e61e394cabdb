"""Reading Kubernetes objects from files: JSON or YAML, multi-document, `kind: List` flattened."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from webhook.api.kube import RawObj
from webhook.errors import InputError

if TYPE_CHECKING:
    from webhook.scheduler.framework.snapshot import Snapshot

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


def read_text(path: str | Path) -> str:
    """A file's text ("-" reads stdin); raise InputError when it cannot be read."""
    import sys

    if str(path) == "-":
        return sys.stdin.read()
    p = Path(path)
    try:
        if p.stat().st_size > MAX_FILE_BYTES:
            raise InputError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc


def load_objects(path: str | Path) -> list[RawObj]:
    """Read every object in a file ("-" reads stdin); raise InputError when unreadable."""
    return parse_objects(read_text(path), "<stdin>" if str(path) == "-" else str(path))


# ---- snapshots (owner: scheduling) ----------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")


def _scan_json_list(text: str, source: str, sink: Callable[[Any], None]) -> dict[str, Any]:
    """Walk a top-level JSON object, handing each element of its `items` array to `sink`
    as soon as it is decoded (a 150,000-pod List never exists whole in memory);
    return the other top-level fields."""
    decoder = json.JSONDecoder()
    top: dict[str, Any] = {}

    def skip(i: int) -> int:
        return _WS.match(text, i).end()  # type: ignore[union-attr]

    def expect(i: int, char: str) -> int:
        i = skip(i)
        if text[i : i + 1] != char:
            raise InputError(f"{source}: not valid JSON near offset {i}: expected {char!r}")
        return i + 1

    try:
        i = expect(0, "{")
        if text[skip(i) : skip(i) + 1] == "}":
            i = skip(i) + 1
        else:
            while True:
                i = expect(i, '"')
                key, i = json.decoder.scanstring(text, i)  # type: ignore[attr-defined]
                i = skip(expect(i, ":"))
                if key == "items" and text[i : i + 1] == "[":
                    i = skip(i + 1)
                    if text[i : i + 1] == "]":
                        i += 1
                    else:
                        while True:
                            item, i = decoder.raw_decode(text, i)
                            sink(item)
                            i = skip(i)
                            if text[i : i + 1] == "]":
                                i += 1
                                break
                            i = skip(expect(i, ","))
                    top["items"] = True
                else:
                    top[key], i = decoder.raw_decode(text, i)
                i = skip(i)
                if text[i : i + 1] == "}":
                    i += 1
                    break
                i = expect(i, ",")
        if skip(i) != len(text):
            raise InputError(f"{source}: unexpected data after the List at offset {skip(i)}")
    except ValueError as exc:
        raise InputError(f"{source}: not valid JSON: {exc}") from exc
    return top


def _require_list(top: Any, source: str) -> None:
    kind = top.get("kind") if isinstance(top, dict) else None
    if not isinstance(kind, str) or not kind.endswith("List") or "items" not in top:
        raise InputError(
            f"{source}: a snapshot must be one List of objects, as printed by "
            "`kubectl get nodes,pods,services,replicasets,statefulsets,"
            "replicationcontrollers -A -o json`"
        )


def scan_list(path: str | Path, sink: Callable[[Any], None]) -> None:
    """Hand each item of a snapshot file (one JSON or YAML List) to `sink`, a JSON List
    item by item as it is decoded; raise InputError when the file is not one List."""
    source = "<stdin>" if str(path) == "-" else str(path)
    text = read_text(path)
    if text.lstrip().startswith("{"):
        top = _scan_json_list(text, source, sink)
        _require_list(top, source)
        return
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        docs = [d for d in yaml.load_all(text, Loader=loader) if d is not None]  # noqa: S506
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML or JSON: {exc}") from exc
    if len(docs) != 1:
        raise InputError(f"{source}: a snapshot must be one List document, found {len(docs)}")
    _require_list(docs[0], source)
    items = docs[0].get("items") or []
    if not isinstance(items, list):
        raise InputError(f"{source}: items of the List must be a list")
    for item in items:
        sink(item)


def load_snapshot(path: str | Path) -> Snapshot:
    """Read a snapshot file (a JSON or YAML List of Nodes, Pods, Services, ReplicaSets,
    StatefulSets, ReplicationControllers); raise InputError when it is not one."""
    from webhook.scheduler.framework.snapshot import Snapshot

    snapshot = Snapshot()
    scan_list(path, snapshot.upsert)
    return snapshot
