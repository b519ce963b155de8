"""Issue #9's defects, one regression test (or a few) per defect, named after it.

Bad input gets a clear problem naming the field, and changes nothing: no job, no run, no idempotency record.
"""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.clock import iso

from tests.api.conftest import build_event
from tests.api.test_bad_input import WRITES
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

SOON = iso(START + timedelta(hours=1))


def _job(**changes: Any) -> dict[str, Any]:
    return {"name": "report", "type": "echo", "payload": {"n": 1}, "schedule": {"rate": "1 hour"}, **changes}


def _assert_nothing_written(pipeline) -> None:
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def _assert_problem(reply, status: int, field: str) -> None:
    assert reply.status == status, reply.text
    assert reply.headers["content-type"] == "application/problem+json"
    assert field in reply.fields, reply.json


def _table_items(pipeline) -> list[dict[str, Any]]:
    db = pipeline.services.clients.client("dynamodb")
    return db.scan(TableName=pipeline.services.settings.table_name)["Items"]


def _idempotency_records(pipeline) -> list[dict[str, Any]]:
    return [i for i in _table_items(pipeline) if i["pk"]["S"].startswith("IDEM#")]


# ---------------------------------------------------------------- 9: instants a run id cannot hold


FAR_FUTURE_CASES = [
    ("at in 2290", {"at": "2290-01-01T00:00:00Z"}, "schedule.at"),
    ("start_at in 2290", {"rate": "1 hour", "start_at": "2290-01-01T00:00:00Z"}, "schedule.start_at"),
    ("end_at in 2290", {"rate": "1 hour", "end_at": "2290-01-01T00:00:00Z"}, "schedule.end_at"),
    ("at in 2100", {"at": "2100-01-01T00:00:00Z"}, "schedule.at"),
    ("start_at in 1970", {"rate": "1 hour", "start_at": "1970-01-01T00:00:00Z"}, "schedule.start_at"),
    ("start_at in year 1", {"cron": "0 2 * * *", "start_at": "0001-01-01T00:00:00Z"}, "schedule.start_at"),
]


@pytest.mark.parametrize(("schedule", "field"), [c[1:] for c in FAR_FUTURE_CASES], ids=[c[0] for c in FAR_FUTURE_CASES])
def test_far_future_or_absurdly_early_instants_are_refused_at_create(api, pipeline, schedule, field):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _job(schedule=schedule), headers={"Idempotency-Key": "k-9"})
    _assert_problem(reply, 422, field)
    assert "2000 to 2099" in reply.text
    _assert_nothing_written(pipeline)


@pytest.mark.parametrize(("schedule", "field"), [c[1:] for c in FAR_FUTURE_CASES], ids=[c[0] for c in FAR_FUTURE_CASES])
def test_far_future_or_absurdly_early_instants_are_refused_at_patch(api, pipeline, schedule, field):
    job = api.create()
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"schedule": schedule})
    _assert_problem(reply, 422, field)
    _assert_nothing_written(pipeline)
    assert api.get(f"/v1/jobs/{job['id']}").json == job


def test_the_last_accepted_instant_still_fits_a_run_id(api):
    job = api.create(schedule={"at": "2099-12-31T23:59:59.999+00:00"})
    assert job["next_run_at"] == "2099-12-31T23:59:59.999Z"


# ---------------------------------------------------------------- 12: a 500 that burned the idempotency key


def test_oversized_tags_are_refused_naming_tags_and_leave_the_idempotency_key_free(api, pipeline):
    """45 tags of 10 KB overflowed DynamoDB's 400 KB item: a 500 after the key was taken, then a 409."""
    huge_tags = {f"k{i}": "v" * 10240 for i in range(45)}
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _job(tags=huge_tags), headers={"Idempotency-Key": "order-12"})
    _assert_problem(reply, 422, "tags.k0")
    _assert_nothing_written(pipeline)
    corrected = api.post("/v1/jobs", _job(tags={"team": "data"}), headers={"Idempotency-Key": "order-12"})
    assert corrected.status == 201, corrected.text
    assert corrected.headers["idempotent-replayed"] == "false"


TAG_CASES = [
    ("key over 128 characters", {"k" * 129: "v"}, "tags"),
    ("value over 256 characters", {"team": "v" * 257}, "tags.team"),
    ("51 tags", {f"k{i}": "v" for i in range(51)}, "tags"),
]


