"""NodePorts, from upstream's node_ports_test.go (TestNodePorts, TestPreFilterDisabled,
TestGetContainerPorts) plus GetHostPorts' sidecar rule.

Legend: "PROTO/IP/PORT" is one host port of a container, as upstream's newPod();
the node holds one existing pod with the ports of `used`.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import node_info, node_with, pod_with
from webhook.scheduler.framework.types import SKIP, Code, CycleState, Status
from webhook.scheduler.plugins.nodeports import (
    ERR_REASON,
    PRE_FILTER_STATE_KEY,
    HostPort,
    NodePorts,
    check_conflict,
    host_ports,
    used_ports,
)

UNSCHEDULABLE = Status(Code.UNSCHEDULABLE, ERR_REASON)
OK = Status()


def new_pod(node: str, *ports: str) -> dict[str, Any]:
    """upstream's newPod(host, "PROTO/IP/PORT"...): one container with those host ports."""
    pod = pod_with({}, node=node)
    pod["spec"]["containers"][0]["ports"] = [
        {"protocol": proto, "hostIP": ip, "hostPort": int(port)}
        for proto, ip, port in (p.split("/") for p in ports)
    ]
    return pod


def _filter(pod: dict[str, Any], existing: list[dict[str, Any]]) -> tuple[Status, Status]:
    plugin = NodePorts()
    state = CycleState()
    pre = plugin.pre_filter(state, pod, None)  # type: ignore[arg-type]
    if pre.code is Code.SKIP:
        return pre, OK
    info = node_info(node_with("m1"), existing)
    return pre, plugin.filter(state, pod, info)


@pytest.mark.parametrize(
    ("pod", "used", "want"),
    [
        pytest.param(
            new_pod("m1", "UDP/127.0.0.1/8080"), ["UDP/127.0.0.1/9090"], OK, id="other port"
        ),
        pytest.param(
            new_pod("m1", "UDP/127.0.0.1/8080"),
            ["UDP/127.0.0.1/8080"],
            UNSCHEDULABLE,
            id="same udp port",
        ),
        pytest.param(
            new_pod("m1", "TCP/127.0.0.1/8080"),
            ["TCP/127.0.0.1/8080"],
            UNSCHEDULABLE,
            id="same tcp port",
        ),
        pytest.param(
            new_pod("m1", "TCP/127.0.0.1/8080"), ["TCP/127.0.0.2/8080"], OK, id="different host ip"
        ),
        pytest.param(
            new_pod("m1", "UDP/127.0.0.1/8080"), ["TCP/127.0.0.1/8080"], OK, id="different protocol"
        ),
        pytest.param(
            new_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
            ["UDP/127.0.0.1/8080"],
            UNSCHEDULABLE,
            id="second udp port conflict",
        ),
        pytest.param(
            new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            UNSCHEDULABLE,
            id="first tcp port conflict",
        ),
        pytest.param(
            new_pod("m1", "TCP/0.0.0.0/8001"),
            ["TCP/127.0.0.1/8001"],
            UNSCHEDULABLE,
            id="first tcp port conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            new_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
            ["TCP/127.0.0.1/8001"],
            UNSCHEDULABLE,
            id="TCP hostPort conflict due to 0.0.0.0 hostIP",
        ),
        pytest.param(
            new_pod("m1", "TCP/127.0.0.1/8001"),
            ["TCP/0.0.0.0/8001"],
            UNSCHEDULABLE,
            id="second tcp port conflict to 0.0.0.0 hostIP",
        ),
        pytest.param(
            new_pod("m1", "UDP/127.0.0.1/8001"),
            ["TCP/0.0.0.0/8001"],
            OK,
            id="second different protocol",
        ),
        pytest.param(
            new_pod("m1", "UDP/127.0.0.1/8001"),
            ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"],
            UNSCHEDULABLE,
            id="UDP hostPort conflict due to 0.0.0.0 hostIP",
        ),
        # Boundaries of sanitize: an empty hostIP is 0.0.0.0, an empty protocol TCP.
        pytest.param(
            new_pod("m1", "//8001"),
            ["TCP/10.1.1.1/8001"],
            UNSCHEDULABLE,
            id="empty hostIP and protocol mean 0.0.0.0 and TCP",
        ),
        pytest.param(
            new_pod("m1", "TCP/10.1.1.1/8001"),
            ["//8001"],
            UNSCHEDULABLE,
            id="an existing empty hostIP binds every address",
        ),
        pytest.param(
            new_pod("m1", "SCTP/10.1.1.1/8001"), ["//8001"], OK, id="SCTP does not collide with TCP"
        ),
    ],
)
def test_node_ports(pod: dict[str, Any], used: list[str], want: Status) -> None:
    """Filter against one existing pod holding `used`."""
    pre, got = _filter(pod, [new_pod("m1", *used)])
    assert pre.ok
    assert got == want
    assert got.reason == want.reason


