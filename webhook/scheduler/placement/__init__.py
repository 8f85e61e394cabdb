"""The scheduler's one public face: where would kube-scheduler put this pod?

`place` runs one scheduling cycle (schedule_one: find_nodes_that_fit_pod, every
filter plugin on every node with no short-circuit so every reason shows;
prioritize_nodes, the weighted scores of the feasible nodes; select_host, the highest
sum, ties broken by name) and reports it as a Placement; `feasible_nodes` is the
filter phase alone; `explain` says whether the pod's spreading is what leaves it no
node (the /validate foresight); `warm` builds what every decision reads; `simulate`
places copies one after another on a private copy of the snapshot.

The package's files, each importing only the ones before it (tests/test_layering.py
holds it): results.py (the result types), cycle.py (place, selected_node,
feasible_nodes, not_scheduled, warm), then explanation.py (explain), simulation.py
(simulate, settle) and queries.py (the plugins' answers the audit asks for). Code
outside the package imports this face only. No file is named after a function it
exports (`simulate`, `explain`): the package attribute is the function.

The answer is the one a node-by-node evaluation gives (tests/scheduler/
test_properties.py holds it to that, for the spread-only model and the default
profile), but the work is done once per group of nodes that must get the same answer,
so a decision over thousands of nodes stays cheap. Where each part of that lives:
- framework/runtime/filter.py: the node-wise filters' outcomes remembered per pod
  spec, judged again only for the nodes the snapshot's journal says changed, under
  the time budget;
- framework/runtime/grouping.py: new outcomes judged once per group of nodes alike
  for every filter;
- schedule_one.py: class-wise filters (PodTopologySpread) judged once per distinct
  set of label values, and each node's key (its outcome and class-wise verdicts) with
  its status map, feasibility and reasons worked out per key (the Diagnosis);
- framework/runtime/score.py: each score plugin once per class of nodes it cannot
  tell apart, or its own column hook (PodTopologySpread), NormalizeScore over the
  distinct raw scores;
- framework/runtime/verdicts.py: nodes with the same outcome share one verdict row,
  and a decision whose rows are the previous one's reuses its verdicts.
"""

from __future__ import annotations

from webhook.api.pods import pod_key as pod_ref
from webhook.scheduler.framework.budget import OutOfTime, within
from webhook.scheduler.framework.memo import adopt
from webhook.scheduler.framework.preemption import Preemption, resolve_priority
from webhook.scheduler.framework.sampling import Sampler
from webhook.scheduler.framework.types import NodeVerdict, Status
from webhook.scheduler.placement.cycle import (
    feasible_nodes,
    not_scheduled,
    place,
    selected_node,
    warm,
)
from webhook.scheduler.placement.explanation import explain
from webhook.scheduler.placement.queries import (
    admitted_nodes,
    spread_eligible_nodes,
    spread_pre_filter,
)
from webhook.scheduler.placement.results import (
    NotScheduled,
    Placement,
    Sampling,
    Simulation,
    Unschedulable,
)
from webhook.scheduler.placement.simulation import settle, simulate
from webhook.scheduler.plugins.helper.spread import controller_reference, find_controller
from webhook.scheduler.plugins.podtopologyspread.defaults import (
    default_constraints_for,
    defaults_for_args,
)
from webhook.scheduler.plugins.podtopologyspread.explain import ConstraintBlock
from webhook.scheduler.profile import READS, Framework, framework_of

PluginStatus = Status

# The scheduler's public face: code outside scheduler/ imports these (and
# framework.types, framework.snapshot, config), never the modules below
# (tests/test_layering.py holds it).
__all__ = [
    "READS",
    "ConstraintBlock",
    "Framework",
    "NodeVerdict",
    "NotScheduled",
    "OutOfTime",
    "Placement",
    "Preemption",
    "PluginStatus",
    "Sampler",
    "Sampling",
    "Simulation",
    "Unschedulable",
    "adopt",
    "admitted_nodes",
    "controller_reference",
    "default_constraints_for",
    "defaults_for_args",
    "explain",
    "feasible_nodes",
    "find_controller",
    "framework_of",
    "not_scheduled",
    "place",
    "pod_ref",
    "resolve_priority",
    "selected_node",
    "settle",
    "simulate",
    "spread_eligible_nodes",
    "spread_pre_filter",
    "warm",
    "within",
]
