"""`topospread check` on what users feed it: exports of live clusters, custom workloads,
empty renders, directories, stdin, unrendered templates; ids, suppression, strictness,
cluster state and colour."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.advice_messages import outage
from tests.builders import (
    DNS,
    SA,
    ZONE,
    make_node,
    make_pod,
    selector,
    workload,
)
from webhook.cli.main import build_parser, main
from webhook.validation.advice import WARNING_IDS

OUTAGE_ID = "outage-blocks-replacements"

DATA = paths.DATA
STORED = DATA / "stored" / "pods-v1.34.yaml"
ROLLOUT = DATA / "custom" / "rollout-maxskew-zero.yaml"
CUSTOM_CONFIG = DATA / "custom" / "config.yaml"
TEMPLATE = DATA / "render" / "unrendered-template.yaml"
CHART = DATA / "render" / "chart.yaml"
WEB = selector({"app": "web"})


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, obj: Any) -> str:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (
        obj if isinstance(obj, str) else yaml.safe_dump_all(obj if isinstance(obj, list) else [obj])
    )
    path.write_text(text, encoding="utf-8")
    return str(path)


def stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def entries(out: str) -> list[dict[str, Any]]:
    doc: list[dict[str, Any]] = json.loads(out)
    return doc


# ---------------------------------------------------------------------------------------
# 1. stored objects validated as stored; one --server-version


@pytest.mark.parametrize(
    ("argv", "valid", "validated_as"),
    [
        # kube-apiserver merged pod-template-hash into the selector at create: an update
        # merges nothing, so the exported pod is what the cluster holds, and valid.
        pytest.param([], True, "stored", id="export of a v1.34 pod: stored, valid"),
        pytest.param(["--as-stored"], True, "stored", id="--as-stored"),
        # As a new pod it would be merged a second time: refused.
        pytest.param(["--as-new"], False, "new", id="--as-new: merged twice, refused"),
    ],
)
def test_exported_pod_is_validated_as_stored(
    capsys: pytest.CaptureFixture[str], argv: list[str], valid: bool, validated_as: str
) -> None:
    """`kubectl get pods -o yaml | topospread check -` on a v1.34 cluster is clean."""
    code, out, _ = run(capsys, "-o", "json", *argv, str(STORED))
    [entry] = entries(out)
    assert (code, entry["valid"], entry["validatedAs"]) == (0 if valid else 1, valid, validated_as)
    assert (entry["document"], entry["item"], entry["line"]) == (0, 0, 8)


def test_as_stored_applies_to_plain_manifests(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A manifest pod whose matchLabelKeys repeat its selector: refused as new, not as stored."""
    pod = (
        make_pod()
        .name("web")
        .label("app", "web")
        .spread(1, ZONE, DNS, WEB, matchLabelKeys=["app"])
        .obj()
    )
    path = write(tmp_path, "pod.yaml", pod)
    assert run(capsys, path)[0] == 1
    assert run(capsys, "--as-stored", path)[0] == 0


@pytest.mark.parametrize(
    ("version", "code", "field"),
    [
        # v1.34+: the template is fine, each created pod is refused: a warning.
        ("1.34", 0, None),
        # v1.33: the template itself is refused, on the key.
        ("1.33", 1, "spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[0]"),
    ],
)
def test_server_version_picks_the_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, version: str, code: int, field: Any
) -> None:
    """--server-version replays that kube-apiserver's matchLabelKeys rules."""
    pod = make_pod().label("app", "web").spread(1, ZONE, DNS, WEB, matchLabelKeys=["app"]).obj()
    path = write(tmp_path, "deploy.yaml", workload("Deployment", pod, name="web"))
    got, out, _ = run(capsys, "-o", "json", "--server-version", version, path)
    [entry] = entries(out)
    assert got == code
    assert [e["field"] for e in entry["errors"]] == ([field] if field else [])
    ids = [w["id"] for w in entry["warnings"]]
    # The zone constraint's outage advice reads no matchLabelKeys, the revisions advice
    # only pod-template-hash: both given either way.
    both = [OUTAGE_ID, "revisions-counted-together"]
    assert ids == (both if field else ["match-label-key-in-selector", *both])


