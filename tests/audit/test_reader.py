"""The one cluster reader: a file and a listing collected alike, a stop honoured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import make_node, make_pod
from webhook.audit.state.inventory import ClusterState, Collector
from webhook.audit.state.reader import read_file

OBJECTS = [
    make_node().name("n1").zone("a").obj(),
    make_pod().name("web-0").node("n1").owner("ReplicaSet", "web").obj(),
    make_pod().name("web-1").owner("ReplicaSet", "web").obj(),
]


def test_a_file_reads_as_its_objects(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"kind": "List", "items": OBJECTS}))
    collected = read_file(str(path))
    state, want = collected.state(), ClusterState.from_objects(OBJECTS)
    assert [p["metadata"]["name"] for p in collected.pods] == ["web-0", "web-1"]
    assert (state.running, state.unscheduled) == (want.running, want.unscheduled)


class Stopped(Exception):
    pass


def test_the_check_runs_before_each_object_and_may_end_the_read() -> None:
    taken: list[int] = []

    def check() -> None:
        if len(taken) == 2:
            raise Stopped()
        taken.append(1)

    def objects() -> Any:
        yield from OBJECTS
        raise AssertionError("read past the stop")

    with pytest.raises(Stopped):
        Collector.of(objects(), check=check)
    assert len(taken) == 2
