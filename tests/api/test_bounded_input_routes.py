"""Bounded input through the real API handler (moto, fake clock): a calendar whose window never fires, or whose
blackout has no end within the budget, is a 422 naming the window with nothing written; calendars that only
together never end are refused on the job naming `calendars`; a job behind chained windows previews the first
instant after them (docs/cron.md, "Bounds")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_calendar_pipeline import stored_calendar_whose_window_never_fires

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessageBatch")


def _nothing_written(pipeline: Any) -> bool:
    return all(pipeline.calls.count(op) == 0 for op in WRITES)


def _calendar(windows: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"name": "n", "windows": windows, **fields}


def _create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    reply = api.post("/v1/calendars", body)
    assert reply.status == 201, reply.text
    return reply.json


@pytest.mark.parametrize(
    ("windows", "field"),
    [
        ([{"cron": "0 0 30 2 *", "duration_minutes": 60}], "windows[0].cron"),  # never fires (…cron.cron)
        ([{"cron": "* * * * * *", "duration_minutes": 10080}], "windows[0].cron"),  # a week, every second
        ([{"dates": ["2026-12-25"]}, {"cron": "0 * * * *", "duration_minutes": 90}], "windows[1].cron"),  # never ends
    ],
)
def test_a_calendar_that_cannot_be_evaluated_within_the_budget_is_refused_naming_the_window(
    api, pipeline, windows, field
):
    pipeline.calls.clear()
    reply = api.post("/v1/calendars", _calendar(windows))
    assert reply.status == 422, reply.text
    assert any(f == field or f.startswith(f"{field}.") for f in reply.fields), reply.fields
    assert _nothing_written(pipeline)
    existing = _create(api, _calendar([{"dates": ["2026-12-25"]}]))
    pipeline.calls.clear()
    replaced = api.request("PUT", f"/v1/calendars/{existing['id']}", body=_calendar(windows))
    assert replaced.status == 422, replaced.text
    assert any(f == field or f.startswith(f"{field}.") for f in replaced.fields), replaced.fields
    assert _nothing_written(pipeline)


def test_calendars_that_only_together_never_end_are_refused_on_the_job_naming_calendars(api, pipeline):
    mornings = _create(api, _calendar([{"cron": "0 0 * * *", "duration_minutes": 13 * 60}]))
    evenings = _create(api, _calendar([{"cron": "0 12 * * *", "duration_minutes": 13 * 60}]))
    both = [mornings["id"], evenings["id"]]
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "calendars": both})
    assert reply.status == 422, reply.text
    assert reply.fields == ["calendars"]
    assert _nothing_written(pipeline)
    job = api.create(calendars=[mornings["id"]])
    pipeline.calls.clear()
    patched = api.patch(f"/v1/jobs/{job['id']}", {"calendars": both})
    assert patched.status == 422, patched.text
    assert patched.fields == ["calendars"]
    assert _nothing_written(pipeline)
    workflow = {"name": "w", "schedule": {"rate": "1 hour"}, "steps": [{"id": "a", "type": "echo"}]}
    refused = api.post("/v1/workflows", {**workflow, "calendars": both})
    assert refused.status == 422, refused.text
    assert refused.fields == ["calendars"]


def test_a_job_behind_chained_windows_previews_the_first_instant_after_them(api):
    # The fake clock starts on Saturday 2026-11-21; windows open every weekday hour for 90 minutes, so Monday's
    # 10:00 occurrence runs once Friday's last window (23:00) has closed: Saturday 00:30.
    weekdays = _create(api, _calendar([{"cron": "0 * * * 1-5", "duration_minutes": 90}]))
    job = api.create(schedule={"cron": "0 10 * * 1"}, calendars=[weekdays["id"]], on_blocked="DEFER")
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 1})
    assert reply.status == 200, reply.text
    [item] = reply.json["items"]
    assert (item["at"], item["blocked"]["then"], item["blocked"]["runs_at"]) == (
        "2026-11-23T10:00:00.000Z",
        "defer",
        "2026-11-28T00:30:00.000Z",
    )


def test_a_calendar_window_that_fires_rarely_is_accepted(api):
    leap_monday = _create(api, _calendar([{"cron": "0 0 * 2 1#5", "duration_minutes": 60}]))  # a Monday 29 Feb
    job = api.create(schedule={"cron": "0 10 * * *"}, calendars=[leap_monday["id"]], on_blocked="DEFER")
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 3})
    assert reply.status == 200, reply.text
    assert all("blocked" not in i for i in reply.json["items"])


def test_a_workflow_condition_nested_past_the_parser_s_stack_is_refused_naming_it(api, pipeline):
    nested = "(" * 600 + "steps.a.result" + ")" * 600
    body = {
        "name": "w",
        "schedule": {"rate": "1 hour"},
        "steps": [{"id": "a", "type": "echo"}, {"id": "b", "type": "echo", "depends_on": ["a"], "condition": nested}],
    }
    pipeline.calls.clear()
    reply = api.post("/v1/workflows", body)
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[1].condition"]
    assert _nothing_written(pipeline)


def test_a_job_naming_a_stored_calendar_whose_window_never_fires_previews_instead_of_500(api, pipeline):
    # Stored before a window's cron had to fire: it never opens, and blocks nothing.
    never = stored_calendar_whose_window_never_fires(pipeline, "acme")
    job = api.create(schedule={"cron": "0 10 * * *"}, calendars=[never.id], on_blocked="DEFER")
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 3})
    assert reply.status == 200, reply.text
    assert all("blocked" not in i for i in reply.json["items"])