def test_duplicated_match_label_keys_get_the_would_be_rejected_advice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A key listed twice on a template: each created pod is refused, as for an overlap."""
    pod = (
        make_pod()
        .label("app", "web")
        .spread(1, ZONE, DNS, WEB, matchLabelKeys=["pod-template-hash", "pod-template-hash"])
        .obj()
    )
    path = write(tmp_path, "deploy.yaml", workload("Deployment", pod, name="web"))
    code, out, _ = run(capsys, "-o", "json", path)
    [entry] = entries(out)
    assert code == 0
    assert entry["warnings"] == [
        {
            "id": "match-label-key-duplicated",
            "field": "spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[1]",
            "message": "pod-template-hash is listed twice in matchLabelKeys; kube-apiserver "
            "v1.34+ merges it into labelSelector twice when it creates each pod and then "
            "rejects the pod (exists in both matchLabelKeys and labelSelector)",
        },
        {
            "id": OUTAGE_ID,
            "field": "spec.template.spec.topologySpreadConstraints[0].nodeTaintsPolicy",
            "message": outage("").removeprefix(".nodeTaintsPolicy: "),
        },
    ]


def test_unknown_server_version_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--server-version", "latest", str(STORED)])
    assert exc.value.code == 2


# ---------------------------------------------------------------------------------------
# 2. nothing silently green


def test_rollout_declared_in_the_config_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    """A Rollout with maxSkew 0: skipped without the config, refused on its own path with it;
    the controller's label and the declared topology key raise nothing."""
    code, out, _ = run(capsys, "-o", "json", str(ROLLOUT))
    [entry] = entries(out)
    assert (code, entry["checked"], entry["valid"]) == (0, False, None)

    code, out, _ = run(capsys, "-o", "json", "--config", str(CUSTOM_CONFIG), str(ROLLOUT))
    [entry] = entries(out)
    assert (code, entry["checked"], entry["valid"]) == (1, True, False)
    assert entry["errors"] == [
        {
            "field": "spec.template.spec.topologySpreadConstraints[0].maxSkew",
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: must be greater than zero",
        }
    ]
    assert entry["warnings"] == []
    code, out, _ = run(capsys, "--config", str(CUSTOM_CONFIG), str(ROLLOUT))
    assert out.splitlines()[0] == (
        f'{ROLLOUT}: Rollout.argoproj.io "web" is invalid: '
        "spec.template.spec.topologySpreadConstraints[0].maxSkew: "
        "Invalid value: 0: must be greater than zero"
    )


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ("customWorkloads: [{kind: Rollout, podTemplatePath: spec.template}]", "apiVersion"),
        ("customWorkloads: [{apiVersion: v1, kind: Deployment, podTemplatePath: a}]", "built in"),
        ("customWorkloads: [{apiVersion: x/v1, kind: X}]", "podTemplatePath"),
        ("topologyKeys: rack", "topologyKeys"),
    ],
)
def test_bad_cli_config_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str, fragment: str
) -> None:
    code, _, err = run(capsys, "--config", write(tmp_path, "c.yaml", config), str(STORED))
    assert code == 2
    assert fragment in err


def test_quiet_by_default_verbose_lists_everything(capsys: pytest.CaptureFixture[str]) -> None:
    """Problems only, then the summary; -v names every object, skipped ones too."""
    code, out, _ = run(capsys, str(CHART))
    assert code == 0
    # The web Deployment's zone constraint leaves nodeTaintsPolicy unset: its one problem.
    path = "spec.template.spec.topologySpreadConstraints[0]"
    assert out.splitlines() == [
        f'{CHART}: Deployment.apps "web": warning: {outage(path)} [{OUTAGE_ID}]',
        "1 file, 5 objects: 2 checked, 0 invalid, 1 warning, 3 skipped",
    ]
    code, out, _ = run(capsys, "-v", str(CHART))
    lines = out.splitlines()
    assert f'{CHART}: Deployment.apps "web" is valid (as a new object)' in lines
    assert (
        f'{CHART}: ConfigMap "web" skipped: kind ConfigMap has no pod template '
        "topospread knows" in lines
    )
    assert len(lines) == 7


def test_summary_counts_invalid_and_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in (DATA / "invalid").glob("*.yaml"))
    code, out, _ = run(capsys, *files, str(CHART))
    assert code == 1
    summary = out.splitlines()[-1]
    assert summary.startswith(f"{len(files) + 1} files, {len(files) + 5} objects: ")
    assert f"{len(files) + 2} checked, {len(files)} invalid" in summary


