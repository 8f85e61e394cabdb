"""Reading Kubernetes objects from files: JSON or YAML, multi-document, `kind: List` flattened."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import yaml

from webhook.api.kube import RawObj
from webhook.cluster.trim import API_VERSIONS, trim
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

# Characters read from a snapshot file at a time: the file is never held whole (a
# 65,000-node snapshot is about 2 GB); an object larger than this grows the buffer.
CHUNK_CHARS = 1 << 20
_WS = re.compile(r"[ \t\n\r]*")
_NOT_A_LIST = (
    "a snapshot must be one List of objects (or a JSON array of them), as printed by "
    "`kubectl get nodes,pods,services,replicasets,statefulsets,"
    "replicationcontrollers -A -o json`"
)


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> str: ...


class _Chunks:
    """JSON text read CHUNK_CHARS at a time: a buffer, a position in it, and the
    offset of the buffer's start in the whole text (for error messages)."""

    def __init__(self, stream: _Readable, source: str, chunk: int | None = None) -> None:
        self.stream = stream
        self.source = source
        self.chunk = CHUNK_CHARS if chunk is None else chunk
        self.buf = ""
        self.pos = 0
        self.base = 0
        self.eof = False
        self.decoder = json.JSONDecoder()

    def more(self) -> bool:
        """Read one more chunk, dropping what is already consumed; False at the end."""
        if self.eof:
            return False
        try:
            data = self.stream.read(self.chunk)
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.source}: not UTF-8 text") from exc
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos :] + data
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the text)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def error(self, what: str) -> InputError:
        where = self.base + self.pos
        return InputError(f"{self.source}: not valid JSON near offset {where}: {what}")

    def expect(self, char: str) -> None:
        got = self.peek()
        if got != char:
            found = repr(got) if got else "the end of the file (truncated?)"
            raise self.error(f"expected {char!r}, found {found}")
        self.pos += 1

    def value(self) -> Any:
        """Decode the next JSON value, reading more text until it is complete. A value
        that ends exactly at the end of the buffer is decoded again once more text is
        there (a number cut by a chunk boundary would decode short)."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.more():
                    continue
                raise self.error(f"{exc.msg} (truncated?)") from None
            if end == len(self.buf) and self.more():
                continue
            self.pos = end
            return value

    def key(self) -> str:
        self.expect('"')
        self.pos -= 1
        key = self.value()
        if not isinstance(key, str):  # pragma: no cover - a '"' starts a string
            raise self.error("expected a key")
        return key


def _scan_json_array(reader: _Chunks, sink: Callable[[Any], None]) -> None:
    """Hand each element of the JSON array that starts at the reader to `sink`."""
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        sink(reader.value())
        if reader.peek() == "]":
            reader.pos += 1
            return
        reader.expect(",")


def _scan_json_list(reader: _Chunks, sink: Callable[[Any], None]) -> dict[str, Any]:
    """Walk a top-level JSON object, handing each element of its `items` array to `sink`
    as soon as it is decoded (a 2,000,000-pod List never exists whole in memory);
    return the other top-level fields ("items" maps to True when there was an array)."""
    top: dict[str, Any] = {}
    reader.expect("{")
    if reader.peek() == "}":
        reader.pos += 1
        return top
    while True:
        key = reader.key()
        reader.expect(":")
        if key == "items" and reader.peek() == "[":
            _scan_json_array(reader, sink)
            top["items"] = True
        else:
            top[key] = reader.value()
        if reader.peek() == "}":
            reader.pos += 1
            return top
        reader.expect(",")


def _require_list(top: Any, source: str) -> None:
    kind = top.get("kind") if isinstance(top, dict) else None
    if not isinstance(kind, str) or not kind.endswith("List") or "items" not in top:
        raise InputError(f"{source}: {_NOT_A_LIST}")


def _checked_sink(source: str, sink: Callable[[Any], None]) -> Callable[[Any], None]:
    """`sink` for the items of a snapshot, refusing one that is not an object."""
    count = 0

    def take(item: Any) -> None:
        nonlocal count
        if not isinstance(item, dict):
            got = type(item).__name__
            raise InputError(f"{source}: item {count} is not a Kubernetes object (got {got})")
        count += 1
        sink(item)

    return take


def _scan_json(stream: _Readable, source: str, sink: Callable[[Any], None]) -> None:
    reader = _Chunks(stream, source)
    first = reader.peek()
    if first == "[":
        # A JSON array of objects, each a List (flattened) or one object.
        def element(doc: Any) -> None:
            if isinstance(doc, dict) and "items" in doc:
                _require_list(doc, source)
                for item in _items_of(doc, source):
                    sink(item)
            else:
                sink(doc)

        _scan_json_array(reader, _checked_sink(source, element))
    else:
        top = _scan_json_list(reader, _checked_sink(source, sink))
        _require_list(top, source)
    if reader.peek() != "":
        raise InputError(
            f"{source}: unexpected data after the List at offset {reader.base + reader.pos}"
        )


def _items_of(doc: dict[str, Any], source: str) -> list[Any]:
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise InputError(f"{source}: items of the List must be a list")
    return items


def _scan_yaml(stream: _Readable, source: str, sink: Callable[[Any], None]) -> None:
    """Each document of a YAML stream, built one at a time (PyYAML reads the stream
    in chunks): every document must be a List, whose items go to `sink`."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    take = _checked_sink(source, sink)
    try:
        for i, doc in enumerate(yaml.load_all(stream, Loader=loader)):  # noqa: S506 - safe
            if doc is None:
                continue
            _require_list(doc, f"{source}: document {i + 1}")
            for item in _items_of(doc, source):
                take(item)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML or JSON: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text") from exc


