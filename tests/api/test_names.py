"""Label keys, values and selectors: apimachinery's messages, byte limits and paths."""

from __future__ import annotations

import pytest

from tests.builders import expr, selector
from tests.upstream_messages import KEY_REGEX, VALUE_REGEX
from webhook.api.field import JSONValue, go_json, go_quote, render_value
from webhook.api.names import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    regex_error,
    selector_selects,
    validate_label_selector,
)

SUBDOMAIN_REGEX = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
TOO_MANY_SLASHES = (
    "a valid label key " + KEY_REGEX + " with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("app", []),
        ("a" * 63, []),
        ("a" * 64, ["name part must be no more than 63 bytes"]),
        ("é" * 32, ["name part must be no more than 63 bytes", "name part " + KEY_REGEX]),
        ("example.com/" + "a" * 63, []),
        ("a" * 253 + "/b", []),
        ("a" * 254 + "/b", ["prefix part must be no more than 253 bytes"]),
        ("/b", ["prefix part must be non-empty"]),
        ("example.com/", ["name part must be non-empty", "name part " + KEY_REGEX]),
        ("", ["name part must be non-empty", "name part " + KEY_REGEX]),
        ("a/b/c", [TOO_MANY_SLASHES]),
        ("Example.com/abc", ["prefix part " + SUBDOMAIN_REGEX]),
        ("-abc", ["name part " + KEY_REGEX]),
        ("abc\n", ["name part " + KEY_REGEX]),
        ("Uppercase_Is_OK.123", []),
    ],
    ids=[
        "plain",
        "name-63-bytes",
        "name-64-bytes",
        "name-64-bytes-in-32-chars",
        "prefixed-name-63",
        "prefix-253",
        "prefix-254",
        "empty-prefix",
        "empty-name",
        "empty",
        "two-slashes",
        "uppercase-prefix",
        "leading-dash",
        "trailing-newline",
        "uppercase-name",
    ],
)
def test_is_qualified_name(key: str, expected: list[str]) -> None:
    """Each label key yields exactly upstream's messages, lengths in bytes."""
    assert is_qualified_name(key) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 bytes"]),
        ("-a", [VALUE_REGEX]),
        ("a" * 63 + "-", ["must be no more than 63 bytes", VALUE_REGEX]),
        ("my_value.1", []),
    ],
    ids=["empty", "63", "64", "leading-dash", "64-and-bad-end", "underscore-dot"],
)
def test_is_valid_label_value(value: str, expected: list[str]) -> None:
    """Label values: empty is valid, 63 bytes is the limit."""
    assert is_valid_label_value(value) == expected


def test_dns_subdomain_too_long_and_malformed() -> None:
    """A prefix over 253 bytes that is also malformed reports both."""
    assert is_dns1123_subdomain("A" * 254) == [
        "must be no more than 253 bytes",
        SUBDOMAIN_REGEX,
    ]


P = "spec.topologySpreadConstraints[0].labelSelector"


