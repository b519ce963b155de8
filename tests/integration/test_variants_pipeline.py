"""Variants through the real tick and executor (moto): a run records the variant it ran, and its retry and its
yielded segments keep it, even after the weights change (the executor applies the recorded variant, never a new
pick); the guard counts each ended run on the job item, rolls a failing variant back (the job without it, why on
the job, an audit record by `tickwork`, `Variant Rolled Back` on the bus) and leaves a good one alone."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict
from tickwork.control.api_bodies import JobUpdate
from tickwork.executor.variant_guard import VariantGuard
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.clock import to_ms
from tickwork.model.ids import run_id_for, step_run_id_for
from tickwork.model.job import Job
from tickwork.model.policies import NotCoerced
from tickwork.model.run import Run
from tickwork.model.run_target import RunTarget
from tickwork.model.states import RunStatus, RunTrigger
from tickwork.model.variants import BASELINE, bucket_of, tally_attribute
from tickwork.store.codec import job_key
from tickwork.store.variants import VariantTallies

from tests.harness import TENANT, Pipeline
from tests.integration.test_run_events_pipeline import Consumer

FAR = timedelta(seconds=300)


class Probe(BaseModel):
    model_config = ConfigDict(extra="forbid")

    fail_attempts: Annotated[int, NotCoerced] = 0  # the first this many attempts of a run fail


if "variant_probe" not in registry:

    @job_type("variant_probe", Probe)
    def variant_probe(payload: Probe, ctx: RunContext) -> dict[str, Any]:
        if ctx.attempt <= payload.fail_attempts:
            raise RuntimeError(f"attempt {ctx.attempt} told to fail")
        return {"version": 1}

    @job_type("variant_probe@2", Probe)
    def variant_probe_2(payload: Probe, ctx: RunContext) -> dict[str, Any]:
        if ctx.attempt <= payload.fail_attempts:
            raise RuntimeError(f"attempt {ctx.attempt} told to fail")
        return {"version": 2}


def _due(pipeline: Pipeline, **spec: Any) -> tuple[Job, str]:
    at = pipeline.clock.now() + FAR
    job = pipeline.create_job(schedule={"at": at}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job, run_id_for(job.id, at)


def _elsewhere(run_id: str) -> list[dict[str, Any]]:
    """Variants under which a new pick of `run_id` would be v3, with v2 still declared (weight 1)."""
    v2 = {"name": "v2", "weight": 1, "type": "variant_probe@2", "payload": {"fail_attempts": 1}}
    v3 = {"name": "v3", "weight": 99}
    return [v3, v2] if bucket_of(run_id) < 99 else [v2, v3]


def _patch(pipeline: Pipeline, job: Job, **changes: Any) -> Job:
    return pipeline.services.jobs.update(TENANT, job.id, JobUpdate.model_validate(changes))


def test_a_retry_runs_the_variant_its_first_attempt_recorded_after_the_weights_changed(pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2", "payload": {"fail_attempts": 1}}
    job, run_id = _due(pipeline, type="variant_probe", retry={"max_attempts": 2}, variants=[v2])
    band, messages = _one(pipeline)
    pipeline.deliver(band, messages)
    retrying = pipeline.run(run_id)
    assert (retrying.status, retrying.variant) == (RunStatus.RETRYING, "v2")
    _patch(pipeline, job, variants=_elsewhere(run_id))
    pipeline.clock.advance(10)  # past its backoff, and the message back as time would bring it
    url = pipeline.resources.queue_urls[band.value]
    pipeline.sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    pipeline.drain()
    run = pipeline.run(run_id)
    assert (run.status, run.attempts, run.variant) == (RunStatus.SUCCEEDED, 2, "v2")
    assert pipeline.services.results.read(run) == {"version": 2}


def test_a_job_without_variants_records_none_and_one_with_records_the_baseline(pipeline):
    _, plain_run = _due(pipeline, type="variant_probe")
    pipeline.drain()
    assert pipeline.run(plain_run).variant is None
    job = pipeline.create_job(type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 1}])
    at = pipeline.clock.now()
    run_id = run_id_for(job.id, at, RunTrigger.MANUAL)
    expected = "v2" if bucket_of(run_id) < 1 else BASELINE
    pipeline.services.jobs.trigger(TENANT, job.id)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.variant == expected


def test_a_yielded_run_keeps_its_variant_over_its_segments(pipeline):
    import tests.durable_jobtypes  # noqa: F401  (registers long-export)

    v2 = {"name": "v2", "weight": 100, "payload": {"pages": 6}}
    job, run_id = _due(pipeline, type="long-export", variants=[v2])
    (message,) = pipeline.receive(_band())
    pipeline.deliver(_band(), [message], timeout_seconds=60)
    between = pipeline.run(run_id)
    assert (between.segments, between.variant, between.status) == (1, "v2", RunStatus.QUEUED)
    other = {"name": "v3", "weight": 99, "payload": {"pages": 3}}
    kept = {**v2, "weight": 1}
    _patch(pipeline, job, variants=[other, kept] if bucket_of(run_id) < 99 else [kept, other])
    pipeline.drain_one_by_one(60)
    run = pipeline.run(run_id)
    assert (run.status, run.variant) == (RunStatus.SUCCEEDED, "v2")
    assert run.segments >= 1
    assert len(pipeline.services.results.read(run)["rows"]) == 12  # v2's 6 pages, not v3's 3 nor the job's 12


def _band():
    from tickwork.model.policies import Band

    return Band.NORMAL


def _one(pipeline: Pipeline) -> tuple[Any, list[dict[str, Any]]]:
    band = _band()
    messages = pipeline.receive(band)
    assert len(messages) == 1
    return band, messages


# ------------------------------------------------------------------------------------------------ the guard


def _guard(pipeline: Pipeline) -> VariantGuard:
    services = pipeline.services
    return VariantGuard(
        VariantTallies(services.store.shared_table),
        services.store.jobs,
        services.store.runs,
        pipeline.clock,
        events=services.run_events,
    )


def _settle(pipeline: Pipeline, job: Job, variant: str, outcomes: list[bool]) -> None:
    """Runs of `variant` ended, each as its outcome's write tells the guard (True: SUCCEEDED)."""
    guard = _guard(pipeline)
    for index, succeeded in enumerate(outcomes):
        run = Run(
            id=run_id_for(job.id, pipeline.clock.now() + timedelta(seconds=index), RunTrigger.MANUAL),
            job_id=job.id,
            tenant=job.tenant,
            scheduled_for=pipeline.clock.now(),
            status=RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED,
        )
        target = RunTarget(job.id, job.tenant, job.type, {}, job.retry, 30, variant=variant)
        guard.run_settled(run, target, run.status)