@pytest.mark.parametrize(("tags", "field"), [c[1:] for c in TAG_CASES], ids=[c[0] for c in TAG_CASES])
def test_tag_limits_are_enforced_at_create_and_patch(api, pipeline, tags, field):
    job = api.create()
    pipeline.calls.clear()
    _assert_problem(api.post("/v1/jobs", _job(tags=tags), headers={"Idempotency-Key": "t"}), 422, field)
    _assert_problem(api.patch(f"/v1/jobs/{job['id']}", {"tags": tags}), 422, field)
    _assert_nothing_written(pipeline)


def test_tags_at_their_limits_are_accepted(api):
    tags = {f"{i:03d}" + "k" * 125: "v" * 256 for i in range(50)}
    assert api.create(tags=tags)["tags"] == tags


def test_a_job_item_over_the_size_budget_is_413_before_any_write(api, pipeline, monkeypatch):
    """The whole stored item (payload, tags, the rest) is measured before the key is claimed or anything written."""
    from tickwork.control import job_factory

    monkeypatch.setattr(job_factory, "MAX_JOB_ITEM_BYTES", 4096)
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _job(payload={"blob": "x" * 5000}), headers={"Idempotency-Key": "k-size"})
    _assert_problem(reply, 413, "payload")
    _assert_nothing_written(pipeline)
    tagged = api.post("/v1/jobs", _job(tags={f"t{i}": "v" * 200 for i in range(30)}), headers={"Idempotency-Key": "k2"})
    _assert_problem(tagged, 413, "tags")
    job = api.create()
    pipeline.calls.clear()
    _assert_problem(api.patch(f"/v1/jobs/{job['id']}", {"payload": {"blob": "x" * 5000}}), 413, "payload")
    _assert_nothing_written(pipeline)


def _fail_job_puts(pipeline, code: str = "ValidationException", times: int = 1) -> list[int]:
    """Make the next `times` puts of a job item fail as DynamoDB would (the idempotency record's go through): a
    PutItem, or the TransactWriteItems that puts it with its audit record."""
    from botocore.exceptions import ClientError

    db = pipeline.services.clients.client("dynamodb")
    failed: list[int] = []

    def refuse(params: dict[str, Any], **_: Any) -> None:
        puts = [params, *(item["Put"] for item in params.get("TransactItems", []) if "Put" in item)]
        job_put = any(str(p.get("Item", {}).get("pk", {}).get("S", "")).startswith("JOB#") for p in puts)
        if job_put and len(failed) < times:
            failed.append(1)
            raise ClientError({"Error": {"Code": code, "Message": "injected storage failure"}}, "PutItem")

    db.meta.events.register_first("before-parameter-build.dynamodb.PutItem", refuse)
    db.meta.events.register_first("before-parameter-build.dynamodb.TransactWriteItems", refuse)
    return failed


@pytest.mark.parametrize("code", ["ValidationException", "InternalServerError"])
def test_a_storage_failure_after_claiming_the_idempotency_key_releases_it(api, pipeline, code):
    failed = _fail_job_puts(pipeline, code)
    first = api.post("/v1/jobs", _job(name="first try"), headers={"Idempotency-Key": "order-12b"})
    assert failed == [1]
    assert first.status == 500
    assert first.headers["content-type"] == "application/problem+json"
    assert _idempotency_records(pipeline) == []  # the failed request left no record
    corrected = api.post("/v1/jobs", _job(name="corrected"), headers={"Idempotency-Key": "order-12b"})
    assert corrected.status == 201, corrected.text
    assert corrected.json["name"] == "corrected"
    assert len(api.get("/v1/jobs").json["items"]) == 1


