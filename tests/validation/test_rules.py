"""kube-apiserver's topologySpreadConstraints rules: one case per rule and per boundary.

Expected strings are written by hand from pkg/apis/core/validation/validation.go
(validateTopologySpreadConstraints and the functions it calls). Legend:
P = "spec.topologySpreadConstraints"; ZONE/DNS/SA as in tests/builders.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests import paths
from tests.builders import (
    DNS,
    HOSTNAME,
    SA,
    ZONE,
    constrained_pod,
    constraint,
    exists,
    expr,
    make_pod,
    selector,
    workload,
)
from tests.upstream_messages import KEY_REGEX, VALUE_REGEX
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.config.validation import validate_spread_args
from webhook.validation.advice import object_warnings
from webhook.validation.rules import validate_constraints, validate_object

P = "spec.topologySpreadConstraints"
WEB = selector({"app": "web"})
WHEN_VALUES = 'supported values: "DoNotSchedule", "ScheduleAnyway"'
POLICIES = 'supported values: "Honor", "Ignore"'
NO_SELECTOR = "Forbidden: must not be specified when labelSelector is not set"
BOTH = "exists in both matchLabelKeys and labelSelector"


def errors(obj: dict[str, Any], **kw: Any) -> list[str]:
    return [e.error() for e in validate_object(obj, **kw)]


# (id, constraints, pod labels, expected errors) for a Pod CREATE on the newest API server.
CASES: list[tuple[str, list[dict[str, Any]], dict[str, str] | None, list[str]]] = [
    ("valid", [constraint(1, ZONE, DNS, WEB)], None, []),
    ("maxSkew-1-boundary", [constraint(1, ZONE, DNS, WEB)], None, []),
    (
        "maxSkew-0",
        [constraint(0, ZONE, DNS, WEB)],
        None,
        [f"{P}[0].maxSkew: Invalid value: 0: must be greater than zero"],
    ),
    (
        "maxSkew-negative",
        [constraint(-1, ZONE, DNS, WEB)],
        None,
        [f"{P}[0].maxSkew: Invalid value: -1: must be greater than zero"],
    ),
    (
        "maxSkew-absent-is-zero",
        [{"topologyKey": ZONE, "whenUnsatisfiable": DNS, "labelSelector": WEB}],
        None,
        [f"{P}[0].maxSkew: Invalid value: 0: must be greater than zero"],
    ),
    (
        "topologyKey-empty",
        [constraint(1, "", DNS, WEB)],
        None,
        [f"{P}[0].topologyKey: Required value: can not be empty"],
    ),
    (
        "topologyKey-absent",
        [{"maxSkew": 1, "whenUnsatisfiable": DNS, "labelSelector": WEB}],
        None,
        [f"{P}[0].topologyKey: Required value: can not be empty"],
    ),
    # kube-apiserver checks only that a pod's topologyKey is non-empty, not its format.
    ("topologyKey-format-not-checked", [constraint(1, "not a key!", DNS, WEB)], None, []),
    (
        "whenUnsatisfiable-unknown",
        [constraint(1, ZONE, "Sometimes", WEB)],
        None,
        [f'{P}[0].whenUnsatisfiable: Unsupported value: "Sometimes": {WHEN_VALUES}'],
    ),
    (
        "whenUnsatisfiable-absent",
        [{"maxSkew": 1, "topologyKey": ZONE, "labelSelector": WEB}],
        None,
        [f'{P}[0].whenUnsatisfiable: Unsupported value: "": {WHEN_VALUES}'],
    ),
    (
        "duplicate-pair",
        [constraint(1, ZONE, DNS, WEB), constraint(2, ZONE, DNS, WEB)],
        None,
        [
            f"{P}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "
            f'"{{{ZONE}, DoNotSchedule}}"'
        ],
    ),
    (
        "duplicate-three-times",
        [constraint(1, ZONE, DNS, WEB)] * 3,
        None,
        [
            f"{P}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "
            f'"{{{ZONE}, DoNotSchedule}}"',
            f"{P}[1].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "
            f'"{{{ZONE}, DoNotSchedule}}"',
        ],
    ),
    (
        "same-key-other-action",
        [constraint(1, ZONE, DNS, WEB), constraint(1, ZONE, SA, WEB)],
        None,
        [],
    ),
    (
        "minDomains-0",
        [constraint(1, ZONE, DNS, WEB, minDomains=0)],
        None,
        [f"{P}[0].minDomains: Invalid value: 0: must be greater than zero"],
    ),
    ("minDomains-1", [constraint(1, ZONE, DNS, WEB, minDomains=1)], None, []),
    ("minDomains-null", [constraint(1, ZONE, DNS, WEB, minDomains=None)], None, []),
    (
        "minDomains-with-ScheduleAnyway",
        [constraint(1, ZONE, SA, WEB, minDomains=2)],
        None,
        [
            f"{P}[0].minDomains: Invalid value: 2: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"
        ],
    ),
    (
        "minDomains-0-with-ScheduleAnyway",
        [constraint(1, ZONE, SA, WEB, minDomains=0)],
        None,
        [
            f"{P}[0].minDomains: Invalid value: 0: must be greater than zero",
            f"{P}[0].minDomains: Invalid value: 0: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        ],
    ),
    (
        "nodeAffinityPolicy-unknown",
        [constraint(1, ZONE, DNS, WEB, nodeAffinityPolicy="Always")],
        None,
        [f'{P}[0].nodeAffinityPolicy: Unsupported value: "Always": {POLICIES}'],
    ),
    (
        "nodeTaintsPolicy-unknown",
        [constraint(1, ZONE, DNS, WEB, nodeTaintsPolicy="honor")],
        None,
        [f'{P}[0].nodeTaintsPolicy: Unsupported value: "honor": {POLICIES}'],
    ),
    (
        "policies-valid",
        [constraint(1, ZONE, DNS, WEB, nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor")],
        None,
        [],
    ),
    (
        "matchLabelKeys-without-selector",
        [constraint(1, ZONE, DNS, None, matchLabelKeys=["bad key"])],
        None,
        [f"{P}[0].matchLabelKeys: {NO_SELECTOR}"],
    ),
    (
        "matchLabelKeys-invalid-name",
        [constraint(1, ZONE, DNS, WEB, matchLabelKeys=["bad key"])],
        None,
        [f'{P}[0].matchLabelKeys[0]: Invalid value: "bad key": name part {KEY_REGEX}'],
    ),
    (
        "matchLabelKeys-in-matchLabels-merged",
        [constraint(1, ZONE, DNS, WEB, matchLabelKeys=["app"])],
        None,
        [f'{P}[0][0]: Invalid value: "app": {BOTH}'],
    ),
    (
        "matchLabelKeys-in-matchLabels-label-absent",
        [constraint(1, ZONE, DNS, selector({"tier": "x"}), matchLabelKeys=["tier"])],
        {"app": "web"},
        [],
    ),
    (
        "matchLabelKeys-in-matchExpressions-merged",
        [constraint(1, ZONE, DNS, exists("app"), matchLabelKeys=["app"])],
        None,
        [f'{P}[0][0]: Invalid value: "app": {BOTH}'],
    ),
    (
        "matchLabelKeys-in-matchExpressions-label-absent",
        [constraint(1, ZONE, DNS, exists("tier"), matchLabelKeys=["tier"])],
        None,
        [],
    ),
    (
        "matchLabelKeys-merged-twice",
        [constraint(1, ZONE, DNS, {}, matchLabelKeys=["app", "app"])],
        None,
        [f'{P}[0][1]: Invalid value: "app": {BOTH}'],
    ),
    (
        "matchLabelKeys-merged-once",
        [constraint(1, ZONE, DNS, {}, matchLabelKeys=["app"])],
        None,
        [],
    ),
    (
        "merged-value-is-validated",
        [constraint(1, ZONE, DNS, {}, matchLabelKeys=["app"])],
        {"app": "-web"},
        [
            f"{P}[0].labelSelector.matchExpressions[0].values[0]: "
            f'Invalid value: "-web": {VALUE_REGEX}'
        ],
    ),
    ("labelSelector-null", [constraint(1, ZONE, DNS, None)], None, []),
    (
        "labelSelector-invalid",
        [constraint(1, ZONE, DNS, selector(None, expr("app", "In")))],
        None,
        [
            f"{P}[0].labelSelector.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'"
        ],
    ),
    (
        "order-within-a-constraint",
        [
            constraint(
                0,
                "",
                "x",
                selector({"a b": "v"}),
                minDomains=0,
                nodeAffinityPolicy="p",
                nodeTaintsPolicy="q",
                matchLabelKeys=["-k"],
            )
        ],
        None,
        [
            f"{P}[0].maxSkew: Invalid value: 0: must be greater than zero",
            f"{P}[0].topologyKey: Required value: can not be empty",
            f'{P}[0].whenUnsatisfiable: Unsupported value: "x": {WHEN_VALUES}',
            f"{P}[0].minDomains: Invalid value: 0: must be greater than zero",
            f"{P}[0].minDomains: Invalid value: 0: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not x",
            f'{P}[0].nodeAffinityPolicy: Unsupported value: "p": {POLICIES}',
            f'{P}[0].nodeTaintsPolicy: Unsupported value: "q": {POLICIES}',
            f'{P}[0].matchLabelKeys[0]: Invalid value: "-k": name part {KEY_REGEX}',
            f'{P}[0].labelSelector.matchLabels: Invalid value: "a b": name part {KEY_REGEX}',
        ],
    ),
    ("no-constraints", [], None, []),
]


@pytest.mark.parametrize(
    ("constraints", "labels", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_pod_create_newest(
    constraints: list[dict[str, Any]], labels: dict[str, str] | None, expected: list[str]
) -> None:
    """Each rule of the newest kube-apiserver on a created Pod."""
    assert errors(constrained_pod(*constraints, labels=labels)) == expected


def test_causes() -> None:
    """Cause reasons follow the field.ErrorType of each rule."""
    obj = constrained_pod(
        constraint(0, "", "x", WEB, minDomains=1),
        constraint(1, "", "x", WEB),
        constraint(1, ZONE, DNS, None, matchLabelKeys=["k"]),
    )
    assert [e.cause()["reason"] for e in validate_object(obj)] == [
        "FieldValueInvalid",
        "FieldValueRequired",
        "FieldValueNotSupported",
        "FieldValueDuplicate",
        "FieldValueInvalid",
        "FieldValueRequired",
        "FieldValueNotSupported",
        "FieldValueForbidden",
    ]


# Before v1.34 there is no merge, and ValidateMatchLabelKeysInTopologySpread checks every
# matchLabelKeys entry against every key of labelSelector, under `.matchLabelKeys[i]`.
LEGACY = [
    (
        "key-in-matchLabels",
        constraint(1, ZONE, DNS, WEB, matchLabelKeys=["app"]),
        [f'{P}[0].matchLabelKeys[0]: Invalid value: "app": {BOTH}'],
    ),
    (
        "key-in-matchExpressions-label-absent",
        constraint(1, ZONE, DNS, exists("tier"), matchLabelKeys=["tier"]),
        [f'{P}[0].matchLabelKeys[0]: Invalid value: "tier": {BOTH}'],
    ),
    ("key-twice-not-checked", constraint(1, ZONE, DNS, {}, matchLabelKeys=["app", "app"]), []),
    (
        "no-selector-names-still-checked",
        constraint(1, ZONE, DNS, None, matchLabelKeys=["bad key"]),
        [
            f"{P}[0].matchLabelKeys: {NO_SELECTOR}",
            f'{P}[0].matchLabelKeys[0]: Invalid value: "bad key": name part {KEY_REGEX}',
        ],
    ),
    (
        "named-type-rendered-with-go-quoting",
        constraint(1, ZONE, "<x>", WEB),
        [f'{P}[0].whenUnsatisfiable: Unsupported value: "<x>": {WHEN_VALUES}'],
    ),
]


@pytest.mark.parametrize(("c", "expected"), [c[1:] for c in LEGACY], ids=[c[0] for c in LEGACY])
def test_pod_create_v133(c: dict[str, Any], expected: list[str]) -> None:
    """A v1.33 kube-apiserver: no merge, legacy matchLabelKeys validation."""
    assert errors(constrained_pod(c), server_version=(1, 33)) == expected


def test_named_type_rendered_as_json_since_v134() -> None:
    """Since v1.34 a named string type goes through json.Marshal (HTML characters escaped)."""
    assert errors(constrained_pod(constraint(1, ZONE, "<x>", WEB)), server_version=(1, 34)) == [
        f'{P}[0].whenUnsatisfiable: Unsupported value: "\\u003cx\\u003e": {WHEN_VALUES}'
    ]


def test_template_is_not_merged() -> None:
    """A Deployment's template is validated without the merge: v1.34 accepts, v1.33 rejects."""
    obj = workload(
        "Deployment", constrained_pod(constraint(1, ZONE, DNS, WEB, matchLabelKeys=["app"]))
    )
    assert errors(obj) == []
    assert errors(obj, server_version=(1, 33)) == [
        "spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[0]: "
        f'Invalid value: "app": {BOTH}'
    ]


