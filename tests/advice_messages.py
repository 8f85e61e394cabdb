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
