"""Function-isolated job types through the real pipeline (moto; the job sandbox played as tickwork dev plays it,
tickwork_local.runtime.function_invokes): a run behaves as an inline one (checkpoint, progress, logs, steps, yields, cancel,
retries, one result), while its handler runs in JobSandboxFunction, one synchronous Invoke per segment, and the
executor keeps the lease and applies what the handler's ctx did."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

import boto3
from tickwork.jobtypes import RunContext
from tickwork.jobtypes.sandbox import JobSandbox
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus, SkipReason
from tickwork.store import LeaseOutcome

from tests.durable_jobtypes import STEP_CALLS
from tests.harness import TENANT, Pipeline
from tests.isolated_jobtypes import DURING, SEEN, TOKENS_SEEN

FAR = timedelta(seconds=300)
SANDBOX = "tickwork-JobSandboxFunction"


def _due(pipeline: Pipeline, **spec: Any) -> Job:
    job = pipeline.create_job(schedule={"at": pipeline.clock.now() + FAR}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def _sandbox_invokes(pipeline: Pipeline) -> int:
    return sum(1 for params in pipeline.calls.params("Invoke") if params["FunctionName"] == SANDBOX)


def test_an_isolated_run_checkpoints_reports_logs_and_writes_its_result_once_through_the_executor(pipeline):
    job = _due(pipeline, type="isolated-asked", payload={"token": "t-1"})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts, run.error) == (RunStatus.SUCCEEDED, 1, None)
    assert pipeline.services.results.read(run) == {"attempt": 1, "token": "t-1"}
    assert _sandbox_invokes(pipeline) == 1
    assert run.progress is not None
    assert (run.progress.fraction, run.progress.message) == (0.5, "half way, token t-1")
    (line,) = [line for document in pipeline.services.results.read_logs(run) for line in document["lines"]]
    assert (line["message"], line["fields"]) == ("segment started", {"attempt": 1, "token": "t-1"})


def test_an_isolated_attempt_that_fails_is_retried_from_its_checkpoint_and_its_error_kept_by_name(pipeline):
    job = _due(
        pipeline, type="isolated-asked", payload={"fail": "plain", "fail_attempts": 1}, retry={"max_attempts": 3}
    )
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    assert SEEN[run.id] == [
        {"attempt": 1, "checkpoint": None},
        {"attempt": 2, "checkpoint": {"attempt": 1, "token": ""}},  # the failed attempt's, saved by the executor
    ]
    (failed,) = [a.error for a in run.attempt_history if a.error is not None]
    assert failed.startswith("AskedFailure: attempt 1 fails as asked (plain)")
    assert _sandbox_invokes(pipeline) == 2


def test_an_isolated_permanent_error_fails_the_run_without_retries(pipeline):
    job = _due(
        pipeline, type="isolated-asked", payload={"fail": "permanent", "fail_attempts": 9}, retry={"max_attempts": 3}
    )
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, 1)
    assert run.error is not None
    assert (run.error.type, run.error.message) == ("PermanentJobError", "attempt 1 fails as asked (permanent) ")


def test_an_isolated_retry_not_before_and_effect_may_continue_hold_the_next_attempt_back(pipeline):
    held = {}
    for fail in ("retry-not-before", "effect-may-continue"):
        job = _due(pipeline, type="isolated-asked", payload={"fail": fail, "fail_attempts": 1})
        pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
        (run,) = pipeline.runs_of(job.id)
        assert run.status is RunStatus.RETRYING
        assert run.not_before is not None
        held[fail] = (run.not_before - pipeline.clock.now()).total_seconds()
    assert held["retry-not-before"] >= 30
    assert held["effect-may-continue"] >= 120


def test_an_isolated_run_longer_than_its_lambda_yields_and_finishes_on_one_attempt_as_inline(pipeline):
    inline = _due(pipeline, type="long-export")
    pipeline.drain_one_by_one(900)
    isolated = _due(pipeline, type="isolated-long-export")
    invocations = pipeline.drain_one_by_one(60)
    (straight,) = pipeline.runs_of(inline.id)
    (run,) = pipeline.runs_of(isolated.id)
    assert (run.status, run.attempts, run.error) == (RunStatus.SUCCEEDED, 1, None)
    assert run.segments == invocations - 1 == 5
    assert _sandbox_invokes(pipeline) == invocations
    assert pipeline.services.results.read(run) == pipeline.services.results.read(straight)
    assert [count for (run_id, _), count in STEP_CALLS.items() if run_id == run.id] == [1] * 12  # each page once


def test_an_isolated_run_cancelled_between_its_segments_ends_at_the_next_boundary(pipeline):
    job = _due(pipeline, type="isolated-long-export")
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL), timeout_seconds=60)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.segments) == (RunStatus.QUEUED, 1)
    pipeline.services.run_cancel.cancel_run(TENANT, run.id)
    pipeline.drain_one_by_one(60)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.skip_reason) == (RunStatus.SKIPPED, SkipReason.CANCELLED)
    assert _sandbox_invokes(pipeline) == 1  # the segment after the cancel never started


def test_an_isolated_attempt_that_lost_its_lease_saves_nothing_and_records_nothing(pipeline):
    job = _due(pipeline, type="isolated-asked", payload={"token": "late"})
    (queued,) = pipeline.runs_of(job.id)

    def taken_over(ctx: RunContext) -> None:
        # Another executor takes the run over while the sandbox runs (this one's lease lapsed unseen).
        pipeline.clock.advance(pipeline.services.settings.lease_seconds + 1)
        taken = pipeline.services.store.leases.lease_run(
            queued.id, owner="other", now=pipeline.clock.now(), lease_for=timedelta(seconds=60)
        )
        assert taken.outcome is LeaseOutcome.LEASED

    DURING[queued.id] = taken_over
    pipeline.deliver(Band.NORMAL, pipeline.receive(Band.NORMAL))
    run = pipeline.run(queued.id)
    assert (run.status, run.attempts) == (RunStatus.RUNNING, 2)  # the other executor's attempt, still its own
    assert run.progress is None  # the segment's report was not written either
    assert pipeline.services.results.find(run) is None  # no result written by the attempt that lost the run
    assert not any(key.startswith("checkpoints/") for key in pipeline.result_objects())


def test_a_sandbox_that_crashes_fails_the_attempt_which_is_retried(pipeline, monkeypatch):
    job = _due(pipeline, type="isolated-asked", payload={}, retry={"max_attempts": 2})
    real = JobSandbox.run
    crashes = []

    def crash_once(self: JobSandbox, event: Any) -> dict[str, Any]:
        if not crashes:
            crashes.append(event["run_id"])
            raise MemoryError("out of memory")
        return real(self, event)

    monkeypatch.setattr(JobSandbox, "run", crash_once)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    (failed,) = [a.error for a in run.attempt_history if a.error is not None]
    assert failed.startswith("SandboxFailed: the job sandbox failed (Unhandled): MemoryError: out of memory")


def test_without_a_sandbox_function_an_isolated_run_fails_for_good_naming_it(mocked_aws):
    with Pipeline.create(JOB_SANDBOX_FUNCTION="") as pipeline:
        job = _due(pipeline, type="isolated-asked", payload={}, retry={"max_attempts": 3})
        pipeline.drain()
        (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, 1)
    assert run.error is not None
    assert run.error.type == "NoSandbox"
    assert "JOB_SANDBOX_FUNCTION" in run.error.message


def test_an_isolated_runs_secret_is_resolved_by_the_executor_given_to_the_handler_and_stored_nowhere(pipeline):
    value = "tok-isolated-5b7e0c2d"
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name="tickwork/default/iso-token", SecretString=value
    )
    job = _due(pipeline, type="isolated-asked", payload={"token": {"$secret": "tickwork/default/iso-token"}})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert TOKENS_SEEN[run.id] == hashlib.sha256(value.encode()).hexdigest()  # the handler had the value
    assert pipeline.services.results.read(run) == {"attempt": 1, "token": "***"}
    assert run.progress is not None
    assert run.progress.message == "half way, token ***"
    (line,) = [line for document in pipeline.services.results.read_logs(run) for line in document["lines"]]
    assert line["fields"]["token"] == "***"
    # Nowhere in the table (the job keeps the reference; the run its checkpoint) or the bucket.
    table = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=pipeline.resources.table_name)
    assert value not in str(table["Items"])
    assert "iso-token" in str(table["Items"])
    s3 = pipeline.s3
    for key in pipeline.result_objects():
        body = s3.get_object(Bucket=pipeline.resources.results_bucket, Key=key)["Body"].read().decode()
        assert value not in body, key


def test_an_isolated_run_costs_one_invoke_more_than_the_same_handler_inline_and_no_other_request(pipeline):
    """The price of isolation, in requests (docs/security.md, "What isolation costs"): the executor's own requests
    are the same; the sandbox adds one Invoke per segment."""
    made = {}
    for kind in ("inline-asked", "isolated-asked"):
        _due(pipeline, type=kind, payload={"token": "t"})
        pipeline.calls.clear()
        pipeline.drain()
        made[kind] = pipeline.calls.by_operation()
    assert made["isolated-asked"] - made["inline-asked"] == {"Invoke": 1}
    assert made["inline-asked"] - made["isolated-asked"] == {}


def test_a_finished_isolated_run_delivered_again_never_runs_again(pipeline):
    job = _due(pipeline, type="isolated-asked", payload={"token": "once"})
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    pipeline.sqs.send_message(QueueUrl=pipeline.resources.queue_urls["normal"], MessageBody=messages[0]["Body"])
    pipeline.drain()
    assert _sandbox_invokes(pipeline) == 1
    assert len(SEEN[run.id]) == 1
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED


def test_an_isolated_run_over_its_timeout_stops_at_its_deadline_and_retries_from_its_checkpoint_as_inline(pipeline):
    ended = {}
    for kind in ("long-export", "isolated-long-export"):
        job = _due(
            pipeline,
            type=kind,
            payload={"pages": 3, "page_seconds": 10},
            timeout_seconds=15,
            retry={"max_attempts": 2},
        )
        pipeline.drain()
        (run,) = pipeline.runs_of(job.id)
        pages = sorted(page for (run_id, page), count in STEP_CALLS.items() if run_id == run.id for _ in range(count))
        ended[kind] = (run.status, run.attempts, run.error.type if run.error else None, pages)
    assert (
        ended["isolated-long-export"]
        == ended["long-export"]
        == (
            RunStatus.FAILED,
            2,
            "RunTimeout",
            [
                "page-0",
                "page-1",
            ],  # each attempt fetched one page before its deadline; the second went on from the first
        )
    )


def test_a_workflow_step_of_an_isolated_type_runs_in_the_sandbox_and_feeds_the_next_step(pipeline):
    from tickwork.control.api_bodies import WorkflowSpec
    from tickwork.model.ids import step_run_id_for

    steps = [
        {"id": "a", "type": "isolated-asked", "payload": {"token": "from-a"}},
        {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"got": {"$from": "steps.a.result.token"}}},
    ]
    spec = {"name": "wf", "schedule": {"at": pipeline.clock.now() + FAR}, "steps": steps}
    workflows = pipeline.services.workflows
    workflow = workflows.create(TENANT, WorkflowSpec.model_validate(spec))
    triggered = workflows.trigger(TENANT, workflow.id)
    pipeline.drain()
    assert workflows.get_run(TENANT, triggered.id).status.value == "SUCCEEDED"
    assert _sandbox_invokes(pipeline) == 1
    downstream = pipeline.run(step_run_id_for(triggered.id, "b"))
    assert pipeline.services.results.read(downstream) == {"got": "from-a"}