def _item(pipeline: Pipeline, job: Job) -> dict[str, Any]:
    db = pipeline.services.clients.client("dynamodb")
    return db.get_item(TableName=pipeline.services.settings.table_name, Key=job_key(job.id))["Item"]


def test_the_guard_rolls_a_failing_variant_back_and_says_why(pipeline):
    consumer = Consumer(pipeline.services.clients)
    job = pipeline.create_job(
        type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 20}]
    )
    _settle(pipeline, job, BASELINE, [True] * 95 + [False] * 5)
    _settle(pipeline, job, "v2", [True] * 20 + [False] * 9)
    assert [v.name for v in pipeline.services.store.jobs.get_job(job.id).variants] == ["v2"]  # 29 runs: no look yet
    _settle(pipeline, job, "v2", [False])
    after = pipeline.services.store.jobs.get_job(job.id)
    assert after.variants == []
    assert after.version == job.version + 1
    assert after.variant_rollback is not None
    assert (after.variant_rollback.variant, after.variant_rollback.by) == ("v2", "tickwork")
    assert "failure rate 10/30 (33.3%) against the baseline's 5/100 (5.0%)" in after.variant_rollback.reason
    item = _item(pipeline, job)
    assert tally_attribute("v2", "ended") not in item  # its counts went with it
    assert item[tally_attribute(BASELINE, "ended")] == {"N": "100"}
    page = pipeline.services.audit.listings.list_audit(
        TENANT, limit=50, from_ms=0, to_ms=to_ms(pipeline.clock.now()) + 1
    )
    (record,) = [r for r in page.items if "variant" in r.action]
    assert (record.action, record.actor.id, record.resource.id) == ("job.variant_rollback", "tickwork", job.id)
    (event,) = [e for e in consumer.events() if e["detail-type"] == "Variant Rolled Back"]
    assert (event["detail"]["job_id"], event["detail"]["variant"]) == (job.id, "v2")


