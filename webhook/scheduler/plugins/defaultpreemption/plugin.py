"""DefaultPreemption, the PostFilter of every default profile: which pods a pod that
fits nowhere would evict, and where.

Port of kube-scheduler's plugins/defaultpreemption/default_preemption.go (New,
calculateNumCandidates, GetOffsetAndNumCandidates, SelectVictimsOnNode,
PodEligibleToPreemptOthers, isPreemptionAllowed, podTerminatingByPreemption,
filterPodsWithPDBViolation); the Evaluator it hands these to is
framework/preemption.py.

The offset of the first node dry-run is 0, where upstream draws it at random
(rand.Int31n over the potential nodes) to spread preemptions over the cluster: a
fixed offset gives one of the answers upstream can give, the same on every run,
so a report and its re-run agree; a sampled run (framework/sampling.py) draws it from
its seed as upstream does. CAVEAT: on a cluster with more potential nodes than the
number of candidates dry-run (10 % of them, at least 100), upstream may nominate a
node past those.

Not modelled (CAVEAT): workload-aware and pod-group preemption (PodGroups are
alpha), async preemption's PreEnqueue (it changes when, not what), and the
IsEligiblePod / MoreImportantPod hooks an out-of-tree build may replace (their
defaults are used).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from webhook.api.kube import RawObj, as_dict, meta, pod_labels, pod_namespace
from webhook.api.labels import compile_selector, selector_error
from webhook.scheduler.config.types import DefaultPreemptionArgs
from webhook.scheduler.config.validation import validate_default_preemption_args
from webhook.scheduler.framework.preemption import (
    FAILS,
    PDB_KIND,
    PREEMPT_NEVER,
    PRIORITY_CLASS_KIND,
    Handle,
    pod_start_time,
    resolve_priority,
)
from webhook.scheduler.framework.snapshot import DISRUPTION_TARGET, NodeInfo, Removal, Snapshot
from webhook.scheduler.framework.types import Code, CycleState, Reads, Status

__all__ = ["NAME", "DefaultPreemption", "filter_pods_with_pdb_violation"]

NAME = "DefaultPreemption"
# The reason kube-scheduler gives the condition it sets on a pod it preempts.
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
NO_VICTIMS = Status(Code.UNRESOLVABLE, "No preemption victims found for incoming pod")


def pod_terminating_by_preemption(pod: RawObj) -> bool:
    """Port of default_preemption.go: podTerminatingByPreemption."""
    if meta(pod).get("deletionTimestamp") is None:
        return False
    for condition in as_dict(pod.get("status")).get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


def filter_pods_with_pdb_violation(
    pods: Sequence[RawObj], pdbs: Sequence[RawObj]
) -> tuple[list[RawObj], list[RawObj]]:
    """(the pods whose eviction would violate a PodDisruptionBudget, the others), each in
    the order given. Each budget's status.disruptionsAllowed is spent pod by pod; a pod
    already listed in its status.disruptedPods does not spend it.

    Port of default_preemption.go: filterPodsWithPDBViolation.
    """
    if not pdbs:
        return [], list(pods)
    allowed: list[int] = []
    selectors = []
    for pdb in pdbs:
        value = as_dict(pdb.get("status")).get("disruptionsAllowed")
        allowed.append(value if isinstance(value, int) else 0)
        selector = as_dict(pdb.get("spec")).get("selector")
        # A nil or empty selector, or one that does not parse, matches nothing.
        usable = (
            isinstance(selector, dict)
            and selector_error(selector) is None
            and bool(selector.get("matchLabels") or selector.get("matchExpressions"))
        )
        selectors.append(compile_selector(selector) if usable else None)
    violating: list[RawObj] = []
    non_violating: list[RawObj] = []
    for pod in pods:
        violated = False
        labels = pod_labels(pod)
        if labels:
            ns, name = pod_namespace(pod), meta(pod).get("name")
            for i, pdb in enumerate(pdbs):
                matches = selectors[i]
                if (meta(pdb).get("namespace") or "default") != ns or matches is None:
                    continue
                if not matches(labels):
                    continue
                disrupted = as_dict(as_dict(pdb.get("status")).get("disruptedPods"))
                if name in disrupted:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def _same(entries: Sequence[object], state: CycleState) -> bool:
    """Whether `state` holds the very objects `entries` listed (its values, in order)."""
    return len(entries) == len(state) and all(
        a is b for a, b in zip(entries, state.values(), strict=True)
    )


class _NodeVictims:
    """What select_victims_on_node works out of a node before changing anything, for
    one preemptor priority: valid while the node's generation is the one read.

    node, generation: the NodeInfo read and its generation then; preemptor: the
    priority the potential victims are lower than; potential: those pods, in the
    node's order; amounts: id(pod) -> Snapshot.requests_of(pod), and removal: them
    all as one NodeInfo.without_removal takes, None until asked; ordered: the
    potential victims most important first, None until asked."""

    __slots__ = ("node", "generation", "preemptor", "potential", "amounts", "removal", "ordered")

    def __init__(self, node: NodeInfo, preemptor: int, potential: tuple[RawObj, ...]) -> None:
        self.node = node
        self.generation = node.generation
        self.preemptor = preemptor
        self.potential = potential
        self.amounts: dict[int, tuple[Mapping[str, int], Mapping[str, int]]] | None = None
        self.removal: Removal | None = None
        self.ordered: list[RawObj] | None = None


class DefaultPreemption:
    """The plugin (preemption.Interface): its args, and the decisions the Evaluator asks
    of it; `handle` runs the profile's filters (set per cycle by `for_cycle`)."""

    name: ClassVar[str] = NAME
    reads: ClassVar[Reads] = Reads(
        kinds=(PDB_KIND, PRIORITY_CLASS_KIND),
        existing_pod_fields=(
            "spec.priority",
            "spec.priorityClassName",
            "spec.preemptionPolicy",
            "metadata.deletionTimestamp",
            "status.startTime",
            "status.conditions",
            "status.nominatedNodeName",
        ),
        pod_fields=("spec.priority", "spec.priorityClassName", "spec.preemptionPolicy"),
    )

    def __init__(self, args: DefaultPreemptionArgs | None = None) -> None:
        """Port of default_preemption.go: New (the args validated)."""
        self.args = args if args is not None else DefaultPreemptionArgs()
        problems = validate_default_preemption_args(self.args)
        if problems:
            raise ValueError("; ".join(problems))
        # Node name -> its potential victims as last worked out (_NodeVictims), kept
        # across decisions: a node's generation changes with any pod on it, and only
        # nodes whose pods all store their priority are kept (a PriorityClass change
        # moves no generation). CAVEAT: one entry per node name ever dry-run, a
        # deleted node's kept until the process ends.
        self.victims_memo: dict[str, _NodeVictims] = {}

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """Port of default_preemption.go: calculateNumCandidates (int32 arithmetic)."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """GetOffsetAndNumCandidates with offset 0 (see the module docstring)."""
        return 0, self.calculate_num_candidates(num_nodes)


class CyclePreemption:
    """DefaultPreemption for one pod's cycle: the plugin with the handle that runs the
    profile's filters and the snapshot's priorities (preemption.Interface)."""

    def __init__(
        self,
        plugin: DefaultPreemption,
        handle: Handle,
        shortcuts: bool = True,
        offset: Callable[[int], int] | None = None,
    ) -> None:
        """shortcuts: take the exact shortcuts of select_victims_on_node (a node that
        fails with its victims gone told from the state-only plugins; a reprieve that
        changes only the node; the node's potential victims remembered across
        decisions, DefaultPreemption.victims_memo; the copy made without them,
        NodeInfo.without); False runs every step as upstream does (the property tests'
        reference). offset: draws the first node dry-run from the
        number of potential nodes, as upstream's rand.Int31n (a sampled run's); None:
        offset 0 (see the module docstring)."""
        self.offset = offset
        self.plugin = plugin
        self.handle = handle
        self.shortcuts = shortcuts
        self.snapshot: Snapshot = handle.snapshot
        self._priorities: dict[int, int] = {}

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Port of default_preemption.go: GetOffsetAndNumCandidates (the offset drawn
        only in a sampled run)."""
        offset, num = self.plugin.get_offset_and_num_candidates(num_nodes)
        if self.offset is not None:
            offset = self.offset(num_nodes)
        return offset, num

    def priority(self, pod: RawObj) -> int:
        """A pod's priority (resolve_priority), remembered per pod object this cycle."""
        stored = pod["spec"].get("priority")
        if type(stored) is int:  # as the API server stores it: nothing to resolve
            return stored
        hit = self._priorities.get(id(pod))
        if hit is None:
            hit = self._priorities[id(pod)] = resolve_priority(pod, self.snapshot)[0]
        return hit

    def _potential_victims(self, node: NodeInfo, preemptor: int) -> _NodeVictims:
        """_lower_priority(node.pods, preemptor) with what is worked out of it later,
        remembered in the plugin's victims_memo while the node's generation holds."""
        memo = self.plugin.victims_memo
        hit = memo.get(node.name)
        if (
            hit is not None
            and hit.node is node
            and hit.generation == node.generation
            and hit.preemptor == preemptor
        ):
            return hit
        stored = all(type(p["spec"].get("priority")) is int for p in node.pods)
        # A tuple: the plugins may remember what they read of it (it never changes).
        potential = tuple(self._lower_priority(node.pods, preemptor))
        entry = _NodeVictims(node, preemptor, potential)
        if stored:
            memo[node.name] = entry
        return entry

    def _lower_priority(self, pods: Sequence[RawObj], preemptor: int) -> list[RawObj]:
        """The pods isPreemptionAllowed lets `preemptor` evict, in their order: those of
        lower priority (`priority`, with the stored value read inline: this runs for
        every pod of every node dry-run)."""
        out = []
        for p in pods:
            value = p["spec"].get("priority")
            if type(value) is not int:
                value = self.priority(p)
            if value < preemptor:
                out.append(p)
        return out

    def is_preemption_allowed(self, victim: RawObj, preemptor_priority: int) -> bool:
        """Port of default_preemption.go: isPreemptionAllowed (IsEligiblePod: always)."""
        return self.priority(victim) < preemptor_priority

    def pod_eligible_to_preempt_others(
        self, pod: RawObj, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Port of default_preemption.go: PodEligibleToPreemptOthers."""
        priority, policy = resolve_priority(pod, self.snapshot)
        if policy == PREEMPT_NEVER:
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = as_dict(pod.get("status")).get("nominatedNodeName")
        if isinstance(nominated, str) and nominated:
            if (
                nominated_node_status is not None
                and nominated_node_status.code is Code.UNRESOLVABLE
            ):
                return True, ""
            info = self.snapshot.nodes.get(nominated)
            if info is not None:
                for p in info.pods:
                    if self.is_preemption_allowed(p, priority) and pod_terminating_by_preemption(p):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def _sorted(self, pods: Sequence[RawObj]) -> list[RawObj]:
        """Most important first: higher priority, then the earlier start time
        (util.MoreImportantPod as a sort key; sort.Slice is not stable, this sort is:
        equal pods keep the node's order)."""
        priority = self.priority
        return sorted(pods, key=lambda p: (-priority(p), pod_start_time(p)))

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: RawObj,
        node: NodeInfo,
        pdbs: Sequence[RawObj],
        exact: bool = True,
    ) -> tuple[list[RawObj], int, Status]:
        """The fewest pods to evict from `node` (left as it is: a copy is changed) for `pod`
        to fit: every lower-priority pod removed, then each put back, most important
        first (PodDisruptionBudget-violating ones before the others), and kept when the
        pod still fits. (victims, how many violate a budget, Success) or the failure;
        with `exact` False, FAILS for a node the handle tells fails with every potential
        victim removed (fails_without), before any copy is made.

        Port of default_preemption.go: SelectVictimsOnNode.
        """
        handle, snapshot = self.handle, self.snapshot
        memo: _NodeVictims | None = None
        potential: Sequence[RawObj]
        if self.shortcuts:
            # Remembered across decisions while the node is unchanged (victims_memo).
            memo = self._potential_victims(node, self.priority(pod))
            potential = memo.potential
        else:
            potential = self._lower_priority(node.pods, self.priority(pod))

        if not potential:
            return [], 0, NO_VICTIMS
        if not exact and self.shortcuts and handle.fails_without(state, pod, node, potential):
            return [], 0, FAILS
        if memo is not None:
            if memo.amounts is None or memo.removal is None:
                memo.amounts = {id(p): snapshot.requests_of(p) for p in potential}
                memo.removal = Removal.of(potential, list(memo.amounts.values()))
            amounts = memo.amounts
            # The copy made with the potential victims already gone (NodeInfo.without).
            node = node.without_removal(memo.removal)
        else:
            amounts = {id(p): snapshot.requests_of(p) for p in potential}
            node = node.snapshot()  # the dry run changes a copy (upstream copies it first)
            node.remove_pods(potential, list(amounts.values()))

        def remove(p: RawObj) -> Status:
            node.remove_pod(p, *amounts[id(p)])
            return handle.run_pre_filter_extension_remove_pod(state, pod, p, node)

        def add(p: RawObj) -> Status:
            node.add_pod(p, *amounts[id(p)])
            return handle.run_pre_filter_extension_add_pod(state, pod, p, node)

        # Every potential victim removed: the node (above) and the plugins' state at once.
        entries = list(state.values())
        status = handle.run_pre_filter_extension_remove_pods(state, pod, potential, node)
        if not status.ok:
            return [], 0, status
        # No victim counts in any plugin's PreFilter state (types.PreFilterExtensions:
        # then adding or removing any one of them leaves every state as it is): the
        # reprieve changes only the node, and runs only the filters that read it.
        untouched = self.shortcuts and _same(entries, state)
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if not status.ok:
            return [], 0, status
        if memo is not None:
            if memo.ordered is None:
                memo.ordered = self._sorted(potential)
            potential = memo.ordered
        else:
            potential = self._sorted(potential)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[RawObj] = []
        num_violating = 0

        checks = handle.node_filters(node) if untouched else None
        if checks is not None:
            # The reprieve loop below, with only the node changing: its filters alone.
            for i, p in enumerate((*violating, *non_violating)):
                amount = amounts[id(p)]
                node.add_pod(p, *amount)
                for check in checks:
                    if not check(state, pod, node).ok:
                        node.remove_last(p, *amount)
                        victims.append(p)
                        num_violating += i < len(violating)
                        break
            if violating and non_violating:
                victims = self._sorted(victims)
            return victims, num_violating, Status()

        def reprieve(p: RawObj) -> bool | Status:
            if untouched:
                node.add_pod(p, *amounts[id(p)])
                fits = handle.fits_with_nominated_pods(state, pod, node, True)
                if not fits:
                    node.remove_pod(p, *amounts[id(p)])
                    victims.append(p)
                return fits
            before = list(state.values())
            status = add(p)
            if not status.ok:
                return status
            # Most victims count in no plugin's PreFilter state (the extensions replace
            # a state they change, never edit it): only the node's sums then changed.
            unchanged = self.shortcuts and _same(before, state)
            fits = handle.fits_with_nominated_pods(state, pod, node, unchanged)
            if not fits:
                status = remove(p)
                if not status.ok:
                    return status
                victims.append(p)
            return fits

        for p in violating:
            fits = reprieve(p)
            if isinstance(fits, Status):
                return [], 0, fits
            if not fits:
                num_violating += 1
        for p in non_violating:
            fits = reprieve(p)
            if isinstance(fits, Status):
                return [], 0, fits
        if violating and non_violating:
            victims = self._sorted(victims)
        return victims, num_violating, Status()