def test_update_is_not_merged() -> None:
    """A Pod UPDATE is validated as stored: the create-time merge does not run again."""
    stored = constrained_pod(
        constraint(1, ZONE, DNS, selector(None, expr("app", "In", "web")), matchLabelKeys=["app"])
    )
    assert errors(stored, old=stored) == []


def test_update_old_pod_failing_new_rules_keeps_legacy_rules() -> None:
    """OldPodViolatesMatchLabelKeysValidation: the legacy function validates the update."""
    twice = selector(None, expr("app", "In", "web"), expr("app", "In", "web"))
    stored = constrained_pod(constraint(1, ZONE, DNS, twice, matchLabelKeys=["app"]))
    assert errors(stored, old=stored) == [f'{P}[0].matchLabelKeys[0]: Invalid value: "app": {BOTH}']
    assert errors(stored, server_version=(1, 36)) == [
        f'{P}[0][0]: Invalid value: "app": {BOTH}'
    ] * 2
    assert errors(stored) == [f'{P}[0][0]: Invalid value: "app": {BOTH}']


def test_errors_that_read_the_same_are_reported_once_from_v1_37() -> None:
    """v1.37 filters handwritten errors through ErrorList.Filter (declarative validation),
    which keeps the first of the errors that render the same text; v1.36 reports each."""
    dup = constrained_pod(
        constraint(1, ZONE, DNS, selector(None, expr("version", "NotIn", "v0")),
                   matchLabelKeys=["version", "version"]),
        labels={"app": "web", "version": "v1"},
    )
    once = [f'{P}[0][1]: Invalid value: "version": {BOTH}']
    assert errors(dup, server_version=(1, 37)) == once
    assert errors(dup) == once
    assert errors(dup, server_version=(1, 36)) == once * 2


