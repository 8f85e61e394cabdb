"""Install manifests: the one source of truth for what topospread runs in a cluster.

`render()` builds every object as a plain dict; `topospread manifests` prints them as
multi-document YAML with the caBundle (and the TLS Secret) filled in. The kustomize tree
under deploy/kustomize/ is this module's output, checked in and kept equal by a test
(regenerate with `python -m webhook.install.manifests deploy/kustomize`); tests build it with
kustomize and compare the result with render(). The Helm chart under deploy/helm/topospread/
mirrors the same defaults; tests render it with Helm and compare the result with render().

Why the webhooks fail open (failurePolicy Ignore) and time out after 5 seconds is
explained in docs/install.md.

With `Install(audit=True)` the install also runs the periodic audit: its own
Deployment `topospread-audit` (one replica, `topospread audit --watch`), ServiceAccount
and read-only ClusterRole, and a Service for its /metrics; `audit_policy_reports=True`
adds the PolicyReport verbs to that role and `--policy-reports` to the command;
`audit_reports="openreports"` (or "both") grants the same verbs on OpenReports Reports
instead (or as well) and adds `--reports`; `audit_report=True` adds `--report` (the
HTML page /report on the metrics port, no RBAC). The kustomize tree has them as
audit/, audit-policyreports/, audit-openreports/ and audit-report/
(docs/audit-server.md). `audit_rebalance=True` (audit.rebalance.enabled: the audit
carries out steps of its plan) adds `create` on `pods/eviction`, the one write it
needs, and `--rebalance` to the command (kustomize: audit-rebalance/; `topospread
manifests --audit-rebalance`). `audit_deletion_costs=True` adds get and patch on pods and
`--deletion-costs` (the deletion-cost keeper, docs/deletion-costs.md): overlay
audit-deletion-costs/, Helm value audit.deletionCosts, `manifests --deletion-costs`.
"""

from __future__ import annotations

import argparse
import base64
import copy
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml
from cryptography import x509

from webhook import __version__
from webhook.api.kube import RawObj
from webhook.errors import InputError
from webhook.install.certs import CA_CERT, TLS_CERT, TLS_KEY, check_names, service_dns_names

__all__ = [
    "AUDIT_NAME",
    "AUDIT_ROLE_RULES",
    "CLUSTER_ROLE_RULES",
    "OPEN_REPORT_RULE",
    "POLICY_REPORT_RULE",
    "REPORT_RULES",
    "DEFAULT_CONFIG",
    "DEFAULT_IMAGE",
    "Install",
    "cli_manifests",
    "kustomize_files",
    "render",
    "to_yaml",
    "write_kustomize",
]

NAME = "topospread"
DEFAULT_IMAGE = f"topospread:{__version__}"
CONFIG_PATH = "/etc/topospread/config.yaml"
CERT_DIR = "/etc/topospread/certs"
PORT = 8443
# Non-root numeric identity, matching the Dockerfile's USER.
UID = 65532

DEFAULT_CONFIG = """\
# PodTopologySpreadArgs, exactly as kube-scheduler takes them.
podTopologySpread:
  defaultingType: System
# Add the defaults above to created Pods that carry no constraints.
injectDefaults: true
# Who merges matchLabelKeys into labelSelector: auto | webhook | apiserver.
matchLabelKeysMerge: auto
"""

