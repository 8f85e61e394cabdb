"""The kustomize tree: checked in as render() writes it, and built by kustomize into render().

The overlays are built with the kustomize compiled into kubectl (`kubectl kustomize DIR`,
what `kubectl apply -k DIR` applies). Without kubectl on PATH those tests are skipped, with
the reason shown by `pytest -ra`.
"""

from __future__ import annotations

import base64
import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import paths
from tests.install.test_manifests import K8S_VERSIONS, RawObj, by_kind, one, validate_schema
from webhook.install import certs, manifests

KUSTOMIZE = paths.ROOT / "deploy" / "kustomize"
WEBHOOK_KINDS = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
TLS_FILES = ("tls.crt", "tls.key", "ca.crt")


def kustomize_build(directory: Path) -> list[RawObj]:
    """`kubectl kustomize DIRECTORY`, documents parsed in the order kustomize emits them."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not on PATH: the kustomize overlays cannot be built")
    proc = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d is not None]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of deploy/kustomize with own-certs/certs/ filled as docs/install.md says."""
    root = tmp_path_factory.mktemp("kustomize") / "kustomize"
    shutil.copytree(KUSTOMIZE, root, ignore=shutil.ignore_patterns("certs"))
    certs.generate("topospread", "topospread", root / "own-certs" / "certs")
    return root


def _tls(tree: Path) -> dict[str, bytes]:
    return {n: (tree / "own-certs" / "certs" / n).read_bytes() for n in TLS_FILES}


def _install(tree: Path, overlay: str) -> manifests.Install:
    """What `topospread manifests` is given to render what OVERLAY builds."""
    if overlay == "own-certs":
        tls = _tls(tree)
        return manifests.Install(ca_bundle=tls["ca.crt"], tls=tls)
    return manifests.Install(cert_manager=overlay == "cert-manager")


def _unwrapped(objs: list[RawObj]) -> list[RawObj]:
    """Line breaks dropped from Secret data and caBundle values.

    kustomize's secretGenerator wraps base64 at 70 columns and the replacement copies the
    wrapped ca.crt into caBundle; kube-apiserver decodes base64 with Go's encoding/base64,
    which skips line breaks, so the wrapped and the unwrapped texts are the same bytes.
    """
    out = copy.deepcopy(objs)
    for o in out:
        if o["kind"] == "Secret":
            o["data"] = {k: v.replace("\n", "") for k, v in o["data"].items()}
        if o["kind"] in WEBHOOK_KINDS:
            for w in o["webhooks"]:
                if "caBundle" in w["clientConfig"]:
                    w["clientConfig"]["caBundle"] = w["clientConfig"]["caBundle"].replace("\n", "")
    return out


def _keyed(objs: list[RawObj]) -> dict[tuple[str, str], RawObj]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


# --- the checked-in files are the rendering --------------------------------------------------


def test_checked_in_kustomize_tree_equals_the_rendering() -> None:
    """deploy/kustomize is exactly what manifests.kustomize_files() renders."""
    expected = manifests.kustomize_files()
    on_disk = {
        str(p.relative_to(KUSTOMIZE)): p.read_text(encoding="utf-8")
        for p in KUSTOMIZE.rglob("*")
        # own-certs/certs/ is where a user puts keys (git-ignored), not part of the tree.
        if p.is_file() and not p.relative_to(KUSTOMIZE).as_posix().startswith("own-certs/certs/")
    }
    assert sorted(on_disk) == sorted(expected)
    for rel, text in expected.items():
        stale = f"{rel} is stale: python -m webhook.install.manifests deploy/kustomize"
        assert on_disk[rel] == text, stale


# --- built by kustomize ----------------------------------------------------------------------


@pytest.mark.parametrize("overlay", ["base", "own-certs", "cert-manager"])
def test_kustomize_build_equals_the_rendering(tree: Path, overlay: str) -> None:
    """Each built overlay holds exactly render()'s objects; webhook configurations come last."""
    built = kustomize_build(tree / overlay)
    assert _keyed(_unwrapped(built)) == _keyed(manifests.render(_install(tree, overlay)))
    assert len(built) == len(_keyed(built)), "an object is built twice"
    kinds = [o["kind"] for o in built]
    assert kinds[0] == "Namespace"
    assert set(kinds[-2:]) == WEBHOOK_KINDS


def test_kustomize_own_certs_overlay_builds_the_secret_and_fills_every_ca_bundle(
    tree: Path,
) -> None:
    """own-certs: a kubernetes.io/tls Secret from certs/, its ca.crt copied into caBundles."""
    built = kustomize_build(tree / "own-certs")
    tls = _tls(tree)
    secret = one(built, "Secret")
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["namespace"] == "topospread"
    # certs/ also holds ca.key: it never leaves the machine.
    assert sorted(secret["data"]) == sorted(TLS_FILES)
    for name, value in secret["data"].items():
        assert base64.b64decode(value) == tls[name]
    pod = one(built, "Deployment")["spec"]["template"]["spec"]
    mounted = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
    assert mounted == [secret["metadata"]["name"]]
    hooks = [w for kind in sorted(WEBHOOK_KINDS) for w in one(built, kind)["webhooks"]]
    assert len(hooks) == 2
    for w in hooks:
        assert base64.b64decode(w["clientConfig"]["caBundle"]) == tls["ca.crt"]
    assert "certs/" in (KUSTOMIZE / "own-certs" / ".gitignore").read_text().split()


def test_kustomize_cert_manager_overlay_has_cert_manager_inject_the_ca(tree: Path) -> None:
    """cert-manager: no Secret and no caBundle; both configurations name the serving Certificate."""
    built = kustomize_build(tree / "cert-manager")
    assert by_kind(built, "Secret") == []
    serving = {o["metadata"]["name"]: o for o in by_kind(built, "Certificate")}[
        "topospread-serving"
    ]
    pod = one(built, "Deployment")["spec"]["template"]["spec"]
    mounted = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
    assert mounted == [serving["spec"]["secretName"]]
    for kind in sorted(WEBHOOK_KINDS):
        config = one(built, kind)
        assert config["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "topospread/topospread-serving"
        }
        for w in config["webhooks"]:
            assert "caBundle" not in w["clientConfig"]


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_kustomize_base_is_schema_valid_and_lists_every_file(tree: Path, version: str) -> None:
    """Each built base object validates; kustomization.yaml lists every other file."""
    base = KUSTOMIZE / "base"
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    files = sorted(p.name for p in base.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(kustomization["resources"]) == files
    for obj in kustomize_build(tree / "base"):
        validate_schema(obj, version)


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("overlay", ["own-certs", "cert-manager"])
def test_kustomize_overlays_are_schema_valid(tree: Path, overlay: str, version: str) -> None:
    """Every object an overlay builds passes the strict schema (cert-manager kinds aside)."""
    built = kustomize_build(tree / overlay)
    checked = [o for o in built if not o["apiVersion"].startswith("cert-manager.io/")]
    assert len(checked) >= len(built) - 4  # at most the four cert-manager objects skipped
    for obj in checked:
        validate_schema(obj, version)
