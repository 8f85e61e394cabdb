"""The PodTopologySpread plugin as a profile holds it (plugin.go New): its name, what it
reads, and its args with the defaults resolved once.

CAVEAT: its PreFilter, Filter, PreScore and Score are not run through the generic
runtime: placement evaluates them with the grouped engine of filtering.py and
scoring.py (once per class of nodes with the same topology values, not node by node),
which a property test holds to a node-by-node evaluation.
"""

from __future__ import annotations

from typing import ClassVar

from webhook.api.kube import RawObj
from webhook.scheduler.config.types import SpreadArgs
from webhook.scheduler.framework.types import Reads
from webhook.scheduler.plugins.podtopologyspread.common import PLUGIN_NAME, READS
from webhook.scheduler.plugins.podtopologyspread.defaults import defaults_for_args

__all__ = ["PodTopologySpread"]


class PodTopologySpread:
    """One profile's PodTopologySpread: args, and the default constraints they resolve to."""

    name: ClassVar[str] = PLUGIN_NAME
    reads: ClassVar[Reads] = READS

    def __init__(self, args: SpreadArgs | None = None) -> None:
        """Port of plugin.go: New."""
        self.args = args if args is not None else SpreadArgs()
        self.default_constraints: tuple[RawObj, ...] = defaults_for_args(self.args)
