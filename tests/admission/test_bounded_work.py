"""Work per request stays linear in the number of constraints and matchLabelKeys.

20,000 constraints or 20,000 matchLabelKeys (within the 7 MiB body cap) are answered
with the same result as a handful, in a time that follows the input size. Besides the
answers, cheap counters check that no rule compares every two constraints and that the
merge never scans the requirement list once per key: a return to pairwise work would
show as a wrong count here, and as a visibly slow suite.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.builders import DNS, SA, ZONE, RawObj, constraint, make_pod, review, selector
from webhook.admission.context import MutationContext, ReviewContext
from webhook.admission.handlers import answer_review
from webhook.admission.merge import MERGED_KEYS_ANNOTATION, merge_match_label_keys
from webhook.validation import rules
from webhook.validation.advice import object_warnings
from webhook.validation.rules import validate_constraints

N = 20_000
# Constraints i and i + DISTINCT share topologyKey and whenUnsatisfiable.
DISTINCT = 50
PATH = "spec.topologySpreadConstraints"
WEB = {"matchLabels": {"app": "web"}}


def _constraint(i: int, **extra: Any) -> RawObj:
    return constraint(1, f"example.com/k{i % DISTINCT}", DNS, WEB, **extra)


def _many_constraints() -> RawObj:
    pod = make_pod().name("many").label("app", "web").obj()
    pod["spec"]["topologySpreadConstraints"] = [_constraint(i) for i in range(N)]
    return pod


def _many_keys(extra_keys: list[str] | None = None) -> RawObj:
    keys = [f"key-{i}" for i in range(N)]
    pod = make_pod().name("keys").labels({"app": "web", **{k: "v" for k in keys}}).obj()
    pod["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": DNS,
            "labelSelector": selector({"app": "web"}),
            "matchLabelKeys": keys + (extra_keys or []),
        }
    ]
    return pod


def _duplicate_paths(errs: list[Any]) -> list[str]:
    return [e.field for e in errs if e.type.reason == "FieldValueDuplicate"]


def _answer(obj: RawObj, operation: str) -> RawObj:
    body = json.dumps(review(obj)).encode()
    answer = answer_review(body, operation, ReviewContext())  # type: ignore[arg-type]
    assert answer.status == 200
    response: RawObj = answer.doc["response"]
    return response


# ---------------------------------------------------------------------------------------
# Duplicate {topologyKey, whenUnsatisfiable}


def test_duplicate_pairs_among_20000_constraints_are_each_reported_once() -> None:
    """Upstream reports a constraint whose pair comes again later: every index but the
    last DISTINCT ones, in order, each once."""
    errs = validate_constraints(_many_constraints()["spec"]["topologySpreadConstraints"], PATH)
    paths = _duplicate_paths(errs)
    assert len(paths) == N - DISTINCT
    assert paths[0] == f"{PATH}[0].{{topologyKey, whenUnsatisfiable}}"
    assert paths[-1] == f"{PATH}[{N - DISTINCT - 1}].{{topologyKey, whenUnsatisfiable}}"
    assert len(errs) == len(paths)


def test_duplicate_check_looks_at_each_constraint_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pairwise comparison would read 20,000 x 20,000 pairs; a linear pass reads each
    constraint's pair at most twice."""
    calls = 0
    pair = rules.unique_pair

    def counted(c: Any) -> Any:
        nonlocal calls
        calls += 1
        return pair(c)

    monkeypatch.setattr(rules, "unique_pair", counted)
    validate_constraints(_many_constraints()["spec"]["topologySpreadConstraints"], PATH)
    assert calls <= 2 * N


@pytest.mark.parametrize(
    ("pairs", "duplicated"),
    [
        # (topologyKey, whenUnsatisfiable) per constraint -> indexes reported.
        ([(ZONE, DNS), (ZONE, DNS)], [0]),
        ([(ZONE, DNS), (ZONE, SA)], []),
        ([(ZONE, DNS), ("h", DNS), (ZONE, DNS), (ZONE, DNS)], [0, 2]),
        ([(ZONE, DNS), (ZONE, 7), (ZONE, DNS)], [0]),
    ],
)
def test_duplicate_pairs_are_reported_on_the_earlier_constraint(
    pairs: list[tuple[Any, Any]], duplicated: list[int]
) -> None:
    """validateTopologySpreadConstraints checks constraint i against constraints[i+1:];
    a pair with a field of the wrong type is never a duplicate."""
    constraints = [
        {"maxSkew": 1, "topologyKey": k, "whenUnsatisfiable": w, "labelSelector": WEB}
        for k, w in pairs
    ]
    paths = _duplicate_paths(validate_constraints(constraints, PATH))
    assert paths == [f"{PATH}[{i}].{{topologyKey, whenUnsatisfiable}}" for i in duplicated]


