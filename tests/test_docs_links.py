"""The docs name only what exists: every relative link of README.md and docs/ resolves
(to a file, and to a heading when it names one), and every repository path they name
in backticks (`webhook/...`, `tests/...`, `deploy/...`, `bench/...`, `docs/...`) or in
a `$ ` command of a code block exists.

What counts as a path: a code span or a command word that starts with one of those
folders and holds nothing but path characters. A placeholder (`plugins/<name>.py`)
is no path; a glob (`tests/audit/test_*.py`) must match something; `path.py::test` and
`path.py:12` name `path.py`; a path written as a plain word in the prose counts too.
Not checked: the output printed under a command (it shows
what the program printed, which may name files of another machine), links to the web,
and other projects' paths (`pkg/scheduler/...` is kube-scheduler's).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.paths import ROOT

OURS = ("webhook", "tests", "deploy", "bench", "docs")
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

# Dead references of pages other changes are rewriting, each still dead (the test below
# fails once one resolves, so that it leaves this list).
KNOWN_DEAD: set[tuple[str, str]] = set()

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_PATHLIKE = re.compile(r"^(?:\./)?(?:" + "|".join(OURS) + r")/[A-Za-z0-9_.*/-]*$")
_PROSE_PATH = re.compile(r"(?<![\w/.-])(?:" + "|".join(OURS) + r")/[A-Za-z0-9_.*/-]+")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ANCHOR_TAG = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


@dataclass(frozen=True)
class Ref:
    doc: str  # the page, relative to the repository
    line: int
    target: str  # as written
    kind: str  # "link" or "path"

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.kind} {self.target}"


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation but
    hyphens and underscores removed, spaces made hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    out = []
    for ch in text:
        if ch in "-_ " or ch.isalnum():
            out.append("-" if ch == " " else ch)
        elif unicodedata.category(ch).startswith(("L", "N")):
            out.append(ch)
    return "".join(out)


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown page: its headings' slugs (a repeated one gets -1,
    -2, ...) and explicit <a name=...> tags."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        out.update(_ANCHOR_TAG.findall(line))
        m = _HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


WORKLOAD_FLAGS = ("--scale", "--rollout")


def _path_words(span: str) -> list[str]:
    """The repository paths a code span or command names."""
    out = []
    # In a kubectl command `deploy/NAME` is a Deployment, not a folder.
    kubectl = "kubectl" in span.split()
    previous = ""
    for word in span.split():
        # The value of a workload drill is KIND/NAMESPACE/NAME, not a folder.
        after_drill, previous = previous in WORKLOAD_FLAGS, word
        if after_drill:
            continue
        word = word.strip("'\"(),;")
        word = re.split(r"::|:(?=\d)", word)[0]
        if word.endswith("..."):
            continue
        word = word.rstrip(".")
        if kubectl and re.fullmatch(r"deploy/[a-z0-9.-]+", word):
            continue
        if _PATHLIKE.match(word):
            out.append(word.removeprefix("./"))
    return out


def references(doc: Path, name: str | None = None) -> list[Ref]:
    """Every link and repository path a page names (outside code blocks, and in the
    `$ ` commands inside them); `name`: the page's name in the repository."""
    out: list[Ref] = []
    name = name or _rel(doc)
    fenced = False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            command = line.strip()
            if command.startswith("$ "):
                # What a command writes (`> file`, `--out dir`) need not exist yet.
                command = re.sub(r"(>|--out|--output-dir)\s+\S+", "", command)
                out.extend(Ref(name, number, p, "path") for p in _path_words(command[2:]))
            continue
        spans = [m.group(2) for m in _CODE_SPAN.finditer(line)]
        prose = _CODE_SPAN.sub(" ", line)
        for pattern in (_LINK, _IMAGE):
            for target in pattern.findall(prose):
                if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                    out.append(Ref(name, number, target, "link"))
        # Paths written as plain words, outside links.
        words = _IMAGE.sub(" ", _LINK.sub(" ", prose))
        for text in [*spans, *_PROSE_PATH.findall(words)]:
            out.extend(Ref(name, number, p, "path") for p in _path_words(text))
    return out


def problem(ref: Ref) -> str | None:
    """Why a reference is dead, or None."""
    doc = ROOT / ref.doc
    if ref.kind == "path":
        if "*" in ref.target:
            return None if any(ROOT.glob(ref.target)) else "matches no file"
        return None if (ROOT / ref.target).exists() else "no such path"
    target, _, anchor = ref.target.partition("#")
    where = (doc.parent / target).resolve() if target else doc
    if not where.exists():
        return "no such file"
    if ROOT not in where.parents and where != ROOT:
        return "outside the repository"
    if anchor and where.suffix == ".md" and anchor not in anchors(where):
        return f"no heading #{anchor} in {_rel(where)}"
    return None


def dead() -> list[tuple[Ref, str]]:
    out = []
    for doc in DOCS:
        for ref in references(doc):
            why = problem(ref)
            if why is not None:
                out.append((ref, why))
    return out


