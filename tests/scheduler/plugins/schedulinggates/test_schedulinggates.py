"""SchedulingGates' PreEnqueue on upstream's TestPreEnqueue table
(pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates_test.go), the
DynamicResources refusal, and placement.not_scheduled: which pods no scheduling cycle
is run for, and that place() then evaluates no node.

Not ported: TestIsSchedulableAfterUpdateTargetPodSchedulingGatesEliminated (queueing
hints: the model has no scheduling queue).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_node, make_pod
from webhook.scheduler.config.profiles import resolve_configuration
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import SUCCESS, Code, Status
from webhook.scheduler.placement import NotScheduled, not_scheduled, place
from webhook.scheduler.plugins.schedulinggates import DynamicResources, SchedulingGates
from webhook.scheduler.profile import framework_of

# (name, pod, want)
PRE_ENQUEUE: list[tuple[str, Any, Status]] = [
    ("pod does not carry scheduling gates", make_pod().name("p").obj(), SUCCESS),
    (
        "pod carries scheduling gates",
        make_pod().name("p").scheduling_gates("foo", "bar").obj(),
        Status(Code.UNRESOLVABLE, "waiting for scheduling gates: [foo bar]"),
    ),
]


@pytest.mark.parametrize(
    ("pod", "want"), [c[1:] for c in PRE_ENQUEUE], ids=[c[0] for c in PRE_ENQUEUE]
)
def test_pre_enqueue(pod: Any, want: Status) -> None:
    """TestPreEnqueue."""
    assert SchedulingGates().pre_enqueue(pod) == want


def test_a_gate_name_a_terminal_would_act_on_is_escaped() -> None:
    """A gate name from an unvalidated manifest cannot inject control characters."""
    pod = make_pod().scheduling_gates("a\x1b[2Jb").obj()
    assert SchedulingGates().pre_enqueue(pod).reason == (
        "waiting for scheduling gates: [a\\x1b[2Jb]"
    )


@pytest.mark.parametrize(
    ("pod", "refused"),
    [
        (make_pod().obj(), False),
        (make_pod().resource_claim("gpu").obj(), True),
        ({**make_pod().obj(), "spec": {"containers": [], "resourceClaims": []}}, False),
    ],
    ids=["no claims", "a resource claim", "an empty claim list"],
)
def test_dynamic_resources_refuses_pods_with_claims(pod: Any, refused: bool) -> None:
    status = DynamicResources().pre_enqueue(pod)
    want = Status(Code.UNRESOLVABLE, "not modelled: DynamicResources") if refused else SUCCESS
    assert status == want


# (name, pod, framework or None for "no profile", want)
DEFAULT = framework_of()
NOT_SCHEDULED: list[tuple[str, Any, Any, NotScheduled | None]] = [
    ("an ordinary pod is scheduled", make_pod().obj(), DEFAULT, None),
    (
        "no profile has its schedulerName: another scheduler's",
        make_pod().scheduler_name("volcano").obj(),
        None,
        NotScheduled("OtherScheduler", 'schedulerName "volcano" has no profile here'),
    ),
    (
        "gated",
        make_pod().scheduling_gates("example.com/quota").obj(),
        DEFAULT,
        NotScheduled(
            "SchedulingGated",
            "waiting for scheduling gates: [example.com/quota]",
            "SchedulingGates",
        ),
    ),
    (
        "resource claims",
        make_pod().resource_claim("gpu").obj(),
        DEFAULT,
        NotScheduled("NotModelled", "not modelled: DynamicResources", "DynamicResources"),
    ),
    (
        "gated with claims: SchedulingGates comes first in the profile",
        make_pod().scheduling_gates("g").resource_claim("gpu").obj(),
        DEFAULT,
        NotScheduled("SchedulingGated", "waiting for scheduling gates: [g]", "SchedulingGates"),
    ),
]


@pytest.mark.parametrize(
    ("pod", "framework", "want"),
    [c[1:] for c in NOT_SCHEDULED],
    ids=[c[0] for c in NOT_SCHEDULED],
)
def test_not_scheduled(pod: Any, framework: Any, want: NotScheduled | None) -> None:
    assert not_scheduled(pod, framework) == want


@pytest.mark.parametrize(
    ("why", "text", "json"),
    [
        (
            NOT_SCHEDULED[1][3],
            'not placed by this scheduler: schedulerName "volcano" has no profile here',
            {"reason": "OtherScheduler", "message": 'schedulerName "volcano" has no profile here'},
        ),
        (
            NOT_SCHEDULED[2][3],
            "not placed: gated: waiting for scheduling gates: [example.com/quota]",
            {
                "reason": "SchedulingGated",
                "message": "waiting for scheduling gates: [example.com/quota]",
                "plugin": "SchedulingGates",
            },
        ),
        (
            NOT_SCHEDULED[3][3],
            "not placed: not modelled: DynamicResources",
            {
                "reason": "NotModelled",
                "message": "not modelled: DynamicResources",
                "plugin": "DynamicResources",
            },
        ),
    ],
    ids=["other scheduler", "gated", "DRA"],
)
def test_one_wording_for_every_surface(why: Any, text: str, json: Any) -> None:
    assert why.text() == text
    assert why.to_json() == json


def test_a_schedulername_is_quoted_as_go_quotes_it() -> None:
    pod = make_pod().scheduler_name('we"ird\n').obj()
    assert not_scheduled(pod, None) == NotScheduled(
        "OtherScheduler", 'schedulerName "we\\"ird\\n" has no profile here'
    )


def _profile_without(plugin: str) -> Any:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"preEnqueue": {"disabled": [{"name": plugin}]}},
            }
        ],
    }
    profiles, errors = resolve_configuration(config)
    assert not errors, errors
    return framework_of(profiles[0])


def test_a_profile_without_scheduling_gates_schedules_gated_pods() -> None:
    """The gate is the plugin's: a profile that disables it at preEnqueue runs the pod."""
    pod = make_pod().scheduling_gates("g").obj()
    assert not_scheduled(pod, _profile_without("SchedulingGates")) is None


SNAPSHOT = [make_node().name("n1").obj(), make_node().name("n2").obj()]


@pytest.mark.parametrize(
    "pod",
    [
        make_pod().name("gated").scheduling_gates("g").obj(),
        make_pod().name("claims").resource_claim("gpu").obj(),
    ],
    ids=["gated", "resource claims"],
)
def test_place_runs_no_cycle_for_a_held_pod(pod: Any) -> None:
    """Two empty nodes would take the pod; no node is evaluated, none selected, no
    reason counted: it never reaches Filter, so never PostFilter (preemption) either."""
    decision = place(pod, Snapshot.from_objects(SNAPSHOT))
    assert decision.not_scheduled == not_scheduled(pod, DEFAULT)
    assert (decision.nodes, decision.selected_node, decision.reasons) == ([], None, {})
    assert decision.to_json()["notScheduled"] == decision.not_scheduled.to_json()
    ungated = {**pod, "spec": {"containers": pod["spec"]["containers"]}}
    assert place(ungated, Snapshot.from_objects(SNAPSHOT)).selected_node == "n1"
