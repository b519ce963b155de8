"""What the workflow pipeline tests share: building a workflow and moving it on (the fake clock, the tick, a
round of the executors), reading its run, and the job types they hold, fail or size steps with (registered
once, here, so that every test module drives the same HOLD)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from tickwork.control.api_bodies import WorkflowRun, WorkflowSpec
from tickwork.jobtypes import RunContext, RunTimeout, job_type, registry
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.workflow.definition import Workflow

from tests.harness import START, TENANT, Pipeline
from tests.testing_jobtypes import EXECUTIONS

FAR = timedelta(seconds=300)  # beyond the 120 s horizon: a created workflow waits for a tick
ONCE = {"max_attempts": 1}


def create(pipeline: Pipeline, steps: list[dict[str, Any]], *, at: datetime = START + FAR, **spec: Any) -> Workflow:
    body = {"name": "wf", "schedule": {"at": at}, "steps": steps, **spec}
    return pipeline.services.workflows.create(TENANT, WorkflowSpec.model_validate(body))


def occur(pipeline: Pipeline, workflow: Workflow) -> str:
    """Move the clock to the workflow's next occurrence and tick: its workflow run opens. Returns its id."""
    assert workflow.next_run_at is not None
    pipeline.clock.set(workflow.next_run_at)
    pipeline.tick()
    return run_id_for(workflow.id, workflow.next_run_at)


def view(pipeline: Pipeline, workflow_run_id: str) -> WorkflowRun:
    return pipeline.services.workflows.get_run(TENANT, workflow_run_id)


def statuses(run: WorkflowRun) -> dict[str, str]:
    """Each step's status, with the skip reason after a colon."""
    return {
        sid: f"{step.status}:{step.skip_reason.value}" if step.skip_reason else str(step.status)
        for sid, step in run.steps.items()
    }


def result_of(pipeline: Pipeline, run_id: str) -> Any:
    return pipeline.services.queries.get_result(TENANT, run_id)


def deliver_round(pipeline: Pipeline) -> int:
    """One round of the executors: what is waiting now is delivered (not what that round starts)."""
    delivered = 0
    for band in Band:
        messages = pipeline.receive(band)
        if messages:
            pipeline.deliver(band, messages)
            delivered += len(messages)
    return delivered


def step(sid: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("type", "counting")
    return {"id": sid, "depends_on": list(depends_on), **fields}


FAILING = {"type": "echo", "payload": {"fail_attempts": 9}, "retry": ONCE}


# ---------------------------------------------------------------- job types of these tests


class AnyPayload(BaseModel):
    model_config = ConfigDict(extra="allow")


class Hold:
    """A handler that holds its run (really, on an event) until the test releases it."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.flaky_fails = True


HOLD = Hold()

if "hold" not in registry:

    @job_type("hold", AnyPayload)
    def hold(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        """Waits for the release, then works on for 30 s (of the fake clock), beating its heartbeat; `finish`
        returns a value even once cancelled (its effect happened)."""
        HOLD.started.set()
        HOLD.release.wait(10)
        try:
            ctx.sleep(30)
        except RunTimeout:
            if not (payload.model_extra or {}).get("finish"):
                raise
        return {"held": True}

    @job_type("flaky", AnyPayload)
    def flaky(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        if HOLD.flaky_fails:
            raise RuntimeError("flaky fails while told to")
        return {"ok": True}

    @job_type("nothing", AnyPayload)
    def nothing(payload: AnyPayload, ctx: RunContext) -> None:
        return None

    @job_type("sized", AnyPayload)
    def sized(payload: AnyPayload, ctx: RunContext) -> dict[str, Any]:
        """A result of about `bytes` bytes (a string of that length)."""
        return {"rows": "x" * int((payload.model_extra or {})["bytes"])}


@pytest.fixture(autouse=True)
def fresh_hold() -> Iterator[None]:
    HOLD.__init__()  # type: ignore[misc]
    EXECUTIONS.clear()
    yield
    HOLD.release.set()
