"""`check`, `review` and `mutate` through the real command line dispatcher.

The manifests under tests/data/valid and tests/data/invalid carry their expected
error on a first `# expect:` line, written from upstream's messages.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import paths
from tests.builders import DNS, ZONE, make_pod, review, selector
from webhook.cli.main import main

DATA = paths.DATA
VALID = sorted((DATA / "valid").glob("*.yaml"))
INVALID = sorted((DATA / "invalid").glob("*.yaml"))


def expected_error(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: ")
    return first.removeprefix("# expect: ")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_data_sets_are_there() -> None:
    """The checks below run over real files, not over nothing."""
    assert len(VALID) >= 5
    assert len(INVALID) >= 15


# ---------------------------------------------------------------------------------------
# check: exit codes


@pytest.mark.parametrize("path", VALID, ids=[p.name for p in VALID])
def test_check_valid_manifest_exits_0(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    """Every object valid: exit 0; with -v each is named as valid, then the summary line."""
    code, out, _ = run(capsys, "check", "-v", str(path))
    assert code == 0, out
    *lines, summary = out.splitlines()
    assert lines
    assert all(" is valid" in line or ": warning: " in line for line in lines)
    assert summary.startswith("1 file, ")
    assert ", 0 invalid, " in summary


@pytest.mark.parametrize("path", INVALID, ids=[p.name for p in INVALID])
def test_check_invalid_manifest_exits_1_with_upstream_message(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    """An invalid object: exit 1 and kube-apiserver's own message after the file name."""
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1
    line = out.splitlines()[0]
    assert line.startswith(f"{path}: ")
    assert line.endswith(" is invalid: " + expected_error(path))


def test_check_text_line_is_the_denial_message(capsys: pytest.CaptureFixture[str]) -> None:
    """`file: Pod "web" is invalid: ...`, exactly the message a denial carries."""
    path = DATA / "invalid" / "maxskew-zero.yaml"
    _, out, _ = run(capsys, "check", str(path))
    assert out.splitlines()[0] == (
        f'{path}: Pod "web" is invalid: spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero"
    )


def test_check_mixed_files_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """Valid and invalid together: 1."""
    code, _, _ = run(capsys, "check", str(VALID[0]), str(INVALID[0]))
    assert code == 1


@pytest.mark.parametrize(
    ("case", "text"),
    [
        ("not YAML", "kind: Pod\n  metadata: [\n"),
        ("a scalar document", "just a string\n"),
        ("an object without kind", "apiVersion: v1\nmetadata: {name: x}\n"),
        ("List items not a list", "apiVersion: v1\nkind: List\nitems: {a: 1}\n"),
    ],
)
def test_check_unusable_file_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str, text: str
) -> None:
    """A file that cannot be read as Kubernetes objects: exit 2 and a message on stderr."""
    path = write(tmp_path, "bad.yaml", text)
    code, _, err = run(capsys, "check", path)
    assert code == 2, case
    assert path in err


def test_check_missing_file_exits_2_even_beside_invalid(capsys: pytest.CaptureFixture[str]) -> None:
    """A parse error outranks an invalid object; the other files are still checked."""
    code, out, err = run(capsys, "check", str(INVALID[0]), "/nonexistent/pods.yaml")
    assert code == 2
    assert "no such file" in err
    assert " is invalid: " in out


def test_check_bad_config_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A config that cannot be used: exit 2 naming the key."""
    config = write(tmp_path, "config.yaml", "matchLabelKeysMerge: sometimes\n")
    code, _, err = run(capsys, "check", "--config", config, str(VALID[0]))
    assert code == 2
    assert "matchLabelKeysMerge" in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_check_without_files_on_a_terminal_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No FILE and nothing piped (stdin is a terminal): exit 2 saying how to give input."""
    monkeypatch.setattr("sys.stdin", _Terminal())
    code, _, err = run(capsys, "check")
    assert code == 2
    assert "no input: give FILE" in err


# ---------------------------------------------------------------------------------------
# check -o json


