"""Install manifests: schema-valid, least privilege, and one source of truth for every format.

Schemas: kubernetes-validate's strict OpenAPI schemas for the oldest release the install
supports (1.27: matchLabelKeys beta) and the newest it ships. cert-manager objects have no
schema there and get property checks instead. The other formats are held equal to render()
in test_helm.py (the chart, rendered by Helm) and test_kustomize.py (the overlays, built by
kustomize). The shared helpers below are imported from here by both.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from webhook import __version__
from webhook.cli.main import main
from webhook.install import certs

K8S_VERSIONS = ["1.27", "1.37"]

RawObj = dict[str, Any]


def run_manifests(capsys: pytest.CaptureFixture[str], *argv: str) -> list[RawObj]:
    rc = main(["manifests", *argv])
    out = capsys.readouterr().out
    assert rc == 0
    return [d for d in yaml.safe_load_all(out) if d is not None]


@pytest.fixture
def rendered(cert_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[RawObj]:
    return run_manifests(capsys, "--namespace", "topospread", "--cert-dir", str(cert_dir))


def by_kind(objs: list[RawObj], kind: str) -> list[RawObj]:
    return [o for o in objs if o["kind"] == kind]


def one(objs: list[RawObj], kind: str) -> RawObj:
    found = by_kind(objs, kind)
    assert len(found) == 1, f"{kind}: {len(found)}"
    return found[0]


def webhooks(objs: list[RawObj]) -> list[RawObj]:
    return [
        w
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
        for w in one(objs, kind)["webhooks"]
    ]


def validate_schema(obj: RawObj, version: str) -> None:
    kubernetes_validate.validate(obj, version, strict=True)


# --- schema ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_every_rendered_object_is_schema_valid(rendered: list[RawObj], version: str) -> None:
    """Each document of `manifests --cert-dir` passes the strict OpenAPI schema."""
    for obj in rendered:
        validate_schema(obj, version)


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_ca_bundle_and_cert_manager_renderings_are_schema_valid(
    cert_dir: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    """--ca-bundle and --cert-manager renderings validate too (cert-manager kinds aside)."""
    for argv in (["--ca-bundle", str(cert_dir / "ca.crt")], ["--cert-manager"]):
        for obj in run_manifests(capsys, "--namespace", "tools", *argv):
            if obj["apiVersion"].startswith("cert-manager.io/"):
                continue
            validate_schema(obj, version)


def test_the_install_holds_exactly_these_kinds(rendered: list[RawObj]) -> None:
    """One of each kind, webhook configurations last so the Service exists first."""
    assert [o["kind"] for o in rendered] == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Secret",
        "Service",
        "Deployment",
        "PodDisruptionBudget",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]


# --- webhook configurations ------------------------------------------------------------------


def test_ca_bundle_is_the_generated_ca(rendered: list[RawObj], cert_dir: Path) -> None:
    """Every caBundle is base64 of ca.crt exactly."""
    ca = (cert_dir / "ca.crt").read_bytes()
    for w in webhooks(rendered):
        assert base64.b64decode(w["clientConfig"]["caBundle"]) == ca


def test_ca_bundle_from_a_file(cert_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--ca-bundle FILE fills caBundle from FILE and renders no Secret."""
    objs = run_manifests(
        capsys, "--namespace", "topospread", "--ca-bundle", str(cert_dir / "ca.crt")
    )
    assert by_kind(objs, "Secret") == []
    for w in webhooks(objs):
        assert base64.b64decode(w["clientConfig"]["caBundle"]) == (cert_dir / "ca.crt").read_bytes()


@pytest.mark.parametrize("namespace", ["topospread", "tools"])
def test_webhooks_skip_kube_system_and_their_own_namespace(
    cert_dir: Path, capsys: pytest.CaptureFixture[str], namespace: str
) -> None:
    """namespaceSelector: kubernetes.io/metadata.name NotIn [kube-system, NS]."""
    objs = run_manifests(capsys, "--namespace", namespace, "--ca-bundle", str(cert_dir / "ca.crt"))
    for w in webhooks(objs):
        assert w["namespaceSelector"] == {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", namespace],
                }
            ]
        }
        assert w["clientConfig"]["service"]["namespace"] == namespace


def test_webhook_common_settings(rendered: list[RawObj]) -> None:
    """sideEffects None, v1 and v1beta1 reviews, 5 s timeout, fail open, Equivalent matching."""
    for w in webhooks(rendered):
        assert w["sideEffects"] == "None"
        assert w["admissionReviewVersions"] == ["v1", "v1beta1"]
        assert w["timeoutSeconds"] == 5
        assert w["failurePolicy"] == "Ignore"
        assert w["matchPolicy"] == "Equivalent"
        assert w["clientConfig"]["service"]["name"] == "topospread"
        assert w["clientConfig"]["service"]["port"] == 443


