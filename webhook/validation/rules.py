"""Every kube-apiserver rule on topologySpreadConstraints.

Pure functions: raw JSON in, FieldErrors out, never an exception. The rules, their
order, paths, cause types and messages follow kubernetes/kubernetes
pkg/apis/core/validation/validation.go (validateTopologySpreadConstraints and the
functions it calls), the create-time matchLabelKeys merge of
pkg/registry/core/pod/strategy.go and the update options of pkg/api/pod/util.go.
Warnings are advice.py's. docs/rules.md lists every rule.

`server_version` selects the API server whose rules to replay (None = newest).
From v1.34 (gate MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default)
kube-apiserver merges matchLabelKeys into labelSelector when it creates a Pod and
validates matchLabelKeys with ValidateMatchLabelKeysAndMismatchLabelKeys; before
that it validates them with ValidateMatchLabelKeysInTopologySpread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.constraint import (
    BAD,
    DO_NOT_SCHEDULE,
    NODE_INCLUSION_POLICIES,
    NOT_POSITIVE,
    SCHEDULE_ACTIONS,
    DecodedConstraint,
    apply_match_label_keys,
    decode_constraints,
    type_errors_of,
    unique_pair,
)
from webhook.api.field import (
    FieldError,
    JSONValue,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from webhook.api.kube import RawObj, pod_template, string_labels
from webhook.api.names import selector_keys, validate_label_name, validate_label_selector

__all__ = [
    "MERGE_SINCE",
    "validate_constraints",
    "validate_object",
]

# kube-apiserver merges matchLabelKeys into labelSelector at pod CREATE, and
# field errors render named types through json.Marshal, from this release on.
MERGE_SINCE = (1, 34)
JSON_VALUES_SINCE = (1, 34)
# From this release every kind's strategy runs declarative validation, whose
# FilterCoveredHandwrittenErrors (k8s.io/apimachinery pkg/api/validate) filters the
# handwritten errors through ErrorList.Filter, and so through ToAggregate: errors that
# render the same text collapse into the first (matchLabelKeys ["v", "v"] reports its
# "exists in both" once). Found against the real v1.37.2 kube-apiserver.
DEDUPLICATED_SINCE = (1, 37)


def _newest(server_version: tuple[int, int] | None, since: tuple[int, int]) -> bool:
    """True when the replayed API server is `since` or newer (None, or unreadable, is newest)."""
    if server_version is None:
        return True
    try:
        return tuple(server_version) >= since
    except TypeError:
        return True


def _legacy_match_label_keys(c: DecodedConstraint, path: str) -> list[FieldError]:
    """ValidateMatchLabelKeysInTopologySpread (before v1.34): keys vs the whole selector.

    Port of validation.go: validateMatchLabelKeysInTopologySpread.
    """
    if c.keys_len == 0:
        return []
    errs: list[FieldError] = []
    label_keys, expr_keys = selector_keys(c.selector)
    in_selector = set(label_keys) | set(expr_keys)
    if c.selector is None:
        errs.append(forbidden(path, "must not be specified when labelSelector is not set"))
    for i, key in c.keys:
        errs.extend(validate_label_name(key, f"{path}[{i}]"))
        if key in in_selector:
            errs.append(
                invalid(f"{path}[{i}]", key, "exists in both matchLabelKeys and labelSelector")
            )
    return errs


def _merged_match_label_keys(c: DecodedConstraint, path: str) -> list[FieldError]:
    """ValidateMatchLabelKeysAndMismatchLabelKeys (v1.34+), called with the constraint's path.

    A key is rejected only when a matchExpressions entry repeats a key already seen
    in matchLabels or in an earlier expression: after the create-time merge that is
    any key also written in labelSelector, or written twice in matchLabelKeys.
    Upstream puts that error on `<constraint>[<index>]` (no `.matchLabelKeys`).
    """
    errs: list[FieldError] = []
    if c.keys_len:
        if c.selector is None:
            errs.append(
                forbidden(
                    path + ".matchLabelKeys", "must not be specified when labelSelector is not set"
                )
            )
        else:
            for i, key in c.keys:
                errs.extend(validate_label_name(key, f"{path}.matchLabelKeys[{i}]"))
    if c.selector is not None:
        index_of = {key: i for i, key in c.keys}  # a repeated key keeps its last index
        label_keys, expr_keys = selector_keys(c.selector)
        seen = set(label_keys)
        for key in expr_keys:
            if key in index_of and key in seen:
                errs.append(
                    invalid(
                        f"{path}[{index_of[key]}]",
                        key,
                        "exists in both matchLabelKeys and labelSelector",
                    )
                )
            seen.add(key)
    return errs


def _last_index_of_pairs(decoded: list[DecodedConstraint | None]) -> dict[tuple[str, str], int]:
    """Each pair's last index: a constraint repeats a later one when its pair's last index
    is past its own (one pass instead of comparing every two constraints)."""
    last: dict[tuple[str, str], int] = {}
    for i, c in enumerate(decoded):
        pair = unique_pair(c)
        if pair is not None:
            last[pair] = i
    return last


def _selector_invalid(c: DecodedConstraint) -> bool:
    return bool(validate_label_selector(c.selector, "", json_typed=True))


def validate_constraints(
    constraints: Any,
    path: str,
    *,
    pod_labels: Mapping[str, str] | None = None,
    old_constraints: Any = None,
    server_version: tuple[int, int] | None = None,
) -> list[FieldError]:
    """Every rule of validateTopologySpreadConstraints, in upstream's order.

    `pod_labels` given means a Pod CREATE: from v1.34 the matchLabelKeys merge is
    applied first, as kube-apiserver's PrepareForCreate does. `old_constraints`
    given means an UPDATE: the old spec relaxes the labelSelector and
    matchLabelKeys rules exactly as GetValidationOptionsFromPodSpecAndMeta does.

    Port of validation.go: validateTopologySpreadConstraints.
    """
    errs, decoded = decode_constraints(constraints, path)
    json_typed = _newest(server_version, JSON_VALUES_SINCE)
    merge_rules = _newest(server_version, MERGE_SINCE)

    allow_invalid_selector = False
    old_violates_merged_rules = False
    if old_constraints is not None:
        _, old_decoded = decode_constraints(old_constraints, path)
        olds = [c for c in old_decoded if c is not None]
        allow_invalid_selector = any(_selector_invalid(c) for c in olds)
        old_violates_merged_rules = any(_merged_match_label_keys(c, "") for c in olds)

    def typed(value: Any) -> Any:
        return JSONValue(value) if json_typed else value

    last_of_pair = _last_index_of_pairs(decoded)

    for i, c in enumerate(decoded):
        if c is None:
            continue
        sub = f"{path}[{i}]"
        if merge_rules and pod_labels is not None:
            c.selector = apply_match_label_keys(c.selector, [k for _, k in c.keys], pod_labels)

        errs.extend(type_errors_of(c, "maxSkew"))
        if c.max_skew is not BAD and c.max_skew <= 0:
            errs.append(invalid(sub + ".maxSkew", c.max_skew, NOT_POSITIVE))
        errs.extend(type_errors_of(c, "topologyKey"))
        if c.topology_key == "":
            errs.append(required(sub + ".topologyKey", "can not be empty"))
        errs.extend(type_errors_of(c, "whenUnsatisfiable"))
        if c.when is not BAD and c.when not in SCHEDULE_ACTIONS:
            errs.append(not_supported(sub + ".whenUnsatisfiable", typed(c.when), SCHEDULE_ACTIONS))
        # Upstream checks each constraint against the ones after it.
        pair = unique_pair(c)
        if pair is not None and last_of_pair[pair] > i:
            errs.append(
                duplicate(
                    sub + ".{topologyKey, whenUnsatisfiable}",
                    f"{{{c.topology_key}, {c.when}}}",
                )
            )
        errs.extend(type_errors_of(c, "minDomains"))
        if c.min_domains is not None and c.min_domains is not BAD:
            if c.min_domains <= 0:
                errs.append(invalid(sub + ".minDomains", c.min_domains, NOT_POSITIVE))
            if c.when is not BAD and c.when != DO_NOT_SCHEDULE:
                errs.append(
                    invalid(
                        sub + ".minDomains",
                        c.min_domains,
                        f"can only use minDomains if whenUnsatisfiable={DO_NOT_SCHEDULE}, "
                        f"not {c.when}",
                    )
                )
        for name, policy in (
            ("nodeAffinityPolicy", c.affinity_policy),
            ("nodeTaintsPolicy", c.taints_policy),
        ):
            errs.extend(type_errors_of(c, name))
            if isinstance(policy, str) and policy not in NODE_INCLUSION_POLICIES:
                errs.append(not_supported(f"{sub}.{name}", typed(policy), NODE_INCLUSION_POLICIES))
        errs.extend(type_errors_of(c, "matchLabelKeys"))
        if merge_rules and not old_violates_merged_rules:
            errs.extend(_merged_match_label_keys(c, sub))
        else:
            errs.extend(_legacy_match_label_keys(c, sub + ".matchLabelKeys"))
        if not allow_invalid_selector:
            errs.extend(
                validate_label_selector(c.selector, sub + ".labelSelector", json_typed=json_typed)
            )
    return errs


def validate_object(
    obj: RawObj,
    *,
    old: RawObj | None = None,
    server_version: tuple[int, int] | None = None,
    merge: bool = True,
) -> list[FieldError]:
    """The topology spread rules on an object's pod template; paths follow the object.

    A Pod with no `old` is a CREATE: from v1.34 the API server merges its matchLabelKeys
    first, which `merge` replays; merge=False for a Pod the API server already merged
    (what a validating webhook receives). With `old` an UPDATE.
    Objects of other kinds, or without a usable pod template, give [].
    """
    tpl = pod_template(obj)
    if tpl is None:
        return []
    old_constraints = None
    if old is not None:
        old_tpl = pod_template(old)
        old_constraints = old_tpl.spec.get("topologySpreadConstraints") if old_tpl else None
    create_pod = tpl.kind == "Pod" and old is None and merge
    errs = validate_constraints(
        tpl.spec.get("topologySpreadConstraints"),
        tpl.spec_path + ".topologySpreadConstraints",
        pod_labels=string_labels(tpl.metadata.get("labels")) if create_pod else None,
        old_constraints=old_constraints,
        server_version=server_version,
    )
    if _newest(server_version, DEDUPLICATED_SINCE):
        errs = _first_of_each(errs)
    return errs


def _first_of_each(errs: list[FieldError]) -> list[FieldError]:
    """ToAggregate's dedup: the first of the errors that render the same text."""
    seen: set[str] = set()
    out = []
    for err in errs:
        text = err.error()
        if text not in seen:
            seen.add(text)
            out.append(err)
    return out
