"""Run logs and the attempt timeline through the real pipeline (moto): what a handler logs is kept per attempt
beside the result, written once, and only by runs that log; each attempt is recorded in the outcome's own write."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, StrictBool
from tickwork.aws.results import logs_prefix_of
from tickwork.control.run_log_reader import RunLogQueries
from tickwork.executor.outcomes import LOST_ATTEMPT
from tickwork.faults import CrashPoint
from tickwork.jobtypes import RunContext, RunTimeout, job_type, registry
from tickwork.model.errors import InvalidInput
from tickwork.model.job import Job
from tickwork.model.policies import Band, NotCoerced
from tickwork.model.run import MAX_ATTEMPT_HISTORY
from tickwork.model.states import AttemptOutcome, RunStatus
from tickwork.store import LimitRecords, rate_sort

from tests.faults.crashes import ProcessKilled
from tests.harness import TENANT, Pipeline

FAR = timedelta(seconds=300)


class Noisy(BaseModel):
    lines: Annotated[int, NotCoerced] = 1
    fail: StrictBool = False
    timeout: StrictBool = False


if "runlogs-noisy" not in registry:

    @job_type("runlogs-noisy", Noisy)
    def noisy(payload: Noisy, ctx: RunContext) -> dict[str, Any]:
        """Logs `lines` lines with fields, at two levels; then fails or times out if asked."""
        for i in range(payload.lines):
            ctx.log(f"line {i}", "WARNING" if i % 2 else "INFO", index=i, token_hint="kept as given")
        ctx.logger.error("about to end", attempt_seen=ctx.attempt)
        if payload.timeout:
            raise RunTimeout("run exceeded its timeout")
        if payload.fail:
            raise RuntimeError("asked to fail")
        return {"ok": True}


def _due(pipeline: Pipeline, **spec: Any) -> Job:
    job = pipeline.create_job(schedule={"at": pipeline.clock.now() + FAR}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def _log_objects(pipeline: Pipeline) -> list[str]:
    return [key for key in pipeline.result_objects() if key.startswith("logs/")]


def _read(pipeline: Pipeline, run_id: str, tenant: str = TENANT) -> Any:
    services = pipeline.services
    return RunLogQueries(services.queries, services.results, services.clock).read(tenant, run_id)


def test_a_run_that_fails_once_then_succeeds_keeps_both_attempts_lines_in_order(pipeline):
    job = _due(pipeline, payload={"log": ["fetching", "fetched 3 rows"], "fail_attempts": 1})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    prefix = logs_prefix_of(TENANT, job.id, run.id)
    assert _log_objects(pipeline) == [prefix + "0000-001.json", prefix + "0000-002.json"]
    pipeline.calls.clear()
    view = _read(pipeline, run.id)
    # Reading: the run (its tenancy), one listing, one read per attempt that logged.
    assert pipeline.calls.by_operation() == Counter({"GetItem": 1, "ListObjectsV2": 1, "GetObject": 2})
    assert [(line["attempt"], line["message"]) for line in view.lines] == [
        (1, "fetching"),
        (1, "fetched 3 rows"),
        (2, "fetching"),
        (2, "fetched 3 rows"),
    ]
    assert {line["level"] for line in view.lines} == {"INFO"}
    assert view.truncated is False
    assert view.insights_url is None  # no insights link wired: locally
    # The timeline: two attempts, each with its outcome, written in the writes the attempts made anyway.
    history = run.attempt_history
    assert [(a.attempt, a.outcome) for a in history] == [(1, AttemptOutcome.RETRYING), (2, AttemptOutcome.SUCCEEDED)]
    assert history[0].error is not None
    assert history[0].error.startswith("EchoFailure: attempt 1 fails on purpose")
    assert history[1].error is None
    assert history[0].started_at <= history[0].ended_at <= history[1].started_at <= history[1].ended_at  # type: ignore[operator]
    assert history[1].ended_at == run.finished_at


def _calls_of_one_run(pipeline: Pipeline, payload: dict[str, Any]) -> Counter[str]:
    _due(pipeline, payload=payload)
    pipeline.calls.clear()
    pipeline.drain()
    return pipeline.calls.by_operation()


def test_a_run_that_logs_nothing_makes_no_extra_s3_request(pipeline):
    calls = _calls_of_one_run(pipeline, {"n": 1})
    assert calls["PutObject"] == 1  # its result, nothing else
    assert _log_objects(pipeline) == []


def test_a_run_that_logs_pays_one_put_and_its_timeline_nothing(pipeline):
    quiet = _calls_of_one_run(pipeline, {"n": 1})
    logging = _calls_of_one_run(pipeline, {"log": ["a", "b", "c"]})
    # The log's one write-once PUT, and nothing else: the attempt's record rode on the writes made anyway.
    assert logging - quiet == Counter({"PutObject": 1})
    assert quiet - logging == Counter()
    puts = pipeline.calls.params("PutObject")
    assert [p["Key"].split("/")[0] for p in puts] == ["logs", "results"]
    assert all(p["IfNoneMatch"] == "*" for p in puts)


def test_a_duplicate_delivery_of_a_finished_run_writes_no_logs(pipeline):
    job = _due(pipeline, payload={"log": ["once"]})
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    key = _log_objects(pipeline)[0]
    before = pipeline.s3.get_object(Bucket=pipeline.resources.results_bucket, Key=key)["ETag"]
    pipeline.calls.clear()
    pipeline.deliver(Band.NORMAL, messages)  # delivered again after it finished
    assert pipeline.calls.count("PutObject") == 0
    assert _log_objects(pipeline) == [key]
    assert pipeline.s3.get_object(Bucket=pipeline.resources.results_bucket, Key=key)["ETag"] == before
    assert pipeline.run(run.id).attempt_history == run.attempt_history  # and no attempt recorded


def test_an_attempts_log_is_written_once_the_first_write_stands(pipeline):
    job = _due(pipeline, payload={"log": ["first"]})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    results = pipeline.services.results
    assert results.write_logs_once(run, {"attempt": 1, "lines": [{"message": "second"}]}) is False
    assert [line["message"] for line in _read(pipeline, run.id).lines] == ["first"]


def test_failed_and_timed_out_attempts_keep_their_logs(pipeline):
    failing = _due(pipeline, type="runlogs-noisy", payload={"lines": 2, "fail": True}, retry={"max_attempts": 1})
    timing_out = _due(pipeline, type="runlogs-noisy", payload={"timeout": True}, retry={"max_attempts": 2})
    pipeline.drain()
    (failed,) = pipeline.runs_of(failing.id)
    assert failed.status is RunStatus.FAILED
    view = _read(pipeline, failed.id)
    assert [(line["level"], line["message"], line["fields"]) for line in view.lines] == [
        ("INFO", "line 0", {"index": 0, "token_hint": "kept as given"}),
        ("WARNING", "line 1", {"index": 1, "token_hint": "kept as given"}),
        ("ERROR", "about to end", {"attempt_seen": 1}),
    ]
    assert [(a.attempt, a.outcome) for a in failed.attempt_history] == [(1, AttemptOutcome.FAILED)]
    (timed_out,) = pipeline.runs_of(timing_out.id)
    assert timed_out.status is RunStatus.FAILED
    assert [a.outcome for a in timed_out.attempt_history] == [AttemptOutcome.TIMED_OUT, AttemptOutcome.TIMED_OUT]
    assert [(line["attempt"], line["message"]) for line in _read(pipeline, timed_out.id).lines] == [
        (1, "line 0"),
        (1, "about to end"),
        (2, "line 0"),
        (2, "about to end"),
    ]


def test_a_long_log_is_capped_and_marked_truncated(pipeline):
    job = _due(pipeline, type="runlogs-noisy", payload={"lines": 1500})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    view = _read(pipeline, run.id)
    assert view.truncated is True
    assert view.limit_bytes == 65536
    *kept, marker = view.lines
    assert len(kept) < 1000  # the 64 KiB cap came first: each line is about 100 bytes
    stored = [{k: v for k, v in line.items() if k != "attempt"} for line in kept]
    assert sum(len(json.dumps(line, separators=(",", ":"))) for line in stored) <= 65536
    assert marker["fields"]["truncated"] is True
    assert marker["fields"]["dropped_lines"] == 1501 - len(kept)  # 1500 lines and the last one
    assert marker["message"].startswith("log truncated")


def test_a_run_retried_from_the_dlq_keeps_its_first_executions_logs(pipeline):
    job = _due(pipeline, payload={"log": ["try"], "fail_attempts": 1}, retry={"max_attempts": 1})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.FAILED
    pipeline.services.redrive.retry_run(TENANT, run.id)
    pipeline.drain()
    again = pipeline.run(run.id)
    assert (again.status, again.attempts, again.requeues) == (RunStatus.FAILED, 1, 1)  # attempt 1 fails again
    prefix = logs_prefix_of(TENANT, job.id, run.id)
    assert _log_objects(pipeline) == [prefix + "0000-001.json", prefix + "0001-001.json"]
    assert [line["message"] for line in _read(pipeline, run.id).lines] == ["try", "try"]
    # Attempts count from 1 again after the requeue; the history keeps both executions' attempts in order.
    assert [(a.attempt, a.outcome) for a in again.attempt_history] == [
        (1, AttemptOutcome.FAILED),
        (1, AttemptOutcome.FAILED),
    ]


def test_deferrals_of_one_attempt_share_one_record(pipeline):
    job = _due(pipeline, rate_limit={"key": "sms", "per_minute": 1})
    limits = LimitRecords(pipeline.services.store.shared_table)
    limits.admit_rate(TENANT, rate_sort("sms"), interval_ms=60_000, now=pipeline.clock.now())  # someone went first
    messages = pipeline.receive(Band.NORMAL)
    pipeline.deliver(Band.NORMAL, messages)
    first = pipeline.runs_of(job.id)[0]
    assert [(a.attempt, a.outcome) for a in first.attempt_history] == [(1, AttemptOutcome.DEFERRED)]
    limits.admit_rate(TENANT, rate_sort("sms"), interval_ms=60_000, now=pipeline.clock.now() + timedelta(seconds=60))
    pipeline.clock.advance(60)
    pipeline.deliver(Band.NORMAL, messages)  # deferred again: the same record, its end moved on
    again = pipeline.runs_of(job.id)[0]
    assert again.deferred == 2
    assert len(again.attempt_history) == 1
    assert again.attempt_history[0].started_at == first.attempt_history[0].started_at
    assert again.attempt_history[0].ended_at == pipeline.clock.now()
    pipeline.clock.advance(60)
    pipeline.deliver(Band.NORMAL, messages)
    done = pipeline.runs_of(job.id)[0]
    assert done.status is RunStatus.SUCCEEDED
    assert [(a.attempt, a.outcome) for a in done.attempt_history] == [
        (1, AttemptOutcome.DEFERRED),
        (1, AttemptOutcome.SUCCEEDED),
    ]


def test_the_lease_opens_the_attempts_record_and_a_dead_executors_attempt_is_marked_lost(pipeline):
    job = _due(pipeline, payload={"log": ["working"]})
    messages = pipeline.receive(Band.NORMAL)
    leased_at = pipeline.clock.now()
    pipeline.crashes.arm(CrashPoint.EXECUTOR_AFTER_JOB_READ)
    with pytest.raises(ProcessKilled):
        pipeline.deliver(Band.NORMAL, messages)
    pipeline.crashes.disarm()
    running = pipeline.runs_of(job.id)[0]
    assert running.status is RunStatus.RUNNING
    # Open while it runs: numbered, started at its lease, no end, no outcome.
    assert [(a.attempt, a.started_at, a.ended_at, a.outcome) for a in running.attempt_history] == [
        (1, leased_at, None, None)
    ]
    pipeline.clock.advance(pipeline.services.settings.lease_seconds + 1)  # its lease ends; another takes over
    pipeline.deliver(Band.NORMAL, messages)
    done = pipeline.runs_of(job.id)[0]
    assert done.status is RunStatus.SUCCEEDED
    lost, ended = done.attempt_history
    assert (lost.attempt, lost.started_at, lost.ended_at, lost.outcome, lost.error) == (
        1,
        leased_at,
        None,
        None,
        LOST_ATTEMPT,
    )
    assert (ended.attempt, ended.outcome, ended.ended_at) == (2, AttemptOutcome.SUCCEEDED, done.finished_at)
    # The dead attempt's lines died with it; the second attempt's are kept.
    assert [(line["attempt"], line["message"]) for line in _read(pipeline, done.id).lines] == [(2, "working")]


def test_a_run_skipped_before_its_handler_has_no_attempt_record(pipeline):
    job = _due(pipeline, payload={"log": ["never"]})
    pipeline.services.jobs.pause(TENANT, job.id)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SKIPPED
    assert run.attempt_history == []
    assert _log_objects(pipeline) == []


def test_the_history_keeps_the_last_attempts_and_counts_the_earlier_ones(pipeline):
    attempts = MAX_ATTEMPT_HISTORY + 3
    job = _due(
        pipeline,
        payload={"fail_attempts": attempts},
        retry={"max_attempts": attempts, "backoff_seconds": 0.001, "max_backoff_seconds": 0.001},
    )
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.FAILED, attempts)
    assert [a.attempt for a in run.attempt_history] == list(range(4, attempts + 1))
    assert run.attempt_history[-1].outcome is AttemptOutcome.FAILED
    earlier = run.earlier_attempts
    assert earlier is not None
    assert (earlier.records, earlier.first_attempt, earlier.last_attempt) == (3, 1, 3)
    assert earlier.outcomes == {"retrying": 3}


@pytest.mark.parametrize("payload", [{"log": "one line"}, {"log": [1, 2]}, {"log": ["x" * 5000]}])
def test_echo_refuses_a_log_that_is_not_a_list_of_strings(pipeline, payload):
    with pytest.raises(InvalidInput) as refused:
        pipeline.create_job(schedule={"rate": "1 hour"}, payload=payload)
    fields = [e.field for e in refused.value.errors]
    assert fields
    assert all(field.startswith("payload.log") for field in fields)
    assert pipeline.count_items(kind="JOB") == 0
