"""Unschedulable foresight on /validate: warnings naming the constraint, denial by policy.

Legend: node(zone)[matching pods], `tainted` = a NoSchedule taint the pod does not
tolerate (so the node fails TaintToleration but, under the default
nodeTaintsPolicy Ignore, still counts as a domain). Filter arithmetic from
upstream's filtering.go: a node passes a DoNotSchedule constraint when
matching(domain) + selfMatch - globalMin <= maxSkew, globalMin being the smallest
eligible domain count (0 while fewer eligible domains than minDomains); a node
lacking the topology key fails it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.advice_messages import outage
from tests.builders import (
    DNS,
    SA,
    ZONE,
    RawObj,
    constraint,
    make_node,
    make_pod,
    review,
    selector,
    workload,
)
from webhook.admission.context import ReviewContext
from webhook.admission.foresight import Blocked
from webhook.admission.handlers import answer_review
from webhook.cluster.source import StaticSource
from webhook.config import Settings, settings_from_dict
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.server.app import create_app

WEB = {"app": "web"}
HEAD = "no node fits: maxSkew 1 over topology.kubernetes.io/zone (DoNotSchedule) rules out"


def node(name: str, zone: str | None = None, *, tainted: bool = False) -> RawObj:
    builder = make_node().name(name).hostname()
    if zone:
        builder = builder.zone(zone)
    if tainted:
        builder = builder.taint("dedicated", "infra")
    return builder.obj()


def pods(on: str, n: int) -> list[RawObj]:
    return [make_pod().name(f"{on}-w{i}").labels(WEB).node(on).obj() for i in range(n)]


# These tests are about foresight alone: their pods silence the advice every zone
# DoNotSchedule constraint without nodeTaintsPolicy gets (outage-blocks-replacements;
# test_advice_comes_before_foresight shows both together), and, as a Deployment's
# template, without pod-template-hash (revisions-counted-together).
QUIET = ("topospread.io/ignore", "outage-blocks-replacements,revisions-counted-together")


def web(*constraints: RawObj) -> RawObj:
    return (
        make_pod().name("web").labels(WEB).annotation(*QUIET).constraints(list(constraints)).obj()
    )


def dns(max_skew: int = 1, **extra: Any) -> RawObj:
    return constraint(max_skew, ZONE, DNS, selector(WEB), **extra)


def sa(max_skew: int = 1) -> RawObj:
    return constraint(max_skew, ZONE, SA, selector(WEB))


def validate(
    cluster: list[RawObj] | None, obj: RawObj, settings: Settings | None = None, **kw: Any
) -> RawObj:
    snapshot = Snapshot.from_objects(cluster) if cluster is not None else None
    app = create_app(settings or Settings(), source=StaticSource(snapshot, (1, 34)))
    with app.test_client() as client:
        doc: RawObj = client.post("/validate", json=review(obj, **kw)).get_json()
    return doc["response"]


# a1(a)[2] b1(b, tainted)[0]: only a1 passes the other filters; 2 + 1 - 0 = 3 > 1.
SKEWED = [node("a1", "a"), node("b1", "b", tainted=True), *pods("a1", 2)]
SKEWED_TEXT = (
    f"spec.topologySpreadConstraints[0]: {HEAD} 1 of 1 node(s) passing the other filters; "
    "matching pods per domain: a=2, b=0"
)

CASES = [
    # (name, cluster, pod, expected warnings)
    ("constraint leaves no node", SKEWED, web(dns()), [SKEWED_TEXT]),
    # 2 + 1 - 0 = 3: maxSkew 2 still rules a1 out, maxSkew 3 lets it in.
    (
        "maxSkew 2 still rules out",
        SKEWED,
        web(dns(2)),
        [SKEWED_TEXT.replace("maxSkew 1", "maxSkew 2")],
    ),
    ("maxSkew 3 leaves a node", SKEWED, web(dns(3)), []),
    ("a node is free", [node("a1", "a"), node("b1", "b"), *pods("a1", 2)], web(dns()), []),
    ("ScheduleAnyway never rules out", SKEWED, web(sa()), []),
    (
        "second constraint named by its own index",
        SKEWED,
        web(sa(), dns()),
        [SKEWED_TEXT.replace("[0]", "[1]")],
    ),
    (
        "every node fails another filter: not the constraint's doing",
        [node("a1", "a", tainted=True), node("b1", "b", tainted=True), *pods("a1", 2)],
        web(dns()),
        [],
    ),
    ("no node at all", [], web(dns()), []),
    (
        "candidate lacking the key (missing required label)",
        [node("a1", "a", tainted=True), node("n0"), *pods("a1", 2)],
        web(dns()),
        [
            f"spec.topologySpreadConstraints[0]: {HEAD} 1 of 1 node(s) passing the other filters; "
            "matching pods per domain: a=2"
        ],
    ),
    # a1(a)[1] b1(b, tainted)[1]: min would be 1 (a1 passes: 1 + 1 - 1 = 1), but two
    # eligible domains < minDomains 3 make it 0: 1 + 1 - 0 = 2 > 1.
    (
        "minDomains makes the minimum 0",
        [node("a1", "a"), node("b1", "b", tainted=True), *pods("a1", 1), *pods("b1", 1)],
        web(dns(minDomains=3)),
        [
            f"spec.topologySpreadConstraints[0]: {HEAD} 1 of 1 node(s) passing the other filters "
            "(2 eligible domain(s) < minDomains 3); matching pods per domain: a=1, b=1"
        ],
    ),
    (
        "same cluster without minDomains",
        [node("a1", "a"), node("b1", "b", tainted=True), *pods("a1", 1), *pods("b1", 1)],
        web(dns()),
        [],
    ),
]


@pytest.mark.parametrize(
    ("cluster", "pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_warning_names_the_constraint_and_domain_counts(
    cluster: list[RawObj], pod: RawObj, expected: list[str]
) -> None:
    """Allowed; a warning per DoNotSchedule constraint that leaves the pod no node."""
    response = validate(cluster, pod)
    assert response["allowed"] is True
    assert response.get("warnings", []) == expected


def test_advice_comes_before_foresight() -> None:
    """Unsilenced, the zone constraint's outage advice comes first, then foresight's."""
    pod = make_pod().name("web").labels(WEB).constraints([dns()]).obj()
    assert validate(SKEWED, pod)["warnings"] == [
        outage("spec.topologySpreadConstraints[0]"),
        SKEWED_TEXT,
    ]


def test_denied_under_policy_with_forbidden() -> None:
    """policy.denyUnschedulable: 403 Forbidden, worded as apierrors.NewForbidden for pods."""
    response = validate(SKEWED, web(dns()), Settings(deny_unschedulable=True))
    cause = SKEWED_TEXT.removeprefix("spec.topologySpreadConstraints[0]: ")
    assert response["allowed"] is False
    assert response["status"] == {
        "status": "Failure",
        "message": 'pods "web" is forbidden: unschedulable in the current cluster state '
        f"(policy.denyUnschedulable): {SKEWED_TEXT}",
        "reason": "Forbidden",
        "details": {
            "name": "web",
            "kind": "pods",
            "causes": [
                {
                    "reason": "FieldValueForbidden",
                    "field": "spec.topologySpreadConstraints[0]",
                    "message": cause,
                }
            ],
        },
        "code": 403,
    }


def test_policy_does_not_deny_a_schedulable_pod() -> None:
    """The policy only denies what would warn."""
    response = validate(SKEWED, web(dns(3)), Settings(deny_unschedulable=True))
    assert response == {"uid": response["uid"], "allowed": True}


def test_denial_names_a_generate_name_pod() -> None:
    """A controller-made pod has no name yet: the denial speaks of its generateName."""
    pod = make_pod().generate_name("web-").labels(WEB).annotation(*QUIET).constraints([dns()]).obj()
    response = validate(SKEWED, pod, Settings(deny_unschedulable=True))
    assert response["status"]["details"]["name"] == "web-"
    assert response["status"]["message"].startswith('pods "web-" is forbidden: ')


def test_invalid_pod_is_denied_as_invalid_first() -> None:
    """An invalid object gets kube-apiserver's 422 Invalid; foresight does not run."""
    response = validate(SKEWED, web(dns(0)), Settings(deny_unschedulable=True))
    assert response["status"]["code"] == 422
    assert response["status"]["reason"] == "Invalid"


