"""What a decision sees besides the object: the review context, the mutation context
and result, and the shape of a mutation step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from webhook.api.kube import RawObj
from webhook.config import Settings

__all__ = ["MutationContext", "MutationResult", "ReviewContext", "Step"]


@dataclass(frozen=True)
class ReviewContext:
    """What a review needs from the running process: settings and cluster state."""

    settings: Settings = field(default_factory=Settings)
    # (major, minor) of the kube-apiserver we serve, None when unknown.
    server_version: tuple[int, int] | None = None
    # webhook.scheduler.framework.snapshot.Snapshot of the cluster, None without cluster state.
    snapshot: Any = None


@dataclass(frozen=True)
class MutationContext:
    """What a step may look at besides the object itself."""

    operation: str = "CREATE"
    # request.namespace: the object's own may be absent (kubernetes#88282).
    namespace: str = ""
    dry_run: bool = False
    settings: Settings = field(default_factory=Settings)
    # (major, minor) of the kube-apiserver that will store the object, None when unknown.
    server_version: tuple[int, int] | None = None
    # webhook.scheduler.framework.snapshot.Snapshot, None without cluster state.
    snapshot: Any = None
    # The object before an UPDATE (request.oldObject), None on CREATE.
    old: RawObj | None = None

    def created_pod(self, obj: RawObj) -> bool:
        """Whether `obj` is a Pod being created (the steps that act only on those)."""
        return self.operation == "CREATE" and obj.get("kind") == "Pod"


@dataclass(frozen=True)
class MutationResult:
    """The patch to return, the warnings to show, and the object once patched."""

    patch: list[RawObj]
    warnings: list[str]
    mutated: RawObj
    # A step raised: nothing was changed and the warnings say so.
    failed: bool = False


# A step edits the object (a private copy of what it may edit) in place and returns warnings.
Step = Callable[[RawObj, MutationContext], list[str]]
