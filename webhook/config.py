"""Settings: one frozen dataclass, read and validated once at start.

The config file is YAML. Keys we own:
  schedulerConfiguration: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
                       inline, read exactly as kube-scheduler reads its --config file;
                       `--scheduler-config FILE` replaces it
  podTopologySpread:   exactly kube-scheduler's PodTopologySpreadArgs
                       (defaultConstraints, defaultingType System|List); the same
                       as a PodTopologySpread pluginConfig entry in every profile
                       that has none of its own
  injectDefaults:      bool, default true
  injectNamespaceSelector: a LabelSelector over Namespace labels; defaults are
                       injected only into pods of namespaces it selects (absent:
                       every namespace)
  matchLabelKeysMerge: auto | webhook | apiserver, default auto
  kubernetesVersion:   1.35 | 1.36 | 1.37 (a patch such as 1.36.3 accepted): the release
                       whose scheduler, API server and controllers are modelled; absent:
                       the API server's /version when connected, else the newest
                       (docs/versions.md)
  featureGates:        gate -> bool, for the gates the model knows
                       (webhook.api.versions.GATES); the release's defaults otherwise
  policy.denyUnschedulable: bool, default false
  policy.separateRevisions: bool, default false: /mutate adds pod-template-hash to the
                       matchLabelKeys of each constraint of a Deployment's pods, so a
                       rollout's revisions are spread apart (admission/revisions.py)
  audit.intervalSeconds: int >= 0, default 300: how often `topospread audit --watch`
                       audits the cluster (0 turns the periodic audit off)
  audit.policyReports: bool, default false: write one wgpolicyk8s.io/v1alpha2
                       PolicyReport per namespace with the violations (docs/audit-server.md)
  audit.includeSoft:   bool, default false: also audit ScheduleAnyway constraints
  audit.reports:       wgpolicyk8s | openreports | both, default wgpolicyk8s: the API(s)
                       audit.policyReports writes to (openreports.io/v1alpha1 Report)
  audit.report:        bool, default false: `audit --watch` serves the latest audit as
                       an HTML page at /report on its metrics port
  audit.rebalance.enabled: bool, default false: after each periodic audit, carry out
                       steps of the plan (evictions; docs/audit.md, "Carrying out the plan")
  audit.rebalance.maxEvictionsPerRun: int >= 1, default 1: steps at most per audit
  audit.rebalance.namespaces: list of namespace names, default all: the workloads
                       rebalanced
  audit.deletionCosts.enabled: bool, default false: `audit --watch` keeps the
                       pod-deletion-cost annotations of ReplicaSet pods so that
                       scale-downs keep their spread (docs/deletion-costs.md)
  audit.deletionCosts.namespaces: list of namespace names, default (or empty) all
  audit.deletionCosts.qps: number > 0, default 5: the keeper's requests per second
  nodeGroupLabels:     list of node label keys naming a node's group for the scale-up
                       diagnosis of pending pods (first one a node carries wins);
                       replaces scheduler.scaleup.DEFAULT_GROUP_LABELS (docs/pending.md)
Other keys are free and kept in `raw`.

The scheduler profiles are resolved here, once (webhook.scheduler.config.profiles):
a configuration kube-scheduler would refuse is a ConfigError carrying its messages.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast

import yaml

from webhook.api.kube import RawObj, spec
from webhook.api.names import (
    namespace_names_problem,
    validate_label_name,
    validate_label_selector,
)
from webhook.api.versions import (
    NEWEST,
    SUPPORTED,
    Features,
    KubeVersion,
    VersionError,
    features_for,
    parse_kubernetes_version,
)
from webhook.errors import ConfigError
from webhook.scheduler.config.defaults import DEFAULT_SCHEDULER_NAME
from webhook.scheduler.config.profiles import (
    API_VERSION,
    KIND,
    ResolvedProfile,
    resolve_configuration,
)
from webhook.scheduler.config.types import DefaultingType, SpreadArgs
from webhook.scheduler.config.validation import validate_spread_args
from webhook.scheduler.placement import Framework, Sampler, framework_of
from webhook.scheduler.scaleup import DEFAULT_GROUP_LABELS

__all__ = [
    "AUDIT_DEFAULT_INTERVAL",
    "MERGE_MODES",
    "SCHEDULER_CONFIG_KEY",
    "AuditSettings",
    "DeletionCostSettings",
    "MergeMode",
    "RebalanceSettings",
    "SamplingOptions",
    "Settings",
    "default_profiles",
    "load_scheduler_config",
    "load_settings",
    "settings_from_dict",
]

MergeMode = Literal["auto", "webhook", "apiserver"]
MERGE_MODES: tuple[MergeMode, ...] = ("auto", "webhook", "apiserver")

SCHEDULER_CONFIG_KEY = "schedulerConfiguration"
_SPREAD_KEY = "podTopologySpread"
_PTS = "PodTopologySpread"


@cache
def default_profiles() -> tuple[ResolvedProfile, ...]:
    """kube-scheduler's profiles without a configuration: default-scheduler alone."""
    profiles, errors = resolve_configuration({})
    if errors:  # pragma: no cover - the defaults are valid by construction
        raise ConfigError("; ".join(errors))
    return profiles


