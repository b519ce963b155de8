"""Job records (pk=JOB#<job_id>, sk=JOB): create, read, replace, advance past a claim, complete, and the job's
one running slot (overlap SKIP).

Each change is a conditional write through `Table`, on the version or state it was decided from.
"""

from __future__ import annotations

from datetime import datetime

from tickwork.clock import iso, to_ms
from tickwork.models import Job, JobState
from tickwork.store.codec import deserialize, expression_values, job_key, job_to_item, shard_of
from tickwork.store.conditional import Table
from tickwork.store.reading import read_job


class JobRecords:
    """The job items of the table."""

    def __init__(self, table: Table, *, shards: int) -> None:
        self._table = table
        self.shards = shards

    def put_new_job(self, job: Job) -> bool:
        """Durable create (the API's acknowledgement waits for this write); False if the id exists."""
        won, _ = self._table.put_if_absent(job_to_item(job, self.shards), return_old=False)
        return won

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=job_key(job_id), ConsistentRead=consistent
        ).get("Item")
        return read_job(deserialize(item)) if item else None

    def replace_job(self, job: Job, *, expected_version: int) -> bool:
        """Write a changed job (pause, resume, cancel, update) if nobody changed it since `expected_version`."""
        won, _ = self._table.put_if(
            job_to_item(job, self.shards),
            "attribute_exists(pk) AND version = :v",
            None,
            expression_values(v=expected_version),
        )
        return won

    def complete_if_settled(self, job_id: str, now: datetime) -> bool:
        """ACTIVE -> COMPLETED once the job's last occurrence has settled, and out of the due index for good.

        Only while it has no pending occurrence (`next_run_at` absent): a PATCH that moved a one-shot's `at`,
        or gave a recurring job more occurrences, set one, and then the job is not complete."""
        return self._table.update_if(
            job_key(job_id),
            "SET #state = :done, updated_at = :now, version = version + :one REMOVE due_shard, due_at",
            "#state = :active AND attribute_not_exists(next_run_at)",
            {"#state": "state"},
            expression_values(done=JobState.COMPLETED.value, active=JobState.ACTIVE.value, now=iso(now), one=1),
        )

    def advance_job(
        self, job_id: str, *, expected_version: int, next_run_at: datetime | None, complete: bool, now: datetime
    ) -> bool:
        """The claim's second write: the job moves past the claimed occurrences, only from `expected_version`.

        A claimer that dies before this leaves the job un-advanced; the next claimer finds the runs existing
        and just completes this step. Nothing is lost and nothing doubled, as with a transaction, at half its
        cost (a transaction bills 2 WRU per item) and with no cross-item lock. `complete` (the last occurrence
        is already settled, as a skip record) also takes the job out of the due index for good."""
        shard = shard_of(job_id, self.shards)
        values = expression_values(v=expected_version, active=JobState.ACTIVE.value, one=1, now=iso(now))
        sets = ["version = version + :one", "updated_at = :now"]
        removes: list[str] = []
        if next_run_at is not None:
            sets += ["next_run_at = :next", "due_at = :due", "due_shard = :shard"]
            values.update(expression_values(next=iso(next_run_at), due=to_ms(next_run_at), shard=shard))
        else:
            removes += ["next_run_at", "due_at", "due_shard"]
        if complete:
            sets.append("#state = :completed")
            values.update(expression_values(completed=JobState.COMPLETED.value))
        return self._table.update_if(
            job_key(job_id),
            "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else ""),
            "version = :v AND #state = :active",
            {"#state": "state"},
            values,
        )

    # ------------------------------------------------------------ the running slot (overlap SKIP)

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

    def release_running_slot(self, job_id: str, *, run_id: str) -> None:
        self._table.update_if(
            job_key(job_id),
            "REMOVE running_run, running_until_ms",
            "running_run = :run",
            None,
            expression_values(run=run_id),
        )
