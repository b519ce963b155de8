"""How the API spells errors: RFC 9457 problem details (application/problem+json), one kind per status.

The domain's errors (tickwork.model.errors) say what happened; this maps each to its status, its problem type
(`urn:tickwork:problem:<slug>`) and its title, and builds the bodies. Every body names the offending fields in
`errors` (an empty list when there are none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from tickwork.control.api_bodies import PROBLEM_JSON, Problem, ProblemField
from tickwork.model.errors import (
    Conflict,
    FieldError,
    Forbidden,
    IdentityUnresolved,
    InvalidInput,
    NotFound,
    NotRetryable,
    QuotaExceeded,
    ResultRegionUnreachable,
    TickworkError,
    TooLarge,
    Unauthenticated,
    UnreadableItem,
)
from tickwork.model.errors import field_path as domain_field_path
from tickwork.observability import logger


@dataclass(frozen=True)
class ProblemKind:
    status: int
    slug: str
    title: str

    @property
    def type(self) -> str:
        return f"urn:tickwork:problem:{self.slug}"


MALFORMED = ProblemKind(400, "bad-request", "Malformed request")
UNAUTHENTICATED = ProblemKind(401, "unauthenticated", "Unauthenticated")
FORBIDDEN = ProblemKind(403, "forbidden", "Forbidden")
NOT_FOUND = ProblemKind(404, "not-found", "Not found")
METHOD_NOT_ALLOWED = ProblemKind(405, "method-not-allowed", "Method not allowed")
CONFLICT = ProblemKind(409, "conflict", "Conflict")
TOO_LARGE = ProblemKind(413, "payload-too-large", "Payload too large")
UNSUPPORTED_MEDIA_TYPE = ProblemKind(415, "unsupported-media-type", "Unsupported media type")
INVALID_INPUT = ProblemKind(422, "invalid-input", "Invalid input")
QUOTA_EXCEEDED = ProblemKind(429, "quota-exceeded", "Quota exceeded")
INTERNAL = ProblemKind(500, "internal-error", "Internal error")
IDENTITY_UNRESOLVED = ProblemKind(503, "identity-unresolved", "Caller identity unresolved")
RESULT_REGION_UNREACHABLE = ProblemKind(503, "result-region-unreachable", "Result's region unreachable")

# Each domain error (or its nearest listed base class) and how it is answered; any other is an internal error.
DOMAIN_KINDS: dict[type[TickworkError], ProblemKind] = {
    InvalidInput: INVALID_INPUT,
    TooLarge: TOO_LARGE,
    Unauthenticated: UNAUTHENTICATED,
    Forbidden: FORBIDDEN,
    NotFound: NOT_FOUND,
    Conflict: CONFLICT,
    QuotaExceeded: QUOTA_EXCEEDED,
}


def kind_of(exc: TickworkError) -> ProblemKind:
    return next((DOMAIN_KINDS[cls] for cls in type(exc).__mro__ if cls in DOMAIN_KINDS), INTERNAL)


def problem(
    kind: ProblemKind,
    detail: str,
    errors: Sequence[FieldError] = (),
    instance: str | None = None,
    title: str | None = None,
) -> Problem:
    return Problem(
        type=kind.type,
        title=title or kind.title,
        status=kind.status,
        detail=detail,
        instance=instance,
        errors=[ProblemField(field=e.field, message=e.message) for e in errors],
    )


def problem_json(body: Problem) -> str:
    return body.model_dump_json(exclude_none=True)


def as_response(body: Problem, headers: dict[str, str] | None = None) -> Response:
    return Response(status_code=body.status, content_type=PROBLEM_JSON, body=problem_json(body), headers=headers)


def domain_problem(exc: TickworkError, instance: str | None) -> Response:
    if isinstance(exc, UnreadableItem):  # logged with the item's key where it was read
        return as_response(problem(INTERNAL, str(exc), instance=instance, title=f"Stored {exc.kind} unreadable"))
    if isinstance(exc, IdentityUnresolved):  # logged with the role and IAM's error where it was read
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
        return as_response(problem(IDENTITY_UNRESOLVED, str(exc), instance=instance), headers)
    if isinstance(exc, ResultRegionUnreachable):  # logged with the S3 error where it was read
        plain = problem(RESULT_REGION_UNREACHABLE, str(exc), instance=instance).model_dump()
        return as_response(Problem(**plain, region=exc.region))
    kind = kind_of(exc)
    if kind is INTERNAL:
        logger.exception("domain error")
        return as_response(problem(INTERNAL, "the request failed; try again", instance=instance))
    if isinstance(exc, QuotaExceeded):
        return quota_problem(exc, instance)
    if isinstance(exc, NotRetryable):  # the code beside the text: what a script branches on
        plain = problem(kind, str(exc), instance=instance).model_dump()
        return as_response(Problem(**plain, reason=exc.reason))
    return as_response(problem(kind, str(exc), exc.errors, instance))


def quota_problem(exc: QuotaExceeded, instance: str | None) -> Response:
    """429 naming the quota, its limit and the current count; `Retry-After` only where waiting can help."""
    plain = problem(QUOTA_EXCEEDED, str(exc), instance=instance).model_dump()
    body = Problem(**plain, quota=exc.quota, limit=exc.limit, current=exc.current)
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return as_response(body, headers)


def unexpected_problem(instance: str | None) -> Response:
    logger.exception("unhandled error")
    return as_response(problem(INTERNAL, "the request failed; try again", instance=instance))


# ---------------------------------------------------------------- request validation (Powertools, pydantic)

_HEADER_NAMES = {"idempotency-key": "Idempotency-Key", "x-api-key": "X-Api-Key"}


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """Powertools/pydantic error locations as field paths: ("body", "schedule", "cron") -> schedule.cron."""
    where, *rest = list(loc) or ["body"]
    if where == "header" and rest:
        return _HEADER_NAMES.get(str(rest[0]).lower(), str(rest[0]))
    if where not in ("body", "query", "path", "header", "cookie"):
        rest = [where, *rest]
    return domain_field_path(rest) or "body"


def validation_problem(exc: RequestValidationError, instance: str | None) -> Response:
    """A body that is not JSON is a 400; anything else the validation refused is a 422 naming each field."""
    errors: list[FieldError] = []
    malformed = False
    for err in exc.errors():
        kind = err.get("type", "")
        if kind == "json_invalid":
            malformed = True
            detail = (err.get("ctx") or {}).get("error", "invalid JSON")
            errors.append(FieldError("body", f"the body is not valid JSON: {detail}"))
            continue
        message = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        loc = tuple(err.get("loc", ("body",)))
        if kind == "missing" and loc == ("body",):
            message = "a JSON body is required"
        if len(loc) >= 2 and loc[-1] == "[key]":  # a mapping's key (tags): name the mapping, quote the key
            key = str(loc[-2])
            shown = key if len(key) <= 40 else key[:40] + "..."
            message = f"key {shown!r}: {message}"
            loc = loc[:-2]
        errors.append(FieldError(field_path(loc), message))
    if malformed:
        return as_response(problem(MALFORMED, "the request body is not valid JSON", errors, instance))
    detail = "; ".join(f"{e.field}: {e.message}" for e in errors)
    return as_response(problem(INVALID_INPUT, detail, errors, instance))


UNSUPPORTED_MEDIA_TYPE_DETAIL = "send JSON (Content-Type: application/json)"
NOT_JSON = FieldError("Content-Type", "must be application/json")


def unsupported_media_type_problem(instance: str | None) -> Response:
    return as_response(problem(UNSUPPORTED_MEDIA_TYPE, UNSUPPORTED_MEDIA_TYPE_DETAIL, [NOT_JSON], instance))


# ---------------------------------------------------------------- no route

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def no_route_problem(method: str, path: str, allowed: Sequence[str]) -> Response:
    """404 for a path no route has; 405, with the methods it takes in `Allow`, for a known path."""
    if not allowed or method in allowed:  # a method the path takes: its parameters matched no route
        return as_response(problem(NOT_FOUND, f"no route {method} {path}", instance=path))
    allow = ", ".join(m for m in METHODS if m in allowed)
    return as_response(
        problem(METHOD_NOT_ALLOWED, f"{path} takes {allow}, not {method}", instance=path), {"Allow": allow}
    )
