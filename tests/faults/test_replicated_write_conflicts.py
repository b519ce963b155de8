"""ReplicatedWriteConflictException at each write of the claim, the lease and the outcome: in an MRSC global table,
another region writing the same item refuses the write, unapplied (docs/regions.md). Refused past the SDK's own
retries, `store/conditional.Table` sends it again; the run is claimed once, leased once, runs once and ends once, and
no error reaches the tick or the executor.

Each write is refused one time more than the SDK's attempts (TOTAL_ATTEMPTS), so the SDK gives up on it once and the
table's resend carries it at once: at the same instant of the fake clock. (Without that resend, the error reaches the
tick or the executor, and the write is made again only by the next tick or the message's redelivery, later.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import moto.sqs.models
import pytest
from moto.core.botocore_stubber import BotocoreStubber
from tickwork.aws.clients import TOTAL_ATTEMPTS
from tickwork.model.claim_plan import ClaimableJob
from tickwork.model.ids import ItemKind
from tickwork.model.states import RunStatus
from tickwork_local.aws.faults import AimedRefusals

from tests.faults import jobtypes
from tests.faults.aws_errors import skipping_refused
from tests.faults.world import ACTIVE, RECOVERY_BOUND, Planned, World
from tests.harness import START, Pipeline

Body = dict[str, Any]


def _is_run_record(body: Body) -> bool:
    return body.get("Item", {}).get("kind", {}).get("S") == ItemKind.RUN.value


def _is_job_advance(body: Body) -> bool:
    return body.get("Key", {}).get("pk", {}).get("S", "").startswith("JOB#") and "SET" in body.get(
        "UpdateExpression", ""
    )


def _is_lease(body: Body) -> bool:
    return "lease_owner = :owner" in body.get("UpdateExpression", "")


def _is_outcome(body: Body) -> bool:
    return "finished_at" in body.get("UpdateExpression", "")


# The write, as its request shows it: (operation, what its body holds).
WRITES: dict[str, tuple[str, Callable[[Body], bool]]] = {
    "claim: the run record": ("PutItem", _is_run_record),
    "claim: the job's advance": ("UpdateItem", _is_job_advance),
    "the lease": ("UpdateItem", _is_lease),
    "the outcome": ("UpdateItem", _is_outcome),
}


@pytest.fixture
def refusals() -> AimedRefusals:
    # Stamped by the pipeline's fake clock once it exists (conflicted_pipeline).
    return AimedRefusals(clock=lambda: None)


@pytest.fixture
def conflicted_pipeline(
    mocked_aws: None, monkeypatch: pytest.MonkeyPatch, sdk_backoffs: Any, refusals: AimedRefusals
) -> Iterator[Pipeline]:
    jobtypes.COMPLETIONS.clear()
    monkeypatch.setattr(BotocoreStubber, "process_request", skipping_refused(BotocoreStubber.process_request))
    with Pipeline.create(session_hooks=[lambda session: refusals.register(session.events)]) as pipeline:
        refusals.clock = pipeline.clock.now
        monkeypatch.setattr(moto.sqs.models, "unix_time", lambda *_: pipeline.clock.now().timestamp())
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda *_: pipeline.clock.now().timestamp() * 1000)
        yield pipeline


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_refused_by_another_regions_write_is_sent_again_and_the_run_runs_once(
    conflicted_pipeline, refusals, sdk_backoffs, write
):
    world = World(conflicted_pipeline)
    # Past the horizon when created, so the tick claims it (job creation claims a run due within it).
    job = conflicted_pipeline.create_job(type="fault-echo", schedule={"at": START + timedelta(minutes=4)})
    assert job.next_run_at is not None
    world.planned.append(Planned(job, list(ClaimableJob.from_job(job).occurrences_from(job.next_run_at))[:1]))
    operation, matches = WRITES[write]
    aimed = refusals.aim(operation, matches, times=TOTAL_ATTEMPTS + 1)

    world.run_for(ACTIVE)
    world.recover(RECOVERY_BOUND)

    assert len(aimed.refused_at) == TOTAL_ATTEMPTS + 1, f"{write}: the write was not made, or not refused as aimed"
    # Sent again by the table at once, not by the next tick or the message's redelivery.
    assert set(aimed.refused_at) == {aimed.passed_at}, (
        f"{write}: refused at {aimed.refused_at}, made at {aimed.passed_at}"
    )
    assert world.aws_failures == 0, f"{write}: the conflict reached the tick or the executor"
    world.assert_promises_kept()
    (run,) = conflicted_pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.attempts == 1  # leased once: no takeover, no retry
    assert jobtypes.COMPLETIONS[run.id] == [1]  # the effect ran once
