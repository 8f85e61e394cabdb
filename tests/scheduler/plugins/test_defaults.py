"""Default constraints and DefaultSelector, after kube-scheduler's podtopologyspread
defaulting and pkg/scheduler/framework/plugins/helper/spread.go.

Legend for the snapshot fakes: objects listed by namespace, as snapshot.Snapshot keeps them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import DNS, HOSTNAME, SA, ZONE, constraint, expr, make_pod, selector
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.plugins.helper.spread import default_selector
from webhook.scheduler.plugins.podtopologyspread.defaults import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    default_constraints_for,
)


@dataclass
class FakeSnapshot:
    """The workload lists DefaultSelector reads, by namespace."""

    services: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    replicasets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    statefulsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    replicationcontrollers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def service(name: str, sel: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if sel is not None:
        spec["selector"] = sel
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def owner_obj(kind: str, name: str, sel: Any, ns: str = "default") -> dict[str, Any]:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": sel},
    }


def snap(*objs: dict[str, Any]) -> FakeSnapshot:
    out = FakeSnapshot()
    attr = {
        "Service": "services",
        "ReplicaSet": "replicasets",
        "StatefulSet": "statefulsets",
        "ReplicationController": "replicationcontrollers",
    }
    for obj in objs:
        getattr(out, attr[obj["kind"]]).setdefault(obj["metadata"]["namespace"], []).append(obj)
    return out


def web() -> Any:
    """A fresh builder for the pod most cases use (builders mutate in place)."""
    return make_pod().labels({"app": "web", "tier": "fe", "pod-template-hash": "abc"})


# (case, pod, snapshot, expected selector)
SELECTOR_CASES: list[tuple[str, Any, FakeSnapshot, Any]] = [
    ("no services and no owner", web().obj(), snap(), None),
    (
        "service selecting the pod",
        web().obj(),
        snap(service("web", {"app": "web"})),
        {"matchLabels": {"app": "web"}},
    ),
    ("service not selecting the pod", web().obj(), snap(service("db", {"app": "db"})), None),
    (
        "service in another namespace ignored",
        web().obj(),
        snap(service("web", {"app": "web"}, ns="other")),
        None,
    ),
    ("service without selector ignored", web().obj(), snap(service("ext", None)), None),
    (
        "two services merged",
        web().obj(),
        snap(
            service("web", {"app": "web"}),
            service("fe", {"tier": "fe"}),
            service("db", {"app": "db"}),
        ),
        {"matchLabels": {"app": "web", "tier": "fe"}},
    ),
    (
        "owning ReplicaSet",
        make_pod().labels({"app": "web"}).owner("ReplicaSet", "web-abc").obj(),
        snap(
            owner_obj(
                "ReplicaSet",
                "web-abc",
                selector({"app": "web"}, expr("pod-template-hash", "In", "abc", "def")),
            ),
        ),
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "pod-template-hash", "operator": "In", "values": ["abc", "def"]}
            ],
        },
    ),
    (
        "owning StatefulSet",
        make_pod().labels({"app": "db"}).owner("StatefulSet", "db").obj(),
        snap(owner_obj("StatefulSet", "db", selector({"app": "db"}))),
        {"matchLabels": {"app": "db"}},
    ),
    (
        "owning ReplicationController",
        make_pod().labels({"app": "old"}).owner("ReplicationController", "old").obj(),
        snap(owner_obj("ReplicationController", "old", {"app": "old"})),
        {"matchLabels": {"app": "old"}},
    ),
    ("owner not found in the snapshot", make_pod().owner("ReplicaSet", "gone").obj(), snap(), None),
    (
        "owner of the same name in another namespace ignored",
        make_pod().owner("ReplicaSet", "web").obj(),
        snap(owner_obj("ReplicaSet", "web", selector({"app": "web"}), ns="other")),
        None,
    ),
    (
        "owner reference that is not the controller ignored",
        make_pod().owner("ReplicaSet", "web", controller=False).obj(),
        snap(owner_obj("ReplicaSet", "web", selector({"app": "web"}))),
        None,
    ),
    (
        "ReplicaSet not selecting the pod is not read",
        web().obj(),
        snap(owner_obj("ReplicaSet", "web", selector({"app": "web"}))),
        None,
    ),
    (
        "owner kind not supported (Job)",
        make_pod().owner("Job", "j").obj(),
        snap(owner_obj("ReplicaSet", "j", selector({"app": "web"}))),
        None,
    ),
    (
        "owner with an old apiVersion not supported",
        {
            **make_pod().obj(),
            "metadata": {
                "name": "p",
                "namespace": "default",
                "ownerReferences": [
                    {
                        "apiVersion": "extensions/v1beta1",
                        "kind": "ReplicaSet",
                        "name": "web",
                        "uid": "u",
                        "controller": True,
                    }
                ],
            },
        },
        snap(owner_obj("ReplicaSet", "web", selector({"app": "web"}))),
        None,
    ),
    (
        "owner with nil selector adds nothing",
        make_pod().owner("ReplicaSet", "web").obj(),
        snap(owner_obj("ReplicaSet", "web", None)),
        None,
    ),
    (
        "owner with empty selector adds nothing",
        make_pod().owner("ReplicaSet", "web").obj(),
        snap(owner_obj("ReplicaSet", "web", {})),
        None,
    ),
    (
        "owner with malformed selector adds nothing",
        make_pod().owner("ReplicaSet", "web").obj(),
        snap(owner_obj("ReplicaSet", "web", selector(None, expr("app", "In")))),
        None,
    ),
    (
        "service and ReplicaSet together",
        make_pod().labels({"app": "web", "tier": "fe"}).owner("ReplicaSet", "web").obj(),
        snap(
            service("web", {"app": "web"}),
            owner_obj(
                "ReplicaSet", "web", selector({"tier": "fe"}, expr("canary", "DoesNotExist"))
            ),
        ),
        {
            "matchLabels": {"app": "web", "tier": "fe"},
            "matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}],
        },
    ),
    (
        "ReplicaSet key already set by a service becomes an expression",
        make_pod().labels({"app": "web"}).owner("ReplicaSet", "web").obj(),
        snap(
            service("web", {"app": "web"}), owner_obj("ReplicaSet", "web", selector({"app": "x"}))
        ),
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}],
        },
    ),
    (
        "ReplicationController wins a key shared with a service",
        make_pod().labels({"app": "web"}).owner("ReplicationController", "rc").obj(),
        snap(
            service("web", {"app": "web"}), owner_obj("ReplicationController", "rc", {"app": "v2"})
        ),
        {"matchLabels": {"app": "v2"}},
    ),
]


@pytest.mark.parametrize(
    ("pod", "snapshot", "want"), [c[1:] for c in SELECTOR_CASES], ids=[c[0] for c in SELECTOR_CASES]
)
def test_default_selector(pod: Any, snapshot: FakeSnapshot, want: Any) -> None:
    """helper.DefaultSelector: Services selecting the pod plus its RC/RS/StatefulSet controller."""
    assert default_selector(pod, snapshot) == want


def test_system_default_constraints() -> None:
    """hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway, never DoNotSchedule."""
    assert SYSTEM_DEFAULT_CONSTRAINTS == (
        {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA},
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": SA},
    )


SERVED = snap(service("web", {"app": "web"}))
SERVED_SELECTOR = {"matchLabels": {"app": "web"}}


def test_system_defaults_get_the_default_selector() -> None:
    got = default_constraints_for(web().obj(), SERVED, SpreadArgs())
    assert got == [
        constraint(3, HOSTNAME, SA, SERVED_SELECTOR),
        constraint(5, ZONE, SA, SERVED_SELECTOR),
    ]


def test_list_defaults_are_the_configured_ones() -> None:
    configured = (constraint(1, ZONE, DNS), constraint(2, HOSTNAME, SA, minDomains=3))
    got = default_constraints_for(
        web().obj(), SERVED, SpreadArgs(default_constraints=configured, defaulting_type="List")
    )
    assert got == [
        constraint(1, ZONE, DNS, SERVED_SELECTOR),
        constraint(2, HOSTNAME, SA, SERVED_SELECTOR, minDomains=3),
    ]


def test_list_with_no_constraints_gives_none() -> None:
    """defaultingType List with an empty list disables defaulting."""
    assert default_constraints_for(web().obj(), SERVED, SpreadArgs(defaulting_type="List")) == []


def test_pod_with_own_constraints_gets_none() -> None:
    pod = web().spread(1, ZONE, DNS, selector({"app": "web"})).obj()
    assert default_constraints_for(pod, SERVED, SpreadArgs()) == []


def test_pod_without_services_or_owner_gets_none() -> None:
    assert default_constraints_for(web().obj(), snap(), SpreadArgs()) == []


def test_match_label_keys_of_a_default_are_dropped() -> None:
    """The scheduler replaces a default's selector, so matchLabelKeys never apply to it."""
    configured = (constraint(1, ZONE, SA, matchLabelKeys=["pod-template-hash"]),)
    got = default_constraints_for(
        web().obj(), SERVED, SpreadArgs(default_constraints=configured, defaulting_type="List")
    )
    assert got == [constraint(1, ZONE, SA, SERVED_SELECTOR)]


