"""The Kubernetes release modelled, end to end on the command line: --kubernetes-version,
the config's kubernetesVersion and featureGates, the newest offline, the answer naming
the release, and a placement that each release decides by its own rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import pod_with, resource_node
from webhook.cli.main import main

# Balance (1 - std) * 100 of cpu and memory, "before -> after" the pod (cpu 1000m):
#   node-a, empty, 4000m / 4000:        cpu 0 -> .25, memory 0:   100 -> 87
#   node-b, memory full (4000 of 4000): cpu 0 -> .25, memory 1:    50 -> 62
# v1.35 scores "after" (a 87, b 62: node-a); v1.36 and v1.37 the change
# (a 50 + (50 + 87 - 100) // 2 = 68, b 50 + (50 + 62 - 50) // 2 = 81: node-b).
ONLY_BALANCE = {
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "NodeResourcesBalancedAllocation"}],
                }
            },
        }
    ]
}


def write(path: Path, doc: Any) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    cluster = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            resource_node("node-a", 4000, 4000),
            resource_node("node-b", 4000, 4000),
            pod_with({"memory": "4000"}, node="node-b", name="full"),
        ],
    }
    pod = pod_with({"cpu": "1000m"}, name="web")
    return {
        "snapshot": write(tmp_path / "cluster.json", cluster),
        "pod": write(tmp_path / "pod.json", pod),
        "tmp": str(tmp_path),
    }


def config(files: dict[str, str], **keys: Any) -> str:
    path = Path(files["tmp"]) / "config.yaml"
    path.write_text(yaml.safe_dump({"schedulerConfiguration": ONLY_BALANCE, **keys}))
    return str(path)


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["simulate", "-o", "json", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else None, err


@pytest.mark.parametrize(
    ("version", "want_node", "want_scores"),
    [
        pytest.param("1.35", "node-a", {"node-a": 87, "node-b": 62}, id="v1.35"),
        pytest.param("1.36", "node-b", {"node-a": 68, "node-b": 81}, id="v1.36"),
        pytest.param("1.37", "node-b", {"node-a": 68, "node-b": 81}, id="v1.37"),
    ],
)
def test_each_release_places_by_its_own_balance_rule(
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    version: str,
    want_node: str,
    want_scores: dict[str, int],
) -> None:
    """--kubernetes-version decides NodeResourcesBalancedAllocation's rule, so the node;
    the answer names the release."""
    code, doc, err = simulate(
        capsys,
        "--snapshot",
        files["snapshot"],
        "--config",
        config(files),
        "--kubernetes-version",
        version,
        files["pod"],
    )
    assert code == 0, err
    assert doc["kubernetesVersion"] == version
    assert f"modelled as Kubernetes {version}" in err
    assert doc["selectedNode"] == want_node
    scores = {n["name"]: n["scores"]["NodeResourcesBalancedAllocation"] for n in doc["nodes"]}
    assert scores == want_scores


def test_the_config_names_the_release_and_the_flag_wins(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    """kubernetesVersion in the config is the default; --kubernetes-version wins."""
    cfg = config(files, kubernetesVersion="1.35")
    argv = ["--snapshot", files["snapshot"], "--config", cfg, files["pod"]]
    code, doc, err = simulate(capsys, *argv)
    assert code == 0, err
    assert (doc["kubernetesVersion"], doc["selectedNode"]) == ("1.35", "node-a")
    code, doc, err = simulate(
        capsys,
        "--snapshot",
        files["snapshot"],
        "--config",
        cfg,
        "--kubernetes-version",
        "v1.36.3",
        files["pod"],
    )
    assert code == 0, err
    assert (doc["kubernetesVersion"], doc["selectedNode"]) == ("1.36.3", "node-b")


def test_offline_default_is_the_newest(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    """Without a flag, a config version or a live cluster, the newest minor."""
    code, doc, err = simulate(
        capsys, "--snapshot", files["snapshot"], "--config", config(files), files["pod"]
    )
    assert code == 0, err
    assert (doc["kubernetesVersion"], doc["selectedNode"]) == ("1.37", "node-b")


@pytest.mark.parametrize(
    ("command", "argv", "message"),
    [
        (
            "simulate",
            ["--kubernetes-version", "1.34"],
            "unsupported Kubernetes version 1.34: supported are 1.35, 1.36, 1.37",
        ),
        ("audit", ["--kubernetes-version", "1.38"], "supported are 1.35, 1.36, 1.37"),
        ("check", ["--kubernetes-version", "next"], "not a Kubernetes version: 'next'"),
        ("mutate", ["--kubernetes-version", "1.30"], "supported are 1.35, 1.36, 1.37"),
        ("review", ["validate", "--kubernetes-version", "2.0"], "supported are 1.35, 1.36"),
    ],
)
def test_an_unsupported_version_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    command: str,
    argv: list[str],
    message: str,
) -> None:
    """Every modelling command refuses an unsupported version, naming the supported."""
    with pytest.raises(SystemExit) as exit_:
        main([command, *argv, "--snapshot", files["snapshot"], files["pod"]])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"kubernetesVersion": "1.33"}, "kubernetesVersion: unsupported Kubernetes version 1.33"),
        (
            {"kubernetesVersion": "1.37", "featureGates": {"NodeDeclaredFeatures": False}},
            "cannot set feature gate NodeDeclaredFeatures to false",
        ),
        ({"featureGates": {"Nope": True}}, "featureGates: unknown feature gate 'Nope'"),
    ],
)
def test_a_bad_version_or_gate_in_the_config_is_refused(
    capsys: pytest.CaptureFixture[str], files: dict[str, str], keys: Any, message: str
) -> None:
    """The config's kubernetesVersion and featureGates are checked: exit 2, a message."""
    cfg = config(files, **keys)
    code = main(["simulate", "--snapshot", files["snapshot"], "--config", cfg, files["pod"]])
    assert code == 2
    assert message in capsys.readouterr().err


def test_server_version_and_kubernetes_version_must_agree(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    """--server-version and --kubernetes-version are one setting: two answers refused."""
    code = main(
        ["check", "--server-version", "1.36", "--kubernetes-version", "1.37", files["pod"]]
    )
    assert code == 2
    assert "disagree" in capsys.readouterr().err


def test_feature_gate_turns_a_filter_on_for_v1_35(
    capsys: pytest.CaptureFixture[str], files: dict[str, str]
) -> None:
    """NodeDeclaredFeatures is off in v1.35 (not among the filters) unless featureGates
    turns it on."""
    argv = ["--snapshot", files["snapshot"], "--kubernetes-version", "1.35", files["pod"]]
    _, doc, _ = simulate(capsys, *argv)
    assert "NodeDeclaredFeatures" not in doc["nodes"][0]["filters"]
    cfg = Path(files["tmp"]) / "gates.yaml"
    cfg.write_text(yaml.safe_dump({"featureGates": {"NodeDeclaredFeatures": True}}))
    # The gate is checked against the newest release when the config names none, and
    # the flag's release when the profiles are built.
    _, doc, _ = simulate(capsys, *argv, "--config", str(cfg))
    assert "NodeDeclaredFeatures" in doc["nodes"][0]["filters"]
