"""Label keys, label values and label selectors, validated as apimachinery does.

Ports the checks kube-apiserver runs on every labelSelector of a topology spread
constraint (k8s.io/apimachinery: api/validate/content IsLabelKey/IsLabelValue/
IsDNS1123Subdomain, apis/meta/v1/validation ValidateLabelSelector and friends),
with the exact messages. Lengths are counted in UTF-8 bytes, as Go's len() does.

Inputs are raw JSON: any value of the wrong type yields a FieldError with
"must be a string" / "must be a list" / "must be an object" instead of raising;
a JSON null reads as Go's zero value, exactly as kube-apiserver decodes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api.field import FieldError, JSONValue, forbidden, invalid, required

# The regular expressions as upstream prints them in its messages.
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + LABEL_KEY_FMT + ")?"
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"

LABEL_KEY_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253

_LABEL_KEY_RE = re.compile(LABEL_KEY_FMT)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_SUBDOMAIN_FMT)

LABEL_KEY_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")

MUST_BE_STRING = "must be a string"
MUST_BE_LIST = "must be a list"
MUST_BE_OBJECT = "must be an object"


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery RegexError: the message, examples and the regex used. Each example
    is followed by ", " and the next joined with " or ", so real clusters print two
    spaces before each "or": (e.g. 'MyValue',  or 'my_value',  or '12345', regex ...).

    Port of apimachinery/pkg/util/validation/validation.go: RegexError."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if _nbytes(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


DNS1123_LABEL_MAX_LENGTH = 63
_DNS1123_LABEL_RE = re.compile(DNS1123_LABEL_FMT)
DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
    "'-', and must start and end with an alphanumeric character"
)


def is_dns1123_label(value: str) -> list[str]:
    """A namespace name's rule.

    Port of apimachinery/pkg/util/validation/validation.go: IsDNS1123Label."""
    errs: list[str] = []
    if _nbytes(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errs.append(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def namespace_names_problem(names: Iterable[object], where: str) -> str | None:
    """The first of `names` that is not a namespace name, said as `<where>: 'x' is not a
    namespace name: <why>`; None when every one is."""
    for ns in names:
        problems = is_dns1123_label(ns) if isinstance(ns, str) else ["not a string"]
        if problems:
            return f"{where}: {ns!r} is not a namespace name: {problems[0]}"
    return None


def is_qualified_name(value: str) -> list[str]:
    """Error messages for a label key ("qualified name"), as content.IsLabelKey words them."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _nbytes(name) > LABEL_KEY_MAX_LENGTH:
        errs.append("name part " + max_len_error(LABEL_KEY_MAX_LENGTH))
    if not _LABEL_KEY_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs: list[str] = []
    if _nbytes(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def validate_label_name(name: Any, path: str) -> list[FieldError]:
    """ValidateLabelName: one Invalid per message of is_qualified_name."""
    if name is None:
        name = ""
    if not isinstance(name, str):
        return [invalid(path, JSONValue(name), MUST_BE_STRING)]
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """ValidateLabels: keys and values of a label map, every error on the map's path.

    Upstream walks a Go map (random order); we keep the document's order.
    """
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [invalid(path, JSONValue(labels), MUST_BE_OBJECT)]
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs.extend(validate_label_name(key, path))
        if value is None:
            value = ""
        if not isinstance(value, str):
            errs.append(invalid(path, JSONValue(value), MUST_BE_STRING))
            continue
        errs.extend(invalid(path, value, msg) for msg in is_valid_label_value(value))
    return errs


def _typed(value: str, json_typed: bool) -> Any:
    # Named string types (LabelSelectorOperator, ...) go through json.Marshal since v1.34.
    return JSONValue(value) if json_typed else value


def validate_requirement(
    req: Any, path: str, *, allow_invalid_values: bool = False, json_typed: bool = True
) -> list[FieldError]:
    """ValidateLabelSelectorRequirement: operator vs values, key, then each value."""
    if req is None:
        req = {}
    if not isinstance(req, Mapping):
        return [invalid(path, JSONValue(req), MUST_BE_OBJECT)]
    errs: list[FieldError] = []
    operator = req.get("operator")
    operator = "" if operator is None else operator
    values = req.get("values")
    values = [] if values is None else values
    if not isinstance(operator, str):
        errs.append(invalid(path + ".operator", JSONValue(operator), MUST_BE_STRING))
    elif not isinstance(values, list):
        errs.append(invalid(path + ".values", JSONValue(values), MUST_BE_LIST))
    elif operator in ("In", "NotIn"):
        if not values:
            errs.append(
                required(path + ".values", "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                forbidden(
                    path + ".values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    else:
        errs.append(
            invalid(
                path + ".operator", _typed(operator, json_typed), "not a valid selector operator"
            )
        )
    errs.extend(validate_label_name(req.get("key"), path + ".key"))
    if isinstance(values, list):
        for j, value in enumerate(values):
            vpath = f"{path}.values[{j}]"
            if value is None:
                value = ""
            if not isinstance(value, str):
                errs.append(invalid(vpath, JSONValue(value), MUST_BE_STRING))
            elif not allow_invalid_values:
                errs.extend(invalid(vpath, value, msg) for msg in is_valid_label_value(value))
    return errs


def validate_label_selector(
    sel: Any, path: str, *, allow_invalid_values: bool = False, json_typed: bool = True
) -> list[FieldError]:
    """ValidateLabelSelector: matchLabels, then each matchExpressions requirement. None is valid."""
    if sel is None:
        return []
    if not isinstance(sel, Mapping):
        return [invalid(path, JSONValue(sel), MUST_BE_OBJECT)]
    errs = validate_labels(sel.get("matchLabels"), path + ".matchLabels")
    exprs = sel.get("matchExpressions")
    if exprs is None:
        return errs
    if not isinstance(exprs, list):
        errs.append(invalid(path + ".matchExpressions", JSONValue(exprs), MUST_BE_LIST))
        return errs
    for i, req in enumerate(exprs):
        errs.extend(
            validate_requirement(
                req,
                f"{path}.matchExpressions[{i}]",
                allow_invalid_values=allow_invalid_values,
                json_typed=json_typed,
            )
        )
    return errs


def selector_keys(sel: Any) -> tuple[list[str], list[str]]:
    """The string keys of matchLabels and of matchExpressions, in order; junk is skipped."""
    if not isinstance(sel, Mapping):
        return [], []
    labels = sel.get("matchLabels")
    label_keys = [k for k in labels if isinstance(k, str)] if isinstance(labels, Mapping) else []
    exprs = sel.get("matchExpressions")
    expr_keys: list[str] = []
    if isinstance(exprs, list):
        for req in exprs:
            if req is None:
                expr_keys.append("")
            elif isinstance(req, Mapping):
                key = req.get("key")
                key = "" if key is None else key
                if isinstance(key, str):
                    expr_keys.append(key)
    return label_keys, expr_keys


def selector_selects(sel: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(sel).Matches(labels) for a selector already known valid."""
    match_labels = sel.get("matchLabels") or {}
    for key, value in match_labels.items():
        if labels.get(key) != ("" if value is None else value):
            return False
    for req in sel.get("matchExpressions") or []:
        req = req or {}
        key = req.get("key") or ""
        values = [("" if v is None else v) for v in (req.get("values") or [])]
        operator = req.get("operator")
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True
