"""Every kube-apiserver rule on topologySpreadConstraints, plus the advice we give.

Pure functions: raw JSON in, FieldErrors (or warning strings) out, never an
exception. The rules, their order, paths, cause types and messages follow
kubernetes/kubernetes pkg/apis/core/validation/validation.go
(validateTopologySpreadConstraints and the functions it calls), the create-time
matchLabelKeys merge of pkg/registry/core/pod/strategy.go, the update options of
pkg/api/pod/util.go and the warnings of pkg/api/pod/warnings.go; kube-scheduler's
PodTopologySpreadArgs checks follow pkg/scheduler/apis/config/validation/
validation_pluginargs.go. docs/rules.md lists every rule.

`server_version` selects the API server whose rules to replay (None = newest).
From v1.34 (gate MatchLabelKeysInPodTopologySpreadSelectorMerge, on by default)
kube-apiserver merges matchLabelKeys into labelSelector when it creates a Pod and
validates matchLabelKeys with ValidateMatchLabelKeysAndMismatchLabelKeys; before
that it validates them with ValidateMatchLabelKeysInTopologySpread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.field import (
    FieldError,
    JSONValue,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from webhook.api.kube import RawObj, pod_template
from webhook.api.names import (
    MUST_BE_LIST,
    MUST_BE_OBJECT,
    MUST_BE_STRING,
    selector_keys,
    selector_selects,
    validate_label_name,
    validate_label_selector,
)
from webhook.config import SpreadArgs

__all__ = [
    "MERGE_SINCE",
    "object_warnings",
    "validate_constraints",
    "validate_object",
    "validate_spread_args",
]

# kube-apiserver merges matchLabelKeys into labelSelector at pod CREATE, and
# field errors render named types through json.Marshal, from this release on.
MERGE_SINCE = (1, 34)
JSON_VALUES_SINCE = (1, 34)

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
SCHEDULE_ACTIONS = [DO_NOT_SCHEDULE, SCHEDULE_ANYWAY]  # sets.List: sorted
NODE_INCLUSION_POLICIES = ["Honor", "Ignore"]  # sets.List: sorted
NOT_POSITIVE = "must be greater than zero"
MUST_BE_INTEGER = "must be an integer"
MUST_BE_INT32 = "must fit in a 32-bit integer"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
WELL_KNOWN_TOPOLOGY_KEYS = (HOSTNAME, ZONE, REGION)

# pkg/api/node/util.go deprecatedNodeLabels, worded as upstream warns about them.
DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": (
        'deprecated since v1.17; use "topology.kubernetes.io/region" instead'
    ),
    "failure-domain.beta.kubernetes.io/zone": (
        'deprecated since v1.17; use "topology.kubernetes.io/zone" instead'
    ),
    "beta.kubernetes.io/instance-type": (
        'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead'
    ),
}

# Labels a controller adds to the pods it creates from a template: a
# matchLabelKeys entry naming one of them is not missing on the real pods.
CONTROLLER_POD_LABELS: dict[str, frozenset[str]] = {
    "Deployment": frozenset({"pod-template-hash"}),
    "StatefulSet": frozenset(
        {
            "controller-revision-hash",
            "statefulset.kubernetes.io/pod-name",
            "apps.kubernetes.io/pod-index",
        }
    ),
    "DaemonSet": frozenset({"controller-revision-hash", "pod-template-generation"}),
    "Job": frozenset(
        {
            "controller-uid",
            "job-name",
            "batch.kubernetes.io/controller-uid",
            "batch.kubernetes.io/job-name",
            "batch.kubernetes.io/job-completion-index",
        }
    ),
}
CONTROLLER_POD_LABELS["CronJob"] = CONTROLLER_POD_LABELS["Job"]


class _Bad:
    """A field whose JSON type is wrong: its error is already reported; its rules are skipped."""

    def __repr__(self) -> str:
        return "<bad>"


BAD = _Bad()


def _newest(server_version: tuple[int, int] | None, since: tuple[int, int]) -> bool:
    """True when the replayed API server is `since` or newer (None, or unreadable, is newest)."""
    if server_version is None:
        return True
    try:
        return tuple(server_version) >= since
    except TypeError:
        return True


def _string_labels(labels: Any) -> dict[str, str]:
    """The usable string labels of a metadata.labels value; anything else reads as no label."""
    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


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


class _Constraint:
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


def _decode(constraints: Any, path: str) -> tuple[list[FieldError], list[_Constraint | None]]:
    """Decode the list; a non-object element is reported and left out (None) of the rules."""
    if constraints is None:
        return [], []
    if not isinstance(constraints, list):
        return [invalid(path, JSONValue(constraints), MUST_BE_LIST)], []
    errs: list[FieldError] = []
    decoded: list[_Constraint | None] = []
    for i, raw in enumerate(constraints):
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            errs.append(invalid(f"{path}[{i}]", JSONValue(raw), MUST_BE_OBJECT))
            decoded.append(None)
            continue
        decoded.append(_Constraint(raw, f"{path}[{i}]"))
    return errs, decoded


def _legacy_match_label_keys(c: _Constraint, path: str) -> list[FieldError]:
    """ValidateMatchLabelKeysInTopologySpread (before v1.34): keys vs the whole selector."""
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


def _merged_match_label_keys(c: _Constraint, path: str) -> list[FieldError]:
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


def _merge(c: _Constraint, pod_labels: Mapping[str, str]) -> None:
    """pkg/registry/core/pod/strategy.go applyMatchLabelKeys: `key In (value)` per present label."""
    if c.keys_len == 0 or not isinstance(c.selector, Mapping):
        return
    exprs = c.selector.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        return
    merged = dict(c.selector)
    merged_exprs = list(exprs or [])
    for _, key in c.keys:
        if key in pod_labels:
            merged_exprs.append({"key": key, "operator": "In", "values": [pod_labels[key]]})
    merged["matchExpressions"] = merged_exprs
    c.selector = merged


def _slot(c: _Constraint, name: str) -> list[FieldError]:
    return c.type_errors.get(name, [])


def _pair(c: _Constraint | None) -> tuple[str, str] | None:
    """The {topologyKey, whenUnsatisfiable} pair that must be unique; None when a field's
    type was wrong (its error is reported instead) or the element is not an object."""
    if c is None or c.topology_key is BAD or c.when is BAD:
        return None
    return (c.topology_key, c.when)


def _last_index_of_pairs(decoded: list[_Constraint | None]) -> dict[tuple[str, str], int]:
    """Each pair's last index: a constraint repeats a later one when its pair's last index
    is past its own (one pass instead of comparing every two constraints)."""
    last: dict[tuple[str, str], int] = {}
    for i, c in enumerate(decoded):
        pair = _pair(c)
        if pair is not None:
            last[pair] = i
    return last


def _selector_invalid(c: _Constraint) -> bool:
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
    """
    errs, decoded = _decode(constraints, path)
    json_typed = _newest(server_version, JSON_VALUES_SINCE)
    merge_rules = _newest(server_version, MERGE_SINCE)

    allow_invalid_selector = False
    old_violates_merged_rules = False
    if old_constraints is not None:
        _, old_decoded = _decode(old_constraints, path)
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
            _merge(c, pod_labels)

        errs.extend(_slot(c, "maxSkew"))
        if c.max_skew is not BAD and c.max_skew <= 0:
            errs.append(invalid(sub + ".maxSkew", c.max_skew, NOT_POSITIVE))
        errs.extend(_slot(c, "topologyKey"))
        if c.topology_key == "":
            errs.append(required(sub + ".topologyKey", "can not be empty"))
        errs.extend(_slot(c, "whenUnsatisfiable"))
        if c.when is not BAD and c.when not in SCHEDULE_ACTIONS:
            errs.append(not_supported(sub + ".whenUnsatisfiable", typed(c.when), SCHEDULE_ACTIONS))
        # Upstream checks each constraint against the ones after it.
        pair = _pair(c)
        if pair is not None and last_of_pair[pair] > i:
            errs.append(
                duplicate(
                    sub + ".{topologyKey, whenUnsatisfiable}",
                    f"{{{c.topology_key}, {c.when}}}",
                )
            )
        errs.extend(_slot(c, "minDomains"))
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
            errs.extend(_slot(c, name))
            if isinstance(policy, str) and policy not in NODE_INCLUSION_POLICIES:
                errs.append(not_supported(f"{sub}.{name}", typed(policy), NODE_INCLUSION_POLICIES))
        errs.extend(_slot(c, "matchLabelKeys"))
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
    return validate_constraints(
        tpl.spec.get("topologySpreadConstraints"),
        tpl.spec_path + ".topologySpreadConstraints",
        pod_labels=_string_labels(tpl.metadata.get("labels")) if create_pod else None,
        old_constraints=old_constraints,
        server_version=server_version,
    )


