"""The DLQ against moto: each entry says whether its own retry re-queues it; a redrive of all leaves the ones that
cannot be, each with its reason, and sends nothing for them; a dismissed entry leaves the DLQ's index, its run
record kept as it was, and is neither listed nor redriven again (a named retry still re-queues it)."""

from __future__ import annotations

from typing import Any

from tickwork.control.api_bodies import JobSpec
from tickwork.model.ids import compensation_run_id_for, step_run_id_for
from tickwork.model.policies import Band
from tickwork.model.retryable import NotRetryableReason
from tickwork.model.states import RunStatus
from tickwork.model.workflow.advance import WorkflowRunStatus
from tickwork.store import run_key

from tests.harness import TENANT, Pipeline
from tests.integration.test_workflow_compensation import failing_hotel_undo
from tests.workflow_runs import create, fresh_hold, occur, view  # noqa: F401  fresh_hold: autouse


def raw_item(pipeline: Pipeline, run_id: str) -> dict[str, Any]:
    db = pipeline.services.clients.client("dynamodb")
    return db.get_item(TableName=pipeline.services.settings.table_name, Key=run_key(run_id), ConsistentRead=True)[
        "Item"
    ]


def failed_job_run(pipeline: Pipeline) -> str:
    spec = {"name": "f", "type": "echo", "payload": {"fail_attempts": 9}, "retry": {"max_attempts": 1}}
    job = pipeline.services.jobs.create_job(TENANT, JobSpec.model_validate({**spec, "schedule": {"rate": "1 hour"}}))
    run = pipeline.services.jobs.trigger(TENANT, job.id)
    pipeline.drain()
    assert pipeline.run(run.id).status is RunStatus.FAILED
    return run.id


def queued_messages(pipeline: Pipeline) -> int:
    return sum(len(pipeline.receive(band)) for band in Band)


def test_a_redrive_of_all_leaves_what_cannot_be_retried_with_its_reason_and_sends_nothing_for_it(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, failing_hotel_undo()))
    pipeline.drain()
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.COMPENSATION_FAILED
    charge = step_run_id_for(workflow_run_id, "charge")
    hotel_undo = compensation_run_id_for(workflow_run_id, "hotel")
    failed = failed_job_run(pipeline)

    page = pipeline.services.redrive.dlq_page(TENANT, limit=50, cursor=None)
    reasons = {entry.id: entry.retry.reason for entry in page.items}
    assert reasons == {
        charge: NotRetryableReason.WORKFLOW_RUN_NOT_FAILED,
        hotel_undo: NotRetryableReason.COMPENSATION,
        failed: None,
    }

    report = pipeline.services.redrive.redrive(TENANT)
    assert report.run_ids == [failed]
    assert {r.run_id: r.reason for r in report.refused} == {
        charge: NotRetryableReason.WORKFLOW_RUN_NOT_FAILED,
        hotel_undo: NotRetryableReason.COMPENSATION,
    }
    assert queued_messages(pipeline) == 1  # the job's run alone
    assert pipeline.run(charge).status is pipeline.run(hotel_undo).status is RunStatus.FAILED


def test_a_dismissed_entry_leaves_the_dlq_index_keeps_its_record_and_is_not_redriven(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, failing_hotel_undo()))
    pipeline.drain()
    charge = step_run_id_for(workflow_run_id, "charge")
    before = pipeline.run(charge)

    dismissed = pipeline.services.redrive.dismiss(TENANT, charge)
    assert dismissed.dismissed_at == pipeline.clock.now()
    item = raw_item(pipeline, charge)
    assert "tenant_key" not in item
    assert "tenant_sort" not in item
    after = pipeline.run(charge)
    assert after.model_dump(exclude={"dismissed_at"}) == before.model_dump(exclude={"dismissed_at"})
    assert after.dismissed_at == pipeline.clock.now()

    listed = [entry.id for entry in pipeline.services.redrive.dlq_page(TENANT, limit=50, cursor=None).items]
    assert charge not in listed
    report = pipeline.services.redrive.redrive(TENANT)
    assert charge not in report.run_ids + report.not_redriven
    assert queued_messages(pipeline) == 0
    assert pipeline.services.redrive.dismiss(TENANT, charge) == after  # again: as it is