def test_default_constraint_named_by_its_config_path() -> None:
    """A pod left to List defaults (injection off) is told which default rules it out."""
    settings = settings_from_dict(
        {
            "injectDefaults": False,
            "podTopologySpread": {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS}
                ],
            },
        }
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": WEB},
    }
    pod = make_pod().name("web").labels(WEB).obj()
    response = validate([*SKEWED, service], pod, settings)
    path = "podTopologySpread.defaultConstraints"
    assert response["warnings"] == [SKEWED_TEXT.replace("spec.topologySpreadConstraints", path)]


@pytest.mark.parametrize(
    ("obj", "operation"),
    [
        (workload("Deployment", web(dns())), "CREATE"),
        (workload("CronJob", web(dns())), "CREATE"),
        (web(dns()), "UPDATE"),
    ],
    ids=["deployment template", "cronjob template", "pod update"],
)
def test_only_pod_create_is_foreseen(obj: RawObj, operation: str) -> None:
    """Templates and updates are not placed (see docs/admission.md)."""
    old = obj if operation == "UPDATE" else None
    response = validate(
        SKEWED, obj, Settings(deny_unschedulable=True), operation=operation, old=old
    )
    assert response["allowed"] is True
    assert "warnings" not in response


def test_unsynced_source_checks_nothing() -> None:
    """No cluster state: nothing to foresee, allowed without a warning."""
    response = validate(None, web(dns()), Settings(deny_unschedulable=True))
    assert response == {"uid": response["uid"], "allowed": True}


