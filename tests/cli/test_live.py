"""The live cluster, the kubectl way: the current kubeconfig context read by default
(`simulate`) or on request (`check --cluster`), against tests/fake_apiserver.py; and
the `kubectl-topospread` entry point run as a plugin by the real kubectl."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess  # nosec B404 - runs kubectl on test data
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import DNS, ZONE, make_node, make_pod, selector
from tests.fake_apiserver import FakeApiServer
from webhook.cli.main import main
from webhook.cluster.lister import ClusterError, connect, list_objects, list_snapshot

WEB = selector({"app": "web"})


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer().start()
    for zone in ("a", "b"):
        fake.add(make_node().name(f"{zone}1").zone(zone).hostname().obj())
    for i in range(3):
        fake.add(make_pod().name(f"web-{i}").namespace("shop").label("app", "web").node("a1").obj())
    yield fake
    fake.stop()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def kubeconfig(tmp_path: Path, url: str) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "fake", "cluster": {"server": url}},
            {"name": "down", "cluster": {"server": f"http://127.0.0.1:{closed_port()}"}},
        ],
        "users": [{"name": "dev", "user": {"token": "t0ken"}}],
        "contexts": [
            {"name": "fake", "context": {"cluster": "fake", "user": "dev", "namespace": "shop"}},
            {"name": "down", "context": {"cluster": "down", "user": "dev"}},
        ],
        "current-context": "fake",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


def pod_file(tmp_path: Path) -> str:
    # No namespace: -n, else the context's namespace (shop), as kubectl applies it.
    pod = make_pod().name("web").label("app", "web").spread(1, ZONE, DNS, WEB).obj()
    del pod["metadata"]["namespace"]
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_reads_the_current_context_by_default(
    server: FakeApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No --snapshot: $KUBECONFIG's current context, its namespace for the pod; the three
    web pods of shop on a1 send the new one to b1."""
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path, server.url))
    code, out, err = run(capsys, "simulate", "-o", "json", pod_file(tmp_path))
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["pod"], doc["selectedNode"]) == ("shop/web", "b1")
    assert server.requests_for("Pod", watch=False)[0].headers["authorization"] == "Bearer t0ken"


def test_namespace_flag_and_context_flag(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-n puts the pod in another namespace, where no web pod runs: a1 wins the tie."""
    config = kubeconfig(tmp_path, server.url)
    argv = ["simulate", "--kubeconfig", config, "--context", "fake", "-o", "json"]
    code, out, err = run(capsys, *argv, "-n", "other", pod_file(tmp_path))
    assert code == 0, err
    assert (json.loads(out)["pod"], json.loads(out)["selectedNode"]) == ("other/web", "a1")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--context", "down"], "cannot reach the cluster at http://127.0.0.1:"),
        (["--context", "nope"], "no context 'nope' in the kubeconfig (fake, down)"),
    ],
)
def test_unreachable_cluster_is_a_clear_error(
    server: FakeApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    fragment: str,
) -> None:
    config = kubeconfig(tmp_path, server.url)
    code, out, err = run(capsys, "simulate", "--kubeconfig", config, *argv, pod_file(tmp_path))
    assert (code, out) == (2, "")
    assert fragment in err
    assert "Traceback" not in err


def test_missing_kubeconfig_suggests_a_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "none")
    code, _, err = run(capsys, "simulate", "--kubeconfig", missing, pod_file(tmp_path))
    assert code == 2
    assert "give --snapshot FILE to work offline" in err


def test_check_with_the_cluster_uses_its_nodes_and_version(
    server: FakeApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--cluster: the nodes decide the topology-key warning, /version (1.30) the rules."""
    config = kubeconfig(tmp_path, server.url)
    pod = (
        make_pod()
        .name("web")
        .label("app", "web")
        .spread(1, "example.com/rack", "ScheduleAnyway", WEB)
        .spread(1, ZONE, "ScheduleAnyway", WEB, matchLabelKeys=["app"])
        .obj()
    )
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(pod))
    code, out, _ = run(capsys, "check", "--kubeconfig", config, "-o", "json", str(path))
    [entry] = json.loads(out)
    assert code == 1
    # v1.30 refuses a key in both before merging anything, on the key itself.
    assert [e["field"] for e in entry["errors"]] == [
        "spec.topologySpreadConstraints[1].matchLabelKeys[0]"
    ]
    assert [w["message"] for w in entry["warnings"]] == [
        "no node of the cluster has the label example.com/rack; every node is left out of "
        "the spread"
    ]


