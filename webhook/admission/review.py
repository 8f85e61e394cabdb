"""AdmissionReview in and out: parse a review and build responses; no decisions.

Two error channels stay apart (as kopf keeps them): a body that is not a usable
AdmissionReview is a ReviewError (HTTP 400 with a JSON Status); a bad object is an
ordinary answer, `allowed: false` with the Status kube-apiserver itself would have
written (`<Kind> "<name>" is invalid: ...`, reason Invalid, code 422). The decisions
are handlers.py's.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from webhook.api.field import FieldError, aggregate, go_quote
from webhook.api.kube import RawObj
from webhook.errors import ReviewError

if TYPE_CHECKING:  # pragma: no cover - typing only
    pass

__all__ = [
    "ADMISSION_VERSIONS",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_WARNING_RUNES",
    "Operation",
    "MAX_WARNINGS_TOTAL_RUNES",
    "Review",
    "allowed_response",
    "denied_response",
    "error_status",
    "invalid_status",
    "limit_warnings",
    "object_name",
    "parse_review",
    "qualified_kind",
]

log = logging.getLogger("topospread.admission")

Operation = Literal["validate", "mutate"]

ADMISSION_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")

# kube-apiserver sends at most an object and its old version, each capped at 3 MiB by
# the request size limit; 7 MiB leaves room for both and the envelope.
MAX_BODY_BYTES = 7 * 1024 * 1024

# kube-apiserver's warning recorder (apiserver/pkg/endpoints/filters/warning.go) keeps
# 4096 runes of warning text per response; past that it cuts every warning to 256
# runes, and it drops any warning holding a control character (NewWarningHeader).
# Staying within both limits means what we send is what the user sees.
MAX_WARNING_RUNES = 256
MAX_WARNINGS_TOTAL_RUNES = 4 * 1024

REVIEWED_OPERATIONS = frozenset({"CREATE", "UPDATE"})

# No object we review nests deeper than about 20 levels (a CronJob's pod template is the
# deepest). The bound keeps every recursive walk (copies, diffs, rules) far from Python's
# recursion limit, whatever a body holds.
MAX_DEPTH = 100


@dataclass(frozen=True)
class Review:
    """The parts of an AdmissionReview request we read, checked for type.

    `obj` is the raw object as sent (never copied or normalised: a patch is computed
    against exactly this); it is a dict for CREATE and UPDATE, None otherwise.
    """

    api_version: str
    uid: str
    operation: str
    group: str
    kind: str
    namespace: str
    name: str
    sub_resource: str
    dry_run: bool
    obj: RawObj | None
    old: RawObj | None


def _fail(message: str) -> ReviewError:
    return ReviewError(f"malformed AdmissionReview: {message}")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Every byte but quotes and brackets, deleted by bytes.translate.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
# Opening brackets to "(", closing ones to ")".
_PARENS = bytes.maketrans(b"[{]}", b"(())")


def _too_deep(body: bytes, limit: int) -> bool:
    """True when the containers of `body`, a valid JSON text, nest more than `limit`
    levels (the root is level 1), read from the bytes: no walk of the parsed document.

    Escaped backslashes, then escaped quotes, are dropped (in valid JSON a backslash
    occurs only in strings, and pairs up from the left), every byte but quotes and
    brackets deleted, and what lies between quotes (strings) cut out. Each pass then
    removes the innermost pairs, "()", all at once, so the number of passes is the
    depth. Every step runs in C: a real Pod nests about 10 levels, so about 10 passes
    over a few hundred brackets.
    """
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = body.translate(None, _NOT_STRUCTURE).split(b'"')[::2]
    brackets = b"".join(outside).translate(_PARENS)
    depth = 0
    while brackets:
        depth += 1
        if depth > limit:
            return True
        brackets = brackets.replace(b"()", b"")
    return False


def _decode(body: bytes) -> Any:
    too_deep = _fail(f"the body is nested too deeply (more than {MAX_DEPTH} levels)")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:
        raise _fail(f"the body is not JSON: {exc}") from None
    # Nesting never exceeds the number of opening brackets: small bodies need no scan.
    openers = body.count(b"{") + body.count(b"[")
    if openers > MAX_DEPTH and isinstance(doc, dict | list) and _too_deep(body, MAX_DEPTH):
        raise too_deep
    return doc


def _opt_str(request: RawObj, key: str) -> str:
    value = request.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail(f"request.{key} must be a string, got {type(value).__name__}")
    return value


def _group_of(api_version: Any) -> str:
    if not isinstance(api_version, str):
        return ""
    group, _, _ = api_version.rpartition("/")
    return group


def parse_review(body: bytes) -> Review:
    """Parse and type-check an AdmissionReview; raise ReviewError (HTTP 400) when unusable."""
    if len(body) > MAX_BODY_BYTES:
        raise ReviewError(f"request body larger than {MAX_BODY_BYTES} bytes", status=413)
    doc = _decode(body)
    if not isinstance(doc, dict):
        raise _fail(f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("kind") != "AdmissionReview":
        raise _fail(f"kind must be AdmissionReview, got {doc.get('kind')!r}")
    api_version = doc.get("apiVersion")
    if api_version not in ADMISSION_VERSIONS:
        raise _fail(
            f"apiVersion must be one of {', '.join(ADMISSION_VERSIONS)}, got {api_version!r}"
        )
    request = doc.get("request")
    if not isinstance(request, dict):
        raise _fail("request is missing or not an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise _fail("request.uid is missing or not a non-empty string")
    operation = _opt_str(request, "operation")
    if not operation:
        raise _fail("request.operation is missing")

    obj = request.get("object")
    old = request.get("oldObject")
    if operation in REVIEWED_OPERATIONS and not isinstance(obj, dict):
        raise _fail(f"request.object must be an object for {operation}")
    if old is not None and not isinstance(old, dict):
        raise _fail("request.oldObject must be an object or null")

    req_kind = request.get("kind")
    if req_kind is None:
        req_kind = {}
    if not isinstance(req_kind, dict):
        raise _fail("request.kind must be an object (group, version, kind)")
    kind = req_kind.get("kind")
    group = req_kind.get("group")
    if isinstance(obj, dict):
        # The object is sent in request.kind's version, so the two must agree.
        obj_kind = obj.get("kind")
        if kind is None:
            kind = obj_kind
        elif obj_kind is not None and obj_kind != kind:
            raise _fail(f"request.object.kind {obj_kind!r} does not match request.kind {kind!r}")
        if group is None:
            group = _group_of(obj.get("apiVersion"))
    if kind is None:
        kind = ""
    if not isinstance(kind, str) or not isinstance(group or "", str):
        raise _fail("request.kind.kind and request.kind.group must be strings")

    dry_run = request.get("dryRun")
    if dry_run is not None and not isinstance(dry_run, bool):
        raise _fail("request.dryRun must be true or false")
    return Review(
        api_version=api_version,
        uid=uid,
        operation=operation,
        group=group or "",
        kind=kind,
        namespace=_opt_str(request, "namespace"),
        name=_opt_str(request, "name"),
        sub_resource=_opt_str(request, "subResource"),
        dry_run=bool(dry_run),
        obj=obj if isinstance(obj, dict) else None,
        old=old,
    )


# ---------------------------------------------------------------------------------------
# Response builders


def qualified_kind(group: str, kind: str) -> str:
    """schema.GroupKind.String(): "Pod", "Deployment.apps", "CronJob.batch"."""
    return f"{kind}.{group}" if group else kind


def object_name(obj: RawObj | None, request_name: str = "") -> str:
    """The name a denial speaks of: metadata.name, else request.name, else generateName."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
        return str(meta["name"])
    if request_name:
        return request_name
    if isinstance(meta, dict) and isinstance(meta.get("generateName"), str):
        return str(meta["generateName"])
    return ""


