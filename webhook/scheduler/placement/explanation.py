"""explain: whether a pod's spreading is what leaves it no node, the /validate
foresight's question, kept cheap on a big cluster (the other filters' outcomes as
earlier decisions remembered them, PodTopologySpread's Filter once per node class).
"""

from __future__ import annotations

from itertools import compress
from typing import Any

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.budget import checkpoint
from webhook.scheduler.framework.memo import memo_of
from webhook.scheduler.framework.runtime.filter import kept_with, outcomes_of, outcomes_view
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import FILTER_OUTCOMES
from webhook.scheduler.placement.cycle import default_framework, spread_plugin
from webhook.scheduler.placement.results import Unschedulable
from webhook.scheduler.plugins.podtopologyspread.common import DEFAULT_ARGS
from webhook.scheduler.plugins.podtopologyspread.common import PLUGIN_NAME as SPREAD
from webhook.scheduler.plugins.podtopologyspread.explain import blocked_constraints
from webhook.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    filter_classes,
    filter_keys,
)
from webhook.scheduler.profile import Framework


def explain(
    pod: RawObj,
    snapshot: Snapshot,
    args: SpreadArgs = DEFAULT_ARGS,
    *,
    framework: Framework | None = None,
) -> Unschedulable | None:
    """Whether the pod's spreading is what leaves it no node.

    None when some node passes every filter, when no node passes the other filters
    (spreading is not the cause), or when the pod has no DoNotSchedule constraint
    (nor a default one) or constraints PreFilter refuses (validation reports those).

    Kept cheap for the /validate foresight on a big cluster: the other filters'
    outcomes come from what earlier decisions remembered (filter_outcomes: only
    nodes that changed are judged again), the constraints' counts from the
    snapshot's per-selector indexes, and Filter runs once per node class. Under
    a time budget (framework.budget.within) it raises OutOfTime when the budget
    runs out; the outcomes judged so far are kept for the next call.
    """
    fw = framework if framework is not None else default_framework(args)
    spread = spread_plugin(fw)
    if spread is None or SPREAD not in fw.filter_names:
        return None
    prepared = fw.filters.prepare(pod, snapshot)
    checkpoint()
    table = snapshot.node_table()
    spec, outcome_ids = outcomes_of(prepared, snapshot, table)

    # Outcome 0: every other filter passes; kept with the spec, as the node classes
    # such nodes fall in (per topology keys) below.
    def passing_others() -> tuple[list[bool], bool, dict[Any, Any]]:
        passes = [outcome == 0 for outcome in outcome_ids]
        return passes, any(passes), {}

    others_pass, any_passes, candidate_classes_of = kept_with(
        spec, "explain", outcome_ids, passing_others
    )
    if not any_passes or SPREAD not in prepared.state:
        return None
    checkpoint()
    prepared.state[FILTER_OUTCOMES] = outcomes_view(prepared, table, spec, outcome_ids)
    state = spread.pre_filter_state(prepared.state)
    if not isinstance(state, PreFilterState) or not state.constraints:
        return None
    checkpoint()
    keys = filter_keys(state)
    classes = memo_of(snapshot).node_classes(keys, (False,) * len(keys), table)
    verdicts = filter_classes(state, keys, classes.values)
    known = candidate_classes_of.get(keys)
    if known is None or known[0] is not classes.of_node:
        known = candidate_classes_of[keys] = (
            classes.of_node,
            set(compress(classes.of_node, others_pass)),
        )
    if any(verdicts[k].ok for k in known[1]):
        return None
    candidates = list(compress(table.infos, others_pass))
    return Unschedulable(len(candidates), blocked_constraints(state, candidates))
