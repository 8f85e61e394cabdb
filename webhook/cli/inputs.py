"""Manifests in, the way other Kubernetes linters take them.

FILE arguments and repeatable `-f/--filename`; a directory is read for its
*.yaml, *.yml and *.json files (and its subdirectories with `-R`), as kubectl does;
no file at all, or `-`, reads stdin (labelled `<stdin>`). Each object comes with
its document index and the line it starts on, for reports that point at it. An
unrendered Helm template is refused with "render it first", not the YAML parser's
complaint about `{{`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from webhook.api.kube import RawObj
from webhook.cluster.files import item_lines, read_text
from webhook.errors import InputError
from webhook.validation.fields import KeyOrder

__all__ = [
    "STDIN",
    "Document",
    "KeyOrders",
    "add_input_args",
    "expand_inputs",
    "parse_documents",
    "read_documents",
]

STDIN = "<stdin>"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Document:
    """One object of one input.

    source: the file as named on the command line (STDIN for stdin); index: the
    YAML document (or JSON value) it came from, 0-based; item: its index among the
    items of a List, None otherwise; line: the 1-based line it starts on, None when
    unknown (JSON Lists); written: the keys of its mappings as the input wrote them
    (duplicates, lines), for strict field validation.
    """

    source: str
    index: int
    item: int | None
    line: int | None
    obj: RawObj
    written: KeyOrders | None = field(default=None, compare=False, repr=False)
    # The YAML text and where this object's document starts and ends in it (None for
    # JSON), to find the line of a field only when one is reported (line_of).
    text: str | None = field(default=None, compare=False, repr=False)
    span: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def line_of(self, keys: Sequence[str | int]) -> int | None:
        """The 1-based line of the key at `keys` (a path's keys and list indexes from the
        object's root), None when unknown. Composes the document's YAML again: called
        only for fields that are reported."""
        if self.text is None or self.span is None:
            return None
        start, end = self.span
        try:
            node: Any = yaml.compose(self.text[start:end], Loader=_SAFE_LOADER)
        except yaml.YAMLError:  # pragma: no cover - it parsed once
            return None
        offset = self.text.count("\n", 0, start)
        if self.item is not None:
            node = _child(node, "items")
            node = _child(node, self.item)
        line = None
        for n, key in enumerate(keys):
            if isinstance(node, yaml.MappingNode):
                pairs = [(k, v) for k, v in node.value if k.value == str(key)]
                if not pairs:
                    return None
                # The field reported is the first of its name; on the way, the value kept.
                k, node = pairs[0] if n == len(keys) - 1 else pairs[-1]
                line = k.start_mark.line + 1 + offset
            else:
                node = _child(node, key)
                if node is None:
                    return None
        return line


class KeyOrders:
    """The keys of the mappings a parse built that a dict cannot give as written: with
    a duplicate (a dict keeps it once, the last value) or a merge (`<<`), each key
    with its line (YAML); a dict not kept was written as it iterates."""

    def __init__(self) -> None:
        # id(dict) -> (the dict, kept alive so that its id is never reused; its keys)
        self._orders: dict[int, tuple[dict[Any, Any], KeyOrder]] = {}

    def keep(self, d: dict[Any, Any], order: KeyOrder) -> None:
        self._orders[id(d)] = (d, order)

    def __call__(self, d: dict[str, Any]) -> KeyOrder | None:
        kept = self._orders.get(id(d))
        return kept[1] if kept is not None and kept[0] is d else None


_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _child(node: Any, key: str | int) -> Any:
    """A mapping's value at a key (the last of its name) or a sequence's item."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        values = [v for k, v in node.value if k.value == key]
        return values[-1] if values else None
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]
    return None
_MAP_TAG = "tag:yaml.org,2002:map"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


class _KeyKeepingLoader(_SAFE_LOADER):  # type: ignore[misc]
    """The safe loader, with each mapping's keys as written kept in `self.written`."""

    written: KeyOrders


def _key(loader: _KeyKeepingLoader, node: yaml.ScalarNode) -> Any:
    """A mapping key as the constructor builds it (a plain string without the work)."""
    return node.value if node.tag == _STR_TAG else loader.construct_object(node)