def test_update_old_invalid_selector_is_allowed() -> None:
    """AllowInvalidTopologySpreadConstraintLabelSelector: an old invalid selector is kept."""
    bad = constrained_pod(constraint(1, ZONE, DNS, selector({"a b": "x"})))
    assert errors(bad) == [
        f'{P}[0].labelSelector.matchLabels: Invalid value: "a b": name part {KEY_REGEX}'
    ]
    assert errors(bad, old=bad) == []
    assert errors(bad, old=constrained_pod(constraint(1, ZONE, DNS, WEB))) == errors(bad)


KINDS = [
    ("Pod", "spec"),
    ("Deployment", "spec.template.spec"),
    ("ReplicaSet", "spec.template.spec"),
    ("StatefulSet", "spec.template.spec"),
    ("DaemonSet", "spec.template.spec"),
    ("Job", "spec.template.spec"),
    ("ReplicationController", "spec.template.spec"),
    ("PodTemplate", "template.spec"),
    ("CronJob", "spec.jobTemplate.spec.template.spec"),
]


@pytest.mark.parametrize(("kind", "spec_path"), KINDS, ids=[k[0] for k in KINDS])
def test_paths_follow_the_object(kind: str, spec_path: str) -> None:
    """Paths start at the pod spec inside each kind."""
    base = constrained_pod(
        constraint(0, HOSTNAME, DNS, WEB), constraint(1, "", DNS, None, matchLabelKeys=["k"])
    )
    obj = base if kind == "Pod" else workload(kind, base)
    p = spec_path + ".topologySpreadConstraints"
    assert errors(obj) == [
        f"{p}[0].maxSkew: Invalid value: 0: must be greater than zero",
        f"{p}[1].topologyKey: Required value: can not be empty",
        f"{p}[1].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
    ]


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Service", "spec": {"topologySpreadConstraints": [{}]}},
        {"kind": 3},
        {},
        [],
        None,
        "x",
    ],
    ids=["other-kind", "kind-int", "empty", "list", "none", "string"],
)
def test_not_ours(obj: Any) -> None:
    """Unknown kinds and malformed objects have no topology spread rules."""
    assert validate_object(obj) == []


