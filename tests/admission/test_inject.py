"""Default constraints injected at Pod create, end to end through /mutate.

Legend: SYS(sel) is what kube-scheduler's System defaults become for a pod whose
DefaultSelector is `sel` (hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway,
upstream's systemDefaultConstraints); a case's cluster lists the Services and
controllers in it. Expected selectors are worked out by hand from upstream's
helper.DefaultSelector: Service selectors that select the pod, merged; the
controller's selector (RC: merged into the set; RS/SS: its requirements added).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from tests import builders
from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    RawObj,
    expr,
    make_node,
    make_pod,
    review,
    selector,
    workload,
)
from webhook.admission.inject import INJECT_ANNOTATION, namespace_labels
from webhook.cli.main import main
from webhook.cluster.source import StaticSource
from webhook.config import Settings, settings_from_dict
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.server.app import create_app

TSC = "topologySpreadConstraints"


def service(name: str, sel: dict[str, str] | None, ns: str = "default") -> RawObj:
    spec: RawObj = {} if sel is None else {"selector": sel}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
            "spec": spec}


def controller(kind: str, name: str, sel: Any, ns: str = "default") -> RawObj:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns},
            "spec": {"selector": sel}}


def sys_defaults(sel: RawObj) -> list[RawObj]:
    return [
        {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA, "labelSelector": sel},
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": SA, "labelSelector": sel},
    ]


NODES = [make_node().name("n1").zone("a").hostname().obj()]

def web() -> Any:
    """A fresh builder (builders edit in place): pod web-1 labelled app=web, tier=fe."""
    return make_pod().name("web-1").labels({"app": "web", "tier": "fe"})


class _Web:
    @staticmethod
    def obj() -> RawObj:
        return web().obj()


WEB = _Web()


def mutate(
    cluster: list[RawObj],
    pod: RawObj,
    settings: Settings | None = None,
    *,
    version: tuple[int, int] | None = (1, 34),
    **review_kw: Any,
) -> tuple[RawObj, list[str]]:
    """The pod as /mutate leaves it, and the warnings."""
    source = StaticSource(Snapshot.from_objects([*NODES, *cluster]), version)
    app = create_app(settings or Settings(), source=source)
    with app.test_client() as client:
        response = client.post("/mutate", json=review(pod, **review_kw)).get_json()["response"]
    assert response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
    return jsonpatch.apply_patch(pod, patch), response.get("warnings", [])


def injected(cluster: list[RawObj], pod: RawObj, settings: Settings | None = None) -> Any:
    mutated, _ = mutate(cluster, pod, settings)
    return mutated["spec"].get(TSC)


# ---------------------------------------------------------------------------------------
# DefaultSelector, System defaults

RS_WEB = controller("ReplicaSet", "web-7c9", selector({"app": "web", "pod-template-hash": "7c9"}))
SS_DB = controller(
    "StatefulSet", "db", selector({"app": "db"}, expr("tier", "In", "a", "b"))
)
RC_LEGACY = controller("ReplicationController", "legacy", {"app": "legacy"})

CASES = [
    # (name, cluster, pod, expected constraints)
    ("service selecting the pod", [service("web", {"app": "web"})], WEB.obj(),
     sys_defaults({"matchLabels": {"app": "web"}})),
    ("service selecting another app", [service("db", {"app": "db"})], WEB.obj(), None),
    ("service without selector selects nothing", [service("ext", None)], WEB.obj(), None),
    ("service in another namespace", [service("web", {"app": "web"}, ns="other")],
     WEB.obj(), None),
    ("two services merged", [service("web", {"app": "web"}), service("fe", {"tier": "fe"})],
     WEB.obj(), sys_defaults({"matchLabels": {"app": "web", "tier": "fe"}})),
    ("owner ReplicaSet", [RS_WEB],
     make_pod().name("web-7c9-x").labels({"app": "web", "pod-template-hash": "7c9"})
     .owner("ReplicaSet", "web-7c9").obj(),
     sys_defaults({"matchLabels": {"app": "web", "pod-template-hash": "7c9"}})),
    ("owner StatefulSet with an expression", [SS_DB],
     make_pod().name("db-0").labels({"app": "db", "tier": "a"}).owner("StatefulSet", "db").obj(),
     sys_defaults({"matchLabels": {"app": "db"},
                   "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]})),
    ("owner ReplicationController", [RC_LEGACY],
     make_pod().name("legacy-x").label("app", "legacy").owner("ReplicationController", "legacy")
     .obj(),
     sys_defaults({"matchLabels": {"app": "legacy"}})),
    ("service and owner ReplicaSet at once, shared key kept as expression",
     [service("web", {"app": "web"}), RS_WEB],
     make_pod().name("web-7c9-x").labels({"app": "web", "pod-template-hash": "7c9"})
     .owner("ReplicaSet", "web-7c9").obj(),
     sys_defaults({"matchLabels": {"app": "web", "pod-template-hash": "7c9"},
                   "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})),
    ("service and owner ReplicationController merged", [service("fe", {"tier": "fe"}), RC_LEGACY],
     make_pod().name("legacy-x").labels({"app": "legacy", "tier": "fe"})
     .owner("ReplicationController", "legacy").obj(),
     sys_defaults({"matchLabels": {"app": "legacy", "tier": "fe"}})),
    ("owner ReplicaSet not in the cluster", [],
     make_pod().name("web-7c9-x").label("app", "web").owner("ReplicaSet", "web-7c9").obj(), None),
    ("owner ReplicaSet in another namespace",
     [controller("ReplicaSet", "web-7c9", selector({"app": "web"}), ns="other")],
     make_pod().name("web-7c9-x").label("app", "web").owner("ReplicaSet", "web-7c9").obj(), None),
    ("owner of another kind (Job) adds nothing",
     [controller("ReplicaSet", "batch", selector({"app": "web"}))],
     make_pod().name("batch-x").label("app", "web").owner("Job", "batch").obj(), None),
    ("owner reference not marked controller is not the controller", [RS_WEB],
     make_pod().name("web-7c9-x").label("app", "web").owner("ReplicaSet", "web-7c9",
                                                             controller=False).obj(), None),
    ("bare pod selected by nothing", [], WEB.obj(), None),
    ("pod with its own constraint gets nothing", [service("web", {"app": "web"})],
     WEB.obj() | {"spec": {"containers": [], TSC: [
         {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS,
          "labelSelector": {"matchLabels": {"app": "web"}}}]}},
     [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS,
       "labelSelector": {"matchLabels": {"app": "web"}}}]),
    ("pod with an empty constraint list is defaulted", [service("web", {"app": "web"})],
     WEB.obj() | {"spec": {"containers": [], TSC: []}},
     sys_defaults({"matchLabels": {"app": "web"}})),
    ("pod bound at creation (nodeName) never meets the scheduler",
     [service("web", {"app": "web"})], make_pod().label("app", "web").node("n1").obj(), None),
]


@pytest.mark.parametrize(
    ("cluster", "pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_system_defaults_with_default_selector(
    cluster: list[RawObj], pod: RawObj, expected: Any
) -> None:
    """System defaulting writes both system defaults with the DefaultSelector, or nothing."""
    assert injected(cluster, pod) == expected


@pytest.mark.parametrize(("cluster", "pod"), [c[1:3] for c in CASES], ids=[c[0] for c in CASES])
def test_system_defaults_never_inject_do_not_schedule(cluster: list[RawObj], pod: RawObj) -> None:
    """Whatever the pod, System defaulting adds only ScheduleAnyway constraints."""
    before = pod["spec"].get(TSC) or []
    after = injected(cluster, pod) or []
    added = after[len(before):] if after[: len(before)] == before else after
    assert all(c["whenUnsatisfiable"] == SA for c in added)


# ---------------------------------------------------------------------------------------
# List defaulting

SVC = [service("web", {"app": "web"})]
SEL = {"matchLabels": {"app": "web"}}


def list_settings(*constraints: RawObj, **raw: Any) -> Settings:
    return settings_from_dict(
        {"podTopologySpread": {"defaultingType": "List", "defaultConstraints": list(constraints)},
         **raw}
    )


def test_list_defaults_are_injected_as_configured() -> None:
    """List defaulting injects exactly the configured constraints, DoNotSchedule included."""
    settings = list_settings(
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA,
         "nodeTaintsPolicy": "Honor"},
    )
    assert injected(SVC, WEB.obj(), settings) == [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS, "labelSelector": SEL},
        {"maxSkew": 2, "topologyKey": HOSTNAME, "whenUnsatisfiable": SA,
         "nodeTaintsPolicy": "Honor", "labelSelector": SEL},
    ]


def test_empty_list_turns_defaulting_off() -> None:
    """List with no defaultConstraints: the scheduler applies none, so nothing is injected."""
    assert injected(SVC, WEB.obj(), list_settings()) is None


def test_injected_defaults_carry_no_match_label_keys_and_merge_adds_nothing() -> None:
    """A default's matchLabelKeys never applies (its selector is replaced), so it is dropped;
    the webhook-side merge then finds nothing to merge and writes no annotation."""
    settings = list_settings(
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA,
         "matchLabelKeys": ["pod-template-hash"]},
        matchLabelKeysMerge="webhook",
    )
    pod = web().label("pod-template-hash", "7c9").obj()
    mutated, warnings = mutate(SVC, pod, settings, version=(1, 33))
    assert mutated["spec"][TSC] == [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA, "labelSelector": SEL}
    ]
    assert "annotations" not in mutated["metadata"]
    assert warnings == []


def test_merge_still_applies_to_a_pod_with_its_own_constraints() -> None:
    """The pod's own matchLabelKeys are merged as before; no default is added beside them."""
    pod = (
        make_pod().name("web-1").labels({"app": "web", "pod-template-hash": "7c9"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
        .obj()
    )
    mutated, _ = mutate(SVC, pod, Settings(match_label_keys_merge="webhook"), version=None)
    assert mutated["spec"][TSC] == [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS,
         "labelSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [
             {"key": "pod-template-hash", "operator": "In", "values": ["7c9"]}]},
         "matchLabelKeys": ["pod-template-hash"]}
    ]


