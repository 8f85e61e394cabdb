"""The five node filters, each passing and failing with kube-scheduler's exact reason and code.

Reasons and codes are those of pkg/scheduler/framework/plugins/{nodeunschedulable,
nodename,nodeaffinity,tainttoleration,noderesources}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import ZONE, make_node, make_pod
from webhook.api.resources import pod_requests
from webhook.scheduler.framework.nodefacts import node_facts
from webhook.scheduler.framework.runtime import framework as runtime
from webhook.scheduler.framework.runtime.framework import FilterCycle, PreparedFilters, passing
from webhook.scheduler.framework.runtime.framework import passes as passes_filters
from webhook.scheduler.framework.runtime.framework import pod_inputs as filter_inputs
from webhook.scheduler.plugins import nodeaffinity
from webhook.scheduler.plugins.nodeaffinity import NodeAffinity
from webhook.scheduler.plugins.nodename import NodeName
from webhook.scheduler.plugins.noderesources.fit import NodeResourcesFit, fit_state
from webhook.scheduler.plugins.noderesources.fit import fit_reasons as fit_check
from webhook.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from webhook.scheduler.plugins.registry import REGISTRY, new_plugin
from webhook.scheduler.plugins.tainttoleration import TaintToleration

# The five node filters this file is about, in the order it pins.
FIVE = FilterCycle(
    (NodeUnschedulable(), NodeName(), NodeAffinity(), TaintToleration(), NodeResourcesFit())
)
FILTER_PLUGINS = FIVE.names
prepare = FIVE.prepare


def run_filters(pod: Any, node_info: Any) -> dict[str, Any]:
    """Every filter plugin's status, from a raw or an already prepared pod."""
    prepared = pod if isinstance(pod, PreparedFilters) else prepare(pod)
    return runtime.run_filter_plugins(prepared, node_info)


def affinity_label_keys(prepared: PreparedFilters) -> Any:
    return nodeaffinity.affinity_label_keys(prepared.pod)


def fit_reasons(pod: Any, node_info: Any) -> list[str]:
    return fit_check(fit_state(pod), node_info)[0]


def allocatable_of(node_info: Any) -> Any:
    return node_facts(node_info).allocatable


OK = ("Success", "")
UNRESOLVABLE = "UnschedulableAndUnresolvable"
UNSCHEDULABLE = "Unschedulable"


@dataclass
class FakeNodeInfo:
    """The NodeInfo surface the filters read: name, node, pods, requested."""

    node: dict[str, Any]
    pods: list[dict[str, Any]] = field(default_factory=list)
    requested: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.node["metadata"].get("labels") or {})


def info(node: dict[str, Any], *pods: dict[str, Any]) -> FakeNodeInfo:
    """A node with `pods` bound to it, requested summed as the snapshot does."""
    requested: dict[str, int] = {}
    for pod in pods:
        for name, value in pod_requests(pod).items():
            requested[name] = requested.get(name, 0) + value
    return FakeNodeInfo(node, list(pods), requested)


def verdict(pod: Any, node_info: FakeNodeInfo, plugin: str) -> tuple[str, str]:
    status = run_filters(pod, node_info)[plugin]
    return (status.code.value, status.reason)


NODE = make_node().name("n1").zone("zone-a").obj()
GPU_NODE = make_node().name("n1").allocatable(pods="3", **{"example.com/gpu": "2"}).obj()
SIZED = make_node().name("n1").allocatable(cpu="2", memory="4Gi", pods="3").obj()