def test_check_json_lists_every_object(capsys: pytest.CaptureFixture[str]) -> None:
    """One entry per object: file, document, line, kind, name, namespace, checked, valid,
    how it was validated, errors and warnings."""
    invalid = DATA / "invalid" / "maxskew-zero.yaml"
    listing = DATA / "valid" / "list-deployment-and-job.yaml"
    code, out, _ = run(capsys, "check", "-o", "json", str(invalid), str(listing))
    assert code == 1
    doc = json.loads(out)
    assert doc[0] == {
        "file": str(invalid),
        "document": 0,
        "line": 2,
        "kind": "Pod",
        "name": "web",
        "namespace": "default",
        "checked": True,
        "valid": False,
        "validatedAs": "new",
        "errors": [
            {
                "field": "spec.topologySpreadConstraints[0].maxSkew",
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0: must be greater than zero",
            }
        ],
        "warnings": [],
    }
    listed = yaml.safe_load(listing.read_text())["items"]
    assert [(d["file"], d["kind"], d["valid"]) for d in doc[1:]] == [
        (str(listing), item["kind"], True) for item in listed
    ]


def test_check_json_carries_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Advice lands in warnings, each with its id, field and message."""
    pod = make_pod().name("web").spread(1, ZONE, DNS, None).obj()
    code, out, _ = run(capsys, "check", "-o", "json", write(tmp_path, "p.json", json.dumps(pod)))
    assert code == 0
    warnings = json.loads(out)[0]["warnings"]
    assert warnings[0] == {
        "id": "null-label-selector",
        "field": "spec.topologySpreadConstraints[0].labelSelector",
        "message": "a null labelSelector results in matching no pod",
    }


def test_check_json_lists_unhandled_kinds_as_skipped_never_valid(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A ConfigMap: listed as not checked, with why, and `valid` null, never true."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\n"
    code, out, _ = run(capsys, "check", "-o", "json", write(tmp_path, "cm.yaml", text))
    assert code == 0
    entry = json.loads(out)[0]
    assert (entry["kind"], entry["namespace"]) == ("ConfigMap", "shop")
    assert (entry["checked"], entry["valid"]) == (False, None)
    assert entry["skipped"] == "kind ConfigMap has no pod template topospread knows"


# ---------------------------------------------------------------------------------------
# review


def stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_review_validate_prints_the_http_answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same AdmissionReview the server answers, on stdout, exit 0."""
    pod = make_pod().name("web").spread(0, ZONE, DNS, selector({"app": "web"})).obj()
    stdin(monkeypatch, json.dumps(review(pod, uid="u-1")).encode())
    code, out, _ = run(capsys, "review", "validate")
    assert code == 0
    doc = json.loads(out)
    assert doc["response"]["uid"] == "u-1"
    assert doc["response"]["status"]["message"] == (
        'Pod "web" is invalid: spec.topologySpreadConstraints[0].maxSkew: '
        "Invalid value: 0: must be greater than zero"
    )