AUDIT_DEFAULT_INTERVAL = 300
FORESIGHT_DEFAULT_BUDGET_MS = 25
FORESIGHT_MAX_BUDGET_MS = 10_000
_AUDIT_KEYS = (
    "deletionCosts",
    "includeSoft",
    "intervalSeconds",
    "policyReports",
    "rebalance",
    "report",
    "reports",
)
_REBALANCE_KEYS = ("enabled", "maxEvictionsPerRun", "namespaces")
_DELETION_COST_KEYS = ("enabled", "namespaces", "qps")
DELETION_COSTS_DEFAULT_QPS = 5.0
# audit.reports: the reporting APIs audit.policyReports writes to.
REPORT_APIS: dict[str, tuple[str, ...]] = {
    "wgpolicyk8s": ("wgpolicyk8s",),
    "openreports": ("openreports",),
    "both": ("wgpolicyk8s", "openreports"),
}


@dataclass(frozen=True)
class RebalanceSettings:
    """audit.rebalance: the audit Deployment carries out the plan, a few steps per audit."""

    enabled: bool = False
    # Evictions at most after one audit.
    max_evictions_per_run: int = 1
    # The namespaces whose workloads are rebalanced; empty: every namespace.
    namespaces: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeletionCostSettings:
    """audit.deletionCosts: the keeper of pod-deletion-cost annotations (opt-in)."""

    enabled: bool = False
    # The namespaces whose pods it writes; None (also for an empty list): every namespace.
    namespaces: tuple[str, ...] | None = None
    # Requests per second to the API server (reads and writes of pods).
    qps: float = DELETION_COSTS_DEFAULT_QPS


@dataclass(frozen=True)
class AuditSettings:
    """The `audit` key: what the periodic audit (`topospread audit --watch`) does."""

    # Seconds from the start of one audit to the start of the next; 0: no periodic audit.
    interval_seconds: int = AUDIT_DEFAULT_INTERVAL
    # Write one PolicyReport per namespace with violations (and delete ours when clean).
    policy_reports: bool = False
    # Also audit ScheduleAnyway constraints (the CLI's --include-soft).
    include_soft: bool = False
    # audit.reports: which APIs policy_reports writes to (a key of REPORT_APIS).
    reports: str = "wgpolicyk8s"
    # audit.report: serve the latest audit as HTML at /report on the metrics port.
    report: bool = False
    # audit.rebalance: carry out steps of the plan after each audit (opt-in).
    rebalance: RebalanceSettings = field(default_factory=RebalanceSettings)
    # audit.deletionCosts: keep the pods' deletion costs (webhook/audit/act/keeper.py).
    deletion_costs: DeletionCostSettings = field(default_factory=DeletionCostSettings)

    @property
    def report_apis(self) -> tuple[str, ...]:
        """The reporting APIs written to: none unless policy_reports is on."""
        return REPORT_APIS[self.reports] if self.policy_reports else ()


@dataclass(frozen=True)
class SamplingOptions:
    """The CLI's --percentage-of-nodes-to-score and --seed: every run of scheduling
    cycles (a drill's queue) samples as kube-scheduler does (docs/simulate.md)."""

    # percentageOfNodesToScore for every profile (None: the profile's, else 0, adaptive)
    percentage: int | None = None
    # the seed of the run's random source
    seed: int = 0


