"""The SQS dead-letter queues as an admin sees them (GET /v1/dead-letters) and redrives them
(POST /v1/dead-letters/redrive).

Tickwork has two dead letters (docs/architecture.md, "Dead letters"): a tenant's FAILED runs, in the table (GET
/v1/dlq, retried and redriven there), and the band queues' SQS dead-letter queues, which hold the messages the
executor could not process (one that does not parse or names no run, or one whose receives ran out). Those are the
operator's, not a tenant's: an admin reads how many each holds, and, after a fix, moves them back to their band's
queue with SQS's message move task. A moved message is processed as any: a run it names that has ended since is
acknowledged without running (promise 3); a message that still cannot be processed comes back here."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tickwork.aws.dead_letters import DeadLetterQueues, RedriveRunning
from tickwork.control.audit import AuditTrail
from tickwork.model.audit import Attribution, AuditResource, Change
from tickwork.model.errors import Conflict
from tickwork.model.policies import Band
from tickwork.observability import logger


class DeadLetterRedriveView(BaseModel):
    status: str = Field(description="RUNNING, COMPLETED, CANCELLING, CANCELLED or FAILED (SQS's message move task).")
    moved: int = Field(description="Messages moved back to the band's queue so far (approximate).")
    to_move: int = Field(description="Messages the queue held when the move started (approximate).")
    started_at: datetime
    failure: str | None = Field(default=None, description="Why SQS stopped the move (FAILED only).")


class DeadLetterQueueView(BaseModel):
    band: Band
    messages: int = Field(description="Messages waiting in the band's SQS dead-letter queue (approximate).")
    in_flight: int = Field(description="Messages someone has received and not yet deleted (approximate).")
    last_redrive: DeadLetterRedriveView | None = Field(
        description="The queue's latest redrive (null: none that SQS still lists, within 14 days)."
    )


class DeadLetterQueueList(BaseModel):
    items: list[DeadLetterQueueView] = Field(description="One per band: high, normal, low.")


class DeadLetterRedriveRequest(BaseModel):
    """POST /v1/dead-letters/redrive: the bands whose SQS dead-letter queues to move back. Named, never implied by
    an empty body (a cross-site page can send a bodiless POST)."""

    model_config = ConfigDict(extra="forbid")

    bands: list[Band] = Field(min_length=1, max_length=3, description="The bands to redrive, e.g. all three.")


class DeadLetterRedriveResult(BaseModel):
    started: list[Band] = Field(description="Bands whose messages SQS is moving back to their queue.")
    empty: list[Band] = Field(description="Bands with no message to move.")
    running: list[Band] = Field(description="Bands whose earlier redrive is still moving messages (one at a time).")


NOTHING_TO_REDRIVE = "nothing to redrive: the dead-letter queues named hold no message"


class DeadLetterAdmin:
    """What the dead-letters routes call (their caller is an admin: the route checks it)."""

    def __init__(self, queues: DeadLetterQueues, audit: AuditTrail | None = None) -> None:
        self.queues = queues
        self.audit = audit

    def queues_now(self) -> DeadLetterQueueList:
        return DeadLetterQueueList(items=[_view(self.queues, band) for band in Band])

    def redrive(self, bands: list[Band], *, by: Attribution | None = None, tenant: str = "") -> DeadLetterRedriveResult:
        """Start a move task for each named band that holds messages. Conflict if none was started: every queue
        named was empty, or is being moved already."""
        started: list[Band] = []
        empty: list[Band] = []
        running: list[Band] = []
        for band in dict.fromkeys(bands):
            state = self.queues.read(band)
            if state.last_redrive is not None and state.last_redrive.status == "RUNNING":
                running.append(band)
            elif state.messages == 0:
                empty.append(band)
            else:
                try:
                    self.queues.redrive(band)
                except RedriveRunning:
                    running.append(band)
                    continue
                started.append(band)
                logger.info("dead-letter queue redriven", extra={"band": band.value, "messages": state.messages})
        if not started:
            reason = NOTHING_TO_REDRIVE if not running else "a redrive of each queue named is moving its messages still"
            raise Conflict(reason)
        if self.audit is not None:  # the move tasks write nothing to the table: their record is written after them
            self.audit.record_alone(
                by,
                tenant=tenant,
                action="dead_letters.redrive",
                resource=AuditResource(kind="dlq", id=",".join(band.value for band in started)),
                changes={"started": Change(after=[band.value for band in started])},
            )
        return DeadLetterRedriveResult(started=started, empty=empty, running=running)


def _view(queues: DeadLetterQueues, band: Band) -> DeadLetterQueueView:
    state = queues.read(band)
    task = state.last_redrive
    last = None
    if task is not None:
        last = DeadLetterRedriveView(
            status=task.status, moved=task.moved, to_move=task.to_move, started_at=task.started_at, failure=task.failure
        )
    return DeadLetterQueueView(band=band, messages=state.messages, in_flight=state.in_flight, last_redrive=last)