def object_warnings(obj: RawObj) -> list[str]:
    """Upstream's topology spread warnings, then our advice; each starts with the field path.

    Only constraints whose own fields validate are advised on: errors come first.
    """
    tpl = pod_template(obj)
    if tpl is None:
        return []
    constraints = tpl.spec.get("topologySpreadConstraints")
    if not isinstance(constraints, list):
        return []
    path = tpl.spec_path + ".topologySpreadConstraints"
    labels = _string_labels(tpl.metadata.get("labels"))
    controller_labels = CONTROLLER_POD_LABELS.get(tpl.kind, frozenset())
    warnings: list[str] = []
    for i, raw in enumerate(constraints):
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            continue
        sub = f"{path}[{i}]"
        key = raw.get("topologyKey")
        sel = raw.get("labelSelector")
        # pkg/api/pod/warnings.go
        if isinstance(key, str) and key in DEPRECATED_NODE_LABELS:
            warnings.append(f"{sub}.topologyKey: {key} is {DEPRECATED_NODE_LABELS[key]}")
        if sel is None:
            warnings.append(f"{sub}.labelSelector: a null labelSelector results in matching no pod")
        warnings.extend(_advice(raw, sub, tpl.kind, labels, controller_labels))
    return warnings


def _advice(
    raw: Mapping[str, Any],
    sub: str,
    kind: str,
    labels: Mapping[str, str],
    controller_labels: frozenset[str],
) -> list[str]:
    out: list[str] = []
    key = raw.get("topologyKey")
    when = raw.get("whenUnsatisfiable")
    sel = raw.get("labelSelector")
    mlk = raw.get("matchLabelKeys")
    keys = [k for k in mlk if isinstance(k, str)] if isinstance(mlk, list) else []
    unschedulable = " and cannot run this pod" if when == DO_NOT_SCHEDULE else ""
    label_keys, expr_keys = selector_keys(sel)
    in_selector = set(label_keys) | set(expr_keys)
    if isinstance(key, str) and key and validate_label_name(key, ""):
        # kube-apiserver does not check the format of a pod's topologyKey; no node can carry it.
        out.append(
            f"{sub}.topologyKey: {key} is not a valid label key, so no node has it; "
            f"every node is left out of the spread{unschedulable}"
        )
    elif (
        isinstance(key, str)
        and key
        and key not in WELL_KNOWN_TOPOLOGY_KEYS
        and key not in DEPRECATED_NODE_LABELS
    ):
        text = (
            f"{sub}.topologyKey: {key!s} is not a well-known topology label "
            f"({', '.join(WELL_KNOWN_TOPOLOGY_KEYS)}); nodes without it are left out of the spread"
            f"{unschedulable}"
        )
        out.append(text)
    selector_ok = isinstance(sel, Mapping) and not validate_label_selector(sel, "")
    if selector_ok:
        assert isinstance(sel, Mapping)
        if not sel.get("matchLabels") and not sel.get("matchExpressions") and not keys:
            out.append(
                f"{sub}.labelSelector: an empty labelSelector selects every pod in the namespace, "
                "so unrelated pods are counted in the spread"
            )
        elif not selector_selects(sel, labels):
            out.append(
                f"{sub}.labelSelector: does not select this pod's own labels; the constraint "
                "counts other pods but never this pod or its replicas, which can then pile up "
                "in one domain (ghost pods)"
            )
    for j, k in enumerate(mlk if isinstance(mlk, list) else []):
        if not isinstance(k, str) or not k or validate_label_name(k, ""):
            continue
        if k not in labels and k not in controller_labels:
            out.append(
                f"{sub}.matchLabelKeys[{j}]: the pod has no label {k}; "
                "the key is skipped and narrows nothing"
            )
        elif kind != "Pod" and isinstance(sel, Mapping) and k in labels:
            if k in in_selector:
                out.append(
                    f"{sub}.matchLabelKeys[{j}]: {k} is also in labelSelector; kube-apiserver "
                    "v1.34+ merges it into labelSelector when it creates each pod and then "
                    "rejects the pod (exists in both matchLabelKeys and labelSelector)"
                )
    return out


