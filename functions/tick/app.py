"""Tick: EventBridge calls it every minute; it claims what is due and queues it on SQS, or, fanned out
(DispatchWorkers > 1), hands the due index's shards to the dispatch workers (functions/dispatch)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict
from tickwork.observability import observed
from tickwork.services import ServicesSlot


class TickEvent(BaseModel):
    """An EventBridge scheduled event (rule or Scheduler); only its shape is checked, the time is the clock's."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    source: str | None = None
    time: str | None = None


class TickResult(BaseModel):
    dispatched: int
    skipped: int
    redispatched: int
    lost_races: int
    over_capacity: int
    held_back_rate: int
    slices_sent: int
    duration_ms: int
    pending_audits_settled: int  # RegionMode strong only (no transactions)
    expired_deleted: int  # RegionMode strong only (no TTL)


_slot = ServicesSlot()
services = _slot.get  # the wiring, built on first use
use_services = _slot.set  # tests and the local runtime inject theirs


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    TickEvent.model_validate(event)
    report = services().minute_tick.run()
    return TickResult(**{k: getattr(report, k) for k in TickResult.model_fields}).model_dump()