def test_the_guard_leaves_a_variant_as_good_as_the_baseline_alone(pipeline):
    job = pipeline.create_job(
        type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 20}]
    )
    _settle(pipeline, job, BASELINE, [True] * 95 + [False] * 5)
    _settle(pipeline, job, "v2", ([True] * 19 + [False]) * 6)  # 5 % failures, 120 runs: four looks
    after = pipeline.services.store.jobs.get_job(job.id)
    assert [v.name for v in after.variants] == ["v2"]
    assert after.variant_rollback is None
    assert _item(pipeline, job)[tally_attribute("v2", "failed")] == {"N": "6"}


def test_a_run_of_the_executor_counts_for_its_variant_on_the_job_item(pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2", "payload": {"fail_attempts": 5}}
    job, run_id = _due(pipeline, type="variant_probe", retry={"max_attempts": 1}, variants=[v2])
    pipeline.drain()
    assert pipeline.run(run_id).status is RunStatus.FAILED
    item = _item(pipeline, job)
    assert (item[tally_attribute("v2", "ended")], item[tally_attribute("v2", "failed")]) == ({"N": "1"}, {"N": "1"})


def test_a_change_of_a_variant_forgets_its_counts_and_a_weight_change_keeps_them(pipeline):
    job = pipeline.create_job(
        type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 20}]
    )
    _settle(pipeline, job, "v2", [True, False])
    _patch(pipeline, job, variants=[{"name": "v2", "weight": 30}])
    assert _item(pipeline, job)[tally_attribute("v2", "ended")] == {"N": "2"}
    _patch(pipeline, job, variants=[{"name": "v2", "weight": 30, "payload": {"fail_attempts": 1}}])
    assert tally_attribute("v2", "ended") not in _item(pipeline, job)
    assert [v["name"] for v in json.loads(_item(pipeline, job)["variants_json"]["S"])] == ["v2"]  # still declared


def test_a_variant_s_payload_patch_keeps_its_nulls_and_numbers_as_written(pipeline):
    v2 = {"name": "v2", "weight": 100, "payload": {"drop": None, "ratio": 2.0, "empty": ""}}
    job = pipeline.create_job(
        type="echo", payload={"drop": 1, "keep": True}, schedule={"rate": "1 hour"}, variants=[v2]
    )
    stored = pipeline.services.store.jobs.get_job(job.id)
    assert stored.variants[0].payload == {"drop": None, "ratio": 2.0, "empty": ""}
    pipeline.services.jobs.trigger(TENANT, job.id)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert pipeline.services.results.read(run) == {"keep": True, "ratio": 2.0, "empty": ""}
    plain = pipeline.create_job(type="echo", schedule={"rate": "1 hour"})
    assert "variants_json" not in _item(pipeline, plain)  # a job without variants stores nothing for them


def test_a_redriven_run_runs_its_recorded_variant_as_the_job_has_it_now(pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2", "payload": {"fail_attempts": 5}}
    job, run_id = _due(pipeline, type="variant_probe", retry={"max_attempts": 1}, variants=[v2])
    pipeline.drain()
    assert (pipeline.run(run_id).status, pipeline.run(run_id).variant) == (RunStatus.FAILED, "v2")
    fixed = {**v2, "weight": 1, "payload": {"fail_attempts": 0}}
    other = {"name": "v3", "weight": 99}
    _patch(pipeline, job, variants=[other, fixed] if bucket_of(run_id) < 99 else [fixed, other])
    pipeline.services.redrive.retry_run(TENANT, run_id)
    pipeline.drain()
    run = pipeline.run(run_id)
    assert (run.status, run.requeues, run.variant) == (RunStatus.SUCCEEDED, 1, "v2")
    assert pipeline.services.results.read(run) == {"version": 2}


def test_a_workflow_step_runs_and_records_its_variant(pipeline):
    from tests.workflow_runs import create, occur

    variant = {"name": "v2", "weight": 100, "type": "variant_probe@2"}
    workflow = create(pipeline, [{"id": "a", "type": "variant_probe", "variants": [variant]}])
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    run = pipeline.run(step_run_id_for(workflow_run_id, "a"))
    assert (run.status, run.variant) == (RunStatus.SUCCEEDED, "v2")
    assert pipeline.services.results.read(run) == {"version": 2}


def test_a_count_that_cannot_be_written_leaves_the_outcome_standing(pipeline, monkeypatch):
    def refused(*_: Any, **__: Any) -> None:
        raise RuntimeError("throttled")

    monkeypatch.setattr(VariantTallies, "count", refused)
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2"}
    job, run_id = _due(pipeline, type="variant_probe", variants=[v2])
    pipeline.drain()
    assert (pipeline.run(run_id).status, pipeline.run(run_id).variant) == (RunStatus.SUCCEEDED, "v2")
    assert tally_attribute("v2", "ended") not in _item(pipeline, job)


def test_a_rollback_of_a_variant_already_gone_writes_nothing(pipeline):
    job = pipeline.create_job(type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 5}])
    guard = _guard(pipeline)
    assert guard.roll_back(job.id, "v3", "why") is False
    assert guard.roll_back(f"j{'0' * 25}", "v2", "why") is False
    assert pipeline.services.store.jobs.get_job(job.id).version == job.version