@pytest.mark.parametrize(
    ("text", "argv", "code", "fragment"),
    [
        pytest.param("", [], 0, "no objects in <stdin>", id="empty render"),
        pytest.param("", ["--fail-empty"], 2, "no objects in <stdin>", id="empty, --fail-empty"),
        pytest.param("---\n# nothing\n---\n", ["--fail-empty"], 2, "no objects", id="only ---"),
        pytest.param(
            "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
            ["--fail-empty"],
            2,
            "nothing to check in <stdin>: 1 object(s) of kinds without a pod template (Service)",
            id="nothing with a pod template",
        ),
    ],
)
def test_nothing_to_check_is_said_loudly(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    argv: list[str],
    code: int,
    fragment: str,
) -> None:
    """An empty render (a failed `helm template`) is never a silent pass."""
    stdin(monkeypatch, text)
    got, out, err = run(capsys, *argv)
    assert got == code
    assert f"topospread check: warning: {fragment}" in err
    assert " 0 checked, " in out


# ---------------------------------------------------------------------------------------
# 3. --strict and exit codes in --help


def test_strict_fails_on_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pod = make_pod().name("web").label("app", "web").spread(1, "rack", SA, WEB).obj()
    path = write(tmp_path, "pod.yaml", pod)
    assert run(capsys, path)[0] == 0
    assert run(capsys, "--strict", path)[0] == 1


def test_help_documents_exit_codes_and_examples() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices: dict[str, Any] = sub.choices  # type: ignore[assignment]
    text = choices["check"].format_help()
    assert "exit status:" in text
    assert "  2  usage error, unreadable input" in text
    for name, p in choices.items():
        help_text = p.format_help()
        assert "example" in help_text, name
        for action in p._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


# ---------------------------------------------------------------------------------------
# 4. ids, suppression, topology keys


def ghost_pod(**annotations: str) -> dict[str, Any]:
    builder = make_pod().name("web").label("app", "web").spread(1, ZONE, DNS, selector({"a": "b"}))
    for key, value in annotations.items():
        builder.annotation(key, value)
    return builder.obj()


@pytest.mark.parametrize(
    ("obj", "argv", "ids"),
    [
        (ghost_pod(), [], ["selector-misses-pod", OUTAGE_ID]),
        (ghost_pod(), ["--ignore", "selector-misses-pod"], [OUTAGE_ID]),
        (ghost_pod(), ["--ignore", f"null-label-selector,selector-misses-pod,{OUTAGE_ID}"], []),
        (ghost_pod(), ["--ignore", OUTAGE_ID], ["selector-misses-pod"]),
        (ghost_pod(**{"topospread.io/ignore": "selector-misses-pod"}), [], [OUTAGE_ID]),
        (
            ghost_pod(**{"topospread.io/ignore": "unknown-topology-key"}),
            [],
            ["selector-misses-pod", OUTAGE_ID],
        ),
        (
            ghost_pod(**{"topospread.io/ignore": f"selector-misses-pod, {OUTAGE_ID}"}),
            [],
            [],
        ),
    ],
)
def test_warnings_can_be_silenced_by_id(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, obj: Any, argv: list[str], ids: list[str]
) -> None:
    code, out, _ = run(capsys, "-o", "json", *argv, write(tmp_path, "p.yaml", obj))
    assert code == 0
    assert [w["id"] for w in entries(out)[0]["warnings"]] == ids


def test_annotation_on_the_pod_template_silences_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deploy = workload("Deployment", ghost_pod(**{"topospread.io/ignore": "selector-misses-pod"}))
    code, out, _ = run(capsys, "-o", "json", write(tmp_path, "d.yaml", deploy))
    assert [w["id"] for w in entries(out)[0]["warnings"]] == [OUTAGE_ID]


def test_unknown_ignore_id_is_refused_with_a_suggestion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "--ignore", "selector-miss-pod", str(STORED))
    assert code == 2
    assert "unknown warning id 'selector-miss-pod'; did you mean selector-misses-pod?" in err


def test_every_warning_id_is_documented() -> None:
    rules = (paths.ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for warning_id in WARNING_IDS:
        assert f"`{warning_id}`" in rules, warning_id


def snapshot_file(tmp_path: Path, *objs: dict[str, Any]) -> str:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}))
    return str(path)


def rack_pod(key: str, when: str = SA) -> dict[str, Any]:
    return make_pod().name("web").label("app", "web").spread(1, key, when, WEB).obj()


