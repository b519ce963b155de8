"""problems.py: how each domain error is answered (status, problem type, title, the fields it names)."""

from __future__ import annotations

import json

import pytest
from problems import (
    DOMAIN_KINDS,
    INTERNAL,
    domain_problem,
    field_path,
    kind_of,
    no_route_problem,
)
from tickwork.control.idempotent_create import KeyReused
from tickwork.model.errors import (
    Conflict,
    FieldError,
    Forbidden,
    IdentityUnresolved,
    InvalidInput,
    ItemTooLarge,
    NotFound,
    PayloadTooLarge,
    ResultRegionUnreachable,
    TickworkError,
    Unauthenticated,
    UnreadableItem,
)

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _answer(exc: TickworkError) -> tuple[int, dict]:
    response = domain_problem(exc, "/v1/jobs")
    assert response.content_type == "application/problem+json"
    return response.status_code, json.loads(response.body)


@pytest.mark.parametrize(
    ("exc", "status", "slug", "title", "fields"),
    [
        (
            InvalidInput([FieldError("schedule.cron", "bad"), FieldError("name", "empty")]),
            422,
            "invalid-input",
            "Invalid input",
            ["schedule.cron", "name"],
        ),
        (
            InvalidInput.one("cursor", "not a cursor from this listing"),
            422,
            "invalid-input",
            "Invalid input",
            ["cursor"],
        ),
        (PayloadTooLarge(300_000, 262_144), 413, "payload-too-large", "Payload too large", ["payload"]),
        (
            ItemTooLarge("tags", 500_000, 400_000, "payload 1 bytes, tags 2 bytes"),
            413,
            "payload-too-large",
            "Payload too large",
            ["tags"],
        ),
        (Unauthenticated("unknown API key"), 401, "unauthenticated", "Unauthenticated", []),
        (Forbidden("the caller identity is inconsistent"), 403, "forbidden", "Forbidden", []),
        (NotFound("job j1 not found"), 404, "not-found", "Not found", []),
        (Conflict("cannot pause a CANCELLED job"), 409, "conflict", "Conflict", []),
        (KeyReused("order-1"), 409, "conflict", "Conflict", ["Idempotency-Key"]),
    ],
    ids=[
        "invalid",
        "invalid one",
        "payload",
        "item",
        "unauthenticated",
        "forbidden",
        "not found",
        "conflict",
        "key reused",
    ],
)
def test_each_domain_error_has_its_status_type_title_and_fields(exc, status, slug, title, fields):
    code, body = _answer(exc)
    assert code == status == body["status"]
    assert body["type"] == f"urn:tickwork:problem:{slug}"
    assert body["title"] == title
    assert body["detail"] == str(exc)
    assert body["instance"] == "/v1/jobs"
    assert [e["field"] for e in body["errors"]] == fields


def test_every_mapped_kind_is_a_client_error():
    assert all(400 <= kind.status < 500 for kind in DOMAIN_KINDS.values())


@pytest.mark.parametrize(("retry_after", "header"), [(5, "5"), (None, None)])
def test_an_identity_that_cannot_be_resolved_is_a_503_with_retry_after_when_waiting_helps(retry_after, header):
    response = domain_problem(IdentityUnresolved("the caller's tenant could not be resolved", retry_after), "/v1/jobs")
    body = json.loads(response.body)
    assert (response.status_code, body["status"]) == (503, 503)
    assert body["type"] == "urn:tickwork:problem:identity-unresolved"
    assert body["detail"] == "the caller's tenant could not be resolved"
    assert response.headers.get("Retry-After") == header


def test_a_result_held_by_a_region_that_does_not_answer_is_a_503_naming_the_region_and_the_readable_run():
    code, body = _answer(ResultRegionUnreachable("r1", "us-east-1", "SUCCEEDED"))
    assert code == 503
    assert body["type"] == "urn:tickwork:problem:result-region-unreachable"
    assert body["region"] == "us-east-1"
    assert "held in region us-east-1" in body["detail"]
    assert "GET /v1/runs/r1" in body["detail"]  # the run's status, attempts and error are still readable
    assert "SUCCEEDED" in body["detail"]


def test_an_unreadable_item_is_a_500_that_names_what_is_unreadable():
    code, body = _answer(UnreadableItem("job", "JOB#j1", "bad enum"))
    assert code == 500
    assert body["type"] == "urn:tickwork:problem:internal-error"
    assert body["title"] == "Stored job unreadable"
    assert "job JOB#j1 is stored in a form this version cannot read" in body["detail"]
    assert body["errors"] == []


def test_a_domain_error_of_no_listed_kind_is_an_internal_error_that_says_nothing_inside():
    class Surprise(TickworkError):
        pass

    assert kind_of(Surprise("secret detail")) is INTERNAL
    code, body = _answer(Surprise("secret detail"))
    assert code == 500
    assert body["title"] == "Internal error"
    assert body["detail"] == "the request failed; try again"
    assert "secret" not in json.dumps(body)


def test_a_subclass_is_answered_as_its_listed_base():
    class Gone(NotFound):
        pass

    assert _answer(Gone("run r1 not found"))[0] == 404


@pytest.mark.parametrize(
    ("loc", "path"),
    [
        (("body", "schedule", "cron"), "schedule.cron"),
        (("body", "payload", "items", 2, "x"), "payload.items[2].x"),
        (("query", "limit"), "limit"),
        (("header", "idempotency-key"), "Idempotency-Key"),
        (("header", "x-api-key"), "X-Api-Key"),
        (("body",), "body"),
        ((), "body"),
        (("name",), "name"),
    ],
)
def test_validation_locations_become_field_paths(loc, path):
    assert field_path(loc) == path


def test_no_route_is_404_and_a_wrong_method_405_with_allow():
    missing = no_route_problem("GET", "/v1/nowhere", [])
    assert missing.status_code == 404
    assert json.loads(missing.body)["detail"] == "no route GET /v1/nowhere"
    wrong = no_route_problem("PUT", "/v1/jobs/j1", ["DELETE", "GET", "PATCH"])
    assert wrong.status_code == 405
    assert wrong.headers["Allow"] == "GET, PATCH, DELETE"
    body = json.loads(wrong.body)
    assert body["type"] == "urn:tickwork:problem:method-not-allowed"
    assert body["title"] == "Method not allowed"
    assert body["instance"] == "/v1/jobs/j1"
    # A method the path takes, with parameters no route matched, is no route: 404, not 405.
    assert no_route_problem("GET", "/v1/jobs/j1", ["GET"]).status_code == 404
