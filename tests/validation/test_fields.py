"""Strict field validation: the unknown and duplicate fields kube-apiserver's strict
decoding reports, in its order and words, and the field we say was meant.

Expected paths and texts are written by hand from sigs.k8s.io/json's strict decoder
(internal/golang/encoding/json/kubernetes_patch.go: `unknown field "PATH"`, the path
dotted, `[i]` for list items, each report once, at most 100) and apimachinery's
runtime.strictDecodingError (`strict decoding error: ` then the reports joined with
", "); what kube-apiserver v1.37.2 answered for the same objects is in docs/cli.md.
Inputs are YAML texts parsed as `check` parses them, so duplicates and lines are the
parser's. Legend: T = "spec.template.spec", C = T + ".topologySpreadConstraints".
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.cli.inputs import parse_documents
from webhook.validation.fields import (
    MAX_STRICT_ERRORS,
    FieldProblem,
    decode_error,
    field_schema,
    parse_field_validation,
    strict_problems,
)

T = "spec.template.spec"
C = f"{T}.topologySpreadConstraints"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"""


def deployment(extra_spec: str = "", extra_top: str = "") -> str:
    """The Deployment above with lines added to its pod spec and to its root."""
    text = DEPLOYMENT + textwrap.indent(textwrap.dedent(extra_spec), " " * 6)
    return text + textwrap.dedent(extra_top)


def problems(text: str, release: str = "1.37") -> list[FieldProblem]:
    """As check finds them: the lines of duplicates from the parse, of the others from
    the document's YAML (Document.line_of)."""
    (doc,) = parse_documents(text, "t.yaml", keep_keys=True)
    schema = field_schema(release)
    assert schema is not None
    found = strict_problems(doc.obj, schema, doc.written or (lambda d: None))
    return [p if p.line is not None else replace(p, line=doc.line_of(p.keys)) for p in found]


def found(text: str, release: str = "1.37") -> list[tuple[str, str | None, int | None]]:
    return [(p.text(), p.meant, p.line) for p in problems(text, release)]


# (case, input, [(upstream's text, the field meant, line)])
CASES = [
    ("valid deployment: nothing", deployment(), []),
    (
        "matchLabels indented under the constraint, not its labelSelector (kubernetes#97687)",
        deployment("""\
            topologySpreadConstraints:
            - maxSkew: 1
              topologyKey: zone
              whenUnsatisfiable: DoNotSchedule
              labelSelector:
              matchLabels: {app: web}
            """),
        [(f'unknown field "{C}[0].matchLabels"', "labelSelector.matchLabels", 15)],
    ),
    (
        "topologySpreadConstraint: the singular, one level up",
        deployment("topologySpreadConstraint: []\n"),
        [(f'unknown field "{T}.topologySpreadConstraint"', "topologySpreadConstraints", 10)],
    ),
    (
        "topologyspreadconstraints: decoding is case-sensitive",
        deployment("topologyspreadconstraints: []\n"),
        [(f'unknown field "{T}.topologyspreadconstraints"', "topologySpreadConstraints", 10)],
    ),
    (
        "labelSelectors and matchLabelKey: near misses inside a constraint",
        deployment("""\
            topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,
               labelSelectors: {}, matchLabelKey: [app]}
            """),
        [
            (f'unknown field "{C}[0].labelSelectors"', "labelSelector", 12),
            (f'unknown field "{C}[0].matchLabelKey"', "matchLabelKeys", 12),
        ],
    ),
    (
        "second constraint: the index is the item's",
        deployment("""\
            topologySpreadConstraints:
            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}
            - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, skew: 2}
            """),
        [(f'unknown field "{C}[1].skew"', None, 12)],
    ),
    (
        "duplicate field in a constraint: reported, last value kept",
        deployment("""\
            topologySpreadConstraints:
            - maxSkew: 1
              maxSkew: 2
              topologyKey: zone
              whenUnsatisfiable: DoNotSchedule
            """),
        [(f'duplicate field "{C}[0].maxSkew"', None, 12)],
    ),
    (
        "duplicate map key: a label given twice",
        deployment().replace("{name: web}", "{name: web, labels: {app: a, app: b}}"),
        [('duplicate field "metadata.labels.app"', None, 3)],
    ),
    (
        "unknown key at the root: the path has no dot before it",
        deployment(extra_top="specs: {}\n"),
        [('unknown field "specs"', "spec", 10)],
    ),
    (
        "an unknown field is not looked into",
        deployment("extra: {more: {deeper: 1}}\n"),
        [(f'unknown field "{T}.extra"', None, 10)],
    ),
    (
        "the same unknown field twice is reported once",
        deployment("foo: 1\nfoo: 2\n"),
        [(f'unknown field "{T}.foo"', None, 10)],
    ),
    (
        "a value of another type is not looked into (a type error, not a strict one)",
        deployment("topologySpreadConstraints: {maxSkew: 1, bogus: 2}\n"),
        [],
    ),
    (
        "opaque values are not looked into: a quantity, an int-or-string",
        deployment("""\
            initContainers:
            - name: i
              resources: {limits: {cpu: {any: thing}}}
              ports: [{containerPort: 80}]
              livenessProbe: {httpGet: {port: {any: thing}}}
            """),
        [],
    ),
    (
        "a stored object's server fields are known",
        deployment(extra_top="""\
            status: {replicas: 1, conditions: [{type: Available, status: "True"}]}
            """).replace("metadata: {name: web}", "metadata: {name: web, uid: u, "
                         "resourceVersion: '1', managedFields: [{manager: m, "
                         "fieldsV1: {'f:spec': {}}}]}"),
        [],
    ),
]