# ---------------------------------------------------------------------------------------
# When injection does not happen

SYS_WEB = sys_defaults(SEL)


@pytest.mark.parametrize(
    ("pod", "settings", "expected"),
    [
        (WEB.obj(), Settings(), SYS_WEB),
        (WEB.obj(), Settings(inject_defaults=False), None),
        (make_pod().name("web-1").label("app", "web").annotation(INJECT_ANNOTATION, "false").obj(),
         Settings(), None),
        (make_pod().name("web-1").label("app", "web").annotation(INJECT_ANNOTATION, "true").obj(),
         Settings(), SYS_WEB),
        (make_pod().name("web-1").label("app", "web").annotation(INJECT_ANNOTATION, "False").obj(),
         Settings(), SYS_WEB),
    ],
    ids=["on by default", "injectDefaults false", "pod annotation false opts out",
         "pod annotation true", "only the exact string false opts out"],
)
def test_switches(pod: RawObj, settings: Settings, expected: Any) -> None:
    """injectDefaults and the per-pod annotation turn injection off."""
    assert injected(SVC, pod, settings) == expected


NOT_KUBE_SYSTEM = {
    "injectNamespaceSelector": {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}
        ]
    }
}


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [("default", True), ("kube-system", False)],
)
def test_namespace_selector_opts_a_namespace_out(namespace: str, expected: bool) -> None:
    """injectNamespaceSelector: only pods of namespaces it selects are injected."""
    settings = settings_from_dict(NOT_KUBE_SYSTEM)
    pod = make_pod().name("web-1").namespace(namespace).label("app", "web").obj()
    got = injected([service("web", {"app": "web"}, ns=namespace)], pod, settings)
    assert (got == sys_defaults(SEL)) if expected else got is None


