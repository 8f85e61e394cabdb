"""The Helm chart, rendered and linted by Helm itself: it installs what render() installs.

helm-python-sdk binds Helm v4's Go SDK (chart loading, values coalescing, the schema check
of values.schema.json, the template engine, lint), so these tests run Helm's own code
offline, with no helm binary and no cluster.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from tests import paths
from tests.install.test_manifests import K8S_VERSIONS, RawObj, by_kind, one, validate_schema
from webhook import __version__
from webhook.install import manifests

CHART = paths.ROOT / "deploy" / "helm" / "topospread"

# helm lint severities (helm.sh/helm/v4/pkg/chart/v2/lint/support).
LINT_WARNING = 2


def helm_template(values: RawObj, namespace: str = "topospread") -> list[RawObj]:
    """Render the chart as `helm template rel CHART -n NS` would, documents parsed."""
    with helm_python.Chart.load(CHART) as chart:
        rendered = chart.render(values, name="rel", namespace=namespace, is_install=True)
    docs: list[RawObj] = []
    for template in sorted(rendered):
        docs.extend(d for d in yaml.safe_load_all(rendered[template]) if d is not None)
    return docs


def _without_labels(objs: list[RawObj]) -> dict[tuple[str, str], RawObj]:
    """Objects keyed by kind/name, labels and pod-template metadata dropped (Helm adds its own)."""
    out = {}
    for o in copy.deepcopy(objs):
        o["metadata"].pop("labels", None)
        if o["kind"] == "Deployment":
            o["spec"]["template"].pop("metadata")
        out[(o["kind"], o["metadata"]["name"])] = o
    return out


def _tls_values(d: Path) -> RawObj:
    return {
        "tls": {
            "caCert": (d / "ca.crt").read_text(),
            "cert": (d / "tls.crt").read_text(),
            "key": (d / "tls.key").read_text(),
        }
    }


# --- the chart equals the rendering ----------------------------------------------------------


def test_helm_chart_with_certificates_renders_the_same_install(cert_dir: Path) -> None:
    """helm template with --set-file tls.* equals `manifests --cert-dir` (no Namespace object)."""
    tls = {n: (cert_dir / n).read_bytes() for n in ("tls.crt", "tls.key", "ca.crt")}
    expected = manifests.render(manifests.Install(ca_bundle=tls["ca.crt"], tls=tls))
    got = helm_template(_tls_values(cert_dir))
    want = _without_labels([o for o in expected if o["kind"] != "Namespace"])
    assert _without_labels(got) == want


def test_helm_chart_with_cert_manager_renders_the_same_install() -> None:
    """certManager.enabled=true equals `manifests --cert-manager` in another namespace."""
    expected = manifests.render(manifests.Install(namespace="tools", cert_manager=True))
    got = helm_template({"certManager": {"enabled": True}}, namespace="tools")
    want = _without_labels([o for o in expected if o["kind"] != "Namespace"])
    assert _without_labels(got) == want


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_helm_rendering_is_schema_valid(cert_dir: Path, version: str) -> None:
    """Every object the chart renders passes the strict schema, Helm labels included."""
    for obj in helm_template(_tls_values(cert_dir)):
        validate_schema(obj, version)


def test_helm_chart_refuses_to_render_without_a_certificate_source() -> None:
    """Neither tls.* nor cert-manager: rendering stops with a message naming tls.caCert."""
    with pytest.raises(helm_python.HelmRenderError, match=r"set tls\.caCert"):
        helm_template({})


def test_helm_existing_secret_is_mounted_and_not_rendered(cert_dir: Path) -> None:
    """tls.existingSecret: no Secret rendered, the Deployment mounts the named one."""
    values = {"tls": {"caCert": (cert_dir / "ca.crt").read_text(), "existingSecret": "mine"}}
    objs = helm_template(values)
    assert by_kind(objs, "Secret") == []
    pod = one(objs, "Deployment")["spec"]["template"]["spec"]
    assert [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v] == ["mine"]


def test_helm_values_hold_the_manifests_defaults() -> None:
    """values.yaml defaults are Install()'s: image, replicas, resources, config, webhook policy."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    d = manifests.Install()
    assert f"{values['image']['repository']}:{values['image']['tag'] or chart['appVersion']}" == (
        d.image
    )
    assert chart["appVersion"] == __version__
    assert values["replicaCount"] == d.replicas
    assert values["resources"] == d.resources
    assert values["config"] == d.config
    assert values["webhook"]["timeoutSeconds"] == d.timeout_seconds
    assert values["webhook"]["validate"]["failurePolicy"] == d.validate_failure_policy
    assert values["webhook"]["mutate"]["failurePolicy"] == d.mutate_failure_policy
    assert values["webhook"]["excludedNamespaces"] == ["kube-system"]
    assert values["certManager"]["enabled"] is False


def test_helm_pod_template_rolls_when_the_config_changes(cert_dir: Path) -> None:
    """The checksum/config annotation follows the config value."""
    a = one(helm_template(_tls_values(cert_dir)), "Deployment")
    b = one(
        helm_template({**_tls_values(cert_dir), "config": "injectDefaults: false\n"}), "Deployment"
    )
    key = "checksum/config"
    assert (
        a["spec"]["template"]["metadata"]["annotations"][key]
        != (b["spec"]["template"]["metadata"]["annotations"][key])
    )


