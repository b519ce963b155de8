"""Run records (pk=JOB#<job_id>, sk=RUN#<scheduled ms, 13 digits>[#m]): the claim's puts, the retry and DLQ
requeue, a job's runs newest first, and the asks a run carries (complete the job; the job changed). The executor's
lease and its end are tickwork.store.leases.

A run's lifecycle is a chain of conditional writes through `Table`: created only if absent (the lock on the
occurrence), leased only if free (at most one live lease), finished only by the lease holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.run import Run
from tickwork.model.states import RunStatus, RunTrigger
from tickwork.store.checkpoints import CHECKPOINT_CONTENT
from tickwork.store.codec import (
    deserialize,
    expression_values,
    json_text,
    run_from_attrs,
    run_key,
    run_to_attrs,
    serialize,
    shard_of,
)
from tickwork.store.conditional import Own, Table
from tickwork.store.ordering import OrderingRecords
from tickwork.store.reading import read_run


@dataclass(frozen=True)
class ClaimedRuns:
    created: list[Run]  # the runs this claimer created, and so sends
    existing: dict[str, dict[str, Any]]  # run id -> the record another claimer had already created
    in_flight_elsewhere: bool  # another claimer is on this job right now: leave it the job


class RunRecords:
    """The run items of the table. Finished runs get `expires_at`, `retention` after they end (TTL)."""

    def __init__(self, table: Table, *, shards: int, retention: timedelta) -> None:
        self._table = table
        self.shards = shards
        self.retention = retention
        self.ordering = OrderingRecords(table)

    def _enqueue_ordered(self, run: Run, now: datetime) -> None:
        """A run of an ordering key takes its place in the key's queue before its record exists, so that no run
        of the key later in the queue can start before it (tickwork.executor.ordering)."""
        if run.ordering is not None and run.status is RunStatus.QUEUED:
            self.ordering.enqueue(run, now=now)

    def get_run(self, run_id: str, *, consistent: bool = True) -> Run | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=run_key(run_id), ConsistentRead=consistent
        ).get("Item")
        return read_run(deserialize(item)) if item else None

    def put_claimed_runs(
        self,
        runs: Sequence[Run],
        *,
        now: datetime,
        redispatch_after: timedelta,
        in_flight_for: timedelta = timedelta(seconds=30),
    ) -> ClaimedRuns:
        """The claim's first write (promise 2): each run record is created only if it does not exist. This is
        the lock on the occurrence: whoever creates a run sends it; a run found existing was claimed by someone
        else (who sends it, or, had it died, the orphan re-send does). The existing records come back, so the
        claimer can advance the job past exactly what they cover (a capped misfire record may cover less)."""
        shard = None
        created: list[Run] = []
        existing: dict[str, dict[str, Any]] = {}
        for index, run in enumerate(runs):
            shard = shard or shard_of(run.job_id, self.shards)
            self._enqueue_ordered(run, now)
            attrs = run_to_attrs(run)
            attrs["claimed_at_ms"] = to_ms(now)
            if run.status is RunStatus.QUEUED:
                # In the due index until its outcome: if no executor has leased it by then, the tick re-sends it.
                attrs["due_shard"] = shard
                attrs["due_at"] = to_ms(run.scheduled_for + redispatch_after)
            else:
                attrs["expires_at"] = self._expiry(now)
            won, old = self._table.put_if_absent(serialize(attrs))
            if won:
                created.append(run)
                continue
            claimed_ms = int(old.get("claimed_at_ms", 0))
            if index == 0 and to_ms(now) - claimed_ms < in_flight_for.total_seconds() * 1000:
                # Another claimer is on this job right now: leave it the rest (and the advance).
                return ClaimedRuns(created=[], existing={run.id: old}, in_flight_elsewhere=True)
            existing[run.id] = old  # its claimer died part-way: carry the claim through
        return ClaimedRuns(created=created, existing=existing, in_flight_elsewhere=False)

    def put_queued_run(
        self, run: Run, *, redispatch_at: datetime, audit: dict[str, Any] | None = None, own: Own | None = None
    ) -> bool:
        """A run outside the schedule (trigger): created QUEUED, in the due index until its outcome. `audit`: the
        trigger's audit record's item, in the same transaction. `own`: the put's token (store/conditional)."""
        self._enqueue_ordered(run, run.enqueued_at or run.scheduled_for)
        attrs = run_to_attrs(run)
        attrs["due_shard"] = shard_of(run.job_id, self.shards)
        attrs["due_at"] = to_ms(redispatch_at)
        won, _ = self._table.put_if_absent(serialize(attrs), return_old=False, audit=audit, own=own)
        return won

    def put_failed_run(self, run: Run, *, now: datetime) -> bool:
        """A run created FAILED, never run (a workflow step whose payload could not be made): ended, in the
        tenant's DLQ listing, expiring as any ended run. False if it exists."""
        attrs = run_to_attrs(run)
        attrs.update(
            expires_at=self._expiry(now), tenant_key=f"T#{run.tenant}#FAILED", tenant_sort=f"{to_ms(now):013d}#{run.id}"
        )
        won, _ = self._table.put_if_absent(serialize(attrs), return_old=False)
        return won

    def get_runs(self, run_ids: Sequence[str]) -> dict[str, Run]:
        """The runs of these ids that exist, by id (BatchGetItem, consistent)."""
        items = self._table.batch_get([run_key(run_id) for run_id in dict.fromkeys(run_ids)])
        runs = [read_run(attrs) for attrs in items]
        return {run.id: run for run in runs}

    def requeue_failed_run(
        self,
        run: Run,
        *,
        now: datetime,
        redispatch_at: datetime,
        from_checkpoint: bool = True,
        edited_payload: dict[str, Any] | None = None,
        edited_by: str | None = None,
        audit: dict[str, Any] | None = None,
    ) -> bool:
        """FAILED -> QUEUED with attempts starting again (retry and DLQ redrive): a new execution, so its start,
        lateness, duration and handler time (`segments`, `yielded_ms`: a fresh max_run_seconds) are measured afresh;
        `requeues` counts how often this happened, and its attempt history keeps the earlier executions' records.
        It resumes from its last checkpoint (tickwork.store.checkpoints) unless `from_checkpoint` is False: then
        that is removed. `edited_payload`: the run's payload from now on (the run's own, over its job's), with
        when and by whom. `audit`: the retry's (or redrive's) audit record's item, in the same transaction."""
        starting_over = "".join(f", {name}" for name in CHECKPOINT_CONTENT) if not from_checkpoint else ""
        edit = ""
        values: dict[str, Any] = {}
        if edited_payload is not None:
            edit = ", payload_json = :payload, payload_edited_at = :now"
            values["payload"] = json_text(edited_payload)
            if edited_by is not None:
                edit += ", payload_edited_by = :by"
                values["by"] = edited_by
        return self._table.update_if(
            run_key(run.id),
            "SET #status = :queued, attempts = :zero, enqueued_at = :now, due_shard = :shard, due_at = :due, "
            "requeues = if_not_exists(requeues, :zero) + :one" + edit + " "
            "REMOVE #error, finished_at, expires_at, tenant_key, tenant_sort, lease_owner, lease_until, "
            "lease_until_ms, started_at, lateness_ms, duration_ms, not_before, not_before_ms, cancel_requested, "
            "#segments, yielded_ms, dismissed_at, dismissed_by" + starting_over,
            "#status = :failed",
            {"#status": "status", "#error": "error", "#segments": "segments"},
            expression_values(
                queued=RunStatus.QUEUED.value,
                failed=RunStatus.FAILED.value,
                zero=0,
                one=1,
                now=iso(now),
                shard=shard_of(run.job_id, self.shards),
                due=to_ms(redispatch_at),
                **values,
            ),
            audit=audit,
        )

    def dismiss_failed_run(
        self, run_id: str, *, now: datetime, by: str | None, audit: dict[str, Any] | None = None
    ) -> bool:
        """A FAILED run leaves the DLQ listing (its tenant-index keys), its record kept: when, and by whom. False if
        it is not a FAILED run in the DLQ (not FAILED, or dismissed already). `audit`: in the same transaction."""
        fields = "dismissed_at = :now" + (", dismissed_by = :by" if by is not None else "")
        return self._table.update_if(
            run_key(run_id),
            f"SET {fields} REMOVE tenant_key, tenant_sort",
            "#status = :failed AND attribute_exists(tenant_key)",
            {"#status": "status"},
            expression_values(failed=RunStatus.FAILED.value, now=iso(now), **({"by": by} if by is not None else {})),
            audit=audit,
        )

    def runs_of_job(
        self,
        job_id: str,
        *,
        limit: int = 50,
        start_key: dict[str, Any] | None = None,
        status: RunStatus | None = None,
    ) -> tuple[list[Run], dict[str, Any] | None]:
        """A job's runs, newest first, one page."""
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :run)",
            "ExpressionAttributeValues": expression_values(pk=f"JOB#{job_id}", run="RUN#"),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if status is not None:
            kwargs["FilterExpression"] = "#status = :status"
            kwargs["ExpressionAttributeNames"] = {"#status": "status"}
            kwargs["ExpressionAttributeValues"].update(expression_values(status=status.value))
        if start_key:
            kwargs["ExclusiveStartKey"] = start_key
        page = self._table.client.query(**kwargs)
        return [run_from_attrs(deserialize(i)) for i in page.get("Items", [])], page.get("LastEvaluatedKey")

    def open_occurrence_runs(self, job_id: str) -> list[str]:
        """The job's runs of its occurrences (scheduled or backfilled, not manual) that have not settled: one
        consistent Query of the job's runs, paged (its cost grows with the runs the job keeps, so it is asked
        only of a job with no next occurrence: tickwork.progress.job_completion)."""
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :run)",
            "FilterExpression": "NOT #status IN (:succeeded, :failed, :skipped) AND #trigger <> :manual",
            "ProjectionExpression": "run_id",
            "ExpressionAttributeNames": {"#status": "status", "#trigger": "trigger"},
            "ExpressionAttributeValues": expression_values(
                pk=f"JOB#{job_id}", run="RUN#", manual=RunTrigger.MANUAL.value, **_TERMINAL_VALUES
            ),
            "ConsistentRead": True,
        }
        found: list[str] = []
        while True:
            page = self._table.client.query(**kwargs)
            found += [deserialize(item)["run_id"] for item in page.get("Items", [])]
            if not page.get("LastEvaluatedKey"):
                return found
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def ask_to_complete_job(self, run_id: str) -> bool:
        """Ask an unsettled run to attempt its job's completion when it settles (its terminal finish_run tells
        it). False if it has settled already (or is gone): then it will not."""
        return self._table.update_if(
            run_key(run_id),
            f"SET {COMPLETES_JOB} = :yes",
            "attribute_exists(pk) AND NOT #status IN (:succeeded, :failed, :skipped)",
            {"#status": "status"},
            expression_values(yes=True, **_TERMINAL_VALUES),
        )

    def mark_runs_job_changed(self, job_id: str, *, now: datetime, since: datetime) -> int:
        """Tell the job's unsettled runs of occurrences from `since` on that their job changed (`job_changed_at`):
        their messages' copies of the job are out of date, and their executors read the job (tickwork.model.run_spec).
        One consistent Query of that key range (a few minutes of the job's runs), then one conditional write per
        unsettled run; a run that settles meanwhile is left alone. How many were marked."""
        pending: list[str] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table.name,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :lo AND :hi",
            "FilterExpression": "NOT #status IN (:succeeded, :failed, :skipped)",
            "ProjectionExpression": "run_id",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": expression_values(
                pk=f"JOB#{job_id}", lo=f"RUN#{to_ms(since):013d}", hi="RUN#~", **_TERMINAL_VALUES
            ),
            "ConsistentRead": True,
        }
        while True:
            page = self._table.client.query(**kwargs)
            pending += [deserialize(item)["run_id"] for item in page.get("Items", [])]
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

        def mark(run_id: str) -> bool:
            return self._table.update_if(
                run_key(run_id),
                "SET job_changed_at = :now",
                "attribute_exists(pk) AND NOT #status IN (:succeeded, :failed, :skipped)",
                {"#status": "status"},
                expression_values(now=iso(now), **_TERMINAL_VALUES),
            )

        if len(pending) <= 1:
            return sum(map(mark, pending))
        # A 1-second rate job has a couple of minutes of claimed runs: written side by side, not one by one.
        with ThreadPoolExecutor(max_workers=min(8, len(pending))) as pool:
            return sum(pool.map(mark, pending))

    def _expiry(self, now: datetime) -> int:
        return expires_at(now, self.retention)


# On an unsettled run: when it settles, it attempts its job's completion (tickwork.progress.job_completion).
COMPLETES_JOB = "completes_job"

_TERMINAL_VALUES = {
    "succeeded": RunStatus.SUCCEEDED.value,
    "failed": RunStatus.FAILED.value,
    "skipped": RunStatus.SKIPPED.value,
}


def expires_at(now: datetime, retention: timedelta) -> int:
    """An ended record's TTL (`expires_at`): `retention` after it ended."""
    return int((now + retention).timestamp())
