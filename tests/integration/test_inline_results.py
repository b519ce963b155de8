"""InlineResultMaxBytes (issue 16, item 4): a job's small result is kept in its run record by the outcome's own
write, not S3; larger results, and every workflow step's, stay in S3. Exactly once either way."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.model.states import RunStatus

from tests.harness import START, TENANT, Pipeline

FAR = timedelta(seconds=300)


@pytest.fixture
def inline_pipeline(mocked_aws: None) -> Iterator[Pipeline]:
    with Pipeline.create(INLINE_RESULT_MAX_BYTES="200") as pipeline:
        yield pipeline


def _run_once(pipeline: Pipeline, payload: dict) -> Run:
    job = pipeline.create_job(schedule={"at": START + FAR}, payload=payload)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    pipeline.calls.clear()
    assert pipeline.drain() == 1
    return pipeline.run(run_id_for(job.id, START + FAR))


def test_a_small_result_is_kept_in_the_run_record_without_an_s3_request(inline_pipeline):
    payload = {"hello": "world", "n": 3}
    run = _run_once(inline_pipeline, payload)
    assert run.status is RunStatus.SUCCEEDED
    assert run.result is not None
    assert run.result.location == "inline"
    assert json.loads(run.result.inline or "") == payload
    assert run.result.bytes == len(run.result.inline or "")
    calls = inline_pipeline.calls.by_operation()
    assert calls["PutObject"] == 0  # no S3 request at all for the run
    assert sum(n for op, n in calls.items() if op in ("PutObject", "HeadObject", "GetObject")) == 0
    assert inline_pipeline.result_objects() == []
    # Served as an S3 result is: GET /v1/runs/{id}/result reads it from the record, without S3.
    inline_pipeline.calls.clear()
    assert inline_pipeline.services.queries.get_result(TENANT, run.id) == payload
    assert inline_pipeline.calls.by_operation()["GetObject"] == 0


def test_a_result_over_the_limit_goes_to_s3_as_before(inline_pipeline):
    payload = {"blob": "x" * 300}
    run = _run_once(inline_pipeline, payload)
    assert run.result is not None
    assert run.result.location.startswith("s3://")
    assert run.result.inline is None
    assert inline_pipeline.calls.by_operation()["PutObject"] == 1
    assert inline_pipeline.services.queries.get_result(TENANT, run.id) == payload


def test_a_workflow_steps_result_stays_in_s3_where_its_downstream_steps_read_it(inline_pipeline):
    step_run = Run(
        id="w01m842ynmsn9aqre2jz48e7ha.1795433649843.m.s-extract",
        job_id="w01m842ynmsn9aqre2jz48e7ha",
        tenant=TENANT,
        scheduled_for=START,
        status=RunStatus.RUNNING,
        workflow_run_id="w01m842ynmsn9aqre2jz48e7ha.1795433649843.m",
        step_id="extract",
    )
    result, written = inline_pipeline.services.results.write_once(step_run, {"n": 1})
    assert written
    assert result.location.startswith("s3://")
    assert len(inline_pipeline.result_objects()) == 1


def test_the_default_keeps_every_result_in_s3(pipeline):
    assert pipeline.services.settings.inline_result_max_bytes == 0
    run = _run_once(pipeline, {"tiny": 1})
    assert run.result is not None
    assert run.result.location.startswith("s3://")
    assert pipeline.calls.by_operation()["PutObject"] == 1


def test_an_inline_run_delivered_again_after_it_finished_is_not_run_again(inline_pipeline):
    from tests.testing_jobtypes import EXECUTIONS

    EXECUTIONS.clear()
    job = inline_pipeline.create_job(type="counting", schedule={"at": START + FAR}, payload={"k": 1})
    inline_pipeline.clock.advance(FAR.total_seconds())
    inline_pipeline.tick()
    (message,) = inline_pipeline.receive(Band.NORMAL)
    inline_pipeline.deliver(Band.NORMAL, [message])
    run_id = run_id_for(job.id, START + FAR)
    first = inline_pipeline.run(run_id)
    assert first.status is RunStatus.SUCCEEDED
    # The same message again (at-least-once delivery): acknowledged, not run; the recorded result stands.
    inline_pipeline.deliver(Band.NORMAL, [message])
    assert EXECUTIONS[run_id] == 1
    assert inline_pipeline.run(run_id).result == first.result


def test_a_result_written_under_the_key_before_the_spread_is_still_found_and_read(pipeline):
    """Results written before the hash spread in their keys (results/<tenant>/<job>/<run>.json) stay readable,
    and a run an attempt finished before an upgrade is recorded from its result, not run again."""
    from tickwork.aws.results import legacy_result_key_of, result_key_of

    from tests.testing_jobtypes import EXECUTIONS

    EXECUTIONS.clear()
    job = pipeline.create_job(type="counting", schedule={"at": START + FAR}, payload={"k": 1})
    run_id = run_id_for(job.id, START + FAR)
    assert result_key_of(TENANT, job.id, run_id).startswith("results/")
    assert result_key_of(TENANT, job.id, run_id) != legacy_result_key_of(TENANT, job.id, run_id)
    bucket = pipeline.resources.results_bucket
    pipeline.s3.put_object(Bucket=bucket, Key=legacy_result_key_of(TENANT, job.id, run_id), Body=b'{"old": true}')
    assert pipeline.services.results.read_of(TENANT, job.id, run_id) == {"old": True}
    # An attempt died after writing that result (before the upgrade): the next one records it, runs nothing.
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    pipeline.services.store.leases.lease_run(
        run_id, owner="dead", now=pipeline.clock.now(), lease_for=timedelta(seconds=10)
    )
    pipeline.clock.advance(11)
    pipeline.deliver(Band.NORMAL, [message])
    run = pipeline.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert EXECUTIONS[run_id] == 0
    assert run.result is not None
    assert run.result.location.endswith(legacy_result_key_of(TENANT, job.id, run_id))


def test_an_inline_result_whose_outcome_write_lost_the_lease_is_found_by_the_takeover_not_run_again(inline_pipeline):
    """The handler returns after its lease lapsed and another executor took the run over: the outcome write is
    refused. The result is then kept in S3, as a result too large for the record is, so the next takeover records
    it instead of running the handler again (what the S3 path does)."""
    from tests.testing_jobtypes import GATE

    pipeline = inline_pipeline
    job = pipeline.create_job(type="gated", schedule={"at": START + FAR}, payload={})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    (message,) = pipeline.receive(Band.NORMAL)
    run_id = run_id_for(job.id, START + FAR)
    GATE.reset(opened=False)
    try:
        first = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [message]))
        first.start()
        for _ in range(500):
            if GATE.inside == 1:
                break
            GATE.opened.wait(0.02)
        first_start = GATE.starts[run_id]
        pipeline.clock.advance(61)  # no beat got through: the lease lapsed, and another executor takes the run
        store = pipeline.services.store
        assert store.leases.lease_run(
            run_id, owner="other", now=pipeline.clock.now(), lease_for=timedelta(seconds=10)
        ).run
    finally:
        GATE.opened.set()
    first.join(timeout=30)
    assert pipeline.run(run_id).status is RunStatus.RUNNING  # its outcome write was refused

    pipeline.clock.advance(11)  # the other executor died too: the message's next delivery takes the run over
    pipeline.deliver(Band.NORMAL, [message])
    run = pipeline.run(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert GATE.starts[run_id] == first_start  # the handler did not run again
    assert pipeline.services.queries.get_result(TENANT, run_id) == {"run_id": run_id}
