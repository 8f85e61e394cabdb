"""Validation, side by side: generated pods with good and bad spreads sent to the real
kube-apiserver (in kube-system, which the webhook's namespaceSelector leaves out, as a
server-side dry run) and to `topospread check` on the same objects. Accept or deny, and
every cause's field path and message, must be equal."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import ControlPlane
from tests.e2e.report import record
from tests.e2e.webhook import topospread

CASES = int(os.environ.get("TOPOSPREAD_E2E_VALIDATION_CASES", "1000"))
ABSENT = object()

# Per field: the valid choices first, then the invalid ones. A constraint takes valid
# values except for the few fields a case corrupts, so that most cases carry one or two
# errors (each rule met on its own) and some none.
FIELDS: dict[str, tuple[list[Any], list[Any]]] = {
    "maxSkew": ([1, 2, 5], [0, -1]),
    "topologyKey": (["topology.kubernetes.io/zone", "kubernetes.io/hostname",
                     "example.com/rack"], ["", "bad key", "a/b/c", "-x", "x" * 64]),
    "whenUnsatisfiable": (["DoNotSchedule", "ScheduleAnyway"], ["", "Never"]),
    "minDomains": ([ABSENT, 1, 3], [0, -2]),
    "labelSelector": (
        [{"matchLabels": {"app": "web"}},
         {"matchExpressions": [{"key": "version", "operator": "NotIn", "values": ["v0"]}]},
         {"matchExpressions": [{"key": "app", "operator": "Exists"}]}],
        [ABSENT,
         {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
         {"matchLabels": {"bad key!": "x"}},
         {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
         {"matchExpressions": [{"key": "app", "operator": "Sometimes", "values": ["x"]}]}],
    ),
    "matchLabelKeys": ([ABSENT, ["version"], ["pod-template-hash"], ["missing"]],
                       [["app"], ["version", "version"], ["bad key!"], ["version", "app"]]),
    "nodeAffinityPolicy": ([ABSENT, "Honor", "Ignore"], ["Sometimes", ""]),
    "nodeTaintsPolicy": ([ABSENT, "Honor", "Ignore"], ["Sometimes", ""]),
}


def constraint(rng: random.Random) -> dict[str, Any]:
    bad = set(rng.sample(sorted(FIELDS), rng.choice([0, 1, 1, 1, 2, 3])))
    fields = {name: rng.choice(choices[1] if name in bad else choices[0])
              for name, choices in FIELDS.items()}
    if "minDomains" not in bad and fields["whenUnsatisfiable"] == "ScheduleAnyway":
        fields["minDomains"] = ABSENT
    return {k: v for k, v in fields.items() if v is not ABSENT}


def generated(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    spread = [constraint(rng) for _ in range(rng.choice([1, 1, 2, 3]))]
    if len(spread) > 1 and rng.random() < 0.3:
        # A duplicate {topologyKey, whenUnsatisfiable} pair.
        spread[-1] = {**spread[-1], "topologyKey": spread[0]["topologyKey"],
                      "whenUnsatisfiable": spread[0]["whenUnsatisfiable"]}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"case-{seed}", "namespace": "kube-system",
                     "labels": {"app": "web", "version": "v1"}},
        "spec": {"containers": [{"name": "c", "image": "registry.test/web:1"}],
                 "topologySpreadConstraints": spread},
    }


def api_answer(cp: ControlPlane, obj: dict[str, Any]) -> tuple[bool, list[tuple[str, str]]]:
    status, body = cp.api("POST", "/api/v1/namespaces/kube-system/pods?dryRun=All", obj)
    if status == 201:
        return True, []
    assert status == 422, (status, body)
    causes = body.get("details", {}).get("causes", [])
    return False, [(c.get("field", ""), c.get("message", "")) for c in causes]


def test_validation_equals_the_api_servers_on_every_generated_pod(
    cp: ControlPlane, tmp_path: Path
) -> None:
    objs = [generated(seed) for seed in range(CASES)]
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    minor = cp.minor
    ours = json.loads(topospread("check", "-o", "json", "--server-version", minor,
                                 str(path)).stdout)
    assert len(ours) == len(objs)
    agree, disagree = 0, []
    accepted = 0
    for obj, mine in zip(objs, ours, strict=True):
        theirs_ok, theirs = api_answer(cp, obj)
        my = (bool(mine["valid"]), [(e["field"], e["message"]) for e in mine["errors"]])
        accepted += theirs_ok
        if my == (theirs_ok, theirs):
            agree += 1
        else:
            disagree.append({"pod": obj["spec"], "apiserver": theirs, "topospread": my[1]})
    record("validation", minor, {"cases": len(objs), "agree": agree,
                                 "disagree": len(disagree), "accepted": accepted},
           disagree)
    print(f"\nvalidation side by side (v{minor}): {len(objs)} cases, {agree} agree, "
          f"{len(disagree)} disagree ({accepted} accepted by the API server)")
    assert not disagree, json.dumps(disagree[:3], indent=1)
