"""The API against its own OpenAPI document, fuzzed by schemathesis: the schema says what the server accepts.

The handler is neither ASGI nor WSGI: `wsgi` below makes it a WSGI app that calls it the way API Gateway does
(with the local runtime's own event builder, tickwork_local.runtime.apigateway), so schemathesis drives the real handler
on moto, in-process. Checks: no 5xx; every response as documented (status, content type, body schema);
schema-valid requests accepted (positive_data_acceptance); schema-invalid ones refused (negative_data_rejection).

Two phases, each as a tenant and as the admin: every operation alone (the admin only where it is the admin's:
tenants and metrics; elsewhere it is one more tenant), then the stateful phase, which follows the document's
links (create a job -> get, patch, pause, trigger, delete it; trigger -> its run; the same for workflows), so
that operations are called on ids that exist, in states a user reaches.

What the document cannot say, and how the fuzzing deals with it:
- time: `at` must be in the future. The fake clock stands just before the earliest instant the schema admits
  (2000-01-01 as written), so every schema-valid instant is in the future.
- formats: `cron`, `rate` and `time-zone` strings are checked by the server (croniter, the rate grammar, the
  IANA database). The strategies tests/openapi_formats.py registers generate valid ones; since a format is only
  an annotation to JSON Schema, the fuzzer may still put any string there, and the server's 422 naming that field
  is right.
- rules across fields, hosts, cursors: see _BEYOND_THE_SCHEMA. A positive case refused with a 422 is accepted
  only when every error it names is one of those.
- unknown ids: random ids name no job or workflow (404), and a job's or workflow's state can conflict (409):
  expected statuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.api.conftest import ACME, role_identity
from tests.harness import START
from tests.openapi_formats import register_openapi_formats

pytestmark = pytest.mark.filterwarnings(
    "ignore:No application metrics to publish:UserWarning", "ignore::DeprecationWarning"
)

BEFORE_EARLIEST = datetime(1999, 12, 30, tzinfo=UTC)
CALLERS = {"tenant": ACME, "admin": role_identity("tickwork-admin", session="ops")}
ADMINS_PATHS = "^/v1/(tenants|metrics|dead-letters)"
_calling = {"identity": ACME}  # whom the requests below come from: set by the `caller` fixture


def wsgi(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The API handler as API Gateway (HTTP API, IAM auth) would call it for this HTTP request."""
    from api import app as api_app
    from tickwork_local.runtime.apigateway import http_api_event, http_api_response
    from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    headers = [(k[5:].replace("_", "-").lower(), v) for k, v in environ.items() if k.startswith("HTTP_")]
    if environ.get("CONTENT_TYPE"):
        headers.append(("content-type", environ["CONTENT_TYPE"]))
    # rawPath is the path as sent (percent-encoded), as API Gateway hands it over.
    target = environ.get("RAW_URI") or quote(environ.get("PATH_INFO", "/"), safe="/%")
    if "?" not in target and environ.get("QUERY_STRING"):
        target += "?" + environ["QUERY_STRING"]
    event = http_api_event(method=environ["REQUEST_METHOD"], target=target, headers=headers, body=body)
    event["requestContext"]["authorizer"] = {"iam": _calling["identity"]}
    status, out_headers, out_body = http_api_response(api_app.handler(event, LocalLambdaContext("ApiFunction", 10)))
    start_response(f"{status} {'OK' if status < 400 else 'ERROR'}", out_headers)
    return [out_body]


register_openapi_formats()

# ------------------------------------------------------------------ what the document cannot say