def _rule_set(w: RawObj) -> set[tuple[str, str, str, str]]:
    return {
        (group, version, resource, op)
        for r in w["rules"]
        for group in r["apiGroups"]
        for version in r["apiVersions"]
        for resource in r["resources"]
        for op in r["operations"]
    }


def test_validating_webhook_covers_pods_and_every_workload_kind(rendered: list[RawObj]) -> None:
    """/validate: CREATE and UPDATE of pods and of the eight workload kinds, nothing else."""
    (w,) = one(rendered, "ValidatingWebhookConfiguration")["webhooks"]
    assert w["clientConfig"]["service"]["path"] == "/validate"
    kinds = [
        ("", "pods"),
        ("", "replicationcontrollers"),
        ("", "podtemplates"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
    ]
    assert _rule_set(w) == {(g, "v1", r, op) for g, r in kinds for op in ("CREATE", "UPDATE")}
    assert "reinvocationPolicy" not in w


def test_mutating_webhook_only_pod_create_and_reinvoked_if_needed(rendered: list[RawObj]) -> None:
    """/mutate: pods CREATE only, reinvocationPolicy IfNeeded."""
    (w,) = one(rendered, "MutatingWebhookConfiguration")["webhooks"]
    assert w["clientConfig"]["service"]["path"] == "/mutate"
    assert _rule_set(w) == {("", "v1", "pods", "CREATE")}
    assert w["reinvocationPolicy"] == "IfNeeded"


def test_webhook_service_routes_443_to_the_container_https_port(rendered: list[RawObj]) -> None:
    """Service 443 -> targetPort https -> containerPort 8443, selecting the Deployment's pods."""
    svc = one(rendered, "Service")
    dep = one(rendered, "Deployment")
    (port,) = svc["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (443, "https")
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert {"name": "https", "containerPort": 8443, "protocol": "TCP"} in container["ports"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= labels.items()


# --- RBAC ------------------------------------------------------------------------------------


def test_cluster_role_is_read_only_on_exactly_what_the_live_source_lists(
    rendered: list[RawObj],
) -> None:
    """get/list/watch on nodes, pods, services, RCs, RSs, StatefulSets, namespaces, PVs,
    PVCs, StorageClasses, CSINodes, PodDisruptionBudgets and PriorityClasses; nothing
    else."""
    role = one(rendered, "ClusterRole")
    grants = set()
    for rule in role["rules"]:
        assert sorted(rule["verbs"]) == ["get", "list", "watch"]
        assert set(rule) == {"apiGroups", "resources", "verbs"}
        grants |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
    assert grants == {
        ("", "nodes"),
        ("", "pods"),
        ("", "services"),
        ("", "replicationcontrollers"),
        ("", "namespaces"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("storage.k8s.io", "storageclasses"),
        ("storage.k8s.io", "csinodes"),
        ("policy", "poddisruptionbudgets"),
        ("scheduling.k8s.io", "priorityclasses"),
    }
    assert by_kind(rendered, "Role") == [] and by_kind(rendered, "RoleBinding") == []


def granted(rendered: list[RawObj]) -> set[tuple[str, str]]:
    """(API group, resource) pairs the ClusterRole grants."""
    role = one(rendered, "ClusterRole")
    return {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}


def test_cluster_role_grants_what_the_live_source_watches(rendered: list[RawObj]) -> None:
    """Every collection LiveSource lists and watches is granted, and no other."""
    from webhook.cluster.informer import RESOURCES

    watched = set()
    for resource in RESOURCES:
        parts = resource.path.strip("/").split("/")
        # /api/v1/<resource> (core) or /apis/<group>/<version>/<resource>
        watched.add(("", parts[2]) if parts[0] == "api" else (parts[1], parts[3]))
    role = one(rendered, "ClusterRole")
    granted = {
        (g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
    }
    assert granted == watched


def test_cluster_role_covers_the_default_profile_kinds(rendered: list[RawObj]) -> None:
    """Every kind the default profile's plugins read (the volume plugins included), plus
    Node, Pod and Namespace, is granted, and no other."""
    from webhook.cluster.needs import needed_kinds
    from webhook.scheduler.plugins.imagelocality import ImageLocality
    from webhook.scheduler.plugins.nodeports import NodePorts
    from webhook.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
    from webhook.scheduler.plugins.volumebinding import VolumeBinding
    from webhook.scheduler.plugins.volumerestrictions import VolumeRestrictions
    from webhook.scheduler.plugins.volumezone import VolumeZone
    from webhook.scheduler.profile import READS

    reads = [
        *READS,
        *(p.reads for p in (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
                            NodePorts, ImageLocality)),
    ]
    assert granted(rendered) == {(k.group, k.resource) for k in needed_kinds(reads)}


def test_cluster_role_binding_grants_the_role_to_the_pods_service_account(
    rendered: list[RawObj],
) -> None:
    """The binding names the ClusterRole and the ServiceAccount the Deployment runs as."""
    crb = one(rendered, "ClusterRoleBinding")
    sa = one(rendered, "ServiceAccount")
    dep = one(rendered, "Deployment")
    assert crb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": one(rendered, "ClusterRole")["metadata"]["name"],
    }
    assert crb["subjects"] == [
        {"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": "topospread"}
    ]
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]


# --- Deployment ------------------------------------------------------------------------------


def test_deployment_runs_serve_in_cluster_with_config_and_certs(rendered: list[RawObj]) -> None:
    """The container command, and config and certs mounted where it reads them."""
    pod = one(rendered, "Deployment")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"] == [
        "topospread",
        "serve",
        "--in-cluster",
        "--config",
        "/etc/topospread/config.yaml",
        "--cert-dir",
        "/etc/topospread/certs",
        "--bind",
        "0.0.0.0:8443",
    ]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    config = mounts["/etc/topospread/config.yaml"]
    assert (
        volumes[config["name"]]["configMap"]["name"]
        == one(rendered, "ConfigMap")["metadata"]["name"]
    )
    assert config["subPath"] == "config.yaml"
    cert = mounts["/etc/topospread/certs"]
    assert (
        volumes[cert["name"]]["secret"]["secretName"] == one(rendered, "Secret")["metadata"]["name"]
    )


def test_deployment_has_three_spread_replicas_and_a_pdb(rendered: list[RawObj]) -> None:
    """3 replicas spread over hostnames (hard) and zones (soft); PDB allows one down."""
    dep = one(rendered, "Deployment")
    assert dep["spec"]["replicas"] == 3
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    spread = dep["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {(c["topologyKey"], c["whenUnsatisfiable"], c["maxSkew"]) for c in spread} == {
        ("kubernetes.io/hostname", "DoNotSchedule", 1),
        ("topology.kubernetes.io/zone", "ScheduleAnyway", 1),
    }
    for c in spread:
        assert c["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    pdb = one(rendered, "PodDisruptionBudget")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"] == dep["spec"]["selector"]


def test_deployment_probes_use_https_readyz_and_healthz(rendered: list[RawObj]) -> None:
    """Readiness GET /readyz, liveness GET /healthz, both HTTPS on the https port."""
    (c,) = one(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "https", "scheme": "HTTPS"}


def test_deployment_security_context_is_restricted(rendered: list[RawObj]) -> None:
    """Non-root, read-only root, no privilege escalation, ALL caps dropped, RuntimeDefault."""
    pod = one(rendered, "Deployment")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "hostNetwork" not in pod and "privileged" not in sc
    # Writable scratch only where gunicorn needs it.
    tmp = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}["/tmp"]
    assert {v["name"]: v for v in pod["volumes"]}[tmp]["emptyDir"]["medium"] == "Memory"


def test_termination_grace_covers_the_prestop_pause_and_gunicorn_drain(
    rendered: list[RawObj],
) -> None:
    """preStop sleeps while endpoints update; the grace period outlasts it plus the drain."""
    from webhook.server import gunicorn_conf

    pod = one(rendered, "Deployment")["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    command = c["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep"
    pause = int(command[1])
    assert pause > 0
    assert pod["terminationGracePeriodSeconds"] > pause + gunicorn_conf.graceful_timeout


def test_deployment_sets_requests_and_a_memory_limit(rendered: list[RawObj]) -> None:
    """requests for cpu and memory, a memory limit."""
    (c,) = one(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert set(c["resources"]["requests"]) == {"cpu", "memory"}
    assert "memory" in c["resources"]["limits"]


def test_image_flag_sets_the_container_image(
    cert_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--image replaces the default topospread:VERSION."""
    default = one(
        run_manifests(capsys, "--namespace", "topospread", "--cert-manager"), "Deployment"
    )
    (c,) = default["spec"]["template"]["spec"]["containers"]
    assert c["image"] == f"topospread:{__version__}"
    objs = run_manifests(
        capsys, "--namespace", "topospread", "--cert-dir", str(cert_dir), "--image", "r.io/t:9"
    )
    (c,) = one(objs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert c["image"] == "r.io/t:9"


def test_namespace_enforces_restricted_pod_security(rendered: list[RawObj]) -> None:
    """The webhook's own namespace runs under the restricted Pod Security Standard."""
    ns = one(rendered, "Namespace")
    assert ns["metadata"]["name"] == "topospread"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


# --- config and Secret -----------------------------------------------------------------------


def test_config_map_holds_the_three_config_keys(rendered: list[RawObj]) -> None:
    """config.yaml: podTopologySpread (System), injectDefaults true, matchLabelKeysMerge auto."""
    config = yaml.safe_load(one(rendered, "ConfigMap")["data"]["config.yaml"])
    assert config == {
        "podTopologySpread": {"defaultingType": "System"},
        "injectDefaults": True,
        "matchLabelKeysMerge": "auto",
    }


def test_secret_is_a_tls_secret_from_the_cert_dir_without_the_ca_key(
    rendered: list[RawObj], cert_dir: Path
) -> None:
    """kubernetes.io/tls with tls.crt, tls.key, ca.crt as written; ca.key never leaves."""
    secret = one(rendered, "Secret")
    assert secret["type"] == "kubernetes.io/tls"
    assert sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    for name, value in secret["data"].items():
        assert base64.b64decode(value) == (cert_dir / name).read_bytes()


def test_every_namespaced_object_lands_in_the_chosen_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--namespace tools moves every namespaced object and every reference to it."""
    certs.generate("topospread", "tools", tmp_path)
    objs = run_manifests(capsys, "--namespace", "tools", "--cert-dir", str(tmp_path))
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    }
    for o in objs:
        if o["kind"] in cluster_scoped:
            assert "namespace" not in o["metadata"]
        else:
            assert o["metadata"]["namespace"] == "tools"
    assert one(objs, "Namespace")["metadata"]["name"] == "tools"
    assert one(objs, "ClusterRoleBinding")["subjects"][0]["namespace"] == "tools"


# --- cert-manager ----------------------------------------------------------------------------


def test_cert_manager_issues_the_serving_secret_and_injects_the_ca(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issuer chain, a Certificate for the Service names into the mounted Secret, injection."""
    objs = run_manifests(capsys, "--namespace", "tools", "--cert-manager")
    assert by_kind(objs, "Secret") == []
    certificates = {o["metadata"]["name"]: o for o in by_kind(objs, "Certificate")}
    issuers = {o["metadata"]["name"]: o for o in by_kind(objs, "Issuer")}
    serving = certificates["topospread-serving"]
    assert serving["spec"]["dnsNames"] == [
        "topospread",
        "topospread.tools",
        "topospread.tools.svc",
        "topospread.tools.svc.cluster.local",
    ]
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    secret_names = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
    assert secret_names == [serving["spec"]["secretName"]]
    ca_issuer = issuers[serving["spec"]["issuerRef"]["name"]]
    ca_cert = certificates["topospread-ca"]
    assert ca_issuer["spec"]["ca"]["secretName"] == ca_cert["spec"]["secretName"]
    assert ca_cert["spec"]["isCA"] is True
    assert "selfSigned" in issuers[ca_cert["spec"]["issuerRef"]["name"]]["spec"]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        meta = one(objs, kind)["metadata"]
        assert meta["annotations"] == {"cert-manager.io/inject-ca-from": "tools/topospread-serving"}
    for w in webhooks(objs):
        assert "caBundle" not in w["clientConfig"]


# --- CLI errors ------------------------------------------------------------------------------


def _bad_ca(d: Path) -> list[str]:
    (d / "bad.pem").write_text("not a certificate")
    return ["--namespace", "topospread", "--ca-bundle", str(d / "bad.pem")]


def _missing_dir(d: Path) -> list[str]:
    return ["--namespace", "topospread", "--cert-dir", str(d / "nope")]


def _wrong_namespace(d: Path) -> list[str]:
    certs.generate("topospread", "elsewhere", d / "c")
    return ["--namespace", "topospread", "--cert-dir", str(d / "c")]


def _bad_namespace(d: Path) -> list[str]:
    return ["--namespace", "Bad_NS", "--cert-manager"]


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(_bad_ca, id="ca bundle is not PEM"),
        pytest.param(_missing_dir, id="cert dir missing"),
        pytest.param(_wrong_namespace, id="certificate for another namespace"),
        pytest.param(_bad_namespace, id="namespace not a DNS label"),
    ],
)
def test_manifests_bad_input_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: Callable[[Path], list[str]]
) -> None:
    """Unusable input: exit 2, a message on stderr, nothing on stdout."""
    rc = main(["manifests", *argv(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert err.startswith("topospread manifests: ")


def test_manifests_needs_a_certificate_source(capsys: pytest.CaptureFixture[str]) -> None:
    """Neither --cert-dir, --ca-bundle nor --cert-manager: a usage error (exit 2)."""
    with pytest.raises(SystemExit) as exc:
        main(["manifests", "--namespace", "topospread"])
    assert exc.value.code == 2
