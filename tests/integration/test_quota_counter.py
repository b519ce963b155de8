"""The active jobs counter stays exact through every way a job or workflow enters and leaves the active set,
the recount when the quota is set finds what was not counted, and a crash only ever over-counts."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from tickwork.control.api_bodies import JobUpdate, WorkflowSpec
from tickwork.model.errors import QuotaExceeded
from tickwork.model.states import JobState
from tickwork.model.tenant_settings import TenantSettings
from tickwork.store import TenantRecords

from tests.harness import START, TENANT

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

HOURLY = {"rate": "1 hour"}


def quota(pipeline, limit: int | None) -> None:
    pipeline.services.tenants.put(TENANT, TenantSettings(max_active_jobs=limit))


def counted(pipeline) -> int | None:
    return pipeline.services.tenants.view(TENANT).usage.active_jobs


def truly_active(pipeline) -> int:
    """The tenant's ACTIVE and PAUSED jobs and workflows, from the records themselves."""
    listed = [*pipeline.services.listings.list_jobs(TENANT, limit=100).items]
    listed += pipeline.services.workflows.list(TENANT, limit=100).items
    return sum(item.state in (JobState.ACTIVE, JobState.PAUSED) for item in listed)


def one_shot(pipeline, seconds: int):
    return pipeline.create_job(schedule={"at": (START + timedelta(seconds=seconds)).isoformat()})


def workflow_spec(**schedule) -> WorkflowSpec:
    return WorkflowSpec.model_validate(
        {"name": "wf", "schedule": schedule or HOURLY, "steps": [{"id": "a", "type": "echo", "payload": {}}]}
    )


def test_the_counter_follows_create_pause_update_cancel_and_completion(pipeline):
    quota(pipeline, 10)
    services = pipeline.services
    recurring = pipeline.create_job(schedule=HOURLY)
    soon = one_shot(pipeline, 30)
    workflow = services.workflows.create(TENANT, workflow_spec())
    flow_once = services.workflows.create(TENANT, workflow_spec(at=(START + timedelta(hours=2)).isoformat()))
    assert counted(pipeline) == 4

    services.jobs.pause(TENANT, recurring.id)
    services.workflows.pause(TENANT, workflow.id)
    services.jobs.update(TENANT, recurring.id, JobUpdate.model_validate({"name": "renamed"}))
    services.jobs.resume(TENANT, recurring.id)
    assert counted(pipeline) == 4  # still active, still counted (a change keeps the mark)

    services.jobs.cancel(TENANT, recurring.id)
    services.jobs.cancel(TENANT, recurring.id)  # already cancelled: no second decrement
    services.workflows.cancel(TENANT, workflow.id)
    assert counted(pipeline) == 2

    assert flow_once.next_run_at is not None
    pipeline.clock.set(flow_once.next_run_at)  # both one-shots are due by then
    pipeline.tick()
    pipeline.drain()
    assert services.store.jobs.get_job(soon.id).state is JobState.COMPLETED
    assert services.workflow_records.get_workflow(flow_once.id).state is JobState.COMPLETED
    assert counted(pipeline) == 0 == truly_active(pipeline)


def test_a_recurring_job_that_ends_while_paused_leaves_the_count_at_its_claim(pipeline):
    quota(pipeline, 10)
    end = (START + timedelta(minutes=3)).isoformat()
    job = pipeline.create_job(schedule={"rate": "1 minute", "end_at": end})
    pipeline.services.jobs.pause(TENANT, job.id)
    pipeline.clock.advance(600)
    pipeline.services.jobs.resume(TENANT, job.id)  # claims at once: every occurrence missed, none left
    pipeline.tick()
    # The runs its create claimed before the pause are still queued: it completes once they have settled.
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.ACTIVE
    pipeline.drain()
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED
    assert counted(pipeline) == 0


def test_setting_the_quota_counts_what_is_active_once(pipeline):
    services = pipeline.services
    jobs = [pipeline.create_job(schedule=HOURLY) for _ in range(3)]
    services.jobs.pause(TENANT, jobs[1].id)
    services.jobs.cancel(TENANT, jobs[2].id)
    services.workflows.create(TENANT, workflow_spec())
    assert counted(pipeline) is None  # not kept without the quota

    pipeline.calls.clear()
    quota(pipeline, 5)
    assert counted(pipeline) == 3 == truly_active(pipeline)
    assert pipeline.calls.count("TransactWriteItems") == 3  # one per job counted
    assert pipeline.calls.count("Scan") == 0

    quota(pipeline, 6)  # a PUT again: nothing is counted twice
    assert counted(pipeline) == 3
    services.jobs.cancel(TENANT, jobs[0].id)
    assert counted(pipeline) == 2 == truly_active(pipeline)

    # Without the quota no new job is counted, but counted ones still leave; setting it again is exact.
    quota(pipeline, None)
    pipeline.create_job(schedule=HOURLY)
    services.jobs.cancel(TENANT, jobs[1].id)
    quota(pipeline, 5)
    assert counted(pipeline) == 2 == truly_active(pipeline)