def test_skip_filter() -> None:
    """skip filter: a pod without host ports is skipped at PreFilter."""
    plugin = NodePorts()
    state = CycleState()
    assert plugin.pre_filter(state, {}, None) is SKIP  # type: ignore[arg-type]
    assert plugin.pre_filter(state, pod_with({}), None) is SKIP  # type: ignore[arg-type]
    # containerPort without hostPort claims nothing.
    pod = pod_with({})
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    assert plugin.pre_filter(state, pod, None) is SKIP  # type: ignore[arg-type]
    assert PRE_FILTER_STATE_KEY not in state


def test_pre_filter_disabled() -> None:
    """Filter without PreFilter state is an error (upstream's ErrNotFound)."""
    status = NodePorts().filter(
        CycleState(), new_pod("", "TCP/1.1.1.1/80"), node_info(node_with("n"))
    )
    assert status.code is Code.ERROR
    assert "PreFilterNodePorts" in status.reason


def _with_ports(containers: list[tuple[list[int], str | None]], field: str) -> list[dict[str, Any]]:
    out = []
    for i, (ports, restart) in enumerate(containers):
        c: dict[str, Any] = {
            "name": f"{field}{i}",
            "ports": [
                {"containerPort": p, "hostPort": p, "protocol": "TCP"}
                if p < 9000
                else {"containerPort": p, "protocol": "TCP"}
                for p in ports
            ],
        }
        if restart:
            c["restartPolicy"] = restart
        out.append(c)
    return out


def test_get_container_ports() -> None:
    """case_0: every container's host ports, in order; ports without a hostPort skipped."""
    pod = pod_with()
    pod["spec"]["containers"] = _with_ports(
        [([8001, 8002], None), ([8003, 8004], None), ([9005], None)], "c"
    )
    assert [hp.port for hp in host_ports(pod)] == [8001, 8002, 8003, 8004]
    assert host_ports(pod)[0] == HostPort("0.0.0.0", "TCP", 8001)  # nosec B104


def test_sidecar_ports_count_and_init_ports_do_not() -> None:
    """GetHostPorts: restartable init containers (sidecars) claim their host ports for
    the pod's life, first; ordinary init containers claim none."""
    pod = pod_with()
    pod["spec"]["containers"] = _with_ports([([8001], None)], "c")
    pod["spec"]["initContainers"] = _with_ports(
        [([8101], None), ([8102], "Always"), ([8103], "OnFailure")], "i"
    )
    assert [hp.port for hp in host_ports(pod)] == [8102, 8001]
    existing = pod_with(node="m1")
    existing["spec"]["initContainers"] = _with_ports([([8102], "Always"), ([8001], None)], "i")
    _, got = _filter(pod, [existing])
    assert got == UNSCHEDULABLE
    existing["spec"]["initContainers"] = _with_ports([([8001], None)], "i")
    _, got = _filter(new_pod("", "TCP/0.0.0.0/8001"), [existing])
    assert got == OK


