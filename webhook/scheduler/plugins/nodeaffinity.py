"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity): Filter on nodeSelector
AND the required node affinity terms (AND the args' addedAffinity); Score by the
weights of the preferred terms a node matches (the pod's and the args').

CAVEAT: upstream's PreFilter narrows the node list when every required term names
nodes through matchFields metadata.name; here such nodes simply fail the Filter with
the NodeAffinity reason, which is the same verdict.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

from webhook.api.kube import RawObj, spec
from webhook.api.labels import (
    NodeMatcher,
    compile_node_affinity,
    compile_node_selector_term,
    required_node_affinity,
)
from webhook.scheduler.config.types import NodeAffinityArgs
from webhook.scheduler.framework.snapshot import Snapshot
from webhook.scheduler.framework.types import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLike,
    Reads,
    Status,
)
from webhook.scheduler.plugins.helper.normalize_score import default_normalize_score

__all__ = [
    "REASON_ENFORCED",
    "REASON_NODE_AFFINITY",
    "NodeAffinity",
    "affinity_label_keys",
    "preferred_label_keys",
]

REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
_NODE_AFFINITY = Status(Code.UNRESOLVABLE, REASON_NODE_AFFINITY)
_ENFORCED = Status(Code.UNRESOLVABLE, REASON_ENFORCED)


def _preferred_terms(raw: Any) -> list[tuple[int, NodeMatcher]]:
    """(weight, matcher) of each PreferredSchedulingTerm with a non-zero weight
    (nodeaffinity.NewPreferredSchedulingTerms).

    Port of nodeaffinity/nodeaffinity.go: NewPreferredSchedulingTerms.
    """
    out: list[tuple[int, NodeMatcher]] = []
    for term in raw if isinstance(raw, list) else ():
        if not isinstance(term, dict):
            continue
        weight = term.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight == 0:
            continue
        out.append((weight, compile_node_selector_term(term.get("preference"))))
    return out


