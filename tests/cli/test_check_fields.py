"""`check --field-validation`: unknown and duplicate fields refused (Strict, kubectl's
default), warned about (Warn) or left alone (Ignore), from the flag or the config's
check.fieldValidation; the text, JSON, JUnit and SARIF reports carry them; and none
is found in what the project itself ships (0 false positives).

The expected texts are kube-apiserver v1.37.2's own answers to the same object
(`kubectl create -f web-typos.yaml`, docs/cli.md), written down by hand."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET  # nosec B405 - parses the XML this test just produced
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests import paths
from webhook.cli.inputs import parse_documents
from webhook.cli.main import main
from webhook.validation.fields import field_schema, strict_problems

C = "spec.template.spec.topologySpreadConstraints"
TYPOS = paths.ROOT / "docs" / "examples" / "fields" / "web-typos.yaml"
SARIF_SCHEMA = json.loads(
    (paths.DATA / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
DECODE_ERROR = (
    'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
    f'unknown field "spec.template.spec.topologySpreadConstraint", '
    f'unknown field "{C}[0].labelSelectors", unknown field "{C}[1].matchLabels", '
    f'duplicate field "{C}[1].maxSkew"'
)
NOTES = [
    f'{TYPOS}:19: Deployment.apps "web": note: unknown field '
    '"spec.template.spec.topologySpreadConstraint" (did you mean "topologySpreadConstraints"?)',
    f'{TYPOS}:24: Deployment.apps "web": note: unknown field "{C}[0].labelSelectors" '
    '(did you mean "labelSelector"?)',
    f'{TYPOS}:29: Deployment.apps "web": note: unknown field "{C}[1].matchLabels" '
    '(did you mean "labelSelector.matchLabels"?)',
    f'{TYPOS}:31: Deployment.apps "web": note: duplicate field "{C}[1].maxSkew"',
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def field_lines(out: str) -> list[str]:
    """The lines about fields (the example's null-selector warnings left out)."""
    return [line for line in out.splitlines() if " field " in line]


def test_strict_refuses_with_kube_apiservers_words_then_what_was_meant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The default: kube-apiserver's 400 as kubectl prints it, then a note per field
    with its line and the field meant; the object is invalid, exit 1."""
    code, out, _ = run(capsys, str(TYPOS))
    assert code == 1
    assert field_lines(out) == [f"{TYPOS}: {DECODE_ERROR}", *NOTES]
    assert out.splitlines()[-1].startswith("1 file, 1 object: 1 checked, 1 invalid")


@pytest.mark.parametrize("spelled", ["Warn", "warn", "WARN"])
def test_warn_makes_each_field_a_warning(
    capsys: pytest.CaptureFixture[str], spelled: str
) -> None:
    """Warn: kube-apiserver's warning text per field, the object valid, exit 0 (1 with
    --strict, as for any warning)."""
    code, out, _ = run(capsys, "--field-validation", spelled, str(TYPOS))
    assert code == 0
    assert field_lines(out) == [
        note.replace(": note: ", ": warning: ") + f" [{kind}-field]"
        for note, kind in zip(NOTES, ["unknown", "unknown", "unknown", "duplicate"], strict=True)
    ]
    assert "0 invalid" in out
    assert run(capsys, "--field-validation", spelled, "--strict", str(TYPOS))[0] == 1


def test_ignore_says_nothing_about_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--field-validation", "Ignore", str(TYPOS))
    assert (code, field_lines(out)) == (0, [])


@pytest.mark.parametrize(
    "config,flag,want_code",
    [
        ("check: {fieldValidation: Warn}\n", [], 0),
        ("check: {fieldValidation: Ignore}\n", [], 0),
        ("check: {fieldValidation: Warn}\n", ["--field-validation", "Strict"], 1),
        ("{}\n", [], 1),
    ],
)
def test_the_config_key_is_the_default_and_the_flag_wins(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str, flag: list[str], want_code: int
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config)
    assert run(capsys, "--config", str(path), *flag, str(TYPOS))[0] == want_code


@pytest.mark.parametrize(
    "config,message",
    [
        ("check: {fieldValidation: Loose}\n", "check.fieldValidation: must be Strict, Warn or "
         "Ignore, got 'Loose'"),
        ("check: {fieldValidaton: Warn}\n", "check.fieldValidaton: unknown key"),
        ("check: Warn\n", "check: must be a mapping"),
    ],
)
def test_a_bad_config_value_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: str, message: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config)
    code, _, err = run(capsys, "--config", str(path), str(TYPOS))
    assert code == 2
    assert message in err


def test_a_bad_flag_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--field-validation", "Loose", str(TYPOS)])
    assert exc.value.code == 2
    assert "'Loose': choose from Strict, Warn, Ignore" in capsys.readouterr().err


def test_json_carries_errors_the_decode_error_and_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Strict: entries in `errors` (reason BadRequest) and `decodeError`; Warn: entries
    in `warnings` with the ids unknown-field and duplicate-field."""
    _, out, _ = run(capsys, "-o", "json", str(TYPOS))
    [entry] = json.loads(out)
    assert entry["valid"] is False
    assert entry["decodeError"] == DECODE_ERROR
    assert entry["errors"][2] == {
        "field": f"{C}[1].matchLabels",
        "reason": "BadRequest",
        "message": f'unknown field "{C}[1].matchLabels"',
        "didYouMean": "labelSelector.matchLabels",
        "line": 29,
    }
    _, out, _ = run(capsys, "-o", "json", "--field-validation", "Warn", str(TYPOS))
    [entry] = json.loads(out)
    assert "decodeError" not in entry and entry["errors"] == []
    assert [(w["id"], w["field"]) for w in entry["warnings"] if w["id"].endswith("-field")] == [
        ("unknown-field", "spec.template.spec.topologySpreadConstraint"),
        ("unknown-field", f"{C}[0].labelSelectors"),
        ("unknown-field", f"{C}[1].matchLabels"),
        ("duplicate-field", f"{C}[1].maxSkew"),
    ]