def _construct_map(loader: _KeyKeepingLoader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    yield data
    # Read before construct_mapping, which moves merged (`<<`) keys into node.value.
    keys = [key for key, _ in node.value]
    data.update(loader.construct_mapping(node))
    if len(data) == len(keys):
        return  # each key once (a merge that changes nothing here is no matter)
    order: list[tuple[Any, int | None]] = [
        (_key(loader, key), key.start_mark.line + 1)
        for key in keys
        if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE_TAG
    ]
    written = {k for k, _ in order}
    order.extend((k, None) for k in data if k not in written)
    loader.written.keep(data, order)


_KeyKeepingLoader.add_constructor(_MAP_TAG, _construct_map)


def _json_pairs(orders: KeyOrders) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(pairs)
        if len(d) != len(pairs):
            orders.keep(d, [(k, None) for k, _ in pairs])
        return d

    return hook


def add_input_args(p: argparse.ArgumentParser, *, what: str = "manifests") -> None:
    p.add_argument(
        "files",
        metavar="FILE",
        nargs="*",
        help=f"{what}: YAML or JSON files, multi-document, `kind: List`; a directory reads "
        "its *.yaml, *.yml, *.json; '-' or nothing reads stdin",
    )
    p.add_argument(
        "-f",
        "--filename",
        metavar="FILE",
        action="append",
        default=[],
        help="a file or directory to read (repeatable), as kubectl -f",
    )
    p.add_argument(
        "-R",
        "--recursive",
        action="store_true",
        help="read directories recursively",
    )


def _walk(directory: Path, recursive: bool) -> Iterator[Path]:
    for entry in sorted(directory.iterdir()):
        if entry.is_dir():
            if recursive and not entry.name.startswith("."):
                yield from _walk(entry, recursive)
        elif entry.suffix in MANIFEST_SUFFIXES and entry.is_file():
            yield entry


def expand_inputs(args: argparse.Namespace) -> list[str]:
    """The files to read, in order: FILE arguments, then -f, directories expanded.

    No file at all means stdin; InputError when stdin is then a terminal (nothing
    was piped) or a directory cannot be listed.
    """
    given = [*getattr(args, "files", []), *getattr(args, "filename", [])]
    if not given:
        isatty = getattr(sys.stdin, "isatty", None)
        if isatty is not None and isatty():
            raise InputError(
                "no input: give FILE or -f FILE, or pipe manifests on stdin "
                "(e.g. helm template . | topospread check)"
            )
        return ["-"]
    out: list[str] = []
    for name in given:
        path = Path(name)
        if name != "-" and path.is_dir():
            try:
                out.extend(str(p) for p in _walk(path, getattr(args, "recursive", False)))
            except OSError as exc:
                raise InputError(f"{name}: cannot list the directory: {exc.strerror}") from exc
        else:
            out.append(name)
    return out


def _unrendered(text: str) -> int | None:
    """The 1-based line of the first `{{` outside a comment, None when there is none."""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if "{{" in line and not stripped.startswith("#"):
            return n
    return None


def _kind_check(obj: Any, where: str) -> RawObj:
    if not isinstance(obj, dict):
        raise InputError(
            f"{where}: expected a Kubernetes object (a mapping), got {type(obj).__name__}"
        )
    return obj


def _flatten(
    doc: Any,
    source: str,
    index: int,
    line: int | None,
    item_lines: list[int] | None,
    written: KeyOrders | None = None,
) -> Iterator[Document]:
    where = f"{source}: document {index}"
    if doc is None:
        return
    obj = _kind_check(doc, where)
    kind = obj.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in obj:
        items = obj.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            raise InputError(f"{where}: items of a {kind} must be a list")
        for i, item in enumerate(items):
            at = item_lines[i] if item_lines is not None and i < len(item_lines) else None
            if item is None:
                continue
            _kind_check(item, f"{where}: items[{i}]")
            yield Document(source, index, i, at, item, written)
        return
    yield Document(source, index, None, line, obj, written)


def parse_documents(text: str, source: str, *, keep_keys: bool = False) -> list[Document]:
    """Every object of a text (JSON or YAML, multi-document, Lists flattened).

    keep_keys: each Document's `written` holds its mappings' keys as written."""
    written = KeyOrders() if keep_keys else None
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            hook = _json_pairs(written) if written is not None else None
            parsed = json.loads(text, object_pairs_hook=hook)
        except ValueError:
            pass
        else:
            first_line = text[: len(text) - len(stripped)].count("\n") + 1
            docs = parsed if isinstance(parsed, list) else [parsed]
            return [
                d
                for i, doc in enumerate(docs)
                for d in _flatten(
                    doc, source, i, first_line if len(docs) == 1 else None, None, written
                )
            ]
    loader = (_KeyKeepingLoader if written is not None else _SAFE_LOADER)(text)
    loader.written = written
    out: list[Document] = []
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            data = loader.construct_document(node)
            line = node.start_mark.line + 1
            objects: Iterable[Document] = _flatten(
                data, source, index, line, item_lines(node), written
            )
            if written is not None:
                span = (node.start_mark.index, node.end_mark.index)
                objects = [replace(d, text=text, span=span) for d in objects]
            out.extend(objects)
            index += 1
    except yaml.YAMLError as exc:
        template_line = _unrendered(text)
        if template_line is not None:
            raise InputError(
                f"{source}: line {template_line}: an unrendered Helm template ({{{{ ... }}}}); "
                "render it first (helm template CHART | topospread check)"
            ) from exc
        raise InputError(f"{source}: not valid YAML or JSON: {exc}") from exc
    finally:
        loader.dispose()
    return out


def read_documents(path: str, *, keep_keys: bool = False) -> list[Document]:
    """Every object of a file ("-" reads stdin); InputError when it cannot be used.
    keep_keys: as parse_documents."""
    source = STDIN if path == "-" else path
    text = read_text(path)
    docs = parse_documents(text, source, keep_keys=keep_keys)
    for d in docs:
        kind = d.obj.get("kind")
        if not isinstance(kind, str) or not kind:
            where = f"document {d.index}" + (f" items[{d.item}]" if d.item is not None else "")
            at = f" (line {d.line})" if d.line else ""
            raise InputError(f"{source}: {where}{at}: the object has no kind")
    return docs
