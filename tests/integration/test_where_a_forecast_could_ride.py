"""Why a job's forecast (tickwork.model.forecasts, docs/forecasts.md) is not kept by the executor yet: a recurring
job's run, once claimed, makes no request on its job's item. Its outcome's write is on the run's item, and its job
comes in its message (tickwork.model.run_spec), so the forecast's update would be a write more per run. The job's
item is written per run only by the claim's advance, before the run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.states import RunStatus
from tickwork.store.codec import job_key, run_key

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


@pytest.fixture
def pipeline(timed_pipeline):
    """SQS on the fake clock: a run claimed ahead is delivered once its time comes."""
    return timed_pipeline


def _keyed(pipeline, key: dict[str, Any]) -> list[str]:
    """The DynamoDB requests since the log was cleared that named this item, by operation."""
    named = []
    for service, operation, params in pipeline.calls.calls:
        if service != "dynamodb":
            continue
        keys = [params.get("Key")]
        for table in params.get("RequestItems", {}).values():
            keys += table.get("Keys", []) if isinstance(table, dict) else []
        if key in keys:
            named.append(operation)
    return named


def test_a_recurring_jobs_run_makes_no_request_on_its_job_only_on_its_run(pipeline):
    pipeline.clock.advance(30)
    pipeline.calls.clear()
    job = pipeline.create_job(schedule={"cron": "* * * * *"})  # its first occurrences are claimed at once
    pipeline.tick()
    assert "UpdateItem" in _keyed(pipeline, job_key(job.id))  # the claim's advance: the job's write per claim

    (first, *_) = pipeline.runs_of(job.id)
    pipeline.clock.set(first.scheduled_for + timedelta(seconds=1))
    pipeline.calls.clear()
    assert pipeline.drain(wait_out_backoff=False) >= 1

    assert pipeline.run(first.id).status is RunStatus.SUCCEEDED
    assert _keyed(pipeline, job_key(job.id)) == []
    assert "UpdateItem" in _keyed(pipeline, run_key(first.id))  # the lease and the outcome's write
