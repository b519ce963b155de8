"""The outbox of run events (tickwork.model.run_events): an item whose fact's events are not known to be published
keeps `events_pending` and stays in the due index, so the tick publishes them were their writer to die first.

An item in the outbox is a terminal run (its outcome's write set `events_pending` and its due keys at once), or
a deadline's watch (tickwork.store.deadlines). Publishing takes the item (moves its due time, conditioned on the
one read: of racing ticks one publishes), then clears it (conditioned on the time it set: a tick that took it
over meanwhile clears it itself). Cost: one UpdateItem to clear for a publish by the fact's writer; one more to
take it for the tick's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.store.codec import expression_values
from tickwork.store.conditional import Table

EVENTS_PENDING = "events_pending"


class EventOutbox:
    def __init__(self, table: Table) -> None:
        self._table = table

    def take(self, key: dict[str, Any], *, expected_due_at: int, retry_at: datetime) -> dict[str, Any] | None:
        """The item, if this caller takes it (its due time moved to `retry_at`, where a publisher that dies leaves
        it for a later tick); None if another took it or it was cleared."""
        won, attrs = self._table.update_if_returning_new(
            key,
            "SET due_at = :retry",
            f"due_at = :old AND attribute_exists({EVENTS_PENDING})",
            None,
            expression_values(retry=to_ms(retry_at), old=expected_due_at),
        )
        return attrs if won else None

    def clear(self, key: dict[str, Any], *, due_at: datetime) -> bool:
        """The item's events are published: out of the outbox and the due index, if nobody took it since."""
        return self._table.update_if(
            key,
            f"REMOVE {EVENTS_PENDING}, due_shard, due_at",
            "due_at = :due",
            None,
            expression_values(due=to_ms(due_at)),
        )
