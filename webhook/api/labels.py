"""Label selectors, node selectors and required node affinity, taints and tolerations.

Ports of the matching rules kube-scheduler relies on:

- `metav1.LabelSelectorAsSelector` and `labels.Requirement.Matches`
  (apimachinery): a nil selector matches nothing, an empty one everything;
  NotIn and DoesNotExist match a label set that lacks the key.
- `nodeaffinity.GetRequiredNodeAffinity` (component-helpers): the pod's
  nodeSelector AND its required node affinity, whose terms are ORed and whose
  expressions and fields are ANDed; an empty term matches nothing, a term that
  does not parse never matches, the other terms still count.
- `Toleration.ToleratesTaint` and `FindMatchingUntoleratedTaint`
  (k8s.io/api core/v1, component-helpers).

Nothing here raises on malformed input: a selector or term that upstream
would refuse to parse matches nothing. Selectors compile to closures so a
placement decision parses them once and matches them thousands of times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from webhook.api.field import FieldError, JSONValue, aggregate, go_quote, invalid
from webhook.api.kube import RawObj
from webhook.api.names import MUST_BE_OBJECT, is_valid_label_value
from webhook.api.names import is_qualified_name as qualified_name_errors

Labels = Mapping[str, str]
LabelMatcher = Callable[[Labels], bool]
NodeMatcher = Callable[[RawObj], bool]

__all__ = [
    "selector_error",
    "DO_NOT_SCHEDULE_EFFECTS",
    "LabelMatcher",
    "NodeMatcher",
    "compile_node_selector_term",
    "compile_node_affinity",
    "compile_selector",
    "find_untolerated_taint",
    "is_label_value",
    "is_qualified_name",
    "match_nothing",
    "match_everything",
    "node_matches_pod_affinity",
    "parse_selector",
    "selector_matches",
    "selector_from_set",
    "selector_requirements",
    "taint_tolerated",
    "toleration_tolerates",
]

# Taint effects that keep a pod off a node at scheduling time. PreferNoSchedule only
# affects scoring (TaintToleration Filter and nodeTaintsPolicy: Honor both use these).
DO_NOT_SCHEDULE_EFFECTS = frozenset({"NoSchedule", "NoExecute"})

_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
# Go's strconv.ParseInt(s, 10, 64) syntax (no spaces, no underscores).
_INT_RE = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Compiled requirement operators.
_IN, _NOT_IN, _EXISTS, _NOT_EXISTS, _GT, _LT = range(6)
_LABEL_OPS = {"In": _IN, "NotIn": _NOT_IN, "Exists": _EXISTS, "DoesNotExist": _NOT_EXISTS}
_NODE_OPS = {**_LABEL_OPS, "Gt": _GT, "Lt": _LT}
_OP_NAMES = {number: name for name, number in _NODE_OPS.items()}

_Requirement = tuple[str, int, Any]  # (key, operator, frozenset of values | int bound | None)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def match_nothing(_labels: Any) -> bool:
    return False


def match_everything(_labels: Any) -> bool:
    return True


def is_qualified_name(value: Any) -> bool:
    """apimachinery IsQualifiedName: optional DNS-1123 subdomain prefix, '/', a 63-char name.

    Port of util/validation/validation.go: IsQualifiedName.
    """
    if not isinstance(value, str):
        return False
    prefix, slash, name = value.rpartition("/")
    if slash:
        if "/" in prefix or not prefix or len(prefix) > 253:
            return False
        if not _DNS1123_SUBDOMAIN_RE.match(prefix):
            return False
    return 0 < len(name) <= 63 and _NAME_RE.match(name) is not None


def is_label_value(value: Any) -> bool:
    """apimachinery IsValidLabelValue: empty, or at most 63 characters of the name alphabet.

    Port of util/validation/validation.go: IsValidLabelValue.
    """
    if not isinstance(value, str):
        return False
    return value == "" or (len(value) <= 63 and _NAME_RE.match(value) is not None)


def _parse_int64(value: Any) -> int | None:
    if not isinstance(value, str) or not _INT_RE.match(value):
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _requirement(key: Any, op: int, values: Any) -> _Requirement | None:
    """labels.NewRequirement: validate and compile one requirement; None when invalid
    (the reasons are _requirement_errors', the one statement of validity)."""
    if _requirement_errors(key, _OP_NAMES[op], values):
        return None
    values = values or []
    if op in (_GT, _LT):
        return (key, op, _parse_int64(values[0]))
    if op in (_IN, _NOT_IN):
        return (key, op, frozenset(values))
    return (key, op, None)


def _requirements_matcher(reqs: list[_Requirement]) -> LabelMatcher:
    """AND of requirements; the common matchLabels-only shape gets a tighter loop."""
    if not reqs:
        return match_everything
    if all(op == _IN and len(vals) == 1 for _, op, vals in reqs):
        pairs = tuple((key, next(iter(vals))) for key, _, vals in reqs)
        if len(pairs) == 1:
            ((only_key, only_value),) = pairs

            def match_one(labels: Labels) -> bool:
                return labels is not None and bool(labels.get(only_key) == only_value)

            return match_one

        def match_equal(labels: Labels) -> bool:
            if labels is None:
                return False
            get = labels.get
            for key, value in pairs:
                if get(key) != value:
                    return False
            return True

        return match_equal

    frozen = tuple(reqs)

    def match(labels: Labels) -> bool:
        get = labels.get if labels is not None else {}.get
        for key, op, vals in frozen:
            value = get(key)
            if op == _IN:
                if value is None or value not in vals:
                    return False
            elif op == _NOT_IN:
                if value is not None and value in vals:
                    return False
            elif op == _EXISTS:
                if value is None:
                    return False
            elif op == _NOT_EXISTS:
                if value is not None:
                    return False
            else:
                number = _parse_int64(value)
                if number is None:
                    return False
                if op == _GT and not number > vals:
                    return False
                if op == _LT and not number < vals:
                    return False
        return True

    return match


def _selector_requirements(sel: Any) -> list[_Requirement] | None:
    """The requirements of a metav1.LabelSelector; None when it does not parse.

    Port of meta/v1/helpers.go: LabelSelectorAsSelector.
    """
    if not isinstance(sel, dict):
        return None
    match_labels = sel.get("matchLabels") or {}
    expressions = sel.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        return None
    reqs: list[_Requirement] = []
    for key, value in match_labels.items():
        # A JSON null decodes to Go's empty string.
        req = _requirement(key, _IN, ["" if value is None else value])
        if req is None:
            return None
        reqs.append(req)
    more = _expression_requirements(expressions, _LABEL_OPS)
    return None if more is None else reqs + more


def _expression_requirements(
    expressions: list[Any], operators: dict[str, Any]
) -> list[_Requirement] | None:
    """Requirements of label or node selector expressions; None when one does not parse."""
    reqs: list[_Requirement] = []
    for expression in expressions:
        if not isinstance(expression, dict):
            return None
        op = operators.get(_text(expression.get("operator")))
        if op is None:
            return None
        req = _requirement(expression.get("key", ""), op, expression.get("values"))
        if req is None:
            return None
        reqs.append(req)
    return reqs


def compile_selector(sel: RawObj | None) -> LabelMatcher:
    """A predicate over label maps for a metav1.LabelSelector.

    None (a nil selector) and malformed selectors match nothing; a selector
    with neither matchLabels nor matchExpressions matches everything.
    """
    if sel is None:
        return match_nothing
    reqs = _selector_requirements(sel)
    if reqs is None:
        return match_nothing
    return _requirements_matcher(reqs)


def selector_matches(sel: RawObj | None, labels: Labels | None) -> bool:
    """Whether `labels` (None reads as no labels) match the metav1.LabelSelector `sel`."""
    return compile_selector(sel)(labels if isinstance(labels, Mapping) else {})


def selector_requirements(sel: RawObj | None) -> list[tuple[str, str, tuple[str, ...]]] | None:
    """The requirements of a selector as (key, operator, sorted values); None when it
    selects nothing (nil or malformed). An empty list selects everything."""
    if sel is None:
        return None
    reqs = _selector_requirements(sel)
    if reqs is None:
        return None
    names = {_IN: "In", _NOT_IN: "NotIn", _EXISTS: "Exists", _NOT_EXISTS: "DoesNotExist"}
    return [(key, names[op], tuple(sorted(vals or ()))) for key, op, vals in reqs]


def selector_from_set(labels: Mapping[str, str] | None) -> LabelMatcher:
    """labels.SelectorFromSet: every key equal, no validation; empty matches everything.

    Port of labels/selector.go: SelectorFromSet.
    """
    if not labels:
        return match_everything
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        return match_nothing  # not a map of strings: the object could not have decoded
    return _requirements_matcher([(k, _IN, frozenset((v,))) for k, v in labels.items()])


# ---- node affinity -------------------------------------------------------------------


def _node_labels(node: Any) -> Labels:
    metadata = node.get("metadata") if isinstance(node, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return labels if isinstance(labels, dict) else {}


def _node_term_matcher(term: Any) -> NodeMatcher | None:
    """One NodeSelectorTerm; None for an empty term (skipped); match_nothing when it
    does not parse.

    Port of nodeaffinity/nodeaffinity.go: newNodeSelectorTerm.
    """
    if not isinstance(term, dict):
        return None if term is None else match_nothing
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not isinstance(expressions, list) or not isinstance(fields, list):
        return match_nothing
    if not expressions and not fields:
        return None
    label_match: LabelMatcher | None = None
    if expressions:
        reqs = _expression_requirements(expressions, _NODE_OPS)
        if reqs is None:
            return match_nothing
        label_match = _requirements_matcher(reqs)
    field_reqs: list[tuple[str, bool, str]] = []  # (field, equal?, value)
    for expression in fields:
        if not isinstance(expression, dict):
            return match_nothing
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator not in ("In", "NotIn"):
            return match_nothing
        if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
            return match_nothing
        key = expression.get("key", "")
        if not isinstance(key, str):
            return match_nothing
        field_reqs.append((key, operator == "In", values[0]))

    def match(node: RawObj) -> bool:
        if label_match is not None and not label_match(_node_labels(node)):
            return False
        metadata = node.get("metadata")
        name = _text(metadata.get("name")) if isinstance(metadata, dict) else ""
        # Only metadata.name is a node field; a nameless node has no fields, and the
        # field requirements are then not checked (nodeSelectorTerm.match).
        if field_reqs and name:
            for key, equal, value in field_reqs:
                actual = name if key == "metadata.name" else ""
                if (actual == value) != equal:
                    return False
        return True

    return match


def compile_node_selector_term(term: Any) -> NodeMatcher:
    """One NodeSelectorTerm as a predicate over Node objects; an empty or unparsable
    term matches nothing (nodeSelectorTerm.match), as a preferred term is read."""
    matcher = _node_term_matcher(term)
    return matcher if matcher is not None else match_nothing


def _required_terms_matcher(required: Any) -> NodeMatcher:
    """LazyErrorNodeSelector: the terms ORed; no usable term matches nothing.

    Port of nodeaffinity/nodeaffinity.go: NewLazyErrorNodeSelector.
    """
    if not isinstance(required, dict):
        return match_nothing
    terms = required.get("nodeSelectorTerms") or []
    if not isinstance(terms, list):
        return match_nothing
    matchers = [m for m in (_node_term_matcher(t) for t in terms) if m is not None]
    if not matchers:
        return match_nothing
    if len(matchers) == 1:
        return matchers[0]
    alternatives = tuple(matchers)

    def match_any(node: RawObj) -> bool:
        return any(m(node) for m in alternatives)

    return match_any


def required_node_affinity(spec: Any) -> Any:
    """spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution of a pod
    spec as given (any JSON value), None when absent anywhere on the way."""
    affinity = spec.get("affinity") if isinstance(spec, dict) else None
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
    if not isinstance(node_affinity, dict):
        return None
    return node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")


def compile_node_affinity(pod: RawObj) -> NodeMatcher | None:
    """The pod's required node selection (nodeSelector AND required node affinity) as a
    predicate over Node objects; None when the pod constrains nothing.

    Port of nodeaffinity/nodeaffinity.go: GetRequiredNodeAffinity.
    """
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return None
    node_selector = spec.get("nodeSelector")
    label_match: LabelMatcher | None = None
    if node_selector:
        if not isinstance(node_selector, dict):
            label_match = match_nothing
        else:
            label_match = selector_from_set(
                {k: "" if v is None else v for k, v in node_selector.items()}
            )
    required = required_node_affinity(spec)
    has_required = required is not None
    if label_match is None and not has_required:
        return None
    terms_match = _required_terms_matcher(required) if has_required else None
    if terms_match is None:
        assert label_match is not None
        selector_only = label_match

        def match_selector(node: RawObj) -> bool:
            return selector_only(_node_labels(node))

        return match_selector
    if label_match is None:
        return terms_match
    both_labels, both_terms = label_match, terms_match

    def match_both(node: RawObj) -> bool:
        if not both_labels(_node_labels(node)):
            return False
        return both_terms(node)

    return match_both


def node_matches_pod_affinity(pod: RawObj, node: RawObj) -> bool:
    """Whether `node` satisfies the pod's nodeSelector and required node affinity.

    Port of nodeaffinity/nodeaffinity.go: RequiredNodeAffinity.Match.
    """
    matcher = compile_node_affinity(pod)
    return True if matcher is None else matcher(node if isinstance(node, dict) else {})


# ---- taints and tolerations ----------------------------------------------------------


def toleration_tolerates(
    toleration: Any, taint: Any, *, comparison_operators: bool = False
) -> bool:
    """Toleration.ToleratesTaint. An empty effect matches every effect, an empty key with
    Exists every taint; an empty operator means Equal. Lt/Gt compare integers only with
    the TaintTolerationComparisonOperators gate (alpha, off by default), else never match.

    Port of core/v1/toleration.go: ToleratesTaint.
    """
    if not isinstance(toleration, dict) or not isinstance(taint, dict):
        return False
    effect = _text(toleration.get("effect"))
    if effect and effect != _text(taint.get("effect")):
        return False
    key = _text(toleration.get("key"))
    if key and key != _text(taint.get("key")):
        return False
    operator = _text(toleration.get("operator"))
    if operator in ("", "Equal"):
        return _text(toleration.get("value")) == _text(taint.get("value"))
    if operator == "Exists":
        return True
    if operator in ("Lt", "Gt") and comparison_operators:
        bound = _parse_decimal_integer(_text(toleration.get("value")))
        actual = _parse_decimal_integer(_text(taint.get("value")))
        if bound is None or actual is None:
            return False
        return actual < bound if operator == "Lt" else actual > bound
    return False


def _parse_decimal_integer(value: str) -> int | None:
    # content.IsDecimalInteger: optional '-', no leading zeros (except "0"), then int64.
    if not re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
        return None
    return _parse_int64(value)


def taint_tolerated(taint: RawObj, tolerations: list[RawObj] | None) -> bool:
    """TolerationsTolerateTaint: whether any toleration tolerates the taint.

    Port of scheduling/corev1/helpers.go: TolerationsTolerateTaint.
    """
    if not tolerations or not isinstance(tolerations, list):
        return False
    return any(toleration_tolerates(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Iterable[RawObj] | None,
    tolerations: list[RawObj] | None,
    effects: frozenset[str] = DO_NOT_SCHEDULE_EFFECTS,
) -> RawObj | None:
    """FindMatchingUntoleratedTaint: the first taint with an effect in `effects` that no
    toleration tolerates, or None.

    Port of scheduling/corev1/helpers.go: FindMatchingUntoleratedTaint.
    """
    if not taints or not isinstance(taints, list):
        return None
    for taint in taints:
        if not isinstance(taint, dict) or _text(taint.get("effect")) not in effects:
            continue
        if not taint_tolerated(taint, tolerations):
            return taint
    return None


# ---- why a selector does not parse ---------------------------------------------------


def _requirement_errors(key: Any, operator: str, values: Any) -> list[FieldError]:
    """Port of apimachinery labels.go: NewRequirement (its validation, in its order)."""
    errs: list[FieldError] = []
    key = "" if key is None else key
    if not isinstance(key, str):
        return [invalid("key", JSONValue(key), "must be a string")]
    msgs = qualified_name_errors(key)
    if msgs:
        errs.append(invalid("key", key, "; ".join(msgs)))
    values = [] if values is None else values
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return errs + [invalid("values", JSONValue(values), "must be a list of strings")]
    if operator in ("In", "NotIn") and not values:
        errs.append(
            invalid(
                "values",
                JSONValue(values),
                "for 'in', 'notin' operators, values set can't be empty",
            )
        )
    if operator in ("Exists", "DoesNotExist") and values:
        errs.append(
            invalid(
                "values",
                JSONValue(values),
                "values set must be empty for exists and does not exist",
            )
        )
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(
                invalid(
                    "values",
                    JSONValue(values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        elif _parse_int64(values[0]) is None:
            errs.append(
                invalid(
                    "values[0]",
                    values[0],
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                )
            )
    for i, value in enumerate(values):
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(invalid(f"values[{i}][{key}]", value, "; ".join(msgs)))
    return errs


def selector_error(selector: Any) -> str | None:
    """Why metav1.LabelSelectorAsSelector refuses `selector`; None when it parses.

    Port of apimachinery helpers.go: LabelSelectorAsSelector (None and {} parse).
    """
    if selector is None:
        return None
    if not isinstance(selector, dict):
        return MUST_BE_OBJECT
    match_labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(exprs, list):
        return "matchLabels must be a map and matchExpressions a list"
    for key, value in match_labels.items():
        errs = _requirement_errors(key, "In", ["" if value is None else value])
        if errs:
            return aggregate(errs)
    for expr in exprs:
        if not isinstance(expr, dict):
            return MUST_BE_OBJECT
        op = expr.get("operator")
        if not isinstance(op, str) or op not in _LABEL_OPS:
            shown = go_quote(op if isinstance(op, str) else str(op))
            return f"{shown} is not a valid label selector operator"
        errs = _requirement_errors(expr.get("key"), op, expr.get("values"))
        if errs:
            return aggregate(errs)
    return None


_SELECTOR_TERM = re.compile(
    r"""^\s*(?:
        (?P<not>!)\s*(?P<absent>[^\s=!(),]+)
      | (?P<key>[^\s=!(),]+)\s*(?:
            (?P<op>==|=|!=)\s*(?P<value>[^\s=!(),]*)
          | \s(?P<set>in|notin)\s*\((?P<values>[^()]*)\)
        )?
    )\s*$""",
    re.VERBOSE,
)


def _selector_terms(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def parse_selector(text: str) -> RawObj:
    """A label selector string as kubectl's `-l` takes it (`zone=a,tier!=web`, `k in (a,b)`,
    `k notin (a)`, `k`, `!k`) as a metav1.LabelSelector; ValueError naming the bad part.

    Follows apimachinery labels.Parse for the set-based operators LabelSelectors hold
    (Gt/Lt are not among them).
    """
    if not text.strip():
        raise ValueError("empty label selector")
    expressions: list[RawObj] = []
    for term in _selector_terms(text):
        m = _SELECTOR_TERM.match(term)
        if m is None:
            raise ValueError(f"cannot parse {term.strip()!r} in label selector {text!r}")
        key = m.group("absent") or m.group("key")
        values: list[str] = []
        if m.group("absent"):
            operator = "DoesNotExist"
        elif m.group("op"):
            values = [m.group("value")]
            operator = "NotIn" if m.group("op") == "!=" else "In"
        elif m.group("set"):
            values = sorted({v.strip() for v in m.group("values").split(",")})
            operator = "In" if m.group("set") == "in" else "NotIn"
        else:
            operator = "Exists"
        errs = _requirement_errors(key, operator, values)
        if errs:
            raise ValueError(f"{term.strip()!r}: {aggregate(errs)}")
        expression: RawObj = {"key": key, "operator": operator}
        if values or operator in ("In", "NotIn"):
            expression["values"] = values
        expressions.append(expression)
    return {"matchExpressions": expressions}
