"""kube-scheduler's plugin args validation (pkg/scheduler/apis/config/validation/
validation_pluginargs.go), with upstream's messages."""

from __future__ import annotations

from collections.abc import Mapping

from webhook.api.constraint import (
    BAD,
    SCHEDULE_ACTIONS,
    DecodedConstraint,
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
from webhook.api.names import MUST_BE_OBJECT, validate_label_name
from webhook.scheduler.config.types import SpreadArgs

__all__ = ["validate_spread_args"]


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
    decoded: list[DecodedConstraint | None] = []
    seen_pairs: set[tuple[str, str]] = set()
    for i, raw in enumerate(constraints):
        p = f"defaultConstraints[{i}]"
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            errs.append(invalid(p, JSONValue(raw), MUST_BE_OBJECT))
            decoded.append(None)
            continue
        c = DecodedConstraint(raw, p)
        decoded.append(c)
        errs.extend(type_errors_of(c, "maxSkew"))
        if c.max_skew is not BAD and c.max_skew <= 0:
            errs.append(invalid(p + ".maxSkew", c.max_skew, "not in valid range (0, inf)"))
        errs.extend(type_errors_of(c, "topologyKey"))
        if c.topology_key == "":
            errs.append(required(p + ".topologyKey", "can not be empty"))
        elif c.topology_key is not BAD:
            errs.extend(validate_label_name(c.topology_key, p + ".topologyKey"))
        errs.extend(type_errors_of(c, "whenUnsatisfiable"))
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
        pair = unique_pair(c)
        if pair is not None:
            if pair in seen_pairs:
                errs.append(duplicate(p, f"{{{c.topology_key}, {c.when}}}"))
            seen_pairs.add(pair)
    return list(dict.fromkeys(e.error() for e in errs))