def test_a_rollback_that_keeps_losing_to_changes_gives_up_and_a_later_try_wins(pipeline, monkeypatch):
    job = pipeline.create_job(type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 5}])
    guard = _guard(pipeline)
    monkeypatch.setattr(type(guard.jobs), "replace_job", lambda *_, **__: False)
    assert guard.roll_back(job.id, "v2", "why") is False
    monkeypatch.undo()
    assert [v.name for v in pipeline.services.store.jobs.get_job(job.id).variants] == ["v2"]
    assert guard.roll_back(job.id, "v2", "why") is True


def test_the_stats_window_reads_at_most_its_limit_newest_first(pipeline):
    from tickwork.store.variants import VariantRuns

    job = pipeline.create_job(type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 5}])
    for _ in range(4):
        pipeline.services.jobs.trigger(TENANT, job.id)
        pipeline.clock.advance(1)
    pipeline.drain()
    runs = VariantRuns(pipeline.services.store.shared_table)
    since = pipeline.clock.now() - timedelta(hours=1)
    every = runs.ended_in(job.id, since, pipeline.clock.now())
    assert (len(every.runs), every.truncated) == (4, False)
    latest = runs.ended_in(job.id, since, pipeline.clock.now(), limit=3)
    assert (latest.truncated, [r["run_id"] for r in latest.runs]) == (True, [r["run_id"] for r in every.runs][:3])
    assert runs.ended_in(job.id, since - timedelta(hours=2), since).runs == []


def _requests_of_one_run(pipeline: Pipeline, **spec: Any) -> int:
    _, run_id = _due(pipeline, type="variant_probe", **spec)
    pipeline.calls.clear()
    pipeline.drain()
    assert pipeline.run(run_id).status is RunStatus.SUCCEEDED
    return pipeline.calls.count()


def test_the_guard_costs_one_small_write_per_run_of_a_job_with_variants_and_none_without(pipeline):
    without = _requests_of_one_run(pipeline)
    with_variants = _requests_of_one_run(pipeline, variants=[{"name": "v2", "weight": 50}])
    assert with_variants == without + 1
    (count,) = [p for p in pipeline.calls.params("UpdateItem") if p["UpdateExpression"].startswith("ADD")]
    assert count["UpdateExpression"] == "ADD #ended :one, #failed :failed"


