"""Round 4 (issue 34), bad input: a deadline refused only when it truly cannot be missed; bad input answered with
a 4xx naming the field (never a 500), with nothing written; the OpenAPI document says what the server checks; and
one validator per concept: create and PATCH refuse the same field values alike."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.api.test_bad_input import HUGE, PAST, SOON, VALID, WRITES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _nothing_written(pipeline: Any) -> None:
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


# ---------------------------------------------------------------- 12: the deadline's cap


@pytest.mark.parametrize(
    "spec",
    [
        # The issue's: its occurrence may start 1,800 s late (jitter), so a 600 s deadline is missed often.
        {"jitter_seconds": 1800, "timeout_seconds": 60, "retry": {"max_attempts": 1}, "misfire_grace_seconds": 0},
        # The same with no handler time beyond the one segment: the jitter alone makes it missable.
        {
            "jitter_seconds": 1800,
            "timeout_seconds": 60,
            "max_run_seconds": 60,
            "retry": {"max_attempts": 1},
            "misfire_grace_seconds": 0,
        },
        # No jitter: a handler that yields goes on for up to max_run_seconds, one segment of 60 s at a time.
        {"timeout_seconds": 60, "max_run_seconds": 3600, "retry": {"max_attempts": 1}, "misfire_grace_seconds": 0},
    ],
    ids=["jitter", "jitter alone", "durable segments"],
)
def test_deadline_that_jitter_can_miss_is_accepted(api, spec):
    reply = api.post("/v1/jobs", {**VALID, "schedule": {"rate": "1 hour"}, **spec, "deadline": {"within_seconds": 600}})
    assert reply.status == 201, reply.text
    assert reply.json["deadline"]["within_seconds"] == 600


def test_deadline_past_the_longest_a_run_can_take_is_still_refused(api, pipeline):
    # 300 s of jitter, then one attempt of at most 60 s of handler time (max_run_seconds bounds its segments).
    spec = {
        "jitter_seconds": 300,
        "timeout_seconds": 60,
        "max_run_seconds": 60,
        "retry": {"max_attempts": 1},
        "misfire_grace_seconds": 0,
    }
    body = {**VALID, "schedule": {"rate": "1 hour"}, **spec}
    assert api.post("/v1/jobs", {**body, "name": "at the longest", "deadline": {"within_seconds": 360}}).status == 201
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {**body, "deadline": {"within_seconds": 361}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["deadline"]
    assert "360 s" in reply.json["errors"][0]["message"]
    _nothing_written(pipeline)


# ---------------------------------------------------------------- 14: 4xx, never 500


def test_patch_deadline_over_max_run_time_is_422_naming_the_field(api, pipeline):
    over = {"deadline": {"within_seconds": 604799}}
    created = api.post("/v1/jobs", {**VALID, **over})
    assert created.status == 422, created.text
    job = api.create(**VALID)
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", over)
    assert reply.status == 422, reply.text
    assert reply.headers["content-type"] == "application/problem+json"
    assert reply.fields == created.fields == ["deadline"]
    _nothing_written(pipeline)
    assert api.get(f"/v1/jobs/{job['id']}").json == job


FREEZE = {"for_seconds": 1800, "reason": "deploy 1.42"}


@pytest.mark.parametrize(
    ("selector", "field"),
    [
        ({"job_ids": ["j" * 5000] * 100}, "selector.job_ids[0]"),
        ({"tags": {f"k{i}": "v" * 10_000 for i in range(50)}}, "selector.tags.k0"),
    ],
    ids=["job ids", "tags"],
)
def test_freeze_selector_over_item_size_is_refused_naming_the_field(api, pipeline, selector, field):
    pipeline.calls.clear()
    reply = api.post("/v1/freezes", {**FREEZE, "selector": selector})
    assert 400 <= reply.status < 500, reply.text
    assert field in reply.fields
    _nothing_written(pipeline)
    assert api.get("/v1/freezes").json == {"items": []}


@pytest.fixture
def document(api) -> dict[str, Any]:
    reply = api.get("/v1/openapi.json")
    assert reply.status == 200
    return reply.json


def test_trigger_413_is_documented(api, pipeline, document):
    job = api.create(**VALID)
    reply = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": HUGE})
    assert reply.status == 413, reply.text
    assert reply.fields == ["payload"]
    assert "413" in document["paths"]["/v1/jobs/{job_id}/trigger"]["post"]["responses"]


def _validator(document: dict[str, Any], component: str) -> Draft202012Validator:
    """A JSON Schema validator of one component of the document, its $refs resolved within the document."""
    registry = Registry().with_resource("urn:doc", Resource.from_contents(document, default_specification=DRAFT202012))
    return Draft202012Validator({"$ref": f"urn:doc#/components/schemas/{component}"}, registry=registry)


WORKFLOW = {
    "name": "undoable",
    "schedule": {"rate": "1 hour"},
    "steps": [{"id": "a", "type": "echo", "compensate": {"type": "echo"}}],
}


def _workflow(**step: Any) -> dict[str, Any]:
    body = copy.deepcopy(WORKFLOW)
    body["steps"][0].update(step)
    return body


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (_workflow(type="carrier-pigeon"), "steps[0].type"),
        (_workflow(compensate={"type": "carrier-pigeon"}), "steps[0].compensate.type"),
    ],
    ids=["step", "compensation"],
)
def test_workflow_step_type_has_the_job_types_enum(api, pipeline, document, body, field):
    for component in ("WorkflowSpec", "WorkflowUpdate"):
        assert _validator(document, "WorkflowSpec").is_valid(WORKFLOW)
        shown = body if component == "WorkflowSpec" else {"steps": body["steps"]}
        assert not _validator(document, component).is_valid(shown), (component, field)
    pipeline.calls.clear()
    reply = api.post("/v1/workflows", body)
    assert reply.status == 422, reply.text
    assert field in reply.fields
    _nothing_written(pipeline)


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"for_seconds": 60}, True),
        ({"until": SOON}, True),
        ({"until": SOON, "for_seconds": None}, True),
        ({"until": SOON, "for_seconds": 60}, False),
        ({}, False),
        ({"until": None, "for_seconds": None}, False),
    ],
    ids=["for_seconds", "until", "until, for_seconds null", "both", "neither", "both null"],
)
def test_freeze_until_and_for_seconds_exclusive_in_schema(api, document, body, valid):
    freeze = {"selector": {"all": True}, "reason": "deploy", **body}
    assert _validator(document, "FreezeSpec").is_valid(freeze) is valid
    reply = api.post("/v1/freezes", freeze)
    assert (reply.status == 201) is valid, reply.text
    if not valid:
        assert reply.status == 422
        assert reply.fields == ["until"]


# ---------------------------------------------------------------- item 3: one validator per concept

# Bad values of every field a PATCH may change, each refused at create: (case id, the fields given, status).
# The fields given together where one field's rule depends on another's (a deadline on the retries, the jitter on
# the schedule).
BAD_FIELD_VALUES: list[tuple[str, dict[str, Any], int]] = [
    ("name empty", {"name": ""}, 422),
    ("name too long", {"name": "n" * 201}, 422),
    ("name not a string", {"name": 7}, 422),
    ("name null", {"name": None}, 422),
    ("payload a list", {"payload": [1]}, 422),
    ("payload refused by its type", {"payload": {"fail_attempts": -1}}, 422),
    ("payload too large", {"payload": HUGE}, 413),
    ("schedule empty", {"schedule": {}}, 422),
    ("schedule cron bad", {"schedule": {"cron": "61 * * * *"}}, 422),
    ("schedule cron never fires", {"schedule": {"cron": "0 0 30 2 *"}}, 422),
    ("schedule at past", {"schedule": {"at": PAST}}, 422),
    ("schedule timezone unknown", {"schedule": {"cron": "0 2 * * *", "timezone": "Mars/Olympus"}}, 422),
    ("schedule rate bad", {"schedule": {"rate": "5 fortnights"}}, 422),
    ("schedule ended", {"schedule": {"cron": "0 2 * * *", "end_at": PAST}}, 422),
    ("schedule null", {"schedule": None}, 422),
    ("priority 10", {"priority": 10}, 422),
    ("priority a string", {"priority": "5"}, 422),
    ("retry attempts 0", {"retry": {"max_attempts": 0}}, 422),
    ("retry cap below base", {"retry": {"backoff_seconds": 60, "max_backoff_seconds": 10}}, 422),
    ("retry unknown field", {"retry": {"attempts": 2}}, 422),
    ("timeout 0", {"timeout_seconds": 0}, 422),
    ("timeout over the executor's", {"timeout_seconds": 841}, 422),
    ("max_run_seconds 0", {"max_run_seconds": 0}, 422),
    ("misfire grace negative", {"misfire_grace_seconds": -1}, 422),
    ("overlap unknown", {"overlap": "SOMETIMES"}, 422),
    ("catchup unknown", {"catchup": "SOME"}, 422),
    (
        "circuit breaker cap below cooldown",
        {"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": 60, "max_cooldown_seconds": 10}},
        422,
    ),
    ("jitter negative", {"jitter_seconds": -1}, 422),
    ("jitter over the period", {"schedule": {"rate": "10 minutes"}, "jitter_seconds": 601}, 422),
    ("start precision unknown", {"start_precision": "nano"}, 422),
    ("tags too many", {"tags": {f"k{i}": "v" for i in range(51)}}, 422),
    ("tag value too long", {"tags": {"team": "v" * 257}}, 422),
    ("concurrency limit 0", {"concurrency": {"key": "k", "limit": 0}}, 422),
    ("rate limit with both units", {"rate_limit": {"key": "k", "per_second": 1, "per_minute": 1}}, 422),
    ("calendar unknown", {"calendars": ["c-nowhere"]}, 422),
    ("on_blocked unknown", {"on_blocked": "LATER"}, 422),
    ("ordering key too long", {"ordering": {"key": "k" * 257}}, 422),
    ("debounce 0 s", {"debounce": {"key": "k", "seconds": 0}}, 422),
    ("notify unknown event", {"notify": ["Run Exploded"]}, 422),
    ("deadline 0", {"deadline": {"within_seconds": 0}}, 422),
    ("deadline unknown on_miss", {"deadline": {"within_seconds": 60, "on_miss": "PANIC"}}, 422),
    ("deadline over the maximum run time", {"deadline": {"within_seconds": 604799}}, 422),
    (
        "deadline over the retries' maximum",
        {
            "timeout_seconds": 60,
            "max_run_seconds": 60,
            "retry": {"max_attempts": 1},
            "misfire_grace_seconds": 0,
            "deadline": {"within_seconds": 61},
        },
        422,
    ),
]


@pytest.mark.parametrize(("fields", "status"), [c[1:] for c in BAD_FIELD_VALUES], ids=[c[0] for c in BAD_FIELD_VALUES])
def test_create_and_patch_refuse_the_same_values_alike(api, pipeline, fields, status):
    pipeline.calls.clear()
    created = api.post("/v1/jobs", {**VALID, **fields})
    assert created.status == status, created.text
    _nothing_written(pipeline)
    job = api.create(**VALID)
    pipeline.calls.clear()
    patched = api.patch(f"/v1/jobs/{job['id']}", fields)
    assert (patched.status, patched.fields) == (created.status, created.fields), (created.text, patched.text)
    _nothing_written(pipeline)
    assert api.get(f"/v1/jobs/{job['id']}").json == job


def _steps(**step: Any) -> list[dict[str, Any]]:
    return [{"id": "a", "type": "echo", **step}]


# The same for a workflow's fields (PATCH /v1/workflows/{id} may change every one).
BAD_WORKFLOW_FIELD_VALUES: list[tuple[str, dict[str, Any], int]] = [
    ("name empty", {"name": ""}, 422),
    ("schedule cron never fires", {"schedule": {"cron": "0 0 30 2 *"}}, 422),
    ("schedule at past", {"schedule": {"at": PAST}}, 422),
    ("steps empty", {"steps": []}, 422),
    ("step type unknown", {"steps": _steps(type="carrier-pigeon")}, 422),
    ("step payload refused by its type", {"steps": _steps(payload={"fail_attempts": -1})}, 422),
    ("step payload too large", {"steps": _steps(payload=HUGE)}, 413),
    ("step depends on itself", {"steps": _steps(depends_on=["a"])}, 422),
    ("step ids twice", {"steps": [*_steps(), *_steps()]}, 422),
    ("step deadline 0", {"steps": _steps(deadline={"within_seconds": 0})}, 422),
    ("step timeout over the executor's", {"steps": _steps(timeout_seconds=841)}, 422),
    ("compensation type unknown", {"steps": _steps(compensate={"type": "carrier-pigeon"})}, 422),
    ("priority 10", {"priority": 10}, 422),
    ("retry cap below base", {"retry": {"backoff_seconds": 60, "max_backoff_seconds": 10}}, 422),
    ("timeout 0", {"timeout_seconds": 0}, 422),
    ("misfire grace negative", {"misfire_grace_seconds": -1}, 422),
    ("tags too many", {"tags": {f"k{i}": "v" for i in range(51)}}, 422),
    ("compensation order unknown", {"compensation": {"order": "sideways"}}, 422),
    ("calendar unknown", {"calendars": ["c-nowhere"]}, 422),
    ("on_blocked unknown", {"on_blocked": "LATER"}, 422),
]
VALID_WORKFLOW = {"name": "flow", "schedule": {"rate": "1 hour"}, "steps": _steps()}


@pytest.mark.parametrize(
    ("fields", "status"),
    [c[1:] for c in BAD_WORKFLOW_FIELD_VALUES],
    ids=[c[0] for c in BAD_WORKFLOW_FIELD_VALUES],
)
def test_workflow_create_and_patch_refuse_the_same_values_alike(api, pipeline, fields, status):
    pipeline.calls.clear()
    created = api.post("/v1/workflows", {**VALID_WORKFLOW, **fields})
    assert created.status == status, created.text
    _nothing_written(pipeline)
    made = api.post("/v1/workflows", VALID_WORKFLOW)
    assert made.status == 201, made.text
    workflow = made.json
    pipeline.calls.clear()
    patched = api.patch(f"/v1/workflows/{workflow['id']}", fields)
    assert (patched.status, patched.fields) == (created.status, created.fields), (created.text, patched.text)
    _nothing_written(pipeline)
    assert api.get(f"/v1/workflows/{workflow['id']}").json == workflow


PAYLOAD_CASES = [c for c in BAD_FIELD_VALUES if set(c[1]) == {"payload"}]


@pytest.mark.parametrize(("fields", "status"), [c[1:] for c in PAYLOAD_CASES], ids=[c[0] for c in PAYLOAD_CASES])
def test_a_trigger_refuses_the_payloads_create_refuses_alike(api, pipeline, fields, status):
    created = api.post("/v1/jobs", {**VALID, **fields})
    assert created.status == status, created.text
    job = api.create(**VALID)
    pipeline.calls.clear()
    triggered = api.post(f"/v1/jobs/{job['id']}/trigger", fields)
    assert (triggered.status, triggered.fields) == (created.status, created.fields), (created.text, triggered.text)
    _nothing_written(pipeline)
