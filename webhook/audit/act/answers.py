"""What the Eviction API answers, and what each answer means for a step.

Pure: the evictor (the one write path) turns kube-apiserver's reply into an Answer, and
the step decisions read its kind; neither imports the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from webhook.api.kube import as_dict

# What an eviction answer means for the step (Answer.kind).
EVICTED = "evicted"
REFUSED = "refused"  # 429: a PodDisruptionBudget says no (for now)
GONE = "gone"  # 404: the pod no longer exists
CONFLICT = "conflict"  # 409: the name now belongs to another pod (uid precondition)
FAILED = "failed"  # anything else: forbidden, a server error

_BUDGET_CAUSE = re.compile(r"^The disruption budget (\S+) ")


@dataclass(frozen=True)
class Answer:
    """One answer of the Eviction API: kind (EVICTED, REFUSED, GONE, CONFLICT, FAILED),
    the HTTP status, its message, and for a refusal the budget named by its cause."""

    kind: str
    status: int
    message: str = ""
    budget: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "result": self.kind}
        if self.message:
            out["message"] = self.message
        if self.budget is not None:
            out["budget"] = self.budget
        return out


def eviction_answer(status: int, body: Any, namespace: str = "") -> Answer:
    """What kube-apiserver's answer to POST .../pods/NAME/eviction means.

    201 (or 200): evicted. 429: refused by a PodDisruptionBudget, named by the
    DisruptionBudget cause ("The disruption budget NAME needs ..."), as ns/NAME. 404:
    the pod is gone. 409: the uid precondition failed (the name is another pod's now).
    """
    doc = as_dict(body)
    message = doc.get("message") if isinstance(doc.get("message"), str) else ""
    if status in (200, 201):
        return Answer(EVICTED, status)
    if status == 429:
        budget = None
        for cause in as_dict(doc.get("details")).get("causes") or ():
            text = as_dict(cause).get("message")
            if isinstance(text, str):
                found = _BUDGET_CAUSE.match(text)
                if found is not None:
                    budget = f"{namespace}/{found.group(1)}" if namespace else found.group(1)
                message = f"{message} {text}".strip()
        return Answer(REFUSED, status, str(message), budget)
    if status == 404:
        return Answer(GONE, status, str(message))
    if status == 409:
        return Answer(CONFLICT, status, str(message))
    return Answer(FAILED, status, str(message) or f"HTTP {status}")