def test_racing_creates_never_pass_the_limit(pipeline):
    quota(pipeline, 3)
    outcomes: list[str] = []
    lock = threading.Lock()

    def create() -> None:
        try:
            pipeline.create_job(schedule=HOURLY)
            result = "created"
        except QuotaExceeded:
            result = "refused"
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["created"] * 3 + ["refused"] * 5
    assert counted(pipeline) == 3 == truly_active(pipeline)


def test_a_crash_between_the_reservation_and_the_write_only_over_counts(pipeline, monkeypatch):
    quota(pipeline, 2)
    pipeline.create_job(schedule=HOURLY)

    class Killed(BaseException):
        """The process dies: nothing after this point runs, not even the give-back."""

    def dies(*args, **kwargs):
        raise Killed

    quota_check = pipeline.services.active_jobs_quota
    monkeypatch.setattr(type(quota_check), "give_back", lambda self, tenant: None)  # a dead process gives nothing back
    monkeypatch.setattr(pipeline.services.store.jobs, "put_new_job", dies)
    with pytest.raises(Killed):
        pipeline.create_job(schedule=HOURLY)
    monkeypatch.undo()

    assert truly_active(pipeline) == 1
    assert counted(pipeline) == 2  # one too many: the tenant is refused one job early, never let past
    with pytest.raises(QuotaExceeded):
        pipeline.create_job(schedule=HOURLY)
    quota(pipeline, 2)  # the recount never counts a job twice (and cannot see the phantom)
    assert counted(pipeline) == 2


def test_a_failed_decrement_leaves_the_transition_standing_and_over_counts(pipeline, monkeypatch):
    quota(pipeline, 5)
    job = pipeline.create_job(schedule=HOURLY)

    def down(self, tenant):
        raise RuntimeError("DynamoDB is down")

    monkeypatch.setattr(TenantRecords, "release_active_job", down)
    cancelled = pipeline.services.jobs.cancel(TENANT, job.id)
    monkeypatch.undo()
    assert cancelled.state is JobState.CANCELLED
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.CANCELLED
    assert counted(pipeline) == 1  # over by one, logged; never under


def _one_shot_run_calls(pipeline) -> list[tuple[str, dict]]:
    """The AWS calls of one one-shot job's run, from its claim to its completion."""
    job = pipeline.create_job(schedule={"at": (pipeline.clock.now() + timedelta(hours=1)).isoformat()})
    pipeline.calls.clear()
    pipeline.clock.set(job.next_run_at)
    pipeline.tick()
    pipeline.drain()
    assert pipeline.services.store.jobs.get_job(job.id).state is JobState.COMPLETED
    return [(op, params) for _, op, params in pipeline.calls.calls]


def _usage_writes(calls) -> int:
    return sum(1 for op, params in calls if op == "UpdateItem" and "USAGE" in str(params.get("Key")))


def test_a_run_pays_nothing_for_the_quota_and_a_counted_job_one_update_when_it_leaves(pipeline):
    uncounted = _one_shot_run_calls(pipeline)
    assert _usage_writes(uncounted) == 0
    # Its tenant's usage is never touched; only its settings are read (weights and quotas, kept 30 s per
    # environment: tickwork.model.tenant_settings.TenantDirectory).
    assert not any("USAGE" in str(params) for _, params in uncounted)
    tenant_calls = {op for op, params in uncounted if "TENANT#" in str(params)}
    assert tenant_calls <= {"BatchGetItem"}

    quota(pipeline, 10)
    counted_calls = _one_shot_run_calls(pipeline)
    assert _usage_writes(counted_calls) == 1  # the decrement, once, when the job completes
    assert len(counted_calls) == len(uncounted) + 1
    assert counted(pipeline) == 0


def test_a_write_that_failed_after_it_happened_keeps_its_place(pipeline, monkeypatch):
    quota(pipeline, 5)
    records = pipeline.services.store.jobs
    real = records.put_new_job

    def writes_then_times_out(job, **kwargs):
        real(job, **kwargs)
        raise TimeoutError("read timeout")

    monkeypatch.setattr(records, "put_new_job", writes_then_times_out)
    with pytest.raises(TimeoutError):
        pipeline.create_job(schedule=HOURLY)
    monkeypatch.undo()
    assert counted(pipeline) == 1 == truly_active(pipeline)  # written and counted: not given back
    (written,) = pipeline.services.listings.list_jobs(TENANT).items
    pipeline.services.jobs.cancel(TENANT, written.id)
    assert counted(pipeline) == 0


def test_a_workflow_that_was_not_written_gives_its_place_back(pipeline, monkeypatch):
    quota(pipeline, 5)

    def fails(*args, **kwargs):
        raise RuntimeError("DynamoDB is down")

    monkeypatch.setattr(pipeline.services.workflow_records, "put_new_workflow", fails)
    with pytest.raises(RuntimeError):
        pipeline.services.workflows.create(TENANT, workflow_spec())
    assert counted(pipeline) == 0
