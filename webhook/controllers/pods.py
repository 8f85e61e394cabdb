"""The pods a controller creates, as the API server admits them: one builder for every
pod a drill adds (a scale-up's, a rollout's, a node drill's replacement).

    template = template_of(pod)                      # when the owner's template is unknown
    fresh = new_pod(template, "web-2-1", "shop", owner, labels={HASH: "x"})

**The template** is the owner's (a ReplicaSet's spec.template, a Deployment's for its
new ReplicaSet, a StatefulSet's). Where the state holds no owner object, `template_of`
reads one back from a pod of the owner: its labels and spec but its node, each
selector without what the API server's merge appended at the pod's creation.

**A replacement** (a node drill's: the pod a controller creates for one that left
its node) is `recreated`: new_pod from the template the pod was made from, with its
labels and controller.

**The merge at creation** (pkg/registry/core/pod/strategy.go): from v1.34 the API server
appends `key In (the pod's value)` to a topology spread constraint's labelSelector for
each matchLabelKeys key the pod carries (MatchLabelKeysInPodTopologySpreadSelectorMerge),
and from v1.31 `key In` / `key NotIn` to a pod (anti-)affinity term's for its
matchLabelKeys / mismatchLabelKeys (MatchLabelKeysInPodAffinity). A pod built from an
already merged pod would carry the old pod's values beside its own (`pod-template-hash
In [old]` and `In [new]`): a selector that matches nothing. So a pod is always built
from an unmerged template and merged once, for the modelled API server.

CAVEAT: a pod whose own selector ends with exactly the requirements the merge would
append is read back without them (before v1.34 the API server rejects a key in both
matchLabelKeys and the selector, so only the merge writes them there); the keys
topospread's webhook moved out of matchLabelKeys for an older API server
(topospread.io/merged-match-label-keys) stay in the selector, where they select the
same pods for a pod of the same owner.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from webhook.api.constraint import match_label_requirements, requirement
from webhook.api.kube import RawObj, as_dict, controller_of, meta, spec

__all__ = [
    "AFFINITY_MERGE_SINCE",
    "SPREAD_MERGE_SINCE",
    "merge_at_creation",
    "new_pod",
    "recreated",
    "template_of",
]

# The API server merges matchLabelKeys into a spread constraint's selector at Pod
# creation from v1.34, into a pod affinity term's from v1.31 (beta, on by default).
SPREAD_MERGE_SINCE = (1, 34)
AFFINITY_MERGE_SINCE = (1, 31)

_AFFINITY_KINDS = ("podAffinity", "podAntiAffinity")
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _since(server_version: tuple[int, int] | None, since: tuple[int, int]) -> bool:
    """None models the newest API server."""
    return server_version is None or tuple(server_version) >= since


def _tail(keys: Any, labels: Mapping[str, Any], operator: str) -> list[RawObj]:
    """The requirements the merge appends for `keys`, in order."""
    if not isinstance(keys, list):
        return []
    pairs = match_label_requirements(keys, labels)
    return [{**requirement(k, v), "operator": operator} for k, v in pairs]


def _appended(selector: RawObj, extra: list[RawObj]) -> RawObj:
    exprs = selector.get("matchExpressions")
    if not extra or (exprs is not None and not isinstance(exprs, list)):
        return selector
    return {**selector, "matchExpressions": [*(exprs or []), *extra]}


def _stripped(selector: RawObj, extra: list[RawObj]) -> RawObj:
    """`selector` without `extra` when its matchExpressions end with exactly it."""
    exprs = selector.get("matchExpressions")
    n = len(extra)
    if not n or not isinstance(exprs, list) or len(exprs) < n or exprs[-n:] != extra:
        return selector
    out = dict(selector)
    if exprs[:-n]:
        out["matchExpressions"] = exprs[:-n]
    else:
        del out["matchExpressions"]
    return out


def _affinity_terms(pod_spec: RawObj) -> list[RawObj]:
    """The pod (anti-)affinity terms of `pod_spec`, in place (required, then the
    preferred ones' podAffinityTerm)."""
    out: list[RawObj] = []
    affinity = as_dict(pod_spec.get("affinity"))
    for kind in _AFFINITY_KINDS:
        block = as_dict(affinity.get(kind))
        required = block.get(_REQUIRED)
        for term in required if isinstance(required, list) else ():
            if isinstance(term, dict):
                out.append(term)
        preferred = block.get(_PREFERRED)
        for w in preferred if isinstance(preferred, list) else ():
            term = w.get("podAffinityTerm") if isinstance(w, dict) else None
            if isinstance(term, dict):
                out.append(term)
    return out


def _spread_constraints(pod_spec: RawObj) -> list[RawObj]:
    raw = pod_spec.get("topologySpreadConstraints")
    return [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []


def _rewrite(pod: RawObj, merge: bool, spread: bool, affinity: bool) -> None:
    """Merge (or strip) in place, in `pod`'s own spec, with its own labels."""
    labels = as_dict(meta(pod).get("labels"))
    pod_spec = spec(pod)
    edit = _appended if merge else _stripped
    if spread:
        for c in _spread_constraints(pod_spec):
            selector = c.get("labelSelector")
            if isinstance(selector, dict):
                c["labelSelector"] = edit(selector, _tail(c.get("matchLabelKeys"), labels, "In"))
    if affinity:
        for term in _affinity_terms(pod_spec):
            selector = term.get("labelSelector")
            if not isinstance(selector, dict):
                continue
            keys = _tail(term.get("matchLabelKeys"), labels, "In")
            mismatch = _tail(term.get("mismatchLabelKeys"), labels, "NotIn")
            # The merge appends In then NotIn: undone in the reverse order.
            steps = [keys, mismatch] if merge else [mismatch, keys]
            for extra in steps:
                selector = edit(selector, extra)
            term["labelSelector"] = selector


def _merges(pod_spec: RawObj) -> bool:
    """Whether any selector of `pod_spec` has keys to merge (the common pod has none:
    no copy then)."""
    if any(c.get("matchLabelKeys") for c in _spread_constraints(pod_spec)):
        return True
    return any(
        t.get("matchLabelKeys") or t.get("mismatchLabelKeys") for t in _affinity_terms(pod_spec)
    )


def merge_at_creation(pod: RawObj, server_version: tuple[int, int] | None = None) -> RawObj:
    """`pod` as the API server `server_version` (None: the newest) stores it at
    creation: matchLabelKeys (and mismatchLabelKeys) merged into the selectors, with the
    pod's own labels. A new object; `pod` is left as it is.

    Port of pkg/registry/core/pod/strategy.go: mutateTopologySpreadConstraints and
    mutatePodAffinity."""
    if not _merges(spec(pod)):
        return {**pod, "spec": dict(spec(pod))}
    out = copy.deepcopy(pod)
    _rewrite(
        out,
        merge=True,
        spread=_since(server_version, SPREAD_MERGE_SINCE),
        affinity=_since(server_version, AFFINITY_MERGE_SINCE),
    )
    return out


def template_of(pod: RawObj) -> RawObj:
    """The pod template `pod` was created from, as near as the pod tells: its labels, its
    spec but spec.nodeName, its selectors without the requirements the API server's
    merge appended (see the CAVEAT). Not its annotations: a pod's deletion cost is
    most often its own, set on it after its creation."""
    labels = meta(pod).get("labels")
    pod_spec = {k: v for k, v in spec(pod).items() if k != "nodeName"}
    out: RawObj = {
        "metadata": {"labels": dict(labels)} if isinstance(labels, dict) else {},
        # Copied only when a selector is to be edited (the common pod has no keys).
        "spec": copy.deepcopy(pod_spec) if _merges(pod_spec) else pod_spec,
    }
    _rewrite(out, merge=False, spread=True, affinity=True)
    return out


def new_pod(
    template: RawObj,
    name: str,
    namespace: str,
    owner: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
    now: datetime | None = None,
    uid: str | None = None,
    server_version: tuple[int, int] | None = None,
) -> RawObj:
    """A pod as `owner`'s controller creates it from `template` (metadata and spec) and
    the API server `server_version` admits it: named `name` in `namespace`, the
    template's labels with `labels` over them, controlled by `owner` (kind, name, uid),
    created at `now`, unbound, its selectors merged once (merge_at_creation). `uid`:
    the pod's UID (default: one made of its namespace and name)."""
    m = meta(template)
    kind = str(owner.get("kind") or "")
    md: RawObj = {
        "name": name,
        "namespace": namespace,
        "uid": uid or f"drill-{namespace}-{name}",
        "labels": {**as_dict(m.get("labels")), **(labels or {})},
        "ownerReferences": [
            {
                "apiVersion": "v1" if kind == "ReplicationController" else "apps/v1",
                "kind": kind,
                "name": owner.get("name"),
                "uid": owner.get("uid") or f"uid-{owner.get('name')}",
                "controller": True,
            }
        ],
    }
    annotations = as_dict(m.get("annotations"))
    if annotations:
        md["annotations"] = dict(annotations)
    if now is not None:
        md["creationTimestamp"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    pod_spec = {k: v for k, v in as_dict(template.get("spec")).items() if k != "nodeName"}
    pod: RawObj = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": pod_spec}
    return merge_at_creation(pod, server_version)


def recreated(
    pod: RawObj, name: str | None = None, server_version: tuple[int, int] | None = None
) -> RawObj:
    """The pod `pod`'s controller creates in its place (new_pod from template_of(pod),
    its labels and controller), named `name` (default: `pod`'s own, as the drills key a
    replacement by the pod it replaces).

    CAVEAT: it keeps `pod`'s UID and creation time, where the controller's pod has its
    own: a drill queues its replacements in the order of the pods they replace."""
    m = meta(pod)
    ref: Mapping[str, Any] = controller_of(pod) or {}
    out = new_pod(
        template_of(pod),
        name if name is not None else str(m.get("name") or ""),
        str(m.get("namespace") or "default"),
        ref,
        uid=m.get("uid") if isinstance(m.get("uid"), str) else None,
        server_version=server_version,
    )
    if not ref:
        del out["metadata"]["ownerReferences"]
    created = m.get("creationTimestamp")
    if created is not None:
        out["metadata"]["creationTimestamp"] = created
    return out
