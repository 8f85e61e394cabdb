"""object_warnings: upstream's pod warnings, then our advice; silence on a good pod."""

from __future__ import annotations

from typing import Any

import pytest

from tests.advice_messages import outage, revisions
from tests.builders import (
    DNS,
    HOSTNAME,
    REGION,
    SA,
    ZONE,
    constrained_pod,
    constraint,
    exists,
    selector,
    workload,
)
from webhook.validation.advice import object_advice, object_warnings

P = "spec.topologySpreadConstraints"
WEB = selector({"app": "web"})
GHOST = (
    "labelSelector: does not select this pod's own labels; the constraint counts other pods "
    "but never this pod or its replicas, which can then pile up in one domain (ghost pods)"
)
OUTAGE = outage(f"{P}[0]")
WELL_KNOWN = (
    "is not a well-known topology label (kubernetes.io/hostname, topology.kubernetes.io/zone, "
    "topology.kubernetes.io/region); nodes without it are left out of the spread"
)


CASES: list[tuple[str, list[dict[str, Any]], dict[str, str] | None, list[str]]] = [
    (
        "good-pod",
        [
            constraint(1, ZONE, DNS, WEB, minDomains=2, nodeTaintsPolicy="Honor"),
            constraint(1, HOSTNAME, SA, WEB),
            constraint(2, REGION, SA, {}, matchLabelKeys=["app"]),
        ],
        None,
        [],
    ),
    (
        "deprecated-zone",
        [constraint(1, "failure-domain.beta.kubernetes.io/zone", DNS, WEB)],
        None,
        [
            f"{P}[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since "
            'v1.17; use "topology.kubernetes.io/zone" instead',
            OUTAGE,
        ],
    ),
    (
        "deprecated-region",
        [constraint(1, "failure-domain.beta.kubernetes.io/region", SA, WEB)],
        None,
        [
            f"{P}[0].topologyKey: failure-domain.beta.kubernetes.io/region is deprecated since "
            'v1.17; use "topology.kubernetes.io/region" instead'
        ],
    ),
    (
        "null-selector",
        [constraint(1, ZONE, DNS, None)],
        None,
        [f"{P}[0].labelSelector: a null labelSelector results in matching no pod"],
    ),
    (
        "ghost-pods",
        [constraint(1, ZONE, DNS, selector({"app": "db"}))],
        None,
        [f"{P}[0].{GHOST}", OUTAGE],
    ),
    (
        "ghost-pods-expression",
        [constraint(1, ZONE, DNS, exists("tier"))],
        None,
        [f"{P}[0].{GHOST}", OUTAGE],
    ),
    (
        "empty-selector",
        [constraint(1, ZONE, DNS, {})],
        None,
        [
            f"{P}[0].labelSelector: an empty labelSelector selects every pod in the namespace, "
            "so unrelated pods are counted in the spread",
            OUTAGE,
        ],
    ),
    (
        "matchLabelKeys-missing-label",
        [constraint(1, ZONE, DNS, WEB, matchLabelKeys=["pod-template-hash"])],
        None,
        [
            f"{P}[0].matchLabelKeys[0]: the pod has no label pod-template-hash; "
            "the key is skipped and narrows nothing",
            OUTAGE,
        ],
    ),
    (
        "custom-key-DoNotSchedule",
        [constraint(1, "rack", DNS, WEB)],
        None,
        [f"{P}[0].topologyKey: rack {WELL_KNOWN} and cannot run this pod"],
    ),
    (
        "custom-key-ScheduleAnyway",
        [constraint(1, "rack", SA, WEB)],
        None,
        [f"{P}[0].topologyKey: rack {WELL_KNOWN}"],
    ),
    (
        "invalid-key",
        [constraint(1, "rack id", DNS, WEB)],
        None,
        [
            f"{P}[0].topologyKey: rack id is not a valid label key, so no node has it; "
            "every node is left out of the spread and cannot run this pod"
        ],
    ),
    ("invalid-constraint-no-advice", [constraint(1, ZONE, DNS, selector({"a b": "x"}))], None, []),
    ("not-a-list", [], None, []),
]


