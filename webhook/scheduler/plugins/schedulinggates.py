"""SchedulingGates (pkg/scheduler/framework/plugins/schedulinggates) and the DynamicResources
marker: the PreEnqueue plugins of the default profile.

PreEnqueue runs before a pod enters the active queue: a pod it rejects is never
scheduled (no Filter, no Score, no PostFilter, so it never preempts), it waits. A
gated pod (spec.schedulingGates non-empty) waits until every gate is removed.

DynamicResources is not modelled (no ResourceClaims, DeviceClasses or ResourceSlices
are read): a pod with spec.resourceClaims is refused here too, with the reason
"not modelled: DynamicResources", so no surface ever places it as if it asked for no
devices.
"""

from __future__ import annotations

from typing import ClassVar

from webhook.api.field import go_quote
from webhook.api.kube import RawObj, spec
from webhook.scheduler.framework.types import SUCCESS, Code, Reads, Status

__all__ = [
    "NOT_MODELLED_DRA",
    "DynamicResources",
    "SchedulingGates",
    "gate_names",
]

# The reason a pod with resourceClaims gets on every surface.
NOT_MODELLED_DRA = "not modelled: DynamicResources"


def gate_names(pod: RawObj) -> list[str]:
    """The names of spec.schedulingGates, in order (an entry without a name counts as "")."""
    gates = spec(pod).get("schedulingGates")
    if not isinstance(gates, list):
        return []
    return [str(g.get("name") or "") if isinstance(g, dict) else "" for g in gates]


class SchedulingGates:
    """PreEnqueue only."""

    name: ClassVar[str] = "SchedulingGates"
    reads: ClassVar[Reads] = Reads(pod_fields=("spec.schedulingGates",))

    def pre_enqueue(self, pod: RawObj) -> Status:
        """Port of scheduling_gates.go: PreEnqueue. The gates print as Go prints a
        []string (%v): "[foo bar]" (a character a terminal would act on is escaped as
        %q escapes it; a valid gate name has none)."""
        gates = gate_names(pod)
        if not gates:
            return SUCCESS
        shown = " ".join(go_quote(g)[1:-1] for g in gates)
        return Status(Code.UNRESOLVABLE, f"waiting for scheduling gates: [{shown}]")


class DynamicResources:
    """What topospread keeps of the DynamicResources plugin: its PreEnqueue, refusing
    every pod that has resource claims, since their allocation is not modelled.

    CAVEAT: upstream's PreEnqueue only waits for the claims to exist; its Filter then
    allocates devices from ResourceSlices (pkg/scheduler/framework/plugins/
    dynamicresources). Refusing here keeps such a pod out of every placement rather
    than placing it where its devices may not be.
    """

    name: ClassVar[str] = "DynamicResources"
    reads: ClassVar[Reads] = Reads(pod_fields=("spec.resourceClaims",))

    def pre_enqueue(self, pod: RawObj) -> Status:
        claims = spec(pod).get("resourceClaims")
        if isinstance(claims, list) and claims:
            return Status(Code.UNRESOLVABLE, NOT_MODELLED_DRA)
        return SUCCESS