WRONG_TYPES = [
    (
        "maxSkew-string",
        {"maxSkew": "1"},
        [f'{P}[0].maxSkew: Invalid value: "1": must be an integer'],
    ),
    (
        "maxSkew-float",
        {"maxSkew": 1.5},
        [f"{P}[0].maxSkew: Invalid value: 1.5: must be an integer"],
    ),
    (
        "maxSkew-bool",
        {"maxSkew": True},
        [f"{P}[0].maxSkew: Invalid value: true: must be an integer"],
    ),
    (
        "maxSkew-over-int32",
        {"maxSkew": 2**31},
        [f"{P}[0].maxSkew: Invalid value: 2147483648: must fit in a 32-bit integer"],
    ),
    (
        "maxSkew-null",
        {"maxSkew": None},
        [f"{P}[0].maxSkew: Invalid value: 0: must be greater than zero"],
    ),
    (
        "topologyKey-int",
        {"topologyKey": 5},
        [f"{P}[0].topologyKey: Invalid value: 5: must be a string"],
    ),
    (
        "whenUnsatisfiable-list",
        {"whenUnsatisfiable": ["DoNotSchedule"]},
        [f'{P}[0].whenUnsatisfiable: Invalid value: ["DoNotSchedule"]: must be a string'],
    ),
    (
        "minDomains-string",
        {"minDomains": "2"},
        [f'{P}[0].minDomains: Invalid value: "2": must be an integer'],
    ),
    (
        "policy-object",
        {"nodeTaintsPolicy": {"a": 1}},
        [f'{P}[0].nodeTaintsPolicy: Invalid value: {{"a":1}}: must be a string'],
    ),
    (
        "matchLabelKeys-string",
        {"matchLabelKeys": "app"},
        [f'{P}[0].matchLabelKeys: Invalid value: "app": must be a list'],
    ),
    (
        "matchLabelKeys-int-item",
        {"matchLabelKeys": [1]},
        [f"{P}[0].matchLabelKeys[0]: Invalid value: 1: must be a string"],
    ),
    (
        "labelSelector-string",
        {"labelSelector": "app=web"},
        [f'{P}[0].labelSelector: Invalid value: "app=web": must be an object'],
    ),
]


