"""Snapshot files read in chunks: every form a snapshot takes, chunk boundaries anywhere,
the file never read whole, and bad input (truncated, wrong kind, not objects) refused
with a clear error."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import make_node, make_pod
from webhook.cluster import files
from webhook.cluster.files import load_snapshot, scan_list
from webhook.cluster.source import FileSource
from webhook.errors import InputError

RawObj = dict[str, Any]


def _objects() -> list[RawObj]:
    return [
        make_node().name("n1").zone("a").obj(),
        make_node().name("n2").zone("b").obj(),
        make_pod().name("p1").namespace("ns").labels({"app": "web"}).node("n1").obj(),
        make_pod().name("p2").namespace("ns").labels({"app": "web"}).node("n2").obj(),
    ]


def _scanned(path: Path | str) -> list[RawObj]:
    got: list[RawObj] = []
    scan_list(path, got.append)
    return got


def _as_list(items: list[RawObj], **top: Any) -> RawObj:
    return {"apiVersion": "v1", "kind": "List", "items": items, **top}


FORMS = {
    "a JSON List": lambda objs: json.dumps(_as_list(objs, metadata={"resourceVersion": "7"})),
    "a JSON List, items before kind": lambda objs: (
        '{"items": ' + json.dumps(objs) + ', "x": 12345678, "kind": "List"}'
    ),
    "a JSON List, indented": lambda objs: json.dumps(_as_list(objs), indent=3),
    "a JSON array of objects": lambda objs: json.dumps(objs),
    "a JSON array of Lists": lambda objs: json.dumps([_as_list(objs[:1]), _as_list(objs[1:])]),
    "a YAML List": lambda objs: yaml.safe_dump(_as_list(objs)),
    "YAML Lists in a multi-document stream": lambda objs: yaml.safe_dump_all(
        [_as_list(objs[:3]), None, _as_list(objs[3:])]
    ),
}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("chunk", [1, 2, 7, 64, files.CHUNK_CHARS])
def test_every_form_yields_its_objects_whatever_the_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str, chunk: int
) -> None:
    """A chunk boundary anywhere (inside a string, a number, between tokens) changes nothing."""
    monkeypatch.setattr(files, "CHUNK_CHARS", chunk)
    path = tmp_path / "snapshot"
    path.write_text(FORMS[form](_objects()))
    assert _scanned(path) == _objects()


class _Recording(io.StringIO):
    """stdin that records the size of every read and how far it has been read."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.sizes: list[int] = []

    def read(self, size: int | None = -1, /) -> str:
        self.sizes.append(-1 if size is None else size)
        return super().read(size)


@pytest.mark.parametrize("form", ["a JSON List", "a JSON array of objects"])
def test_json_is_read_in_chunks_and_items_arrive_before_the_end(
    monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """No read asks for the whole file, and the first object reaches the sink while
    most of the file is still unread."""
    monkeypatch.setattr(files, "CHUNK_CHARS", 256)
    objects = [
        {**obj, "metadata": {**obj["metadata"], "name": f"{obj['metadata']['name']}-{i}"}}
        for i in range(500)
        for obj in _objects()
    ]
    text = FORMS[form](objects)
    stdin = _Recording(text)
    monkeypatch.setattr("sys.stdin", stdin)
    read_when: list[int] = []
    scan_list("-", lambda obj: read_when.append(stdin.tell()))
    assert len(read_when) == len(objects)
    assert all(0 < size <= 4096 for size in stdin.sizes)
    assert read_when[0] < len(text) / 10


def _cut_points(text: str) -> list[int]:
    return [i for i in range(1, len(text)) if text[i:].strip()]


def test_json_truncated_anywhere_is_an_input_error(tmp_path: Path) -> None:
    """Every prefix of a snapshot is refused with an InputError, never another exception."""
    text = json.dumps(_as_list(_objects()[:2]))
    path = tmp_path / "cut.json"
    for cut in _cut_points(text):
        path.write_text(text[:cut])
        with pytest.raises(InputError, match="cut.json: "):
            _scanned(path)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param('{"kind": "List", "items": [{"kind": "Node"', "truncated", id="truncated"),
        pytest.param('{"kind": "List", "items": [', "truncated", id="truncated after ["),
        pytest.param(
            json.dumps({"kind": "Deployment", "items": []}),
            "a snapshot must be one List",
            id="a wrong kind with items",
        ),
        pytest.param(
            json.dumps(make_pod().name("p").obj()), "a snapshot must be one List", id="one Pod"
        ),
        pytest.param(
            json.dumps([{"kind": "Deployment", "items": []}]),
            "a snapshot must be one List",
            id="a wrong kind in an array",
        ),
        pytest.param(
            json.dumps(_as_list([make_node().name("n").obj(), "n2"])),
            "item 1 is not a Kubernetes object",
            id="an item that is a string",
        ),
        pytest.param(
            '{"kind": "List", "items": []}{}', "unexpected data after the List", id="two objects"
        ),
        pytest.param(
            "kind: List\nitems: []\n---\n- a\n",
            "document 2: a snapshot must be one List",
            id="a YAML document that is a sequence",
        ),
        pytest.param("kind: List\nitems: [\n", "not valid YAML", id="truncated YAML"),
        pytest.param(json.dumps({"kind": "List"}), "must be one List", id="List without items"),
        pytest.param("[1, 2]", "item 0 is not a Kubernetes object", id="a JSON array of numbers"),
        pytest.param(
            '{"kind": "List", "items": []} trailing', "unexpected data", id="trailing data"
        ),
        pytest.param(
            "kind: List\nitems: {a: 1}\n", "items of the List must be a list", id="items not a list"
        ),
        pytest.param("kind: [unclosed\n", "not valid YAML", id="broken YAML"),
    ],
)
def test_bad_snapshot_files_are_clear_errors(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InputError, match=fragment):
        _scanned(path)


def test_a_file_that_is_not_utf8_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"kind": "List", "items": [{"kind": "Node", "x": "\xe9"}]}')
    with pytest.raises(InputError, match="not UTF-8"):
        _scanned(path)


def test_file_source_holds_trimmed_objects_of_watched_kinds(tmp_path: Path) -> None:
    """A replica's snapshot holds what a live source would: trimmed, watched kinds only."""
    node = make_node().name("n1").zone("a").allocatable(cpu="4", memory="8Gi", pods="110").obj()
    node["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    node["status"]["nodeInfo"] = {"kubeletVersion": "v1.37.2"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_as_list([node, deployment])))
    snap = load_snapshot(path, trimmed=True)
    held = snap.nodes["n1"].node
    assert "managedFields" not in held["metadata"] and "nodeInfo" not in held["status"]
    assert load_snapshot(path).nodes["n1"].node["status"]["nodeInfo"] == node["status"]["nodeInfo"]
    source = FileSource(path)
    source.start()
    served = source.snapshot()
    assert served is not None and "managedFields" not in served.nodes["n1"].node["metadata"]


def test_file_source_serves_nothing_from_a_file_cut_after_many_objects(tmp_path: Path) -> None:
    """A file truncated after whole objects leaves the source unsynced, nothing served."""
    text = json.dumps(_as_list(_objects() * 20))
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) - 40])
    source = FileSource(path)
    with pytest.raises(InputError, match="truncated"):
        source.start()
    assert source.synced() is False and source.snapshot() is None
    with source.reading() as snap:
        assert snap is None