# What JSON Schema cannot express, so a schema-valid request may still be refused with a 422 naming only
# these fields (a regular expression over the field's path), each for this reason (part of the message):
# - rules relating two fields, or depending on where a host points or what the stack may invoke;
# - strings whose `format` the server checks (cron, rate, time-zone): to JSON Schema a format is an annotation,
#   so the fuzzer may send any string there (it feeds values seen elsewhere, such as "cursor");
# - cursors: opaque and MACed by the server, only the ones it issued are valid;
# - a workflow's steps: ids that name each other (unique, known, no cycle), and JMESPath that reads only
#   upstream steps (conditions and `$from` values).
_STEP = r"steps\[\d+\]"
_BEYOND_THE_SCHEMA = (
    (r"schedule", "end_at must be after start_at"),
    (r"schedule\.end_at", "the schedule has no occurrence in the future"),
    (r"retry|steps\[\d+\]\.(compensate\.)?retry", "max_backoff_seconds must be at least backoff_seconds"),
    (r"circuit_breaker", "max_cooldown_seconds must be at least cooldown_seconds"),
    (rf"({_STEP}\.)?payload\.url", "url "),  # the host: a cloud metadata name, or a private or link-local address
    # The functions this stack may invoke: its InvokableFunctionArns, a deployment's parameter.
    (rf"({_STEP}\.)?payload\.function_arn", "InvokableFunctionArns"),
    # A secret by reference: the tenant's own names only (under SecretNamePrefix + tenant), and well formed.
    (rf"({_STEP}\.)?(compensate\.)?payload\..*", "secret"),
    (rf"({_STEP}\.)?(compensate\.)?payload\..*", "$parameter"),
    (r"schedule\.cron", ""),
    (r"schedule\.rate", ""),
    (r"schedule\.timezone", ""),
    (r"schedule\.cron", "never fires"),
    (r"jitter_seconds", "shortest period"),  # jitter is at most the schedule's period
    (r"deadline", "maximum run time"),  # a deadline is at most the longest the job's run can take
    (r"from|to", "must not be in the future"),  # a backfill's range (the fake clock is before every instant)
    (r"to", "must not be before from"),
    (r"to", "must be at most"),
    (r"cursor", "not a cursor from this listing"),
    (r"cursor", "job_ids are answered whole"),  # POST /v1/bulk/jobs: a cursor pages a tags or all selection only
    (r"cursor", "run_ids are answered whole"),  # POST /v1/bulk/runs: a cursor pages a search by filters only
    (r"start", "must be before end"),  # GET /v1/metrics: start < end (end defaults to the clock's now)
    (r"start", "at most 24 hours"),
    (rf"{_STEP}\.id", "duplicate step id"),
    (rf"{_STEP}\.depends_on\[\d+\]", ""),  # unknown, itself, or listed twice
    (rf"{_STEP}\.depends_on", "cycle"),
    (rf"{_STEP}\.condition", ""),
    (rf"{_STEP}\.payload\..*\$from", ""),
    # A step's compensation: its payload is checked by its type's model, as a step's is, but the document types
    # only the step's own (a second oneOf per step would double the schema; the compensation's type has the
    # enum); and a compensate beside `irreversible: true` is a rule relating two fields.
    (rf"{_STEP}\.compensate\.payload.*", ""),
    (rf"{_STEP}\.irreversible", "cannot have a compensate"),
    (
        rf"(({_STEP}\.)?ordering|debounce)\.key",
        "bytes",
    ),  # a key's bound is in bytes (UTF-8), the schema's in characters
    # A job's (or a step's) variants (docs/versions.md): names used once and weights of 100 at most between the
    # list's items; a type that is a registered version of the job's, a target on a `lambda` job only, and what
    # each variant runs as the job's type checks it (its payload merged over the job's).
    (rf"({_STEP}\.)?variants", "used by an earlier variant"),
    (rf"({_STEP}\.)?variants", "weights add up to"),
    (rf"({_STEP}\.)?variants\[\d+\]\.name", "`baseline` is the job's own"),
    (rf"({_STEP}\.)?variants\[\d+\]\.(type|target)", ""),
    (rf"({_STEP}\.)?variants\[\d+\]\.payload.*", ""),
    (r"window", "up to 30 days"),  # GET /v1/jobs/{id}/variants: 30 days at most
    (r"calendars", "no such calendar"),  # ids of calendars the caller has (docs/operations.md)
    (r"timezone", "unknown time zone"),
    (r"windows\[\d+\]\.cron\.cron", ""),
    (r"windows\[\d+\]\.cron", "blackout"),  # windows that open again before they close (docs/cron.md, Bounds)
    (r"calendars", "blackout"),  # calendars that only together never end
    (r"windows\[\d+\]\.range", "must be after"),
    (r"until", ""),  # a freeze: after from, not over, at most 30 days (one of until and for_seconds: the schema's)
)