# What the live cluster source lists and watches (the kinds the default profile's
# plugins read, webhook.cluster.needs): nothing more, and read-only.
CLUSTER_ROLE_RULES: list[RawObj] = [
    {
        "apiGroups": [""],
        "resources": [
            "nodes",
            "pods",
            "services",
            "replicationcontrollers",
            "namespaces",
            "persistentvolumes",
            "persistentvolumeclaims",
        ],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["apps"],
        "resources": ["replicasets", "statefulsets"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses", "csinodes"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["policy"],
        "resources": ["poddisruptionbudgets"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["scheduling.k8s.io"],
        "resources": ["priorityclasses"],
        "verbs": ["get", "list", "watch"],
    },
]

AUDIT_NAME = f"{NAME}-audit"
AUDIT_METRICS_PORT = 9090
AUDIT_INTERVAL_SECONDS = 300

# What `audit --watch` lists every interval (webhook.cluster.lister.AUDIT_RESOURCES):
# list only, as it lists again rather than watching.
AUDIT_ROLE_RULES: list[RawObj] = [
    {
        "apiGroups": [""],
        "resources": [
            "nodes",
            "pods",
            "services",
            "replicationcontrollers",
            "namespaces",
            "persistentvolumes",
            "persistentvolumeclaims",
        ],
        "verbs": ["list"],
    },
    {
        "apiGroups": ["apps"],
        "resources": ["replicasets", "statefulsets", "deployments", "daemonsets"],
        "verbs": ["list"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["list"]},
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses", "csinodes"],
        "verbs": ["list"],
    },
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["list"]},
]

# Exactly what webhook.audit.report.policyreports sends: list (GET on the collection), create
# (POST), update (PUT), delete (DELETE); get for a person's kubectl through this role.
POLICY_REPORT_RULE: RawObj = {
    "apiGroups": ["wgpolicyk8s.io"],
    "resources": ["policyreports"],
    "verbs": ["get", "list", "create", "update", "delete"],
}
# Exactly what webhook.audit.act.keeper sends: GET of one pod, then PATCH of its annotations.
DELETION_COST_RULE: RawObj = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "patch"]}
# The same verbs on openreports.io/v1alpha1 Reports (audit.reports openreports or both).
OPEN_REPORT_RULE: RawObj = {
    "apiGroups": ["openreports.io"],
    "resources": ["reports"],
    "verbs": ["get", "list", "create", "update", "delete"],
}
# audit.reports -> the rules its writers need.
REPORT_RULES: dict[str, list[RawObj]] = {
    "wgpolicyk8s": [POLICY_REPORT_RULE],
    "openreports": [OPEN_REPORT_RULE],
    "both": [POLICY_REPORT_RULE, OPEN_REPORT_RULE],
}

# audit.rebalance: exactly what webhook.audit.act.evictor sends, a POST of an Eviction.
EVICTION_RULE: RawObj = {
    "apiGroups": [""],
    "resources": ["pods/eviction"],
    "verbs": ["create"],
}

AUDIT_RESOURCES: RawObj = {
    "requests": {"cpu": "100m", "memory": "256Mi"},
    "limits": {"memory": "1Gi"},
}

# Every kind whose pod template the server validates, by API group.
VALIDATED_RESOURCES: list[tuple[str, list[str]]] = [
    ("", ["pods", "replicationcontrollers", "podtemplates"]),
    ("apps", ["deployments", "replicasets", "statefulsets", "daemonsets"]),
    ("batch", ["jobs", "cronjobs"]),
]

RESOURCES: RawObj = {
    "requests": {"cpu": "100m", "memory": "128Mi"},
    "limits": {"memory": "256Mi"},
}


@dataclass(frozen=True)
class Install:
    """What varies between installs; the defaults are the checked-in deploy/ files."""

    namespace: str = NAME
    image: str = DEFAULT_IMAGE
    replicas: int = 3
    # PEM of the CA that signed the serving certificate: becomes every caBundle.
    ca_bundle: bytes | None = None
    # tls.crt, tls.key, ca.crt as read from a cert dir: becomes the kubernetes.io/tls Secret.
    tls: dict[str, bytes] | None = None
    cert_manager: bool = False
    validate_failure_policy: str = "Ignore"
    mutate_failure_policy: str = "Ignore"
    timeout_seconds: int = 5
    config: str = DEFAULT_CONFIG
    resources: RawObj = field(default_factory=lambda: copy.deepcopy(RESOURCES))
    # The periodic audit's Deployment (see the module docstring).
    audit: bool = False
    audit_policy_reports: bool = False
    # audit.reports: wgpolicyk8s | openreports | both (the APIs audit_policy_reports writes).
    audit_reports: str = "wgpolicyk8s"
    # audit.report: serve the HTML page /report on the metrics port.
    audit_report: bool = False
    audit_include_soft: bool = False
    # The deletion-cost keeper (audit.deletionCosts): get and patch on pods.
    audit_deletion_costs: bool = False
    audit_interval_seconds: int = AUDIT_INTERVAL_SECONDS
    # audit.rebalance: evictions after each audit (EVICTION_RULE), at most this many per
    # audit, in these namespaces (empty: all).
    audit_rebalance: bool = False
    audit_rebalance_max_evictions: int = 1
    audit_rebalance_namespaces: tuple[str, ...] = ()
    audit_resources: RawObj = field(default_factory=lambda: copy.deepcopy(AUDIT_RESOURCES))