def invalid_status(group: str, kind: str, name: str, errors: list[FieldError]) -> RawObj:
    """The metav1.Status of apierrors.NewInvalid(GroupKind{group, kind}, name, errors)."""
    details: RawObj = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [e.cause() for e in errors]
    message = f"{qualified_kind(group, kind)} {go_quote(name)} is invalid: {aggregate(errors)}"
    return {
        "status": "Failure",
        "message": message,
        "reason": "Invalid",
        "details": details,
        "code": 422,
    }


def error_status(code: int, message: str) -> RawObj:
    """The JSON body of an HTTP error: a metav1.Status, as kube-apiserver answers."""
    reason = {
        400: "BadRequest",
        404: "NotFound",
        405: "MethodNotAllowed",
        413: "RequestEntityTooLarge",
    }
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason.get(code, "InternalError"),
        "code": code,
    }


# C0 controls, DEL and C1 controls: any of them makes kube-apiserver drop the whole warning.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", text)


def limit_warnings(warnings: Iterable[str]) -> list[str]:
    """Warnings as kube-apiserver will pass them on: no control characters, no repeats,
    each at most 256 runes, at most 4096 runes in all; what does not fit is counted in a
    last warning."""
    out: list[str] = []
    seen: set[str] = set()
    total = 0
    dropped = 0
    for raw in warnings:
        # Cut before cleaning (one character for one): a long warning costs no more.
        text = _clean(str(raw)[:MAX_WARNING_RUNES])
        if not text or text in seen:
            continue
        # Keep room for the "more warnings" note.
        if total + len(text) > MAX_WARNINGS_TOTAL_RUNES - 64:
            dropped += 1
            continue
        seen.add(text)
        out.append(text)
        total += len(text)
    if dropped:
        out.append(f"topospread: {dropped} more warning(s) not shown")
    return out


def _envelope(review: Review, response: RawObj) -> RawObj:
    return {"apiVersion": review.api_version, "kind": "AdmissionReview", "response": response}


def allowed_response(
    review: Review, warnings: Iterable[str] = (), patch: list[RawObj] | None = None
) -> RawObj:
    """An AdmissionReview allowing the request, with a JSONPatch when `patch` is not empty."""
    response: RawObj = {"uid": review.uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        raw = json.dumps(patch, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        response["patch"] = base64.b64encode(raw).decode("ascii")
    kept = limit_warnings(warnings)
    if kept:
        response["warnings"] = kept
    return _envelope(review, response)


def denied_response(
    review: Review, errors: list[FieldError], warnings: Iterable[str] = ()
) -> RawObj:
    """An AdmissionReview denying the request with kube-apiserver's Invalid status."""
    name = object_name(review.obj, review.name)
    response: RawObj = {
        "uid": review.uid,
        "allowed": False,
        "status": invalid_status(review.group, review.kind, name, errors),
    }
    kept = limit_warnings(warnings)
    if kept:
        response["warnings"] = kept
    return _envelope(review, response)