def test_check_stays_offline_without_cluster_flags(
    server: FakeApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CI run must not depend on whatever kubeconfig the runner has."""
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path, server.url))
    code, _, _ = run(capsys, "check", pod_file(tmp_path))
    assert code == 0
    assert server.requests == []


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("tty", [True, False])
def test_lists_are_paginated_with_a_progress_line_on_a_terminal(
    server: FakeApiServer, tmp_path: Path, tty: bool
) -> None:
    conn = connect(kubeconfig=kubeconfig(tmp_path, server.url))
    progress = Terminal() if tty else io.StringIO()
    snapshot, version = list_snapshot(conn, page_size=2, progress=progress)
    assert version == (1, 30)
    assert sorted(snapshot.nodes) == ["a1", "b1"]
    assert snapshot.pod_count() == 3
    pod_lists = server.requests_for("Pod", watch=False)
    assert [r.query.get("limit") for r in pod_lists] == ["2", "2"]
    assert "continue" in pod_lists[1].query
    shown = progress.getvalue()
    assert ("listing Pods from fake: 3" in shown) is tty
    assert shown.endswith("\r\033[K") is tty


def test_list_objects_fills_kind_and_reports_http_errors(
    server: FakeApiServer, tmp_path: Path
) -> None:
    from webhook.cluster.informer import Resource

    conn = connect(kubeconfig=kubeconfig(tmp_path, server.url))
    nodes = list(list_objects(conn, [Resource("Node", "/api/v1/nodes")]))
    assert [(n["kind"], n["apiVersion"]) for n in nodes] == [("Node", "v1"), ("Node", "v1")]
    server.fail_next("Node", 500)
    with pytest.raises(ClusterError, match="HTTP 500: scripted 500"):
        list(list_objects(conn, [Resource("Node", "/api/v1/nodes")]))


def test_a_page_that_fails_mid_list_is_a_clear_error_and_no_snapshot(
    server: FakeApiServer, tmp_path: Path
) -> None:
    """The first page of pods is taken, the second fails: ClusterError, nothing returned."""
    conn = connect(kubeconfig=kubeconfig(tmp_path, server.url))
    server.fail_next("Pod", 0, 500)
    with pytest.raises(ClusterError, match="HTTP 500: scripted 500"):
        list_snapshot(conn, page_size=2)
    assert [("continue" in r.query) for r in server.requests_for("Pod", watch=False)] == [
        False,
        True,
    ]


# ---------------------------------------------------------------------------------------
# kubectl plugin

KUBECTL = shutil.which("kubectl")


def plugin_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "kubectl-topospread").exists():
        pytest.fail("kubectl-topospread is not installed next to the interpreter")
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["NO_COLOR"] = "1"
    return env


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine")
def test_kubectl_finds_and_runs_the_plugin(server: FakeApiServer, tmp_path: Path) -> None:
    """`kubectl topospread ...` through the real kubectl, with the entry point on PATH."""
    assert KUBECTL is not None
    env = plugin_env(tmp_path)
    env["KUBECONFIG"] = kubeconfig(tmp_path, server.url)

    def kubectl(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # noqa: S603 - fixed argv
            [KUBECTL, *argv], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    listed = kubectl("plugin", "list")
    assert "kubectl-topospread" in listed.stdout
    helped = kubectl("topospread", "--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: kubectl topospread")
    assert "Running as a kubectl plugin" in " ".join(helped.stdout.split())
    simulated = kubectl("topospread", "simulate", "-o", "json", pod_file(tmp_path))
    assert simulated.returncode == 0, simulated.stderr
    assert json.loads(simulated.stdout)["selectedNode"] == "b1"
    checked = kubectl("topospread", "check", str(tmp_path / "nothing.yaml"))
    assert checked.returncode == 2
    assert checked.stderr.startswith("kubectl topospread check: ")


def test_krew_manifest_names_the_plugin() -> None:
    from tests import paths

    doc: Any = yaml.safe_load((paths.ROOT / "deploy" / "krew" / "topospread.yaml").read_text())
    assert (doc["apiVersion"], doc["kind"]) == (
        "krew.googlecontainertools.github.com/v1alpha2",
        "Plugin",
    )
    assert doc["metadata"]["name"] == "topospread"
    for platform in doc["spec"]["platforms"]:
        assert platform["bin"].startswith("kubectl-topospread")
