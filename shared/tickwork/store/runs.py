"""Run records (pk=JOB#<job_id>, sk=RUN#<scheduled ms, 13 digits>[#m]): the claim's puts, the executor's
lease and its end, the retry and DLQ requeue, and a job's runs newest first.

A run's lifecycle is a chain of conditional writes through `Table`: created only if absent (the lock on the
occurrence), leased only if free (at most one live lease), finished only by the lease holder.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.ids import parse_run_id
from tickwork.model.run import AttemptRecord, Run, RunError, RunResult
from tickwork.model.states import DeferReason, RunStatus, RunTrigger, SkipReason
from tickwork.store.codec import (
    deserialize,
    expression_values,
    run_from_attrs,
    run_key,
    run_to_attrs,
    serialize,
    shard_of,
)
from tickwork.store.conditional import Table, Update
from tickwork.store.reading import read_run


@dataclass(frozen=True)
class ClaimedRuns:
    created: list[Run]  # the runs this claimer created, and so sends
    existing: dict[str, dict[str, Any]]  # run id -> the record another claimer had already created
    in_flight_elsewhere: bool  # another claimer is on this job right now: leave it the job


class LeaseOutcome(StrEnum):
    LEASED = "LEASED"
    TERMINAL = "TERMINAL"  # already finished: a duplicate delivery
    BUSY = "BUSY"  # another executor holds a live lease
    EARLY = "EARLY"  # retrying, but its next attempt may not start yet (run.not_before)
    MISSING = "MISSING"  # no such run


@dataclass(frozen=True)
class Lease:
    outcome: LeaseOutcome
    run: Run | None
    previous_status: RunStatus | None = None
    lease_until: datetime | None = None


@dataclass(frozen=True)
class Finished:
    """finish_run's answer: `recorded`, the write won (this executor held the lease); `completes_job`, the run
    had been asked to attempt its job's completion once it settles (`ask_to_complete_job`), and now has."""

    recorded: bool
    completes_job: bool = False


@dataclass(frozen=True)
class LeaseExtension:
    held: bool  # False: the lease is another executor's now
    cancel_requested: bool  # the run was asked to stop (its workflow run was cancelled)