def _container_security() -> RawObj:
    """Every container's securityContext: nothing to escalate, a read-only root."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _pod_security() -> RawObj:
    """Every pod's securityContext: our non-root user and group."""
    return {
        "runAsNonRoot": True,
        "runAsUser": UID,
        "runAsGroup": UID,
        "fsGroup": UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _config_mount() -> RawObj:
    """The config file, mounted from the ConfigMap at CONFIG_PATH."""
    return {"name": "config", "mountPath": CONFIG_PATH, "subPath": "config.yaml", "readOnly": True}


def _labels() -> dict[str, str]:
    return {
        "app.kubernetes.io/name": NAME,
        "app.kubernetes.io/component": "admission-webhook",
        "app.kubernetes.io/version": __version__,
    }


def _selector() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME}


def _audit_labels() -> dict[str, str]:
    # Its own name: the webhook's Service, PDB and Deployment select name=topospread.
    return {
        "app.kubernetes.io/name": AUDIT_NAME,
        "app.kubernetes.io/component": "audit",
        "app.kubernetes.io/part-of": NAME,
        "app.kubernetes.io/version": __version__,
    }


def _audit_meta(namespace: str | None = None) -> RawObj:
    meta: RawObj = {"name": AUDIT_NAME}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = _audit_labels()
    return meta


def audit_command(opt: Install) -> list[str]:
    """The audit container's command: the Install's audit settings as flags (they must
    follow the RBAC rendered with them, so the config file does not decide them)."""
    command = [
        "topospread",
        "audit",
        "--watch",
        "--in-cluster",
        "--config",
        CONFIG_PATH,
        "--metrics-bind",
        f"0.0.0.0:{AUDIT_METRICS_PORT}",
        "--interval-seconds",
        str(opt.audit_interval_seconds),
    ]
    if opt.audit_include_soft:
        command.append("--include-soft")
    if opt.audit_policy_reports:
        command.append("--policy-reports")
        if opt.audit_reports != "wgpolicyk8s":
            command.extend(["--reports", opt.audit_reports])
    if opt.audit_report:
        command.append("--report")
    if opt.audit_rebalance:
        command.append("--rebalance")
        if opt.audit_rebalance_max_evictions != 1:
            command.extend(["--rebalance-max-evictions", str(opt.audit_rebalance_max_evictions)])
        if opt.audit_rebalance_namespaces:
            command.extend(["--rebalance-namespaces", ",".join(opt.audit_rebalance_namespaces)])
    if opt.audit_deletion_costs:
        command.append("--deletion-costs")
    return command


def audit_objects(opt: Install) -> list[RawObj]:
    """The periodic audit: ServiceAccount, ClusterRole and binding, Service, Deployment."""
    ns = opt.namespace
    rules = copy.deepcopy(AUDIT_ROLE_RULES)
    if opt.audit_policy_reports:
        rules.extend(copy.deepcopy(REPORT_RULES[opt.audit_reports]))
    if opt.audit_rebalance:
        rules.append(copy.deepcopy(EVICTION_RULE))
    if opt.audit_deletion_costs:
        rules.append(copy.deepcopy(DELETION_COST_RULE))
    selector = {"app.kubernetes.io/name": AUDIT_NAME}
    container: RawObj = {
        "name": "audit",
        "image": opt.image,
        "imagePullPolicy": "IfNotPresent",
        "command": audit_command(opt),
        "ports": [{"name": "metrics", "containerPort": AUDIT_METRICS_PORT, "protocol": "TCP"}],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "metrics", "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "periodSeconds": 20,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        "resources": copy.deepcopy(opt.audit_resources),
        "securityContext": _container_security(),
        "volumeMounts": [_config_mount()],
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _audit_meta(ns),
            "automountServiceAccountToken": True,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _audit_meta(),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _audit_meta(),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": AUDIT_NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": AUDIT_NAME, "namespace": ns}],
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _audit_meta(ns),
            "spec": {
                "type": "ClusterIP",
                "selector": dict(selector),
                "ports": [
                    {
                        "name": "metrics",
                        "port": AUDIT_METRICS_PORT,
                        "targetPort": "metrics",
                        "protocol": "TCP",
                    }
                ],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _audit_meta(ns),
            "spec": {
                # One audit per deployment: one replica, and Recreate so that a rollout
                # never runs the old and the new one side by side.
                "replicas": 1,
                "revisionHistoryLimit": 5,
                "selector": {"matchLabels": dict(selector)},
                "strategy": {"type": "Recreate"},
                "template": {
                    "metadata": {"labels": _audit_labels()},
                    "spec": {
                        "serviceAccountName": AUDIT_NAME,
                        "automountServiceAccountToken": True,
                        "securityContext": _pod_security(),
                        # A list of a big cluster stops at the next object on SIGTERM.
                        "terminationGracePeriodSeconds": 30,
                        "containers": [container],
                        "volumes": [{"name": "config", "configMap": {"name": f"{NAME}-config"}}],
                    },
                },
            },
        },
    ]