@dataclass(frozen=True)
class Settings:
    """Everything the webhook reads from its config file (and --scheduler-config)."""

    # The KubeSchedulerConfiguration's profiles, resolved once; read-only.
    scheduler: tuple[ResolvedProfile, ...] = field(default_factory=default_profiles)
    inject_defaults: bool = True
    match_label_keys_merge: MergeMode = "auto"
    deny_unschedulable: bool = False
    # policy.separateRevisions: /mutate adds pod-template-hash to the matchLabelKeys of a
    # Deployment's pods (webhook.admission.revisions).
    separate_revisions: bool = False
    # policy.foresightBudgetMilliseconds: the time the unschedulable foresight may take
    # per review before it gives up (0: never look).
    foresight_budget_ms: int = FORESIGHT_DEFAULT_BUDGET_MS
    # None: every namespace; else a metav1.LabelSelector over Namespace labels.
    inject_namespace_selector: RawObj | None = None
    audit: AuditSettings = field(default_factory=AuditSettings)
    # nodeGroupLabels: the node labels naming a node's group, first match wins.
    node_group_labels: tuple[str, ...] = DEFAULT_GROUP_LABELS
    raw: Mapping[str, Any] = field(default_factory=dict)
    # Sampling asked for on the command line; None: only the profiles that set
    # percentageOfNodesToScore sample.
    sampling: SamplingOptions | None = None
    # kubernetesVersion: the release modelled; None when the config names none (the
    # API server's /version decides when connected, else the newest: `for_version`).
    kubernetes_version: KubeVersion | None = None
    # featureGates: the config's overrides of the release's gate defaults.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    # What the profiles were resolved from (cfg, origin, podTopologySpread args), so
    # that `for_version` resolves them again for another release; None: the defaults.
    scheduler_source: tuple[Any, str, RawObj | None] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def modelled_version(self) -> KubeVersion:
        """The release the profiles stand for: the configured one, else the newest."""
        return self.kubernetes_version or NEWEST

    @property
    def features(self) -> Features:
        """The modelled release with its feature gates."""
        return features_for(self.modelled_version, self.feature_gates)

    def for_version(self, version: KubeVersion | None) -> Settings:
        """These settings for the release `version` (the command line's
        --kubernetes-version or the cluster's /version); the config's
        kubernetesVersion is only a default, so `version` wins. None: unchanged.
        ConfigError when the feature gates or the scheduler configuration do not hold
        for that release."""
        if version is None or version == self.kubernetes_version:
            return self
        return _settings_for(self, version)

    def new_sampler(self) -> Sampler:
        """A fresh run's sampler: the command line's options, else one that samples only
        for a profile setting percentageOfNodesToScore (seed 0)."""
        if self.sampling is None:
            return Sampler(always=False)
        return Sampler(self.sampling.percentage, self.sampling.seed)

    def profile_for(self, scheduler_name: str) -> ResolvedProfile | None:
        """The profile scheduling pods of `scheduler_name` ("" is default-scheduler, as
        the API server defaults spec.schedulerName); None when no profile does: as
        upstream, such a pod is left to another scheduler."""
        wanted = scheduler_name or DEFAULT_SCHEDULER_NAME
        for profile in self.scheduler:
            if profile.scheduler_name == wanted:
                return profile
        return None

    def framework_for(self, pod: RawObj) -> Framework | None:
        """The scheduling Framework of the profile that schedules `pod` (by its
        spec.schedulerName), built once per profile; None when no profile does."""
        name = spec(pod).get("schedulerName")
        profile = self.profile_for(name if isinstance(name, str) else "")
        return None if profile is None else framework_of(profile)

    @property
    def spread(self) -> SpreadArgs:
        """PodTopologySpreadArgs of the default-scheduler profile (kube-scheduler's
        defaults when that profile is absent or does not run PodTopologySpread)."""
        profile = self.profile_for(DEFAULT_SCHEDULER_NAME)
        args = profile.args.get(_PTS) if profile is not None else None
        return args if isinstance(args, SpreadArgs) else SpreadArgs()


def _bool(raw: Mapping[str, Any], key: str, default: bool, where: str = "") -> bool:
    value = raw.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{where}{key}: must be true or false, got {value!r}")
    return value