@contextmanager
def _open_text(path: str | Path) -> Iterator[tuple[TextIO, str]]:
    """The file as a text stream ("-" is stdin) and its name for messages."""
    if str(path) == "-":
        yield sys.stdin, "<stdin>"
        return
    try:
        stream = open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    with stream:
        yield stream, str(path)


def scan_list(path: str | Path, sink: Callable[[Any], None]) -> None:
    """Hand each object of a snapshot file to `sink` as soon as it is decoded: the
    items of a JSON List, the elements of a JSON array (a List among them is
    flattened), the items of each List document of a YAML stream. The file is read
    in chunks, never whole. InputError when the file is not that (truncated, not a
    List, an item that is not an object); `sink` may then have taken some objects
    already, so a caller builds its state aside and uses it only once this returns."""
    with _open_text(path) as (stream, source):
        head = ""
        while True:
            try:
                chunk = stream.read(4096)
            except UnicodeDecodeError as exc:
                raise InputError(f"{source}: not UTF-8 text") from exc
            head += chunk
            if not chunk or head.strip():
                break
        rest = _Prefixed(head, stream)
        if head.lstrip()[:1] in ("{", "["):
            _scan_json(rest, source, sink)
        else:
            _scan_yaml(rest, source, sink)


class _Prefixed:
    """A text stream whose first characters were already read (to tell JSON from YAML)."""

    def __init__(self, head: str, stream: TextIO) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1, /) -> str:
        if not self._head:
            return self._stream.read(size)
        if size < 0:
            out, self._head = self._head + self._stream.read(), ""
        else:
            out, self._head = self._head[:size], self._head[size:]
        return out


def load_snapshot(path: str | Path, *, trimmed: bool = False) -> Snapshot:
    """Read a snapshot file (a JSON or YAML List of Nodes, Pods, Services, ReplicaSets,
    StatefulSets, ReplicationControllers); raise InputError when it is not one.

    `trimmed`: each object is trimmed as it is decoded (cluster/trim.py) and kinds a
    live source does not watch are skipped, so the Snapshot holds what a LiveSource
    watching the same objects would hold (what a webhook replica serves from)."""
    from webhook.scheduler.framework.snapshot import Snapshot

    snapshot = Snapshot()
    if not trimmed:
        scan_list(path, snapshot.upsert)
        return snapshot

    def take(obj: RawObj) -> None:
        kind = obj.get("kind")
        if isinstance(kind, str) and kind in API_VERSIONS:
            snapshot.upsert(trim(obj, kind))

    scan_list(path, take)
    return snapshot
