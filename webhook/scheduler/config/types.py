"""kube-scheduler's configuration types (pkg/scheduler/apis/config/types_pluginargs.go)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webhook.api.kube import RawObj

__all__ = ["DefaultingType", "SpreadArgs"]

DefaultingType = Literal["System", "List"]


@dataclass(frozen=True)
class SpreadArgs:
    """kube-scheduler's PodTopologySpreadArgs."""

    default_constraints: tuple[RawObj, ...] = ()
    defaulting_type: DefaultingType = "System"