# --- values.schema.json ----------------------------------------------------------------------


def _schema() -> RawObj:
    schema: RawObj = json.loads((CHART / "values.schema.json").read_text())
    return schema


def _resolve(schema: RawObj, node: RawObj) -> RawObj:
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/definitions/"), ref
    resolved: RawObj = schema["definitions"][ref.removeprefix("#/definitions/")]
    return resolved


def _value_paths(values: Any, prefix: str = "") -> Iterator[str]:
    """Every key path of values.yaml, parents before children."""
    if isinstance(values, dict):
        for key, value in values.items():
            path = f"{prefix}.{key}" if prefix else key
            yield path
            if key not in ("requests", "limits"):  # resource lists: free-form names
                yield from _value_paths(value, path)


def test_helm_schema_describes_every_value_and_closes_every_object() -> None:
    """Each values.yaml key has a typed schema; fixed-key objects refuse unknown keys."""
    schema = _schema()
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for path in _value_paths(values):
        node = schema
        for key in path.split("."):
            assert node.get("additionalProperties") is False, f"{path}: parent is open"
            assert key in node["properties"], f"{path}: not in values.schema.json"
            node = _resolve(schema, node["properties"][key])
        assert "type" in node, f"{path}: no type"


def test_helm_default_values_pass_the_schema_and_render() -> None:
    """values.yaml as shipped satisfies the schema; with a certificate source it renders."""
    with helm_python.Chart.load(CHART) as chart:
        assert chart.schema == _schema()
        chart.validate_schema(chart.values)
    objs = helm_template({"certManager": {"enabled": True}})
    assert one(objs, "Deployment")["spec"]["replicas"] == 3


@pytest.mark.parametrize(
    ("values", "where"),
    [
        pytest.param({"replicaCount": "three"}, "/replicaCount", id="replicaCount a string"),
        pytest.param({"replicaCount": 0}, "/replicaCount", id="replicaCount 0"),
        pytest.param({"replicas": 3}, "'replicas' not allowed", id="unknown top-level key"),
        pytest.param({"image": {"tag": 1.5}}, "/image/tag", id="image tag a number"),
        pytest.param({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy", id="pullPolicy"),
        pytest.param({"image": {"registry": "r.io"}}, "'registry' not allowed", id="image key"),
        pytest.param(
            {"resources": {"requests": {"cpu": "lots"}}},
            "/resources/requests/cpu",
            id="cpu not a quantity",
        ),
        pytest.param({"config": {"injectDefaults": False}}, "/config", id="config not a string"),
        pytest.param(
            {"webhook": {"timeoutSeconds": 31}}, "/webhook/timeoutSeconds", id="timeout above 30"
        ),
        pytest.param(
            {"webhook": {"validate": {"failurePolicy": "Deny"}}},
            "/webhook/validate/failurePolicy",
            id="validate failurePolicy",
        ),
        pytest.param(
            {"webhook": {"mutate": {"failurePolicy": "fail"}}},
            "/webhook/mutate/failurePolicy",
            id="mutate failurePolicy",
        ),
        pytest.param(
            {"webhook": {"excludedNamespaces": "kube-system"}},
            "/webhook/excludedNamespaces",
            id="excludedNamespaces a string",
        ),
        pytest.param(
            {"webhook": {"excludedNamespaces": ["Kube_System"]}},
            "/webhook/excludedNamespaces/0",
            id="excluded namespace not a label",
        ),
        pytest.param(
            {"certManager": {"enabled": "yes"}},
            "/certManager/enabled",
            id="certManager.enabled a string",
        ),
        pytest.param(
            {"tls": {"existingSecret": "My_Secret"}},
            "/tls/existingSecret",
            id="existingSecret not a name",
        ),
        pytest.param({"tls": {"ca": "PEM"}}, "'ca' not allowed", id="unknown tls key"),
    ],
)
def test_helm_schema_refuses_wrong_values_at_render(values: RawObj, where: str) -> None:
    """A wrong type, value or key stops `helm template` in schema validation, naming the key."""
    with pytest.raises(helm_python.HelmValuesError) as exc:
        # cert-manager on: without the schema this would render.
        helm_template({"certManager": {"enabled": True}} | values)
    message = str(exc.value)
    assert "don't meet the specifications of the schema" in message
    assert where in message


# --- helm lint -------------------------------------------------------------------------------


def test_helm_chart_lints_clean_in_strict_mode() -> None:
    """`helm lint --strict`: no error and no warning, only informational findings."""
    report = helm_python.lint(CHART, strict=True)
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= LINT_WARNING] == []


def test_helm_lint_reports_values_the_schema_refuses() -> None:
    """The same lint fails on values.yaml overrides the schema refuses, naming the key."""
    report = helm_python.lint(CHART, {"replicaCount": "three"}, strict=True)
    assert any("/replicaCount" in e for e in report["errors"]), report