class BrokenSnapshot:
    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"model failure reading {name}")


def test_model_raising_allows_with_a_warning() -> None:
    """A model failure never denies: allowed, and the warning says the check did not run."""
    ctx = ReviewContext(
        settings=Settings(deny_unschedulable=True),
        server_version=(1, 34),
        snapshot=BrokenSnapshot(),
    )
    answer = answer_review(json.dumps(review(web(dns()))).encode(), "validate", ctx)
    assert answer.doc["response"]["allowed"] is True
    assert answer.doc["response"]["warnings"] == [
        "spec.topologySpreadConstraints: not checked for schedulability by topospread "
        "because of an internal error in the cluster model"
    ]
    assert answer.decision == "internal_error"


def test_long_domain_lists_are_cut_to_256_runes() -> None:
    """300 domains do not fit in one warning: the least loaded come first, the rest counted."""
    blocked = Blocked(
        path="spec.topologySpreadConstraints[0]",
        topology_key=ZONE,
        max_skew=1,
        rejected=300,
        candidates=300,
        domains={f"zone-{i:03d}": 5 for i in range(300)} | {"zone-x": 0},
        global_min=0,
        min_domains=1,
    )
    text = blocked.text()
    assert len(text) <= 256
    assert "matching pods per domain: zone-x=0, zone-000=5, " in text
    shown = text.count("=")
    assert text.endswith(f", +{301 - shown} more")


def test_pod_bound_at_creation_is_not_foreseen() -> None:
    """A pod with spec.nodeName skips the scheduler: its constraints cannot stop it."""
    pod = (
        make_pod().name("web").labels(WEB).annotation(*QUIET).node("a1").constraints([dns()]).obj()
    )
    response = validate(SKEWED, pod, Settings(deny_unschedulable=True))
    assert response == {"uid": response["uid"], "allowed": True}


def test_crowded_domains_come_first() -> None:
    """The domains the pod is ruled out of lead (most pods first), then the emptiest."""
    blocked = Blocked(
        path="spec.topologySpreadConstraints[0]",
        topology_key=ZONE,
        max_skew=1,
        rejected=2,
        candidates=2,
        domains={"a": 3, "b": 0, "c": 4, "d": 1},
        global_min=0,
        min_domains=1,
        crowded=("a", "c"),
    )
    assert blocked.text().endswith("matching pods per domain: c=4, a=3, b=0, d=1")


def replica() -> RawObj:
    """web(dns()) as a ReplicaSet creates it: a controller ownerReference."""
    return (
        make_pod()
        .name("web")
        .labels(WEB)
        .annotation(*QUIET)
        .owner("ReplicaSet", "web-5d4f8")
        .constraints([dns()])
    ).obj()