def test_a_failure_after_the_job_was_written_keeps_the_key_for_the_retry(api, pipeline, monkeypatch):
    """If the job was written, the record stays (it names the job), so a retry returns that job, never a second."""
    records = pipeline.services.idempotency

    def lost(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("connection reset while saving the response")

    monkeypatch.setattr(records, "save_response", lost)
    assert api.post("/v1/jobs", _job(), headers={"Idempotency-Key": "order-12c"}).status == 500
    monkeypatch.undo()
    retried = api.post("/v1/jobs", _job(), headers={"Idempotency-Key": "order-12c"})
    assert retried.status == 201
    assert retried.headers["idempotent-replayed"] == "true"
    assert len(api.get("/v1/jobs").json["items"]) == 1


# ---------------------------------------------------------------- 14: naive times read as UTC


NAIVE_CASES = [
    ("naive at", {"at": "2026-12-01T09:00", "timezone": "America/New_York"}, "schedule.at"),
    (
        "naive start_at",
        {"cron": "0 9 * * *", "timezone": "America/New_York", "start_at": "2026-12-01T09:00"},
        "schedule.start_at",
    ),
    (
        "naive end_at",
        {"rate": "1 hour", "timezone": "America/New_York", "end_at": "2026-12-01T09:00:00"},
        "schedule.end_at",
    ),
    ("date only", {"rate": "1 hour", "start_at": "2026-12-01"}, "schedule.start_at"),
]


@pytest.mark.parametrize(("schedule", "field"), [c[1:] for c in NAIVE_CASES], ids=[c[0] for c in NAIVE_CASES])
def test_naive_times_are_refused_not_read_as_utc(api, pipeline, schedule, field):
    job = api.create()
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _job(schedule=schedule), headers={"Idempotency-Key": "k-14"})
    _assert_problem(reply, 422, field)
    assert "offset" in reply.text
    _assert_problem(api.patch(f"/v1/jobs/{job['id']}", {"schedule": schedule}), 422, field)
    _assert_nothing_written(pipeline)


def test_times_with_an_offset_are_the_instant_they_name(api):
    job = api.create(schedule={"at": "2026-12-01T09:00:00-05:00", "timezone": "America/New_York"})
    assert job["schedule"]["at"] == "2026-12-01T14:00:00.000Z"
    assert job["next_run_at"] == "2026-12-01T14:00:00.000Z"
    assert api.get(f"/v1/jobs/{job['id']}").json == job  # stored with Z, read back the same


# ---------------------------------------------------------------- 18: a body that is not UTF-8


def _undecodable(method: str, path: str, *, base64_encoded: bool) -> dict[str, Any]:
    if base64_encoded:
        event = build_event(method, path, raw_body=base64.b64encode(b'{"name": "caf\xe9 \xff"}').decode())
        event["isBase64Encoded"] = True
    else:  # a text body that cannot be UTF-8 (an unpaired surrogate, as a JSON \udcff escape decodes to)
        event = build_event(method, path, raw_body='{"name": "\udcff"}')
    return event


@pytest.mark.parametrize("base64_encoded", [True, False], ids=["base64", "raw"])
def test_a_body_that_is_not_utf8_is_400_naming_body(api, pipeline, base64_encoded):
    job = api.create()
    pipeline.calls.clear()
    for method, path in (("POST", "/v1/jobs"), ("PATCH", f"/v1/jobs/{job['id']}"), ("POST", "/v1/dlq/redrive")):
        reply = api.call(_undecodable(method, path, base64_encoded=base64_encoded))
        _assert_problem(reply, 400, "body")
        assert "UTF-8" in reply.text
    _assert_nothing_written(pipeline)


def test_a_body_that_is_not_base64_though_flagged_so_is_400_naming_body(api, pipeline):
    event = build_event("POST", "/v1/jobs", raw_body="not base64 at all!")
    event["isBase64Encoded"] = True
    _assert_problem(api.call(event), 400, "body")
    _assert_nothing_written(pipeline)


# ---------------------------------------------------------------- 19: an empty tag key, then 500 on every read


def test_an_empty_tag_key_is_refused_naming_tags(api, pipeline):
    job = api.create()
    pipeline.calls.clear()
    _assert_problem(api.post("/v1/jobs", _job(tags={"": "x"}), headers={"Idempotency-Key": "k-19"}), 422, "tags")
    _assert_problem(api.patch(f"/v1/jobs/{job['id']}", {"tags": {"": "x"}}), 422, "tags")
    _assert_nothing_written(pipeline)


def _corrupt_job(pipeline, api, **overrides: Any) -> str:
    """A job item written straight to the table in a form the code cannot read (as an older bug could leave)."""
    job = api.create(name="to be corrupted")
    db = pipeline.services.clients.client("dynamodb")
    table = pipeline.services.settings.table_name
    item = db.get_item(TableName=table, Key={"pk": {"S": f"JOB#{job['id']}"}, "sk": {"S": "JOB"}})["Item"]
    item.update(overrides)
    db.put_item(TableName=table, Item=item)
    return job["id"]


