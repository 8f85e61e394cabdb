"""policy.separateRevisions on /mutate: pod-template-hash added to a Deployment's pods.

Legend: `rs_pod()` is a pod as a Deployment's ReplicaSet creates it (labels app=web and
pod-template-hash=HASH, a controller ownerReference to ReplicaSet web-HASH, no name) with
a DoNotSchedule zone constraint selecting app=web; ON is the option on with a v1.34
API server in mode auto (the API server merges matchLabelKeys itself, so the patch is
this step's alone). Each patch is replayed as kube-apiserver goes on with it
(tests/admission/test_apiserver_replay.py's model) and must be accepted.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.admission.test_apiserver_replay import apiserver_create
from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    RawObj,
    expr,
    make_pod,
    review,
    selector,
    workload,
)
from webhook.admission.context import MutationContext
from webhook.admission.merge import MERGED_KEYS_ANNOTATION
from webhook.admission.mutation import mutate
from webhook.admission.revisions import deployment_pod, separate_revisions
from webhook.cli.main import main
from webhook.config import Settings
from webhook.server.app import create_app

HASH = "7c9f8d6b5"
KEY = "pod-template-hash"
TSC = "/spec/topologySpreadConstraints"
WEB = selector({"app": "web"})
Version = tuple[int, int] | None


def rs_pod(*constraints: RawObj) -> RawObj:
    """A ReplicaSet's pod carrying `constraints` (default: one zone spread of app=web)."""
    return (
        make_pod()
        .generate_name(f"web-{HASH}-")
        .labels({"app": "web", KEY: HASH})
        .owner("ReplicaSet", f"web-{HASH}")
        .constraints(list(constraints) or [spread()])
        .obj()
    )


def spread(when: str = DNS, sel: RawObj | None = WEB, key: str = ZONE, **extra: Any) -> RawObj:
    out: RawObj = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when}
    if sel is not None:
        # A copy: decoded JSON never shares a dict between two constraints.
        out["labelSelector"] = copy.deepcopy(sel)
    out.update(extra)
    return out


def ctx(
    separate: bool = True, mode: str = "auto", version: Version = (1, 34), **kw: Any
) -> MutationContext:
    settings = Settings(separate_revisions=separate, match_label_keys_merge=mode)  # type: ignore[arg-type]
    return MutationContext(settings=settings, server_version=version, namespace="default", **kw)


ON = ctx()


# ---------------------------------------------------------------------------------------
# Which pods: a Deployment's ReplicaSet's


@pytest.mark.parametrize(
    ("name", "edit", "expected"),
    [
        ("a Deployment's ReplicaSet's pod", lambda p: None, True),
        ("no pod-template-hash label", lambda p: p["metadata"]["labels"].pop(KEY), False),
        ("pod-template-hash not a string",
         lambda p: p["metadata"]["labels"].__setitem__(KEY, 7), False),
        ("owner not the controller",
         lambda p: p["metadata"]["ownerReferences"][0].__setitem__("controller", False), False),
        ("controller unset",
         lambda p: p["metadata"]["ownerReferences"][0].pop("controller"), False),
        ("owner a StatefulSet",
         lambda p: p["metadata"]["ownerReferences"][0].__setitem__("kind", "StatefulSet"), False),
        ("a ReplicaSet of another API group",
         lambda p: p["metadata"]["ownerReferences"][0].__setitem__("apiVersion", "example.com/v1"),
         False),
        ("no owner", lambda p: p["metadata"].pop("ownerReferences"), False),
        ("ownerReferences not a list",
         lambda p: p["metadata"].__setitem__("ownerReferences", {"kind": "ReplicaSet"}), False),
        ("labels a list", lambda p: p["metadata"].__setitem__("labels", [KEY]), False),
        ("metadata null", lambda p: p.__setitem__("metadata", None), False),
        ("a null owner reference beside the controller",
         lambda p: p["metadata"]["ownerReferences"].insert(0, None), True),
    ],
)
def test_deployment_pod(name: str, edit: Any, expected: bool) -> None:
    pod = rs_pod()
    edit(pod)
    assert deployment_pod(pod) is expected, name


# ---------------------------------------------------------------------------------------
# Which constraints: one case per rule