@pytest.mark.parametrize(
    ("sel", "expected"),
    [
        (None, []),
        ({}, []),
        (selector({"app": "web"}), []),
        (
            selector(None, {"key": "app", "operator": "In"}),
            [
                f"{P}.matchExpressions[0].values: Required value: "
                "must be specified when `operator` is 'In' or 'NotIn'"
            ],
        ),
        (
            selector(None, expr("app", "NotIn")),
            [
                f"{P}.matchExpressions[0].values: Required value: "
                "must be specified when `operator` is 'In' or 'NotIn'"
            ],
        ),
        (
            selector(None, expr("app", "Exists", "x")),
            [
                f"{P}.matchExpressions[0].values: Forbidden: "
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            ],
        ),
        (
            selector(None, expr("app", "DoesNotExist", "x")),
            [
                f"{P}.matchExpressions[0].values: Forbidden: "
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            ],
        ),
        (
            selector(None, expr("app", "Equals", "x")),
            [
                f"{P}.matchExpressions[0].operator: "
                'Invalid value: "Equals": not a valid selector operator'
            ],
        ),
        (
            selector(None, expr("a b", "Exists")),
            [f'{P}.matchExpressions[0].key: Invalid value: "a b": name part {KEY_REGEX}'],
        ),
        (
            selector(None, expr("app", "In", "ok", "-x")),
            [f'{P}.matchExpressions[0].values[1]: Invalid value: "-x": {VALUE_REGEX}'],
        ),
        (
            selector({"a b": "-x"}),
            [
                f'{P}.matchLabels: Invalid value: "a b": name part {KEY_REGEX}',
                f'{P}.matchLabels: Invalid value: "-x": {VALUE_REGEX}',
            ],
        ),
        (
            {"matchExpressions": [{"key": "", "operator": "Bad"}]},
            [
                f"{P}.matchExpressions[0].operator: "
                'Invalid value: "Bad": not a valid selector operator',
                f'{P}.matchExpressions[0].key: Invalid value: "": name part must be non-empty',
                f'{P}.matchExpressions[0].key: Invalid value: "": name part {KEY_REGEX}',
            ],
        ),
    ],
    ids=[
        "nil",
        "empty",
        "match-labels",
        "in-without-values",
        "notin-empty-values",
        "exists-with-values",
        "doesnotexist-with-values",
        "unknown-operator",
        "bad-key",
        "bad-value",
        "match-labels-bad-key-and-value",
        "operator-before-key",
    ],
)
def test_validate_label_selector(sel: object, expected: list[str]) -> None:
    """ValidateLabelSelector: order, paths and messages as upstream."""
    assert [e.error() for e in validate_label_selector(sel, P)] == expected


@pytest.mark.parametrize(
    ("sel", "expected"),
    [
        ([1], [f"{P}: Invalid value: [1]: must be an object"]),
        ({"matchLabels": ["a"]}, [f'{P}.matchLabels: Invalid value: ["a"]: must be an object']),
        ({"matchLabels": {"a": 1}}, [f"{P}.matchLabels: Invalid value: 1: must be a string"]),
        ({"matchLabels": {"a": None}}, []),
        (
            {"matchExpressions": {"key": "a"}},
            [f'{P}.matchExpressions: Invalid value: {{"key":"a"}}: must be a list'],
        ),
        (
            {"matchExpressions": ["x"]},
            [f'{P}.matchExpressions[0]: Invalid value: "x": must be an object'],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            [f'{P}.matchExpressions[0].values: Invalid value: "x": must be a list'],
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": [1, None]}]},
            [
                f"{P}.matchExpressions[0].values[0]: Invalid value: 1: must be a string",
            ],
        ),
        (
            {"matchExpressions": [{"key": 7, "operator": 3}]},
            [
                f"{P}.matchExpressions[0].operator: Invalid value: 3: must be a string",
                f"{P}.matchExpressions[0].key: Invalid value: 7: must be a string",
            ],
        ),
    ],
    ids=[
        "selector-list",
        "match-labels-list",
        "label-value-int",
        "label-value-null-is-empty",
        "expressions-object",
        "expression-string",
        "values-string",
        "values-int-and-null",
        "key-and-operator-ints",
    ],
)
def test_selector_wrong_types(sel: object, expected: list[str]) -> None:
    """Wrong JSON types are Invalid errors, never exceptions; null reads as Go's zero value."""
    assert [e.error() for e in validate_label_selector(sel, P)] == expected


def test_operator_rendering_before_v134() -> None:
    """Before v1.34 a named string type renders with %#v (Go quoting), not json.Marshal."""
    sel = selector(None, expr("app", "<x>", "v"))
    newest = validate_label_selector(sel, P)[0].error()
    older = validate_label_selector(sel, P, json_typed=False)[0].error()
    assert newest.endswith('Invalid value: "\\u003cx\\u003e": not a valid selector operator')
    assert older.endswith('Invalid value: "<x>": not a valid selector operator')


