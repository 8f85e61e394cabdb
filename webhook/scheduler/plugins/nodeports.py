"""The NodePorts filter: a node cannot take a pod whose host ports are already in use
there (pkg/scheduler/framework/plugins/nodeports/node_ports.go, with
pkg/scheduler/util's GetHostPorts and framework's HostPortInfo).

Newest release read: node_ports.go with PreFilter Skip for pods without host ports
and util.GetHostPorts (kubernetes/kubernetes master of the 1.35 cycle).

Which ports count, for the incoming pod and for the pods already on the node: the
host ports (hostPort > 0) of the containers and of the restartable init
containers (sidecars, restartPolicy: Always), which run for the pod's whole life;
ordinary init containers have finished before the pod runs and claim nothing.
Terminating pods on the node still hold their ports.

A port is (hostIP, protocol, hostPort), an empty hostIP meaning 0.0.0.0 and an
empty protocol TCP. A wanted port conflicts with a used one of the same protocol
and port when either hostIP is 0.0.0.0 or both are the same.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from webhook.api.kube import RawObj
from webhook.scheduler.framework.snapshot import NodeInfo, Snapshot
from webhook.scheduler.framework.types import SKIP, SUCCESS, Code, CycleState, Reads, Status

__all__ = [
    "DEFAULT_BIND_ALL_HOST_IP",
    "ERR_REASON",
    "PLUGIN_NAME",
    "PRE_FILTER_STATE_KEY",
    "HostPort",
    "NodePorts",
    "NodePortsPreFilterState",
    "check_conflict",
    "fits_ports",
    "host_ports",
    "used_ports",
]

PLUGIN_NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + PLUGIN_NAME
# ErrReason, as kube-scheduler words it.
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PORTS_NOT_FREE = Status(Code.UNSCHEDULABLE, ERR_REASON)
# Filter without PreFilter (framework.ErrNotFound read from the CycleState).
NO_PRE_FILTER_STATE = Status(
    Code.ERROR, f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
)

# The wildcard address a hostIP may name (nothing here binds to it).
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"  # nosec B104
DEFAULT_PROTOCOL = "TCP"

_PORT_FIELDS = (
    "spec.containers[].ports",
    "spec.initContainers[].ports",
    "spec.initContainers[].restartPolicy",
)


@dataclass(frozen=True, slots=True)
class HostPort:
    """One claimed host port, sanitized: ip is never empty ("0.0.0.0" for all
    addresses), protocol never empty ("TCP" by default), port > 0."""

    ip: str
    protocol: str
    port: int


# HostPortInfo: host IP -> the (protocol, port) pairs in use on it.
HostPortInfo = Mapping[str, frozenset[tuple[str, int]]]


def _sanitized(port: Any) -> HostPort | None:
    if not isinstance(port, dict):
        return None
    number = port.get("hostPort")
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        return None
    ip = port.get("hostIP")
    protocol = port.get("protocol")
    return HostPort(
        ip if isinstance(ip, str) and ip else DEFAULT_BIND_ALL_HOST_IP,
        protocol if isinstance(protocol, str) and protocol else DEFAULT_PROTOCOL,
        number,
    )


def _container_ports(containers: Any, sidecars_only: bool) -> Iterable[HostPort]:
    for container in containers if isinstance(containers, list) else ():
        if not isinstance(container, dict):
            continue
        if sidecars_only and container.get("restartPolicy") != "Always":
            continue
        ports = container.get("ports")
        for port in ports if isinstance(ports, list) else ():
            sanitized = _sanitized(port)
            if sanitized is not None:
                yield sanitized


def host_ports(pod: RawObj) -> tuple[HostPort, ...]:
    """The host ports the pod claims: restartable init containers' first, then the
    containers', in spec order, sanitized (HostPortInfo.sanitize).

    Port of pkg/scheduler/util/utils.go: GetHostPorts.
    """
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return ()
    return (
        *_container_ports(spec.get("initContainers"), sidecars_only=True),
        *_container_ports(spec.get("containers"), sidecars_only=False),
    )


def used_ports(pods: Iterable[RawObj]) -> dict[str, frozenset[tuple[str, int]]]:
    """The host ports in use by `pods`, by host IP.

    Port of framework/types.go: NodeInfo.updateUsedPorts with HostPortInfo.Add.
    """
    by_ip: dict[str, set[tuple[str, int]]] = {}
    for pod in pods:
        for hp in host_ports(pod):
            by_ip.setdefault(hp.ip, set()).add((hp.protocol, hp.port))
    return {ip: frozenset(pairs) for ip, pairs in by_ip.items()}


def check_conflict(used: HostPortInfo, want: HostPort) -> bool:
    """Whether `want` collides with a port in `used`: the same (protocol, port) on any
    address when it binds 0.0.0.0, else on its own address or on 0.0.0.0.

    Port of framework/types.go: HostPortInfo.CheckConflict.
    """
    pair = (want.protocol, want.port)
    if want.ip == DEFAULT_BIND_ALL_HOST_IP:
        return any(pair in pairs for pairs in used.values())
    return any(pair in used.get(ip, frozenset()) for ip in (DEFAULT_BIND_ALL_HOST_IP, want.ip))


def fits_ports(want: Iterable[HostPort], used: HostPortInfo) -> bool:
    """No wanted port collides with one in use.

    Port of node_ports.go: fitsPorts.
    """
    return not any(check_conflict(used, hp) for hp in want)


@dataclass(frozen=True)
class NodePortsPreFilterState:
    """What PreFilter leaves for Filter.

    ports: the pod's claimed host ports (host_ports), never empty (a pod without
    any is skipped); pairs: their (protocol, port) pairs, to cut node_key short.
    """

    ports: tuple[HostPort, ...]
    pairs: frozenset[tuple[str, int]]


class NodePorts:
    """The plugin (stateless; no args).

    Port of node_ports.go: New.
    """

    name: ClassVar[str] = PLUGIN_NAME
    node_key_reads_pod: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        pod_fields=_PORT_FIELDS, node_fields=("pods",), existing_pod_fields=_PORT_FIELDS
    )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot) -> Status:
        """The pod's host ports into `state`; SKIP when it claims none.

        Port of node_ports.go: NodePorts.PreFilter.
        """
        ports = host_ports(pod)
        if not ports:
            return SKIP
        state[PRE_FILTER_STATE_KEY] = NodePortsPreFilterState(
            ports, frozenset((hp.protocol, hp.port) for hp in ports)
        )
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Status:
        """Unschedulable with ErrReason when a wanted host port is in use on the node.

        Port of node_ports.go: NodePorts.Filter.
        """
        pre = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(pre, NodePortsPreFilterState):
            return NO_PRE_FILTER_STATE
        if fits_ports(pre.ports, used_ports(node.pods)):
            return SUCCESS
        return PORTS_NOT_FREE

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfo) -> Hashable | None:
        """The node's used host ports of the protocols and numbers the pod wants (with
        their addresses): all Filter can see. Most nodes share the empty key."""
        pre = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(pre, NodePortsPreFilterState):
            return None
        return frozenset(
            (ip, pair)
            for ip, pairs in used_ports(node.pods).items()
            for pair in pairs
            if pair in pre.pairs
        )