def test_review_mutate_prints_the_patch(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`review mutate` returns a JSONPatch answer."""
    pod = (
        make_pod()
        .labels({"app": "web", "pod-template-hash": "h1"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
        .obj()
    )
    stdin(monkeypatch, json.dumps(review(pod)).encode())
    code, out, _ = run(capsys, "review", "mutate", "--server-version", "1.33")
    assert code == 0
    assert json.loads(out)["response"]["patchType"] == "JSONPatch"


def test_review_follows_the_server_version(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """By default the newest API server, which merges matchLabelKeys itself: no patch."""
    pod = (
        make_pod()
        .labels({"app": "web", "pod-template-hash": "h1"})
        .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
        .obj()
    )
    stdin(monkeypatch, json.dumps(review(pod)).encode())
    code, out, _ = run(capsys, "review", "mutate")
    assert code == 0
    assert "patch" not in json.loads(out)["response"]


def test_review_malformed_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A malformed review: the 400 Status on stdout, the reason on stderr, exit 2."""
    stdin(monkeypatch, b"{not json")
    code, out, err = run(capsys, "review", "validate")
    assert code == 2
    assert json.loads(out)["code"] == 400
    assert "not JSON" in err


# ---------------------------------------------------------------------------------------
# mutate


def web_pods_yaml() -> str:
    pods: list[Any] = []
    for name in ("web-1", "web-2"):
        pods.append(
            make_pod()
            .name(name)
            .labels({"app": "web", "pod-template-hash": "h1"})
            .spread(1, ZONE, DNS, selector({"app": "web"}), matchLabelKeys=["pod-template-hash"])
            .obj()
        )
    return yaml.safe_dump_all(pods)


MERGED = [{"key": "pod-template-hash", "operator": "In", "values": ["h1"]}]


@pytest.mark.parametrize(
    ("argv", "expressions", "keys", "annotated"),
    [
        # v1.34+ merges by itself right after the webhook: merging here too would be refused.
        pytest.param([], None, ["pod-template-hash"], False, id="newest: the API server merges"),
        pytest.param(["--server-version", "1.34"], None, ["pod-template-hash"], False, id="v1.34"),
        # Before v1.34: merged, and the keys moved out (that server refuses a key in both).
        pytest.param(["--server-version", "1.33"], MERGED, None, True, id="v1.33: merged, moved"),
    ],
)
def test_mutate_does_what_the_webhook_does_for_the_server_version(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    expressions: Any,
    keys: Any,
    annotated: bool,
) -> None:
    """Multi-document in, multi-document out, each pod as /mutate leaves it for that server."""
    path = write(tmp_path, "pods.yaml", web_pods_yaml())
    code, out, err = run(capsys, "mutate", *argv, path)
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [d["metadata"]["name"] for d in docs] == ["web-1", "web-2"]
    for doc in docs:
        constraint = doc["spec"]["topologySpreadConstraints"][0]
        assert constraint["labelSelector"].get("matchExpressions") == expressions
        assert constraint.get("matchLabelKeys") == keys
        annotations = doc["metadata"].get("annotations", {})
        assert ("topospread.io/merged-match-label-keys" in annotations) is annotated


@pytest.mark.parametrize("version", ["1.33", "1.34"])
def test_mutate_output_checks_clean_for_the_same_server(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    version: str,
) -> None:
    """`mutate x.yaml | check -` round-trips for one --server-version."""
    path = write(tmp_path, "pods.yaml", web_pods_yaml())
    code, out, _ = run(capsys, "mutate", "--server-version", version, path)
    assert code == 0
    stdin(monkeypatch, out.encode())
    code, out, err = run(capsys, "check", "--server-version", version, "-")
    assert code == 0, out + err
    # Valid as mutated; each pod keeps its one piece of advice (nodeTaintsPolicy unset).
    assert out.splitlines()[-1] == "1 file, 2 objects: 2 checked, 0 invalid, 2 warnings, 0 skipped"
    assert [line.rsplit(" ", 1)[-1] for line in out.splitlines()[:-1]] == [
        "[outage-blocks-replacements]"
    ] * 2


def test_mutate_follows_the_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """matchLabelKeysMerge: apiserver leaves the objects as they are."""
    config = write(tmp_path, "config.yaml", "matchLabelKeysMerge: apiserver\n")
    text = web_pods_yaml()
    code, out, _ = run(capsys, "mutate", "--config", config, write(tmp_path, "p.yaml", text))
    assert code == 0
    assert list(yaml.safe_load_all(out)) == list(yaml.safe_load_all(text))


def test_mutate_unreadable_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """No output and exit 2 when a file cannot be read."""
    code, out, err = run(capsys, "mutate", "/nonexistent/pods.yaml")
    assert (code, out) == (2, "")
    assert "no such file" in err


def test_mutate_streams_documents_with_the_c_dumper(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each object is written as soon as it is mutated, by libyaml's emitter when present."""
    import webhook.cli.mutate as mutate_module
    from webhook.cli.main import build_parser

    if yaml.__with_libyaml__:
        assert mutate_module._DUMPER is yaml.CSafeDumper
    events: list[str] = []
    real = mutate_module.mutate_reviewed

    def recording(obj: Any, *args: Any, **kwargs: Any) -> Any:
        events.append("mutate " + obj["metadata"]["name"])
        return real(obj, *args, **kwargs)

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            if text.startswith("apiVersion") or text == "---\n":
                events.append("write")
            return super().write(text)

    monkeypatch.setattr(mutate_module, "mutate_reviewed", recording)
    args = build_parser().parse_args(["mutate", write(tmp_path, "p.yaml", web_pods_yaml())])
    out = Out()
    assert mutate_module.cli_mutate(args, out=out, err=io.StringIO()) == 0
    assert events[:2] == ["mutate web-1", "write"]
    assert events.index("mutate web-2") > 1
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out.getvalue())] == ["web-1", "web-2"]
