"""The scheduling profile: its plugins built once at start, as upstream's
frameworkruntime.NewFramework resolves a profile once.

Today one profile: the five node filters kube-scheduler runs besides
PodTopologySpread (which placement runs with its own grouped evaluation), in the
order `simulate -o json` lists them.
"""

from __future__ import annotations

from webhook.api.kube import RawObj
from webhook.scheduler.framework.runtime import FilterCycle, PreparedFilters
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import Reads
from webhook.scheduler.plugins.nodeaffinity import NodeAffinity
from webhook.scheduler.plugins.nodename import NodeName
from webhook.scheduler.plugins.noderesources.fit import NodeResourcesFit
from webhook.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from webhook.scheduler.plugins.podtopologyspread.common import READS as PTS_READS
from webhook.scheduler.plugins.tainttoleration import TaintToleration

__all__ = ["FILTERS", "FILTER_PLUGINS", "READS", "prepare"]

FILTERS = FilterCycle(
    (NodeUnschedulable(), NodeName(), NodeAffinity(), TaintToleration(), NodeResourcesFit())
)
FILTER_PLUGINS: tuple[str, ...] = FILTERS.names

# What the profile's plugins read: the cluster state follows from it (cluster/needs.py).
READS: tuple[Reads, ...] = (*(p.reads for p in FILTERS.plugins), PTS_READS)


def prepare(pod: RawObj, snapshot: Snapshot | None = None) -> PreparedFilters:
    """The default profile's filter cycle for `pod`."""
    return FILTERS.prepare(pod, snapshot)