# ---- the checker itself ------------------------------------------------------------------


@pytest.mark.parametrize(
    "heading, anchor",
    [
        ("Architecture", "architecture"),
        (
            "`webhook/api/`: Kubernetes API vocabulary (pure)",
            "webhookapi-kubernetes-api-vocabulary-pure",
        ),
        (
            "Drills: `--unreachable-nodes`, `--drain-nodes`",
            "drills---unreachable-nodes---drain-nodes",
        ),
        ("At scale (5,000 nodes)", "at-scale-5000-nodes"),
        ("What a [link](x.md) says", "what-a-link-says"),
    ],
)
def test_slug_is_githubs_anchor(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


@pytest.mark.parametrize(
    "line, found",
    [
        (
            "see [the audit](audit.md#drills) and [k8s](https://kubernetes.io/x)",
            ["link audit.md#drills"],
        ),
        ("![shot](report.png)", ["link report.png"]),
        (
            "in `webhook/render/html.py` and `tests/audit/test_cli.py::test_x`",
            ["path webhook/render/html.py", "path tests/audit/test_cli.py"],
        ),
        ("`webhook/scheduler/plugins/<name>.py` is a placeholder", []),
        ("upstream's `pkg/scheduler/framework/interface.go`", []),
        (
            "run `make test` or `topospread audit --snapshot docs/examples/zone-outage.json`",
            ["path docs/examples/zone-outage.json"],
        ),
        ("`tests/builders.py:40` and `webhook/cli/...`", ["path tests/builders.py"]),
        ("`[docs](nowhere.md)` is code, not a link", []),
        ("`kubectl -n ts logs deploy/topospread`", []),
        ("`--scale deploy/shop/web=3`", []),
        (
            "`topospread audit --rollout deploy/shop/web --snapshot deploy/x.json`",
            ["path deploy/x.json"],
        ),
        ("`kubectl apply -k deploy/kustomize/base`", ["path deploy/kustomize/base"]),
        (
            "as webhook/render/html.py, or webhook/cli/.",
            ["path webhook/render/html.py", "path webhook/cli/"],
        ),
        (
            "[the page](../webhook/render/html.py) and my-docs/x.md",
            ["link ../webhook/render/html.py"],
        ),
    ],
)
def test_references_of_a_line(line: str, found: list[str], tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n\n{line}\n", encoding="utf-8")
    refs = [f"{r.kind} {r.target}" for r in references(page, name="docs/page.md")]
    assert refs == found


def test_commands_in_code_blocks_are_checked_but_not_their_output(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```\n"
        "$ topospread simulate --snapshot docs/examples/pending/cluster.yaml pod.yaml\n"
        "read webhook/nowhere.py\n"
        "$ topospread audit -o html > docs/new-report.html\n"
        "```\n",
        encoding="utf-8",
    )
    assert [r.target for r in references(page, name="docs/page.md")] == [
        "docs/examples/pending/cluster.yaml"
    ]


@pytest.mark.parametrize(
    "ref, why",
    [
        (Ref("docs/audit.md", 1, "webhook/defaults.py", "path"), "no such path"),
        (Ref("docs/audit.md", 1, "webhook/render/html.py", "path"), None),
        (Ref("docs/audit.md", 1, "webhook/audit/", "path"), None),
        (Ref("docs/audit.md", 1, "tests/audit/test_*.py", "path"), None),
        (Ref("docs/audit.md", 1, "tests/audit/test_nothing_*.py", "path"), "matches no file"),
        (Ref("docs/audit.md", 1, "pending.md", "link"), None),
        (Ref("docs/audit.md", 1, "missing.md", "link"), "no such file"),
        (Ref("docs/audit.md", 1, "../webhook/render/html.py", "link"), None),
        (Ref("docs/audit.md", 1, "architecture.md#above-them", "link"), None),
        (
            Ref("docs/audit.md", 1, "architecture.md#below-them", "link"),
            "no heading #below-them in docs/architecture.md",
        ),
        (Ref("README.md", 1, "docs/architecture.md", "link"), None),
        (Ref("README.md", 1, "../outside.md", "link"), "no such file"),
    ],
)
def test_problem_of_a_reference(ref: Ref, why: str | None) -> None:
    assert problem(ref) == why


# ---- the docs ----------------------------------------------------------------------------


def test_the_docs_are_found() -> None:
    assert {"README.md", "docs/audit.md", "docs/performance.md"} <= {_rel(d) for d in DOCS}
    assert sum(len(references(d)) for d in DOCS) > 200


def test_every_reference_of_the_docs_resolves() -> None:
    found = [(r, why) for r, why in dead() if (r.doc, r.target) not in KNOWN_DEAD]
    assert found == [], "\n".join(f"{r}: {why}" for r, why in found)


def test_the_known_dead_references_are_still_dead() -> None:
    still = {(r.doc, r.target) for r, _ in dead()}
    assert KNOWN_DEAD <= still, f"resolved now, drop from KNOWN_DEAD: {KNOWN_DEAD - still}"
