"""GET /v1/runs/stuck: the caller's runs QUEUED over 5 minutes past their time or RUNNING past their lease, as the
tick counts them in StuckRuns, oldest first; none of another tenant's; listed every time, not only on the
ticks their entries come due."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tickwork.model.states import DeferReason, RunStatus

from tests.api.conftest import ACME, GLOBEX

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def triggered(api, name: str, identity=ACME) -> dict:
    """A run of a new job, QUEUED now (its scheduled time)."""
    job = api.create(identity, name=name, schedule={"rate": "1 day"})
    reply = api.post(f"/v1/jobs/{job['id']}/trigger", identity=identity)
    assert reply.status == 202, reply.text
    return reply.json


def lease(pipeline, run: dict, seconds: int) -> None:
    pipeline.services.store.leases.lease_run(
        run["id"], owner="gone", now=pipeline.clock.now(), lease_for=timedelta(seconds=seconds)
    )


def test_a_run_queued_past_the_threshold_and_a_run_past_its_lease_are_listed(api, pipeline):
    queued = triggered(api, "never taken")
    lapsed = triggered(api, "executor died")
    lease(pipeline, lapsed, 60)
    live = triggered(api, "still working")
    lease(pipeline, live, 3600)
    triggered(api, "globex's", identity=GLOBEX)
    pipeline.clock.advance(5 * 60)
    recent = triggered(api, "queued a minute ago")
    pipeline.clock.advance(60)

    reply = api.get("/v1/runs/stuck")

    assert reply.status == 200, reply.text
    assert reply.json == {
        "as_of": "2026-11-21T12:06:00.000Z",
        "items": [
            {
                "run_id": queued["id"],
                "job_id": queued["job_id"],
                "tenant": "acme",
                "status": "QUEUED",
                "scheduled_for": "2026-11-21T12:00:00.000Z",
                "since": "2026-11-21T12:00:00.000Z",
                "reason": "queued_past_threshold",
            },
            {
                "run_id": lapsed["id"],
                "job_id": lapsed["job_id"],
                "tenant": "acme",
                "status": "RUNNING",
                "scheduled_for": "2026-11-21T12:00:00.000Z",
                "since": "2026-11-21T12:01:00.000Z",
                "reason": "running_past_lease",
            },
        ],
        "more": False,
    }
    assert recent["id"] not in reply.text


def test_no_stuck_runs_is_an_empty_list(api, pipeline):
    run = triggered(api, "on time")
    lease(pipeline, run, 3600)
    triggered(api, "just queued")
    pipeline.clock.advance(4 * 60)

    reply = api.get("/v1/runs/stuck")

    assert reply.status == 200, reply.text
    assert reply.json == {"as_of": "2026-11-21T12:04:00.000Z", "items": [], "more": False}


def test_a_stuck_run_stays_listed_after_the_tick_re_sends_it(api, pipeline):
    """The tick sees a stuck run only when its entry comes due; each re-send moves the entry on. The list reads
    ahead of that, so a stuck run is listed on every call between the re-sends too."""
    queued = triggered(api, "never taken")
    listed = []
    for _ in range(10):
        pipeline.clock.advance(60)
        pipeline.services.dispatcher.claim_due_runs()
        listed.append([r["run_id"] for r in api.get("/v1/runs/stuck").json["items"]])
    assert listed == [[]] * 5 + [[queued["id"]]] * 5


def test_a_limit_lists_the_oldest_and_says_there_are_more(api, pipeline):
    first = triggered(api, "first")
    pipeline.clock.advance(1)
    triggered(api, "second")
    pipeline.clock.advance(6 * 60)

    reply = api.get("/v1/runs/stuck", query={"limit": 1})

    assert [r["run_id"] for r in reply.json["items"]] == [first["id"]]
    assert reply.json["more"] is True


@pytest.mark.parametrize("limit", ["0", "101", "x"])
def test_a_bad_limit_is_422_naming_it(api, limit):
    reply = api.get("/v1/runs/stuck", query={"limit": limit})
    assert reply.status == 422
    assert reply.fields == ["limit"]


def test_unauthenticated_is_401(api):
    assert api.get("/v1/runs/stuck", identity=None).status == 401


def test_a_run_a_gate_keeps_deferring_is_listed(api, pipeline):
    """Held back by a limit (or waiting behind its job's running run), a run is given back QUEUED with its entry
    a wait and the executor's safety net on: each deferral moves it past the tick's reads, not past the list's."""
    run = triggered(api, "held back")
    pipeline.clock.advance(6 * 60)
    now = pipeline.clock.now()
    leases = pipeline.services.store.leases
    lease(pipeline, run, 60)
    not_before = now + timedelta(seconds=60)  # a full semaphore's longest wait
    deferred = pipeline.services.store.runs.get_run(run["id"])
    assert leases.defer_run(
        deferred,
        owner="gone",
        status=RunStatus.QUEUED,
        reason=DeferReason.CONCURRENCY_KEY,
        not_before=not_before,
        resend_at=not_before + pipeline.services.retry_safety_net,
    )

    items = api.get("/v1/runs/stuck").json["items"]

    assert [(r["run_id"], r["reason"]) for r in items] == [(run["id"], "queued_past_threshold")]
