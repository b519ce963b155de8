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
from tickwork.store import item_bytes, run_key
from tickwork_local.stack.template import REPO_ROOT

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


def test_what_the_page_says_each_operation_costs(pipeline):
    pipeline.calls.clear()
    run, _, invocations = _run(pipeline, 60)
    updates = [p["UpdateExpression"] for p in pipeline.calls.params("UpdateItem")]
    checkpoints = [u for u in updates if u.startswith("SET checkpoint_seq")]
    progress = [u for u in updates if u == "SET progress = :progress"]
    yields = [u for u in updates if "yielded_ms" in u]
    # A checkpoint: one UpdateItem each; a progress report 5 s after the last: one each; a yield: one UpdateItem
    # and one fresh message.
    assert (len(checkpoints), len(progress), len(yields), invocations) == (12, 12, 3, 4)
    assert pipeline.calls.count("SendMessageBatch") == 1 + 3  # the tick's, then one a yield
    item = pipeline.services.clients.client("dynamodb").get_item(
        TableName=pipeline.services.settings.table_name, Key=run_key(run.id)
    )["Item"]
    assert item_bytes(item) <= 2048  # so each of those writes costs 2 WRU at most