CASES: list[tuple[str, list[RawObj], list[RawObj]]] = [
    # (name, constraints, expected patch with ON)
    ("no matchLabelKeys: the key is the list", [spread()],
     [{"op": "add", "path": f"{TSC}/0/matchLabelKeys", "value": [KEY]}]),
    ("other keys: appended after them", [spread(matchLabelKeys=["track"])],
     [{"op": "add", "path": f"{TSC}/0/matchLabelKeys/1", "value": KEY}]),
    ("matchLabelKeys null: the key is the list", [spread(matchLabelKeys=None)],
     [{"op": "replace", "path": f"{TSC}/0/matchLabelKeys", "value": [KEY]}]),
    ("already there", [spread(matchLabelKeys=["track", KEY])], []),
    ("ScheduleAnyway too: every constraint", [spread(SA)],
     [{"op": "add", "path": f"{TSC}/0/matchLabelKeys", "value": [KEY]}]),
    ("empty selector: it counts every revision", [spread(sel={})],
     [{"op": "add", "path": f"{TSC}/0/matchLabelKeys", "value": [KEY]}]),
    ("null selector: matchLabelKeys is forbidden without one", [spread(sel=None)], []),
    ("selector names the key in matchLabels", [spread(sel=selector({"app": "web", KEY: HASH}))],
     []),
    ("selector names the key in an expression",
     [spread(sel=selector({"app": "web"}, expr(KEY, "Exists")))], []),
    ("selector misses the pod: it counts another workload", [spread(sel=selector({"app": "db"}))],
     []),
    ("selector the API rejects: left to validation",
     [spread(sel=selector(None, expr("app", "Equals", "web")))], []),
    ("matchLabelKeys not a list: left to validation", [spread(matchLabelKeys=KEY)], []),
    ("two constraints, only the one lacking it",
     [spread(key=HOSTNAME, matchLabelKeys=[KEY]), spread()],
     [{"op": "add", "path": f"{TSC}/1/matchLabelKeys", "value": [KEY]}]),
]