def _section(value: Any, where: str, known: tuple[str, ...]) -> dict[str, Any] | None:
    """A settings mapping at `where` (None when absent), its keys among `known`: an
    unknown key is refused (a typo would otherwise silently keep a default)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping, got {value!r}")
    unknown = sorted(str(k) for k in value if k not in known)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(known)})")
    return value


def _audit(raw: Mapping[str, Any]) -> AuditSettings:
    """The `audit` key, every value checked; an unknown key is refused (a typo would
    otherwise silently keep a default)."""
    section = _section(raw.get("audit"), "audit", _AUDIT_KEYS)
    if section is None:
        return AuditSettings()
    interval = section.get("intervalSeconds", AUDIT_DEFAULT_INTERVAL)
    if interval is None:
        interval = AUDIT_DEFAULT_INTERVAL
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 0:
        raise ConfigError(
            "audit.intervalSeconds: must be a whole number of seconds, 0 or more "
            f"(0 turns the periodic audit off), got {interval!r}"
        )
    reports = section.get("reports")
    if reports is None:
        reports = "wgpolicyk8s"
    if reports not in REPORT_APIS:
        raise ConfigError(
            f"audit.reports: must be one of {' | '.join(REPORT_APIS)}, got {reports!r}"
        )
    return AuditSettings(
        interval_seconds=interval,
        policy_reports=_bool(section, "policyReports", False, "audit."),
        include_soft=_bool(section, "includeSoft", False, "audit."),
        reports=str(reports),
        report=_bool(section, "report", False, "audit."),
        rebalance=_rebalance(section),
        deletion_costs=_deletion_costs(section),
    )


def _rebalance(audit: Mapping[str, Any]) -> RebalanceSettings:
    """audit.rebalance, every value checked, unknown keys refused (as _audit)."""
    section = _section(audit.get("rebalance"), "audit.rebalance", _REBALANCE_KEYS)
    if section is None:
        return RebalanceSettings()
    most = section.get("maxEvictionsPerRun")
    if most is None:
        most = 1
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        raise ConfigError(
            f"audit.rebalance.maxEvictionsPerRun: must be a whole number, 1 or more, got {most!r}"
        )
    namespaces = section.get("namespaces")
    if namespaces is None:
        namespaces = []
    if not isinstance(namespaces, list):
        raise ConfigError(
            f"audit.rebalance.namespaces: must be a list of namespace names, got {namespaces!r}"
        )
    problem = namespace_names_problem(namespaces, "audit.rebalance.namespaces")
    if problem is not None:
        raise ConfigError(problem)
    return RebalanceSettings(
        enabled=_bool(section, "enabled", False, "audit.rebalance."),
        max_evictions_per_run=most,
        namespaces=tuple(dict.fromkeys(namespaces)),
    )


def _deletion_costs(audit: Mapping[str, Any]) -> DeletionCostSettings:
    """audit.deletionCosts, every value checked, unknown keys refused."""
    where = "audit.deletionCosts"
    section = _section(audit.get("deletionCosts"), where, _DELETION_COST_KEYS)
    if section is None:
        return DeletionCostSettings()
    namespaces = section.get("namespaces")
    if namespaces is not None:
        if (
            not isinstance(namespaces, list)
            or namespace_names_problem(namespaces, f"{where}.namespaces") is not None
        ):
            raise ConfigError(
                f"{where}.namespaces: must be a list of namespace names, got {namespaces!r}"
            )
        # An empty list is every namespace, as for audit.rebalance.namespaces.
        namespaces = tuple(dict.fromkeys(namespaces)) or None
    qps = section.get("qps", DELETION_COSTS_DEFAULT_QPS)
    if qps is None:
        qps = DELETION_COSTS_DEFAULT_QPS
    if isinstance(qps, bool) or not isinstance(qps, int | float) or not 0 < qps <= 1000:
        raise ConfigError(f"{where}.qps: must be a number above 0, at most 1000, got {qps!r}")
    return DeletionCostSettings(
        enabled=_bool(section, "enabled", False, f"{where}."),
        namespaces=namespaces,
        qps=float(qps),
    )


def _node_group_labels(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """nodeGroupLabels: a non-empty list of label keys, each valid as the API checks a
    label key, none twice."""
    value = raw.get("nodeGroupLabels")
    if value is None:
        return DEFAULT_GROUP_LABELS
    if not isinstance(value, list) or not value:
        raise ConfigError(f"nodeGroupLabels: must be a non-empty list of label keys, got {value!r}")
    problems = [
        f"{e.field}: {e.body()}"
        for i, key in enumerate(value)
        for e in validate_label_name(key, f"nodeGroupLabels[{i}]")
    ]
    if problems:
        raise ConfigError("; ".join(problems))
    if len(set(value)) != len(value):
        twice = next(k for k in value if value.count(k) > 1)
        raise ConfigError(f"nodeGroupLabels: {twice!r} is listed twice")
    return tuple(value)


def _foresight_budget(policy: Mapping[str, Any]) -> int:
    """policy.foresightBudgetMilliseconds: whole milliseconds, 0 (no foresight) to
    FORESIGHT_MAX_BUDGET_MS (well inside kube-apiserver's webhook timeout)."""
    value = policy.get("foresightBudgetMilliseconds", FORESIGHT_DEFAULT_BUDGET_MS)
    if value is None:
        return FORESIGHT_DEFAULT_BUDGET_MS
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= FORESIGHT_MAX_BUDGET_MS
    ):
        raise ConfigError(
            "policy.foresightBudgetMilliseconds: must be a whole number of milliseconds "
            f"from 0 (no unschedulable foresight) to {FORESIGHT_MAX_BUDGET_MS}, got {value!r}"
        )
    return value


