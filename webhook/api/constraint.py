"""A TopologySpreadConstraint as kube-apiserver decodes it, and the one applyMatchLabelKeys.

`decode_constraints` reads raw JSON with Go's zero values for nulls and keeps a
wrong JSON type as BAD (its error recorded in the slot of the rule it belongs to),
so validation can report every problem in upstream's order. The enum strings of
the API (whenUnsatisfiable, node inclusion policies) are defined here once.

`apply_match_label_keys` is kube-apiserver's create-time merge
(pkg/registry/core/pod/strategy.go applyMatchLabelKeys), which kube-scheduler also
applies when it reads a constraint (podtopologyspread/common.go): validation,
mutation and the scheduler all use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api.field import FieldError, JSONValue, invalid
from webhook.api.kube import as_dict
from webhook.api.names import MUST_BE_LIST, MUST_BE_OBJECT, MUST_BE_STRING

__all__ = [
    "BAD",
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "NODE_INCLUSION_POLICIES",
    "SCHEDULE_ACTIONS",
    "SCHEDULE_ANYWAY",
    "DecodedConstraint",
    "apply_match_label_keys",
    "decode_constraints",
    "match_label_requirements",
    "node_inclusion_inputs",
    "requirement",
    "type_errors_of",
    "unique_pair",
]

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SCHEDULE_ACTIONS = [DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]  # sets.List: sorted
HONOR = "Honor"
IGNORE = "Ignore"
NODE_INCLUSION_POLICIES = [HONOR, IGNORE]  # sets.List: sorted
NOT_POSITIVE = "must be greater than zero"
MUST_BE_INTEGER = "must be an integer"
MUST_BE_INT32 = "must fit in a 32-bit integer"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class _Bad:
    """A field whose JSON type is wrong: its error is already reported; its rules are skipped."""

    def __repr__(self) -> str:
        return "<bad>"


BAD = _Bad()


def _int32(value: Any, path: str, errs: list[FieldError]) -> Any:
    """Decode an int32 field; None stays None (the caller picks Go's zero value or nil)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errs.append(invalid(path, JSONValue(value), MUST_BE_INTEGER))
        return BAD
    if not INT32_MIN <= value <= INT32_MAX:
        errs.append(invalid(path, JSONValue(value), MUST_BE_INT32))
        return BAD
    return value


def _string(value: Any, path: str, errs: list[FieldError]) -> Any:
    if value is None or isinstance(value, str):
        return value
    errs.append(invalid(path, JSONValue(value), MUST_BE_STRING))
    return BAD


class DecodedConstraint:
    """One constraint decoded from raw JSON with Go's zero values for nulls.

    Each attribute holds the decoded value, or BAD when its type was wrong (the
    type error is then in `type_errors[attribute]`, reported in that rule's slot).
    """

    def __init__(self, raw: Mapping[str, Any], path: str) -> None:
        self.type_errors: dict[str, list[FieldError]] = {}

        def slot(name: str) -> list[FieldError]:
            return self.type_errors.setdefault(name, [])

        max_skew = _int32(raw.get("maxSkew"), path + ".maxSkew", slot("maxSkew"))
        self.max_skew: Any = 0 if max_skew is None else max_skew
        key = _string(raw.get("topologyKey"), path + ".topologyKey", slot("topologyKey"))
        self.topology_key: Any = "" if key is None else key
        when = _string(
            raw.get("whenUnsatisfiable"), path + ".whenUnsatisfiable", slot("whenUnsatisfiable")
        )
        self.when: Any = "" if when is None else when
        self.min_domains: Any = _int32(
            raw.get("minDomains"), path + ".minDomains", slot("minDomains")
        )
        self.affinity_policy: Any = _string(
            raw.get("nodeAffinityPolicy"), path + ".nodeAffinityPolicy", slot("nodeAffinityPolicy")
        )
        self.taints_policy: Any = _string(
            raw.get("nodeTaintsPolicy"), path + ".nodeTaintsPolicy", slot("nodeTaintsPolicy")
        )
        self.selector: Any = raw.get("labelSelector")
        # matchLabelKeys: the raw length (Go's len) and the string keys with their index.
        self.keys_len = 0
        self.keys: list[tuple[int, str]] = []
        mlk = raw.get("matchLabelKeys")
        mlk_errs = slot("matchLabelKeys")
        if isinstance(mlk, list):
            self.keys_len = len(mlk)
            for i, key in enumerate(mlk):
                key = "" if key is None else key
                if isinstance(key, str):
                    self.keys.append((i, key))
                else:
                    mlk_errs.append(
                        invalid(f"{path}.matchLabelKeys[{i}]", JSONValue(key), MUST_BE_STRING)
                    )
        elif mlk is not None:
            mlk_errs.append(invalid(path + ".matchLabelKeys", JSONValue(mlk), MUST_BE_LIST))


def decode_constraints(
    constraints: Any, path: str
) -> tuple[list[FieldError], list[DecodedConstraint | None]]:
    """Decode the list; a non-object element is reported and left out (None) of the rules."""
    if constraints is None:
        return [], []
    if not isinstance(constraints, list):
        return [invalid(path, JSONValue(constraints), MUST_BE_LIST)], []
    errs: list[FieldError] = []
    decoded: list[DecodedConstraint | None] = []
    for i, raw in enumerate(constraints):
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            errs.append(invalid(f"{path}[{i}]", JSONValue(raw), MUST_BE_OBJECT))
            decoded.append(None)
            continue
        decoded.append(DecodedConstraint(raw, f"{path}[{i}]"))
    return errs, decoded


def match_label_requirements(
    keys: Iterable[Any], labels: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(key, value) for each matchLabelKeys key the pod carries as a string label, in order.

    Keys the pod lacks are skipped (they narrow nothing), as upstream skips them.
    """
    return [(k, labels[k]) for k in keys if isinstance(k, str) and isinstance(labels.get(k), str)]


def apply_match_label_keys(selector: Any, keys: Any, labels: Mapping[str, Any]) -> Any:
    """applyMatchLabelKeys: labelSelector AND `key In (pod's value)` per present key.

    Returns a new selector (the argument is not changed). A selector that is not an
    object (nil selects nothing), or whose matchExpressions is not a list, and a
    keys value that is not a list, are returned as they are: validation reports them.
    Applying it to an already merged selector only repeats requirements, which selects
    the same pods (upstream's scheduler merges again too).
    """
    if not isinstance(selector, Mapping) or not isinstance(keys, list) or not keys:
        return selector
    exprs = selector.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        return selector
    extra = match_label_requirements(keys, labels)
    if not extra:
        return selector
    merged = dict(selector)
    merged["matchExpressions"] = list(exprs or []) + [requirement(k, v) for k, v in extra]
    return merged


def requirement(key: str, value: str) -> dict[str, Any]:
    """The requirement the merge appends for one key: `key In (value)`."""
    return {"key": key, "operator": "In", "values": [value]}


def type_errors_of(c: DecodedConstraint, name: str) -> list[FieldError]:
    return c.type_errors.get(name, [])


def unique_pair(c: DecodedConstraint | None) -> tuple[str, str] | None:
    """The {topologyKey, whenUnsatisfiable} pair that must be unique; None when a field's
    type was wrong (its error is reported instead) or the element is not an object."""
    if c is None or c.topology_key is BAD or c.when is BAD:
        return None
    return (c.topology_key, c.when)


def node_inclusion_inputs(pod_spec: Mapping[str, Any]) -> list[Any]:
    """What the node inclusion policies read of a pod: its nodeSelector and required node
    affinity (nodeAffinityPolicy: Honor) and its tolerations (nodeTaintsPolicy: Honor).
    Two pods alike here have their constraints' domains counted over the same nodes."""
    affinity = as_dict(as_dict(pod_spec.get("affinity")).get("nodeAffinity"))
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    return [pod_spec.get("nodeSelector"), required, pod_spec.get("tolerations")]