def _meta(name: str, namespace: str | None = None) -> RawObj:
    meta: RawObj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = _labels()
    return meta


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _deployment(opt: Install) -> RawObj:
    container: RawObj = {
        "name": "webhook",
        "image": opt.image,
        "imagePullPolicy": "IfNotPresent",
        "command": [
            "topospread",
            "serve",
            "--in-cluster",
            "--config",
            CONFIG_PATH,
            "--cert-dir",
            CERT_DIR,
            "--bind",
            f"0.0.0.0:{PORT}",
        ],
        "ports": [{"name": "https", "containerPort": PORT, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "https", "scheme": "HTTPS"},
            "periodSeconds": 5,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
            "initialDelaySeconds": 10,
            "periodSeconds": 10,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        # Endpoints take a moment to drop a terminating pod: keep accepting meanwhile,
        # then gunicorn drains in-flight requests on SIGTERM.
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
        "resources": copy.deepcopy(opt.resources),
        "securityContext": _container_security(),
        "volumeMounts": [
            _config_mount(),
            {"name": "certs", "mountPath": CERT_DIR, "readOnly": True},
            # gunicorn's worker heartbeat files and the metrics of every worker.
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": _selector()},
            "matchLabelKeys": ["pod-template-hash"],
        },
        {
            # ScheduleAnyway: a DoNotSchedule zone constraint would leave nodes without a
            # zone label infeasible, and kind or bare-metal clusters often have none.
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": _selector()},
            "matchLabelKeys": ["pod-template-hash"],
        },
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME, opt.namespace),
        "spec": {
            "replicas": opt.replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": _selector()},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
            },
            "template": {
                "metadata": {"labels": _labels()},
                "spec": {
                    "serviceAccountName": NAME,
                    "automountServiceAccountToken": True,
                    "securityContext": _pod_security(),
                    "topologySpreadConstraints": spread,
                    "terminationGracePeriodSeconds": 30,
                    "containers": [container],
                    "volumes": [
                        {"name": "config", "configMap": {"name": f"{NAME}-config"}},
                        {
                            "name": "certs",
                            "secret": {"secretName": f"{NAME}-certs", "defaultMode": 0o440},
                        },
                        {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                    ],
                },
            },
        },
    }


def _rules(resources: Iterable[tuple[str, list[str]]], operations: list[str]) -> list[RawObj]:
    return [
        {
            "apiGroups": [group],
            "apiVersions": ["v1"],
            "operations": list(operations),
            "resources": list(names),
            "scope": "Namespaced",
        }
        for group, names in resources
    ]


def _webhook(opt: Install, name: str, path: str, rules: list[RawObj], policy: str) -> RawObj:
    client: RawObj = {
        "service": {"namespace": opt.namespace, "name": NAME, "path": path, "port": 443},
    }
    if opt.ca_bundle is not None:
        client["caBundle"] = _b64(opt.ca_bundle)
    return {
        "name": name,
        "admissionReviewVersions": ["v1", "v1beta1"],
        "clientConfig": client,
        "rules": rules,
        "failurePolicy": policy,
        "matchPolicy": "Equivalent",
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", opt.namespace],
                }
            ]
        },
        "sideEffects": "None",
        "timeoutSeconds": opt.timeout_seconds,
    }


def _cert_manager_annotation(opt: Install) -> dict[str, str]:
    return {"cert-manager.io/inject-ca-from": f"{opt.namespace}/{NAME}-serving"}