@pytest.mark.parametrize(
    ("constraints", "labels", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_pod_warnings(
    constraints: list[dict[str, Any]], labels: dict[str, str] | None, expected: list[str]
) -> None:
    """Each warning, exactly worded, starts with its field path."""
    assert object_warnings(constrained_pod(*constraints, labels=labels)) == expected


def test_upstream_warnings_come_before_advice() -> None:
    """Per constraint: upstream's deprecation and null-selector warnings, then our advice."""
    obj = constrained_pod(
        constraint(1, "failure-domain.beta.kubernetes.io/zone", DNS, None, matchLabelKeys=["x"])
    )
    assert object_warnings(obj) == [
        f"{P}[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since "
        'v1.17; use "topology.kubernetes.io/zone" instead',
        f"{P}[0].labelSelector: a null labelSelector results in matching no pod",
        f"{P}[0].matchLabelKeys[0]: the pod has no label x; the key is skipped and narrows nothing",
    ]


@pytest.mark.parametrize(
    ("kind", "key", "spec_path"),
    [
        ("Deployment", "pod-template-hash", "spec.template.spec"),
        ("StatefulSet", "controller-revision-hash", "spec.template.spec"),
        ("DaemonSet", "controller-revision-hash", "spec.template.spec"),
        ("CronJob", "batch.kubernetes.io/job-name", "spec.jobTemplate.spec.template.spec"),
    ],
    ids=["deployment", "statefulset", "daemonset", "cronjob"],
)
def test_controller_labels_are_not_missing(kind: str, key: str, spec_path: str) -> None:
    """A key the controller adds to its pods is not reported missing on the template."""
    obj = workload(
        kind,
        constrained_pod(constraint(1, ZONE, DNS, selector({"app": "db"}), matchLabelKeys=[key])),
    )
    assert object_warnings(obj) == [
        f"{spec_path}.topologySpreadConstraints[0].{GHOST}",
        outage(f"{spec_path}.topologySpreadConstraints[0]"),
    ]


def test_template_key_in_selector_warns_about_pod_rejection() -> None:
    """A template that v1.34 accepts but whose pods the merge would make invalid is flagged."""
    obj = workload(
        "Deployment", constrained_pod(constraint(1, ZONE, DNS, WEB, matchLabelKeys=["app"]))
    )
    assert object_warnings(obj) == [
        "spec.template.spec.topologySpreadConstraints[0].matchLabelKeys[0]: app is also in "
        "labelSelector; kube-apiserver v1.34+ merges it into labelSelector when it creates each "
        "pod and then rejects the pod (exists in both matchLabelKeys and labelSelector)",
        outage("spec.template.spec.topologySpreadConstraints[0]"),
        revisions("spec.template.spec.topologySpreadConstraints[0]"),
    ]


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Pod", "spec": {"topologySpreadConstraints": "x"}},
        {
            "kind": "Pod",
            "metadata": {"labels": [1]},
            "spec": {"topologySpreadConstraints": [1, None]},
        },
        {
            "kind": "Pod",
            "spec": {"topologySpreadConstraints": [{"labelSelector": [1], "topologyKey": 3}]},
        },
        {"kind": "Service"},
        None,
    ],
    ids=["constraints-string", "labels-list", "wrong-field-types", "other-kind", "none"],
)
def test_warnings_never_raise(obj: Any) -> None:
    """Malformed input gives no exception; only upstream's null-selector warning applies."""
    warnings = object_warnings(obj)
    assert all(w.startswith(P) for w in warnings)
    assert all("labelSelector: a null labelSelector" in w for w in warnings)