def test_selector_causes() -> None:
    """Each error carries the cause reason kube-apiserver puts in StatusCause."""
    sel = selector(None, expr("app", "In"), expr("app", "Exists", "x"), expr("a b", "Bad"))
    assert [e.cause()["reason"] for e in validate_label_selector(sel, P)] == [
        "FieldValueRequired",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueInvalid",
    ]


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('q"\\', '"q\\"\\\\"'),
        ("\x01\x7f", '"\\x01\\x7f"'),
        ("\n\t", '"\\n\\t"'),
        ("é\u00a0", '"é\\u00a0"'),
        ("\U0001f600", '"\U0001f600"'),
        ("\ud800", '"\ufffd"'),
    ],
    ids=[
        "plain",
        "quote-backslash",
        "control",
        "short-escapes",
        "nbsp-not-printable",
        "emoji",
        "lone-surrogate",
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    """Go's strconv.Quote: printable runes raw, others escaped."""
    assert go_quote(text) == quoted


def test_go_json_and_render_value() -> None:
    """json.Marshal escapes HTML characters and sorts map keys; %v for numbers and bools."""
    assert go_json({"b": "<&>", "a": [1, True, None]}) == (
        '{"a":[1,true,null],"b":"\\u003c\\u0026\\u003e"}'
    )
    assert render_value(JSONValue("Foo")) == '"Foo"'
    assert render_value(["a", "b"]) == '["a","b"]'
    assert render_value(-1) == "-1"
    assert render_value(False) == "false"
    assert render_value(None) == "null"


@pytest.mark.parametrize(
    ("sel", "labels", "selects"),
    [
        (selector({"app": "web"}), {"app": "web", "x": "y"}, True),
        (selector({"app": "web"}), {"app": "db"}, False),
        (selector(None, expr("app", "In", "web", "api")), {"app": "api"}, True),
        (selector(None, expr("app", "NotIn", "web")), {}, True),
        (selector(None, expr("app", "NotIn", "web")), {"app": "web"}, False),
        (selector(None, expr("app", "Exists")), {}, False),
        (selector(None, expr("app", "DoesNotExist")), {"app": ""}, False),
        ({}, {}, True),
    ],
    ids=[
        "labels",
        "labels-miss",
        "in",
        "notin-absent",
        "notin-hit",
        "exists-miss",
        "dne-hit",
        "empty",
    ],
)
def test_selector_selects(sel: dict[str, object], labels: dict[str, str], selects: bool) -> None:
    """LabelSelectorAsSelector semantics on a valid selector."""
    assert selector_selects(sel, labels) is selects


def test_go_json_never_fails() -> None:
    """Too deep or self-referencing values (YAML anchors) render as their shape."""
    deep: list[object] = []
    node = deep
    for _ in range(5000):
        child: list[object] = []
        node.append(child)
        node = child
    looped: dict[str, object] = {}
    looped["self"] = looped
    assert go_json(deep) == "[...]"
    assert go_json(looped) == "{...}"
    assert go_json({1: "a", "b": 2}) == '{"1":"a","b":2}'


@pytest.mark.parametrize(
    ("examples", "want"),
    [
        ((), "msg (regex used for validation is 'x')"),
        (("a",), "msg (e.g. 'a', regex used for validation is 'x')"),
        (("a", "b", "c"), "msg (e.g. 'a',  or 'b',  or 'c', regex used for validation is 'x')"),
    ],
    ids=["no example", "one example", "three: two spaces before each or"],
)
def test_regex_error_joins_examples_as_apimachinery(examples: tuple[str, ...], want: str) -> None:
    """validation.go RegexError: each example followed by ", ", the next after " or "."""
    assert regex_error("msg", "x", *examples) == want