def test_results_are_copies() -> None:
    """Editing what is returned changes neither the config nor the system defaults."""
    configured = (constraint(1, ZONE, SA),)
    args = SpreadArgs(default_constraints=configured, defaulting_type="List")
    before = copy.deepcopy(configured)
    got = default_constraints_for(web().obj(), SERVED, args)
    got[0]["maxSkew"] = 9
    got[0]["labelSelector"]["matchLabels"]["app"] = "x"
    assert args.default_constraints == before
    system = default_constraints_for(web().obj(), SERVED, SpreadArgs())
    system[0]["maxSkew"] = 9
    assert SYSTEM_DEFAULT_CONSTRAINTS[0]["maxSkew"] == 3


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    meta=st.dictionaries(st.sampled_from(["labels", "ownerReferences", "namespace"]), JSON),
    service_spec=JSON,
    owner_spec=JSON,
)
def test_malformed_objects_never_raise(meta: Any, service_spec: Any, owner_spec: Any) -> None:
    """Wrong types in the pod or the workloads read as absent; nothing raises."""
    pod = {"metadata": {"name": "p", **meta}, "spec": {}}
    objs = FakeSnapshot(
        services={"default": [{"metadata": {"name": "s"}, "spec": service_spec}]},
        replicasets={"default": [{"metadata": {"name": "w"}, "spec": owner_spec}]},
    )
    got = default_constraints_for(pod, objs, SpreadArgs())
    assert isinstance(got, list)


def test_public_surface() -> None:
    """The names other modules import; a change here is a contract change."""
    import webhook.scheduler.plugins.helper.spread as helper
    import webhook.scheduler.plugins.podtopologyspread.defaults as plugin

    assert {"default_selector"} <= set(helper.__all__)
    assert {"SYSTEM_DEFAULT_CONSTRAINTS", "default_constraints_for"} <= set(plugin.__all__)
    for mod in (helper, plugin):
        assert all(hasattr(mod, name) for name in mod.__all__)
