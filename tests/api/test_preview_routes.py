"""Preview routes, never-firing schedules and jitter through the real API handler (moto, fake clock)."""

from __future__ import annotations

import calendar
from datetime import date, timedelta

import pytest
from tickwork.model.clock import iso

from tests.api.conftest import GLOBEX
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessageBatch")


def _nothing_written(pipeline) -> bool:
    return all(pipeline.calls.count(op) == 0 for op in WRITES)


def test_schedule_preview_flags_a_paris_gap(api, pipeline):
    pipeline.calls.clear()
    reply = api.post(
        "/v1/schedules/preview",
        {
            "schedule": {"cron": "30 2 * * *", "timezone": "Europe/Paris"},
            "count": 3,
            "from": "2026-03-28T00:00:00Z",
        },
    )
    assert reply.status == 200, reply.text
    assert reply.json == {
        "items": [
            {"at": "2026-03-28T01:30:00.000Z", "local": "2026-03-28T02:30:00.000+01:00", "dst": None},
            {"at": "2026-03-29T01:00:00.000Z", "local": "2026-03-29T03:00:00.000+02:00", "dst": "gap"},
            {"at": "2026-03-30T00:30:00.000Z", "local": "2026-03-30T02:30:00.000+02:00", "dst": None},
        ]
    }
    assert set(pipeline.calls.by_operation()) <= {"ListRoleTags"}  # a dry run: no AWS request but the caller's


def test_schedule_preview_defaults_to_five_from_now(api):
    reply = api.post("/v1/schedules/preview", {"schedule": {"rate": "10 minutes"}})
    assert reply.status == 200, reply.text
    assert [i["at"] for i in reply.json["items"]] == [iso(START + timedelta(minutes=10 * k)) for k in range(1, 6)]


def test_job_preview_uses_the_job_s_hash_key_and_anchor(api, pipeline):
    job = api.create(schedule={"cron": "H * * * *"})
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 3})
    assert reply.status == 200, reply.text
    items = reply.json["items"]
    assert items[0]["at"] == job["next_run_at"]  # what the scheduler will run next
    stored = pipeline.services.store.jobs.get_job(job["id"])
    expected = stored.schedule.occurrences(
        START, START + timedelta(days=1), anchor=stored.created_at, hash_key=job["id"]
    )
    assert [i["at"] for i in items] == [iso(t) for t in expected[:3]]
    assert all(i["dst"] is None for i in items)


def test_job_preview_of_another_tenant_s_job_is_404(api):
    job = api.create(identity=GLOBEX)
    assert api.get(f"/v1/jobs/{job['id']}/preview").status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": {"rate": "1 hour"}, "count": 1001}, "count"),
        ({"schedule": {"rate": "1 hour"}, "count": 0}, "count"),
        ({"schedule": {"rate": "1 hour"}, "count": "5"}, "count"),
        ({"schedule": {"cron": "0 0 31 2 *"}}, "schedule.cron"),
        ({"schedule": {"rate": "1 hour"}, "from": "2026-03-28T00:00:00"}, "from"),
        ({"schedule": {"rate": "1 hour"}, "since": "2026-03-28T00:00:00Z"}, "since"),
        ({"count": 3}, "schedule"),
    ],
    ids=["count over 1000", "count 0", "count a string", "never fires", "naive from", "unknown field", "no schedule"],
)
def test_bad_schedule_previews_name_the_field(api, pipeline, body, field):
    pipeline.calls.clear()
    reply = api.post("/v1/schedules/preview", body)
    assert reply.status == 422, reply.text
    assert field in reply.fields
    assert set(pipeline.calls.by_operation()) <= {"ListRoleTags"}  # the caller's role's tags, nothing else


def test_job_preview_count_over_1000_is_422_on_count(api):
    job = api.create()
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 1001})
    assert reply.status == 422
    assert reply.fields == ["count"]
    assert api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 1000}).status == 200


def test_a_never_firing_cron_is_refused_at_create_and_patch_on_schedule_cron(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"cron": "0 0 31 2 *"}})
    assert reply.status == 422
    assert reply.fields == ["schedule.cron"]
    assert "never fires" in reply.json["errors"][0]["message"]
    assert _nothing_written(pipeline)
    job = api.create()
    pipeline.calls.clear()
    patched = api.patch(f"/v1/jobs/{job['id']}", {"schedule": {"cron": "0 0 30 2 *"}})
    assert patched.status == 422
    assert patched.fields == ["schedule.cron"]
    assert _nothing_written(pipeline)


def test_schedule_preview_of_thirty_days_and_l_skips_the_day_left_out(api):
    # 2-31 has every month's last day already: L adds nothing, and the 1st is not in it.
    reply = api.post(
        "/v1/schedules/preview",
        {"schedule": {"cron": "0 0 2-31,L * *"}, "from": "2026-01-31T12:00:00Z", "count": 2},
    )
    assert reply.status == 200, reply.text
    assert [i["at"] for i in reply.json["items"]] == ["2026-02-02T00:00:00.000Z", "2026-02-03T00:00:00.000Z"]


