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
        # Lines before buf[self.counted] (line() keeps it; None: lines are not counted).
        self.lines: int | None = None
        self.counted = 0

    def line(self) -> int:
        """The 1-based line of the current position (counting starts at the first call)."""
        if self.lines is None:
            raise ValueError("lines are not counted")  # pragma: no cover - a bug
        self.lines += self.buf.count("\n", self.counted, self.pos)
        self.counted = self.pos
        return self.lines + 1

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
        if self.lines is not None:
            self.lines += self.buf.count("\n", self.counted, self.pos)
            self.counted = 0
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


def _scan_json_array(
    reader: _Chunks, sink: Callable[[Any], None], lines: list[int] | None = None
) -> None:
    """Hand each element of the JSON array that starts at the reader to `sink`
    (and, with `lines`, append the line each starts on first)."""
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        if lines is not None:
            reader.peek()
            lines.append(reader.line())
        sink(reader.value())
        if reader.peek() == "]":
            reader.pos += 1
            return
        reader.expect(",")


def _scan_json_list(
    reader: _Chunks, sink: Callable[[Any], None], lines: list[int] | None = None
) -> dict[str, Any]:
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
            _scan_json_array(reader, sink, lines)
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


def _scan_json(
    stream: _Readable, source: str, sink: Callable[[Any], None], lines: list[int] | None = None
) -> None:
    reader = _Chunks(stream, source)
    if lines is not None:
        reader.lines = 0
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

        _scan_json_array(reader, _checked_sink(source, element), lines)
    else:
        top = _scan_json_list(reader, _checked_sink(source, sink), lines)
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


def _scan_yaml(
    stream: _Readable, source: str, sink: Callable[[Any], None], lines: list[int] | None = None
) -> None:
    """Each document of a YAML stream, built one at a time (PyYAML reads the stream
    in chunks): every document must be a List, whose items go to `sink` (with
    `lines`, the line each item starts on is appended first)."""
    take = _checked_sink(source, sink)
    try:
        for i, (doc, starts) in enumerate(_yaml_documents(stream, lines is not None)):
            if doc is None:
                continue
            _require_list(doc, f"{source}: document {i + 1}")
            for n, item in enumerate(_items_of(doc, source)):
                if lines is not None:
                    lines.append(starts[n] if n < len(starts) else 0)
                take(item)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML or JSON: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text") from exc


def item_lines(node: Any) -> list[int] | None:
    """The 1-based start line of each element of a YAML document's top-level `items`
    sequence, None when it has none."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "items":
            if isinstance(value, yaml.SequenceNode):
                return [v.start_mark.line + 1 for v in value.value]
    return None


def _yaml_documents(stream: _Readable, lines: bool) -> Iterator[tuple[Any, list[int]]]:
    """Each document of a YAML stream, with the start line of each of its top-level
    `items` when `lines` (then each document is composed first: slower, more memory)."""
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if not lines:
        for doc in yaml.load_all(stream, Loader=loader_class):  # noqa: S506 - a safe loader
            yield doc, []
        return
    loader = loader_class(stream)
    try:
        while loader.check_node():
            node = loader.get_node()
            yield loader.construct_document(node), item_lines(node) or []
    finally:
        loader.dispose()


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
    List, an item that is not an object, two objects of one kind, namespace and
    name); `sink` may then have taken some objects already, so a caller builds its
    state aside and uses it only once this returns."""
    twins = _Twins(keep_index=str(path) == "-")

    def take(obj: Any) -> None:
        twins.see(obj)
        sink(obj)

    try:
        _scan(path, take)
    except _Twin as twin:
        if twin.first is not None:
            where: list[tuple[int, int | None]] = [(twin.first, None), (twin.second, None)]
        else:
            where = _where(path, twin.key)
        raise InputError(_twin_message(path, twin.key, where)) from None


def _scan(
    path: str | Path, sink: Callable[[Any], None], lines: list[int] | None = None
) -> None:
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
            _scan_json(rest, source, sink, lines)
        else:
            _scan_yaml(rest, source, sink, lines)


# ---- twins: one object per kind, namespace and name -------------------------------------

