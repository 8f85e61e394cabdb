"""Unschedulable foresight: does a created Pod's DoNotSchedule spreading leave it nowhere to go?

/validate sees the Pod as it will be stored (defaults injected, selectors merged).
`foresee` places it against the current cluster state; when some nodes pass every
other filter but each of them is ruled out by the pod's DoNotSchedule constraints,
the answer names each constraint that rules nodes out (its field path) with the
matching pods per domain it counted. That is a warning, or a denial under
`policy.denyUnschedulable: true`. A warning is followed by one more: whether a new
node of some node group would take the pod (scheduler.scaleup, docs/pending.md).

A pod no node can take for another reason (no node at all, taints, resources, node
affinity) is not reported: the constraints are not what stops it. Nor is a pod that
would preempt (DefaultPreemption finds a node where evicting lower-priority pods makes
room): kube-scheduler schedules it, so it gets a warning naming how many pods it would
evict, never a denial. A pod the scheduler never runs a cycle for (another
scheduler's schedulerName, scheduling gates, resource claims: placement.not_scheduled)
is skipped: nothing is placed for it now.

Only Pods at CREATE: a workload's template would be checked against a state that
will have changed by the time its pods exist, with replicas placed one after the
other; docs/admission.md says so.

Only where the answer can change something: under policy.denyUnschedulable every
such Pod is checked (the answer may deny it); without it the answer is a warning,
which reaches only the client that sent the request, so a Pod a controller creates
(a controller ownerReference: a ReplicaSet's, a Job's, a StatefulSet's replicas) is
not checked, its warning having nobody to read it.

Never blocks on its own trouble: without a snapshot nothing is checked; when the
model raises, a warning says the check did not run; past its time budget
(policy.foresightBudgetMilliseconds) it gives up, saying so in a warning, and
the model keeps what it worked out for the next review.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import RawObj, as_created, controller_of
from webhook.api.pods import pod_key
from webhook.config import Settings
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement import (
    ConstraintBlock,
    OutOfTime,
    Preemption,
    defaults_for_args,
    explain,
    framework_of,
    not_scheduled,
    place,
    warm,
    within,
)
from webhook.scheduler.scaleup import Pending, diagnose, node_groups

__all__ = [
    "OUTCOMES",
    "Blocked",
    "Foresight",
    "blocked_constraints",
    "denial_status",
    "foresee",
    "prime",
    "scale_up_warning",
]

log = logging.getLogger("topospread.foresight")

# Room for the domain list inside kube-apiserver's 256-rune cap per warning.
_WARNING_RUNES = 256


@dataclass(frozen=True)
class Blocked(ConstraintBlock):
    """One DoNotSchedule constraint that rules out nodes the other filters accept (the
    scheduler's ConstraintBlock, candidates being the nodes passing every other filter),
    with its field path: spec.topologySpreadConstraints[i], or
    podTopologySpread.defaultConstraints[i] for a scheduler default."""

    path: str = ""

    def text(self) -> str:
        """The warning (and denial cause) for this constraint, at most 256 runes."""
        head = (
            f"{self.path}: no node fits: maxSkew {self.max_skew} over {self.topology_key} "
            f"(DoNotSchedule) rules out {self.rejected} of {self.candidates} node(s) passing "
            "the other filters"
        )
        if len(self.domains) < self.min_domains:
            head += f" ({len(self.domains)} eligible domain(s) < minDomains {self.min_domains})"
        head += "; matching pods per domain: "
        # Where the pod cannot go (most pods first), then the rest from the emptiest:
        # the two ends of the skew.
        crowded = sorted(
            (d for d in set(self.crowded) if d in self.domains),
            key=lambda d: (-self.domains[d], d),
        )
        others = sorted(
            (kv for kv in self.domains.items() if kv[0] not in self.crowded),
            key=lambda kv: (kv[1], kv[0]),
        )
        ordered = [f"{d}={self.domains[d]}" for d in crowded] + [f"{d}={n}" for d, n in others]
        shown: list[str] = []
        for i, piece in enumerate(ordered):
            left = len(ordered) - i - 1
            body = ", ".join([*shown, piece]) + (f", +{left} more" if left else "")
            if len(head) + len(body) > _WARNING_RUNES:
                break
            shown.append(piece)
        more = len(ordered) - len(shown)
        return head + (", ".join([*shown, f"+{more} more"] if more else shown) or "none")


# What one look ended in (topospread_foresight_total's label): checked (some node
# takes the pod, or none passes the other filters: nothing to say), blocked (its
# DoNotSchedule constraints leave it no node), skipped (its answer could change
# nothing, there is no cluster state, or no scheduling cycle runs for the pod),
# over_budget, error.
OUTCOMES = ("checked", "blocked", "skipped", "over_budget", "error")


@dataclass(frozen=True)
class Foresight:
    """What /validate adds: warnings, or a denial Status when the policy denies; and
    how the look ended (an OUTCOMES value), None when the object is not a Pod
    foresight looks at."""

    warnings: list[str] = field(default_factory=list)
    denial: RawObj | None = None
    failed: bool = False
    outcome: str | None = None


def _dns_paths(pod: RawObj, count: int) -> list[str]:
    """The field path of each DoNotSchedule constraint the model uses, in its order."""
    spec = pod.get("spec")
    own = spec.get("topologySpreadConstraints") if isinstance(spec, dict) else None
    prefix = "spec.topologySpreadConstraints"
    if not isinstance(own, list) or not own:
        own, prefix = [], "podTopologySpread.defaultConstraints"
    paths = [
        f"{prefix}[{i}]"
        for i, c in enumerate(own)
        if isinstance(c, dict) and c.get("whenUnsatisfiable") == "DoNotSchedule"
    ]
    # Scheduler defaults (the pod has none): their order is the config's.
    while len(paths) < count:
        paths.append(f"{prefix}[{len(paths)}]")
    return paths[:count]


def _has_hard_constraint(pod: RawObj, settings: Settings) -> bool:
    """Cheap first look: only a DoNotSchedule constraint (the pod's, or a default
    when it has none) can rule nodes out, so without one nothing is placed."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or spec.get("nodeName"):
        return False  # bound at creation: no scheduler, kubelet admits it anyway
    own = spec.get("topologySpreadConstraints")
    if not isinstance(own, list) or not own:
        own = list(defaults_for_args(settings.spread))
    return any(isinstance(c, dict) and c.get("whenUnsatisfiable") == "DoNotSchedule" for c in own)


def _answer_matters(pod: RawObj, settings: Settings) -> bool:
    """Whether the answer can change anything: a denial can; a warning only when a
    client that shows it sent the pod, not a controller creating its replicas."""
    if settings.deny_unschedulable:
        return True
    return controller_of(pod) is None


def blocked_constraints(pod: RawObj, snapshot: Any, settings: Settings) -> list[Blocked]:
    """The DoNotSchedule constraints that leave the pod no node, [] when it has one,
    as the scheduler's placement.explain() attributes them.

    Raises whatever the model raises; `foresee` catches.
    """
    framework = settings.framework_for(pod)
    if framework is None:
        return []  # another scheduler's pod: kube-scheduler never places it
    why = explain(pod, snapshot, framework=framework)
    if why is None:
        return []
    paths = _dns_paths(pod, max((b.index for b in why.blocked), default=-1) + 1)
    return [Blocked(**vars(b), path=paths[b.index]) for b in why.blocked]


def would_preempt(pod: RawObj, snapshot: Any, settings: Settings) -> Preemption | None:
    """The preemption kube-scheduler would make for a pod no node takes, None when it
    would make none (raises whatever the model raises; `foresee` catches)."""
    framework = settings.framework_for(pod)
    if framework is None:
        return None
    return place(pod, snapshot, framework=framework).preemption


def preemption_warning(preemption: Preemption) -> str:
    """The warning for a pod that is schedulable only by preemption (at most 256 runes)."""
    text = (
        "spec.topologySpreadConstraints: no node fits without preemption: kube-scheduler "
        f"would evict {len(preemption.victims)} lower-priority pod(s) on node "
    )
    room = _WARNING_RUNES - len(text) - len(" to place it")
    node = preemption.node if len(preemption.node) <= room else preemption.node[: room - 3] + "..."
    return text + node + " to place it"


def denial_status(name: str, blocked: list[Blocked]) -> RawObj:
    """apierrors.NewForbidden for pods: 403 Forbidden, as ResourceQuota denies a pod
    the current state cannot take (docs/admission.md explains the choice)."""
    reasons = "; ".join(b.text() for b in blocked)
    return {
        "status": "Failure",
        "message": f'pods "{name}" is forbidden: unschedulable in the current cluster '
        f"state (policy.denyUnschedulable): {reasons}",
        "reason": "Forbidden",
        "details": {
            "name": name,
            "kind": "pods",
            "causes": [
                {
                    "reason": "FieldValueForbidden",
                    "field": b.path,
                    "message": b.text()[len(b.path) + 2 :],
                }
                for b in blocked
            ],
        },
        "code": 403,
    }


def foresee(
    pod: RawObj, snapshot: Any, settings: Settings, *, name: str = "", namespace: str = ""
) -> Foresight:
    """Warnings (or a denial) for a Pod being created. Never raises."""
    if pod.get("kind") != "Pod" or not _has_hard_constraint(pod, settings):
        return Foresight()
    budget = settings.foresight_budget_ms
    if snapshot is None or budget == 0 or not _answer_matters(pod, settings):
        return Foresight(outcome="skipped")
    if not_scheduled(pod, settings.framework_for(pod)) is not None:
        return Foresight(outcome="skipped")
    created = as_created(pod, namespace)
    try:
        with within(budget / 1000):
            blocked = blocked_constraints(created, snapshot, settings)
            preemption = would_preempt(created, snapshot, settings) if blocked else None
    except OutOfTime:
        log.info("unschedulable foresight for pod %r gave up after %d ms", name, budget)
        return Foresight(
            [
                "spec.topologySpreadConstraints: not checked for schedulability by topospread: "
                f"the check did not finish within its {budget} ms budget"
            ],
            outcome="over_budget",
        )
    except Exception:
        log.exception("unschedulable foresight failed for pod %r", name)
        return Foresight(
            [
                "spec.topologySpreadConstraints: not checked for schedulability by topospread "
                "because of an internal error in the cluster model"
            ],
            failed=True,
            outcome="error",
        )
    if not blocked:
        return Foresight(outcome="checked")
    if preemption is not None:
        return Foresight([preemption_warning(preemption)], outcome="checked")
    if settings.deny_unschedulable:
        return Foresight(denial=denial_status(name, blocked), outcome="blocked")
    warnings = [b.text() for b in blocked]
    scale_up = scale_up_warning(created, snapshot, settings, budget / 1000)
    if scale_up is not None:
        warnings.append(scale_up)
    return Foresight(warnings, outcome="blocked")


def scale_up_warning(
    pod: RawObj, snapshot: Snapshot, settings: Settings, seconds: float
) -> str | None:
    """The warning saying whether a new node of some group would take the pod
    (scheduler.scaleup; the blocking filters by name, the spread warnings before it
    give the reasons), at most 256 runes; None when no node is in a node group, or
    the model gave up within `seconds` or failed (the spread warnings stand without it).

    CAVEAT: the diagnosis works on a copy of the cluster state, which the time budget
    cannot cut short (about 50 ms for 150,000 pods); only the filters it then runs
    are bounded.
    """
    framework = settings.framework_for(pod)
    if framework is None:
        return None
    try:
        with within(seconds):
            groups = node_groups(snapshot, settings.node_group_labels)
            if not groups.templates:
                return None  # no node group: nothing an autoscaler would add
            ref = pod_key(pod)
            line = (
                diagnose([Pending(ref, pod, framework)], snapshot, groups)
                .verdicts[ref]
                .line(reasons=False)
            )
    except OutOfTime:
        return None
    except Exception:
        log.exception("scale-up diagnosis failed for pod %r", pod_key(pod))
        return None
    text = f"spec.topologySpreadConstraints: {line}"
    return text if len(text) <= _WARNING_RUNES else text[: _WARNING_RUNES - 3] + "..."


def prime(snapshot: Snapshot, settings: Settings) -> None:
    """Build, before the first review, what the model reads for every pod whatever the
    pod (placement.warm, for each scheduler profile of `settings`), so the first
    reviews do not spend their budget on it. Called where the state is built: a
    snapshot file before the workers fork, a live source before it reports synced."""
    for profile in settings.scheduler:
        warm(snapshot, framework_of(profile))