@pytest.mark.parametrize(
    ("key", "with_snapshot", "message"),
    [
        pytest.param(
            "example.com/rack",
            False,
            "example.com/rack is not a well-known topology label (kubernetes.io/hostname, "
            "topology.kubernetes.io/zone, topology.kubernetes.io/region); nodes without it "
            "are left out of the spread",
            id="offline: not well known",
        ),
        pytest.param("example.com/rack", True, None, id="a node carries it: silent"),
        pytest.param(
            ZONE,
            True,
            "no node of the cluster has the label topology.kubernetes.io/zone; every node is "
            "left out of the spread",
            id="well known but on no node",
        ),
        pytest.param(
            "kubernetes.io/hostame",
            False,
            "kubernetes.io/hostame is not a well-known topology label (kubernetes.io/hostname, "
            "topology.kubernetes.io/zone, topology.kubernetes.io/region); nodes without it are "
            "left out of the spread; did you mean kubernetes.io/hostname?",
            id="near miss",
        ),
        pytest.param(
            "example.com/rak",
            True,
            "no node of the cluster has the label example.com/rak; every node is left out of "
            "the spread; did you mean example.com/rack?",
            id="near miss of a node label",
        ),
    ],
)
def test_topology_key_warning_follows_the_nodes(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    key: str,
    with_snapshot: bool,
    message: str | None,
) -> None:
    node = make_node().name("n1").hostname().label("example.com/rack", "r1").obj()
    argv = ["--snapshot", snapshot_file(tmp_path, node)] if with_snapshot else []
    code, out, _ = run(capsys, "-o", "json", *argv, write(tmp_path, "p.yaml", rack_pod(key)))
    assert code == 0
    warnings = entries(out)[0]["warnings"]
    expected = [] if message is None else [message]
    assert [w["message"] for w in warnings] == expected


