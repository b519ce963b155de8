"""POST /v1/jobs/{id}/backfill through the real API handler (moto, fake clock)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.model.clock import iso
from tickwork.model.ids import run_id_for

from tests.api.conftest import GLOBEX
from tests.conftest import json_lines
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

HOUR = timedelta(hours=1)


def _hourly_job_an_hour_old(api, pipeline):
    job = api.create(schedule={"cron": "0 * * * *"})
    pipeline.clock.advance(600)
    return job


def test_backfill_answers_what_it_created_then_what_existed(api, pipeline):
    job = _hourly_job_an_hour_old(api, pipeline)
    body = {"from": iso(START - 3 * HOUR), "to": iso(START), "max_runs": 10}
    first = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert first.status == 200, first.text
    occurrences = [START - k * HOUR for k in (3, 2, 1, 0)]
    assert first.json == {
        "created": 4,
        "runs": [run_id_for(job["id"], at) for at in occurrences],
        "existing": [],
    }
    runs = api.get(f"/v1/jobs/{job['id']}/runs").json["items"]
    assert {r["trigger"] for r in runs} == {"backfill"}
    again = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert again.status == 200
    assert again.json == {"created": 0, "runs": [], "existing": [iso(at) for at in occurrences]}


def test_backfill_of_a_cancelled_job_is_409(api, pipeline):
    job = _hourly_job_an_hour_old(api, pipeline)
    assert api.delete(f"/v1/jobs/{job['id']}").status in (200, 204)
    pipeline.calls.clear()
    reply = api.post(f"/v1/jobs/{job['id']}/backfill", {"from": iso(START - HOUR), "to": iso(START)})
    assert reply.status == 409
    assert pipeline.calls.count("PutItem") == 0


def test_backfill_of_another_tenant_s_job_is_404(api, pipeline):
    job = api.create(identity=GLOBEX)
    reply = api.post(f"/v1/jobs/{job['id']}/backfill", {"from": iso(START - HOUR), "to": iso(START)})
    assert reply.status == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"from": iso(START + HOUR), "to": iso(START + 2 * HOUR)}, "from"),
        ({"from": iso(START - HOUR), "to": iso(START + HOUR)}, "to"),
        ({"from": iso(START - HOUR), "to": iso(START - 2 * HOUR)}, "to"),
        ({"from": iso(START - timedelta(days=40)), "to": iso(START - HOUR)}, "to"),
        ({"from": iso(START - HOUR), "to": iso(START), "max_runs": 1001}, "max_runs"),
        ({"from": iso(START - HOUR), "to": iso(START), "max_runs": 0}, "max_runs"),
        ({"from": iso(START - HOUR)}, "to"),
        ({"from": "yesterday", "to": iso(START)}, "from"),
        ({"from": iso(START - HOUR), "to": iso(START), "dry_run": True}, "dry_run"),
    ],
    ids=[
        "from in the future",
        "to in the future",
        "reversed",
        "wider than 31 days",
        "max_runs over 1000",
        "max_runs 0",
        "no to",
        "from not an instant",
        "unknown field",
    ],
)
def test_bad_backfills_name_the_field_and_write_nothing(api, pipeline, body, field):
    job = _hourly_job_an_hour_old(api, pipeline)
    pipeline.calls.clear()
    reply = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert reply.status == 422, reply.text
    assert reply.fields == [field]
    assert pipeline.calls.count("PutItem") == 0
    assert pipeline.calls.count("SendMessageBatch") == 0
    assert api.get(f"/v1/jobs/{job['id']}/runs").json["items"] == []


def test_backfill_logs_at_info_without_a_reserved_key(api, pipeline, info_logs):
    # Deployed, the functions log at INFO (template.yaml's LogLevel): a log key that is a LogRecord attribute
    # ("created") made logging raise, and the backfill answer 500 after its runs were written and sent.
    job = _hourly_job_an_hour_old(api, pipeline)
    body = {"from": iso(START - HOUR), "to": iso(START)}
    first = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    again = api.post(f"/v1/jobs/{job['id']}/backfill", body)
    assert (first.status, again.status) == (200, 200), (first.text, again.text)
    assert (first.json["created"], len(again.json["existing"])) == (2, 2)
    lines = [r for r in json_lines(info_logs.getvalue()) if r.get("message") == "backfill"]
    assert [(r["job_id"], r["runs_created"], r["runs_existing"]) for r in lines] == [
        (job["id"], 2, 0),
        (job["id"], 0, 2),
    ]