def _only_beyond_the_schema(response: Any) -> bool:
    if response.status_code != 422:
        return False
    errors = response.json().get("errors", [])
    return bool(errors) and all(
        any(re.fullmatch(field, e["field"], re.DOTALL) and rule in e["message"] for field, rule in _BEYOND_THE_SCHEMA)
        for e in errors
    )


_TYPED_BY_THE_JOB = {("PATCH", "/v1/jobs/{job_id}"), ("POST", "/v1/jobs/{job_id}/trigger")}


def _a_payload_of_another_type(response: Any, case: Any) -> bool:
    """PATCH /v1/jobs/{id} and its trigger carry no type: their payload is documented as anyOf the types' payloads
    and checked against the job's own type's, which only the stored job says (the stateful phase uses real jobs)."""
    if (case.method.upper(), case.operation.path) not in _TYPED_BY_THE_JOB or response.status_code != 422:
        return False
    errors = response.json().get("errors", [])
    return bool(errors) and all(e["field"] == "payload" or e["field"].startswith("payload.") for e in errors)


def positive_data_acceptance_but_beyond_the_schema(ctx: Any, response: Any, case: Any) -> bool | None:
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        if _only_beyond_the_schema(response) or _a_payload_of_another_type(response, case):
            return None
        raise


positive_data_acceptance_but_beyond_the_schema.__name__ = "positive_data_acceptance"  # as reported

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    positive_data_acceptance_but_beyond_the_schema,
    negative_data_rejection,
    unsupported_method,  # an undeclared method on a known path: 405 with Allow
    allow_header_conformance,
]

config = schemathesis.config.SchemathesisConfig.from_dict(
    {
        "checks": {
            # Random ids name no job (404), and the state of a job generated in between can conflict (409).
            "positive_data_acceptance": {"expected-statuses": ["2xx", "401", "403", "404", "409"]},
        },
        # Only the document's own links: inferred ones (from a listing to DELETE, say) draw ids from whatever the
        # earlier scenarios left in the table, so a scenario would not replay the same (hypothesis refuses that).
        "phases": {"stateful": {"inference": {"algorithms": []}}},
    }
)


def _document() -> dict[str, Any]:
    """The API's document as GET /v1/openapi.json serves it, read at collection, where no wiring exists yet
    (the handler builds its services before any route, and they need the environment the fixtures make)."""
    from api.app import openapi_document

    return json.loads(openapi_document())


# What from_wsgi("/v1/openapi.json", wsgi) does, with the document read without a request.
schema = schemathesis.openapi.from_dict(_document(), config=config)
schema.app = wsgi
schema.location = "/v1/openapi.json"


@pytest.fixture
def fuzzing(api, pipeline):
    pipeline.clock.advance(-(START - BEFORE_EARLIEST).total_seconds())
    return api


@pytest.fixture
def caller(request: pytest.FixtureRequest) -> Iterator[str]:
    """Who calls: the tenant unless the test is parametrized (indirectly) with another of CALLERS."""
    name = getattr(request, "param", "tenant")
    _calling["identity"] = CALLERS[name]
    yield name
    _calling["identity"] = ACME


@schema.parametrize()
# Bounded for CI's 2-core machine (about 40 s of its in-process phase); derandomized, so a failure reproduces.
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_api_does_what_its_openapi_document_says(fuzzing, case):
    case.call_and_validate(checks=CHECKS)


# Elsewhere the admin is one more tenant: the tenant's run above covers it.
@schema.include(path_regex=ADMINS_PATHS).parametrize()
@pytest.mark.parametrize("caller", ["admin"], indirect=True)
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_the_admins_routes_do_what_the_document_says(fuzzing, caller, case):
    case.call_and_validate(checks=CHECKS)


class _FollowingLinks(schema.as_state_machine()):  # type: ignore[misc]
    def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
        case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)


@pytest.mark.parametrize("caller", sorted(CALLERS), indirect=True)
def test_the_api_does_what_its_document_says_along_its_links(fuzzing, caller):
    # About 20 s per caller on a 2-core machine: derandomized, 40 scenarios of up to 10 calls. No shrinking:
    # the table keeps what earlier scenarios wrote, so a replay would not draw the same (hypothesis refuses it).
    _FollowingLinks.run(
        settings=settings(
            max_examples=40,
            stateful_step_count=10,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
    )
