"""The Kubernetes release the model stands for: the supported versions, how a version
string is read, and the feature gates the model knows with each release's default
(pkg/features/kube_features.go, defaultVersionedKubernetesFeatureGates).

One `KubeVersion` decides everything that differs between releases: the scheduler's
default plugins and args, each plugin's rules, and (through `server_version`) the API
server's validation and its merge of matchLabelKeys. `Features` is a version with its
gates resolved: the release's defaults, overridden by the config's `featureGates`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "GATES",
    "NEWEST",
    "SUPPORTED",
    "Features",
    "GateSpec",
    "KubeVersion",
    "VersionError",
    "features_for",
    "nearest_supported",
    "parse_kubernetes_version",
    "resolve_version",
    "supported_text",
]


class VersionError(ValueError):
    """A version string that is not a supported Kubernetes release, or a feature gate
    the model does not know or cannot set; the message names what is accepted."""


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes release: major.minor, and the patch when one was given (None: any
    patch of the minor, read as its newest behaviour)."""

    major: int
    minor: int
    patch: int | None = None

    @property
    def minor_version(self) -> tuple[int, int]:
        """(major, minor): what the API server's rules are keyed by."""
        return self.major, self.minor

    def at_least(self, minor: int, patch: int = 0) -> bool:
        """This release is 1.`minor`.`patch` or later (an unknown patch counts as the
        minor's newest)."""
        if self.minor_version != (1, minor):
            return self.minor_version > (1, minor)
        return self.patch is None or self.patch >= patch

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}"
        return base if self.patch is None else f"{base}.{self.patch}"


# The releases modelled, oldest first: the three minors upstream supports.
SUPPORTED: tuple[KubeVersion, ...] = (KubeVersion(1, 35), KubeVersion(1, 36), KubeVersion(1, 37))
NEWEST = SUPPORTED[-1]

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$")


def supported_text() -> str:
    """The supported minors as a usage message lists them: `1.35, 1.36, 1.37`."""
    return ", ".join(str(v) for v in SUPPORTED)


def parse_kubernetes_version(text: object) -> KubeVersion:
    """`1.36`, `v1.36` or `v1.36.3` (a build suffix such as `-gke.1` is ignored) as a
    supported KubeVersion; VersionError naming the supported ones otherwise."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    m = _VERSION.match(text.strip())
    if not m:
        raise VersionError(
            f"not a Kubernetes version: {text!r} (supported: {supported_text()}, "
            "optionally with a patch such as 1.36.3)"
        )
    patch = int(m.group(3)) if m.group(3) is not None else None
    version = KubeVersion(int(m.group(1)), int(m.group(2)), patch)
    if KubeVersion(version.major, version.minor) not in SUPPORTED:
        raise VersionError(
            f"unsupported Kubernetes version {version}: supported are {supported_text()}"
        )
    return version


@dataclass(frozen=True)
class GateSpec:
    """One feature gate as a release ships it: its default and whether it is locked to
    that default (GA with LockToDefault: setting it otherwise is refused)."""

    default: bool
    locked: bool = False


# The gates the model reads, per supported minor (patch-level changes noted inline).
# Checked against pkg/features/kube_features.go of v1.35.4, v1.36.3 and v1.37.2.
GATES: Mapping[str, Mapping[tuple[int, int], GateSpec]] = MappingProxyType(
    {
        # The NodeDeclaredFeatures filter in the default profile (alpha 1.35, beta 1.36,
        # GA and locked 1.37).
        "NodeDeclaredFeatures": {
            (1, 35): GateSpec(False),
            (1, 36): GateSpec(True),
            (1, 37): GateSpec(True, locked=True),
        },
        # VolumeBinding scores by storage capacity (beta and on in 1.37).
        "StorageCapacityScoring": {
            (1, 35): GateSpec(False),
            (1, 36): GateSpec(False),
            (1, 37): GateSpec(True),
        },
    }
)


@dataclass(frozen=True)
class Features:
    """A release with its feature gates resolved (defaults, then the config's overrides)."""

    version: KubeVersion = NEWEST
    # gate name -> enabled, for every gate of GATES.
    gates: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, gate: str) -> bool:
        """Whether `gate` is on; a gate of GATES always has a value once resolved."""
        if gate in self.gates:
            return self.gates[gate]
        return GATES[gate][self.version.minor_version].default

    def key(self) -> tuple[str, tuple[tuple[str, bool], ...]]:
        """A hashable identity: the version and every gate's value."""
        return str(self.version), tuple(sorted((g, self.enabled(g)) for g in GATES))


def features_for(
    version: KubeVersion = NEWEST, overrides: Mapping[str, object] | None = None
) -> Features:
    """The release's gate defaults with `overrides` (the config's featureGates) applied.

    VersionError for a gate the model does not know, a value that is not a bool, or a
    gate locked to its default set otherwise (as kube-scheduler refuses to start)."""
    gates = {name: specs[version.minor_version].default for name, specs in GATES.items()}
    for name, value in (overrides or {}).items():
        if name not in GATES:
            raise VersionError(
                f"featureGates: unknown feature gate {name!r} (the model knows "
                f"{', '.join(sorted(GATES))})"
            )
        if not isinstance(value, bool):
            raise VersionError(f"featureGates.{name}: must be true or false, got {value!r}")
        spec = GATES[name][version.minor_version]
        if spec.locked and value != spec.default:
            raise VersionError(
                f"featureGates.{name}: cannot set feature gate {name} to {str(value).lower()}, "
                f"feature is locked to {str(spec.default).lower()} in Kubernetes {version.major}."
                f"{version.minor}"
            )
        gates[name] = value
    return Features(version, MappingProxyType(gates))


def nearest_supported(server: tuple[int, int]) -> KubeVersion:
    """The supported release closest to an API server's (major, minor): the oldest for an
    older server, the newest for a newer one (a live cluster is never refused)."""
    version = KubeVersion(server[0], server[1])
    if version in SUPPORTED:
        return version
    return SUPPORTED[0] if version < SUPPORTED[0] else NEWEST


def resolve_version(
    flag: KubeVersion | None,
    server_flag: tuple[int, int] | None,
    configured: KubeVersion | None,
    cluster: tuple[int, int] | None,
) -> tuple[KubeVersion, tuple[int, int]]:
    """(the release modelled, the API server whose rules apply), from the first of:
    --kubernetes-version, --server-version, the config's kubernetesVersion, the live
    cluster's /version, the newest. One answer for both: the API server's rules (its
    validation and matchLabelKeys merge) follow the release modelled, except that
    --server-version and a live cluster may name an API server older than any supported
    release, whose rules are kept while the scheduler model runs the oldest supported.

    VersionError when --kubernetes-version and --server-version name different minors."""
    if flag is not None:
        if server_flag is not None and server_flag != flag.minor_version:
            raise VersionError(
                f"--kubernetes-version {flag} and --server-version "
                f"{server_flag[0]}.{server_flag[1]} disagree: give one"
            )
        return flag, flag.minor_version
    if server_flag is not None:
        return nearest_supported(server_flag), server_flag
    if configured is not None:
        return configured, configured.minor_version
    if cluster is not None:
        return nearest_supported(cluster), cluster
    return NEWEST, NEWEST.minor_version
