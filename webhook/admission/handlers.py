"""The /validate and /mutate decisions, and the two fail-open nets around them.

`answer_review(body, operation, ctx)` serves the HTTP handler and the `review` command
alike: review.py parses and builds responses, this module decides. Nothing here raises
out: an unexpected failure inside a rule or a mutation step answers `allowed: true`
with a warning and is logged, because a webhook that fails blocks every pod of the
cluster under failurePolicy Fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from webhook.admission.context import MutationContext, MutationResult, ReviewContext
from webhook.admission.foresight import foresee
from webhook.admission.inject import awaited_controller as inject_awaited_controller
from webhook.admission.mutation import mutate
from webhook.admission.review import (
    REVIEWED_OPERATIONS,
    Operation,
    Review,
    _envelope,
    allowed_response,
    denied_response,
    error_status,
    limit_warnings,
    object_name,
    parse_review,
)
from webhook.api.field import FieldError
from webhook.api.kube import HANDLED_KINDS, RawObj, pod_template
from webhook.config import Settings
from webhook.errors import ReviewError
from webhook.validation.advice import object_warnings
from webhook.validation.rules import validate_object

__all__ = [
    "Answer",
    "Verdict",
    "answer_review",
    "awaited_controller",
    "handle_review",
    "mutate_reviewed",
    "read_review",
    "review_object",
]

log = logging.getLogger("topospread.admission")


def _constraints_path(obj: RawObj) -> str:
    template = pod_template(obj)
    spec = template.spec_path if template is not None else "spec"
    return f"{spec}.topologySpreadConstraints"


def _internal_warning(obj: RawObj, what: str) -> str:
    return (
        f"{_constraints_path(obj)}: not {what} by topospread because of an internal error; "
        "allowed unchecked"
    )


def _with_kind(review: Review) -> RawObj:
    """The object with kind and apiVersion filled from the request when absent (a shallow
    copy, so the caller's dict stays the one a patch is computed against)."""
    assert review.obj is not None
    obj = dict(review.obj)
    obj.setdefault("kind", review.kind)
    return obj


def _reviewed(review: Review) -> bool:
    return (
        review.operation in REVIEWED_OPERATIONS
        and not review.sub_resource
        and review.kind in HANDLED_KINDS
        and review.obj is not None
    )


@dataclass(frozen=True)
class Verdict:
    """What validation found: errors, warnings, and whether a rule failed unexpectedly."""

    errors: list[FieldError]
    warnings: list[str]
    failed: bool = False


def review_object(
    obj: RawObj, ctx: ReviewContext, *, old: RawObj | None = None, stored: bool = True
) -> Verdict:
    """Validation errors and warnings for one object.

    `stored`: the object as a validating webhook receives it, already merged by the API
    server (v1.34+), so the create-time merge is not replayed again;
    False for a manifest the API server has yet to create (`check`). A rule that fails
    unexpectedly yields no error and a warning saying the object went unchecked (and is
    logged): advice never blocks a pod.
    """
    errors: list[FieldError] = []
    warnings: list[str] = []
    failed = False
    try:
        errors = validate_object(obj, old=old, server_version=ctx.server_version, merge=not stored)
    except Exception:
        log.exception("validation failed unexpectedly on %s %r", obj.get("kind"), object_name(obj))
        warnings.append(_internal_warning(obj, "validated"))
        failed = True
    try:
        warnings.extend(
            object_warnings(obj, separate_revisions=ctx.settings.separate_revisions)
        )
    except Exception:
        log.exception("warnings failed unexpectedly on %s %r", obj.get("kind"), object_name(obj))
    return Verdict(errors, warnings, failed)


class Handled(NamedTuple):
    """What a handler answers: the AdmissionReview, whether something failed, and how
    the unschedulable foresight ended (None when it did not look)."""

    doc: RawObj
    failed: bool
    foresight: str | None = None


def _validate(review: Review, ctx: ReviewContext) -> Handled:
    if not _reviewed(review):
        return Handled(allowed_response(review), False)
    obj = _with_kind(review)
    old = review.old if review.operation == "UPDATE" else None
    verdict = review_object(obj, ctx, old=old)
    if verdict.errors:
        return Handled(denied_response(review, verdict.errors, verdict.warnings), verdict.failed)
    if review.operation == "CREATE" and review.kind == "Pod" and not review.group:
        # Unschedulable foresight (foresight.py): warns, or denies by policy.
        name = object_name(review.obj, review.name)
        seen = foresee(obj, ctx.snapshot, ctx.settings, name=name, namespace=review.namespace)
        failed = verdict.failed or seen.failed
        if seen.denial is not None:
            response = {"uid": review.uid, "allowed": False, "status": seen.denial}
            kept = limit_warnings(verdict.warnings)
            if kept:
                response["warnings"] = kept
            return Handled(_envelope(review, response), failed, seen.outcome)
        doc = allowed_response(review, [*verdict.warnings, *seen.warnings])
        return Handled(doc, failed, seen.outcome)
    return Handled(allowed_response(review, verdict.warnings), verdict.failed)


def mutate_reviewed(
    obj: RawObj,
    ctx: ReviewContext,
    *,
    operation: str = "CREATE",
    namespace: str = "",
    dry_run: bool = False,
    old: RawObj | None = None,
) -> MutationResult:
    """What /mutate does to one object (its kind set), as /mutate and `mutate` see it.

    A step that fails unexpectedly gives no patch and a warning (and is logged).
    """
    mctx = MutationContext(
        operation=operation,
        namespace=namespace,
        dry_run=dry_run,
        settings=ctx.settings,
        server_version=ctx.server_version,
        snapshot=ctx.snapshot,
        old=old,
    )
    try:
        return mutate(obj, mctx)
    except Exception:
        log.exception("mutation failed unexpectedly on %s %r", obj.get("kind"), object_name(obj))
        return MutationResult([], [_internal_warning(obj, "mutated")], obj, failed=True)


def _mutate(review: Review, ctx: ReviewContext) -> Handled:
    if not _reviewed(review):
        return Handled(allowed_response(review), False)
    result = mutate_reviewed(
        _with_kind(review),
        ctx,
        operation=review.operation,
        namespace=review.namespace,
        dry_run=review.dry_run,
        old=review.old if review.operation == "UPDATE" else None,
    )
    return Handled(allowed_response(review, result.warnings, result.patch), result.failed)


_HANDLERS: dict[str, Callable[[Review, ReviewContext], Handled]] = {
    "validate": _validate,
    "mutate": _mutate,
}


@dataclass(frozen=True)
class Answer:
    """An answered review: HTTP status, JSON document, and the decision for metrics
    (allowed, denied, patched, malformed or internal_error), the parsed review
    (None when the body was malformed) for metrics and request logs, and how the
    unschedulable foresight ended (foresight.OUTCOMES; None when it did not look)."""

    status: int
    doc: RawObj
    decision: str
    review: Review | None = None
    foresight: str | None = None


def _decision(doc: RawObj, failed: bool) -> str:
    response = doc["response"]
    if not response["allowed"]:
        return "denied"
    if failed:
        return "internal_error"
    return "patched" if "patch" in response else "allowed"


def read_review(body: bytes) -> Review | Answer:
    """The parsed AdmissionReview, or the answer to a malformed one (400, 413 when too
    large, with a Status). Never raises."""
    try:
        return parse_review(body)
    except ReviewError as exc:
        return Answer(exc.status, error_status(exc.status, str(exc)), "malformed")
    except Exception:  # a parser bug must still not become a 5xx
        log.exception("unexpected failure parsing an AdmissionReview")
        return Answer(400, error_status(400, "malformed AdmissionReview"), "malformed")


def awaited_controller(
    review: Review | Answer, operation: Operation, settings: Settings
) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the controller a /mutate of this review would read the
    selector of to inject defaults (inject.awaited_controller); None when it reads none."""
    if operation != "mutate" or not isinstance(review, Review) or not _reviewed(review):
        return None
    ctx = MutationContext(operation=review.operation, namespace=review.namespace,
                          settings=settings)
    return inject_awaited_controller(_with_kind(review), ctx)


def answer_review(body: bytes | Review | Answer, operation: Operation,
                  ctx: ReviewContext) -> Answer:
    """Answer one AdmissionReview (its body, or what read_review made of it). Never raises.

    200 with an AdmissionReview for every well formed review; 400 (413 when too large)
    with a Status for a malformed one.
    """
    review = read_review(body) if isinstance(body, bytes) else body
    if isinstance(review, Answer):
        return review
    try:
        doc, failed, foresight = _HANDLERS[operation](review, ctx)
    except Exception:
        log.exception("unexpected failure answering review %s", review.uid)
        warning = "topospread: internal error; the request was allowed unchecked"
        return Answer(200, allowed_response(review, [warning]), "internal_error", review)
    return Answer(200, doc, _decision(doc, failed), review, foresight)


def handle_review(body: bytes, operation: Operation, ctx: ReviewContext) -> tuple[int, RawObj]:
    """Answer one AdmissionReview: (HTTP status, JSON document); see answer_review."""
    answer = answer_review(body, operation, ctx)
    return answer.status, answer.doc