def namespace(name: str, labels: dict[str, str]) -> RawObj:
    """A Namespace with the label the API server adds to every one, plus `labels`."""
    return builders.namespace(name, {"kubernetes.io/metadata.name": name, **labels})


OPT_OUT_BY_LABEL = {
    "injectNamespaceSelector": {
        "matchExpressions": [{"key": "topospread.io/inject", "operator": "NotIn",
                              "values": ["false"]}]
    }
}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [({}, True), ({"topospread.io/inject": "false"}, False), ({"topospread.io/inject": "true"},
                                                               True)],
    ids=["unlabelled namespace", "namespace labelled false", "namespace labelled true"],
)
def test_namespace_opts_out_by_its_own_label(labels: dict[str, str], expected: bool) -> None:
    """A selector on a Namespace's own label is matched against the watched Namespace."""
    settings = settings_from_dict(OPT_OUT_BY_LABEL)
    got = injected([namespace("default", labels), *SVC], WEB.obj(), settings)
    assert (got == sys_defaults(SEL)) if expected else got is None


def test_namespace_selector_requiring_a_label_of_an_unknown_namespace() -> None:
    """A namespace missing from the state has only its name label: matchLabels fails."""
    settings = settings_from_dict(
        {"injectNamespaceSelector": {"matchLabels": {"team": "web"}}}
    )
    assert injected([namespace("other", {"team": "web"}), *SVC], WEB.obj(), settings) is None