class NodeAffinity:
    """Filter and Score, built once with its args (node_affinity.go New).

    PreFilter skips a pod that constrains no node when the args add nothing; its state
    is the compiled matcher (api.labels.compile_node_affinity). PreScore skips a pod
    with no preferred term when the args add none.
    """

    name: ClassVar[str] = "NodeAffinity"
    node_key_reads_pod: ClassVar[bool] = True
    # NormalizeScore maps each raw score by the set of raw scores alone (see placement).
    normalize_reads_values: ClassVar[bool] = True
    reads: ClassVar[Reads] = Reads(
        pod_fields=("spec.nodeSelector", "spec.affinity.nodeAffinity"),
        node_fields=("metadata.labels", "metadata.name"),
    )

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        """Port of node_affinity.go: New."""
        added = (args.added_affinity if args is not None else None) or {}
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.added_required: NodeMatcher | None = (
            None
            if required is None
            else compile_node_affinity(
                {
                    "spec": {
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": required
                            }
                        }
                    }
                }
            )
        )
        self.added_keys = affinity_label_keys(
            {"spec": {"affinity": {"nodeAffinity": added}}} if required is not None else {}
        )
        self.added_preferred = _preferred_terms(
            added.get("preferredDuringSchedulingIgnoredDuringExecution")
        )
        self.added_preferred_keys = preferred_label_keys(
            added.get("preferredDuringSchedulingIgnoredDuringExecution")
        )

    def pre_filter(self, state: CycleState, pod: RawObj, snapshot: Snapshot | None) -> Status:
        """Port of node_affinity.go: PreFilter (without the node-name narrowing, see CAVEAT)."""
        matcher = compile_node_affinity(pod) if isinstance(pod, dict) else None
        if matcher is None and self.added_required is None:
            return SKIP
        state[self.name] = matcher
        keys = affinity_label_keys(pod)
        if keys is not None and self.added_keys is not None:
            keys = tuple(dict.fromkeys((*self.added_keys, *keys)))
        elif self.added_required is not None:
            keys = None
        state[self.name + "/keys"] = keys
        return SUCCESS

    def filter(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Status:
        """Port of node_affinity.go: Filter (addedAffinity, then nodeSelector and the
        required terms)."""
        obj = node.node or {}
        if self.added_required is not None and not self.added_required(obj):
            return _ENFORCED
        matcher = state[self.name]
        return SUCCESS if matcher is None or matcher(obj) else _NODE_AFFINITY

    def node_key(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> Hashable | None:
        keys = state[self.name + "/keys"]
        if keys is None:
            return None  # a term reads the node's name (matchFields)
        get = node.labels.get
        return tuple([get(k) for k in keys])

    def node_label_keys(self, state: CycleState, pod: RawObj) -> tuple[str, ...] | None:
        """The node labels node_key reads for this pod (None: it reads the name too)."""
        keys: tuple[str, ...] | None = state[self.name + "/keys"]
        return keys

    def pod_key(self, state: CycleState, pod: RawObj) -> Hashable:
        s = spec(pod)
        return (repr(s.get("nodeSelector")), repr(required_node_affinity(s)))

    # ---- score ----------------------------------------------------------------------

    def pre_score(
        self,
        state: CycleState,
        pod: RawObj,
        nodes: Sequence[NodeInfoLike],
        snapshot: Snapshot | None,
    ) -> Status:
        """Port of node_affinity.go: PreScore."""
        affinity = spec(pod).get("affinity")
        node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
        preferred = (
            node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
            if isinstance(node_affinity, dict)
            else None
        )
        terms = _preferred_terms(preferred)
        if not terms and not self.added_preferred:
            return SKIP
        state[self.name + "/score"] = terms
        keys = preferred_label_keys(preferred)
        state[self.name + "/score_keys"] = (
            None
            if keys is None or self.added_preferred_keys is None
            else tuple(dict.fromkeys((*keys, *self.added_preferred_keys)))
        )
        return SUCCESS

    def score(self, state: CycleState, pod: RawObj, node: NodeInfoLike) -> tuple[int, Status]:
        """Port of node_affinity.go: Score (PreferredSchedulingTerms.Score, then the args')."""
        obj = node.node or {}
        total = sum(w for w, match in state[self.name + "/score"] if match(obj))
        total += sum(w for w, match in self.added_preferred if match(obj))
        return total, SUCCESS

    def normalize_score(self, state: CycleState, pod: RawObj, scores: dict[str, int]) -> Status:
        """Port of node_affinity.go: NormalizeScore."""
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def score_label_keys(self, state: CycleState, pod: RawObj) -> tuple[str, ...] | None:
        """The node labels Score reads for this pod (after PreScore): those its preferred
        terms and the args' name; None when a term reads the node's name (matchFields)."""
        keys: tuple[str, ...] | None = state.get(self.name + "/score_keys")
        return keys


def preferred_label_keys(raw: Any) -> tuple[str, ...] | None:
    """The node label keys the PreferredSchedulingTerms `raw` read, or None when a term
    also reads the node's name (matchFields)."""
    keys: list[str] = []
    for term in raw if isinstance(raw, list) else ():
        preference = term.get("preference") if isinstance(term, dict) else None
        if not isinstance(preference, dict):
            continue
        if preference.get("matchFields"):
            return None
        expressions = preference.get("matchExpressions")
        for e in expressions if isinstance(expressions, list) else ():
            if isinstance(e, dict) and isinstance(e.get("key"), str):
                keys.append(e["key"])
    return tuple(dict.fromkeys(keys))


def affinity_label_keys(pod: RawObj) -> tuple[str, ...] | None:
    """The node label keys the pod's nodeSelector and required node affinity read (the
    Filter reads nothing else of a node), or None when a term also reads the node's
    name (matchFields)."""
    s = spec(pod)
    keys: list[str] = []
    node_selector = s.get("nodeSelector")
    if isinstance(node_selector, dict):
        keys += [k for k in node_selector if isinstance(k, str)]
    required = required_node_affinity(s)
    terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
    for term in terms if isinstance(terms, list) else ():
        if not isinstance(term, dict):
            continue
        if term.get("matchFields"):
            return None
        expressions = term.get("matchExpressions")
        for e in expressions if isinstance(expressions, list) else ():
            if isinstance(e, dict) and isinstance(e.get("key"), str):
                keys.append(e["key"])
    return tuple(dict.fromkeys(keys))
