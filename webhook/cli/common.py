"""What the subcommands share: the target API server, the config's CLI keys, the
cluster state (a snapshot file or the live cluster) and terminal colour.

One notion of the target API server across `check`, `mutate` and `review`:
`--server-version` (default: the newest whose rules topospread replays; with a live
cluster, the cluster's own), so `topospread mutate x.yaml | topospread check -`
round-trips and an offline `mutate` does what the webhook does for that version.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from webhook.api.kube import HANDLED_KINDS, RawObj, pod_template, pod_template_at
from webhook.api.versions import (
    NEWEST,
    KubeVersion,
    VersionError,
    parse_kubernetes_version,
    resolve_version,
    supported_text,
)
from webhook.cluster.files import load_snapshot
from webhook.config import Settings, load_settings
from webhook.errors import ConfigError
from webhook.validation.fields import FieldValidation, parse_field_validation

if TYPE_CHECKING:  # pragma: no cover - typing only
    from webhook.api.kube import PodTemplate
    from webhook.scheduler.framework.snapshot import Snapshot

__all__ = [
    "NEWEST_SERVER_VERSION",
    "CliConfig",
    "CustomWorkload",
    "Target",
    "add_cluster_args",
    "add_config_args",
    "add_kubernetes_version_arg",
    "add_server_version_arg",
    "cli_config",
    "colour",
    "load_target",
    "modelled_settings",
    "node_label_keys",
    "parse_version",
    "template_of",
]

# The API server of the newest release modelled (webhook.validation treats every
# release from v1.34 the same).
NEWEST_SERVER_VERSION = NEWEST.minor_version

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


def parse_version(text: str) -> tuple[int, int]:
    """`1.33`, `v1.33` or `v1.33.2` as (1, 33); argparse turns a ValueError into usage."""
    m = _VERSION.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"not a Kubernetes version (like 1.33): {text!r}")
    return int(m.group(1)), int(m.group(2))


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        metavar="FILE",
        help="topospread config (YAML): default constraints, matchLabelKeysMerge, "
        "customWorkloads, topologyKeys, ...",
    )
    p.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as kube-scheduler "
        "reads it: its profiles decide placement (replaces the config's "
        "schedulerConfiguration)",
    )


def add_server_version_arg(p: argparse.ArgumentParser) -> None:
    """--server-version and --kubernetes-version: one setting (resolve_version)."""
    p.add_argument(
        "--server-version",
        metavar="MAJOR.MINOR",
        type=parse_version,
        help="the kube-apiserver whose rules apply (default: as --kubernetes-version; "
        "may name one older than the supported releases: 1.33 and older do not merge "
        "matchLabelKeys)",
    )
    add_kubernetes_version_arg(p)


def kubernetes_version_arg(text: str) -> KubeVersion:
    """argparse type of --kubernetes-version: an unsupported version is a usage error
    naming the supported ones."""
    try:
        return parse_kubernetes_version(text)
    except VersionError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def add_kubernetes_version_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kubernetes-version",
        metavar="VERSION",
        type=kubernetes_version_arg,
        help=f"the Kubernetes release to model: {supported_text()}, or a patch such as "
        f"1.36.3 (default: the config's kubernetesVersion, else the cluster's when "
        f"connected, else {NEWEST}, the newest; docs/versions.md)",
    )


def add_cluster_args(p: argparse.ArgumentParser, *, live_by_default: bool) -> None:
    """--snapshot, and the kubectl-style flags for reading the live cluster."""
    g = p.add_argument_group("cluster state")
    g.add_argument(
        "--snapshot",
        metavar="FILE",
        help="cluster state from a file: `kubectl get nodes,pods,namespaces,services,"
        "replicasets,statefulsets,replicationcontrollers -A -o json` ('-' reads stdin)",
    )
    if not live_by_default:
        g.add_argument(
            "--cluster",
            action="store_true",
            help="read the cluster of the current kubeconfig context (implied by "
            "--kubeconfig and --context)",
        )
    g.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to use (default: $KUBECONFIG or ~/.kube/config)",
    )
    g.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    g.add_argument(
        "-n",
        "--namespace",
        metavar="NS",
        help="namespace for objects that set none (default: the context's, else default)",
    )
    g.add_argument(
        "--request-timeout",
        metavar="SECONDS",
        type=float,
        default=30.0,
        help="give up on an unreachable cluster after this long (default 30)",
    )


@dataclass(frozen=True)
class CustomWorkload:
    """A workload kind declared in the config: where its pod template sits."""

    api_version: str
    kind: str
    path: tuple[str, ...]
    # Labels its controller adds to each pod (e.g. rollouts-pod-template-hash).
    pod_labels: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CliConfig:
    """The config keys the commands read beside the webhook's Settings."""

    custom_workloads: tuple[CustomWorkload, ...] = ()
    topology_keys: frozenset[str] = frozenset()
    # check.fieldValidation: what `check` does with unknown and duplicate fields.
    field_validation: FieldValidation = "Strict"

    def custom(self, obj: RawObj) -> CustomWorkload | None:
        kind, api = obj.get("kind"), obj.get("apiVersion")
        for w in self.custom_workloads:
            if w.kind == kind and (w.api_version == api or not isinstance(api, str)):
                return w
        return None