def validate_spread_args(args: SpreadArgs) -> list[str]:
    """kube-scheduler's ValidatePodTopologySpreadArgs, as rendered error strings (deduplicated)."""
    errs: list[FieldError] = []
    defaulting = args.defaulting_type
    constraints = list(args.default_constraints or ())
    if defaulting not in ("System", "List"):
        errs.append(not_supported("defaultingType", JSONValue(defaulting), ["System", "List"]))
    elif defaulting == "System" and constraints:
        errs.append(
            invalid(
                "defaultingType", JSONValue(defaulting), "when .defaultConstraints are not empty"
            )
        )
    decoded: list[_Constraint | None] = []
    seen_pairs: set[tuple[str, str]] = set()
    for i, raw in enumerate(constraints):
        p = f"defaultConstraints[{i}]"
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            errs.append(invalid(p, JSONValue(raw), MUST_BE_OBJECT))
            decoded.append(None)
            continue
        c = _Constraint(raw, p)
        decoded.append(c)
        errs.extend(_slot(c, "maxSkew"))
        if c.max_skew is not BAD and c.max_skew <= 0:
            errs.append(invalid(p + ".maxSkew", c.max_skew, "not in valid range (0, inf)"))
        errs.extend(_slot(c, "topologyKey"))
        if c.topology_key == "":
            errs.append(required(p + ".topologyKey", "can not be empty"))
        elif c.topology_key is not BAD:
            errs.extend(validate_label_name(c.topology_key, p + ".topologyKey"))
        errs.extend(_slot(c, "whenUnsatisfiable"))
        if c.when == "":
            errs.append(required(p + ".whenUnsatisfiable", "can not be empty"))
        elif c.when is not BAD and c.when not in SCHEDULE_ACTIONS:
            errs.append(
                not_supported(p + ".whenUnsatisfiable", JSONValue(c.when), SCHEDULE_ACTIONS)
            )
        if raw.get("labelSelector") is not None:
            errs.append(
                forbidden(
                    p + ".labelSelector",
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        # kube-scheduler checks each default constraint against the ones before it.
        pair = _pair(c)
        if pair is not None:
            if pair in seen_pairs:
                errs.append(duplicate(p, f"{{{c.topology_key}, {c.when}}}"))
            seen_pairs.add(pair)
    return list(dict.fromkeys(e.error() for e in errs))
