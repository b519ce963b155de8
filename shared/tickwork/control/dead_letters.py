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

from tickwork.aws.dead_letters import DeadLetterQueues, MoveRefused, RedriveRunning
from tickwork.control.audit import AuditTrail
from tickwork.faults import NO_FAULTS, CrashPoint, FaultPlan
from tickwork.model.audit import Attribution
from tickwork.model.errors import Conflict
from tickwork.model.policies import Band
from tickwork.model.redrive_intents import REDRIVE_ACTION, SETTLES_AFTER, redrive_shown, settled
from tickwork.observability import logger
from tickwork.store.audit import PendingIntent


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

    def __init__(
        self, queues: DeadLetterQueues, audit: AuditTrail | None = None, faults: FaultPlan = NO_FAULTS
    ) -> None:
        self.queues = queues
        self.audit = audit
        self.faults = faults

    def queues_now(self) -> DeadLetterQueueList:
        return DeadLetterQueueList(items=[_view(self.queues, band) for band in Band])

    def redrive(self, bands: list[Band], *, by: Attribution | None = None, tenant: str = "") -> DeadLetterRedriveResult:
        """Start a move task for each named band that holds messages. Conflict if none was started: every queue
        named was empty, or is being moved already.

        The moves write nothing to the table, so their audit record is written first, as an intent naming the
        bands to move, and confirmed after, naming those started (marked not happened if none was); one a crash or a failed
        write leaves pending, the tick settles (tickwork.tick.redrive_intents)."""
        empty: list[Band] = []
        running: list[Band] = []
        to_move: dict[Band, int] = {}  # each with the messages it holds
        for band in dict.fromkeys(bands):
            state = self.queues.read(band)
            if state.last_redrive is not None and state.last_redrive.status == "RUNNING":
                running.append(band)
            elif state.messages == 0:
                empty.append(band)
            else:
                to_move[band] = state.messages
        if not to_move:
            raise Conflict(_nothing_started(running))
        self.faults.reached(CrashPoint.REDRIVE_BEFORE_INTENT)
        intent = self._intend(by, tenant, list(to_move))
        self.faults.reached(CrashPoint.REDRIVE_AFTER_INTENT)
        started: list[Band] = []
        undecided = False  # a start SQS did not answer for sure: whether it started is the tick's to read
        try:
            for band, messages in to_move.items():
                try:
                    self.queues.redrive(band)
                except RedriveRunning as exc:
                    running.append(band)
                    undecided = undecided or exc.maybe_ours
                    continue
                started.append(band)
                logger.info("dead-letter queue redriven", extra={"band": band.value, "messages": messages})
                self.faults.reached(CrashPoint.REDRIVE_AFTER_MOVE)
        except MoveRefused:
            self._settle(intent, started)  # the moves started before SQS refused one are recorded
            raise
        except Exception:
            self._leave(intent, "a move's start ended without SQS's answer")
            raise
        if undecided:
            self._leave(intent, "SQS said a queue is being moved to a retried start, which may have started it")
        else:
            self._settle(intent, started)
        self.faults.reached(CrashPoint.REDRIVE_AFTER_CONFIRM)
        if not started:
            raise Conflict(_nothing_started(running))
        return DeadLetterRedriveResult(started=started, empty=empty, running=running)

    def _intend(self, by: Attribution | None, tenant: str, to_move: list[Band]) -> PendingIntent | None:
        if self.audit is None:
            return None
        resource, changes = redrive_shown(to_move)
        return self.audit.intend(
            by, tenant=tenant, action=REDRIVE_ACTION, resource=resource, changes=changes, settles_after=SETTLES_AFTER
        )

    @staticmethod
    def _leave(intent: PendingIntent | None, why: str) -> None:
        """The intent left pending: the tick settles it from SQS's list of the moves."""
        if intent is not None:
            logger.warning(
                "the redrive's audit record is left to the tick", extra={"record_id": intent.record.id, "why": why}
            )

    def _settle(self, intent: PendingIntent | None, started: list[Band]) -> None:
        """The intent confirmed, naming the bands started, or marked not happened if none was. A write that fails leaves it
        pending, for the tick: the answer stays the moves' (they started, and their record will be there)."""
        if intent is None or self.audit is None:
            return
        record = settled(intent.record, started)
        started_bands = [band.value for band in started]
        try:
            won = self.audit.intents.settle(intent, record)
        except Exception:
            logger.exception(
                "could not settle the redrive's audit record; the tick settles it",
                extra={"record_id": intent.record.id, "started": started_bands},
            )
            return
        if not won:
            logger.warning(
                "the redrive's audit record was settled already, by the tick",
                extra={"record_id": intent.record.id, "started": started_bands},
            )


def _nothing_started(running: list[Band]) -> str:
    return NOTHING_TO_REDRIVE if not running else "a redrive of each queue named is moving its messages still"


def _view(queues: DeadLetterQueues, band: Band) -> DeadLetterQueueView:
    state = queues.read(band)
    task = state.last_redrive
    last = None
    if task is not None:
        last = DeadLetterRedriveView(
            status=task.status, moved=task.moved, to_move=task.to_move, started_at=task.started_at, failure=task.failure
        )
    return DeadLetterQueueView(band=band, messages=state.messages, in_flight=state.in_flight, last_redrive=last)