def _strings(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: must be a list of strings")
    return list(value)


def cli_config(raw: Mapping[str, Any]) -> CliConfig:
    """customWorkloads, topologyKeys and check of a config document; ConfigError when
    malformed.

    customWorkloads:
    - {apiVersion: argoproj.io/v1alpha1, kind: Rollout, podTemplatePath: spec.template,
       podLabels: [rollouts-pod-template-hash]}
    topologyKeys: [example.com/rack]
    check: {fieldValidation: Strict}    # Strict (default) | Warn | Ignore
    """
    entries = raw.get("customWorkloads") or []
    if not isinstance(entries, list):
        raise ConfigError("customWorkloads: must be a list")
    workloads = []
    for i, entry in enumerate(entries):
        where = f"customWorkloads[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: must be a mapping")
        kind, api, path = entry.get("kind"), entry.get("apiVersion"), entry.get("podTemplatePath")
        if not isinstance(kind, str) or not kind:
            raise ConfigError(f"{where}.kind: required")
        if kind in HANDLED_KINDS:
            raise ConfigError(f"{where}.kind: {kind} is built in")
        if not isinstance(api, str) or not api:
            raise ConfigError(f"{where}.apiVersion: required")
        if not isinstance(path, str) or not path or any(not p for p in path.split(".")):
            raise ConfigError(f"{where}.podTemplatePath: required, like spec.template")
        labels = _strings(entry.get("podLabels"), f"{where}.podLabels")
        workloads.append(CustomWorkload(api, kind, tuple(path.split(".")), frozenset(labels)))
    keys = _strings(raw.get("topologyKeys"), "topologyKeys")
    return CliConfig(tuple(workloads), frozenset(keys), _field_validation(raw))


def _field_validation(raw: Mapping[str, Any]) -> FieldValidation:
    """check.fieldValidation (default Strict); ConfigError for anything else."""
    section = raw.get("check")
    if section is None:
        return "Strict"
    if not isinstance(section, dict):
        raise ConfigError(f"check: must be a mapping, got {section!r}")
    unknown = sorted(str(k) for k in section if k != "fieldValidation")
    if unknown:
        raise ConfigError(f"check.{unknown[0]}: unknown key (known: fieldValidation)")
    value = section.get("fieldValidation", "Strict")
    parsed = parse_field_validation(value) if isinstance(value, str) else None
    if parsed is None:
        raise ConfigError(
            f"check.fieldValidation: must be Strict, Warn or Ignore, got {value!r}"
        )
    return parsed


def template_of(obj: RawObj, config: CliConfig) -> PodTemplate | None:
    """The pod template of a built-in kind or of a declared custom workload."""
    custom = config.custom(obj)
    if custom is not None:
        return pod_template_at(obj, custom.path)
    return pod_template(obj)


