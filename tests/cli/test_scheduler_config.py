"""`--scheduler-config FILE` on check, mutate, review, simulate and serve: read once
at start, refused with kube-scheduler's messages (exit 2), winning over the config's
schedulerConfiguration key.

Legend: SNAPSHOT is one zoned node and a Service selecting app=web; ZONE_1 / ZONE_2
are KubeSchedulerConfigurations whose default profile gives PodTopologySpread the
List default "zone, maxSkew 1" / "zone, maxSkew 2", so a created app=web pod shows
which one a command used by the constraint mutation writes into it.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.builders import ZONE, make_node, make_pod, review
from webhook.cli.main import build_parser, main

KSC = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
WEB = {"app": "web"}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"selector": WEB},
}
NO_BIND = {**KSC, "profiles": [{"schedulerName": "x", "plugins": {"bind": {"disabled": [
    {"name": "*"}]}}}]}
NO_BIND_MESSAGE = 'at least one bind plugin is needed for profile with scheduler name "x"'


def zone_default(max_skew: int) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}


def list_zone(max_skew: int) -> dict[str, Any]:
    args = {"defaultingType": "List", "defaultConstraints": [zone_default(max_skew)]}
    return {**KSC, "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": args}]}]}


def write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc)
    path.write_text(text, encoding="utf-8")
    return str(path)


def snapshot(tmp_path: Path) -> str:
    node = make_node().name("n1").label(ZONE, "a").obj()
    return write(tmp_path, "snap.yaml", {"apiVersion": "v1", "kind": "List",
                                          "items": [node, SERVICE]})


def web_pod() -> dict[str, Any]:
    return make_pod().name("web").labels(WEB).obj()


def run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    stdin: str = "",
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


COMMANDS = ["check", "mutate", "review", "simulate", "serve"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_the_flag(command: str) -> None:
    """The five commands that decide placement accept --scheduler-config FILE."""
    args = {"review": ["review", "validate"], "serve": ["serve"]}.get(command, [command])
    parsed = build_parser().parse_args([*args, "--scheduler-config", "s.yaml"])
    assert parsed.scheduler_config == "s.yaml"


# command -> argv after the command name (the pod file / stdin added per case)
def argv_for(command: str, tmp_path: Path, pod_file: str) -> tuple[list[str], str]:
    snap = snapshot(tmp_path)
    if command == "review":
        return ["review", "validate", "--snapshot", snap], json.dumps(review(web_pod()))
    if command == "serve":
        return ["serve", "--snapshot", snap, "--cert-dir", str(tmp_path / "no-certs")], ""
    if command == "simulate":
        return ["simulate", "--snapshot", snap, pod_file], ""
    if command == "mutate":
        return ["mutate", "--snapshot", snap, pod_file], ""
    return ["check", pod_file], ""


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(NO_BIND, NO_BIND_MESSAGE, id="missing bind plugin"),
        pytest.param(
            {**KSC, "profiles": [{"pluginConfig": [
                {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": -1}}]}]},
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: -1: "
            "not in valid range [0-100]",
            id="invalid args",
        ),
        pytest.param("profiles: []\n", "Object 'Kind' is missing", id="no kind"),
        pytest.param("kind: [\n", "is not valid YAML", id="not YAML"),
    ],
)
def test_an_unusable_scheduler_config_exits_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    doc: Any,
    message: str,
) -> None:
    """Refused before anything runs (serve does not start), with the scheduler's message
    naming the file."""
    sched = write(tmp_path, "sched.yaml", doc)
    argv, stdin = argv_for(command, tmp_path, write(tmp_path, "pod.yaml", web_pod()))
    code, out, err = run(capsys, monkeypatch, [*argv, "--scheduler-config", sched], stdin)
    assert code == 2
    assert out == ""
    assert err.startswith(f"topospread {command}: scheduler config {sched}")
    assert message in err


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_scheduler_config_exits_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
) -> None:
    argv, stdin = argv_for(command, tmp_path, write(tmp_path, "pod.yaml", web_pod()))
    absent = str(tmp_path / "absent.yaml")
    code, _, err = run(capsys, monkeypatch, [*argv, "--scheduler-config", absent], stdin)
    assert code == 2
    assert f"cannot read scheduler config {absent}" in err


@pytest.mark.parametrize("command", ["check", "mutate", "review", "simulate"])
def test_a_valid_scheduler_config_runs_the_command(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
) -> None:
    """A valid file changes nothing of the exit status: 0."""
    sched = write(tmp_path, "sched.yaml", list_zone(1))
    argv, stdin = argv_for(command, tmp_path, write(tmp_path, "pod.yaml", web_pod()))
    code, out, err = run(capsys, monkeypatch, [*argv, "--scheduler-config", sched], stdin)
    assert code == 0, err
    assert out


def injected_max_skew(command: str, out: str) -> list[int]:
    """maxSkew of the constraints the mutation gave the web pod."""
    if command == "mutate":
        pod = yaml.safe_load(out)
    else:
        response = json.loads(out)["response"]
        patch = json.loads(base64.b64decode(response["patch"]))
        pod = jsonpatch.apply_patch(web_pod(), patch)
    return [c["maxSkew"] for c in pod["spec"]["topologySpreadConstraints"]]


@pytest.mark.parametrize("command", ["mutate", "review"])
@pytest.mark.parametrize(
    ("key", "flag", "want"),
    [
        pytest.param(None, None, [3, 5], id="neither: System defaults"),
        pytest.param(1, None, [1], id="the config key"),
        pytest.param(None, 2, [2], id="the flag"),
        pytest.param(1, 2, [2], id="both: the flag wins"),
    ],
)
def test_the_profile_decides_the_injected_defaults(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    key: int | None,
    flag: int | None,
    want: list[int],
) -> None:
    """The default profile's PodTopologySpread args, from the key or the flag, are the
    defaults mutate and review inject."""
    argv = (
        ["mutate", "--snapshot", snapshot(tmp_path), write(tmp_path, "pod.yaml", web_pod())]
        if command == "mutate"
        else ["review", "mutate", "--snapshot", snapshot(tmp_path)]
    )
    stdin = json.dumps(review(web_pod())) if command == "review" else ""
    if key is not None:
        config = {"schedulerConfiguration": list_zone(key)}
        argv += ["--config", write(tmp_path, "config.yaml", config)]
    if flag is not None:
        argv += ["--scheduler-config", write(tmp_path, "sched.yaml", list_zone(flag))]
    code, out, err = run(capsys, monkeypatch, argv, stdin)
    assert code == 0, err
    assert injected_max_skew(command, out) == want


def test_serve_refuses_an_invalid_config_key_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The inline schedulerConfiguration is refused as the file is, naming the key."""
    config = write(tmp_path, "config.yaml", {"schedulerConfiguration": NO_BIND})
    argv, _ = argv_for("serve", tmp_path, "")
    code, _, err = run(capsys, monkeypatch, [*argv, "--config", config])
    assert code == 2
    assert err == f"topospread serve: schedulerConfiguration: {NO_BIND_MESSAGE}\n"
