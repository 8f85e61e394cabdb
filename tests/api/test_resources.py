"""Quantities, pod requests and node allocatable, as kube-scheduler counts them.

Expected values are worked out by hand from apimachinery resource.ParseQuantity
(values kept exactly, rounded up to 10^-9), Quantity.MilliValue/Value
(rounded up) and component-helpers resource.PodRequests.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import make_node, make_pod
from webhook.api.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
    milli_value,
    node_allocatable,
    parse_quantity,
    pod_requests,
    unit_value,
)

GI = 2**30
N = 10**9  # nano-units per unit

# (text, nano-units or None when it does not parse)
QUANTITIES: list[tuple[Any, int | None]] = [
    ("0", 0),
    ("1", 1 * N),
    ("500m", 500_000_000),
    ("1.5", 1_500_000_000),
    ("0.5", 500_000_000),
    ("1Ki", 1024 * N),
    ("1Mi", 2**20 * N),
    ("1Gi", GI * N),
    ("1.5Gi", (3 * 2**29) * N),
    ("1Ti", 2**40 * N),
    ("1k", 10**3 * N),
    ("1M", 10**6 * N),
    ("1G", 10**9 * N),
    ("1T", 10**12 * N),
    ("1P", 10**15 * N),
    ("1E", 10**18 * N),
    ("1n", 1),
    ("1u", 1_000),
    ("1e3", 10**3 * N),
    ("1E3", 10**3 * N),
    ("1e+3", 10**3 * N),
    ("1e-3", 10**6),
    ("2.5e2", 250 * N),
    ("0.1m", 100_000),
    ("0.5n", 1),  # below a nano-unit: rounded up
    ("1.G", 10**9 * N),  # upstream accepts an empty fraction
    ("+2", 2 * N),
    ("-2", -2 * N),
    ("007", 7 * N),
    (" 3 ", 3 * N),  # JSON decoding trims spaces
    (2, 2 * N),  # a JSON number
    (0.25, 250_000_000),
    ("1K", None),  # kilo is lower-case k
    ("1e", None),
    ("1Gb", None),
    ("1.5.5", None),
    ("abc", None),
    ("", None),
    ("1 Gi", None),
    (True, None),
    (None, None),
]


@pytest.mark.parametrize(("text", "want"), QUANTITIES, ids=[repr(q[0]) for q in QUANTITIES])
def test_parse_quantity(text: Any, want: int | None) -> None:
    assert parse_quantity(text) == want


def test_huge_quantity_is_capped_not_expanded() -> None:
    """A quantity past 2^63-1 units is capped (maxAllowed) instead of growing without bound."""
    assert parse_quantity("1e999999999") == (2**63 - 1) * N
    assert parse_quantity("1e-999999999") == 1


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        ("1", 1000, 1),
        ("100m", 100, 1),  # Value rounds 0.1 up to 1
        ("0.1m", 1, 1),  # MilliValue rounds up
        ("1.0001", 1001, 2),
        ("1500m", 1500, 2),
        ("1Gi", 1000 * GI, GI),
        ("-1500m", -1500, -2),  # away from zero
    ],
)
def test_milli_and_unit_values_round_up(text: str, milli: int, units: int) -> None:
    nanos = parse_quantity(text)
    assert nanos is not None
    assert (milli_value(nanos), unit_value(nanos)) == (milli, units)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("hugepages-2Mi", True),
        ("attachable-volumes-aws-ebs", True),
        ("kubernetes.io/foo", True),
        ("cpu", False),
        ("foo", False),
        ("requests.example.com/gpu", False),
        ("example.com/bad name", False),
    ],
)
def test_is_scalar_resource_name(name: str, want: bool) -> None:
    assert is_scalar_resource_name(name) is want


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("example.com/gpu", True),
        ("hugepages-2Mi", False),
        ("kubernetes.io/foo", False),
        ("cpu", False),
        ("requests.example.com/gpu", False),
    ],
)
def test_is_extended_resource_name(name: str, want: bool) -> None:
    assert is_extended_resource_name(name) is want


def container(name: str, restart: str | None = None, **requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "img"}
    if requests:
        out["resources"] = {"requests": dict(requests)}
    if restart:
        out["restartPolicy"] = restart
    return out


def pod_with(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    pod = make_pod().obj()
    pod["spec"]["containers"] = containers
    if init is not None:
        pod["spec"]["initContainers"] = init
    pod["spec"].update(spec)
    return pod


BASE = {"pods": 1}

# (case, pod, expected requests)
REQUEST_CASES: list[tuple[str, Any, dict[str, int]]] = [
    ("no requests", make_pod().obj(), {"cpu": 0, "memory": 0, "pods": 1}),
    (
        "one container",
        make_pod().requests(cpu="500m", memory="1Gi").obj(),
        {"cpu": 500, "memory": GI, "pods": 1},
    ),
    (
        "containers summed",
        pod_with(
            [container("a", cpu="100m", memory="1Gi"), container("b", cpu="200m", memory="1Gi")]
        ),
        {"cpu": 300, "memory": 2 * GI, "pods": 1},
    ),
    (
        "init container larger than the containers",
        pod_with(
            [container("a", cpu="100m", memory="2Gi"), container("b", cpu="200m")],
            [container("i", cpu="500m", memory="1Gi")],
        ),
        {"cpu": 500, "memory": 2 * GI, "pods": 1},
    ),
    (
        "init containers maxed, not summed (upstream's example: cpu 3, memory 3G)",
        pod_with(
            [container("c1", cpu="2", memory="1G"), container("c2", cpu="1", memory="1G")],
            [container("ic1", cpu="2", memory="1G"), container("ic2", cpu="2", memory="3G")],
        ),
        {"cpu": 3000, "memory": 3 * 10**9, "pods": 1},
    ),
    (
        "sidecar runs beside the containers and later init containers",
        # containers + sidecar = 300m; init stage i = 500m + sidecar 100m = 600m
        pod_with(
            [container("c", cpu="200m")],
            [container("s", "Always", cpu="100m"), container("i", cpu="500m")],
        ),
        {"cpu": 600, "memory": 0, "pods": 1},
    ),
    (
        "sidecar started after an init container does not add to it",
        # init stage i = 500m alone; containers + sidecar = 300m
        pod_with(
            [container("c", cpu="200m")],
            [container("i", cpu="500m"), container("s", "Always", cpu="100m")],
        ),
        {"cpu": 500, "memory": 0, "pods": 1},
    ),
    (
        "sidecars add to the containers",
        pod_with(
            [container("c", cpu="200m")],
            [container("s1", "Always", cpu="100m"), container("s2", "Always", cpu="50m")],
        ),
        {"cpu": 350, "memory": 0, "pods": 1},
    ),
    (
        "overhead added",
        pod_with([container("c", cpu="100m")], overhead={"cpu": "250m", "memory": "120Mi"}),
        {"cpu": 350, "memory": 120 * 2**20, "pods": 1},
    ),
    (
        "pod-level requests replace container totals, overhead still added",
        pod_with(
            [container("c", cpu="100m", memory="1Gi")],
            resources={"requests": {"cpu": "1"}},
            overhead={"cpu": "10m"},
        ),
        {"cpu": 1010, "memory": GI, "pods": 1},
    ),
    (
        "pod-level requests for unsupported resources are ignored",
        pod_with(
            [container("c", **{"ephemeral-storage": "1Gi"})],
            resources={"requests": {"ephemeral-storage": "5Gi"}},
        ),
        {"cpu": 0, "memory": 0, "ephemeral-storage": GI, "pods": 1},
    ),
    (
        "exact sums rounded once: two 0.5m cpu are 1m, two 0.5-byte memory are 1 byte",
        pod_with(
            [container("a", cpu="0.5m", memory="0.5"), container("b", cpu="0.5m", memory="0.5")]
        ),
        {"cpu": 1, "memory": 1, "pods": 1},
    ),
    (
        "extended, hugepages and ephemeral-storage kept; unknown names dropped",
        pod_with(
            [
                container(
                    "a",
                    **{
                        "example.com/gpu": "2",
                        "hugepages-2Mi": "4Mi",
                        "ephemeral-storage": "1G",
                        "foo": "3",
                    },
                )
            ]
        ),
        {
            "cpu": 0,
            "memory": 0,
            "pods": 1,
            "example.com/gpu": 2,
            "hugepages-2Mi": 4 * 2**20,
            "ephemeral-storage": 10**9,
        },
    ),
    (
        "unparsable quantity ignored",
        pod_with([container("a", cpu="lots", memory="1Ki")]),
        {"cpu": 0, "memory": 1024, "pods": 1},
    ),
]


@pytest.mark.parametrize(
    ("pod", "want"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_pod_requests(pod: Any, want: dict[str, int]) -> None:
    assert pod_requests(pod) == want


def resized_pod(reason: str | None = None) -> dict[str, Any]:
    """A bound pod whose container asks 200m but runs with 500m after a resize."""
    pod = make_pod().node("n1").requests(cpu="200m").obj()
    pod["status"] = {
        "containerStatuses": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "500m"}},
                "allocatedResources": {"cpu": "400m"},
            }
        ]
    }
    if reason:
        pod["status"]["conditions"] = [{"type": "PodResizePending", "reason": reason}]
    return pod


def test_bound_pod_counts_the_larger_of_spec_and_status() -> None:
    """A bound pod holds max(spec, status, allocated) requests during an in-place resize."""
    assert pod_requests(resized_pod())["cpu"] == 500


def test_incoming_pod_ignores_status() -> None:
    assert pod_requests(resized_pod(), use_status=False)["cpu"] == 200


def test_infeasible_resize_counts_what_runs() -> None:
    """With an infeasible resize pending, the spec request (not admitted) is left out."""
    pod = resized_pod("Infeasible")
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "900m"
    assert pod_requests(pod)["cpu"] == 500


@pytest.mark.parametrize(
    ("node", "want"),
    [
        (make_node().obj(), None),
        ({"metadata": {"name": "n"}, "status": {"allocatable": None}}, None),
        ({"metadata": {"name": "n"}, "status": {"allocatable": {}}}, None),
        (
            make_node().allocatable(cpu="3800m", memory="16Gi", pods="110").obj(),
            {"cpu": 3800, "memory": 16 * GI, "pods": 110},
        ),
        (
            make_node()
            .allocatable(
                cpu="4", **{"ephemeral-storage": "100G", "example.com/gpu": "8", "foo": "1"}
            )
            .obj(),
            {"cpu": 4000, "ephemeral-storage": 100 * 10**9, "example.com/gpu": 8},
        ),
    ],
    ids=[
        "no status",
        "null allocatable",
        "empty allocatable",
        "cpu memory pods",
        "ephemeral-storage and extended; unknown dropped",
    ],
)
def test_node_allocatable(node: Any, want: Any) -> None:
    assert node_allocatable(node) == want


@given(st.text(alphabet="0123456789.+-eEinumkKMGTP ", max_size=12))
def test_quantity_text_never_raises(text: str) -> None:
    """Any text in the quantity alphabet parses or is refused; huge exponents stay cheap."""
    got = parse_quantity(text)
    assert got is None or abs(got) <= (2**63 - 1) * N


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=6),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "containers",
                        "initContainers",
                        "resources",
                        "requests",
                        "cpu",
                        "overhead",
                        "restartPolicy",
                        "name",
                        "status",
                    ]
                ),
                inner,
                max_size=3,
            )
        ),
        max_leaves=12,
    )
)
def test_pod_requests_never_raise(spec: Any) -> None:
    got = pod_requests({"spec": spec, "status": spec})
    assert got["pods"] == 1


def test_public_surface() -> None:
    """The names other modules import; a change here is a contract change."""
    import webhook.api.resources as mod

    assert {"pod_requests", "node_allocatable", "parse_quantity"} <= set(mod.__all__)
    assert all(hasattr(mod, name) for name in mod.__all__)
