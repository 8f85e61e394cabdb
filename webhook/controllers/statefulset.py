"""Which pods a StatefulSet removes or adds when its replicas change: pods are named
`<name>-<ordinal>`; scaling down removes the highest ordinals first, scaling up
creates the next ordinals from 0 up (the lowest missing first), one after another
(OrderedReady: each waits for the previous to be Running and Ready; Parallel: all
at once; either way the pods that end up existing are the same, and the drill places
them in ordinal order).

Port of stateful_set_control.go: the replicas/condemned split of
updateStatefulSet (ordinals in [0, replicas) are kept or created, the rest are
condemned and deleted in decreasing ordinal order).

CAVEAT: spec.ordinals.start (StatefulSetStartOrdinal) is honoured; pods whose
names carry no ordinal of the set are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhook.api.kube import RawObj, meta

__all__ = ["ordinal_of", "scale_statefulset"]


def ordinal_of(set_name: str, pod: RawObj) -> int | None:
    """The ordinal in `<set_name>-<ordinal>`, None when the name has none.

    Port of stateful_set_utils.go: getOrdinal."""
    name = str(meta(pod).get("name") or "")
    prefix = f"{set_name}-"
    if not name.startswith(prefix):
        return None
    tail = name[len(prefix) :]
    if not tail.isascii() or not tail.isdigit() or (len(tail) > 1 and tail[0] == "0"):
        return None
    return int(tail)


def scale_statefulset(
    set_name: str, pods: Iterable[RawObj], replicas: int, start: int = 0
) -> tuple[list[RawObj], list[str]]:
    """(the pods deleted, highest ordinal first; the names of the pods created, lowest
    ordinal first) when the StatefulSet `set_name` goes to `replicas`."""
    by_ordinal: dict[int, RawObj] = {}
    for pod in pods:
        n = ordinal_of(set_name, pod)
        if n is not None:
            by_ordinal[n] = pod
    end = start + replicas
    condemned = sorted((n for n in by_ordinal if not start <= n < end), reverse=True)
    missing = [n for n in range(start, end) if n not in by_ordinal]
    return [by_ordinal[n] for n in condemned], [f"{set_name}-{n}" for n in missing]