@pytest.mark.parametrize("state", ["cancelled", "completed"])
def test_job_preview_of_a_job_that_will_not_run_again_lists_no_occurrences(api, pipeline, state):
    if state == "cancelled":
        job = api.create(schedule={"rate": "1 hour"})
        assert api.delete(f"/v1/jobs/{job['id']}").status in (200, 204)
    else:
        job = api.create(schedule={"at": iso(START + timedelta(minutes=5))})
        pipeline.clock.advance(300)
        assert pipeline.tick()["dispatched"] == 1
        pipeline.clock.advance(0.1)
        assert pipeline.drain() == 1
    assert api.get(f"/v1/jobs/{job['id']}").json["state"] == state.upper()
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 3})
    assert reply.status == 200, reply.text
    assert reply.json == {"items": []}


# ---------------------------------------------------------------- rare crons, the end of time

RARE = "0 0 29 2 */7"  # 29 February on a Sunday: every 28 years, or 40 across a century's missing leap day
# Every such day after START, to the last instant a run id can name (13 digits of milliseconds: 2286-11-20).
RARE_DAYS = [
    f"{year}-02-29T00:00:00.000Z"
    for year in range(START.year + 1, 2287)
    if calendar.isleap(year) and date(year, 2, 29).isoweekday() == 7
]


def test_schedule_preview_of_a_rare_cron_lists_its_occurrences_to_the_end_of_time_not_500(api):
    reply = api.post("/v1/schedules/preview", {"schedule": {"cron": RARE}, "count": 1000})
    assert reply.status == 200, reply.text
    assert [i["at"] for i in reply.json["items"]] == RARE_DAYS


def test_job_preview_of_a_rare_cron_lists_its_occurrences_to_the_end_of_time_not_500(api):
    job = api.create(schedule={"cron": RARE})
    reply = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 1000})
    assert reply.status == 200, reply.text
    assert [i["at"] for i in reply.json["items"]] == RARE_DAYS


def test_jitter_on_a_rare_cron_is_checked_not_500(api):
    job = api.create(schedule={"cron": RARE})
    patched = api.patch(f"/v1/jobs/{job['id']}", {"jitter_seconds": 60})
    assert patched.status == 200, patched.text
    assert patched.json["jitter_seconds"] == 60
    assert (
        api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"cron": RARE}, "jitter_seconds": 60}).status
        == 201
    )


# ---------------------------------------------------------------- jitter


def test_jitter_is_a_job_field(api):
    job = api.create(schedule={"rate": "1 hour"}, jitter_seconds=120)
    assert job["jitter_seconds"] == 120
    assert api.create()["jitter_seconds"] == 0
    patched = api.patch(f"/v1/jobs/{job['id']}", {"jitter_seconds": 3600})
    assert patched.status == 200, patched.text
    assert patched.json["jitter_seconds"] == 3600


@pytest.mark.parametrize(
    ("jitter", "schedule", "message"),
    [
        (-1, {"rate": "1 hour"}, "greater than or equal to 0"),
        (3601, {"rate": "1 hour"}, "shortest period, 3600 s"),
        (901, {"cron": "*/15 * * * *"}, "shortest period, 900 s"),
        ("5", {"rate": "1 hour"}, "must be a number"),
    ],
)
def test_a_bad_jitter_at_create_is_422_on_jitter_seconds(api, pipeline, jitter, schedule, message):
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": schedule, "jitter_seconds": jitter})
    assert reply.status == 422, reply.text
    assert reply.fields == ["jitter_seconds"]
    assert message in reply.json["errors"][0]["message"]
    assert _nothing_written(pipeline)


def test_a_jitter_longer_than_a_gap_dst_shortens_is_422(api, pipeline):
    # Every other hour at :00 and :45 is 45 minutes apart at least, except on New York's spring-forward day:
    # 01:45 EST, then 03:00 EDT (02:00 does not exist) 15 minutes later. A run jittered by 45 minutes could
    # start after the next occurrence.
    schedule = {"cron": "0,45 1-23/2 * * *", "timezone": "America/New_York"}
    pipeline.calls.clear()
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": schedule, "jitter_seconds": 2700})
    assert reply.status == 422, reply.text
    assert reply.fields == ["jitter_seconds"]
    assert "shortest period, 900 s" in reply.json["errors"][0]["message"]
    assert _nothing_written(pipeline)
    assert api.create(schedule=schedule, jitter_seconds=900)["jitter_seconds"] == 900


def test_a_patch_that_makes_jitter_exceed_the_period_is_422_and_writes_nothing(api, pipeline):
    job = api.create(schedule={"rate": "1 hour"}, jitter_seconds=1800)
    pipeline.calls.clear()
    too_much = api.patch(f"/v1/jobs/{job['id']}", {"jitter_seconds": 7200})
    assert too_much.status == 422
    assert too_much.fields == ["jitter_seconds"]
    shorter = api.patch(f"/v1/jobs/{job['id']}", {"schedule": {"rate": "10 minutes"}})
    assert shorter.status == 422
    assert shorter.fields == ["jitter_seconds"]
    assert "shortest period, 600 s" in shorter.json["errors"][0]["message"]
    assert _nothing_written(pipeline)
    assert api.get(f"/v1/jobs/{job['id']}").json == job
