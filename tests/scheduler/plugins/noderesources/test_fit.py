"""NodeResourcesFit's Filter on upstream's TestEnoughRequests table
(pkg/scheduler/framework/plugins/noderesources/fit_test.go), case names kept.

Legend: every case runs on upstream's node, allocatable cpu 10m, memory 20, pods 32,
example.com/aaa 5, ephemeral-storage 20, hugepages-2Mi 5, holding one pod whose
requests are the case's `used`; `pod` lists the incoming pod's containers' requests
(`init` its init containers', `overhead` spec.overhead). Codes are upstream's since a
request above the node's whole allocatable became UnschedulableAndUnresolvable
(fits.go: InsufficientResource.Unresolvable): "capacity enforced" cases ask more than
the node has at all, "allocatable enforced" ones more than is left.

Not ported: the DRA-backed extended resource cases of later upstream versions (no
DeviceClass is modelled); every case of the table as read is below.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_node, make_pod, node_info
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.config.types import NodeResourcesFitArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Code, CycleState, Status
from webhook.scheduler.placement import place
from webhook.scheduler.plugins.noderesources.fit import NodeResourcesFit
from webhook.scheduler.profile import framework_of

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

Requests = dict[str, Any]


def res(cpu: int = 0, memory: int = 0) -> Requests:
    """framework.Resource{MilliCPU, Memory} as a container's requests."""
    return {"cpu": f"{cpu}m", "memory": str(memory)}


def sres(cpu: int = 0, memory: int = 0, scalars: dict[str, int] | None = None) -> Requests:
    """framework.Resource{MilliCPU, Memory, ScalarResources} as a container's requests."""
    out = res(cpu, memory)
    out.update({name: str(v) for name, v in (scalars or {}).items()})
    return out