@pytest.mark.parametrize(
    ("constraints", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_which_constraints_get_the_key(constraints: list[RawObj], expected: list[RawObj]) -> None:
    """The patch adds the key exactly where the rules call for it, and the API server
    (v1.34, merging it itself) finds no error the received pod did not have."""
    pod = rs_pod(*constraints)
    result = mutate(pod, ON)
    assert result.patch == expected
    assert result.warnings == []
    _, before = apiserver_create(copy.deepcopy(pod), [], (1, 34))
    _, after = apiserver_create(pod, result.patch, (1, 34))
    assert after == before


@pytest.mark.parametrize(
    ("name", "pod", "context"),
    [
        ("option off (the default)", rs_pod(), ctx(separate=False)),
        ("a bare pod with the label", make_pod().labels({"app": "web", KEY: HASH})
         .spread(1, ZONE, DNS, WEB).obj(), ON),
        ("a StatefulSet's pod", make_pod().labels({"app": "web", KEY: HASH})
         .owner("StatefulSet", "web").spread(1, ZONE, DNS, WEB).obj(), ON),
        ("an UPDATE: constraints are immutable", rs_pod(),
         ctx(operation="UPDATE", old=rs_pod())),
        ("a Deployment: templates are left to their pods", workload("Deployment", rs_pod()), ON),
        ("no constraints", make_pod().labels({"app": "web", KEY: HASH})
         .owner("ReplicaSet", "web").obj(), ON),
    ],
)
def test_nothing_changes(name: str, pod: RawObj, context: MutationContext) -> None:
    assert mutate(pod, context).patch == [], name


@pytest.mark.parametrize(
    ("case", "edit"),
    [
        ("constraints a dict", lambda p: p["spec"].__setitem__("topologySpreadConstraints", {})),
        ("constraint null", lambda p: p["spec"]["topologySpreadConstraints"].__setitem__(0, None)),
        ("spec null", lambda p: p.__setitem__("spec", None)),
        ("labelSelector a list",
         lambda p: p["spec"]["topologySpreadConstraints"][0].__setitem__("labelSelector", [])),
        ("matchExpressions a dict",
         lambda p: p["spec"]["topologySpreadConstraints"][0]["labelSelector"].__setitem__(
             "matchExpressions", {})),
    ],
)
def test_wrong_types_raise_nothing(case: str, edit: Any) -> None:
    """Malformed shapes are validation's to report: the step leaves them alone."""
    pod = rs_pod()
    edit(pod)
    work = copy.deepcopy(pod)
    assert separate_revisions(work, ON) == []
    assert work == pod, case


def test_second_call_adds_nothing() -> None:
    """Idempotent under reinvocationPolicy IfNeeded, in every form the merge leaves."""
    for version in (None, (1, 33), (1, 34)):
        first = mutate(rs_pod(), ctx(version=version))
        assert first.patch
        assert mutate(first.mutated, ctx(version=version)).patch == [], version


def test_injected_defaults_get_the_key_too() -> None:
    """The step runs after injection: a default constraint is one of the pod's own."""
    from webhook.scheduler.framework.snapshot import Snapshot

    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {ZONE: "a", HOSTNAME: "n1"}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web",
               "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    pod = make_pod().generate_name("web-").labels({"app": "web", KEY: HASH}).owner(
        "ReplicaSet", f"web-{HASH}").obj()
    snapshot = Snapshot.from_objects([node, service])
    result = mutate(pod, ctx(snapshot=snapshot))
    constraints = result.mutated["spec"]["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in constraints] == [HOSTNAME, ZONE]
    assert [c["labelSelector"] for c in constraints] == [{"matchLabels": {"app": "web"}}] * 2
    assert [c.get("matchLabelKeys") for c in constraints] == [[KEY], [KEY]]


# ---------------------------------------------------------------------------------------
# Through the merge mode in force, replayed against the API server's next steps

# mode -> version -> how the key ends up separating revisions once stored:
#   "apiserver": in matchLabelKeys, merged by a v1.34+ API server;
#   "moved":     merged by the webhook, moved out of matchLabelKeys and recorded;
#   "both":      merged by the webhook, kept in matchLabelKeys (no API server merges after);
#   "scheduler": in matchLabelKeys, applied by a pre-1.34 kube-scheduler (or, version
#                unknown, by whichever merges it);
#   "dropped":   the guard drops the patch (webhook mode on v1.34+ merges twice).
ENDS: dict[str, dict[Version, str]] = {
    "auto": {None: "both", (1, 33): "moved", (1, 34): "apiserver", (1, 35): "apiserver"},
    "webhook": {None: "both", (1, 33): "moved", (1, 34): "dropped", (1, 35): "dropped"},
    "apiserver": {None: "scheduler", (1, 33): "scheduler", (1, 34): "apiserver",
                  (1, 35): "apiserver"},
}


@pytest.mark.parametrize(
    ("mode", "version"),
    [pytest.param(m, v, id=f"{m}-{v or 'none'}") for m in ENDS for v in ENDS[m]],
)
def test_the_api_server_accepts_the_pod_and_selects_its_revision_once(
    mode: str, version: Version
) -> None:
    pod = rs_pod(spread(), spread(SA, key=HOSTNAME, matchLabelKeys=["track"]))
    result = mutate(copy.deepcopy(pod), ctx(mode=mode, version=version))
    stored, errors = apiserver_create(pod, result.patch, version)
    assert errors == []
    end = ENDS[mode][version]
    for c in stored["spec"]["topologySpreadConstraints"]:
        in_selector = [
            e for e in c["labelSelector"].get("matchExpressions", []) if e["key"] == KEY
        ]
        in_keys = KEY in (c.get("matchLabelKeys") or [])
        if end == "dropped":
            assert (in_selector, in_keys) == ([], False)
        elif end == "scheduler":
            assert (in_selector, in_keys) == ([], True)
        else:
            assert in_selector == [{"key": KEY, "operator": "In", "values": [HASH]}]
            assert in_keys is (end != "moved")
    annotations = stored["metadata"].get("annotations", {})
    if end == "moved":
        assert json.loads(annotations[MERGED_KEYS_ANNOTATION]) == {"0": [KEY], "1": [KEY]}
    else:
        assert MERGED_KEYS_ANNOTATION not in annotations
    if end == "dropped":
        assert len(result.warnings) == 1
        assert "exists in both matchLabelKeys and labelSelector" in result.warnings[0]


# ---------------------------------------------------------------------------------------
# The webhook and the CLI read the same config


def test_mutate_endpoint_follows_the_policy() -> None:
    """/mutate: a JSONPatch adding the key with the policy on, no patch with it off."""
    pod = rs_pod()
    for separate, expected in ((True, [{"op": "add", "path": f"{TSC}/0/matchLabelKeys",
                                        "value": [KEY]}]), (False, [])):
        app = create_app(Settings(separate_revisions=separate))
        with app.test_client() as client:
            response = client.post("/mutate", json=review(pod)).get_json()["response"]
        assert response["allowed"] is True
        patch = json.loads(base64.b64decode(response["patch"])) if "patch" in response else []
        # Version unknown (no cluster): the merge step appends the requirement as well.
        assert [op for op in patch if "matchLabelKeys" in op["path"]] == expected
        mutated = jsonpatch.apply_patch(pod, patch)
        assert (KEY in (mutated["spec"]["topologySpreadConstraints"][0].get("matchLabelKeys")
                        or [])) is separate


def test_cli_mutate_follows_the_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`topospread mutate --config` with policy.separateRevisions adds the key, for a
    v1.34 API server left to merge it."""
    config = tmp_path / "config.yaml"
    config.write_text("policy:\n  separateRevisions: true\n", encoding="utf-8")
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump(rs_pod()), encoding="utf-8")
    code = main(["mutate", "--config", str(config), "--server-version", "1.34", str(pods)])
    out = capsys.readouterr().out
    assert code == 0
    [doc] = list(yaml.safe_load_all(out))
    assert doc["spec"]["topologySpreadConstraints"] == [spread(matchLabelKeys=[KEY])]
    code = main(["mutate", "--server-version", "1.34", str(pods)])
    [doc] = list(yaml.safe_load_all(capsys.readouterr().out))
    assert doc["spec"]["topologySpreadConstraints"] == [spread()]


def test_validate_leaves_out_the_advice_the_policy_makes_moot() -> None:
    """/validate on a Deployment: revisions-counted-together unless the policy is on."""
    template = make_pod().label("app", "web").constraints([spread(nodeTaintsPolicy="Honor")])
    obj = workload("Deployment", template.obj(), name="web")
    for separate, expected in ((False, 1), (True, 0)):
        app = create_app(Settings(separate_revisions=separate))
        with app.test_client() as client:
            response = client.post("/validate", json=review(obj)).get_json()["response"]
        warnings = [w for w in response.get("warnings", []) if "pod-template-hash" in w]
        assert len(warnings) == expected
