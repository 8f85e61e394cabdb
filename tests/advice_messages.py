"""Our advice's messages, written out by hand, shared by the tests that see them."""

from __future__ import annotations


def outage(path: str) -> str:
    """The outage-blocks-replacements warning on constraint `path`
    ("spec.topologySpreadConstraints[0]")."""
    return (
        f"{path}.nodeTaintsPolicy: unset (Ignore): a failed domain's nodes, tainted "
        "unreachable, still count with 0 pods, so replacements stay Pending; Honor includes "
        "only the nodes the pod tolerates"
    )


def revisions(path: str) -> str:
    """The revisions-counted-together warning on constraint `path`
    ("spec.template.spec.topologySpreadConstraints[0]")."""
    return (
        f"{path}.matchLabelKeys: add pod-template-hash: a rollout spreads new pods together "
        "with old ones, then deletes old ones topology-blind; the new revision can end skewed "
        "and a surge pod stay Pending, stalling it"
    )
