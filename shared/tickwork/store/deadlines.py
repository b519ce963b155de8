"""Deadline watches (pk=JOB#<job_id>, sk=DEADLINE#<the run's sort key>): a run's deadline in the due index, so
the tick finds a run past its deadline that has not finished without a Scan, even with no executor alive.

The claim puts a watch (only if absent) before the run itself, so no run with a deadline is ever without one;
the tick takes it once due (tickwork.tick.deadlines), records a miss on the run by a conditional write (once
per run), and clears it once the miss's event is published: the watch is the miss's outbox too
(tickwork.store.event_outbox). Cost per run with a deadline: one PutItem at the claim and one UpdateItem when its
time comes (two when missed, and a GetItem of the run), each with its index write; it expires by TTL.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.deadlines import OnMiss
from tickwork.model.ids import ItemKind
from tickwork.model.run import Run
from tickwork.model.run_event_kinds import RunEventKind
from tickwork.store.codec import expression_values, run_key, serialize, shard_of
from tickwork.store.conditional import Table
from tickwork.store.event_outbox import EVENTS_PENDING


def watch_key(run_id: str) -> dict[str, Any]:
    key = run_key(run_id)
    return {"pk": key["pk"], "sk": {"S": "DEADLINE#" + key["sk"]["S"].removeprefix("RUN#")}}


class DeadlineRecords:
    def __init__(self, table: Table, *, shards: int, retention: timedelta) -> None:
        self._table = table
        self.shards = shards
        self.retention = retention

    def watch(self, run: Run, *, on_miss: OnMiss | None = None) -> None:
        """The run's watch, due at its deadline (only if absent: a claim repeated after the watch fired must not
        set it due again). A workflow step's keeps its `on_miss` (a job's is read from the job when it fires)."""
        assert run.deadline_at is not None
        step = {"on_miss": on_miss.value} if on_miss is not None else {}
        item = {
            **watch_key(run.id),
            "kind": {"S": ItemKind.DEADLINE.value},
            **serialize(
                {
                    "run_id": run.id,
                    "job_id": run.job_id,
                    "tenant": run.tenant,
                    "priority": run.priority,
                    "due_shard": shard_of(run.job_id, self.shards),
                    "due_at": to_ms(run.deadline_at),
                    "scheduled_for": iso(run.scheduled_for),
                    EVENTS_PENDING: [RunEventKind.DEADLINE_MISSED.value],
                    "expires_at": int((run.deadline_at + self.retention).timestamp()),
                    **step,
                }
            ),
        }
        self._table.put_if_absent(item, return_old=False)

    def record_miss(self, run_id: str, now: datetime) -> bool:
        """The miss, once per run: False if it was recorded already (or the run is gone)."""
        return self._table.update_if(
            run_key(run_id),
            "SET deadline_missed_at = :now",
            "attribute_exists(pk) AND attribute_not_exists(deadline_missed_at)",
            None,
            expression_values(now=iso(now)),
        )
