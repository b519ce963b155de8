"""/v1/calendars through the real API handler (moto, fake clock): a tenant's CRUD, tenant scoping, jobs that name
calendars, preview marking blocked occurrences, and bad input refused by name with nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import GLOBEX

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessageBatch")
BLACK_FRIDAY = {
    "name": "black friday",
    "timezone": "America/New_York",
    "windows": [{"from": "2026-11-27T00:00:00-05:00", "to": "2026-11-30T00:00:00-05:00"}],
}


def _nothing_written(pipeline: Any) -> bool:
    return all(pipeline.calls.count(op) == 0 for op in WRITES)


def _create(api: Any, body: dict[str, Any] = BLACK_FRIDAY, **kwargs: Any) -> dict[str, Any]:
    reply = api.post("/v1/calendars", body, **kwargs)
    assert reply.status == 201, reply.text
    return reply.json


def test_a_calendar_is_created_read_listed_replaced_and_deleted(api):
    created = _create(api)
    assert created["id"].startswith("c")
    assert created["mode"] == "exclude"
    assert created["version"] == 1
    assert created["windows"] == [{"from": "2026-11-27T05:00:00.000Z", "to": "2026-11-30T05:00:00.000Z"}]
    path = f"/v1/calendars/{created['id']}"
    assert api.get(path).json == created
    assert api.get("/v1/calendars").json == {"items": [created]}
    replaced = api.request("PUT", path, body={**BLACK_FRIDAY, "mode": "include", "name": "open"})
    assert replaced.status == 200, replaced.text
    assert (replaced.json["mode"], replaced.json["name"], replaced.json["version"]) == ("include", "open", 2)
    assert api.delete(path).status == 200
    assert api.get(path).status == 404
    assert api.get("/v1/calendars").json == {"items": []}


def test_another_tenant_s_calendar_is_not_found_and_not_listed(api):
    created = _create(api)
    path = f"/v1/calendars/{created['id']}"
    assert api.get(path, identity=GLOBEX).status == 404
    assert api.delete(path, identity=GLOBEX).status == 404
    assert api.get("/v1/calendars", identity=GLOBEX).json == {"items": []}
    assert api.get(path).status == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**BLACK_FRIDAY, "windows": [{"from": "2026-11-27T00:00:00Z"}]}, "windows[0].range.to"),
        (
            {**BLACK_FRIDAY, "windows": [{"cron": "0 22 * * *", "duration_minutes": 10081}]},
            "windows[0].cron.duration_minutes",
        ),
        ({**BLACK_FRIDAY, "timezone": "America/Gotham"}, "timezone"),
        ({**BLACK_FRIDAY, "mode": "sometimes"}, "mode"),
    ],
)
def test_a_bad_calendar_is_refused_naming_the_field_and_nothing_is_written(api, pipeline, body, field):
    pipeline.calls.clear()
    reply = api.post("/v1/calendars", body)
    assert reply.status == 422, reply.text
    assert any(f.endswith(field) for f in reply.fields), reply.fields
    assert _nothing_written(pipeline)


def test_a_job_naming_a_calendar_it_cannot_see_is_refused_and_nothing_is_written(api, pipeline):
    theirs = _create(api, identity=GLOBEX)
    missing = "c" + "0" * 25
    for calendars in ([theirs["id"]], [missing]):
        pipeline.calls.clear()
        reply = api.post(
            "/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "calendars": calendars}
        )
        assert reply.status == 422, reply.text
        assert reply.fields == ["calendars"]
        assert _nothing_written(pipeline)
    job = api.create()
    pipeline.calls.clear()
    reply = api.patch(f"/v1/jobs/{job['id']}", {"calendars": [theirs["id"]]})
    assert reply.status == 422, reply.text
    assert reply.fields == ["calendars"]
    assert _nothing_written(pipeline)


def test_an_unknown_on_blocked_is_refused(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "on_blocked": "WAIT"})
    assert reply.status == 422, reply.text
    assert reply.fields == ["on_blocked"]
    assert _nothing_written(pipeline)


def test_a_job_and_a_workflow_name_their_tenant_s_calendars(api):
    calendar = _create(api)
    job = api.create(calendars=[calendar["id"]], on_blocked="DEFER")
    assert (job["calendars"], job["on_blocked"]) == ([calendar["id"]], "DEFER")
    workflow = api.post(
        "/v1/workflows",
        {
            "name": "w",
            "schedule": {"rate": "1 hour"},
            "steps": [{"id": "a", "type": "echo"}],
            "calendars": [calendar["id"]],
        },
    )
    assert workflow.status == 201, workflow.text
    assert workflow.json["calendars"] == [calendar["id"]]
    assert workflow.json["on_blocked"] == "SKIP"


def test_preview_marks_each_blocked_occurrence_and_what_happens_to_it(api):
    # The fake clock starts on 2026-11-21 at 12:00 UTC; a daily 09:00 New York job meets Black Friday weekend.
    calendar = _create(api)
    daily = {"cron": "0 9 * * *", "timezone": "America/New_York"}
    skip = api.create(schedule=daily, calendars=[calendar["id"]])
    items = api.get(f"/v1/jobs/{skip['id']}/preview", query={"count": 10}).json["items"]
    blocked = {i["at"]: i.get("blocked") for i in items}
    assert [at for at, b in blocked.items() if b] == [
        "2026-11-27T14:00:00.000Z",
        "2026-11-28T14:00:00.000Z",
        "2026-11-29T14:00:00.000Z",
    ]
    assert blocked["2026-11-27T14:00:00.000Z"] == {
        "reason": "calendar",
        "by": calendar["id"],
        "then": "skip",
        "runs_at": None,
    }
    assert "blocked" not in items[0]  # an occurrence it does not block is as before
    defer = api.create(schedule=daily, calendars=[calendar["id"]], on_blocked="DEFER")  # catch-up LATEST
    items = api.get(f"/v1/jobs/{defer['id']}/preview", query={"count": 10}).json["items"]
    marks = [(i["at"], i["blocked"]["then"], i["blocked"]["runs_at"]) for i in items if "blocked" in i]
    assert marks == [
        ("2026-11-27T14:00:00.000Z", "skip", None),
        ("2026-11-28T14:00:00.000Z", "skip", None),
        ("2026-11-29T14:00:00.000Z", "defer", "2026-11-30T05:00:00.000Z"),
    ]


def test_a_calendars_blocked_spans_over_the_next_days_are_one_read_and_refused_past_their_bound(api, pipeline):
    created = _create(api)
    path = f"/v1/calendars/{created['id']}/blocked"
    pipeline.calls.clear()
    week = api.get(path, query={"from": "2026-11-26T00:00:00Z"})
    assert week.status == 200, week.text
    assert week.json["spans"] == [{"from": "2026-11-27T05:00:00.000Z", "until": "2026-11-30T05:00:00.000Z"}]
    assert (week.json["until"], week.json["complete"]) == ("2026-12-03T00:00:00.000Z", True)
    assert pipeline.calls.count() == 1  # the calendar, read once
    assert _nothing_written(pipeline)
    assert api.get(path, query={"days": 15}).fields == ["days"]
    assert api.get(path, identity=GLOBEX).status == 404