# ---- outage-blocks-replacements ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "warned"),
    [
        ("zone, DoNotSchedule, nodeTaintsPolicy unset", constraint(1, ZONE, DNS, WEB), True),
        ("region is a failure domain too", constraint(1, REGION, DNS, WEB), True),
        (
            "deprecated zone key",
            constraint(1, "failure-domain.beta.kubernetes.io/zone", DNS, WEB),
            True,
        ),
        ("nodeTaintsPolicy Honor", constraint(1, ZONE, DNS, WEB, nodeTaintsPolicy="Honor"), False),
        (
            "nodeTaintsPolicy Ignore, stated: a choice",
            constraint(1, ZONE, DNS, WEB, nodeTaintsPolicy="Ignore"),
            False,
        ),
        ("ScheduleAnyway never blocks", constraint(1, ZONE, SA, WEB), False),
        ("hostname: a node, not a failure domain", constraint(1, HOSTNAME, DNS, WEB), False),
        ("a nil selector counts no pod: cannot block", constraint(1, ZONE, DNS, None), False),
        (
            "an invalid constraint gets no advice",
            constraint(1, ZONE, DNS, selector({"a b": "x"})),
            False,
        ),
    ],
)
def test_outage_advice_where_the_constraint_is_written(
    name: str, raw: dict[str, Any], warned: bool
) -> None:
    ids = [a.id for a in object_advice(constrained_pod(raw))]
    assert ("outage-blocks-replacements" in ids) is warned, name


def test_outage_advice_on_a_key_the_config_declares() -> None:
    """topologyKeys the config declares are failure domains (racks, rooms)."""
    obj = constrained_pod(constraint(1, "example.com/rack", DNS, WEB))
    assert [a.id for a in object_advice(obj)] == ["unknown-topology-key"]
    advice = object_advice(obj, topology_keys=["example.com/rack"])
    assert [(a.id, a.field) for a in advice] == [
        ("outage-blocks-replacements", f"{P}[0].nodeTaintsPolicy")
    ]


def test_outage_advice_is_suppressed_like_every_warning() -> None:
    obj = constrained_pod(constraint(1, ZONE, DNS, WEB))
    obj["metadata"]["annotations"] = {"topospread.io/ignore": "outage-blocks-replacements"}
    assert object_warnings(obj) == []


def test_outage_advice_fits_a_warning_on_the_longest_path() -> None:
    """256 runes: kube-apiserver's limit for one warning, with a CronJob's path."""
    obj = workload("CronJob", constrained_pod(*[constraint(1, ZONE, DNS, WEB)] * 11))
    longest = object_warnings(obj)[-1]
    assert longest.startswith("spec.jobTemplate.spec.template.spec.topologySpreadConstraints[10]")
    assert len(longest) <= 256


# ---- revisions-counted-together -----------------------------------------------------------
#
# Legend: a Deployment of pods labelled app=web; `strategy` is its spec.strategy (None:
# unset); the constraint is its template's only one. HASH is pod-template-hash.

HASH = "pod-template-hash"
TPL = "spec.template.spec.topologySpreadConstraints"
ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}


def deployment(*constraints: dict[str, Any], strategy: Any = None, kind: str = "Deployment") -> Any:
    obj = workload(kind, constrained_pod(*constraints), name="web")
    if strategy is not None:
        obj["spec"]["strategy"] = strategy
    return obj


def revision_fields(obj: Any, **kw: Any) -> list[str]:
    return [a.field for a in object_advice(obj, **kw) if a.id == "revisions-counted-together"]


REVISION_CASES: list[tuple[str, Any, dict[str, Any], bool]] = [
    # (name, strategy, constraint, warned)
    ("strategy unset: RollingUpdate by default", None, constraint(1, ZONE, DNS, WEB), True),
    ("RollingUpdate stated", ROLLING, constraint(1, ZONE, DNS, WEB), True),
    ("strategy without a type: RollingUpdate", {}, constraint(1, ZONE, DNS, WEB), True),
    ("Recreate: old pods gone before new ones", {"type": "Recreate"},
     constraint(1, ZONE, DNS, WEB), False),
    ("hostname spread counts revisions together too", None,
     constraint(1, HOSTNAME, DNS, WEB), True),
    ("ScheduleAnyway only scores: never stalls", None, constraint(1, ZONE, SA, WEB), False),
    ("pod-template-hash in matchLabelKeys", None,
     constraint(1, ZONE, DNS, WEB, matchLabelKeys=[HASH]), False),
    ("pod-template-hash after another key", None,
     constraint(1, ZONE, DNS, WEB, matchLabelKeys=["app", HASH]), False),
    ("other matchLabelKeys only", None,
     constraint(1, ZONE, DNS, WEB, matchLabelKeys=["version"]), True),
    ("pod-template-hash in matchExpressions: the author's choice", None,
     constraint(1, ZONE, DNS, selector({"app": "web"}, {"key": HASH, "operator": "Exists"})),
     False),
    ("pod-template-hash in matchLabels: the author's choice", None,
     constraint(1, ZONE, DNS, selector({"app": "web", HASH: "abc"})), False),
    ("empty selector counts every revision", None, constraint(1, ZONE, DNS, {}), True),
    ("null selector counts no pod", None, constraint(1, ZONE, DNS, None), False),
    ("selector misses the pods: other workloads counted", None,
     constraint(1, ZONE, DNS, selector({"app": "db"})), False),
    ("invalid constraint gets no advice", None,
     constraint(1, ZONE, DNS, selector({"a b": "x"})), False),
    ("invalid maxSkew gets no advice", None, constraint(0, ZONE, DNS, WEB), False),
]