@dataclass
class Target:
    """Everything a command decides against: config, API server, cluster state."""

    settings: Settings
    config: CliConfig
    server_version: tuple[int, int]
    # The release modelled (resolve_version); `settings` are resolved for it.
    kubernetes_version: KubeVersion = NEWEST
    # The cluster state, None without --snapshot or a live cluster.
    snapshot: Snapshot | None = None
    # The default namespace (-n, or the kubeconfig context's).
    namespace: str = "default"
    # Where the cluster state came from, for messages ("" without one).
    cluster: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _wants_live(args: argparse.Namespace, live_by_default: bool) -> bool:
    if getattr(args, "snapshot", None):
        return False
    explicit = bool(
        getattr(args, "cluster", False)
        or getattr(args, "kubeconfig", None)
        or getattr(args, "context", None)
    )
    return explicit or live_by_default


def load_target(
    args: argparse.Namespace, *, live_by_default: bool = False, err: TextIO | None = None
) -> Target:
    """Settings, server version and cluster state as the command's flags ask.

    Raises ConfigError / InputError (exit 2), ClusterError when the cluster is
    unreachable (exit 2 with a clear message).
    """
    settings = load_settings(getattr(args, "config", None), getattr(args, "scheduler_config", None))
    config = cli_config(settings.raw)
    cluster_version: tuple[int, int] | None = None
    snapshot = None
    cluster = ""
    namespace = getattr(args, "namespace", None)
    if getattr(args, "snapshot", None):
        snapshot = load_snapshot(args.snapshot)
        cluster = str(args.snapshot)
    elif _wants_live(args, live_by_default):
        from webhook.cluster.lister import connect, list_snapshot

        conn = connect(
            kubeconfig=getattr(args, "kubeconfig", None),
            context=getattr(args, "context", None),
            timeout=getattr(args, "request_timeout", 30.0),
        )
        snapshot, cluster_version = list_snapshot(conn, progress=err or sys.stderr)
        namespace = namespace or conn.namespace
        cluster = conn.name
    settings, modelled, server_version = modelled_settings(args, settings, cluster_version)
    return Target(
        settings=settings,
        config=config,
        server_version=server_version,
        kubernetes_version=modelled,
        snapshot=snapshot,
        namespace=namespace or "default",
        cluster=cluster,
    )


def connect_live(args: argparse.Namespace) -> Any:
    """The lister.Connection the audit's flags name (--kubeconfig, --context,
    --in-cluster, --request-timeout); ConfigError when there is no usable kubeconfig. The
    cluster client is imported only here, when a live cluster is read."""
    from webhook.cluster.lister import connect

    return connect(
        kubeconfig=args.kubeconfig,
        context=args.context,
        in_cluster=args.in_cluster,
        timeout=args.request_timeout,
    )


def modelled_settings(
    args: argparse.Namespace, settings: Settings, cluster_version: tuple[int, int] | None
) -> tuple[Settings, KubeVersion, tuple[int, int]]:
    """The settings resolved for the release modelled, that release, and the API server
    whose rules apply (resolve_version: flags, then config, then the cluster's /version,
    then the newest). ConfigError (exit 2) when the flags disagree or the config's
    featureGates do not hold for that release."""
    try:
        modelled, server_version = resolve_version(
            getattr(args, "kubernetes_version", None),
            getattr(args, "server_version", None),
            settings.kubernetes_version,
            cluster_version,
        )
    except VersionError as exc:
        raise ConfigError(str(exc)) from exc
    return settings.for_version(modelled), modelled, server_version


def node_label_keys(snapshot: Snapshot | None) -> frozenset[str] | None:
    """Every label key some node of the snapshot carries; None without a snapshot or nodes."""
    if snapshot is None:
        return None
    nodes = getattr(snapshot, "nodes", {})
    if not nodes:
        return None
    return frozenset(k for info in nodes.values() for k in getattr(info, "labels", {}))


def colour(stream: TextIO) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_STYLES = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}


def paint(text: str, style: str, on: bool) -> str:
    return f"\033[{_STYLES[style]}m{text}\033[0m" if on else text
