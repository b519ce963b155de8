"""Job records (pk=JOB#<job_id>, sk=JOB): create, read, replace, advance past a claim, complete, and the job's
one running slot (overlap SKIP).

Each change is a conditional write through `Table`, on the version or state it was decided from.

A job counted in its tenant's `active_jobs` (tickwork.store.tenants) carries `counted_for`. The writes that take
a job out of the active set (completion, cancel) remove it in the same conditional write and, when that write
won, decrement the counter: exactly once per counted job, and never for a job that was not counted.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.errors import UnreadableItem
from tickwork.model.job import Job
from tickwork.model.policies import BreakerState
from tickwork.model.states import JobState
from tickwork.store.codec import deserialize, expression_values, job_key, job_to_item, shard_of
from tickwork.store.conditional import Table, Update
from tickwork.store.reading import read_job
from tickwork.store.tenants import ACTIVE_STATES, COUNTED_FOR, TenantRecords

# How many runs of its occurrences the job's claims and backfills have queued, counted by the claim's advance (the
# write it makes anyway) and before a backfill's puts. 1 at the last occurrence's claim: that run is the job's only
# one, and its settling completes the job with no look at its other runs, by a write that holds only while the
# count is still 1 (tickwork.progress.job_completion). Above the truth at times (a backfill counts occurrences whose
# runs exist already), never below.
OCCURRENCE_RUNS = "occurrence_runs"

# What a job item holds that its model decides, and so what a replace removes when the model leaves it out
# (None fields are not stored). Anything else on the item (the running slot, the counted mark) a replace keeps.
JOB_ATTRIBUTES = frozenset((set(Job.model_fields) - {"id", "payload"}) | {"due_shard", "due_at"})


def replace_scheduled(
    table: Table, tenants: TenantRecords, item: dict[str, Any], *, expected_version: int, attributes: Set[str]
) -> bool:
    """Write a changed job or workflow item (`item`, as the codec builds it) if its version is still
    `expected_version`.

    An UpdateItem that sets every attribute of `item` and removes the model's `attributes` it lacks, rather
    than a PutItem: a put would drop what the model does not hold (the counted mark, the running slot). When the
    change leaves the active set (CANCELLED), the counted mark goes in the same write, and the counter is
    decremented only if this write won. Same write cost as the put (billed on the larger item)."""
    update = Update(expected=expected_version)
    update.conditions.append("attribute_exists(pk) AND version = :expected")
    for name, value in sorted(item.items()):
        if name not in ("pk", "sk"):
            update.set(update.name(name), value, encoded=True)
    gone = sorted(set(attributes) - item.keys())
    leaves = item.get("state", {}).get("S") not in ACTIVE_STATES
    if leaves:
        gone.append(COUNTED_FOR)
    update.removes += [update.name(name) for name in gone]
    won, old = table.update_if_returning_old(
        {"pk": item["pk"], "sk": item["sk"]},
        update.expression(),
        update.condition(),
        update.names,
        update.attribute_values(),
    )
    if won and leaves:
        tenants.release_after_transition(old)
    return won


class JobRecords:
    """The job items of the table."""

    def __init__(self, table: Table, *, shards: int) -> None:
        self._table = table
        self.shards = shards
        self._tenants = TenantRecords(table)

    def put_new_job(self, job: Job, *, counted: bool = False) -> bool:
        """Durable create (the API's acknowledgement waits for this write); False if the id exists. `counted`:
        its tenant's `active_jobs` counts it (a reservation was made for it)."""
        won, _ = self._table.put_if_absent(
            counted_item(job_to_item(job, self.shards), job.tenant, counted), return_old=False
        )
        return won

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=job_key(job_id), ConsistentRead=consistent
        ).get("Item")
        return read_job(deserialize(item)) if item else None

    def replace_job(self, job: Job, *, expected_version: int) -> bool:
        """Write a changed job (pause, resume, cancel, update) if nobody changed it since `expected_version`."""
        return replace_scheduled(
            self._table,
            self._tenants,
            job_to_item(job, self.shards),
            expected_version=expected_version,
            attributes=JOB_ATTRIBUTES,
        )

    def complete_if_settled(self, job_id: str, now: datetime, *, alone: bool = False) -> bool:
        """ACTIVE -> COMPLETED, and out of the due index for good, once every run of the job's occurrences has
        settled (its caller saw that: tickwork.progress.job_completion).

        Only while it has no pending occurrence (`next_run_at` absent): a PATCH that moved a one-shot's `at`,
        or gave a recurring job more occurrences, set one, and then the job is not complete. `alone`: the caller
        settled what was, when claimed, the job's only run of an occurrence, and looked at no other; so only while
        that still holds (OCCURRENCE_RUNS is 1: no backfill has counted more since). A counted job leaves its
        tenant's `active_jobs` here (the item as it was tells whether it was counted, no read)."""
        condition = "#state = :active AND attribute_not_exists(next_run_at)"
        if alone:
            condition += f" AND {OCCURRENCE_RUNS} = :one"
        won, old = self._table.update_if_returning_old(
            job_key(job_id),
            f"SET #state = :done, updated_at = :now, version = version + :one REMOVE due_shard, due_at, {COUNTED_FOR}",
            condition,
            {"#state": "state"},
            expression_values(done=JobState.COMPLETED.value, active=JobState.ACTIVE.value, now=iso(now), one=1),
        )
        if won:
            self._tenants.release_after_transition(old)
        return won

    def advance_job(
        self,
        job_id: str,
        *,
        expected_version: int,
        next_run_at: datetime | None,
        complete: bool,
        now: datetime,
        probe_at: datetime | None = None,
        queued: int = 0,
    ) -> Advanced | None:
        """The claim's second write: the job moves past the claimed occurrences, only from `expected_version`.
        None if it lost; else the job as the write left it (ReturnValues: no read, no capacity billed), which
        the claim copies into its runs' messages (tickwork.model.run_spec).

        A claimer that dies before this leaves the job un-advanced; the next claimer finds the runs existing
        and just completes this step. Nothing is lost and nothing doubled, as with a transaction, at half its
        cost (a transaction bills 2 WRU per item) and with no cross-item lock. `complete` (the last occurrence
        is already settled, as a skip record) also takes the job out of the due index for good. A SUSPENDED job
        is claimed too (its skips, its probe); `probe_at` marks its breaker half-open, in the same write.
        `queued`: the runs the claim queued, added to the job's count of its occurrences' runs in the same write
        (OCCURRENCE_RUNS)."""
        shard = shard_of(job_id, self.shards)
        update = Update(
            {"#state": "state"},
            v=expected_version,
            active=JobState.ACTIVE.value,
            suspended=JobState.SUSPENDED.value,
            one=1,
        )
        update.conditions.append("version = :v AND #state IN (:active, :suspended)")
        update.sets.append("version = version + :one")
        update.set("updated_at", iso(now))
        if probe_at is not None:
            update.set("breaker.probe_at", iso(probe_at))
        if queued:
            counted = f"if_not_exists({OCCURRENCE_RUNS}, {update.value(0)}) + {update.value(queued)}"
            update.sets.append(f"{OCCURRENCE_RUNS} = {counted}")
        if next_run_at is not None:
            update.set("next_run_at", iso(next_run_at))
            update.set("due_at", to_ms(next_run_at))
            update.set("due_shard", shard)
        else:
            update.removes += ["next_run_at", "due_at", "due_shard"]
        if complete:
            update.set("#state", JobState.COMPLETED.value)
            update.removes.append(COUNTED_FOR)
        args = (update.expression(), update.condition(), update.names, update.attribute_values())
        if not complete:  # the claim's common case
            won, new = self._table.update_if_returning_new(job_key(job_id), *args)
            return Advanced(_job_of(new), int(new.get(OCCURRENCE_RUNS, 0))) if won else None
        won, old = self._table.update_if_returning_old(job_key(job_id), *args)
        if not won:
            return None
        self._tenants.release_after_transition(old)
        return Advanced(None)  # complete: nothing of it is sent

    def count_backfilled(self, job_id: str, runs: int) -> None:
        """A backfill is about to queue up to `runs` runs of the job's occurrences: counted first (OCCURRENCE_RUNS),
        so that a claim's advance after this sees them. A count above the truth only costs a completion its look
        at the job's runs."""
        self._table.update_if(
            job_key(job_id),
            f"SET {OCCURRENCE_RUNS} = if_not_exists({OCCURRENCE_RUNS}, :zero) + :runs",
            "attribute_exists(pk)",
            None,
            expression_values(zero=0, runs=runs),
        )

    # ------------------------------------------------------------ the circuit breaker (tickwork.executor.breaker)

    def count_failure(self, job_id: str) -> int:
        """One more consecutive FAILED run; the count now (0: the job is gone). No version change: a claim or
        a PATCH racing it still wins."""
        won, item = self._table.update_if_returning_new(
            job_key(job_id),
            "SET consecutive_failures = if_not_exists(consecutive_failures, :zero) + :one",
            "attribute_exists(pk)",
            None,
            expression_values(zero=0, one=1),
        )
        return int(item.get("consecutive_failures", 0)) if won else 0

    def reset_failures(self, job_id: str) -> None:
        """A SUCCEEDED run ends the stretch of failures (a no-op write if another run reset it already)."""
        self._table.update_if(
            job_key(job_id),
            "SET consecutive_failures = :zero",
            "consecutive_failures > :zero",
            None,
            expression_values(zero=0),
        )

    def open_breaker(self, job_id: str, *, threshold: int, breaker: BreakerState, reason: str, now: datetime) -> bool:
        """ACTIVE -> SUSPENDED, only while the count still reaches `threshold` (a success may have reset it).
        The job stays in the due index (its claims record the skips and queue the probe)."""
        return self._table.update_if(
            job_key(job_id),
            "SET #state = :suspended, suspended_at = :now, suspended_reason = :reason, breaker = :breaker, "
            "updated_at = :now, version = version + :one",
            "#state = :active AND consecutive_failures >= :threshold",
            {"#state": "state"},
            expression_values(
                suspended=JobState.SUSPENDED.value,
                active=JobState.ACTIVE.value,
                now=iso(now),
                reason=reason,
                breaker=breaker.model_dump(mode="json"),
                one=1,
                threshold=threshold,
            ),
        )

    def elect_probe(self, job_id: str, *, probe_at: datetime, breaker: BreakerState, now: datetime) -> bool:
        """Half-open from the executor: a run claimed before the breaker opened, arriving once the cooldown has
        ended, becomes the probe, only while the breaker is still `breaker` with no probe named. The version
        moves, so a claim that read the job before this cannot name a second probe."""
        return self._table.update_if(
            job_key(job_id),
            "SET breaker.probe_at = :probe, updated_at = :now, version = version + :one",
            "#state = :suspended AND breaker.opens_until = :opens "
            "AND (attribute_not_exists(breaker.probe_at) OR attribute_type(breaker.probe_at, :null))",
            {"#state": "state"},
            expression_values(
                suspended=JobState.SUSPENDED.value,
                probe=iso(probe_at),
                opens=breaker.model_dump(mode="json")["opens_until"],
                now=iso(now),
                one=1,
                null="NULL",
            ),
        )

    def reopen_breaker(self, job_id: str, *, probe_at: datetime, breaker: BreakerState, now: datetime) -> bool:
        """A probe that did not succeed: SUSPENDED again with `breaker` (a new cooldown, no probe)."""
        return self._probe_settled(
            job_id,
            probe_at,
            now,
            "SET breaker = :breaker, consecutive_failures = :failures",
            breaker=breaker.model_dump(mode="json"),
            failures=breaker.consecutive_failures,
        )

    def close_breaker(self, job_id: str, *, probe_at: datetime, now: datetime) -> bool:
        """The probe succeeded: SUSPENDED -> ACTIVE, the count and the breaker's state cleared."""
        return self._probe_settled(
            job_id,
            probe_at,
            now,
            "SET #state = :active, consecutive_failures = :zero",
            "REMOVE breaker, suspended_at, suspended_reason",
            active=JobState.ACTIVE.value,
            zero=0,
        )

    def _probe_settled(
        self, job_id: str, probe_at: datetime, now: datetime, sets: str, removes: str = "", **values: Any
    ) -> bool:
        """A change of a SUSPENDED job's breaker, only while `probe_at` is still its probe (once per probe)."""
        return self._table.update_if(
            job_key(job_id),
            f"{sets}, updated_at = :now, version = version + :one {removes}",
            "#state = :suspended AND breaker.probe_at = :probe",
            {"#state": "state"},
            expression_values(suspended=JobState.SUSPENDED.value, probe=iso(probe_at), now=iso(now), one=1, **values),
        )

    # ------------------------------------------------------------ the running slot (overlap other than ALLOW)

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
        return SlotClaim(taken=False, holder=holder if live else None, buffered=item.get("buffered_run"))

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


@dataclass(frozen=True)
class Advanced:
    """A claim's advance that won: the job as it left it (None for a workflow, or a job that could not be read),
    and its count of its occurrences' runs (OCCURRENCE_RUNS) as it left it."""

    job: Job | None
    occurrence_runs: int = 0


def _job_of(attrs: dict[str, Any]) -> Job | None:
    if attrs.get("kind", "JOB") != "JOB":
        return None
    try:
        return read_job(attrs)
    except UnreadableItem:  # logged and counted by read_job; its runs' executors read it themselves
        return None


def counted_item(item: dict[str, Any], tenant: str, counted: bool) -> dict[str, Any]:
    """A new job or workflow item, marked as counted in its tenant's `active_jobs` when it is."""
    return {**item, COUNTED_FOR: {"S": tenant}} if counted else item