@pytest.mark.parametrize(
    ("strategy", "raw", "warned"),
    [c[1:] for c in REVISION_CASES],
    ids=[c[0] for c in REVISION_CASES],
)
def test_revisions_advice_on_a_deployment(strategy: Any, raw: dict[str, Any], warned: bool) -> None:
    """Warned exactly when a rolling Deployment's DoNotSchedule constraint selects its own
    pods and names pod-template-hash nowhere; on the constraint's matchLabelKeys."""
    fields = revision_fields(deployment(raw, strategy=strategy))
    assert fields == ([f"{TPL}[0].matchLabelKeys"] if warned else [])


@pytest.mark.parametrize(
    "kind", ["Pod", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "PodTemplate"]
)
def test_revisions_advice_is_for_deployments_only(kind: str) -> None:
    """Only a Deployment rolls out through a second ReplicaSet whose pods share the count."""
    raw = constraint(1, ZONE, DNS, WEB)
    obj = constrained_pod(raw) if kind == "Pod" else workload(kind, constrained_pod(raw))
    assert revision_fields(obj) == []


def test_revisions_advice_names_each_constraint() -> None:
    """Per constraint, at its own index, worded in full; the hard one only."""
    obj = deployment(
        constraint(1, HOSTNAME, SA, WEB),
        constraint(1, ZONE, DNS, WEB, nodeTaintsPolicy="Honor"),
    )
    assert object_warnings(obj) == [revisions(f"{TPL}[1]")]


@pytest.mark.parametrize(
    "where", ["metadata", "template"], ids=["on the Deployment", "on its pod template"]
)
def test_revisions_advice_is_suppressed_like_every_warning(where: str) -> None:
    obj = deployment(constraint(1, ZONE, DNS, WEB, nodeTaintsPolicy="Honor"))
    meta = obj["metadata"] if where == "metadata" else obj["spec"]["template"]["metadata"]
    meta["annotations"] = {"topospread.io/ignore": "revisions-counted-together"}
    assert object_warnings(obj) == []


def test_no_revisions_advice_when_the_webhook_separates_revisions() -> None:
    """policy.separateRevisions: /mutate adds pod-template-hash to each pod itself."""
    obj = deployment(constraint(1, ZONE, DNS, WEB))
    assert revision_fields(obj) == [f"{TPL}[0].matchLabelKeys"]
    assert revision_fields(obj, separate_revisions=True) == []
    assert object_warnings(obj, separate_revisions=True) == [outage(f"{TPL}[0]")]


def test_revisions_advice_fits_a_warning() -> None:
    """256 runes, kube-apiserver's limit for one warning, on an eleventh constraint."""
    keys = [ZONE, HOSTNAME, REGION, *(f"example.com/k{i}" for i in range(8))]
    obj = deployment(*[constraint(1, k, DNS, WEB, nodeTaintsPolicy="Honor") for k in keys])
    [longest] = [w for w in object_warnings(obj) if w.startswith(f"{TPL}[10].matchLabelKeys")]
    assert len(longest) <= 256