def _webhook_configurations(opt: Install) -> list[RawObj]:
    validating: RawObj = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": _meta(NAME),
        "webhooks": [
            _webhook(
                opt,
                "validate.topospread.io",
                "/validate",
                _rules(VALIDATED_RESOURCES, ["CREATE", "UPDATE"]),
                opt.validate_failure_policy,
            )
        ],
    }
    mutate = _webhook(
        opt,
        "mutate.topospread.io",
        "/mutate",
        _rules([("", ["pods"])], ["CREATE"]),
        opt.mutate_failure_policy,
    )
    # Another mutating webhook may add labels or constraints after us: look again.
    mutate["reinvocationPolicy"] = "IfNeeded"
    mutating: RawObj = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": _meta(NAME),
        "webhooks": [mutate],
    }
    if opt.cert_manager:
        for obj in (validating, mutating):
            obj["metadata"]["annotations"] = _cert_manager_annotation(opt)
    return [validating, mutating]


def _cert_manager_objects(opt: Install) -> list[RawObj]:
    """A self-signed root, a CA Issuer from it, and the serving Certificate it signs.

    Two tiers so that renewing the serving certificate leaves the caBundle unchanged.
    """
    ns = opt.namespace
    key = {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": _meta(f"{NAME}-selfsigned", ns),
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": _meta(f"{NAME}-ca", ns),
            "spec": {
                "isCA": True,
                "commonName": f"{NAME}-ca",
                "secretName": f"{NAME}-ca",
                "duration": "87600h",
                "renewBefore": "2160h",
                "privateKey": dict(key),
                "issuerRef": {"name": f"{NAME}-selfsigned", "kind": "Issuer"},
            },
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": _meta(f"{NAME}-ca", ns),
            "spec": {"ca": {"secretName": f"{NAME}-ca"}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": _meta(f"{NAME}-serving", ns),
            "spec": {
                "secretName": f"{NAME}-certs",
                "dnsNames": service_dns_names(NAME, ns),
                "duration": "2160h",
                "renewBefore": "720h",
                "usages": ["server auth", "digital signature"],
                "privateKey": dict(key),
                "issuerRef": {"name": f"{NAME}-ca", "kind": "Issuer"},
            },
        },
    ]


def render(opt: Install | None = None) -> list[RawObj]:
    """Every object of an install, in apply order (webhook configurations last)."""
    opt = opt or Install()
    ns = opt.namespace
    objs: list[RawObj] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": ns,
                "labels": {
                    **_labels(),
                    # The webhook's pods meet the restricted Pod Security Standard.
                    "pod-security.kubernetes.io/enforce": "restricted",
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(NAME, ns),
            "automountServiceAccountToken": True,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(NAME),
            "rules": copy.deepcopy(CLUSTER_ROLE_RULES),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(NAME),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": ns}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(f"{NAME}-config", ns),
            "data": {"config.yaml": opt.config},
        },
    ]
    if opt.tls is not None:
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": _meta(f"{NAME}-certs", ns),
                "type": "kubernetes.io/tls",
                "data": {k: _b64(opt.tls[k]) for k in (TLS_CERT, TLS_KEY, CA_CERT) if k in opt.tls},
            }
        )
    if opt.cert_manager:
        objs.extend(_cert_manager_objects(opt))
    objs.extend(
        [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": _meta(NAME, ns),
                "spec": {
                    "type": "ClusterIP",
                    "selector": _selector(),
                    "ports": [
                        {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
                    ],
                },
            },
            _deployment(opt),
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": _meta(NAME, ns),
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": _selector()}},
            },
        ]
    )
    if opt.audit:
        objs.extend(audit_objects(opt))
    objs.extend(_webhook_configurations(opt))
    return objs


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so config.yaml stays readable in the ConfigMap."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str)


def to_yaml(objs: Iterable[RawObj]) -> str:
    """Multi-document YAML, keys in the order they were built."""
    docs = [
        yaml.dump(o, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=10_000)
        for o in objs
    ]
    return "---\n" + "---\n".join(docs)


# --- kustomize -------------------------------------------------------------------------------

