"""A snapshot cannot hold twins: two objects of one kind (API group and kind),
namespace and name are refused, both named by index and line, in every form a
snapshot takes and by every command that reads one (simulate, audit, check
--snapshot, serve --snapshot), which then computes nothing (exit 2).

Legend: n1 = node n1; p(ns/name) = a Pod bound to n1; items are numbered from 0 in
the order the file holds them."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import make_node, make_pod
from webhook.cli.main import main
from webhook.cluster.files import load_snapshot, scan_list
from webhook.cluster.source import FileSource
from webhook.errors import InputError
from webhook.install import certs

RawObj = dict[str, Any]
TAIL = "a cluster holds one object per kind, namespace and name"


def node(name: str = "n1") -> RawObj:
    return make_node().name(name).zone("a").obj()


def pod(ns: str, name: str) -> RawObj:
    return make_pod().name(name).namespace(ns).labels({"app": "web"}).node("n1").obj()


def deployment(api_version: str, name: str = "web") -> RawObj:
    return {"apiVersion": api_version, "kind": "Deployment",
            "metadata": {"name": name, "namespace": "shop"}}


def as_list(items: list[RawObj]) -> RawObj:
    return {"apiVersion": "v1", "kind": "List", "items": items}


# (case, items, the message after "FILE: ", None when the items are no twins)
CASES = [
    ("n1, p(shop/web-0), p(other/web-0): other namespace, no twins",
     [node(), pod("shop", "web-0"), pod("other", "web-0")], None),
    ("n1, p(shop/web-0), p(shop/web-1), p(shop/web-0): the pod repeated",
     [node(), pod("shop", "web-0"), pod("shop", "web-1"), pod("shop", "web-0")],
     "items[1] ({l1}) and items[3] ({l3}) are both Pod shop/web-0: " + TAIL),
    ("n1, n2, n1: a cluster-scoped object repeated",
     [node(), node("n2"), node()],
     "items[0] ({l0}) and items[2] ({l2}) are both Node n1: " + TAIL),
    ("n1, p(shop/web), Deployment shop/web: other kind, no twins",
     [node(), pod("shop", "web"), deployment("apps/v1")], None),
    ("Deployment.apps/v1 and apps/v1beta2 shop/web: one group, twins",
     [deployment("apps/v1"), deployment("apps/v1beta2")],
     "items[0] ({l0}) and items[1] ({l1}) are both Deployment.apps shop/web: " + TAIL),
    ("Deployment.apps and Deployment.example.com shop/web: other group, no twins",
     [deployment("apps/v1"), deployment("example.com/v1")], None),
    ("p(shop/web-0) three times: the first two named, the rest counted",
     [pod("shop", "web-0") for _ in range(3)],
     "items[0] ({l0}) and items[1] ({l1}) (and 1 more) are both Pod shop/web-0: " + TAIL),
    ("two pods without a name: never stored, no twins",
     [{"apiVersion": "v1", "kind": "Pod", "metadata": {}} for _ in range(2)], None),
]

# Each form: its text, and the 1-based line each item starts on.
FORMS = {
    "JSON List": lambda items: json.dumps(as_list(items), indent=1),
    "JSON List, one line": lambda items: json.dumps(as_list(items)),
    "YAML List": lambda items: yaml.safe_dump(as_list(items)),
}


def _item_lines(form: str, text: str, count: int) -> list[int]:
    """Where each item starts, found by hand: `- ` at the items' indent (YAML), a
    line holding only `  {` (indented JSON), line 1 for one-line JSON."""
    lines = text.splitlines()
    if form == "YAML List":
        return [n for n, line in enumerate(lines, 1) if line.startswith("- ")][:count]
    if form == "JSON List":
        return [n for n, line in enumerate(lines, 1) if line == "  {"][:count]
    return [1] * count


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("items,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_twins_are_refused_naming_both(
    tmp_path: Path, form: str, items: list[RawObj], want: str | None
) -> None:
    text = FORMS[form](items)
    path = tmp_path / "snapshot"
    path.write_text(text)
    got: list[RawObj] = []
    if want is None:
        scan_list(path, got.append)
        assert len(got) == len(items)
        return
    at = {f"l{i}": f"line {n}" for i, n in enumerate(_item_lines(form, text, len(items)))}
    with pytest.raises(InputError) as exc:
        scan_list(path, got.append)
    assert str(exc.value) == f"{path}: " + want.format(**at)


def test_stdin_twins_are_named_by_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stdin cannot be read twice: the items by index alone."""
    items = [node(), pod("shop", "web-0"), pod("shop", "web-0")]
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(as_list(items))))
    with pytest.raises(InputError) as exc:
        scan_list("-", lambda obj: None)
    assert str(exc.value) == f"<stdin>: items[1] and items[2] are both Pod shop/web-0: {TAIL}"


def test_a_json_array_of_lists_counts_items_across_them(tmp_path: Path) -> None:
    """`kubectl get` run twice into one array: items numbered across the whole file."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps([as_list([node()]), as_list([node("n2"), node()])]))
    with pytest.raises(InputError, match=r"items\[0\] \(line 1\) and items\[2\] \(line 1\)"):
        scan_list(path, lambda obj: None)


def test_file_source_serves_nothing_from_a_file_with_twins(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(as_list([node(), node()])))
    source = FileSource(path)
    with pytest.raises(InputError, match="are both Node n1"):
        source.start()
    assert source.snapshot() is None
    with pytest.raises(InputError, match="are both Node n1"):
        load_snapshot(path)


# ---- every command that reads a snapshot: exit 2, the message, nothing computed ----------

TWINS = as_list([node(), pod("shop", "web-0"), pod("shop", "web-0")])
POD = make_pod().name("new").namespace("shop").labels({"app": "web"}).obj()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("command", ["simulate", "audit", "check", "serve"])
def test_every_command_refuses_a_snapshot_with_twins(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    snapshot = tmp_path / "snapshot.json"
    text = json.dumps(TWINS, indent=1)
    snapshot.write_text(text)
    lines = _item_lines("JSON List", text, 3)
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(POD))
    argv = {
        "simulate": ["simulate", "--snapshot", str(snapshot), str(manifest)],
        "audit": ["audit", "--snapshot", str(snapshot), "-o", "json"],
        "check": ["check", "--snapshot", str(snapshot), str(manifest)],
        "serve": ["serve", "--snapshot", str(snapshot), "--cert-dir", str(tmp_path / "certs"),
                  "--bind", f"127.0.0.1:{_free_port()}", "--workers", "1"],
    }[command]
    if command == "serve":
        certs.generate("t", "t", tmp_path / "certs")
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.strip() == (
        f"topospread {command}: {snapshot}: items[1] (line {lines[1]}) and items[2] "
        f"(line {lines[2]}) "
        f"are both Pod shop/web-0: {TAIL}"
    )
