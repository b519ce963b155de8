"""Debounced triggers (docs/fairness.md, "Debounce") through the API and the pipeline (moto, SQS on the fake
clock): racing triggers from several API calls at once give exactly one run per window, which runs at the
window's end with the last payload (or all of them, collecting); a trigger after the window's run was leased
opens the next window."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from tickwork.model.states import RunStatus

from tests.api.conftest import ApiClient, separate_environments

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

CALLERS = 8
WINDOW = 30


@pytest.fixture
def pipeline(timed_pipeline: Any) -> Any:
    """The API (tests/api/conftest.py's `api`) over the pipeline whose SQS runs on the fake clock."""
    return timed_pipeline


def _racing_triggers(api: ApiClient, job_id: str, debounce: dict[str, Any], first: int) -> list[dict[str, Any]]:
    """CALLERS API calls at once (released together), each in an execution environment of its own, payloads
    {"n": first}, {"n": first + 1}, ..."""
    start = threading.Barrier(CALLERS)
    callers = separate_environments(api.pipeline, CALLERS)

    def trigger(n: int) -> dict[str, Any]:
        caller = callers[n - first]
        start.wait(timeout=10)
        reply = caller.post(f"/v1/jobs/{job_id}/trigger", {"debounce": debounce, "payload": {"n": n}})
        assert reply.status == 202, reply.text
        return reply.json

    with ThreadPoolExecutor(max_workers=CALLERS) as pool:
        return list(pool.map(trigger, range(first, first + CALLERS)))


def test_racing_triggers_from_several_api_calls_give_exactly_one_run_per_window(api, timed_pipeline):
    pipeline = timed_pipeline
    job = api.create(schedule={"cron": "0 0 1 1 *"})
    debounce = {"key": "customer-7", "seconds": WINDOW}
    window_runs = []
    for window in range(3):
        answers = _racing_triggers(api, job["id"], debounce, first=window * 100)
        pipeline.clock.advance(WINDOW / 2)  # still inside the window: a second burst joins the same run
        answers += _racing_triggers(api, job["id"], debounce, first=window * 100 + 50)
        assert len({a["id"] for a in answers}) == 1  # one run for the window
        assert [a["debounce_window"] for a in answers].count("started") == 1
        run_id = answers[0]["id"]
        window_runs.append(run_id)
        assert pipeline.run(run_id).debounce.triggers == 2 * CALLERS
        pipeline.clock.advance(WINDOW / 2)  # the window's end: its run runs
        pipeline.drain()
        run = pipeline.run(run_id)
        assert run.status is RunStatus.SUCCEEDED
        assert run.started_at >= run.scheduled_for  # never before its window's end
        last = run.payload
        assert last in [{"n": window * 100 + 50 + i} for i in range(CALLERS)]  # one of the last burst's
        assert api.get(f"/v1/runs/{run_id}/result").json == last  # echo ran with the last payload
    assert len(set(window_runs)) == 3
    assert {r.id for r in pipeline.runs_of(job["id"])} == set(window_runs)  # nothing else ran or was recorded


def test_collecting_racing_triggers_carry_every_payload_in_one_run(api, timed_pipeline):
    pipeline = timed_pipeline
    job = api.create(schedule={"cron": "0 0 1 1 *"})
    answers = _racing_triggers(api, job["id"], {"key": "batch", "seconds": WINDOW, "collect": True}, first=0)
    [run_id] = {a["id"] for a in answers}
    pipeline.clock.advance(WINDOW)
    pipeline.drain()
    run = pipeline.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert sorted(p["n"] for p in api.get(f"/v1/runs/{run_id}/result").json["payloads"]) == list(range(CALLERS))
    assert run.debounce.triggers == CALLERS


def test_a_trigger_after_the_windows_run_was_leased_opens_the_next_window(api, timed_pipeline):
    pipeline = timed_pipeline
    job = api.create(schedule={"cron": "0 0 1 1 *"})
    debounce = {"key": "k", "seconds": 5}
    first = api.post(f"/v1/jobs/{job['id']}/trigger", {"debounce": debounce}).json
    pipeline.clock.advance(5)
    pipeline.drain()
    assert pipeline.run(first["id"]).status is RunStatus.SUCCEEDED
    second = api.post(f"/v1/jobs/{job['id']}/trigger", {"debounce": debounce}).json
    assert second["debounce_window"] == "started"
    assert second["id"] != first["id"]