_BASE_FILES: list[tuple[str, tuple[str, ...]]] = [
    ("namespace.yaml", ("Namespace",)),
    ("rbac.yaml", ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")),
    ("config.yaml", ("ConfigMap",)),
    ("service.yaml", ("Service",)),
    ("deployment.yaml", ("Deployment", "PodDisruptionBudget")),
    ("webhooks.yaml", ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")),
]

_HEADER = (
    "# Rendered by webhook/install/manifests.py: edit that, then "
    "`python -m webhook.install.manifests {}`.\n"
)


def _kustomization(body: RawObj) -> str:
    doc = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **body}
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def _json_patch(ops: list[RawObj]) -> str:
    """A JSON6902 patch as kustomize takes it inline: a YAML list of operations."""
    return yaml.dump(ops, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def kustomize_files(root: str = "deploy/kustomize") -> dict[str, str]:
    """Relative path -> text of the kustomize tree: base/ and two overlays.

    The base has no caBundle and no Secret: the overlay cert-manager/ has cert-manager
    provide both, own-certs/ builds them from the files `topospread certs` wrote.
    """
    header = _HEADER.format(root)
    base = render(Install())
    out: dict[str, str] = {}
    for filename, kinds in _BASE_FILES:
        docs = [o for o in base if o["kind"] in kinds]
        out[f"base/{filename}"] = header + to_yaml(docs)
    out["base/kustomization.yaml"] = header + _kustomization(
        {"resources": [f for f, _ in _BASE_FILES]}
    )
    cm = Install(cert_manager=True)
    out["cert-manager/certificates.yaml"] = header + to_yaml(_cert_manager_objects(cm))
    patches = [
        {
            "target": {
                "group": "admissionregistration.k8s.io",
                "version": "v1",
                "kind": k,
                "name": NAME,
            },
            "patch": to_yaml(
                [
                    {
                        "apiVersion": "admissionregistration.k8s.io/v1",
                        "kind": k,
                        "metadata": {"name": NAME, "annotations": _cert_manager_annotation(cm)},
                    }
                ]
            ).removeprefix("---\n"),
        }
        for k in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
    ]
    out["cert-manager/kustomization.yaml"] = header + _kustomization(
        {"resources": ["../base", "certificates.yaml"], "patches": patches}
    )
    # Own certificates: `topospread certs --out own-certs/certs` fills certs/, the Secret is
    # generated from it, and its ca.crt (already base64) is copied into every caBundle.
    secret = f"{NAME}-certs"
    out["own-certs/.gitignore"] = "# Keys never go into git.\ncerts/\n"
    out["own-certs/kustomization.yaml"] = header + _kustomization(
        {
            "resources": ["../base"],
            # The generated Secret carries the labels every other object carries.
            "generatorOptions": {"disableNameSuffixHash": True, "labels": _labels()},
            "secretGenerator": [
                {
                    "name": secret,
                    "namespace": NAME,
                    "type": "kubernetes.io/tls",
                    "files": [f"{n}=certs/{n}" for n in (TLS_CERT, TLS_KEY, CA_CERT)],
                }
            ],
            "replacements": [
                {
                    "source": {"kind": "Secret", "name": secret, "fieldPath": "data.[ca.crt]"},
                    "targets": [
                        {
                            "select": {"kind": kind},
                            "fieldPaths": ["webhooks.*.clientConfig.caBundle"],
                            "options": {"create": True},
                        }
                        for kind in (
                            "ValidatingWebhookConfiguration",
                            "MutatingWebhookConfiguration",
                        )
                    ],
                }
            ],
        }
    )
    # The periodic audit, applied after base (or an overlay of it): audit/ alone, and
    # audit-policyreports/ with the PolicyReport verbs and --policy-reports added.
    plain = audit_objects(Install(audit=True))
    out["audit/audit.yaml"] = header + to_yaml(plain)
    out["audit/kustomization.yaml"] = header + _kustomization({"resources": ["audit.yaml"]})
    reports = [
        _audit_patch("ClusterRole", [("/rules/-", copy.deepcopy(POLICY_REPORT_RULE))]),
        _audit_command_patch("--policy-reports"),
    ]
    out["audit-policyreports/kustomization.yaml"] = header + _kustomization(
        {"resources": ["../audit"], "patches": reports}
    )
    # audit-openreports/: the Report verbs and `--policy-reports --reports openreports`.
    out["audit-openreports/kustomization.yaml"] = header + _kustomization(
        {
            "resources": ["../audit"],
            "patches": [
                _audit_patch("ClusterRole", [("/rules/-", copy.deepcopy(OPEN_REPORT_RULE))]),
                _audit_command_patch("--policy-reports", "--reports", "openreports"),
            ],
        }
    )
    # audit-report/: `--report` (the HTML page /report on the metrics port).
    out["audit-report/kustomization.yaml"] = header + _kustomization(
        {"resources": ["../audit"], "patches": [_audit_command_patch("--report")]}
    )
    # audit-rebalance/: create on pods/eviction and `--rebalance` (audit.rebalance).
    out["audit-rebalance/kustomization.yaml"] = header + _kustomization(
        {
            "resources": ["../audit"],
            "patches": [
                _audit_patch("ClusterRole", [("/rules/-", copy.deepcopy(EVICTION_RULE))]),
                _audit_command_patch("--rebalance"),
            ],
        }
    )
    # audit-deletion-costs/: get and patch on pods, `--deletion-costs` (the keeper).
    out["audit-deletion-costs/kustomization.yaml"] = header + _kustomization(
        {
            "resources": ["../audit"],
            "patches": [
                _audit_patch("ClusterRole", [("/rules/-", copy.deepcopy(DELETION_COST_RULE))]),
                _audit_command_patch("--deletion-costs"),
            ],
        }
    )
    return out


def _audit_patch(kind: str, adds: list[tuple[str, object]]) -> RawObj:
    """A kustomize patch adding `adds` (path, value) to the audit's object of `kind`."""
    group = {"ClusterRole": "rbac.authorization.k8s.io", "Deployment": "apps"}[kind]
    return {
        "target": {"group": group, "version": "v1", "kind": kind, "name": AUDIT_NAME},
        "patch": _json_patch([{"op": "add", "path": path, "value": v} for path, v in adds]),
    }


def _audit_command_patch(*flags: str) -> RawObj:
    """A kustomize patch appending `flags` to the audit container's command."""
    path = "/spec/template/spec/containers/0/command/-"
    return _audit_patch("Deployment", [(path, flag) for flag in flags])


def write_kustomize(root: str | Path) -> list[Path]:
    """Write kustomize_files() under `root`; return the paths written."""
    written = []
    for rel, text in kustomize_files(str(root)).items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# --- CLI -------------------------------------------------------------------------------------


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc


def _certificate(pem: bytes, where: Path) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise InputError(f"{where} is not a PEM certificate") from exc


def _check_serving_names(leaf: x509.Certificate, where: Path, namespace: str) -> None:
    want = service_dns_names(NAME, namespace)[2]
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = san.get_values_for_type(x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if want not in names:
        raise InputError(
            f"{where} is not valid for {want}, the name kube-apiserver will call; run "
            f"`topospread certs --service {NAME} --namespace {namespace} --out {where.parent}`"
        )


def cli_manifests(args: argparse.Namespace) -> int:
    """`topospread manifests --namespace NS (--cert-dir DIR | --ca-bundle FILE | --cert-manager)`.

    Exit 2 when the certificates cannot be read or do not fit the namespace.
    """
    namespace: str = args.namespace
    check_names(NAME, namespace, 1)
    cert_dir = getattr(args, "cert_dir", None)
    ca_file = getattr(args, "ca_bundle", None)
    cert_manager = bool(getattr(args, "cert_manager", False))
    if sum(x is not None and x is not False for x in (cert_dir, ca_file, cert_manager)) != 1:
        raise InputError("give exactly one of --cert-dir DIR, --ca-bundle FILE, --cert-manager")
    # --deletion-costs: the audit Deployment with the deletion-cost keeper and its RBAC.
    keeper = bool(getattr(args, "deletion_costs", False))
    opt = Install(
        namespace=namespace,
        image=getattr(args, "image", None) or DEFAULT_IMAGE,
        cert_manager=cert_manager,
        audit=keeper,
        audit_deletion_costs=keeper,
    )
    if cert_dir is not None:
        d = Path(cert_dir)
        tls = {n: _read(d / n) for n in (TLS_CERT, TLS_KEY, CA_CERT)}
        _certificate(tls[CA_CERT], d / CA_CERT)
        _check_serving_names(_certificate(tls[TLS_CERT], d / TLS_CERT), d / TLS_CERT, namespace)
        opt = replace(opt, ca_bundle=tls[CA_CERT], tls=tls)
    elif ca_file is not None:
        pem = _read(Path(ca_file))
        _certificate(pem, Path(ca_file))
        opt = replace(opt, ca_bundle=pem)
    # The periodic audit, and its rebalancing (the eviction verb comes with it only).
    rebalance = bool(getattr(args, "audit_rebalance", False))
    if rebalance or getattr(args, "audit", False):
        opt = replace(opt, audit=True, audit_rebalance=rebalance)
    sys.stdout.write(to_yaml(render(opt)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    for written in write_kustomize(sys.argv[1] if len(sys.argv) > 1 else "deploy/kustomize"):
        print(written)
