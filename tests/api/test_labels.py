"""Label selectors, node affinity and tolerations, against upstream's matching rules.

Expected values follow apimachinery labels.Requirement.Matches, component-helpers
nodeaffinity and core/v1 Toleration.ToleratesTaint, worked out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.builders import ZONE, exists, expr, make_node, make_pod, selector
from webhook.api.labels import (
    compile_selector,
    find_untolerated_taint,
    is_label_value,
    is_qualified_name,
    node_matches_pod_affinity,
    parse_selector,
    selector_matches,
    taint_tolerated,
    toleration_tolerates,
)

APP = {"app": "web"}

# (case, selector, labels, matches)
SELECTOR_CASES: list[tuple[str, Any, Any, bool]] = [
    ("nil selector matches nothing", None, APP, False),
    ("nil selector matches nothing, even no labels", None, {}, False),
    ("empty selector matches everything", {}, APP, True),
    ("empty selector matches a pod without labels", {}, None, True),
    (
        "empty matchLabels and matchExpressions match everything",
        {"matchLabels": {}, "matchExpressions": []},
        APP,
        True,
    ),
    ("matchLabels equal", selector({"app": "web"}), APP, True),
    ("matchLabels other value", selector({"app": "db"}), APP, False),
    ("matchLabels key absent", selector({"tier": "web"}), APP, False),
    ("matchLabels all keys ANDed", selector({"app": "web", "tier": "fe"}), APP, False),
    ("matchLabels empty value needs the key", selector({"app": ""}), {}, False),
    ("matchLabels null value reads as empty string", {"matchLabels": {"a": None}}, {"a": ""}, True),
    ("In value listed", selector(None, expr("app", "In", "db", "web")), APP, True),
    ("In value not listed", selector(None, expr("app", "In", "db")), APP, False),
    ("In key absent", selector(None, expr("tier", "In", "fe")), APP, False),
    ("NotIn key absent matches", selector(None, expr("tier", "NotIn", "fe")), APP, True),
    ("NotIn value listed", selector(None, expr("app", "NotIn", "web")), APP, False),
    ("NotIn value not listed", selector(None, expr("app", "NotIn", "db")), APP, True),
    ("Exists key present", exists("app"), APP, True),
    ("Exists key present with empty value", exists("app"), {"app": ""}, True),
    ("Exists key absent", exists("tier"), APP, False),
    ("DoesNotExist key absent", selector(None, expr("tier", "DoesNotExist")), APP, True),
    ("DoesNotExist key present", selector(None, expr("app", "DoesNotExist")), APP, False),
    ("DoesNotExist on no labels", selector(None, expr("app", "DoesNotExist")), None, True),
    (
        "matchLabels AND expressions, both hold",
        selector({"app": "web"}, expr("tier", "DoesNotExist")),
        APP,
        True,
    ),
    (
        "matchLabels AND expressions, one fails",
        selector({"app": "web"}, expr("app", "NotIn", "web")),
        APP,
        False,
    ),
    ("prefixed key", selector({"example.com/app": "web"}), {"example.com/app": "web"}, True),
    # Malformed selectors match nothing, whatever the labels.
    ("malformed: unknown operator", selector(None, expr("app", "Equals", "web")), APP, False),
    (
        "malformed: Gt is not a label selector operator",
        selector(None, expr("app", "Gt", "1")),
        {"app": "2"},
        False,
    ),
    ("malformed: In without values", selector(None, expr("app", "In")), APP, False),
    ("malformed: NotIn without values", selector(None, expr("tier", "NotIn")), APP, False),
    ("malformed: Exists with values", selector(None, expr("app", "Exists", "web")), APP, False),
    ("malformed: invalid key", selector({"bad key": "web"}), {"bad key": "web"}, False),
    ("malformed: empty key", selector(None, {"operator": "Exists"}), APP, False),
    ("malformed: invalid value", selector({"app": "-web"}), {"app": "-web"}, False),
    ("malformed: value too long", selector({"app": "a" * 64}), {"app": "a" * 64}, False),
    ("malformed: matchLabels is a list", {"matchLabels": ["app"]}, APP, False),
    ("malformed: selector is a string", "app=web", APP, False),
    ("malformed: expression is a string", {"matchExpressions": ["app in (web)"]}, APP, False),
    (
        "malformed: values not strings",
        {"matchExpressions": [{"key": "app", "operator": "In", "values": [1]}]},
        {"app": "1"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("sel", "labels", "want"), [c[1:] for c in SELECTOR_CASES], ids=[c[0] for c in SELECTOR_CASES]
)
def test_selector_matches(sel: Any, labels: Any, want: bool) -> None:
    """selector_matches follows LabelSelectorAsSelector and Requirement.Matches."""
    assert selector_matches(sel, labels) is want


@pytest.mark.parametrize(
    ("sel", "labels", "want"), [c[1:] for c in SELECTOR_CASES], ids=[c[0] for c in SELECTOR_CASES]
)
def test_compiled_selector_agrees(sel: Any, labels: Any, want: bool) -> None:
    """A compiled selector gives the same answer, and again on reuse."""
    match = compile_selector(sel)
    assert match(labels if labels is not None else {}) is want
    assert match(labels if labels is not None else {}) is want


def test_compiled_selector_reused_over_many_label_sets() -> None:
    """One compiled selector answers for each label set on its own."""
    match = compile_selector(selector({"app": "web"}, expr("tier", "NotIn", "db")))
    got = [match(x) for x in ({"app": "web"}, {"app": "web", "tier": "db"}, {"tier": "fe"})]
    assert got == [True, False, False]


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("app", True),
        ("example.com/app", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("example.com/", False),
        ("/app", False),
        ("a/b/c", False),
        ("Example.com/app", False),
        ("-app", False),
        ("", False),
    ],
)
def test_is_qualified_name(name: str, want: bool) -> None:
    assert is_qualified_name(name) is want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("", True),
        ("web-1", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("web-", False),
        ("we b", False),
    ],
)
def test_is_label_value(value: str, want: bool) -> None:
    assert is_label_value(value) is want


# ---- node affinity ---------------------------------------------------------------------


def with_terms(pod: dict[str, Any], *terms: Any) -> dict[str, Any]:
    """Set required node affinity terms on a pod (raw, as given)."""
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }
    return pod


def term(*exprs: Any, fields: list[Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if exprs:
        out["matchExpressions"] = list(exprs)
    if fields is not None:
        out["matchFields"] = fields
    return out


def name_is(op: str, *names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": list(names)}


NODE = make_node().name("n1").zone("zone-a").label("gen", "5").obj()
BARE_NODE = make_node().name("n0").obj()

# (case, pod, node, matches)
AFFINITY_CASES: list[tuple[str, Any, Any, bool]] = [
    ("no nodeSelector and no affinity", make_pod().obj(), NODE, True),
    ("nodeSelector matches", make_pod().node_selector({ZONE: "zone-a"}).obj(), NODE, True),
    ("nodeSelector other value", make_pod().node_selector({ZONE: "zone-b"}).obj(), NODE, False),
    ("nodeSelector key absent", make_pod().node_selector({"disk": "ssd"}).obj(), NODE, False),
    (
        "nodeSelector empty value needs the key",
        make_pod().node_selector({"disk": ""}).obj(),
        NODE,
        False,
    ),
    ("empty nodeSelector constrains nothing", make_pod().node_selector({}).obj(), NODE, True),
    (
        "nodeSelector AND affinity: affinity fails",
        make_pod().node_selector({ZONE: "zone-a"}).node_affinity_in(ZONE, "zone-b").obj(),
        NODE,
        False,
    ),
    (
        "nodeSelector AND affinity: selector fails",
        make_pod().node_selector({ZONE: "zone-b"}).node_affinity_in(ZONE, "zone-a").obj(),
        NODE,
        False,
    ),
    ("affinity In matches", make_pod().node_affinity_in(ZONE, "zone-a").obj(), NODE, True),
    (
        "terms ORed: second matches",
        make_pod().node_affinity_in(ZONE, "zone-b").node_affinity_in(ZONE, "zone-a").obj(),
        NODE,
        True,
    ),
    (
        "terms ORed: none matches",
        make_pod().node_affinity_in(ZONE, "zone-b").node_affinity_in(ZONE, "zone-c").obj(),
        NODE,
        False,
    ),
    (
        "expressions ANDed: one fails",
        with_terms(make_pod().obj(), term(expr(ZONE, "In", "zone-a"), expr("gen", "NotIn", "5"))),
        NODE,
        False,
    ),
    (
        "expressions ANDed: both hold",
        with_terms(
            make_pod().obj(), term(expr(ZONE, "In", "zone-a"), expr("disk", "DoesNotExist"))
        ),
        NODE,
        True,
    ),
    (
        "NotIn matches a node without the key",
        with_terms(make_pod().obj(), term(expr(ZONE, "NotIn", "zone-a"))),
        BARE_NODE,
        True,
    ),
    ("Gt: 5 > 3", with_terms(make_pod().obj(), term(expr("gen", "Gt", "3"))), NODE, True),
    ("Gt: 5 > 5 is false", with_terms(make_pod().obj(), term(expr("gen", "Gt", "5"))), NODE, False),
    ("Lt: 5 < 6", with_terms(make_pod().obj(), term(expr("gen", "Lt", "6"))), NODE, True),
    ("Lt: 5 < 5 is false", with_terms(make_pod().obj(), term(expr("gen", "Lt", "5"))), NODE, False),
    (
        "Gt: node label not an integer",
        with_terms(make_pod().obj(), term(expr(ZONE, "Gt", "1"))),
        NODE,
        False,
    ),
    (
        "Gt: node without the label",
        with_terms(make_pod().obj(), term(expr("gen", "Gt", "1"))),
        BARE_NODE,
        False,
    ),
    (
        "Gt: value not an integer: term never matches",
        with_terms(make_pod().obj(), term(expr("gen", "Gt", "x"))),
        NODE,
        False,
    ),
    (
        "Gt: two values: term never matches",
        with_terms(make_pod().obj(), term(expr("gen", "Gt", "1", "2"))),
        NODE,
        False,
    ),
    (
        "matchFields metadata.name In this node",
        with_terms(make_pod().obj(), term(fields=[name_is("In", "n1")])),
        NODE,
        True,
    ),
    (
        "matchFields metadata.name In another node",
        with_terms(make_pod().obj(), term(fields=[name_is("In", "n2")])),
        NODE,
        False,
    ),
    (
        "matchFields metadata.name NotIn this node",
        with_terms(make_pod().obj(), term(fields=[name_is("NotIn", "n1")])),
        NODE,
        False,
    ),
    (
        "matchFields metadata.name NotIn another node",
        with_terms(make_pod().obj(), term(fields=[name_is("NotIn", "n2")])),
        NODE,
        True,
    ),
    (
        "matchFields with two values: term never matches",
        with_terms(make_pod().obj(), term(fields=[name_is("In", "n1", "n2")])),
        NODE,
        False,
    ),
    (
        "matchFields with Exists: term never matches",
        with_terms(make_pod().obj(), term(fields=[{"key": "metadata.name", "operator": "Exists"}])),
        NODE,
        False,
    ),
    (
        "matchFields ANDed with matchExpressions",
        with_terms(
            make_pod().obj(), term(expr(ZONE, "In", "zone-b"), fields=[name_is("In", "n1")])
        ),
        NODE,
        False,
    ),
    ("empty term list matches nothing", with_terms(make_pod().obj()), NODE, False),
    ("empty term matches nothing", with_terms(make_pod().obj(), {}), NODE, False),
    (
        "empty term is skipped, the next matches",
        with_terms(make_pod().obj(), {}, term(expr(ZONE, "In", "zone-a"))),
        NODE,
        True,
    ),
    (
        "unparsable term is skipped, the next matches",
        with_terms(make_pod().obj(), term(expr(ZONE, "Near", "x")), term(expr(ZONE, "Exists"))),
        NODE,
        True,
    ),
    (
        "required without nodeSelectorTerms matches nothing",
        {
            "spec": {
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
            }
        },
        NODE,
        False,
    ),
    (
        "only preferred affinity constrains nothing",
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "preference": term(expr(ZONE, "In", "zone-b"))}
                        ]
                    }
                }
            }
        },
        NODE,
        True,
    ),
]


@pytest.mark.parametrize(
    ("pod", "node", "want"), [c[1:] for c in AFFINITY_CASES], ids=[c[0] for c in AFFINITY_CASES]
)
def test_node_matches_pod_affinity(pod: Any, node: Any, want: bool) -> None:
    """nodeSelector AND required node affinity: terms ORed, requirements ANDed."""
    assert node_matches_pod_affinity(pod, node) is want


# ---- tolerations -----------------------------------------------------------------------


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, str]:
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def tol(**fields: str) -> dict[str, str]:
    return dict(fields)


# (case, taint, toleration, tolerated)
TOLERATION_CASES: list[tuple[str, Any, Any, bool]] = [
    (
        "Equal key, value and effect",
        taint("k", "v"),
        tol(key="k", operator="Equal", value="v", effect="NoSchedule"),
        True,
    ),
    ("Equal value mismatch", taint("k", "v"), tol(key="k", operator="Equal", value="w"), False),
    (
        "Equal empty value against a valued taint",
        taint("k", "v"),
        tol(key="k", operator="Equal"),
        False,
    ),
    (
        "Equal empty value against an unvalued taint",
        taint("k"),
        tol(key="k", operator="Equal"),
        True,
    ),
    ("empty operator means Equal", taint("k", "v"), tol(key="k", value="v"), True),
    ("empty operator value mismatch", taint("k", "v"), tol(key="k", value="w"), False),
    ("Exists any value", taint("k", "v"), tol(key="k", operator="Exists"), True),
    ("Exists other key", taint("k", "v"), tol(key="j", operator="Exists"), False),
    (
        "Exists with empty key tolerates every taint",
        taint("k", "v", "NoExecute"),
        tol(operator="Exists"),
        True,
    ),
    (
        "empty effect matches every effect",
        taint("k", "v", "NoExecute"),
        tol(key="k", operator="Exists"),
        True,
    ),
    (
        "effect mismatch",
        taint("k", "v", "NoExecute"),
        tol(key="k", operator="Exists", effect="NoSchedule"),
        False,
    ),
    (
        "Exists with empty key but an effect only tolerates that effect",
        taint("k", "v", "NoExecute"),
        tol(operator="Exists", effect="NoSchedule"),
        False,
    ),
    (
        "unknown operator tolerates nothing",
        taint("k", "5"),
        tol(key="k", operator="In", value="5"),
        False,
    ),
    (
        "Gt is off by default (feature gate alpha)",
        taint("k", "5"),
        tol(key="k", operator="Gt", value="3"),
        False,
    ),
]


@pytest.mark.parametrize(
    ("the_taint", "toleration", "want"),
    [c[1:] for c in TOLERATION_CASES],
    ids=[c[0] for c in TOLERATION_CASES],
)
def test_taint_tolerated(the_taint: Any, toleration: Any, want: bool) -> None:
    """Toleration.ToleratesTaint through TolerationsTolerateTaint."""
    assert taint_tolerated(the_taint, [toleration]) is want


@pytest.mark.parametrize(
    ("op", "bound", "value", "want"),
    [
        ("Gt", "3", "5", True),
        ("Gt", "5", "5", False),
        ("Lt", "6", "5", True),
        ("Lt", "5", "5", False),
        ("Gt", "03", "5", False),
        ("Gt", "3", "x", False),
    ],
)
def test_comparison_operators_when_enabled(op: str, bound: str, value: str, want: bool) -> None:
    """With the TaintTolerationComparisonOperators gate, Gt/Lt compare decimal integers."""
    got = toleration_tolerates(
        tol(key="k", operator=op, value=bound), taint("k", value), comparison_operators=True
    )
    assert got is want


def test_no_tolerations_tolerate_nothing() -> None:
    assert taint_tolerated(taint("k"), []) is False
    assert taint_tolerated(taint("k"), None) is False


def test_any_toleration_in_the_list_is_enough() -> None:
    tolerations = [tol(key="a", operator="Exists"), tol(key="k", value="v")]
    assert taint_tolerated(taint("k", "v"), tolerations) is True


@pytest.mark.parametrize(
    ("taints", "tolerations", "want"),
    [
        ([taint("a", effect="PreferNoSchedule")], [], None),
        ([taint("a", effect="PreferNoSchedule"), taint("b", "1")], [], taint("b", "1")),
        (
            [taint("a", "1"), taint("b", "2", "NoExecute")],
            [tol(key="a", operator="Exists")],
            taint("b", "2", "NoExecute"),
        ),
        ([taint("a", "1"), taint("b", "2")], [], taint("a", "1")),
        ([taint("a", "1")], [tol(operator="Exists")], None),
        (None, [], None),
    ],
    ids=[
        "PreferNoSchedule ignored",
        "first NoSchedule after ignored one",
        "NoExecute after a tolerated taint",
        "first untolerated in order",
        "all tolerated",
        "no taints",
    ],
)
def test_find_untolerated_taint(taints: Any, tolerations: Any, want: Any) -> None:
    """Only NoSchedule and NoExecute taints count; the first untolerated one is reported."""
    assert find_untolerated_taint(taints, tolerations) == want


# ---- robustness ------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = st.sampled_from(
    ["matchLabels", "matchExpressions", "key", "operator", "values", "In", "Exists", "Gt"]
)
SHAPED = st.recursive(
    st.none() | st.text(max_size=6) | st.sampled_from(["In", "NotIn", "Exists", "Gt", "app"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=16,
)


@given(sel=JSON | SHAPED, labels=st.dictionaries(st.text(max_size=6), st.text(max_size=6)))
def test_malformed_selectors_never_raise(sel: Any, labels: dict[str, str]) -> None:
    """Any JSON as a selector yields a boolean, never an exception."""
    assert selector_matches(sel, labels) in (True, False)


@given(
    spec=st.dictionaries(
        st.sampled_from(["nodeSelector", "affinity", "tolerations", "nodeName"]), JSON | SHAPED
    )
)
def test_malformed_pods_never_raise_in_affinity(spec: dict[str, Any]) -> None:
    pod = {"spec": spec}
    assert node_matches_pod_affinity(pod, NODE) in (True, False)
    assert find_untolerated_taint([taint("k")], spec.get("tolerations")) in (None, taint("k"))


def test_public_surface() -> None:
    """The names other modules import; a change here is a contract change."""
    import webhook.api.labels

    assert {
        "selector_matches",
        "compile_selector",
        "node_matches_pod_affinity",
        "taint_tolerated",
    } <= set(webhook.api.labels.__all__)
    assert all(hasattr(webhook.api.labels, name) for name in webhook.api.labels.__all__)


@given(
    metadata=st.dictionaries(st.sampled_from(["name", "labels"]), JSON),
    pod=st.sampled_from(
        [c[1] for c in AFFINITY_CASES if isinstance(c[1], dict) and "metadata" in c[1]]
    ),
)
def test_malformed_nodes_never_raise_in_affinity(metadata: dict[str, Any], pod: Any) -> None:
    """A node whose metadata has wrong types is read as having no labels or name."""
    assert node_matches_pod_affinity(pod, {"metadata": metadata}) in (True, False)


@pytest.mark.parametrize(
    ("text", "expressions"),
    [
        ("zone=a", [{"key": "zone", "operator": "In", "values": ["a"]}]),
        ("zone==a", [{"key": "zone", "operator": "In", "values": ["a"]}]),
        ("zone!=a", [{"key": "zone", "operator": "NotIn", "values": ["a"]}]),
        ("zone in (b, a)", [{"key": "zone", "operator": "In", "values": ["a", "b"]}]),
        ("zone notin (a)", [{"key": "zone", "operator": "NotIn", "values": ["a"]}]),
        ("gpu", [{"key": "gpu", "operator": "Exists"}]),
        ("!gpu", [{"key": "gpu", "operator": "DoesNotExist"}]),
        ("zone=", [{"key": "zone", "operator": "In", "values": [""]}]),
        (
            "topology.kubernetes.io/zone=eu-west-1a,!spot",
            [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]},
                {"key": "spot", "operator": "DoesNotExist"},
            ],
        ),
    ],
)
def test_parse_selector(text: str, expressions: list[dict[str, object]]) -> None:
    assert parse_selector(text) == {"matchExpressions": expressions}


@pytest.mark.parametrize(
    "text", ["", "  ", "a=b=c", "k in (a", "-bad=x", "k=-bad-", "k>1", "a,,b", "k in a"]
)
def test_parse_selector_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(text)