# (case, plugin, pod, node info, (code, reason))
CASES: list[tuple[str, str, Any, Any, tuple[str, str]]] = [
    ("schedulable node", "NodeUnschedulable", make_pod().obj(), info(NODE), OK),
    (
        "unschedulable node",
        "NodeUnschedulable",
        make_pod().obj(),
        info(make_node().name("n1").unschedulable().obj()),
        (UNRESOLVABLE, "node(s) were unschedulable"),
    ),
    (
        "unschedulable node, pod tolerates the unschedulable taint",
        "NodeUnschedulable",
        make_pod()
        .toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")
        .obj(),
        info(make_node().name("n1").unschedulable().obj()),
        OK,
    ),
    (
        "unschedulable node, pod tolerates everything",
        "NodeUnschedulable",
        make_pod().toleration("", operator="Exists").obj(),
        info(make_node().name("n1").unschedulable().obj()),
        OK,
    ),
    (
        "unschedulable node, toleration for NoExecute only",
        "NodeUnschedulable",
        make_pod()
        .toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoExecute")
        .obj(),
        info(make_node().name("n1").unschedulable().obj()),
        (UNRESOLVABLE, "node(s) were unschedulable"),
    ),
    ("pod names no node", "NodeName", make_pod().obj(), info(NODE), OK),
    ("pod names this node", "NodeName", make_pod().node("n1").obj(), info(NODE), OK),
    (
        "pod names another node",
        "NodeName",
        make_pod().node("n2").obj(),
        info(NODE),
        (UNRESOLVABLE, "node(s) didn't match the requested node name"),
    ),
    ("no node selection", "NodeAffinity", make_pod().obj(), info(NODE), OK),
    (
        "nodeSelector matches",
        "NodeAffinity",
        make_pod().node_selector({ZONE: "zone-a"}).obj(),
        info(NODE),
        OK,
    ),
    (
        "nodeSelector does not match",
        "NodeAffinity",
        make_pod().node_selector({ZONE: "zone-b"}).obj(),
        info(NODE),
        (UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector"),
    ),
    (
        "required affinity does not match",
        "NodeAffinity",
        make_pod().node_affinity_in(ZONE, "zone-b").obj(),
        info(NODE),
        (UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector"),
    ),
    ("untainted node", "TaintToleration", make_pod().obj(), info(NODE), OK),
    (
        "NoSchedule taint untolerated",
        "TaintToleration",
        make_pod().obj(),
        info(make_node().name("n1").taint("dedicated", "gpu").obj()),
        (UNRESOLVABLE, "node(s) had untolerated taint(s)"),
    ),
    (
        "NoExecute taint untolerated",
        "TaintToleration",
        make_pod().obj(),
        info(make_node().name("n1").taint("maint", "", "NoExecute").obj()),
        (UNRESOLVABLE, "node(s) had untolerated taint(s)"),
    ),
    (
        "PreferNoSchedule taint does not filter",
        "TaintToleration",
        make_pod().obj(),
        info(make_node().name("n1").taint("soft", "x", "PreferNoSchedule").obj()),
        OK,
    ),
    (
        "NoSchedule taint tolerated",
        "TaintToleration",
        make_pod().toleration("dedicated", "gpu", "NoSchedule").obj(),
        info(make_node().name("n1").taint("dedicated", "gpu").obj()),
        OK,
    ),
    (
        "first untolerated taint reported",
        "TaintToleration",
        make_pod().toleration("a", operator="Exists").obj(),
        info(make_node().name("n1").taint("a", "1").taint("b", "2").taint("c", "3").obj()),
        (UNRESOLVABLE, "node(s) had untolerated taint(s)"),
    ),
    (
        "node without allocatable: unlimited",
        "NodeResourcesFit",
        make_pod().requests(cpu="1000", memory="1Ti").obj(),
        info(NODE, *[make_pod().name(f"p{i}").obj() for i in range(500)]),
        OK,
    ),
    ("fits", "NodeResourcesFit", make_pod().requests(cpu="1", memory="1Gi").obj(), info(SIZED), OK),
    (
        "fits exactly the free amount",
        "NodeResourcesFit",
        make_pod().requests(cpu="1500m").obj(),
        info(SIZED, make_pod().name("a").requests(cpu="500m").obj()),
        OK,
    ),
    (
        "one millicore over",
        "NodeResourcesFit",
        make_pod().requests(cpu="1501m").obj(),
        info(SIZED, make_pod().name("a").requests(cpu="500m").obj()),
        (UNSCHEDULABLE, "Insufficient cpu"),
    ),
    (
        "more memory than the node has at all: unresolvable",
        "NodeResourcesFit",
        make_pod().requests(memory="5Gi").obj(),
        info(SIZED),
        (UNRESOLVABLE, "Insufficient memory"),
    ),
    (
        "ephemeral-storage the allocatable omits: none, unresolvable",
        "NodeResourcesFit",
        make_pod().requests(**{"ephemeral-storage": "1Gi"}).obj(),
        info(SIZED),
        (UNRESOLVABLE, "Insufficient ephemeral-storage"),
    ),
    (
        "extended resource the node does not list: unresolvable",
        "NodeResourcesFit",
        make_pod().requests(**{"example.com/gpu": "1"}).obj(),
        info(SIZED),
        (UNRESOLVABLE, "Insufficient example.com/gpu"),
    ),
    (
        "extended resource taken by bound pods: resolvable",
        "NodeResourcesFit",
        make_pod().requests(**{"example.com/gpu": "1"}).obj(),
        info(GPU_NODE, make_pod().name("a").requests(**{"example.com/gpu": "2"}).obj()),
        (UNSCHEDULABLE, "Insufficient example.com/gpu"),
    ),
    (
        "extended resource within what is free",
        "NodeResourcesFit",
        make_pod().requests(**{"example.com/gpu": "1"}).obj(),
        info(GPU_NODE, make_pod().name("a").requests(**{"example.com/gpu": "1"}).obj()),
        OK,
    ),
    (
        "hugepages the node does not list, no extended resource asked: left to DRA",
        "NodeResourcesFit",
        make_pod().requests(**{"hugepages-2Mi": "2Mi"}).obj(),
        info(SIZED),
        OK,
    ),
    (
        "hugepages the node does not list, beside an extended resource: checked",
        "NodeResourcesFit",
        make_pod().requests(**{"hugepages-2Mi": "2Mi", "example.com/gpu": "1"}).obj(),
        info(GPU_NODE),
        (UNRESOLVABLE, "Insufficient hugepages-2Mi"),
    ),
    (
        "hugepages the node lists, exceeded",
        "NodeResourcesFit",
        make_pod().requests(**{"hugepages-2Mi": "4Mi"}).obj(),
        info(make_node().name("n1").allocatable(pods="3", **{"hugepages-2Mi": "2Mi"}).obj()),
        (UNRESOLVABLE, "Insufficient hugepages-2Mi"),
    ),
    (
        "pod count below the cap",
        "NodeResourcesFit",
        make_pod().obj(),
        info(SIZED, make_pod().name("a").obj(), make_pod().name("b").obj()),
        OK,
    ),
    (
        "pod count at the cap",
        "NodeResourcesFit",
        make_pod().obj(),
        info(SIZED, *[make_pod().name(f"p{i}").obj() for i in range(3)]),
        (UNSCHEDULABLE, "Too many pods"),
    ),
    (
        "allocatable without pods allows none",
        "NodeResourcesFit",
        make_pod().obj(),
        info(make_node().name("n1").allocatable(cpu="2").obj()),
        (UNSCHEDULABLE, "Too many pods"),
    ),
    (
        "every reason, in upstream's order",
        "NodeResourcesFit",
        make_pod().requests(cpu="3", memory="5Gi").obj(),
        info(SIZED, *[make_pod().name(f"p{i}").obj() for i in range(3)]),
        (UNRESOLVABLE, "Too many pods, Insufficient cpu, Insufficient memory"),
    ),
    (
        "several reasons, none beyond the node's total: resolvable",
        "NodeResourcesFit",
        make_pod().requests(cpu="2").obj(),
        info(SIZED, *[make_pod().name(f"p{i}").requests(cpu="1m").obj() for i in range(3)]),
        (UNSCHEDULABLE, "Too many pods, Insufficient cpu"),
    ),
    (
        "requests of bound pods count",
        "NodeResourcesFit",
        make_pod().requests(memory="1Gi").obj(),
        info(SIZED, make_pod().name("a").requests(memory="3584Mi").obj()),
        (UNSCHEDULABLE, "Insufficient memory"),
    ),
    (
        "init container peak counts",
        "NodeResourcesFit",
        {
            **make_pod().obj(),
            "spec": {
                "containers": [{"name": "c"}],
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
            },
        },
        info(SIZED),
        (UNRESOLVABLE, "Insufficient cpu"),
    ),
]


@pytest.mark.parametrize(
    ("plugin", "pod", "node_info", "want"),
    [c[1:] for c in CASES],
    ids=[f"{c[1]}: {c[0]}" for c in CASES],
)
def test_filter(plugin: str, pod: Any, node_info: FakeNodeInfo, want: tuple[str, str]) -> None:
    """Each plugin's verdict, code and reason as kube-scheduler reports them."""
    assert verdict(pod, node_info, plugin) == want


@pytest.mark.parametrize(
    ("plugin", "pod", "node_info", "want"),
    [c[1:] for c in CASES],
    ids=[f"{c[1]}: {c[0]}" for c in CASES],
)
def test_prepared_pod_and_passes_filters_agree(
    plugin: str, pod: Any, node_info: FakeNodeInfo, want: tuple[str, str]
) -> None:
    """A prepared pod gives the same statuses; passes_filters is their conjunction."""
    statuses = run_filters(pod, node_info)
    prepared = prepare(pod)
    assert run_filters(prepared, node_info) == statuses
    assert passes_filters(prepared, node_info) is all(s.ok for s in statuses.values())


@pytest.mark.parametrize(
    ("plugin", "pod", "node_info", "want"),
    [c[1:] for c in CASES],
    ids=[f"{c[1]}: {c[0]}" for c in CASES],
)
def test_passing_agrees_with_passes_filters(
    plugin: str, pod: Any, node_info: FakeNodeInfo, want: tuple[str, str]
) -> None:
    """The one-pass check over many nodes answers as passes_filters node by node."""
    prepared = prepare(pod)
    other = info(make_node().name("other").obj())
    assert passing(prepared, [node_info, other, node_info]) == [
        passes_filters(prepared, node_info),
        passes_filters(prepared, other),
        passes_filters(prepared, node_info),
    ]


BASE = make_pod().name("p").requests(cpu="100m")
# (what differs from BASE, the pod, whether the filters may judge it differently)
INPUT_CASES = [
    ("nothing", BASE.obj(), False),
    (
        "image",
        {
            **BASE.obj(),
            "spec": {
                **BASE.obj()["spec"],
                "containers": [{**BASE.obj()["spec"]["containers"][0], "image": "other:2"}],
            },
        },
        False,
    ),
    ("name and labels", make_pod().name("q").label("app", "x").requests(cpu="100m").obj(), False),
    (
        "spread constraints",
        make_pod().name("p").requests(cpu="100m").spread(1, ZONE, "DoNotSchedule").obj(),
        False,
    ),
    ("cpu request", make_pod().name("p").requests(cpu="200m").obj(), True),
    ("memory request", make_pod().name("p").requests(cpu="100m", memory="1Gi").obj(), True),
    ("toleration", make_pod().name("p").requests(cpu="100m").toleration("k", "v").obj(), True),
    (
        "nodeSelector",
        make_pod().name("p").requests(cpu="100m").node_selector({ZONE: "a"}).obj(),
        True,
    ),
    (
        "node affinity",
        make_pod().name("p").requests(cpu="100m").node_affinity_in(ZONE, "a").obj(),
        True,
    ),
    ("nodeName", make_pod().name("p").requests(cpu="100m").node("n1").obj(), True),
]


@pytest.mark.parametrize(
    ("pod", "differs"), [c[1:] for c in INPUT_CASES], ids=[c[0] for c in INPUT_CASES]
)
def test_filter_inputs_change_only_with_what_the_filters_read(pod: Any, differs: bool) -> None:
    """Pods differing only in fields no filter reads share remembered verdicts."""
    assert (filter_inputs(prepare(pod)) != filter_inputs(prepare(BASE.obj()))) is differs


def _with_term(term: Any) -> Any:
    pod = make_pod().name("p").obj()
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    return pod


AFFINITY_KEY_CASES = [
    ("no node selection", make_pod().name("p").obj(), ()),
    (
        "nodeSelector",
        make_pod().name("p").node_selector({ZONE: "a", "disk": "ssd"}).obj(),
        (ZONE, "disk"),
    ),
    (
        "nodeSelector and a required term",
        make_pod().name("p").node_selector({"disk": "ssd"}).node_affinity_in(ZONE, "a").obj(),
        ("disk", ZONE),
    ),
    (
        "terms ORed",
        make_pod().name("p").node_affinity_in(ZONE, "a").node_affinity_in("rack", "r1").obj(),
        (ZONE, "rack"),
    ),
    (
        "matchFields reads the name",
        _with_term({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
        None,
    ),
    ("malformed expression", _with_term({"matchExpressions": [{"operator": "Exists"}, "x"]}), ()),
]


@pytest.mark.parametrize(
    ("pod", "want"), [c[1:] for c in AFFINITY_KEY_CASES], ids=[c[0] for c in AFFINITY_KEY_CASES]
)
def test_affinity_label_keys(pod: Any, want: Any) -> None:
    """The label keys NodeAffinity reads; None when it reads the node's name too."""
    assert affinity_label_keys(prepare(pod)) == want


def test_all_five_run_without_short_circuit() -> None:
    """A node failing every filter reports every reason, plugins in FILTER_PLUGINS order."""
    node = (
        make_node()
        .name("n1")
        .zone("zone-a")
        .unschedulable()
        .taint("t", "v")
        .allocatable(cpu="1", memory="1Gi", pods="10")
        .obj()
    )
    pod = make_pod().node("other").node_affinity_in(ZONE, "zone-b").requests(cpu="2").obj()
    statuses = run_filters(pod, info(node))
    assert tuple(statuses) == FILTER_PLUGINS
    assert {k: (s.code.value, s.reason) for k, s in statuses.items()} == {
        "NodeUnschedulable": (UNRESOLVABLE, "node(s) were unschedulable"),
        "NodeName": (UNRESOLVABLE, "node(s) didn't match the requested node name"),
        "NodeAffinity": (UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector"),
        "TaintToleration": (UNRESOLVABLE, "node(s) had untolerated taint(s)"),
        "NodeResourcesFit": (UNRESOLVABLE, "Insufficient cpu"),
    }
    assert passes_filters(prepare(pod), info(node)) is False


def test_filter_plugins_names() -> None:
    assert FILTER_PLUGINS == (
        "NodeUnschedulable",
        "NodeName",
        "NodeAffinity",
        "TaintToleration",
        "NodeResourcesFit",
    )


def test_fit_reasons_one_by_one() -> None:
    pod = make_pod().requests(cpu="3", memory="5Gi").obj()
    node_info = info(SIZED, *[make_pod().name(f"p{i}").obj() for i in range(3)])
    assert fit_reasons(pod, node_info) == [
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
    ]


FIT_POD = make_pod().requests(cpu="1", memory="1Gi").obj()
# Nodes on which FIT_POD fits or fails in every way NodeResourcesFit tells apart.
FIT_NODES = [
    ("fits", info(SIZED)),
    ("fits too", info(SIZED, make_pod().name("a").requests(cpu="500m").obj())),
    ("no allocatable", info(NODE)),
    ("too many pods", info(SIZED, *[make_pod().name(f"p{i}").obj() for i in range(3)])),
    ("insufficient cpu", info(SIZED, make_pod().name("a").requests(cpu="1500m").obj())),
    ("insufficient memory", info(SIZED, make_pod().name("a").requests(memory="3584Mi").obj())),
    (
        "insufficient cpu and memory",
        info(SIZED, make_pod().name("a").requests(cpu="1500m", memory="3584Mi").obj()),
    ),
    (
        "more cpu than the node has",
        info(make_node().name("n1").allocatable(cpu="500m", memory="4Gi", pods="3").obj()),
    ),
    (
        "too many pods, insufficient cpu",
        info(SIZED, *[make_pod().name(f"p{i}").requests(cpu="500m").obj() for i in range(3)]),
    ),
]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(a, b, id=f"{a[0]} / {b[0]}")
        for i, a in enumerate(FIT_NODES)
        for b in FIT_NODES[i + 1 :]
    ],
)
def test_fit_node_keys_are_equal_exactly_for_equal_statuses(
    first: tuple[str, FakeNodeInfo], second: tuple[str, FakeNodeInfo]
) -> None:
    """NodeResourcesFit's node_key (its verdict for the pod): two nodes share it exactly
    when Filter gives them the same code, message and reasons."""
    plugin = NodeResourcesFit()
    state: dict[str, Any] = {}
    assert plugin.pre_filter(state, FIT_POD, None).ok  # type: ignore[arg-type]
    (_, a), (_, b) = first, second
    keys = [plugin.node_key(state, FIT_POD, n) for n in (a, b)]  # type: ignore[arg-type]
    statuses = [plugin.filter(state, FIT_POD, n) for n in (a, b)]  # type: ignore[arg-type]
    same = [(s.code, s.reason, s.parts) for s in statuses]
    assert (keys[0] == keys[1]) is (same[0] == same[1])


def test_allocatable_follows_a_replaced_node_object() -> None:
    """A new node object (an update) is read afresh, not served from the cache."""
    first = FakeNodeInfo(make_node().name("n1").allocatable(cpu="1", pods="10").obj())
    assert allocatable_of(first) == {"cpu": 1000, "pods": 10}
    second = FakeNodeInfo(make_node().name("n1").allocatable(cpu="2", pods="10").obj())
    assert allocatable_of(second) == {"cpu": 2000, "pods": 10}


def test_malformed_pod_and_node_do_not_raise() -> None:
    """Wrong types anywhere read as absent; the verdicts stay statuses."""
    node = {"metadata": {"name": "n1"}, "spec": "oops", "status": {"allocatable": ["x"]}}
    pod = {"spec": {"tolerations": "all", "nodeSelector": ["x"], "containers": "c"}}
    statuses = run_filters(pod, FakeNodeInfo(node))
    assert statuses["NodeAffinity"].reason == "node(s) didn't match Pod's node affinity/selector"
    assert [k for k, s in statuses.items() if s.ok] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeResourcesFit",
    ]


def test_node_info_without_a_node_object() -> None:
    """A NodeInfo known only from its pods has no unschedulable flag, taints or allocatable."""
    statuses = run_filters(make_pod().requests(cpu="1").obj(), FakeNodeInfo(None))  # type: ignore[arg-type]
    assert all(s.ok for s in statuses.values())


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
POD_SPEC = st.dictionaries(
    st.sampled_from(
        [
            "nodeName",
            "nodeSelector",
            "affinity",
            "tolerations",
            "containers",
            "initContainers",
            "overhead",
            "resources",
        ]
    ),
    JSON,
)
NODE_SPEC = st.dictionaries(st.sampled_from(["unschedulable", "taints"]), JSON)


@given(
    pod_spec=POD_SPEC,
    node_spec=NODE_SPEC,
    allocatable=JSON,
    metadata=st.dictionaries(st.sampled_from(["name", "labels"]), JSON),
)
def test_malformed_objects_never_raise(
    pod_spec: Any, node_spec: Any, allocatable: Any, metadata: Any
) -> None:
    """Wrong types anywhere in pod or node give statuses, never an exception."""
    node = {"metadata": metadata, "spec": node_spec, "status": {"allocatable": allocatable}}
    statuses = run_filters({"spec": pod_spec}, FakeNodeInfo(node))
    assert tuple(statuses) == FILTER_PLUGINS


@given(
    pod_spec=POD_SPEC,
    node_spec=NODE_SPEC,
    allocatable=JSON,
    metadata=st.dictionaries(st.sampled_from(["name", "labels"]), JSON),
)
def test_malformed_objects_in_one_pass(
    pod_spec: Any, node_spec: Any, allocatable: Any, metadata: Any
) -> None:
    """Wrong types anywhere: the one-pass check agrees with passes_filters and the
    filter inputs of the pod can still be written down."""
    node = {"metadata": metadata, "spec": node_spec, "status": {"allocatable": allocatable}}
    prepared = prepare({"spec": pod_spec})
    assert passing(prepared, [FakeNodeInfo(node)]) == [passes_filters(prepared, FakeNodeInfo(node))]
    assert isinstance(filter_inputs(prepared), str)


def test_public_surface() -> None:
    """The names other modules import; a change here is a contract change."""
    import webhook.scheduler.framework.runtime.framework as runtime_mod
    import webhook.scheduler.profile as profile_mod

    assert {"Framework", "framework_of"} <= set(profile_mod.__all__)
    assert {"run_filter_plugins", "passes", "passing"} <= set(runtime_mod.__all__)
    for mod in (runtime_mod, profile_mod):
        assert all(hasattr(mod, n) for n in mod.__all__)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_filter_plugin_says_whether_its_node_key_reads_the_pod(name: str) -> None:
    # placement groups nodes by node_key; it reads node_key_reads_pod of every active
    # filter, so a filter without it failed the whole decision (AttributeError).
    plugin = new_plugin(name, None)
    if hasattr(plugin, "filter"):
        assert isinstance(plugin.node_key_reads_pod, bool)
