"""The job's running slot on its item (pk=JOB#<job_id>, sk=JOB): the one run a job with an overlap policy other
than ALLOW runs at a time, and BUFFER_ONE's one waiter (decided by tickwork.executor.overlap)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tickwork.model.clock import to_ms
from tickwork.store.codec import expression_values, job_key
from tickwork.store.conditional import Table


class RunningSlots:
    """The running slot's and the wait slot's writes on a job item, each held by a run id until a time (its
    lease's end), so a holder that dies frees it by expiry."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def take_running_slot(self, job_id: str, *, run_id: str, until: datetime, now: datetime) -> bool:
        """Overlap SKIP's atomic decision: the job's one running slot, held by one run at a time.

        Free when empty, expired (its holder's lease ended: it died), or already this run's (a takeover)."""
        return self._table.update_if(
            job_key(job_id),
            "SET running_run = :run, running_until_ms = :until",
            "attribute_exists(pk) AND (attribute_not_exists(running_run) OR running_until_ms < :now "
            "OR running_run = :run)",
            None,
            expression_values(run=run_id, until=to_ms(until), now=to_ms(now)),
        )

    def extend_running_slot(self, job_id: str, *, run_id: str, until: datetime) -> bool:
        return self._table.update_if(
            job_key(job_id),
            "SET running_until_ms = :until",
            "running_run = :run",
            None,
            expression_values(run=run_id, until=to_ms(until)),
        )

    def claim_running_slot(
        self, job_id: str, *, run_id: str, until: datetime, now: datetime, respect_buffer: bool
    ) -> SlotClaim:
        """take_running_slot that tells, when refused, which run holds the slot (CANCEL_OTHER asks it to stop),
        in the same write (the condition's failure returns the item).

        `respect_buffer` (BUFFER_ONE): a live waiter other than this run has the first turn at a free slot, and
        the waiter that takes the slot leaves the wait slot in the same write (an expired waiter's is dropped)."""
        condition = (
            "attribute_exists(pk) AND (attribute_not_exists(running_run) OR running_until_ms < :now "
            "OR running_run = :run)"
        )
        update = "SET running_run = :run, running_until_ms = :until"
        if respect_buffer:
            condition += " AND (attribute_not_exists(buffered_run) OR buffered_run = :run OR buffered_until_ms < :now)"
            update += " REMOVE buffered_run, buffered_until_ms"
        won, item = self._table.update_if_returning_old(
            job_key(job_id), update, condition, None, expression_values(run=run_id, until=to_ms(until), now=to_ms(now))
        )
        if won:
            return SlotClaim(taken=True)
        holder = item.get("running_run")
        live = holder is not None and int(item.get("running_until_ms", 0)) >= to_ms(now)
        return SlotClaim(
            taken=False, holder=holder if live else None, buffered=item.get("buffered_run"), own=holder == run_id
        )

    def take_buffer_slot(self, job_id: str, *, run_id: str, until: datetime, now: datetime) -> bool:
        """BUFFER_ONE's wait slot: one run at a time waits for the running one. Free when empty, expired (its
        waiter never came back: crashed, or its message was lost), or already this run's (it waits on)."""
        return self._table.update_if(
            job_key(job_id),
            "SET buffered_run = :run, buffered_until_ms = :until",
            "attribute_exists(pk) AND (attribute_not_exists(buffered_run) OR buffered_until_ms < :now "
            "OR buffered_run = :run)",
            None,
            expression_values(run=run_id, until=to_ms(until), now=to_ms(now)),
        )

    def release_running_slot(self, job_id: str, *, run_id: str) -> None:
        self._table.update_if(
            job_key(job_id),
            "REMOVE running_run, running_until_ms",
            "running_run = :run",
            None,
            expression_values(run=run_id),
        )


@dataclass(frozen=True)
class SlotClaim:
    """The running slot's claim (overlap BUFFER_ONE and CANCEL_OTHER): taken, or who holds it and who waits."""

    taken: bool
    holder: str | None = None  # the run in the running slot, when not taken (None: it was free, a waiter's)
    buffered: str | None = None  # the run in the wait slot, as the refused claim saw it
    own: bool = False  # the slot is the claimant's already (refused only for BUFFER_ONE's waiter)
