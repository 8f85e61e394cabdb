"""`check -o junit` and `check -o sarif`, read back by real parsers: the XML stdlib for
JUnit, the SARIF 2.1.0 JSON schema (tests/data/sarif) for SARIF."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET  # nosec B405 - parses the XML this test just produced
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import paths
from webhook.cli.main import main

DATA = paths.DATA
SCHEMA = json.loads((DATA / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
INVALID = DATA / "invalid" / "maxskew-zero.yaml"
CHART = DATA / "render" / "chart.yaml"
TEMPLATE = DATA / "render" / "unrendered-template.yaml"


def warned(tmp_path: Path) -> Path:
    path = tmp_path / "warned.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ghost, labels: {app: web}}\n"
        "spec:\n  containers: [{name: c, image: x}]\n  topologySpreadConstraints:\n"
        "  - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway,"
        " labelSelector: {matchLabels: {app: api}}}\n",
        encoding="utf-8",
    )
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capsys.readouterr().out


# --strict: the ghost-selector pod and the chart's Deployment (its zone constraint's
# outage advice) fail too.
@pytest.mark.parametrize(("strict", "failures"), [(False, 1), (True, 3)])
def test_junit_parses_and_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, strict: bool, failures: int
) -> None:
    """One suite per file, one case per object: the invalid pod fails, the chart's three
    kinds without a pod template are skipped, the unrendered template is an error, the
    warned objects fail only with --strict."""
    argv = ["-o", "junit", str(INVALID), str(CHART), str(TEMPLATE), str(warned(tmp_path))]
    code, out = run(capsys, *argv, *(["--strict"] if strict else []))
    assert code == 2  # the unreadable template outranks the rest
    root = ET.fromstring(out)  # noqa: S314 - our own output
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "8",
        "failures": str(failures),
        "errors": "1",
        "skipped": "3",
    }
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == [str(INVALID), str(CHART), str(TEMPLATE), str(tmp_path / "warned.yaml")]
    failure = suites[str(INVALID)].find("testcase/failure")
    assert failure is not None
    assert failure.get("message") == (
        'Pod "web" is invalid: spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero"
    )
    case = suites[str(INVALID)].find("testcase")
    assert case is not None and case.get("line") == "2"
    error = suites[str(TEMPLATE)].find("testcase/error")
    assert error is not None and "render it first" in (error.get("message") or "")
    ghost = suites[str(tmp_path / "warned.yaml")].find("testcase")
    assert ghost is not None
    out_text = ghost.findtext("system-out") or ""
    assert out_text.endswith("[selector-misses-pod]")
    assert (ghost.find("failure") is not None) is strict


def test_sarif_is_valid_against_the_2_1_0_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Errors at level error, warnings at level warning with their id, all located."""
    code, out = run(capsys, "-o", "sarif", str(INVALID), str(TEMPLATE), str(warned(tmp_path)))
    assert code == 2
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    [run_] = log["runs"]
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    results: list[dict[str, Any]] = run_["results"]
    summary = [
        (r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
        for r in results
    ]
    assert summary == [
        ("unreadable-input", "error", str(TEMPLATE.as_uri())),
        ("invalid", "error", str(INVALID.as_uri())),
        ("selector-misses-pod", "warning", (tmp_path / "warned.yaml").as_uri()),
    ]
    for r in results:
        assert rules[r["ruleIndex"]] == r["ruleId"]
    assert results[1]["message"]["text"] == (
        'Pod "web": spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero"
    )
    assert results[1]["locations"][0]["physicalLocation"]["region"] == {"startLine": 2}


def test_sarif_relative_paths_stay_relative(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code scanning resolves a relative uri against the repository root."""
    monkeypatch.chdir(paths.ROOT)
    code, out = run(capsys, "-o", "sarif", "tests/data/invalid/maxskew-zero.yaml")
    assert code == 1
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "tests/data/invalid/maxskew-zero.yaml"