def answered(cluster: list[RawObj] | None, obj: RawObj, settings: Settings) -> Any:
    ctx = ReviewContext(
        settings=settings,
        server_version=(1, 34),
        snapshot=Snapshot.from_objects(cluster) if cluster is not None else None,
    )
    return answer_review(json.dumps(review(obj)).encode(), "validate", ctx)


@pytest.mark.parametrize(
    ("name", "cluster", "obj", "settings", "outcome", "warnings"),
    [
        ("blocked: warned", SKEWED, web(dns()), Settings(), "blocked", [SKEWED_TEXT]),
        ("a node fits", [node("a1", "a"), node("b1", "b")], web(dns()), Settings(), "checked",
         None),
        ("no node passes the other filters: nothing to say",
         [node("a1", "a", tainted=True)], web(dns()), Settings(), "checked", None),
        # Its warning would reach only the ReplicaSet controller.
        ("a controller's replica without the deny policy: not looked at", SKEWED, replica(),
         Settings(), "skipped", None),
        ("a controller's replica under the deny policy: looked at", SKEWED, replica(),
         Settings(deny_unschedulable=True), "blocked", None),
        ("an ownerReference that is not a controller's: looked at", SKEWED,
         make_pod().name("web").labels(WEB).annotation(*QUIET)
         .owner("ConfigMap", "cm", controller=False)
         .constraints([dns()]).obj(), Settings(), "blocked", [SKEWED_TEXT]),
        ("budget 0 turns foresight off", SKEWED, web(dns()),
         Settings(deny_unschedulable=True, foresight_budget_ms=0), "skipped", None),
        ("no cluster state", None, web(dns()), Settings(), "skipped", None),
        ("no DoNotSchedule constraint: not counted", SKEWED, web(sa()), Settings(), None, None),
        ("not a Pod: not counted", SKEWED, workload("Deployment", web(dns())), Settings(), None,
         None),
    ],
)  # fmt: skip
def test_outcome_of_each_look(
    name: str,
    cluster: list[RawObj] | None,
    obj: RawObj,
    settings: Settings,
    outcome: str | None,
    warnings: list[str] | None,
) -> None:
    """How each look ends (topospread_foresight_total's outcome) and what it answers."""
    answer = answered(cluster, obj, settings)
    assert answer.foresight == outcome
    assert answer.doc["response"].get("warnings") == warnings
    assert answer.doc["response"]["allowed"] is (
        not (settings.deny_unschedulable and outcome == "blocked")
    )


