"""Settings: one frozen dataclass, read and validated once at start.

The config file is YAML. Keys we own:
  podTopologySpread:   exactly kube-scheduler's PodTopologySpreadArgs
                       (defaultConstraints, defaultingType System|List)
  injectDefaults:      bool, default true
  injectNamespaceSelector: a LabelSelector over Namespace labels; defaults are
                       injected only into pods of namespaces it selects (absent:
                       every namespace)
  matchLabelKeysMerge: auto | webhook | apiserver, default auto
  policy.denyUnschedulable: bool, default false
Other keys are free and kept in `raw`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from webhook.api.kube import RawObj
from webhook.api.names import validate_label_selector
from webhook.errors import ConfigError
from webhook.scheduler.config.types import DefaultingType, SpreadArgs
from webhook.scheduler.config.validation import validate_spread_args

MergeMode = Literal["auto", "webhook", "apiserver"]
MERGE_MODES: tuple[MergeMode, ...] = ("auto", "webhook", "apiserver")

@dataclass(frozen=True)
class Settings:
    """Everything the webhook reads from its config file."""

    spread: SpreadArgs = field(default_factory=SpreadArgs)
    inject_defaults: bool = True
    match_label_keys_merge: MergeMode = "auto"
    deny_unschedulable: bool = False
    # None: every namespace; else a metav1.LabelSelector over Namespace labels.
    inject_namespace_selector: RawObj | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


def _bool(raw: Mapping[str, Any], key: str, default: bool, where: str = "") -> bool:
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{where}{key}: must be true or false, got {value!r}")
    return value


def settings_from_dict(raw: Any) -> Settings:
    """Build Settings from a parsed config document; raise ConfigError when invalid."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("config: the document must be a mapping")
    spread_raw = raw.get("podTopologySpread") or {}
    if not isinstance(spread_raw, dict):
        raise ConfigError("podTopologySpread: must be a mapping (PodTopologySpreadArgs)")
    constraints = spread_raw.get("defaultConstraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, dict) for c in constraints):
        raise ConfigError("podTopologySpread.defaultConstraints: must be a list of constraints")
    # Checked below with the scheduler's own rules (System | List), hence the cast.
    defaulting_type = cast(DefaultingType, spread_raw.get("defaultingType") or "System")
    spread = SpreadArgs(default_constraints=tuple(constraints), defaulting_type=defaulting_type)
    errors = validate_spread_args(spread)
    if errors:
        raise ConfigError("podTopologySpread: " + "; ".join(errors))

    mode = raw.get("matchLabelKeysMerge", "auto")
    if mode not in MERGE_MODES:
        raise ConfigError(
            f"matchLabelKeysMerge: must be one of {', '.join(MERGE_MODES)}, got {mode!r}"
        )
    policy = raw.get("policy") or {}
    if not isinstance(policy, dict):
        raise ConfigError("policy: must be a mapping")
    ns_selector = raw.get("injectNamespaceSelector")
    if ns_selector is not None:
        problems = validate_label_selector(ns_selector, "injectNamespaceSelector")
        if problems:
            raise ConfigError("; ".join(f"{e.field}: {e.body()}" for e in problems))
    return Settings(
        spread=spread,
        inject_defaults=_bool(raw, "injectDefaults", True),
        match_label_keys_merge=mode,
        deny_unschedulable=_bool(policy, "denyUnschedulable", False, "policy."),
        inject_namespace_selector=ns_selector,
        raw=raw,
    )


def load_settings(path: str | Path | None) -> Settings:
    """Read a config file (YAML); None gives the defaults."""
    if path is None:
        return settings_from_dict({})
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {path} is not valid YAML: {exc}") from exc
    return settings_from_dict(raw)