@pytest.mark.parametrize(
    ("patch", "expected"), [w[1:] for w in WRONG_TYPES], ids=[w[0] for w in WRONG_TYPES]
)
def test_wrong_types(patch: dict[str, Any], expected: list[str]) -> None:
    """A wrong JSON type is one Invalid error in that field's place; null is Go's zero value."""
    c = constraint(1, ZONE, DNS, WEB)
    c.update(patch)
    assert errors(constrained_pod(c)) == expected


def test_wrong_container_types() -> None:
    """A non-list constraints value or a non-object element is reported, never raised."""
    assert [e.error() for e in validate_constraints({"a": 1}, P)] == [
        f'{P}: Invalid value: {{"a":1}}: must be a list'
    ]
    assert [e.error() for e in validate_constraints(["x", None], P)] == [
        f'{P}[0]: Invalid value: "x": must be an object',
        f"{P}[1].maxSkew: Invalid value: 0: must be greater than zero",
        f"{P}[1].topologyKey: Required value: can not be empty",
        f'{P}[1].whenUnsatisfiable: Unsupported value: "": {WHEN_VALUES}',
    ]
    odd = make_pod().obj()
    odd["metadata"]["labels"] = ["app"]
    odd["spec"]["topologySpreadConstraints"] = [
        constraint(1, ZONE, DNS, {}, matchLabelKeys=["app"])
    ]
    assert errors(odd) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
]
selector_like = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.dictionaries(st.text(max_size=6), json_values, max_size=3) | json_values,
        "matchExpressions": st.lists(
            st.fixed_dictionaries(
                {}, optional={"key": json_values, "operator": json_values, "values": json_values}
            )
            | json_values,
            max_size=3,
        )
        | json_values,
    },
)


@given(
    st.lists(
        st.fixed_dictionaries(
            {}, optional={**{f: json_values for f in FIELDS}, "labelSelector": selector_like}
        )
        | json_values,
        max_size=3,
    ),
    json_values,
    st.sampled_from([None, (1, 33), (1, 34)]),
)
def test_never_raises(constraints: list[Any], labels: Any, version: tuple[int, int] | None) -> None:
    """validate_object never raises on arbitrary JSON-ish values anywhere in a constraint."""
    obj = make_pod().obj()
    obj["metadata"]["labels"] = labels
    obj["spec"]["topologySpreadConstraints"] = constraints
    for old in (None, obj):
        for e in validate_object(obj, old=old, server_version=version):
            assert e.error().startswith(P)
    for kind in ("Deployment", "CronJob"):
        validate_object(workload(kind, obj), server_version=version)


