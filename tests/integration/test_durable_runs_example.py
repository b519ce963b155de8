"""The worked example of docs/durable-runs.md, examples/durable-runs/layer/export_jobs, through the real pipeline
(moto): straight, and with a short Lambda (it yields and goes on from its checkpoint), with the same result. The
page shows the module as it is."""

from __future__ import annotations

import re
import sys
from datetime import timedelta
from typing import Any

import pytest
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus
from tickwork_local.template import REPO_ROOT

from tests.harness import Pipeline

LAYER = REPO_ROOT / "examples" / "durable-runs" / "layer"
MODULE = LAYER / "export_jobs" / "__init__.py"
PAGE = REPO_ROOT / "docs" / "durable-runs.md"
FAR = timedelta(seconds=300)


@pytest.fixture(autouse=True)
def export_jobs() -> None:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    import export_jobs  # noqa: F401  # registers batch_export


def _run(pipeline: Pipeline, lambda_seconds: float) -> Any:
    """The export of 12 pages, each invocation a Lambda of `lambda_seconds`: its run, its result, the invocations."""
    job = pipeline.create_job(type="batch_export", payload={"pages": 12}, schedule={"at": pipeline.clock.now() + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    invocations = 0
    while messages := pipeline.receive(Band.NORMAL):
        invocations += 1
        pipeline.deliver(Band.NORMAL, messages, timeout_seconds=lambda_seconds)
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED, run.error
    return run, pipeline.services.results.read(run), invocations


def test_the_export_gives_the_same_result_straight_and_yielding(pipeline):
    straight, expected, _ = _run(pipeline, 900)
    assert (straight.segments, expected["rows"]) == (0, 1200)
    yielding, result, invocations = _run(pipeline, 60)  # 60 s of 5 s pages: should_yield() after 15 s
    assert (result, yielding.attempts, yielding.segments, invocations) == (expected, 1, 3, 4)
    assert yielding.progress is not None
    assert (yielding.progress.fraction, yielding.progress.message) == (1.0, "page 12 of 12")


def test_the_page_shows_the_module_as_it_is():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert MODULE.read_text() in blocks
