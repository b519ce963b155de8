"""Run logs under least privilege: the executor's log write and the API's reading of the logs (a listing and a read
per attempt) are allowed by each function's role."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from tickwork.control.run_log_reader import RunLogQueries

from tests.harness import START, TENANT
from tests.template.test_iam_coverage import _missing


def test_writing_and_reading_run_logs_is_allowed_by_the_roles(pipeline, template):
    recorded: dict[str, list[tuple[str, str, dict[str, Any]]]] = defaultdict(list)
    job = pipeline.create_job(
        schedule={"at": START + timedelta(minutes=10)}, payload={"log": ["a"], "fail_attempts": 1}
    )
    pipeline.clock.advance(600)
    pipeline.tick()
    pipeline.calls.clear()
    pipeline.drain()
    recorded["ExecutorRole"] += pipeline.calls.calls
    (run,) = pipeline.runs_of(job.id)
    services = pipeline.services
    pipeline.calls.clear()
    view = RunLogQueries(services.queries, services.results, services.clock).read(TENANT, run.id)
    recorded["ApiRole"] += pipeline.calls.calls
    assert [line["attempt"] for line in view.lines] == [1, 2]
    operations = {(role, op) for role, calls in recorded.items() for _, op, _ in calls}
    assert {("ExecutorRole", "PutObject"), ("ApiRole", "ListObjectsV2"), ("ApiRole", "GetObject")} <= operations
    assert _missing(recorded, template, pipeline.resources) == []