def test_terminating_pods_still_hold_their_ports() -> None:
    """A terminating pod's ports are in use until it is gone."""
    existing = new_pod("m1", "TCP/0.0.0.0/80")
    existing["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    _, got = _filter(new_pod("", "TCP/0.0.0.0/80"), [existing])
    assert got == UNSCHEDULABLE


@pytest.mark.parametrize(
    "bad",
    [0, -1, "80", True, None],
)
def test_non_positive_or_malformed_host_ports_claim_nothing(bad: Any) -> None:
    """HostPortInfo.Add ignores port <= 0; a non-integer is read as absent."""
    pod = pod_with({})
    pod["spec"]["containers"][0]["ports"] = [{"hostPort": bad}]
    assert host_ports(pod) == ()


def test_check_conflict_table() -> None:
    """CheckConflict: 0.0.0.0 against every address, a specific address against itself
    and 0.0.0.0."""
    used = used_ports([new_pod("n", "TCP/10.0.0.1/80", "UDP/0.0.0.0/53")])
    assert check_conflict(used, HostPort("0.0.0.0", "TCP", 80))  # nosec B104
    assert check_conflict(used, HostPort("10.0.0.1", "TCP", 80))
    assert not check_conflict(used, HostPort("10.0.0.2", "TCP", 80))
    assert check_conflict(used, HostPort("10.0.0.2", "UDP", 53))
    assert not check_conflict(used, HostPort("10.0.0.2", "TCP", 53))


def test_plugin_surface() -> None:
    """The plugin declares its name and what it reads of pods and nodes."""
    assert NodePorts.name == "NodePorts"
    assert "pods" in NodePorts.reads.node_fields
    assert "spec.initContainers[].restartPolicy" in NodePorts.reads.existing_pod_fields


_IPS = st.sampled_from(["", "0.0.0.0", "10.0.0.1", "10.0.0.2"])  # nosec B104
_PROTOS = st.sampled_from(["", "TCP", "UDP"])
_PORTS = st.sampled_from([80, 443, 8080])
_PORT_SPEC = st.builds(lambda i, p, n: f"{p}/{i}/{n}", _IPS, _PROTOS, _PORTS)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_PORT_SPEC, min_size=1, max_size=3),
    st.lists(st.lists(_PORT_SPEC, max_size=3), min_size=2, max_size=2),
)
def test_equal_node_keys_give_equal_filter_status(wanted: list[str], used: list[list[str]]) -> None:
    """node_key is all Filter reads: two nodes with equal keys get the same Status."""
    plugin = NodePorts()
    pod = new_pod("", *wanted)
    state = CycleState()
    assert plugin.pre_filter(state, pod, None).ok  # type: ignore[arg-type]
    infos = [
        node_info(node_with(f"n{i}"), [new_pod(f"n{i}", *ports)]) for i, ports in enumerate(used)
    ]
    keys = [plugin.node_key(state, pod, info) for info in infos]
    statuses = [plugin.filter(state, pod, info) for info in infos]
    if keys[0] == keys[1]:
        assert statuses[0] == statuses[1]


def test_sidecar_ports_of_pods_in_a_snapshot() -> None:
    """Through the Snapshot, a bound pod's sidecar host port still blocks the node."""
    from webhook.scheduler.framework.snapshot import Snapshot

    existing = pod_with(node="m1")
    existing["spec"]["initContainers"] = _with_ports([([8102], "Always")], "i")
    snapshot = Snapshot.from_objects([node_with("m1"), existing])
    plugin = NodePorts()
    state = CycleState()
    pod = new_pod("", "TCP/0.0.0.0/8102")
    assert plugin.pre_filter(state, pod, snapshot).ok
    assert plugin.filter(state, pod, snapshot.nodes["m1"]) == UNSCHEDULABLE
