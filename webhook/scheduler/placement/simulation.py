"""simulate: copies of a pod placed one after another on a private copy of the
snapshot, each seeing the ones before; `settle`, where one decided pod ends up.
"""

from __future__ import annotations

from webhook.api.kube import RawObj, as_dict, pod_namespace
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.memo import adopt
from webhook.scheduler.framework.preemption import Preemption
from webhook.scheduler.framework.sampling import Sampler
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.placement.cycle import (
    default_framework,
    place,
    selected_node,
    spread_plugin,
)
from webhook.scheduler.placement.results import Placement, Simulation
from webhook.scheduler.plugins.defaultpreemption import carry_on
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS, distribution
from webhook.scheduler.profile import Framework


def settle(decision: Placement, snapshot: Snapshot) -> tuple[str | None, tuple[str, ...]]:
    """Where a decided pod ends up, on `snapshot` (a private copy the caller then binds
    the pod in): (its selected node, ()); after a preemption (its nominated node, the
    victims, "namespace/name"), the victims gone from `snapshot`: the scheduler binds it
    there in a later cycle, once they left; (None, ()) when it stays pending."""
    if decision.preemption is not None:
        return carry_on(snapshot, decision.preemption), decision.preemption.victims
    return decision.selected_node, ()


def _copy_named(pod: RawObj, name: str) -> RawObj:
    return {**pod, "metadata": {**as_dict(pod.get("metadata")), "name": name}}


def simulate(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    replicas: int = 1,
    *,
    framework: Framework | None = None,
    sampler: Sampler | None = None,
) -> Simulation:
    """Place `replicas` copies of `pod` one by one, each seeing the ones before.

    Copies after the first get distinct names (name-2, name-3, ...). The
    caller's snapshot is left untouched. `sampler`: the run the copies' cycles
    belong to (see place()), its start index and draws carried from copy to copy.
    """
    if replicas < 1:
        raise ValueError("replicas must be at least 1")
    ns = pod_namespace(pod)
    meta = as_dict(pod.get("metadata"))
    base = meta.get("name") or str(meta.get("generateName") or "pod").rstrip("-") or "pod"
    fw = framework if framework is not None else default_framework(args)
    # The first copy is decided on the caller's snapshot (deciding changes no object of
    # it, and the copy below holds the same until the first copy binds): what that
    # decision learns (filter outcomes, score classes) is kept with the caller's
    # snapshot, so every later simulation of it (another workload, another --runs run)
    # starts warm instead of working it out again on its own copy.
    first: Placement = place(_copy_named(pod, base), snapshot, framework=fw, sampler=sampler)
    work = snapshot.copy()
    adopt(work, snapshot)
    placements: list[str | None] = []
    preemptions: list[Preemption | None] = []
    for i in range(replicas):
        name = base if i == 0 else f"{base}-{i + 1}"
        while i > 0 and work.has_pod(ns, name):
            name += "-x"
        copy = _copy_named(pod, name)
        # The first copy's whole Placement is reported; the others need only the node.
        decision = first if i == 0 else None
        chosen = (
            selected_node(copy, work, framework=fw, sampler=sampler)
            if decision is None
            else decision
        )
        if isinstance(chosen, Placement):
            node, _ = settle(chosen, work)
            preemption = chosen.preemption
        else:
            node, preemption = chosen, None
        placements.append(node)
        preemptions.append(preemption)
        if node is not None:
            work.add_pod(copy, node)
    spread = spread_plugin(fw)
    args = spread.args if spread is not None else DEFAULT_ARGS
    return Simulation(placements, first, distribution(pod, work, args), preemptions)
