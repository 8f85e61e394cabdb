"""Builders for the scheduler plugin tests, after upstream's st.MakePod().Req(...),
st.MakeNode().Capacity(...) and the noderesources tests' makeNode().

    pod_with({"cpu": "1000", "memory": "2000"}, {"cpu": "2000"}, node="node1")
    node_with("node1", cpu="4000", memory="10000")
    node_info(node, pods)

Pods from pod_with have exactly one container per requests map given (none at
all when none is given), as st.MakePod().Req() builds them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api.resources import pod_requests
from webhook.scheduler.framework.snapshot import NodeInfo
from webhook.scheduler.plugins.noderesources.resource_allocation import non_zero_requests

RawObj = dict[str, Any]

_counter = iter(range(1, 10**9))


def pod_with(
    *requests: Mapping[str, str],
    node: str = "",
    name: str = "",
    namespace: str = "default",
    init: Iterable[Mapping[str, str]] = (),
) -> RawObj:
    """A pod with one container per `requests` map (st.MakePod().Req(...).Req(...))."""
    spec: RawObj = {
        "containers": [
            {"name": f"c{i}", "image": "pause", "resources": {"requests": dict(r)}}
            for i, r in enumerate(requests)
        ]
    }
    inits = [
        {"name": f"i{i}", "image": "pause", "resources": {"requests": dict(r)}}
        for i, r in enumerate(init)
    ]
    if inits:
        spec["initContainers"] = inits
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name or f"pod-{next(_counter)}", "namespace": namespace},
        "spec": spec,
    }


def container_pod(node: str = "", name: str = "") -> RawObj:
    """A pod with one container requesting nothing (st.MakePod().Container("c"))."""
    pod = pod_with(node=node, name=name)
    pod["spec"]["containers"] = [{"name": "container", "image": "pause"}]
    return pod


def node_with(name: str, images: Iterable[RawObj] = (), **allocatable: str) -> RawObj:
    """A Node whose capacity and allocatable are `allocatable` (st.MakeNode().Capacity);
    no status.allocatable at all when none is given."""
    node: RawObj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    status: RawObj = {}
    if allocatable:
        status["capacity"] = dict(allocatable)
        status["allocatable"] = dict(allocatable)
    images = list(images)
    if images:
        status["images"] = copy.deepcopy(images)
    if status:
        node["status"] = status
    return node


def make_node(
    name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None
) -> RawObj:
    """The noderesources tests' makeNode(name, milliCPU, memory, extendedResource)."""
    alloc = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "32"}
    for key, value in (extended or {}).items():
        alloc[key] = str(value)
    return node_with(name, **alloc)


class ScoringNodeInfo(NodeInfo):
    """A NodeInfo that also holds the summed non-zero requests of its pods (what the
    NodeResourcesFit scoring strategies read as NonZeroRequested)."""

    def __init__(self, name: str, node: RawObj | None = None) -> None:
        super().__init__(name, node)
        self.non_zero_requested: dict[str, int] = {}


def node_info(node: RawObj, pods: Iterable[RawObj] = (), *, non_zero: bool = True) -> NodeInfo:
    """A NodeInfo of `node` holding the pods bound to it (by spec.nodeName), with
    requested summed as the Snapshot sums it and, unless `non_zero` is False,
    non_zero_requested beside it."""
    name = node["metadata"]["name"]
    info: NodeInfo = ScoringNodeInfo(name, node) if non_zero else NodeInfo(name, node)
    for pod in pods:
        if pod.get("spec", {}).get("nodeName") != name:
            continue
        meta = pod["metadata"]
        info._add((meta.get("namespace", "default"), meta["name"]), pod, pod_requests(pod))
        if isinstance(info, ScoringNodeInfo):
            for key, value in non_zero_requests(pod, use_status=True).items():
                info.non_zero_requested[key] = info.non_zero_requested.get(key, 0) + value
    return info


def node_infos(
    nodes: Iterable[RawObj], pods: Iterable[RawObj] = (), *, non_zero: bool = True
) -> list[NodeInfo]:
    """node_info for each node, in order."""
    pods = list(pods)
    return [node_info(n, pods, non_zero=non_zero) for n in nodes]