def test_validate_answers_20000_constraints_with_every_duplicate() -> None:
    response = _answer(_many_constraints(), "validate")
    assert response["allowed"] is False
    causes = response["status"]["details"]["causes"]
    assert len(causes) == N - DISTINCT
    assert {c["reason"] for c in causes} == {"FieldValueDuplicate"}


def test_mutate_answers_20000_constraints_without_a_patch_the_api_server_would_reject() -> None:
    """Merging matchLabelKeys [app] beside matchLabels {app: web} would put app in both."""
    pod = _many_constraints()
    for c in pod["spec"]["topologySpreadConstraints"]:
        c["matchLabelKeys"] = ["app"]
    response = _answer(pod, "mutate")
    assert response["allowed"] is True
    assert "patch" not in response
    assert "topospread left the object unchanged" in response["warnings"][0]


# ---------------------------------------------------------------------------------------
# 20,000 matchLabelKeys


class _CountingList(list):  # type: ignore[type-arg]
    """A list that counts membership tests (each one a scan of the list)."""

    scans = 0

    def __contains__(self, item: object) -> bool:
        _CountingList.scans += 1
        return super().__contains__(item)


def test_merge_of_20000_keys_appends_each_requirement_once_without_scanning() -> None:
    pod = _many_keys(extra_keys=["key-0", "key-1"])  # repeated keys are merged once
    exprs = _CountingList([{"key": "key-5", "operator": "In", "values": ["v"]}])
    pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"] = exprs
    _CountingList.scans = 0
    merge_match_label_keys(pod, MutationContext(server_version=(1, 33)))
    assert _CountingList.scans == 0
    merged = pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchExpressions"]
    assert len(merged) == N
    assert merged[0] == {"key": "key-5", "operator": "In", "values": ["v"]}
    assert merged[1] == {"key": "key-0", "operator": "In", "values": ["v"]}
    assert merged[-1] == {"key": f"key-{N - 1}", "operator": "In", "values": ["v"]}
    # move-keys (API server before v1.34): every key moved out of matchLabelKeys.
    assert "matchLabelKeys" not in pod["spec"]["topologySpreadConstraints"][0]
    record = json.loads(pod["metadata"]["annotations"][MERGED_KEYS_ANNOTATION])
    assert set(record["0"]) == {f"key-{i}" for i in range(N)}
    # Merging again changes nothing.
    again = json.dumps(pod, sort_keys=True)
    merge_match_label_keys(pod, MutationContext(server_version=(1, 33)))
    assert json.dumps(pod, sort_keys=True) == again


def test_mutate_merges_20000_keys_into_one_patch() -> None:
    response = _answer(_many_keys(), "mutate")
    assert response["allowed"] is True
    patch = json.loads(base64.b64decode(response["patch"]))
    assert patch == [
        {
            "op": "add",
            "path": "/spec/topologySpreadConstraints/0/labelSelector/matchExpressions",
            "value": [{"key": f"key-{i}", "operator": "In", "values": ["v"]} for i in range(N)],
        }
    ]


def test_validate_answers_20000_keys_also_in_the_selector() -> None:
    """v1.34 rules on a stored pod: keys merged and also written in matchExpressions
    before are each in both."""
    pod = _many_keys()
    constraint = pod["spec"]["topologySpreadConstraints"][0]
    constraint["labelSelector"]["matchExpressions"] = [
        {"key": f"key-{i}", "operator": "In", "values": ["v"]} for i in range(N)
    ] * 2
    errs = validate_constraints([constraint], PATH, server_version=(1, 34))
    assert len(errs) == N
    assert errs[0].field == f"{PATH}[0][0]"
    assert errs[-1].field == f"{PATH}[0][{N - 1}]"


def test_legacy_rules_flag_each_of_20000_keys_in_the_selector() -> None:
    """Before v1.34: every key also in labelSelector is rejected, checked against a set."""
    pod = _many_keys()
    pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"] = {
        f"key-{i}": "v" for i in range(N)
    }
    errs = validate_constraints(
        pod["spec"]["topologySpreadConstraints"], PATH, server_version=(1, 33)
    )
    assert len(errs) == N
    assert errs[0].field == f"{PATH}[0].matchLabelKeys[0]"


def test_workload_advice_on_20000_keys_also_in_the_selector() -> None:
    """The advice for a template reads the selector's keys once, not once per key."""
    pod = _many_keys()
    sel = pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    sel["matchLabels"] = {f"key-{i}": "v" for i in range(N)}
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": {"metadata": pod["metadata"], "spec": pod["spec"]}},
    }
    warnings = object_warnings(deploy)
    both = [w for w in warnings if "is also in labelSelector" in w]
    assert len(both) == N
    assert both[0].startswith("spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[0]")