def test_gives_up_at_its_budget_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past policy.foresightBudgetMilliseconds the look stops: allowed, a warning says the
    check did not finish, never a denial; the next look carries on from where it stopped."""
    from webhook.scheduler.framework import budget

    clock = iter(range(0, 10**9, 1))  # each reading: one second later
    monkeypatch.setattr(budget, "_clock", lambda: next(clock))
    settings = Settings(deny_unschedulable=True, foresight_budget_ms=1000)
    answer = answered(SKEWED, web(dns()), settings)
    assert answer.foresight == "over_budget"
    assert answer.doc["response"]["allowed"] is True
    assert answer.doc["response"]["warnings"] == [
        "spec.topologySpreadConstraints: not checked for schedulability by topospread: the "
        "check did not finish within its 1000 ms budget"
    ]
    assert answer.decision == "allowed"
    monkeypatch.setattr(budget, "_clock", lambda: 0)  # time stands still: no budget runs out
    assert answered(SKEWED, web(dns()), settings).foresight == "blocked"


def test_metrics_count_each_outcome() -> None:
    """topospread_foresight_total{outcome} counts the looks /validate made."""
    snapshot = Snapshot.from_objects(SKEWED)
    app = create_app(Settings(), source=StaticSource(snapshot, (1, 34)))
    with app.test_client() as client:
        for obj in (web(dns()), web(dns()), replica(), web(sa())):
            client.post("/validate", json=review(obj))
        text = client.get("/metrics").get_data(as_text=True)
    assert 'topospread_foresight_total{outcome="blocked"} 2.0' in text
    assert 'topospread_foresight_total{outcome="skipped"} 1.0' in text
    assert 'outcome="checked"' not in text


def _with(obj: RawObj, **spec_fields: Any) -> RawObj:
    return {**obj, "spec": {**obj["spec"], **spec_fields}}


@pytest.mark.parametrize(
    "spec_fields",
    [
        {"schedulingGates": [{"name": "example.com/quota"}]},
        {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]},
        {"schedulerName": "volcano"},
    ],
    ids=["gated", "resource claims (DynamicResources not modelled)", "another scheduler's"],
)
def test_a_pod_no_cycle_runs_for_is_skipped(spec_fields: dict[str, Any]) -> None:
    """The same pod the skewed cluster blocks (denied under the policy) is skipped, allowed
    and not warned about when the scheduler runs no cycle for it (placement.not_scheduled)."""
    settings = Settings(deny_unschedulable=True)
    assert answered(SKEWED, web(dns()), settings).foresight == "blocked"
    answer = answered(SKEWED, _with(web(dns()), **spec_fields), settings)
    assert answer.foresight == "skipped"
    assert answer.doc["response"]["allowed"] is True
    assert answer.doc["response"].get("warnings") is None


def test_a_pod_that_preempts_is_schedulable_with_a_warning() -> None:
    """SKEWED with the web pods at priority 0 and the incoming one at 1000: evicting both
    from the crowded zone (a: 0 + 1 - 0 <= 1) resolves the spread, so kube-scheduler
    schedules it; under policy.denyUnschedulable it is allowed, with a warning naming the
    victims' count."""
    cluster = [
        {**o, "spec": {**o["spec"], "priority": 0}} if o["kind"] == "Pod" else o
        for o in SKEWED
    ]
    pod = web(dns())
    pod["spec"]["priority"] = 1000
    response = validate(cluster, pod, Settings(deny_unschedulable=True))
    assert response["allowed"] is True
    assert response["warnings"] == [
        "spec.topologySpreadConstraints: no node fits without preemption: kube-scheduler "
        "would evict 2 lower-priority pod(s) on node a1 to place it"
    ]


def test_a_pod_of_equal_priority_does_not_preempt() -> None:
    """The same pod at the priority of the pods in its way: denied as before."""
    pod = web(dns())
    pod["spec"]["priority"] = 0
    cluster = [
        {**o, "spec": {**o["spec"], "priority": 0}} if o["kind"] == "Pod" else o
        for o in SKEWED
    ]
    response = validate(cluster, pod, Settings(deny_unschedulable=True))
    assert response["allowed"] is False


def grouped(obj: RawObj, group: str = "general") -> RawObj:
    obj["metadata"]["labels"]["karpenter.sh/nodepool"] = group
    return obj


@pytest.mark.parametrize(
    ("cluster", "scale_up"),
    [
        # a1(a, general)[2] b1(b, general, tainted)[0]: a new node of general keeps the
        # group's taint, and in zone a breaks the spread.
        (
            [grouped(node("a1", "a")), grouped(node("b1", "b", tainted=True)), *pods("a1", 2)],
            "spec.topologySpreadConstraints: no new node would help: TaintToleration on 1 "
            "of 2 templates; PodTopologySpread on 1 of 2 templates: the spread allows only "
            "topology.kubernetes.io/zone b (0 matching pod(s)), where a new node fails "
            "TaintToleration",
        ),
        # b1 in its own group "spare", untainted but cordoned: a new node of it helps.
        (
            [
                grouped(node("a1", "a")),
                grouped(make_node().name("b1").hostname().zone("b").unschedulable().obj(), "spare"),
                *pods("a1", 2),
            ],
            "spec.topologySpreadConstraints: fits on a new node of group spare in zone b",
        ),
    ],
    ids=["no new node helps", "a new node of a group helps"],
)
def test_warning_says_whether_a_new_node_would_help(cluster: list[RawObj], scale_up: str) -> None:
    """With node groups, the spread warnings are followed by the scale-up sentence."""
    warnings = validate(cluster, web(dns())).get("warnings", [])
    assert warnings[-1] == scale_up
    assert len(warnings) == 2 and warnings[0].startswith("spec.topologySpreadConstraints[0]: ")