@pytest.mark.parametrize(
    ("namespaces", "expected"),
    [
        (None, {"kubernetes.io/metadata.name": "team-a"}),
        ({"team-a": {"metadata": {"name": "team-a", "labels": {"env": "prod"}}}},
         {"env": "prod", "kubernetes.io/metadata.name": "team-a"}),
        ({"other": {"metadata": {"name": "other", "labels": {"env": "prod"}}}},
         {"kubernetes.io/metadata.name": "team-a"}),
    ],
    ids=["no namespace objects: only the name label", "known namespace", "unknown namespace"],
)
def test_namespace_labels(namespaces: Any, expected: dict[str, str]) -> None:
    """Namespace labels from the cluster state, the name label always there."""

    class State:
        pass

    state = State()
    if namespaces is not None:
        state.namespaces = namespaces  # type: ignore[attr-defined]
    assert namespace_labels(state, "team-a") == expected


def test_namespace_comes_from_the_request_when_the_pod_has_none() -> None:
    """A pod without metadata.namespace is looked up in request.namespace (kubernetes#88282)."""
    pod = make_pod().name("web-1").label("app", "web").obj()
    del pod["metadata"]["namespace"]
    cluster = [service("web", {"app": "web"}, ns="team-a")]
    mutated, _ = mutate(cluster, pod, namespace="team-a")
    assert mutated["spec"][TSC] == sys_defaults(SEL)
    assert "namespace" not in mutated["metadata"]


@pytest.mark.parametrize(
    ("obj", "operation"),
    [
        (WEB.obj(), "UPDATE"),
        (workload("Deployment", WEB.obj()), "CREATE"),
        (workload("ReplicaSet", WEB.obj()), "CREATE"),
    ],
    ids=["pod update", "deployment template", "replicaset template"],
)
def test_only_pods_at_create(obj: RawObj, operation: str) -> None:
    """Defaults are written into created Pods only: the scheduler applies them to pods."""
    old = obj if operation == "UPDATE" else None
    mutated, _ = mutate(SVC, obj, operation=operation, old=old)
    assert mutated == obj


def test_injection_is_idempotent_on_reinvocation() -> None:
    """A second call on the mutated pod (reinvocationPolicy IfNeeded) changes nothing."""
    first, _ = mutate(SVC, WEB.obj())
    second, _ = mutate(SVC, first)
    assert second == first


# ---------------------------------------------------------------------------------------
# Config refused at start


