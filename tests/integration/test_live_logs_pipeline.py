"""Live run logs through the real pipeline (moto): an attempt's lines are flushed with its heartbeat, readable while
it runs, and kept when its executor dies; the attempt's own log replaces its flushes when it ends."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from tickwork.control.run_log_reader import RunLogQueries
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus

from tests.durable_jobtypes import RELEASE, REPORTED
from tests.faults.crashes import ProcessKilled
from tests.harness import TENANT, Pipeline

FAR = timedelta(seconds=300)


def _due(pipeline: Pipeline, **payload: Any) -> Job:
    job = pipeline.create_job(type="live-logs", payload=payload, schedule={"at": pipeline.clock.now() + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    return job


def _lines(pipeline: Pipeline, run_id: str) -> list[tuple[int, str]]:
    services = pipeline.services
    view = RunLogQueries(services.queries, services.results, services.clock).read(TENANT, run_id)
    return [(line["attempt"], line["message"]) for line in view.lines]


def test_lines_flushed_before_the_executor_is_killed_stay_readable(pipeline):
    job = _due(pipeline, lines=["page 1", "page 2"], after=["not flushed"], die_once=True)
    messages = pipeline.receive(Band.NORMAL)
    with pytest.raises(ProcessKilled):
        pipeline.deliver(Band.NORMAL, messages)
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.RUNNING
    assert _lines(pipeline, run.id) == [(1, "page 1"), (1, "page 2")]  # the line after the last beat died with it
    pipeline.clock.advance(pipeline.services.settings.lease_seconds + 1)
    pipeline.deliver(Band.NORMAL, messages)  # taken over: the second attempt ends and keeps its own log
    assert pipeline.run(run.id).status is RunStatus.SUCCEEDED
    assert _lines(pipeline, run.id) == [
        (1, "page 1"),
        (1, "page 2"),
        (2, "page 1"),
        (2, "page 2"),
        (2, "not flushed"),
    ]
    keys = [key for key in pipeline.result_objects() if key.startswith("logs/")]
    assert [key.rsplit("/", 1)[1] for key in sorted(keys)] == [
        "0000-001.live.json",
        "0000-002.json",
        "0000-002.live.json",
    ]


def test_a_running_attempts_lines_are_readable_while_it_runs(pipeline):
    REPORTED.clear()
    RELEASE.clear()
    job = _due(pipeline, lines=["exporting"], hold=True)
    worker = threading.Thread(target=pipeline.drain)
    worker.start()
    try:
        assert REPORTED.wait(timeout=30)
        (run,) = pipeline.runs_of(job.id)
        assert run.status is RunStatus.RUNNING
        assert _lines(pipeline, run.id) == [(1, "exporting")]
    finally:
        RELEASE.set()
        worker.join(timeout=60)
    assert _lines(pipeline, run.id) == [(1, "exporting")]  # once: its own log stands in for the flush


def test_a_run_within_one_beat_flushes_nothing(pipeline):
    job = _due(pipeline, lines=["quick"], sleep=1)
    pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    keys = [key.rsplit("/", 1)[1] for key in pipeline.result_objects() if key.startswith("logs/")]
    assert (run.status, keys) == (RunStatus.SUCCEEDED, ["0000-001.json"])
