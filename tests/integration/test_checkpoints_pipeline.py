"""Checkpoints and steps through the real pipeline (moto): a later attempt, a takeover after a crash, a retry and a
DLQ redrive each resume from the run's last checkpoint; a writer that lost its lease overwrites nothing."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from tickwork.aws.results import ResultStore
from tickwork.executor.checkpoints import LeasedCheckpoints
from tickwork.jobtypes import LeaseLost
from tickwork.jobtypes.durable import INLINE_CHECKPOINT_MAX_BYTES, RunCheckpoints
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus
from tickwork.store import LeaseOutcome
from tickwork.store.checkpoints import CheckpointRecords

from tests.durable_jobtypes import STARTS, STEP_CALLS
from tests.faults.crashes import ProcessKilled
from tests.harness import TENANT, Pipeline

FAR = timedelta(seconds=300)


def _due(pipeline: Pipeline, **spec: Any) -> Job:
    job = pipeline.create_job(schedule={"at": pipeline.clock.now() + FAR}, **spec)
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def _result(pipeline: Pipeline, run_id: str) -> Any:
    return pipeline.services.results.read(pipeline.run(run_id))


def test_a_run_killed_after_a_checkpoint_resumes_from_it_on_the_takeover(pipeline):
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 5, "die_after_page": 2})
    messages = pipeline.receive(Band.NORMAL)
    with pytest.raises(ProcessKilled):
        pipeline.deliver(Band.NORMAL, messages)
    (running,) = pipeline.runs_of(job.id)
    assert running.status is RunStatus.RUNNING
    pipeline.clock.advance(pipeline.services.settings.lease_seconds + 1)  # its lease ends; another takes over
    pipeline.deliver(Band.NORMAL, messages)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    assert STARTS[run.id] == [0, 3]  # pages 0-2 were not exported again
    assert _result(pipeline, run.id) == {"rows": [0, 10, 20, 30, 40]}


def test_a_retried_attempt_resumes_from_the_last_checkpoint(pipeline):
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 4, "fail_after_page": 1})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2)
    assert STARTS[run.id] == [0, 2]
    assert _result(pipeline, run.id) == {"rows": [0, 10, 20, 30]}


def test_a_checkpoint_too_large_for_the_item_goes_to_s3_and_the_next_attempt_reads_it(pipeline):
    padding = INLINE_CHECKPOINT_MAX_BYTES + 100
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 3, "fail_after_page": 0, "padding": padding})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, STARTS[run.id]) == (RunStatus.SUCCEEDED, [0, 1])
    (kept,) = _checkpoint_objects(pipeline)  # the earlier two were superseded, and deleted
    assert kept.startswith(f"checkpoints/{TENANT}/{job.id}/{run.id}/00000003-")
    item = _item(pipeline, run)
    assert item["checkpoint_seq"] == 3
    assert "checkpoint_json" not in item
    assert item["checkpoint_key"] == kept
    assert item["checkpoint_bytes"] > INLINE_CHECKPOINT_MAX_BYTES


def _checkpoint_objects(pipeline: Pipeline) -> list[str]:
    return sorted(key for key in pipeline.result_objects() if key.startswith("checkpoints/"))


def test_superseded_checkpoint_objects_do_not_accumulate_in_s3(pipeline):
    """Each save to S3 writes an object of its own; once the run item points to the newer one, the older is
    deleted: a run keeps one checkpoint object, the one its item points to."""
    padding = INLINE_CHECKPOINT_MAX_BYTES + 100
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 4, "fail_after_page": 1, "padding": padding})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, STARTS[run.id]) == (RunStatus.SUCCEEDED, [0, 2])  # the retry started from the S3 one
    assert _checkpoint_objects(pipeline) == [_item(pipeline, run)["checkpoint_key"]]


def test_a_checkpoint_back_in_the_item_deletes_its_s3_predecessor(pipeline):
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 1})
    (run,) = pipeline.runs_of(job.id)
    checkpoints = _leased_writer(pipeline, run.id, "executor", lost=[])
    checkpoints.save({"filler": "x" * INLINE_CHECKPOINT_MAX_BYTES})
    assert len(_checkpoint_objects(pipeline)) == 1
    checkpoints.save({"small": True})
    assert _checkpoint_objects(pipeline) == []
    assert "checkpoint_json" in _item(pipeline, run)


def test_a_superseded_object_that_cannot_be_deleted_leaves_the_checkpoint_saved(pipeline, monkeypatch):
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 1})
    (run,) = pipeline.runs_of(job.id)
    checkpoints = _leased_writer(pipeline, run.id, "executor", lost=[])
    checkpoints.save({"filler": "x" * INLINE_CHECKPOINT_MAX_BYTES})

    def refused(key: str) -> None:
        raise RuntimeError("AccessDenied")

    monkeypatch.setattr(pipeline.services.results, "delete_checkpoint", refused)
    checkpoints.save({"filler": "y" * INLINE_CHECKPOINT_MAX_BYTES})  # saved; the lifecycle rule takes the old one
    assert len(_checkpoint_objects(pipeline)) == 2
    assert _item(pipeline, run)["checkpoint_seq"] == 2


def test_a_state_not_json_or_too_large_is_refused_and_the_previous_checkpoint_stands(pipeline):
    job = _due(pipeline, type="checkpoint-export", payload={"pages": 3, "bad_state_at_page": 1})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED, run.error
    assert _result(pipeline, run.id) == {"rows": [0, 10, 20]}
    assert _item(pipeline, run)["checkpoint_seq"] == 3  # the refused saves wrote nothing
    assert not [key for key in pipeline.result_objects() if key.startswith("checkpoints/")]


def _failed_after_a_checkpoint(pipeline: Pipeline) -> str:
    job = _due(
        pipeline, type="checkpoint-export", payload={"pages": 4, "fail_after_page": 1}, retry={"max_attempts": 1}
    )
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, STARTS[run.id]) == (RunStatus.FAILED, [0])
    return run.id


def test_a_retry_of_a_failed_run_resumes_from_its_checkpoint(pipeline):
    run_id = _failed_after_a_checkpoint(pipeline)
    pipeline.services.redrive.retry_run(TENANT, run_id)
    pipeline.drain()
    assert (pipeline.run(run_id).status, STARTS[run_id]) == (RunStatus.SUCCEEDED, [0, 2])
    assert _result(pipeline, run_id) == {"rows": [0, 10, 20, 30]}


def test_a_dlq_redrive_resumes_from_the_checkpoint(pipeline):
    run_id = _failed_after_a_checkpoint(pipeline)
    assert pipeline.services.redrive.redrive(TENANT, [run_id]).redriven == 1
    pipeline.drain()
    assert (pipeline.run(run_id).status, STARTS[run_id]) == (RunStatus.SUCCEEDED, [0, 2])


def test_a_retry_not_from_the_checkpoint_starts_over(pipeline):
    run_id = _failed_after_a_checkpoint(pipeline)
    pipeline.services.redrive.retry_run(TENANT, run_id, from_checkpoint=False)
    item = _item(pipeline, pipeline.run(run_id))
    assert "checkpoint_json" not in item
    assert item["checkpoint_seq"] == 2  # the number only grows
    pipeline.drain()
    run = pipeline.run(run_id)
    assert (run.status, STARTS[run_id]) == (RunStatus.SUCCEEDED, [0, 0])
    assert _result(pipeline, run_id) == {"rows": [0, 10, 20, 30]}
    assert _item(pipeline, run)["checkpoint_seq"] == 6


@pytest.mark.parametrize("padding", [0, INLINE_CHECKPOINT_MAX_BYTES], ids=["inline", "in-s3"])
def test_a_zombie_whose_lease_was_taken_over_cannot_overwrite_the_newer_checkpoint(pipeline, padding):
    job = _due(pipeline, type="checkpoint-export")
    (run,) = pipeline.runs_of(job.id)
    leases, clock = pipeline.services.store.leases, pipeline.clock
    records = CheckpointRecords(pipeline.services.store.shared_table)
    results: ResultStore = pipeline.services.results
    lost: list[str] = []

    def writer(owner: str) -> RunCheckpoints:
        lease = leases.lease_run(run.id, owner=owner, now=clock.now(), lease_for=timedelta(seconds=60))
        assert lease.outcome is LeaseOutcome.LEASED
        assert lease.run is not None
        leased = LeasedCheckpoints(
            records,
            results,
            clock,
            run=lease.run,
            owner=owner,
            stored=lease.checkpoint,
            on_lost=lambda: lost.append(owner),
        )
        return RunCheckpoints(leased)

    zombie = writer("zombie")
    zombie.save({"page": 1, "filler": "z" * padding})
    clock.advance(61)  # the zombie stalls past its lease; another executor takes the run over
    successor = writer("successor")
    assert successor.last() == {"page": 1, "filler": "z" * padding}
    successor.save({"page": 2, "filler": "s" * padding})
    with pytest.raises(LeaseLost):
        zombie.save({"page": 9, "filler": "z" * padding})  # it wakes up and tries to save
    assert lost == ["zombie"]
    item = _item(pipeline, run)
    assert item["checkpoint_seq"] == 2
    stored = (
        json.loads(item["checkpoint_json"])
        if "checkpoint_json" in item
        else results.read_checkpoint(item["checkpoint_key"])
    )
    assert stored["state"]["page"] == 2
    # The zombie's refused object is deleted, and so is its first (superseded by the successor's): one is left.
    assert _checkpoint_objects(pipeline) == ([item["checkpoint_key"]] if padding else [])


def _leased_writer(pipeline: Pipeline, run_id: str, owner: str, *, lost: list[str]) -> RunCheckpoints:
    """The run leased by `owner` now, and the checkpoint writer of that attempt."""
    lease = pipeline.services.store.leases.lease_run(
        run_id, owner=owner, now=pipeline.clock.now(), lease_for=timedelta(seconds=60)
    )
    assert lease.outcome is LeaseOutcome.LEASED
    assert lease.run is not None
    leased = LeasedCheckpoints(
        CheckpointRecords(pipeline.services.store.shared_table),
        pipeline.services.results,
        pipeline.clock,
        run=lease.run,
        owner=owner,
        stored=lease.checkpoint,
        on_lost=lambda: lost.append(owner),
    )
    return RunCheckpoints(leased)


def test_each_step_runs_once_across_three_attempts(pipeline):
    job = _due(pipeline, type="checkpoint-steps", retry={"max_attempts": 3})
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 3)
    # Only this run's steps: the counter is the module's, and other tests' runs count in it too.
    mine = Counter({key: n for key, n in STEP_CALLS.items() if key[0] == run.id})
    assert Counter({(run.id, "charge"): 1, (run.id, "ship"): 1, (run.id, "notify"): 1}) == mine
    # Each step's result is the one its only call returned.
    assert _result(pipeline, run.id) == {
        "charge": "charge at attempt 1",
        "ship": "ship at attempt 2",
        "notify": "notify at attempt 3",
    }


def _item(pipeline: Pipeline, run: Any) -> dict[str, Any]:
    from tickwork.store import deserialize, run_key

    db = pipeline.services.clients.client("dynamodb")
    item = db.get_item(TableName=pipeline.services.settings.table_name, Key=run_key(run.id), ConsistentRead=True)
    return deserialize(item["Item"])