def _spread_args(raw: Mapping[str, Any]) -> RawObj | None:
    """The podTopologySpread key as PodTopologySpreadArgs (v1 spelling), validated with
    the scheduler's own rules; None when absent."""
    spread_raw = raw.get(_SPREAD_KEY)
    if spread_raw is None or spread_raw == {} or spread_raw == []:
        return None  # absent, null or empty: kube-scheduler's own defaults
    if not isinstance(spread_raw, dict):
        raise ConfigError(f"{_SPREAD_KEY}: must be a mapping (PodTopologySpreadArgs)")
    constraints = spread_raw.get("defaultConstraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, dict) for c in constraints):
        raise ConfigError(f"{_SPREAD_KEY}.defaultConstraints: must be a list of constraints")
    # Checked below with the scheduler's own rules (System | List), hence the cast.
    defaulting_type = cast(DefaultingType, spread_raw.get("defaultingType") or "System")
    errors = validate_spread_args(SpreadArgs(tuple(constraints), defaulting_type))
    if errors:
        raise ConfigError(f"{_SPREAD_KEY}: " + "; ".join(errors))
    return {"defaultConstraints": list(constraints), "defaultingType": defaulting_type}


def _with_spread_args(cfg: Any, spread: RawObj) -> Any:
    """`cfg` with a PodTopologySpread pluginConfig entry holding `spread` added to every
    profile that configures none itself (its own entry is the more specific one).

    Malformed shapes are passed on unchanged: resolve_configuration reports them.
    """
    if not isinstance(cfg, dict):
        return cfg
    profiles = cfg.get("profiles")
    if profiles is None or profiles == []:
        profiles = [{}]
    if not isinstance(profiles, list):
        return cfg
    out = []
    for profile in profiles:
        if not isinstance(profile, dict):
            out.append(profile)
            continue
        entries = profile.get("pluginConfig")
        entries = entries if isinstance(entries, list) else []
        if any(isinstance(e, dict) and e.get("name") == _PTS for e in entries):
            out.append(profile)
            continue
        entry = {"name": _PTS, "args": copy.deepcopy(spread)}
        out.append({**profile, "pluginConfig": [*entries, entry]})
    return {**cfg, "profiles": out}


def _profiles(
    cfg: Any, origin: str, spread: RawObj | None, features: Features | None = None
) -> tuple[ResolvedProfile, ...]:
    if spread is not None:
        cfg = _with_spread_args(cfg, spread)
    profiles, errors = resolve_configuration(cfg, features)
    if errors:
        raise ConfigError(f"{origin}: " + "; ".join(errors))
    return profiles


def _features(version: KubeVersion, gates: Mapping[str, Any]) -> Features:
    try:
        return features_for(version, gates)
    except VersionError as exc:
        raise ConfigError(str(exc)) from exc


# Settings resolved for another release, by (the settings' identity, the release).
_FOR_VERSION: dict[tuple[int, KubeVersion], tuple[Settings, Settings]] = {}


def _settings_for(settings: Settings, version: KubeVersion) -> Settings:
    """`settings` with its profiles resolved for `version`, built once per pair."""
    key = (id(settings), version)
    hit = _FOR_VERSION.get(key)
    if hit is not None and hit[0] is settings:
        return hit[1]
    features = _features(version, settings.feature_gates)
    source = settings.scheduler_source
    cfg, origin, spread = source if source is not None else ({}, "defaults", None)
    out = replace(
        settings,
        scheduler=_profiles(cfg, origin, spread, features),
        kubernetes_version=version,
    )
    if len(_FOR_VERSION) >= len(SUPPORTED) * 8:
        _FOR_VERSION.clear()
    _FOR_VERSION[key] = (settings, out)
    return out


def _version_keys(raw: Mapping[str, Any]) -> tuple[KubeVersion | None, dict[str, bool]]:
    """kubernetesVersion and featureGates, checked (ConfigError naming the key)."""
    version = None
    if raw.get("kubernetesVersion") is not None:
        try:
            version = parse_kubernetes_version(str(raw["kubernetesVersion"]))
        except VersionError as exc:
            raise ConfigError(f"kubernetesVersion: {exc}") from exc
    gates = raw.get("featureGates")
    if gates is None:
        gates = {}
    if not isinstance(gates, dict):
        raise ConfigError("featureGates: must be a mapping of gate names to true or false")
    _features(version or NEWEST, gates)
    return version, dict(gates)


def settings_from_dict(
    raw: Any,
    scheduler_config: Any = None,
    *,
    scheduler_config_origin: str = "--scheduler-config",
) -> Settings:
    """Build Settings from a parsed config document; raise ConfigError when invalid.

    `scheduler_config`, when not None, is a KubeSchedulerConfiguration that replaces
    the document's schedulerConfiguration key (the --scheduler-config file);
    `scheduler_config_origin` names it in error messages.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("config: the document must be a mapping")
    spread = _spread_args(raw)
    version, gates = _version_keys(raw)
    source: tuple[Any, str, RawObj | None] | None
    if scheduler_config is not None:
        source = (scheduler_config, scheduler_config_origin, spread)
    elif raw.get(SCHEDULER_CONFIG_KEY) is not None:
        source = (raw[SCHEDULER_CONFIG_KEY], SCHEDULER_CONFIG_KEY, spread)
    elif spread is not None:
        source = ({}, _SPREAD_KEY, spread)
    else:
        source = None
    if source is None and version is None and not gates:
        scheduler = default_profiles()
    else:
        cfg, origin, spread_args = source if source is not None else ({}, "defaults", None)
        scheduler = _profiles(cfg, origin, spread_args, _features(version or NEWEST, gates))

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
        scheduler=scheduler,
        inject_defaults=_bool(raw, "injectDefaults", True),
        match_label_keys_merge=mode,
        deny_unschedulable=_bool(policy, "denyUnschedulable", False, "policy."),
        separate_revisions=_bool(policy, "separateRevisions", False, "policy."),
        foresight_budget_ms=_foresight_budget(policy),
        inject_namespace_selector=ns_selector,
        audit=_audit(raw),
        node_group_labels=_node_group_labels(raw),
        raw=raw,
        kubernetes_version=version,
        feature_gates=gates,
        scheduler_source=source,
    )


def _read_yaml(path: str | Path, what: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path} is not valid YAML: {exc}") from exc


def load_scheduler_config(path: str | Path) -> RawObj:
    """Read a KubeSchedulerConfiguration file (YAML or JSON), as kube-scheduler's
    --config: a single object that names its kind and apiVersion (kube-scheduler's
    decoder refuses a file without them). Validation is resolve_configuration's."""
    doc = _read_yaml(path, "scheduler config")
    origin = f"scheduler config {path}"
    if not isinstance(doc, dict):
        raise ConfigError(f"{origin}: must be a {KIND} object")
    if not doc.get("kind"):
        raise ConfigError(f"{origin}: Object 'Kind' is missing (want kind: {KIND})")
    if not doc.get("apiVersion"):
        raise ConfigError(f"{origin}: Object 'apiVersion' is missing (want {API_VERSION})")
    return doc


def load_settings(path: str | Path | None, scheduler_config: str | Path | None = None) -> Settings:
    """Read a config file (YAML) and, when given, a KubeSchedulerConfiguration file
    (--scheduler-config, which replaces the config's schedulerConfiguration key);
    None gives the defaults."""
    raw = _read_yaml(path, "config") if path is not None else {}
    if scheduler_config is None:
        return settings_from_dict(raw)
    return settings_from_dict(
        raw,
        load_scheduler_config(scheduler_config),
        scheduler_config_origin=f"scheduler config {scheduler_config}",
    )