# (API group, kind, namespace, name): what an API server holds one object of.
_ObjectKey = tuple[str, str, str, str]


def object_key(obj: Any) -> _ObjectKey | None:
    """An object's identity in a cluster, None when it has no name (never stored)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        return None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    api_version = obj.get("apiVersion")
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    return (group, str(obj.get("kind")), namespace if isinstance(namespace, str) else "", name)


class _Twin(Exception):
    """A second object with the key of one already read (at index `second`; the first
    one's index when it was kept)."""

    def __init__(self, key: _ObjectKey, first: int | None, second: int) -> None:
        self.key = key
        self.first = first
        self.second = second


class _Twins:
    """Notices a second object of one kind, namespace and name (object_key) in a file.

    CAVEAT: a file may hold millions of objects, so what is kept is, per API group,
    kind and namespace, the set of names read: the name strings are those the caller
    keeps anyway, so an object costs a set slot (about 50 bytes), and no index or line
    is kept; scan_list reads the file a second time, only when there are twins, to
    name them by index and line. Stdin cannot be read twice: there each name's index
    is kept, and the twins are named by index alone."""

    def __init__(self, *, keep_index: bool) -> None:
        self.count = 0
        self.keep_index = keep_index
        # (apiVersion, kind, namespace) as written -> the names read (a dict name ->
        # index with keep_index); the name sets of one API group, kind and namespace
        # (apps/v1 and apps/v1beta2 are one group) are compared with each other too.
        self.names: dict[tuple[Any, Any, Any], tuple[Any, list[Any]]] = {}
        self.groups: dict[tuple[str, str, str], list[Any]] = {}

    def see(self, obj: Any) -> None:
        """_Twin when `obj` is the second object of its key (object_key, read inline:
        this runs once per object of files of millions)."""
        index = self.count
        self.count += 1
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            return
        api_version, kind, namespace = obj.get("apiVersion"), obj.get("kind"), meta.get("namespace")
        where = (api_version, kind, namespace)
        if not (isinstance(api_version, str) and isinstance(kind, str)) or not (
            namespace is None or isinstance(namespace, str)
        ):
            where = _group_key(where)  # hashable, whatever was written
        held = self.names.get(where)
        if held is None:
            names: Any = {} if self.keep_index else set()
            siblings = self.groups.setdefault(_group_key(where), [])
            siblings.append(names)
            held = self.names[where] = (names, siblings)
        names, siblings = held
        if name in names or (len(siblings) > 1 and any(name in o for o in siblings)):
            key: _ObjectKey = (*_group_key((api_version, kind, namespace)), name)
            first = next(o[name] for o in siblings if name in o) if self.keep_index else None
            raise _Twin(key, first, index)
        if self.keep_index:
            names[name] = index
        else:
            names.add(name)


def _group_key(where: tuple[Any, Any, Any]) -> tuple[str, str, str]:
    """(API group, kind, namespace) of a (apiVersion, kind, namespace) as written."""
    api_version, kind, namespace = where
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    return (group, str(kind), namespace if isinstance(namespace, str) else "")


def _where(path: str | Path, key: _ObjectKey) -> list[tuple[int, int | None]]:
    """The index and line (None when unknown) of each object of the file with `key`."""
    found: list[tuple[int, int | None]] = []
    lines: list[int] = []
    index = 0

    def take(obj: Any) -> None:
        nonlocal index
        if object_key(obj) == key:
            found.append((index, lines[-1] if lines else None))
        index += 1

    _scan(path, take, lines)
    return found


def _twin_message(
    path: str | Path, key: _ObjectKey, where: list[tuple[int, int | None]]
) -> str:
    source = "<stdin>" if str(path) == "-" else str(path)
    group, kind, namespace, name = key
    what = f"{kind}.{group}" if group else kind
    named = f"{namespace}/{name}" if namespace else name
    items = [f"items[{i}]" + (f" (line {line})" if line else "") for i, line in where]
    both = " and ".join(items[:2]) + (f" (and {len(items) - 2} more)" if len(items) > 2 else "")
    return (
        f"{source}: {both} are both {what} {named}: a cluster holds one object per kind, "
        "namespace and name"
    )


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