class RunRecords:
    """The run items of the table. Finished runs get `expires_at`, `retention` after they end (TTL)."""

    def __init__(self, table: Table, *, shards: int, retention: timedelta) -> None:
        self._table = table
        self.shards = shards
        self.retention = retention

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

    def put_queued_run(self, run: Run, *, redispatch_at: datetime) -> bool:
        """A run outside the schedule (trigger): created QUEUED, in the due index until its outcome."""
        attrs = run_to_attrs(run)
        attrs["due_shard"] = shard_of(run.job_id, self.shards)
        attrs["due_at"] = to_ms(redispatch_at)
        won, _ = self._table.put_if_absent(serialize(attrs), return_old=False)
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

    def request_cancel(self, run_id: str) -> bool:
        """Ask a RUNNING run to stop: its executor's next heartbeat sees it (cooperative cancellation)."""
        return self._table.update_if(
            run_key(run_id),
            "SET cancel_requested = :yes",
            "#status = :running",
            {"#status": "status"},
            expression_values(yes=True, running=RunStatus.RUNNING.value),
        )

    def cancel_requested(self, run_id: str) -> bool:
        """Whether the run was asked to stop (`request_cancel`): a read of that one attribute, for a run that must
        stop sooner than its next lease extension would tell it (overlap CANCEL_OTHER)."""
        item = self._table.client.get_item(
            TableName=self._table.name,
            Key=run_key(run_id),
            ConsistentRead=True,
            ProjectionExpression="cancel_requested",
        ).get("Item")
        return bool(item and deserialize(item).get("cancel_requested"))

    def lease_run(self, run_id: str, *, owner: str, now: datetime, lease_for: timedelta) -> Lease:
        """Take the run: QUEUED or RETRYING whose wait has passed, or RUNNING whose lease expired, becomes
        RUNNING with attempts+1. The condition is promise 4's lock (at most one live lease per run) and keeps
        the retry backoff (no duplicate message starts an attempt before `not_before`)."""
        parsed = parse_run_id(run_id)
        if parsed is None:
            return Lease(LeaseOutcome.MISSING, None)
        lease_until = now + lease_for
        lateness = to_ms(now) - to_ms(parsed[1])
        won, old_attrs = self._table.update_if_returning_old(
            run_key(run_id),
            "SET #status = :running, attempts = if_not_exists(attempts, :zero) + :one, "
            "lease_owner = :owner, lease_until = :lu, lease_until_ms = :lu_ms, "
            "started_at = if_not_exists(started_at, :now), lateness_ms = if_not_exists(lateness_ms, :late), "
            # The attempt's record, opened: its number is the count this update makes (see Run.attempt_history).
            "attempt_history = list_append(if_not_exists(attempt_history, :no_history), :opened) "
            # The run keeps its due-index entry while leased: the safety net were the lease to lapse with its
            # message stranded (see tickwork.tick.resender.Resender); the outcome removes it.
            "REMOVE not_before, not_before_ms",
            # A QUEUED run has a not_before only when a limit deferred it (see defer_run).
            "attribute_exists(pk) AND ((#status = :queued "
            "AND (attribute_not_exists(not_before_ms) OR not_before_ms <= :now_ms)) "
            "OR (#status = :retrying AND (attribute_not_exists(not_before_ms) OR not_before_ms <= :now_ms)) "
            "OR (#status = :running AND lease_until_ms < :now_ms))",
            {"#status": "status"},
            expression_values(
                running=RunStatus.RUNNING.value,
                queued=RunStatus.QUEUED.value,
                retrying=RunStatus.RETRYING.value,
                zero=0,
                one=1,
                owner=owner,
                lu=iso(lease_until),
                lu_ms=to_ms(lease_until),
                now=iso(now),
                now_ms=to_ms(now),
                late=lateness,
                no_history=[],
                opened=[{"started_at": iso(now)}],
            ),
        )
        if not won:
            if not old_attrs:
                return Lease(LeaseOutcome.MISSING, None)
            current = run_from_attrs(old_attrs)
            if current.status.terminal:
                return Lease(LeaseOutcome.TERMINAL, current, current.status)
            if current.status is RunStatus.RETRYING or (
                current.status is RunStatus.QUEUED and current.not_before is not None
            ):
                return Lease(LeaseOutcome.EARLY, current, current.status)
            return Lease(LeaseOutcome.BUSY, current, current.status)
        old = run_from_attrs(old_attrs)
        run = old.model_copy(
            update={
                "status": RunStatus.RUNNING,
                "attempts": old.attempts + 1,
                "started_at": old.started_at or now,
                "lateness_ms": old.lateness_ms if old.lateness_ms is not None else lateness,
                "lease_until": lease_until,
                "not_before": None,
            }
        )
        return Lease(LeaseOutcome.LEASED, run, old.status, lease_until)

    def extend_lease(self, run_id: str, *, owner: str, lease_until: datetime) -> LeaseExtension:
        """The heartbeat's write: the lease runs on, while this owner holds it. The item comes back with it, so
        the heartbeat learns at no extra read whether the run was asked to stop (`request_cancel`)."""
        won, attrs = self._table.update_if_returning_new(
            run_key(run_id),
            "SET lease_until = :lu, lease_until_ms = :lu_ms",
            "lease_owner = :owner AND #status = :running",
            {"#status": "status"},
            expression_values(
                lu=iso(lease_until), lu_ms=to_ms(lease_until), owner=owner, running=RunStatus.RUNNING.value
            ),
        )
        return LeaseExtension(held=won, cancel_requested=won and bool(attrs.get("cancel_requested")))

    def finish_run(
        self,
        run: Run,
        *,
        owner: str,
        status: RunStatus,
        now: datetime,
        result: RunResult | None = None,
        error: RunError | None = None,
        skip_reason: SkipReason | None = None,
        duration_ms: int | None = None,
        not_before: datetime | None = None,
        resend_at: datetime | None = None,
        history: Sequence[AttemptRecord] | None = None,
        never_started: bool = False,
    ) -> Finished:
        """Leave RUNNING: SUCCEEDED, RETRYING, FAILED or SKIPPED, only while holding the lease.

        `never_started`: a run skipped before its handler's first start loses the start its lease gave it (as a
        deferral's does), so it has no start and no start lateness; `finished_at` is the skip's time.

        A RETRYING run records `not_before` (its next attempt's earliest start, which the lease enforces) and
        goes back into the due index at `resend_at`: when its backoff rides on a message, that is a safety net
        (the tick re-sends it if the message never came back); when the backoff is too long for a message,
        that is the retry itself. `history` replaces `attempt_history` (the lease holder is its only writer).

        A terminal outcome takes the run's `completes_job` ask away and tells whether it was there, from the
        item as the write found it (ReturnValues: no read, no capacity billed)."""
        update = Update({"#status": "status"}, owner=owner, running=RunStatus.RUNNING.value)
        update.conditions.append("lease_owner = :owner AND #status = :running")
        update.set("#status", status.value)
        if history is not None:
            update.set("attempt_history", _history_attr(history))
        update.removes += ["lease_owner", "lease_until", "lease_until_ms"]
        if never_started:
            update.removes += ["started_at", "lateness_ms"]
        if status.terminal:
            update.set("finished_at", iso(now))
            update.set("expires_at", self._expiry(now))
            update.removes.append(COMPLETES_JOB)
        if duration_ms is not None:
            update.set("duration_ms", duration_ms)
        if result is not None:
            update.set(update.name("result"), result.model_dump(mode="json", exclude_none=True))
        if error is not None:
            update.set(update.name("error"), error.model_dump(mode="json"))
        elif status is RunStatus.SUCCEEDED:
            update.removes.append(update.name("error"))
        if skip_reason is not None:
            update.set("skip_reason", skip_reason.value)
        if not_before is not None:
            update.set("not_before", iso(not_before))
            update.set("not_before_ms", to_ms(not_before))
        if resend_at is not None:
            update.set("due_shard", shard_of(run.job_id, self.shards))
            update.set("due_at", to_ms(resend_at))
        elif status.terminal:
            update.removes += ["due_shard", "due_at"]  # nothing left to send
        if status is RunStatus.FAILED:
            # Sparse entry in the tenant index: GET /v1/dlq lists these newest first.
            update.set("tenant_key", f"T#{run.tenant}#FAILED")
            update.set("tenant_sort", f"{to_ms(now):013d}#{run.id}")
        won, old = self._table.update_if_returning_old(
            run_key(run.id), update.expression(), update.condition(), update.names, update.attribute_values()
        )
        return Finished(recorded=won, completes_job=won and status.terminal and bool(old.get(COMPLETES_JOB)))

    def defer_run(
        self,
        run: Run,
        *,
        owner: str,
        status: RunStatus,
        reason: DeferReason,
        not_before: datetime,
        resend_at: datetime,
        history: Sequence[AttemptRecord] | None = None,
    ) -> bool:
        """Give the lease back without running: a limit held the run back. One write, only while holding the
        lease: back to `status` (QUEUED or RETRYING) with the attempt not consumed, `deferred` + 1 and its
        reason, `not_before` (the lease refuses any message before then) and its due-index entry at
        `resend_at` (the tick re-sends it then, were its message lost). A run that had never started before
        this lease loses the start the lease gave it, so its start and lateness are those of its real start."""
        update = Update(
            {"#status": "status", "#deferred": "deferred"}, owner=owner, running=RunStatus.RUNNING.value, one=1, zero=0
        )
        update.conditions.append("lease_owner = :owner AND #status = :running")
        update.set("#status", status.value)
        update.sets += ["attempts = attempts - :one", "#deferred = if_not_exists(#deferred, :zero) + :one"]
        update.set("deferred_reason", reason.value)
        update.set("not_before", iso(not_before))
        update.set("not_before_ms", to_ms(not_before))
        update.set("due_shard", shard_of(run.job_id, self.shards))
        update.set("due_at", to_ms(resend_at))
        if history is not None:
            update.set("attempt_history", _history_attr(history))
        update.removes += ["lease_owner", "lease_until", "lease_until_ms"]
        if run.attempts <= 1:
            update.removes += ["started_at", "lateness_ms"]
        return self._table.update_if(
            run_key(run.id), update.expression(), update.condition(), update.names, update.attribute_values()
        )

    def requeue_failed_run(self, run: Run, *, now: datetime, redispatch_at: datetime) -> bool:
        """FAILED -> QUEUED with attempts starting again (retry and DLQ redrive): a new execution, so its start,
        lateness and duration are measured afresh; `requeues` counts how often this happened."""
        return self._table.update_if(
            run_key(run.id),
            "SET #status = :queued, attempts = :zero, enqueued_at = :now, due_shard = :shard, due_at = :due, "
            "requeues = if_not_exists(requeues, :zero) + :one "
            "REMOVE #error, finished_at, expires_at, tenant_key, tenant_sort, lease_owner, lease_until, "
            "lease_until_ms, started_at, lateness_ms, duration_ms, not_before, not_before_ms, cancel_requested",
            "#status = :failed",
            {"#status": "status", "#error": "error"},
            expression_values(
                queued=RunStatus.QUEUED.value,
                failed=RunStatus.FAILED.value,
                zero=0,
                one=1,
                now=iso(now),
                shard=shard_of(run.job_id, self.shards),
                due=to_ms(redispatch_at),
            ),
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
        return int((now + self.retention).timestamp())


# On an unsettled run: when it settles, it attempts its job's completion (tickwork.progress.job_completion).
COMPLETES_JOB = "completes_job"

_TERMINAL_VALUES = {
    "succeeded": RunStatus.SUCCEEDED.value,
    "failed": RunStatus.FAILED.value,
    "skipped": RunStatus.SKIPPED.value,
}


def _history_attr(history: Sequence[AttemptRecord]) -> list[dict[str, Any]]:
    return [record.model_dump(mode="json") for record in history]