def test_an_unreadable_stored_job_never_takes_the_listing_down(api, pipeline, monkeypatch):
    from tickwork.store import reading

    logged: list[dict[str, Any]] = []
    monkeypatch.setattr(reading.logger, "error", lambda message, extra=None, **_: logged.append(extra or {}))
    good = api.create(name="fine")
    bad = _corrupt_job(pipeline, api, priority={"S": "high"}, schedule={"M": {}})
    also_good = api.create(name="also fine")
    listing = api.get("/v1/jobs")
    assert listing.status == 200, listing.text
    assert {j["id"] for j in listing.json["items"]} == {also_good["id"], good["id"]}
    seen, cursor = [], None
    for _ in range(5):  # page by one: the unreadable one is skipped, the rest still pages
        page = api.get("/v1/jobs", query={"limit": 1, **({"cursor": cursor} if cursor else {})})
        assert page.status == 200, page.text
        seen += [j["id"] for j in page.json["items"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted([also_good["id"], good["id"]])
    assert {"item_pk": f"JOB#{bad}", "item_sk": "JOB"}.items() <= logged[0].items()  # logged with the item's key


def test_an_unreadable_stored_job_answers_a_clear_error_and_breaks_no_other_job(api, pipeline):
    good = api.create(name="fine")
    bad = _corrupt_job(pipeline, api, state={"S": "ZOMBIE"})
    for method, path in (
        ("GET", f"/v1/jobs/{bad}"),
        ("POST", f"/v1/jobs/{bad}/pause"),
        ("POST", f"/v1/jobs/{bad}/trigger"),
        ("GET", f"/v1/jobs/{bad}/runs"),
        ("PATCH", f"/v1/jobs/{bad}"),
    ):
        reply = api.request(method, path, body={"name": "x"} if method == "PATCH" else None)
        assert reply.status == 500, (method, path, reply.text)
        assert reply.headers["content-type"] == "application/problem+json"
        assert reply.json["title"] == "Stored job unreadable"
        assert bad in reply.json["detail"]
    assert api.get(f"/v1/jobs/{good['id']}").status == 200
    assert api.post(f"/v1/jobs/{good['id']}/pause").status == 200
    assert api.post(f"/v1/jobs/{good['id']}/trigger").status == 202
    assert api.get(f"/v1/jobs/{good['id']}/runs").status == 200
    assert {j["id"] for j in api.get("/v1/jobs").json["items"]} == {good["id"]}


def test_unreadable_items_are_counted_as_a_metric(api, pipeline, monkeypatch):
    from tickwork.observability import metrics

    counted: list[tuple[str, float]] = []
    monkeypatch.setattr(metrics, "add_metric", lambda name, unit, value, **_: counted.append((name, value)))
    _corrupt_job(pipeline, api, payload_json={"S": "{not json"})
    assert api.get("/v1/jobs").status == 200
    assert ("UnreadableItems", 1) in counted


def test_stored_times_with_z_still_read_back(api, pipeline):
    job = api.create(schedule={"cron": "0 9 * * *", "timezone": "America/New_York", "start_at": SOON})
    raw = _table_items(pipeline)
    stored = next(i for i in raw if i["pk"]["S"] == f"JOB#{job['id']}")
    assert stored["schedule"]["M"]["start_at"]["S"].endswith("Z")
    assert api.get(f"/v1/jobs/{job['id']}").json == job


# ---------------------------------------------------------------- 20: the OpenAPI document and the server disagreed


@pytest.fixture
def document(api):
    return api.get("/v1/openapi.json").json


def test_patch_fields_are_optional_but_not_nullable_in_the_schema_as_on_the_server(api, document, pipeline):
    update = document["components"]["schemas"]["JobUpdate"]
    assert update.get("required", []) == []
    for name, prop in update["properties"].items():
        assert "null" not in json.dumps(prop), (name, prop)  # neither `type: null` nor an anyOf with it
        assert "default" not in prop, name
    job = api.create()
    for name in update["properties"]:
        reply = api.patch(f"/v1/jobs/{job['id']}", {name: None})
        assert reply.status == 422, name
        assert reply.fields == [name]  # the field itself, not a union member's path


def test_redrive_body_is_required_and_names_runs_or_all_in_the_schema_as_on_the_server(api, document, pipeline):
    body = document["paths"]["/v1/dlq/redrive"]["post"]["requestBody"]
    assert body["required"] is True
    schema = body["content"]["application/json"]["schema"]
    assert schema.get("$ref") == "#/components/schemas/RedriveRequest", schema
    redrive = document["components"]["schemas"]["RedriveRequest"]
    assert redrive["oneOf"] == [{"required": ["run_ids"]}, {"required": ["all"]}]
    assert redrive["properties"]["all"]["const"] is True
    assert "null" not in json.dumps(redrive["properties"])
    assert api.post("/v1/dlq/redrive").status == 422
    assert api.post("/v1/dlq/redrive", {}).status == 422
    assert api.post("/v1/dlq/redrive", {"all": True}).status == 202
    assert api.post("/v1/dlq/redrive", {"run_ids": ["x"]}).status == 202
    null = api.call(build_event("POST", "/v1/dlq/redrive", raw_body="null"))
    _assert_problem(null, 422, "body")


SCHEDULES = [
    ({}, False),
    ({"timezone": "UTC"}, False),
    ({"at": None}, False),
    ({"rate": "1 hour"}, True),
    ({"cron": "0 2 * * *", "at": None}, True),
    ({"at": SOON, "cron": "0 2 * * *"}, False),
    ({"at": SOON}, True),
    ({"at": "2026-12-01T09:00"}, False),  # naive: the pattern refuses it too
    ({"at": "2290-01-01T00:00:00Z"}, False),
]


@pytest.mark.parametrize(("schedule", "valid"), SCHEDULES, ids=[json.dumps(s) for s, _ in SCHEDULES])
def test_a_schedule_without_exactly_one_kind_is_invalid_by_the_schema_as_on_the_server(api, document, schedule, valid):
    from jsonschema import Draft202012Validator

    spec = {"name": "n", "type": "echo", "schedule": schedule}
    checker = Draft202012Validator(
        {"$ref": "#/components/schemas/JobSpec", "components": document["components"]},
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )
    assert checker.is_valid(spec) is valid
    assert (api.post("/v1/jobs", spec).status == 201) is valid


def test_path_ids_are_length_checked_once_decoded(api, pipeline):
    encoded = "%6A" * 60  # 180 characters as sent, "jjj..." (60) once decoded: within the 64 the document says
    reply = api.get(f"/v1/jobs/{encoded}")
    assert reply.status == 404, reply.text
    assert api.get(f"/v1/runs/{'%41' * 80}").status == 404
    too_long = api.get(f"/v1/jobs/{'j' * 65}")
    _assert_problem(too_long, 422, "job_id")
    job = api.create()
    quoted = "".join(f"%{ord(c):02X}" for c in job["id"])  # the real id, every character percent-encoded
    assert api.get(f"/v1/jobs/{quoted}").json == job


NOT_NUMBERS = [("priority", "5"), ("priority", True), ("timeout_seconds", "60"), ("retry", {"max_attempts": "3"})]


@pytest.mark.parametrize(("field", "value"), NOT_NUMBERS, ids=[f"{f}={v!r}" for f, v in NOT_NUMBERS])
def test_numbers_as_strings_or_booleans_are_refused_as_the_schema_says(api, pipeline, field, value):
    """pydantic's lax mode took "5" and true for integers, which the document (JSON Schema) does not."""
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", _job(**{field: value}))
    assert reply.status == 422, reply.text
    assert reply.fields[0].startswith(field)
    _assert_nothing_written(pipeline)
    assert api.post("/v1/jobs", _job(priority=5.0)).json["priority"] == 5  # 5.0 is an integer in JSON Schema


@pytest.mark.parametrize("content_type", ["multipart/form-data", "application/x-www-form-urlencoded", "text/plain"])
def test_a_body_that_is_not_json_is_415_never_a_500(api, pipeline, content_type):
    job = api.create()
    pipeline.calls.clear()
    for method, path in (("POST", "/v1/jobs"), ("PATCH", f"/v1/jobs/{job['id']}"), ("POST", "/v1/dlq/redrive")):
        reply = api.request(method, path, raw_body="name=x", headers={"content-type": content_type})
        _assert_problem(reply, 415, "Content-Type")
    _assert_nothing_written(pipeline)


def test_a_bodiless_action_may_carry_any_content_type(api):
    job = api.create()
    assert (
        api.post(f"/v1/jobs/{job['id']}/pause", headers={"content-type": "application/x-www-form-urlencoded"}).status
        == 200
    )