def test_serve_refuses_a_config_the_scheduler_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`topospread serve --config bad.yaml` exits 2 with the scheduler's validation message."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "podTopologySpread:\n  defaultingType: List\n  defaultConstraints:\n"
        "  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n"
        "    whenUnsatisfiable: ScheduleAnyway\n    labelSelector: {matchLabels: {a: b}}\n"
    )
    code = main(["serve", "--config", str(bad), "--cert-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("topospread serve: podTopologySpread: ")
    assert "defaultConstraints[0].labelSelector" in err


def test_serve_refuses_a_bad_namespace_selector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed injectNamespaceSelector stops the start, naming the field."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "injectNamespaceSelector:\n  matchExpressions:\n  - {key: env, operator: Maybe}\n"
    )
    code = main(["serve", "--config", str(bad), "--cert-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "injectNamespaceSelector.matchExpressions[0].operator" in err


def test_system_args_match_the_table() -> None:
    """Settings() defaults to System defaulting, which the cases above rely on."""
    assert Settings().spread == SpreadArgs((), "System")


def test_trimmed_namespace_keeps_its_labels() -> None:
    """A Namespace as a live source or a snapshot file holds it (trimmed) keeps its labels."""
    from webhook.cluster.source import snapshot_objects

    full = namespace("team-a", {"env": "prod"})
    full["metadata"]["annotations"] = {"owner": "x"}
    full["spec"] = {"finalizers": ["kubernetes"]}
    full["status"] = {"phase": "Active"}
    snapshot = Snapshot.from_objects(snapshot_objects([full]))
    assert namespace_labels(snapshot, "team-a") == {
        "env": "prod", "kubernetes.io/metadata.name": "team-a"
    }
    assert snapshot.namespaces["team-a"] == {
        "kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": "team-a",
                     "labels": {"kubernetes.io/metadata.name": "team-a", "env": "prod"}},
    }
    snapshot.delete(full)
    assert namespace_labels(snapshot, "team-a") == {"kubernetes.io/metadata.name": "team-a"}


def test_namespace_opt_out_follows_the_live_cluster() -> None:
    """Through a LiveSource: the Namespace's label, as watched, turns injection off and on."""
    import time

    from kubernetes.client import Configuration

    from tests.fake_apiserver import FakeApiServer
    from webhook.cluster.informer import LiveSource

    fake = FakeApiServer().start()
    source = LiveSource(configuration=Configuration(host=fake.url), watch_timeout=30,
                        backoff_initial=0.01, backoff_cap=0.05)
    try:
        for obj in [*NODES, *SVC, namespace("default", {"topospread.io/inject": "false"})]:
            fake.add(obj)
        app = create_app(settings_from_dict(OPT_OUT_BY_LABEL), source=source)

        def constraints() -> Any:
            with app.test_client() as client:
                response = client.post("/mutate", json=review(WEB.obj())).get_json()["response"]
            patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
            return jsonpatch.apply_patch(WEB.obj(), patch)["spec"].get(TSC)

        deadline = time.monotonic() + 10
        while not source.synced() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert constraints() is None
        fake.modify(namespace("default", {"topospread.io/inject": "true"}))
        while constraints() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert constraints() == sys_defaults(SEL)
    finally:
        source.stop()
        fake.stop()


NOT_HELD = (
    "spec.topologySpreadConstraints: default constraints worked out without the selector "
    "of the pod's ReplicaSet 'web-7c9': the cluster state does not hold it (yet)"
)
RS_POD = make_pod().name("web-7c9-x").labels({"app": "web", "pod-template-hash": "7c9"}) \
    .owner("ReplicaSet", "web-7c9").obj()


@pytest.mark.parametrize(
    ("cluster", "pod", "expected", "warnings"),
    [
        ([RS_WEB], RS_POD, sys_defaults({"matchLabels": {"app": "web",
                                                         "pod-template-hash": "7c9"}}), []),
        ([], RS_POD, None, [NOT_HELD]),
        (SVC, RS_POD, sys_defaults(SEL), [NOT_HELD]),
        ([], make_pod().name("batch-x").label("app", "web").owner("Job", "batch").obj(),
         None, []),
    ],
    ids=["held", "not held, nothing else selects", "not held, a Service selects",
         "a Job is not read"],
)
def test_a_controller_the_state_does_not_hold_is_named_in_a_warning(
    cluster: list[RawObj], pod: RawObj, expected: Any, warnings: list[str]
) -> None:
    """DefaultSelector reads the pod's ReplicaSet: when the state lacks it, the defaults
    (if any) come from the rest, and the warning says whose selector is missing."""
    mutated, got = mutate(cluster, pod)
    assert mutated["spec"].get(TSC) == expected
    assert got == warnings


def _live_mutate(fake: Any, pod: RawObj, release_after: float | None) -> tuple[Any, list[str]]:
    """/mutate through a LiveSource whose ReplicaSet watch is held back: released after
    `release_after` seconds (never when None)."""
    import threading
    import time

    from kubernetes.client import Configuration

    from webhook.cluster.informer import LiveSource

    source = LiveSource(configuration=Configuration(host=fake.url), watch_timeout=30,
                        backoff_initial=0.01, backoff_cap=0.05)
    try:
        for obj in [*NODES, *SVC]:
            fake.add(obj)
        app = create_app(Settings(), source=source)
        deadline = time.monotonic() + 10
        while not source.synced() and time.monotonic() < deadline:
            time.sleep(0.01)
        fake.hold_watches("ReplicaSet")
        fake.add(RS_WEB)
        if release_after is not None:
            threading.Timer(release_after, fake.release_watches, args=("ReplicaSet",)).start()
        with app.test_client() as client:
            response = client.post("/mutate", json=review(RS_POD)).get_json()["response"]
        patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
        return jsonpatch.apply_patch(RS_POD, patch)["spec"].get(TSC), response.get("warnings", [])
    finally:
        source.stop()


def test_mutate_waits_for_the_replicaset_the_watch_is_still_delivering() -> None:
    """A ReplicaSet's first pod can reach /mutate before the watch delivers the
    ReplicaSet: the webhook waits for it, and the defaults carry its selector."""
    from tests.fake_apiserver import FakeApiServer

    fake = FakeApiServer().start()
    try:
        got, warnings = _live_mutate(fake, RS_POD, release_after=0.3)
    finally:
        fake.stop()
    assert got == sys_defaults({"matchLabels": {"app": "web", "pod-template-hash": "7c9"},
                                "matchExpressions": [{"key": "app", "operator": "In",
                                                      "values": ["web"]}]})
    assert warnings == []


def test_mutate_waits_a_bounded_time_then_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ReplicaSet that does not arrive within CONTROLLER_WAIT_SECONDS: the defaults come
    from the Service alone, and the warning names the ReplicaSet."""
    from tests.fake_apiserver import FakeApiServer
    from webhook.server import app as server_app

    monkeypatch.setattr(server_app, "CONTROLLER_WAIT_SECONDS", 0.2)
    fake = FakeApiServer().start()
    try:
        got, warnings = _live_mutate(fake, RS_POD, release_after=None)
    finally:
        fake.stop()
    assert got == sys_defaults(SEL)
    assert warnings == [NOT_HELD]
