"""The documents the HTML report tests render: real runs of the CLI, and documents
built to the shapes of /spec/interfaces.md for keys the code may not produce yet
(a drill's `before`, `scaleUp`, `notRecreated`, `blocked`, `drainedNodes`,
`unreachableNodes`; simulate's `preemption` and `scaleUp`)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from tests.builders import DNS, ZONE, make_node, make_pod, selector
from tests.paths import DEMO_SNAPSHOT, ROOT
from webhook.cli.main import main

RawObj = dict[str, Any]

PAYLOAD = '"><img src=x onerror=alert(1)>'
WEB_POD = ROOT / "tests" / "data" / "snapshots" / "web-pod.json"


def cli(*argv: str) -> tuple[int, str]:
    """(exit code, stdout) of `topospread ARGV...` run in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv), prog="topospread")
    return code, out.getvalue()


def demo_audit(*flags: str) -> tuple[dict[str, Any], str]:
    """The demo snapshot's audit as JSON and as HTML, from two runs with the same flags."""
    snapshot = ("--snapshot", str(DEMO_SNAPSHOT))
    _, doc = cli("audit", *snapshot, *flags, "-o", "json")
    _, page = cli("audit", *snapshot, *flags, "-o", "html")
    return json.loads(doc), page


def write_snapshot(path: Path, objects: list[RawObj]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def big_cluster(nodes: int) -> list[RawObj]:
    """`nodes` nodes in 3 zones, every fourth cordoned, every fifth tainted, and a few
    pods of app=web bound to the first of them."""
    out: list[RawObj] = []
    for i in range(nodes):
        b = make_node().name(f"node-{i:05d}").hostname().zone(f"zone-{'abc'[i % 3]}")
        if i % 4 == 0:
            b = b.unschedulable()
        if i % 5 == 0:
            b = b.taint("dedicated", "batch")
        out.append(b.allocatable(cpu="8", memory="32Gi", pods="110").obj())
    for i in range(6):
        out.append(
            make_pod()
            .name(f"web-{i}")
            .namespace("default")
            .label("app", "web")
            .node(f"node-{i % 2:05d}")
            .obj()
        )
    return out


def payload_cluster() -> list[RawObj]:
    """Three nodes, one in the zone named by the escaping payload; a workload spread
    over them, and one whose pods carry the payload as a label value and in their
    spread selector (which the audit reports as an invalid selector, quoting it)."""
    nodes = [
        make_node().name(f"node-{z}").hostname().zone(z).obj()
        for z in ("zone-a", "zone-b", PAYLOAD)
    ]
    pods = [
        make_pod()
        .name(f"web-{i}")
        .namespace("shop")
        .label("app", PAYLOAD)
        .node("node-zone-a")
        .owner("ReplicaSet", "web-5d9c")
        .spread(1, ZONE, DNS, selector({"app": PAYLOAD}))
        .obj()
        for i in range(3)
    ]
    api = [
        make_pod()
        .name(f"api-{i}")
        .namespace("shop")
        .label("app", "api")
        .node(f"node-{zone}")
        .owner("ReplicaSet", "api-7f8b")
        .spread(1, ZONE, DNS, selector({"app": "api"}))
        .obj()
        for i, zone in enumerate(("zone-a", "zone-a", PAYLOAD))
    ]
    return [*nodes, *pods, *api]


def drill_document() -> dict[str, Any]:
    """A drain drill's `audit -o json` as interfaces.md shapes it."""
    return {
        "workloads": [
            {
                "kind": "Deployment",
                "namespace": "shop",
                "name": "web",
                "pods": 5,
                "constraints": [
                    {
                        "index": 0,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": DNS,
                        "maxSkew": 1,
                        "minDomains": None,
                        "skew": 3,
                        "violated": True,
                        "domains": {"eu-west-1a": 0, "eu-west-1b": 3, "eu-west-1c": 2},
                        "before": {"eu-west-1a": 2, "eu-west-1b": 2, "eu-west-1c": 2},
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "pods": 5,
                    }
                ],
            }
        ],
        "violations": 1,
        "drainedNodes": ["node-a1"],
        "pending": ["shop/web-1", "shop/web-2", "shop/db-0"],
        "pendingReasons": {
            "shop/web-1": {"node(s) didn't match pod topology spread constraints": 4},
            "shop/web-2": {"node(s) didn't match pod topology spread constraints": 4},
            "shop/db-0": {"Insufficient memory": 4},
        },
        "scaleUp": {
            "shop/web-1": [],
            "shop/web-2": [],
            "shop/db-0": [{"group": "m6i.xlarge", "zone": "eu-west-1c"}],
        },
        "notRecreated": ["shop/cache-0", "kube-system/debug"],
        "blocked": {"shop/api-0": "shop/api-pdb"},
    }


def outage_document() -> dict[str, Any]:
    """An outage drill: `unreachableNodes`, and `before` per workload entry."""
    doc = drill_document()
    del doc["drainedNodes"], doc["blocked"]
    doc["unreachableNodes"] = ["node-a1", "node-a2"]
    [w] = doc["workloads"]
    [c] = w["constraints"]
    w["before"] = [c.pop("before")]
    return doc


def preempting_document() -> dict[str, Any]:
    """A simulate document of a pod that fits nowhere but preempts two pods."""
    return {
        "pod": "default/urgent",
        "nodes": [
            {
                "name": "node-a",
                "feasible": False,
                "filters": {
                    "NodeResourcesFit": {"code": "Unschedulable", "reason": "Too many pods"}
                },
                "scores": {},
            }
        ],
        "selectedNode": None,
        "tiedNodes": [],
        "placements": [None],
        "distribution": {},
        "preemption": {"node": "node-a", "victims": ["default/low-1", "default/low-2"]},
        "scaleUp": {"default/urgent": [{"group": "m6i.xlarge", "zone": "eu-west-1a"}]},
    }


def full_cluster() -> list[RawObj]:
    """Three one-pod nodes in zones a, b, c, each holding one pod of a ReplicaSet's
    spread: losing zone a leaves its pod nowhere to go (Too many pods)."""
    out: list[RawObj] = []
    for zone in ("a", "b", "c"):
        node = f"node-{zone}"
        out.append(
            make_node().name(node).hostname().zone(f"zone-{zone}").allocatable(pods="1").obj()
        )
        out.append(
            make_pod()
            .name(f"web-{zone}")
            .namespace("shop")
            .label("app", "web")
            .node(node)
            .owner("ReplicaSet", "web-5d9c")
            .spread(1, ZONE, DNS, selector({"app": "web"}))
            .obj()
        )
    return out
