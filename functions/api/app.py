"""The Tickwork HTTP API (v1): Powertools' event handler with request validation and a generated OpenAPI.

Every route is thin: it resolves the caller's tenant, calls the domain (a service of tickwork.services) and
shapes the answer. Errors are RFC 9457 problem details (application/problem+json) naming each bad field.

Tenants (see docs/api.md):
- API_AUTH_MODE=iam (deployed; the default): from the SigV4 identity API Gateway verified, in
  requestContext.authorizer.iam. A role `tickwork-tenant-<name>` of the API's own account is tenant
  `<name>`; any other principal is `<account id>:role/<role name>`, `<account id>:user/<user name>` or
  `<account id>:root`. Nothing in the body or headers can choose the tenant.
- API_AUTH_MODE=local (the local runtime, on 127.0.0.1): tenant `default`; or, with API_KEYS_FILE (a JSON
  object mapping key -> tenant), the tenant of the `X-Api-Key` header.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.openapi.params import Path as PathParam
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, BeforeValidator
from tickwork.api_models import (
    PROBLEM_JSON,
    Health,
    JobList,
    JobSpec,
    JobUpdate,
    Problem,
    ProblemField,
    RedriveRequest,
    RedriveResult,
    RunList,
)
from tickwork.errors import FieldError, Forbidden, InvalidInput, TickworkError, Unauthenticated, UnreadableItem
from tickwork.idempotent_create import request_hash
from tickwork.models import Job, JobState, Run, RunStatus
from tickwork.observability import logger, metrics, tracer
from tickwork.services import ServicesSlot
from tickwork.store import IDEMPOTENCY_KEY, MAX_LIMIT
from tickwork.tenancy import tenant_of

VERSION = "1.0.0"

app = APIGatewayHttpResolver(enable_validation=True)

# ---------------------------------------------------------------- wiring

_slot = ServicesSlot()
services = _slot.get  # the wiring, built on first use
use_services = _slot.set  # tests and the local runtime inject theirs


# ---------------------------------------------------------------- problems (RFC 9457)


_SLUGS = {
    400: "bad-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not-found",
    409: "conflict",
    413: "payload-too-large",
    415: "unsupported-media-type",
    422: "invalid-input",
    500: "internal-error",
}


def problem_body(
    status: int, title: str, detail: str, errors: list[FieldError] | None = None, instance: str | None = None
) -> str:
    return Problem(
        type=f"urn:tickwork:problem:{_SLUGS.get(status, str(status))}",
        title=title,
        status=status,
        detail=detail,
        instance=instance,
        errors=[ProblemField(field=e.field, message=e.message) for e in errors or []],
    ).model_dump_json(exclude_none=True)


def problem(status: int, title: str, detail: str, errors: list[FieldError] | None = None) -> Response:
    instance = app.current_event.path if app.current_event else None
    return Response(
        status_code=status, content_type=PROBLEM_JSON, body=problem_body(status, title, detail, errors, instance)
    )


@app.exception_handler(TickworkError)
def _domain_error(exc: TickworkError) -> Response:
    errors: list[FieldError] = list(getattr(exc, "errors", []))
    if isinstance(exc, UnreadableItem):  # logged with the item's key where it was read
        return problem(500, exc.title, str(exc))
    if exc.status >= 500:
        logger.exception("domain error")
        return problem(500, "Internal error", "the request failed; try again")
    return problem(exc.status, exc.title, str(exc), errors)


_HEADER_NAMES = {"idempotency-key": "Idempotency-Key", "x-api-key": "X-Api-Key"}


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """Powertools/pydantic error locations as field paths: ("body", "schedule", "cron") -> schedule.cron."""
    where, *rest = list(loc) or ["body"]
    if where == "header" and rest:
        return _HEADER_NAMES.get(str(rest[0]).lower(), str(rest[0]))
    if where not in ("body", "query", "path", "header", "cookie"):
        rest = [where, *rest]
    path = ""
    for part in rest:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + str(part)
    return path or "body"


@app.exception_handler(RequestValidationError)
def _request_invalid(exc: RequestValidationError) -> Response:
    errors: list[FieldError] = []
    status = 422
    for err in exc.errors():
        kind = err.get("type", "")
        if kind == "json_invalid":
            status = 400
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
    if status == 400:
        return problem(400, "Malformed request", "the request body is not valid JSON", errors)
    detail = "; ".join(f"{e.field}: {e.message}" for e in errors)
    return problem(422, "Invalid input", detail, errors)


@app.exception_handler(RequestUnsupportedContentType)
def _unsupported(exc: RequestUnsupportedContentType) -> Response:
    return problem(
        415,
        "Unsupported media type",
        "send JSON (Content-Type: application/json)",
        [FieldError("Content-Type", "must be application/json")],
    )


@app.not_found
def _no_route(exc: NotFoundError) -> Response:
    event = app.current_event
    return problem(404, "Not found", f"no route {event.http_method} {event.path}")


@app.exception_handler(Exception)
def _unexpected(exc: Exception) -> Response:
    logger.exception("unhandled error")
    return problem(500, "Internal error", "the request failed; try again")


def tenant() -> str:
    return tenant_of(app.current_event.raw_event)


# ---------------------------------------------------------------- responses


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    text = body.model_dump_json() if isinstance(body, BaseModel) else json.dumps(body, separators=(",", ":"))
    return Response(status_code=status, content_type="application/json", body=text, headers=headers)


def _job(job: Job, status: int = 200) -> Response:
    return json_response(status, job)


def _run(run: Run, status: int = 200) -> Response:
    return json_response(status, run)


def _ok(model: Any, description: str) -> Any:
    return {"description": description, "content": {"application/json": {"model": model}}}


def _problems(*statuses: int) -> dict[int, Any]:
    text = {
        400: "Malformed request",
        401: "No caller identity (or no valid API key, locally)",
        403: "The caller's identity maps to no tenant",
        404: "Unknown id (or another tenant's)",
        409: "Conflicting state",
        413: "Payload too large",
        415: "The body is not JSON",
        422: "Invalid input, naming each field",
    }
    every = sorted({401, 403, 422, *statuses})
    return {s: {"description": text[s], "content": {PROBLEM_JSON: {"model": Problem}}} for s in every}


# Path ids arrive as sent, percent-encoded (API Gateway's rawPath); they are decoded before their length is
# checked, so the check (and the id the route gets) is the one the OpenAPI document describes.
JobId = Annotated[
    str,
    BeforeValidator(unquote),
    PathParam(description="A job id, such as j01jd2k3m4n5p6q7r8s9t0v1w2.", max_length=64),
]
RunId = Annotated[
    str,
    BeforeValidator(unquote),
    PathParam(description="A run id: `<job id>.<13-digit ms>` (or `...m` for manual).", max_length=80),
]
Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Page size, 1 to {MAX_LIMIT}.")]
Cursor = Annotated[str | None, Query(max_length=512, description="`next_cursor` of the previous page.")]

# An optional body's default: None, without making the body's schema nullable (`null` is refused).
NO_BODY: Any = None

# ---------------------------------------------------------------- routes


@app.get("/v1/health", summary="Liveness", responses={200: _ok(Health, "Alive")}, tags=["meta"])
def health():
    return json_response(200, Health(version=VERSION))


@app.get("/v1/openapi.json", summary="This OpenAPI document", tags=["meta"])
def openapi():
    return Response(status_code=200, content_type="application/json", body=openapi_document())


def openapi_document() -> str:
    return app.get_openapi_json_schema(
        title="Tickwork API",
        version=VERSION,
        summary="Jobs, runs and the dead-letter queue of a Tickwork scheduler.",
        description="Errors are RFC 9457 problem details. Deployed, requests are signed with SigV4 (IAM auth).",
    )


@app.post(
    "/v1/jobs",
    summary="Create a job",
    responses={
        201: _ok(Job, "Created (or replayed for the same Idempotency-Key and body)"),
        **_problems(400, 409, 413, 415),
    },
    tags=["jobs"],
)
def create_job(
    spec: Annotated[JobSpec, Body(description="The job.")],
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            pattern=IDEMPOTENCY_KEY.pattern,
            description="The same key and body within 24 h return the first response; another body is a 409.",
        ),
    ] = None,
):
    who = tenant()
    if idempotency_key is None:
        return _job(services().jobs.create_job(who, spec), 201)
    body, replayed = services().idempotent_create.create_job_once(
        who,
        spec,
        key=idempotency_key,
        request_hash=request_hash(app.current_event.json_body),
    )
    return json_response(201, body, {"Idempotent-Replayed": "true" if replayed else "false"})


@app.get(
    "/v1/jobs",
    summary="List your jobs, newest first",
    responses={200: _ok(JobList, "One page"), **_problems(422)},
    tags=["jobs"],
)
def list_jobs(
    limit: Limit = 50,
    cursor: Cursor = None,
    state: Annotated[JobState | None, Query()] = None,
    job_type: Annotated[str | None, Query(alias="type", max_length=64)] = None,
    name_prefix: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
):
    page = services().queries.list_jobs(
        tenant(), limit=limit, cursor=cursor, state=state, job_type=job_type, name_prefix=name_prefix
    )
    return json_response(200, JobList(items=page.items, next_cursor=page.next_cursor))


@app.get("/v1/jobs/<job_id>", summary="One job", responses={200: _ok(Job, "The job"), **_problems(404)}, tags=["jobs"])
def get_job(job_id: JobId):
    return _job(services().queries.get_job(tenant(), job_id))


@app.patch(
    "/v1/jobs/<job_id>",
    summary="Change a job; a new schedule recomputes the next occurrence",
    responses={200: _ok(Job, "The changed job"), **_problems(400, 404, 409, 413, 415)},
    tags=["jobs"],
)
def update_job(job_id: JobId, patch: Annotated[JobUpdate, Body(description="The fields to change.")]):
    return _job(services().jobs.update(tenant(), job_id, patch))


@app.delete(
    "/v1/jobs/<job_id>",
    summary="Cancel a job (idempotent)",
    responses={200: _ok(Job, "The job, CANCELLED"), **_problems(404, 409)},
    tags=["jobs"],
)
def cancel_job(job_id: JobId):
    return _job(services().jobs.cancel(tenant(), job_id))


@app.post(
    "/v1/jobs/<job_id>/pause",
    summary="Pause a job (idempotent)",
    responses={200: _ok(Job, "The job, PAUSED"), **_problems(404, 409)},
    tags=["jobs"],
)
def pause_job(job_id: JobId):
    return _job(services().jobs.pause(tenant(), job_id))


@app.post(
    "/v1/jobs/<job_id>/resume",
    summary="Resume a job (idempotent); what was missed while paused follows the misfire rule",
    responses={200: _ok(Job, "The job, ACTIVE"), **_problems(404, 409)},
    tags=["jobs"],
)
def resume_job(job_id: JobId):
    return _job(services().jobs.resume(tenant(), job_id))


@app.post(
    "/v1/jobs/<job_id>/trigger",
    summary="Run a job now, once, outside its schedule",
    responses={202: _ok(Run, "The run, QUEUED"), **_problems(404, 409)},
    tags=["jobs"],
)
def trigger_job(job_id: JobId):
    return _run(services().jobs.trigger(tenant(), job_id), 202)


@app.get(
    "/v1/jobs/<job_id>/runs",
    summary="Runs of a job, newest first",
    responses={200: _ok(RunList, "One page"), **_problems(404, 422)},
    tags=["runs"],
)
def list_runs(
    job_id: JobId,
    limit: Limit = 50,
    cursor: Cursor = None,
    status: Annotated[RunStatus | None, Query()] = None,
):
    page = services().queries.list_runs(tenant(), job_id, limit=limit, cursor=cursor, status=status)
    return json_response(200, RunList(items=page.items, next_cursor=page.next_cursor))


@app.get("/v1/runs/<run_id>", summary="One run", responses={200: _ok(Run, "The run"), **_problems(404)}, tags=["runs"])
def get_run(run_id: RunId):
    return _run(services().queries.get_run(tenant(), run_id))


@app.get(
    "/v1/runs/<run_id>/result",
    summary="The run's result document as stored in S3 (for echo, the payload)",
    responses={200: {"description": "The result document (any JSON)"}, **_problems(404)},
    tags=["runs"],
)
def get_result(run_id: RunId):
    return json_response(200, services().queries.get_result(tenant(), run_id))


@app.post(
    "/v1/runs/<run_id>/retry",
    summary="Re-queue a FAILED run; attempts start again",
    responses={202: _ok(Run, "The run, QUEUED"), **_problems(404, 409)},
    tags=["runs"],
)
def retry_run(run_id: RunId):
    return _run(services().redrive.retry_run(tenant(), run_id), 202)


@app.get(
    "/v1/dlq",
    summary="Your FAILED runs, newest first",
    responses={200: _ok(RunList, "One page"), **_problems(422)},
    tags=["dlq"],
)
def list_dlq(limit: Limit = 50, cursor: Cursor = None):
    page = services().queries.list_dlq(tenant(), limit=limit, cursor=cursor)
    return json_response(200, RunList(items=page.items, next_cursor=page.next_cursor))


@app.post(
    "/v1/dlq/redrive",
    summary="Re-queue all your FAILED runs, or the ones named",
    responses={202: _ok(RedriveResult, "Re-queued"), **_problems(400, 415)},
    tags=["dlq"],
)
def redrive(
    request: Annotated[
        RedriveRequest,
        Body(description='Optional: no body or `{}` for all FAILED runs, or `{"run_ids": [...]}`. Not `null`.'),
    ] = NO_BODY,
):
    run_ids = request.run_ids if request is not None else None
    report = services().redrive.redrive(tenant(), run_ids)
    return json_response(
        202,
        RedriveResult(
            redriven=report.redriven, run_ids=report.run_ids, not_redriven=report.not_redriven, more=report.more
        ),
    )


# ---------------------------------------------------------------- entry point


@logger.inject_lambda_context(clear_state=True, correlation_id_path="requestContext.requestId")
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return precheck(event) or app.resolve(event, context)


PUBLIC_PATHS = {"/v1/health", "/v1/openapi.json"}
BODY_PATHS = {"/v1/jobs", "/v1/dlq/redrive"}  # the POST routes that read a JSON body (and PATCH /v1/jobs/{id})


def precheck(event: dict[str, Any]) -> dict[str, Any] | None:
    """What must hold before routing and validation: the caller is authenticated (401 before any 422), and a
    JSON body is an object (Powertools would otherwise take the first element of an array body)."""
    path = event.get("rawPath") or ""

    def reply(status: int, title: str, detail: str, errors: list[FieldError] | None = None) -> dict[str, Any]:
        return {
            "statusCode": status,
            "headers": {"Content-Type": PROBLEM_JSON},
            "body": problem_body(status, title, detail, errors, path),
            "isBase64Encoded": False,
        }

    if path not in PUBLIC_PATHS:
        try:
            tenant_of(event)
        except (Unauthenticated, Forbidden) as exc:
            return reply(exc.status, exc.title, str(exc))
    content_type = str((event.get("headers") or {}).get("content-type", ""))
    method = str(event.get("requestContext", {}).get("http", {}).get("method", "")).upper()
    body = event.get("body")
    takes_body = method == "PATCH" or (method == "POST" and path in BODY_PATHS)
    if (body or takes_body) and not _is_json(content_type):
        # Only JSON is spoken. Checked here because Powertools would parse forms itself (a multipart type
        # without a boundary raised, a 500) and read a form as if it were the JSON body. A bodiless POST
        # to an action (pause, trigger, ...) may carry any Content-Type.
        message = "must be application/json"
        return reply(
            415,
            "Unsupported media type",
            "send JSON (Content-Type: application/json)",
            [FieldError("Content-Type", message)],
        )
    if body:
        text = _body_text(body, bool(event.get("isBase64Encoded")))
        if text is None:
            message = "is not valid UTF-8 text"
            return reply(400, "Malformed request", f"the request body {message}", [FieldError("body", message)])
        try:
            parsed = json.loads(text)
        except ValueError:
            return None  # not JSON: validation answers 400 (or 415 for another content type)
        if not isinstance(parsed, dict):
            message = f"must be a JSON object, not {type(parsed).__name__}"
            return reply(422, "Invalid input", f"body: {message}", [FieldError("body", message)])
    return None


def _body_text(body: str, base64_encoded: bool) -> str | None:
    """The body as text, or None when it is not UTF-8 (or not the base64 it claims to be). Powertools would
    raise on it while decoding, a 500; checked here, it is a 400 naming `body`."""
    try:
        if base64_encoded:
            return base64.b64decode(body, validate=True).decode("utf-8")
        body.encode("utf-8")  # a str with unpaired surrogates (from a JSON \udcxx escape) is no UTF-8 text
    except (ValueError, UnicodeError):
        return None
    return body


def _is_json(content_type: str) -> bool:
    """No Content-Type (JSON is assumed, as Powertools does) or application/json, with any parameters."""
    return content_type.split(";", 1)[0].strip().lower() in ("", "application/json")


__all__ = ["InvalidInput", "app", "handler", "openapi_document", "services", "use_services"]
