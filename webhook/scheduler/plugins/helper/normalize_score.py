"""DefaultNormalizeScore: the NormalizeScore most score plugins share
(pkg/scheduler/framework/plugins/helper/normalize_score.go)."""

from __future__ import annotations

from collections.abc import MutableMapping

from webhook.scheduler.framework.gomath import go_div
from webhook.scheduler.framework.types import SUCCESS, Status

__all__ = ["default_normalize_score"]


def default_normalize_score(
    max_priority: int, reverse: bool, scores: MutableMapping[str, int]
) -> Status:
    """Scale `scores` (node name -> raw score, edited in place) from [0, max] to
    [0, max_priority]; with `reverse`, subtract each from max_priority.

    Port of normalize_score.go: DefaultNormalizeScore.

    When every score is 0 (or negative), the scores are left as they are, or all
    set to max_priority when reversing. Raw scores are assumed non-negative, as
    upstream assumes; the division truncates as Go's int64 division does.
    """
    max_count = 0
    for score in scores.values():
        if score > max_count:
            max_count = score
    if max_count == 0:
        if reverse:
            for name in scores:
                scores[name] = max_priority
        return SUCCESS
    for name, score in scores.items():
        scaled = go_div(max_priority * score, max_count)
        scores[name] = max_priority - scaled if reverse else scaled
    return SUCCESS