def test_topology_keys_from_the_config_are_known(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = write(tmp_path, "c.yaml", "topologyKeys: [example.com/rack]\n")
    pod = write(tmp_path, "p.yaml", rack_pod("example.com/rack"))
    code, out, _ = run(capsys, "-o", "json", "--config", config, pod)
    assert entries(out)[0]["warnings"] == []


# ---------------------------------------------------------------------------------------
# 5. foresight with --snapshot


def test_snapshot_runs_validate_foresight(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """zone-a holds 2 web pods, zone-b's node is tainted: the pod's maxSkew 1 rules out
    the only node the other filters leave, as /validate warns."""
    objs = [
        make_node().name("a1").zone("a").hostname().obj(),
        make_node().name("b1").zone("b").hostname().taint("dedicated", "db").obj(),
        *(make_pod().name(f"w{i}").label("app", "web").node("a1").obj() for i in range(2)),
    ]
    snap = snapshot_file(tmp_path, *objs)
    pod = write(
        tmp_path,
        "p.yaml",
        make_pod().name("web").label("app", "web").spread(1, ZONE, DNS, WEB).obj(),
    )
    code, out, _ = run(capsys, "-o", "json", "--snapshot", snap, pod)
    assert code == 0
    advice, warning = entries(out)[0]["warnings"]
    assert advice["id"] == OUTAGE_ID
    assert warning["id"] == "unschedulable"
    assert warning["field"] == "spec.topologySpreadConstraints[0]"
    assert warning["message"].startswith("no node fits: maxSkew 1 over topology.kubernetes.io/zone")

    config = write(tmp_path, "c.yaml", "policy: {denyUnschedulable: true}\n")
    code, out, _ = run(capsys, "--config", config, "--snapshot", snap, pod)
    assert code == 1
    assert out.startswith(f'{pod}: pods "web" is forbidden: unschedulable')


# ---------------------------------------------------------------------------------------
# 6. inputs


def test_directory_reads_manifests_and_recursive_descends(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pod = make_pod().name("web").label("app", "web").spread(1, ZONE, DNS, WEB).obj()
    bad = make_pod().name("bad").label("app", "web").spread(0, ZONE, DNS, WEB).obj()
    write(tmp_path, "top.yaml", pod)
    write(tmp_path, "notes.txt", "not a manifest")
    write(tmp_path, "sub/bad.json", json.dumps(bad))
    code, out, _ = run(capsys, str(tmp_path))
    assert code == 0
    assert out.splitlines()[-1].startswith("1 file, 1 object: ")
    code, out, _ = run(capsys, "-R", str(tmp_path))
    assert code == 1
    assert out.splitlines()[0].startswith(f'{tmp_path / "sub" / "bad.json"}: Pod "bad" is invalid')


def test_stdin_and_repeatable_filename(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = make_pod().name("bad").label("app", "web").spread(0, ZONE, DNS, WEB).obj()
    stdin(monkeypatch, yaml.safe_dump(bad))
    code, out, _ = run(capsys)
    assert code == 1
    assert out.startswith('<stdin>: Pod "bad" is invalid: ')
    a = write(tmp_path, "a.yaml", bad)
    b = write(tmp_path, "b.yaml", make_pod().name("ok").obj())
    code, out, _ = run(capsys, "-o", "json", "-f", a, "--filename", b)
    assert [(e["file"], e["valid"]) for e in entries(out)] == [(a, False), (b, True)]


def test_unrendered_helm_template_says_render_it_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(TEMPLATE))
    assert code == 2
    assert err.splitlines()[0] == (
        f"topospread check: {TEMPLATE}: line 4: an unrendered Helm template ({{{{ ... }}}}); "
        "render it first (helm template CHART | topospread check)"
    )
    assert "unreadable" in out


def test_values_are_shown_as_written(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A chart's placeholder `"<integer>"`: not `\\u003cinteger\\u003e`."""
    pod = make_pod().name("web").label("app", "web").spread("<integer>", ZONE, DNS, WEB).obj()
    path = write(tmp_path, "p.yaml", pod)
    code, out, _ = run(capsys, path)
    assert code == 1
    assert 'Invalid value: "<integer>": must be an integer' in out
    _, out, _ = run(capsys, "-o", "json", path)
    assert (
        entries(out)[0]["errors"][0]["message"] == 'Invalid value: "<integer>": must be an integer'
    )


def test_merged_path_names_its_match_label_keys_entry(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "invalid" / "matchlabelkeys-merged-twice.yaml"
    code, out, _ = run(capsys, str(path))
    assert out.splitlines()[1] == (
        f'{path}: Pod "web": note: spec.topologySpreadConstraints[0][1] is '
        "spec.topologySpreadConstraints[0].matchLabelKeys[1]"
    )
    _, out, _ = run(capsys, "-o", "json", str(path))
    error = entries(out)[0]["errors"][0]
    assert error["field"] == "spec.topologySpreadConstraints[0][1]"
    assert error["matchLabelKeysField"] == "spec.topologySpreadConstraints[0].matchLabelKeys[1]"


# ---------------------------------------------------------------------------------------
# 9. colour


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("tty", "no_color", "coloured"),
    [(True, None, True), (True, "1", False), (False, None, False)],
)
def test_colour_only_on_a_terminal_and_never_with_no_color(
    monkeypatch: pytest.MonkeyPatch, tty: bool, no_color: str | None, coloured: bool
) -> None:
    from webhook.cli.check import cli_check

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TERM", raising=False)
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    out = Terminal() if tty else io.StringIO()
    args = build_parser().parse_args(["check", str(DATA / "invalid" / "maxskew-zero.yaml")])
    assert cli_check(args, out=out, err=io.StringIO()) == 1
    assert ("\033[" in out.getvalue()) is coloured


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from webhook.cli.version import version

    assert main(["version"]) == 0
    assert capsys.readouterr().out == f"topospread {version()}\n"
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"topospread {version()}\n"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, ["revisions-counted-together"]),
        ("policy: {separateRevisions: false}\n", ["revisions-counted-together"]),
        ("policy: {separateRevisions: true}\n", []),
    ],
    ids=["no config", "option off", "option on: the webhook separates revisions itself"],
)
def test_revisions_advice_follows_the_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str | None, expected: list[str]
) -> None:
    """A rolling Deployment counting revisions together is warned unless the config's
    policy.separateRevisions has the webhook add pod-template-hash to its pods."""
    pod = make_pod().label("app", "web").spread(1, ZONE, DNS, WEB, nodeTaintsPolicy="Honor")
    path = write(tmp_path, "deploy.yaml", workload("Deployment", pod.obj(), name="web"))
    argv = ["-o", "json", path]
    if config is not None:
        conf = tmp_path / "config.yaml"
        conf.write_text(config, encoding="utf-8")
        argv = ["--config", str(conf), *argv]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    [entry] = entries(out)
    assert [w["id"] for w in entry["warnings"]] == expected