@pytest.mark.parametrize("text,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_strict_problems(text: str, want: list[tuple[str, str | None, int | None]]) -> None:
    """Each unknown or duplicate field at its path, with upstream's words, the field
    meant and the line of the key."""
    assert found(text) == want


@pytest.mark.parametrize(
    "case,kind_lines,want",
    [
        ("Pod: the path starts at spec", "apiVersion: v1\nkind: Pod\nspec:\n  foo: 1\n",
         'unknown field "spec.foo"'),
        ("CronJob: the template is deep", "apiVersion: batch/v1\nkind: CronJob\nspec:\n"
         "  jobTemplate: {spec: {template: {spec: {foo: 1}}}}\n",
         'unknown field "spec.jobTemplate.spec.template.spec.foo"'),
        ("PodTemplate: at template", "apiVersion: v1\nkind: PodTemplate\ntemplate:\n"
         "  spec: {foo: 1}\n", 'unknown field "template.spec.foo"'),
    ],
)
def test_every_kind_check_reads_is_decoded(case: str, kind_lines: str, want: str) -> None:
    """Pods, the pod template of each workload kind and PodTemplates."""
    assert [p.text() for p in problems(kind_lines)] == [want]


def test_kinds_and_versions_without_a_table_are_not_decoded() -> None:
    """A custom resource, a Service, an old apiVersion: no table, nothing reported."""
    for text in (
        "apiVersion: example.com/v1\nkind: Rollout\nspec: {foo: 1}\n",
        "apiVersion: v1\nkind: Service\nspec: {foo: 1}\n",
        "apiVersion: apps/v1beta2\nkind: Deployment\nspec: {foo: 1}\n",
    ):
        assert problems(text) == []


@pytest.mark.parametrize(
    "release,field,unknown",
    [
        ("1.35", "workloadRef: {name: w, podGroup: g}", False),
        ("1.36", "workloadRef: {name: w, podGroup: g}", True),
        ("1.36", "schedulingGroup: {podGroupName: g}", False),
        ("1.35", "schedulingGroup: {podGroupName: g}", True),
        ("1.37", "evictionResponders: []", False),
        ("1.36", "evictionResponders: []", True),
    ],
)
def test_each_release_knows_its_own_fields(release: str, field: str, unknown: bool) -> None:
    """PodSpec.workloadRef is v1.35's only, schedulingGroup came in v1.36,
    evictionResponders in v1.37 (upstream's swagger.json of each release)."""
    got = problems(deployment(field + "\n"), release)
    assert [p.kind for p in got] == (["unknown"] if unknown else [])


def test_json_duplicates_are_found_without_lines() -> None:
    """A JSON body: duplicates from the parser's pairs, no line known."""
    text = '{"apiVersion": "v1", "kind": "Pod", "spec": {"hostPID": true, "hostPID": false}}'
    (doc,) = parse_documents(text, "t.json", keep_keys=True)
    schema = field_schema("1.37")
    assert schema is not None
    got = strict_problems(doc.obj, schema, doc.written or (lambda d: None))
    assert got == [FieldProblem("duplicate", "spec.hostPID")]


def test_at_most_100_are_kept() -> None:
    """sigs.k8s.io/json keeps the first 100 strict errors."""
    text = deployment("".join(f"f{i}: 1\n" for i in range(150)))
    got = problems(text)
    assert len(got) == MAX_STRICT_ERRORS
    assert got[-1].path == f"{T}.f99"


def test_decode_error_is_kube_apiservers_400() -> None:
    """The whole answer: kind, version, the reports joined with ", "."""
    got = problems(deployment("foo: 1\nbar: 2\n"))
    (doc,) = parse_documents(deployment(), "t.yaml")
    assert decode_error(doc.obj, got) == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding '
        f'error: unknown field "{T}.foo", unknown field "{T}.bar"'
    )


def test_a_key_with_a_quote_is_go_quoted() -> None:
    """The path is quoted as Go's strconv.Quote quotes it."""
    got = problems(deployment('"a\\"b\\n": 1\n'))
    assert [p.text() for p in got] == [f'unknown field "{T}.a\\"b\\n"']


@pytest.mark.parametrize(
    "value,want",
    [("Strict", "Strict"), ("warn", "Warn"), ("IGNORE", "Ignore"), ("true", None), ("", None)],
)
def test_parse_field_validation(value: str, want: str | None) -> None:
    assert parse_field_validation(value) == want


def test_yaml_keys_that_are_not_strings_are_named_as_json_names_them() -> None:
    """`true:` and `80:` (YAML 1.1 reads a bool and an int) are unknown as "true", "80"."""
    got = problems(deployment("true: 1\n80: 2\n"))
    assert [p.path for p in got] == [f"{T}.true", f"{T}.80"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(["spec", "template", "containers", "topologySpreadConstraints",
                         "labelSelector", "matchLabels", "metadata", "labels", "x", "Spec"]),
        inner,
        max_size=4,
    ),
    max_leaves=20,
)


@given(spec=JSON, metadata=JSON)
def test_any_json_at_any_place_gives_problems_never_an_exception(spec: Any, metadata: Any) -> None:
    """Whatever the values, strict_problems answers, each report once, at most 100."""
    schema = field_schema("1.37")
    assert schema is not None
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}
    got = strict_problems(obj, schema)
    assert len({(p.kind, p.path) for p in got}) == len(got) <= 100