SPREAD_ARGS = [
    ("system-empty", [], "System", []),
    ("list-empty", [], "List", []),
    ("list-valid", [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA}], "List", []),
    (
        "system-with-constraints",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA}],
        "System",
        ['defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
    ),
    (
        "unknown-defaulting",
        [],
        "Auto",
        ['defaultingType: Unsupported value: "Auto": supported values: "System", "List"'],
    ),
    (
        "maxSkew-0",
        [{"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": SA}],
        "List",
        ["defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)"],
    ),
    (
        "topologyKey-empty",
        [{"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": SA}],
        "List",
        ["defaultConstraints[0].topologyKey: Required value: can not be empty"],
    ),
    (
        "topologyKey-invalid",
        [{"maxSkew": 1, "topologyKey": "a b", "whenUnsatisfiable": SA}],
        "List",
        [f'defaultConstraints[0].topologyKey: Invalid value: "a b": name part {KEY_REGEX}'],
    ),
    (
        "whenUnsatisfiable-empty",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": ""}],
        "List",
        ["defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty"],
    ),
    (
        "whenUnsatisfiable-unknown",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Never"}],
        "List",
        [f'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Never": {WHEN_VALUES}'],
    ),
    (
        "selector-forbidden",
        [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": SA, "labelSelector": {}}],
        "List",
        [
            "defaultConstraints[0].labelSelector: Forbidden: "
            "constraint must not define a selector, as they deduced for each pod"
        ],
    ),
    (
        "duplicate-on-later-index",
        [
            {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": DNS},
            {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": DNS},
        ],
        "List",
        ['defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"'],
    ),
]


@pytest.mark.parametrize(
    ("constraints", "defaulting", "expected"),
    [a[1:] for a in SPREAD_ARGS],
    ids=[a[0] for a in SPREAD_ARGS],
)
def test_validate_spread_args(
    constraints: list[dict[str, Any]], defaulting: Any, expected: list[str]
) -> None:
    """kube-scheduler's PodTopologySpreadArgs validation, upstream's strings."""
    args = SpreadArgs(default_constraints=tuple(constraints), defaulting_type=defaulting)
    assert validate_spread_args(args) == expected


DATA = paths.DATA


def _objects(path: Path) -> list[Any]:
    objs: list[Any] = []
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if isinstance(doc, dict) and doc.get("kind") == "List":
            objs.extend(doc.get("items") or [])
        elif doc is not None:
            objs.append(doc)
    return objs


@pytest.mark.parametrize("path", sorted((DATA / "valid").glob("*.yaml")), ids=lambda p: p.stem)
def test_valid_examples(path: Path) -> None:
    """The valid example manifests pass every rule and draw no warning."""
    objs = _objects(path)
    assert objs
    for obj in objs:
        assert errors(obj) == []
        assert object_warnings(obj) == []


@pytest.mark.parametrize("path", sorted((DATA / "invalid").glob("*.yaml")), ids=lambda p: p.stem)
def test_invalid_examples(path: Path) -> None:
    """Each invalid example fails exactly as its `# expect:` lines say."""
    expected = [
        line.removeprefix("# expect: ")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("# expect: ")
    ]
    assert expected
    assert [e for obj in _objects(path) for e in errors(obj)] == expected


def test_public_surface() -> None:
    """The names other modules import from the validation and args modules stay put."""
    import webhook.scheduler.config.validation
    import webhook.validation.advice
    import webhook.validation.rules

    assert sorted(webhook.validation.rules.__all__) == [
        "MERGE_SINCE",
        "validate_constraints",
        "validate_object",
    ]
    assert "object_warnings" in webhook.validation.advice.__all__
    assert "validate_spread_args" in webhook.scheduler.config.validation.__all__


def test_deep_and_looped_values() -> None:
    """A value nested thousands deep, or looped by a YAML anchor, is reported, not raised."""
    deep: list[Any] = []
    node = deep
    for _ in range(5000):
        child: list[Any] = []
        node.append(child)
        node = child
    looped = yaml.safe_load("a: &x [*x]")["a"]
    obj = constrained_pod()
    # Set directly: the builder deep-copies, which these values would defeat.
    obj["spec"]["topologySpreadConstraints"] = [
        constraint(deep, looped, DNS, {"matchLabels": {"a": looped}})
    ]
    assert errors(obj) == [
        f"{P}[0].maxSkew: Invalid value: [...]: must be an integer",
        f"{P}[0].topologyKey: Invalid value: [...]: must be a string",
        f"{P}[0].labelSelector.matchLabels: Invalid value: [...]: must be a string",
    ]
    assert object_warnings(obj) == []