def test_a_redriven_run_counts_once_for_its_variant_as_it_last_ended(pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2"}
    job, run_id = _due(
        pipeline, type="variant_probe", payload={"fail_attempts": 1}, retry={"max_attempts": 1}, variants=[v2]
    )
    pipeline.drain()
    assert pipeline.run(run_id).status is RunStatus.FAILED
    pipeline.services.redrive.retry_run(TENANT, run_id, payload={"fail_attempts": 0})  # fixed for its retry
    pipeline.drain()
    assert pipeline.run(run_id).status is RunStatus.SUCCEEDED
    item = _item(pipeline, job)
    # One run, which ended SUCCEEDED after its redrive: not two, one of them failed.
    assert (item[tally_attribute("v2", "ended")], item[tally_attribute("v2", "failed")]) == ({"N": "1"}, {"N": "0"})


def test_a_redriven_run_whose_earlier_count_was_forgotten_counts_as_a_new_run(pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2"}
    job, run_id = _due(
        pipeline, type="variant_probe", payload={"fail_attempts": 1}, retry={"max_attempts": 1}, variants=[v2]
    )
    pipeline.drain()
    _patch(pipeline, job, variants=[{**v2, "payload": {"fail_attempts": 0}}])  # v2 fixed: its counts forgotten
    assert tally_attribute("v2", "ended") not in _item(pipeline, job)
    pipeline.services.redrive.retry_run(TENANT, run_id)
    pipeline.drain()
    assert pipeline.run(run_id).status is RunStatus.SUCCEEDED
    item = _item(pipeline, job)
    assert (item[tally_attribute("v2", "ended")], item[tally_attribute("v2", "failed")]) == ({"N": "1"}, {"N": "0"})


def test_a_run_of_a_variant_rolled_back_while_it_was_in_flight_leaves_no_count_behind(pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "variant_probe@2", "payload": {"fail_attempts": 1}}
    job, run_id = _due(pipeline, type="variant_probe", retry={"max_attempts": 2}, variants=[v2])
    band, messages = _one(pipeline)
    pipeline.deliver(band, messages)
    assert (pipeline.run(run_id).status, pipeline.run(run_id).variant) == (RunStatus.RETRYING, "v2")
    pipeline.services.job_variants.rollback(TENANT, job.id, "v2")
    pipeline.clock.advance(10)
    url = pipeline.resources.queue_urls[band.value]
    pipeline.sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    pipeline.drain()
    run = pipeline.run(run_id)
    assert (run.status, run.variant) == (RunStatus.SUCCEEDED, "v2")  # it ran the baseline, under its own name
    assert pipeline.services.results.read(run) == {"version": 1}
    item = _item(pipeline, job)
    assert not [name for name in item if name.startswith("variant_runs#")]  # a job without variants counts nothing


def test_the_guard_does_not_roll_back_a_variant_changed_since_its_runs_were_counted(pipeline, monkeypatch):
    job = pipeline.create_job(
        type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 20}]
    )
    _settle(pipeline, job, BASELINE, [True] * 95 + [False] * 5)
    _settle(pipeline, job, "v2", [True] * 20 + [False] * 9)
    counted = VariantTallies.count
    fixed = {"name": "v2", "weight": 20, "payload": {"fail_attempts": 0}}

    def count_then_changed(self: VariantTallies, *args: Any, **kwargs: Any) -> Any:
        seen = counted(self, *args, **kwargs)  # the 30th run's count, the old v2's: a look that rolls back
        _patch(pipeline, job, variants=[fixed])  # ...while a person puts a new v2 in its place
        return seen

    monkeypatch.setattr(VariantTallies, "count", count_then_changed)
    _settle(pipeline, job, "v2", [False])
    after = pipeline.services.store.jobs.get_job(job.id)
    assert [v.model_dump(exclude_none=True) for v in after.variants] == [
        fixed
    ]  # the new v2 is not judged by the old's runs
    assert after.variant_rollback is None


def test_a_look_whose_rollback_gave_up_is_tried_again_at_the_next_look_not_the_next_run(pipeline, monkeypatch):
    job = pipeline.create_job(
        type="variant_probe", schedule={"rate": "1 hour"}, variants=[{"name": "v2", "weight": 20}]
    )
    _settle(pipeline, job, BASELINE, [True] * 95 + [False] * 5)
    _settle(pipeline, job, "v2", [True] * 20 + [False] * 9)
    monkeypatch.setattr(type(pipeline.services.store.jobs), "replace_job", lambda *_, **__: False)
    _settle(pipeline, job, "v2", [False])  # the look at 30 rolls back, and loses every try
    monkeypatch.undo()
    _settle(pipeline, job, "v2", [False] * 29)  # 31 to 59: no look
    assert [v.name for v in pipeline.services.store.jobs.get_job(job.id).variants] == ["v2"]
    _settle(pipeline, job, "v2", [False])  # the look at 60
    assert pipeline.services.store.jobs.get_job(job.id).variants == []