def pod_of(
    containers: list[Requests],
    init: list[Requests] | None = None,
    overhead: dict[str, str] | None = None,
) -> dict[str, Any]:
    """newResourcePod / newResourceInitPod / newResourceOverheadPod."""
    pod = make_pod().name("incoming").obj()
    pod["spec"]["containers"] = [
        {"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(containers)
    ]
    if init:
        pod["spec"]["initContainers"] = [
            {"name": f"i{i}", "resources": {"requests": r}} for i, r in enumerate(init)
        ]
    if overhead:
        pod["spec"]["overhead"] = overhead
    return pod


NODE = (
    make_node()
    .name("n")
    .allocatable(
        cpu="10m",
        memory="20",
        pods="32",
        **{EXT_A: "5", "ephemeral-storage": "20", HUGE_A: "5"},
    )
    .obj()
)


def on_node(used: Requests) -> Any:
    existing = pod_of([used])
    existing["metadata"]["name"] = "existing"
    existing["spec"]["nodeName"] = "n"
    return node_info(NODE, [existing])


def insufficient(*names: str) -> list[str]:
    return [f"Insufficient {n}" for n in names]


U, R = Code.UNSCHEDULABLE, Code.UNRESOLVABLE
NO_ARGS = NodeResourcesFitArgs()

# (name, pod, used on the node, args, (code, reasons) or None when it fits)
CASES: list[tuple[str, dict[str, Any], Requests, NodeResourcesFitArgs, Any]] = [
    ("no resources requested always fits", pod_of([]), res(10, 20), NO_ARGS, None),
    (
        "too many resources fails",
        pod_of([res(1, 1)]),
        res(10, 20),
        NO_ARGS,
        (U, insufficient("cpu", "memory")),
    ),
    (
        "too many resources fails due to init container cpu",
        pod_of([res(1, 1)], init=[res(3, 1)]),
        res(8, 19),
        NO_ARGS,
        (U, insufficient("cpu")),
    ),
    (
        "too many resources fails due to highest init container cpu",
        pod_of([res(1, 1)], init=[res(3, 1), res(2, 1)]),
        res(8, 19),
        NO_ARGS,
        (U, insufficient("cpu")),
    ),
    (
        "too many resources fails due to init container memory",
        pod_of([res(1, 1)], init=[res(1, 3)]),
        res(9, 19),
        NO_ARGS,
        (U, insufficient("memory")),
    ),
    (
        "too many resources fails due to highest init container memory",
        pod_of([res(1, 1)], init=[res(1, 3), res(1, 2)]),
        res(9, 19),
        NO_ARGS,
        (U, insufficient("memory")),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        pod_of([res(1, 1)], init=[res(1, 1)]),
        res(9, 19),
        NO_ARGS,
        None,
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init "
        "containers",
        pod_of([res(1, 1)], init=[res(1, 1), res(1, 1)]),
        res(9, 19),
        NO_ARGS,
        None,
    ),
    ("both resources fit", pod_of([res(1, 1)]), res(5, 5), NO_ARGS, None),
    (
        "one resource memory fits",
        pod_of([res(2, 1)]),
        res(9, 5),
        NO_ARGS,
        (U, insufficient("cpu")),
    ),
    (
        "one resource cpu fits",
        pod_of([res(1, 2)]),
        res(5, 19),
        NO_ARGS,
        (U, insufficient("memory")),
    ),
    ("equal edge case", pod_of([res(5, 1)]), res(5, 19), NO_ARGS, None),
    (
        "equal edge case for init container",
        pod_of([res(4, 1)], init=[res(5, 1)]),
        res(5, 19),
        NO_ARGS,
        None,
    ),
    ("extended resource fits", pod_of([sres(scalars={EXT_A: 1})]), res(), NO_ARGS, None),
    (
        "extended resource fits for init container",
        pod_of([res()], init=[sres(scalars={EXT_A: 1})]),
        res(),
        NO_ARGS,
        None,
    ),
    (
        "extended resource capacity enforced",
        pod_of([sres(1, 1, {EXT_A: 10})]),
        sres(0, 0, {EXT_A: 0}),
        NO_ARGS,
        (R, insufficient(EXT_A)),
    ),
    (
        "extended resource capacity enforced for init container",
        pod_of([res()], init=[sres(1, 1, {EXT_A: 10})]),
        sres(0, 0, {EXT_A: 0}),
        NO_ARGS,
        (R, insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced",
        pod_of([sres(1, 1, {EXT_A: 1})]),
        sres(0, 0, {EXT_A: 5}),
        NO_ARGS,
        (U, insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced for init container",
        pod_of([res()], init=[sres(1, 1, {EXT_A: 1})]),
        sres(0, 0, {EXT_A: 5}),
        NO_ARGS,
        (U, insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        pod_of([sres(1, 1, {EXT_A: 3}), sres(1, 1, {EXT_A: 3})]),
        sres(0, 0, {EXT_A: 2}),
        NO_ARGS,
        (R, insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        pod_of([res()], init=[sres(1, 1, {EXT_A: 3}), sres(1, 1, {EXT_A: 3})]),
        sres(0, 0, {EXT_A: 2}),
        NO_ARGS,
        None,
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        pod_of([res()], init=[sres(1, 1, {EXT_A: 6}), sres(1, 1, {EXT_A: 3})]),
        sres(0, 0, {EXT_A: 2}),
        NO_ARGS,
        (R, insufficient(EXT_A)),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        pod_of([sres(1, 1, {EXT_B: 1})]),
        res(),
        NO_ARGS,
        (R, insufficient(EXT_B)),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        pod_of([res()], init=[sres(1, 1, {EXT_B: 1})]),
        res(),
        NO_ARGS,
        (R, insufficient(EXT_B)),
    ),
    (
        "kubernetes.io resource capacity enforced",
        pod_of([sres(1, 1, {K8S_IO_A: 10})]),
        res(),
        NO_ARGS,
        (R, insufficient(K8S_IO_A)),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        pod_of([res()], init=[sres(1, 1, {K8S_IO_B: 10})]),
        res(),
        NO_ARGS,
        (R, insufficient(K8S_IO_B)),
    ),
    (
        "hugepages resource capacity enforced",
        pod_of([sres(1, 1, {HUGE_A: 10})]),
        sres(0, 0, {HUGE_A: 0}),
        NO_ARGS,
        (R, insufficient(HUGE_A)),
    ),
    (
        "hugepages resource capacity enforced for init container",
        pod_of([res()], init=[sres(1, 1, {HUGE_A: 10})]),
        sres(0, 0, {HUGE_A: 0}),
        NO_ARGS,
        (R, insufficient(HUGE_A)),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        pod_of([sres(1, 1, {HUGE_A: 3}), sres(1, 1, {HUGE_A: 3})]),
        sres(0, 0, {HUGE_A: 2}),
        NO_ARGS,
        (R, insufficient(HUGE_A)),
    ),
    (
        "skip checking ignored extended resource",
        pod_of([sres(1, 1, {EXT_B: 1})]),
        res(),
        NodeResourcesFitArgs(ignored_resources=("example.com/bbb",)),
        None,
    ),
    (
        "resources + pod overhead fits",
        pod_of([res(1, 1)], overhead={"cpu": "3m", "memory": "13"}),
        res(5, 5),
        NO_ARGS,
        None,
    ),
    (
        "requests + overhead does not fit for memory",
        pod_of([res(1, 1)], overhead={"cpu": "1m", "memory": "15"}),
        res(5, 5),
        NO_ARGS,
        (U, insufficient("memory")),
    ),
    (
        "skip checking ignored extended resource via resource groups",
        pod_of([sres(1, 1, {EXT_B: 1, K8S_IO_A: 1})]),
        res(),
        NodeResourcesFitArgs(ignored_resource_groups=("example.com",)),
        (R, insufficient(K8S_IO_A)),
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        pod_of([sres(1, 1, {EXT_A: 0})]),
        sres(0, 0, {EXT_A: 6}),
        NO_ARGS,
        None,
    ),
    (
        "skip checking resource request with quantity zero",
        pod_of([sres(scalars={EXT_A: 1})]),
        sres(20, 30, {EXT_A: 1}),
        NO_ARGS,
        None,
    ),
]


@pytest.mark.parametrize(
    ("pod", "used", "args", "want"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_enough_requests(
    pod: dict[str, Any], used: Requests, args: NodeResourcesFitArgs, want: Any
) -> None:
    """TestEnoughRequests: PreFilter then Filter, the whole status compared."""
    plugin = NodeResourcesFit(args)
    state = CycleState()
    assert plugin.pre_filter(state, pod, None).ok
    got = plugin.filter(state, pod, on_node(used))
    assert got == (Status() if want is None else Status.of(want[0], want[1]))
    if want is not None:
        assert list(got.parts) == want[1]
    # The NodeKeysBatch hook: "" for a node that fits, else the verdict's content.
    key = "" if want is None else (want[0].value, ", ".join(want[1]), tuple(want[1]))
    node = on_node(used)
    assert plugin.node_keys(state, pod, [node, node]) == [key, key]


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        (NO_ARGS, False),
        (NodeResourcesFitArgs(ignored_resources=(EXT_B,)), True),
        (NodeResourcesFitArgs(ignored_resource_groups=("example.com",)), True),
        (NodeResourcesFitArgs(ignored_resource_groups=("example",)), False),
        (NodeResourcesFitArgs(ignored_resources=("example.com/aaa",)), False),
    ],
    ids=[
        "nothing ignored: checked",
        "ignoredResources names it",
        "ignoredResourceGroups names its prefix",
        "a group is the whole part before the slash",
        "another resource ignored",
    ],
)
def test_ignored_resources_and_groups(args: NodeResourcesFitArgs, fits: bool) -> None:
    """Only the named extended resource, or every one of the named group, goes unchecked."""
    pod = pod_of([sres(1, 1, {EXT_B: 1})])
    plugin = NodeResourcesFit(args)
    state = CycleState()
    plugin.pre_filter(state, pod, None)
    assert plugin.filter(state, pod, on_node(res())).ok is fits


def test_native_resources_are_never_ignored() -> None:
    """fitsRequest applies the ignore lists to extended resources only: a group
    "kubernetes.io" leaves kubernetes.io/something checked."""
    pod = pod_of([sres(1, 1, {K8S_IO_A: 1})])
    args = NodeResourcesFitArgs(
        ignored_resources=(K8S_IO_A,), ignored_resource_groups=("kubernetes.io",)
    )
    plugin = NodeResourcesFit(args)
    state = CycleState()
    plugin.pre_filter(state, pod, None)
    assert plugin.filter(state, pod, on_node(res())) == Status.of(R, insufficient(K8S_IO_A))


def _config(args: Any) -> Any:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": args}],
            }
        ],
    }


def test_the_args_come_from_the_scheduler_configuration() -> None:
    """pluginConfig's ignoredResources reach the Filter of the built profile: the pod
    asking example.com/bbb of a node without it fits only once the resource is ignored."""
    pod = pod_of([sres(1, 1, {EXT_B: 1})])
    snapshot = Snapshot.from_objects([NODE])
    for args, fits in (({}, False), ({"ignoredResources": [EXT_B]}, True)):
        profiles, errors = resolve_configuration(_config(args))
        assert errors == []
        assert place(pod, snapshot, framework=framework_of(profiles[0])).nodes[0].feasible is fits


def test_args_that_are_not_a_list_of_strings_are_refused() -> None:
    _, errors = resolve_configuration(_config({"ignoredResources": EXT_B}))
    assert errors == [
        'profiles[0].pluginConfig[0].args: Invalid value: {"ignoredResources":"example.com/bbb"}:'
        " ignoredResources: must be a list of strings, got 'example.com/bbb'"
    ]
