"""Job records (pk=JOB#<job_id>, sk=JOB): create, read, replace, advance past a claim, and complete; the job's
circuit breaker and its running slot are written by their own classes (tickwork.store.breakers,
tickwork.store.running_slots).

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
from tickwork.model.forecasts import JobForecasts
from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.store.codec import (
    FORECASTS,
    VARIANTS_JSON,
    deserialize,
    expression_values,
    job_key,
    job_to_item,
    shard_of,
)
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
JOB_ATTRIBUTES = frozenset(
    (set(Job.model_fields) - {"id", "payload", "forecast"}) | {"due_shard", "due_at", VARIANTS_JSON}
)


def replace_scheduled(
    table: Table,
    tenants: TenantRecords,
    item: dict[str, Any],
    *,
    expected_version: int,
    attributes: Set[str],
    audit: dict[str, Any] | None = None,
) -> bool:
    """Write a changed job or workflow item (`item`, as the codec builds it) if its version is still
    `expected_version`; with `audit`, its audit record in the same transaction.

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
    key = {"pk": item["pk"], "sk": item["sk"]}
    if audit is not None:
        return _replace_audited(table, tenants, key, update, leaves=leaves, audit=audit)
    won, old = table.update_if_returning_old(
        key,
        update.expression(),
        update.condition(),
        update.names,
        update.attribute_values(),
    )
    if won and leaves:
        tenants.release_after_transition(old)
    return won


def _replace_audited(
    table: Table, tenants: TenantRecords, key: dict[str, Any], update: Update, *, leaves: bool, audit: dict[str, Any]
) -> bool:
    """The replace and its audit record in one transaction. A transaction returns no old item, so a change that
    leaves the active set says in its condition whether the item was counted: first that it was not; then, if the
    item its condition saw was at the expected version and counted, that it was (and the counter is released)."""
    mark = update.name(COUNTED_FOR) if leaves else ""  # an unused name placeholder is refused

    def attempt(counted: str | None) -> tuple[bool, dict[str, Any]]:
        condition = update.condition() + (f" AND {counted}({mark})" if counted else "")
        return table.update_if_audited(
            key, update.expression(), condition, update.names, update.attribute_values(), audit
        )

    won, seen = attempt("attribute_not_exists" if leaves else None)
    if won or not leaves or seen.get("version") != update.values["expected"] or COUNTED_FOR not in seen:
        return won
    won, _ = attempt("attribute_exists")
    if won:
        tenants.release_after_transition(seen)
    return won


class JobRecords:
    """The job items of the table."""

    def __init__(self, table: Table, *, shards: int) -> None:
        self._table = table
        self.shards = shards
        self._tenants = TenantRecords(table)

    def put_new_job(self, job: Job, *, counted: bool = False, audit: dict[str, Any] | None = None) -> bool:
        """Durable create (the API's acknowledgement waits for this write); False if the id exists. `counted`:
        its tenant's `active_jobs` counts it (a reservation was made for it). `audit`: its audit record's item,
        written in the same transaction."""
        won, _ = self._table.put_if_absent(
            counted_item(job_to_item(job, self.shards), job.tenant, counted), return_old=False, audit=audit
        )
        return won

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=job_key(job_id), ConsistentRead=consistent
        ).get("Item")
        return read_job(deserialize(item)) if item else None

    def replace_job(
        self,
        job: Job,
        *,
        expected_version: int,
        audit: dict[str, Any] | None = None,
        forget: Set[str] = frozenset(),
    ) -> bool:
        """Write a changed job (pause, resume, cancel, update) if nobody changed it since `expected_version`;
        `audit`: its audit record's item, in the same transaction; `forget`: attributes beside the job's fields
        the change makes stale (its variants' tallies, tickwork.store.variants), removed in the same write."""
        return replace_scheduled(
            self._table,
            self._tenants,
            job_to_item(job, self.shards),
            expected_version=expected_version,
            attributes=JOB_ATTRIBUTES | forget,
            audit=audit,
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
        forecasts: JobForecasts | None = None,
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
        (OCCURRENCE_RUNS). `forecasts`: the job's forecasts with its runs ended since the last claim folded in
        (tickwork.model.forecasts), in the same write: no write more for them, on the version they were read at."""
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
        if forecasts is not None:
            update.set(FORECASTS, forecasts.model_dump_json(exclude_defaults=True))
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

    def count_backfilled(self, job_id: str, runs: int, *, audit: dict[str, Any] | None = None) -> bool:
        """A backfill is about to queue up to `runs` runs of the job's occurrences: counted first (OCCURRENCE_RUNS),
        so that a claim's advance after this sees them. A count above the truth only costs a completion its look
        at the job's runs. `audit`: the backfill's audit record's item, in the same transaction (its first write).
        False: not counted, nor recorded (the job is gone, or, in RegionMode strong, held by another audited change
        not yet confirmed): the backfill must queue nothing."""
        return self._table.update_if(
            job_key(job_id),
            f"SET {OCCURRENCE_RUNS} = if_not_exists({OCCURRENCE_RUNS}, :zero) + :runs",
            "attribute_exists(pk)",
            None,
            expression_values(zero=0, runs=runs),
            audit=audit,
        )


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