@pytest.mark.parametrize("mode,level", [("Strict", "error"), ("Warn", "warning")])
def test_sarif_locates_each_field_at_its_line(
    capsys: pytest.CaptureFixture[str], mode: str, level: str
) -> None:
    _, out, _ = run(capsys, "-o", "sarif", "--field-validation", mode, str(TYPOS))
    log = json.loads(out)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    [run_] = log["runs"]
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    got = [
        (r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in run_["results"]
        if r["ruleId"].endswith("-field")
    ]
    assert got == [
        ("unknown-field", level, 19),
        ("unknown-field", level, 24),
        ("unknown-field", level, 29),
        ("duplicate-field", level, 31),
    ]
    for r in run_["results"]:
        assert rules[r["ruleIndex"]] == r["ruleId"]
    assert run_["results"][2]["message"]["text"] == (
        f'Deployment.apps "web": unknown field "{C}[1].matchLabels" '
        '(did you mean "labelSelector.matchLabels"?)'
    )


@pytest.mark.parametrize("mode,failures", [("Strict", "1"), ("Warn", "0")])
def test_junit_fails_the_case_under_strict_and_prints_warnings_under_warn(
    capsys: pytest.CaptureFixture[str], mode: str, failures: str
) -> None:
    _, out, _ = run(capsys, "-o", "junit", "--field-validation", mode, str(TYPOS))
    root = ET.fromstring(out)  # noqa: S314 - our own output
    assert root.get("failures") == failures
    case = root.find("testsuite/testcase")
    assert case is not None
    failure = case.find("failure")
    system_out = case.find("system-out")
    if mode == "Strict":
        assert failure is not None and failure.get("message") == DECODE_ERROR
        assert failure.text is not None
        assert f'unknown field "{C}[1].matchLabels" (did you mean' in failure.text
    else:
        assert failure is None and system_out is not None and system_out.text is not None
        assert f'duplicate field "{C}[1].maxSkew" [duplicate-field]' in system_out.text


def test_a_deployment_whose_template_key_is_misspelt_is_invalid_not_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`templat:` leaves no pod template to check, but strict decoding refuses it."""
    path = tmp_path / "d.yaml"
    path.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
        "spec:\n  selector: {matchLabels: {a: b}}\n  templat: {}\n"
    )
    code, out, _ = run(capsys, str(path))
    assert code == 1
    assert field_lines(out) == [
        f'{path}: Deployment in version "v1" cannot be handled as a Deployment: strict '
        'decoding error: unknown field "spec.templat"',
        f'{path}:6: Deployment.apps "d": note: unknown field "spec.templat" '
        '(did you mean "template"?)',
    ]


def test_the_webhook_does_not_decode_fields() -> None:
    """/validate answers on what the API server already decoded: an unknown key in the
    object it is handed is no concern of the review (it cannot be there)."""
    from webhook.admission import handlers

    assert "strict_problems" not in Path(handlers.__file__).read_text(encoding="utf-8")


# ---- 0 false positives on what the project ships ------------------------------------------

_FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.S | re.M)


def _doc_blocks() -> list[tuple[str, str]]:
    """Every manifest in the docs' fenced blocks: each block cut at its `$ ` command
    lines, each piece that parses as YAML."""
    out = []
    for md in [paths.ROOT / "README.md", *sorted((paths.ROOT / "docs").glob("*.md"))]:
        for n, block in enumerate(_FENCE.findall(md.read_text(encoding="utf-8"))):
            for piece in re.split(r"^\$ .*$", block, flags=re.M):
                out.append((f"{md.name} block {n}", piece))
    return out


def _shipped() -> list[tuple[str, str]]:
    texts: list[tuple[str, str]] = []
    globs = ("deploy/**/*.yaml", "docs/examples/**/*.yaml", "docs/examples/**/*.json",
             "webhook/data/*.yaml", "tests/data/**/*.yaml")
    for pattern in globs:
        for path in sorted(paths.ROOT.glob(pattern)):
            if "/helm/topospread/templates/" not in str(path) and path != TYPOS:
                texts.append((str(path.relative_to(paths.ROOT)), path.read_text(encoding="utf-8")))
    return texts + _doc_blocks()


def _objects(name: str, text: str) -> list[tuple[dict[str, Any], Any]]:
    try:
        docs = parse_documents(text, name, keep_keys=True)
    except Exception:  # noqa: BLE001 - shell output, templates: not manifests
        return []
    return [(d.obj, d.written) for d in docs]


def test_nothing_the_project_ships_has_an_unknown_or_duplicate_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """deploy/ (the kustomize tree as rendered), `topospread manifests`, the Helm
    chart's renderings, the docs' examples and blocks, the demo snapshot and the test
    data: every Pod and workload decodes strictly under 1.35, 1.36 and 1.37."""
    from tests.install.test_helm import _tls_values, helm_template
    from webhook.install import certs

    certs.generate("topospread", "topospread", tmp_path)
    texts = _shipped()
    for argv in (["--cert-dir", str(tmp_path)], ["--cert-dir", str(tmp_path), "--audit"]):
        assert main(["manifests", "--namespace", "topospread", *argv]) == 0
        texts.append((f"manifests {argv[-1]}", capsys.readouterr().out))
    for values in (
        _tls_values(tmp_path),
        {**_tls_values(tmp_path), "audit": {"enabled": True, "deletionCosts": True}},
    ):
        texts.append(("helm template", yaml.safe_dump_all(helm_template(values))))
    objects = [o for name, text in texts for o in _objects(name, text)]
    kinds = {o["kind"] for o, _ in objects if isinstance(o.get("kind"), str)}
    assert {"Deployment", "Pod", "StatefulSet", "ReplicaSet"} <= kinds
    for release in ("1.35", "1.36", "1.37"):
        schema = field_schema(release)
        assert schema is not None
        found = {
            (o.get("kind"), str(o.get("metadata", {}).get("name")), p.text())
            for o, written in objects
            for p in strict_problems(o, schema, written or (lambda d: None))
        }
        assert found == set(), release


def test_lines_inside_lists_and_later_documents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A field's line is counted from the top of the file, in a later document and in
    an item of a List alike."""
    path = tmp_path / "two.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: []\n"  # 1-5
        "---\n"  # 6
        "apiVersion: v1\nkind: List\nitems:\n"  # 7-9
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n  spec: {containers: []}\n"  # 10-13
        "- apiVersion: v1\n  kind: Pod\n  metadata: {name: c}\n  spec:\n"  # 14-17
        "    containers: []\n    nodeSelecter: {}\n"  # 18-19
    )
    code, out, _ = run(capsys, str(path))
    assert code == 1
    assert field_lines(out)[1] == (
        f'{path}:19: Pod "c": note: unknown field "spec.nodeSelecter" '
        '(did you mean "nodeSelector"?)'
    )
