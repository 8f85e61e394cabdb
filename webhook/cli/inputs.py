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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.api.kube import RawObj
from webhook.cluster.files import read_text
from webhook.errors import InputError

__all__ = [
    "STDIN",
    "Document",
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
    unknown (JSON Lists).
    """

    source: str
    index: int
    item: int | None
    line: int | None
    obj: RawObj


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
    doc: Any, source: str, index: int, line: int | None, item_lines: list[int] | None
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
            yield Document(source, index, i, at, item)
        return
    yield Document(source, index, None, line, obj)


def _item_lines(node: Any) -> list[int] | None:
    """The start line of each element of a top-level `items` sequence, if any."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "items":
            if isinstance(value, yaml.SequenceNode):
                return [v.start_mark.line + 1 for v in value.value]
    return None


def parse_documents(text: str, source: str) -> list[Document]:
    """Every object of a text (JSON or YAML, multi-document, Lists flattened)."""
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            parsed = json.loads(text)
        except ValueError:
            pass
        else:
            first_line = text[: len(text) - len(stripped)].count("\n") + 1
            docs = parsed if isinstance(parsed, list) else [parsed]
            return [
                d
                for i, doc in enumerate(docs)
                for d in _flatten(doc, source, i, first_line if len(docs) == 1 else None, None)
            ]
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    out: list[Document] = []
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            data = loader.construct_document(node)
            line = node.start_mark.line + 1
            out.extend(_flatten(data, source, index, line, _item_lines(node)))
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


def read_documents(path: str) -> list[Document]:
    """Every object of a file ("-" reads stdin); InputError when it cannot be used."""
    source = STDIN if path == "-" else path
    text = read_text(path)
    docs = parse_documents(text, source)
    for d in docs:
        kind = d.obj.get("kind")
        if not isinstance(kind, str) or not kind:
            where = f"document {d.index}" + (f" items[{d.item}]" if d.item is not None else "")
            at = f" (line {d.line})" if d.line else ""
            raise InputError(f"{source}: {where}{at}: the object has no kind")
    return docs
