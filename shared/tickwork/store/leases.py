"""The executor's writes on a run item, under its lease: taken (at most one live lease), extended by the heartbeat,
ended by an outcome or given back by a deferral or a yield, each only by the lease's holder, with the progress it
reports; and the ask to stop a RUNNING run (overlap CANCEL_OTHER, a cancelled workflow run, a missed deadline),
which the heartbeat reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.ids import parse_run_id
from tickwork.model.run import AttemptHistory, Run, RunError, RunResult
from tickwork.model.states import DeferReason, RunStatus, SkipReason
from tickwork.store.checkpoints import StoredCheckpoint, stored_checkpoint
from tickwork.store.codec import deserialize, expression_values, run_from_attrs, run_key, shard_of
from tickwork.store.conditional import Own, Table, Update
from tickwork.store.runs import COMPLETES_JOB, expires_at


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
    checkpoint: StoredCheckpoint | None = None  # the run's last checkpoint, from the lease's own answer
    cancel_requested: bool = False  # the run was asked to stop before this lease (between its segments)


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


class RunLeases:
    """A run's lease and what its holder writes. An ended run gets `expires_at`, `retention` after it ends (TTL).

    One piece: each method is a conditional write on the run item whose condition is the same lock (the holder's
    lease, promise 4), so the lock's every use is read in one place."""

    def __init__(self, table: Table, *, shards: int, retention: timedelta) -> None:
        self._table = table
        self.shards = shards
        self.retention = retention

    def lease_run(self, run_id: str, *, owner: str, now: datetime, lease_for: timedelta) -> Lease:
        """Take the run: QUEUED or RETRYING whose wait has passed, or RUNNING whose lease expired, becomes
        RUNNING with attempts+1. The condition is promise 4's lock (at most one live lease per run) and keeps
        the retry backoff (no duplicate message starts an attempt before `not_before`). `owner` is the lease's
        token (store/conditional.Own): a lease applied whose answer was lost, its resend refused by the lease
        itself, is this executor's to use, not another's (BUSY)."""
        parsed = parse_run_id(run_id)
        if parsed is None:
            return Lease(LeaseOutcome.MISSING, None)
        lease_until = now + lease_for
        lateness = to_ms(now) - to_ms(parsed[1])
        won, old_attrs = self._table.update_if_returning_old(
            run_key(run_id),
            # `leased_from`: the status this lease found (an update's operands read the item as it was).
            "SET #status = :running, leased_from = #status, attempts = if_not_exists(attempts, :zero) + :one, "
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
            own=Own("lease_owner", owner),
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
        if old_attrs.get("lease_owner") == owner:
            old_attrs = _before_own_lease(old_attrs)
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
        return Lease(
            LeaseOutcome.LEASED,
            run,
            old.status,
            lease_until,
            stored_checkpoint(old_attrs),
            cancel_requested=bool(old_attrs.get("cancel_requested")),
        )

    def extend_lease(
        self,
        run_id: str,
        *,
        owner: str,
        lease_until: datetime,
        progress: str | None = None,
        marks: Mapping[str, datetime] | None = None,
    ) -> LeaseExtension:
        """The heartbeat's write: the lease runs on, while this owner holds it. The item comes back with it, so
        the heartbeat learns at no extra read whether the run was asked to stop (`request_cancel`). A pending
        progress report (JSON text: tickwork.executor.progress_reports) rides on it, and so do the run's warnings'
        marks (`slow_at`, `deadline_at_risk_at`: tickwork.executor.run_warnings), each kept if it is there already."""
        values = {"lu": iso(lease_until), "lu_ms": to_ms(lease_until), "owner": owner}
        # `leased_from` serves only a lease's own resend (lease_run): the first beat takes it away.
        sets = "SET lease_until = :lu, lease_until_ms = :lu_ms"
        if progress is not None:
            values["progress"] = progress
            sets += ", progress = :progress"
        for n, (name, at) in enumerate(sorted((marks or {}).items())):
            values[f"mark{n}"] = iso(at)
            sets += f", {name} = if_not_exists({name}, :mark{n})"
        won, attrs = self._table.update_if_returning_new(
            run_key(run_id),
            f"{sets} REMOVE leased_from",
            "lease_owner = :owner AND #status = :running",
            {"#status": "status"},
            expression_values(**values, running=RunStatus.RUNNING.value),
        )
        return LeaseExtension(held=won, cancel_requested=won and bool(attrs.get("cancel_requested")))

    def report_progress(self, run_id: str, *, owner: str, progress: str) -> bool:
        """A progress report (JSON text) of its own, while this owner holds the lease; False if it does not."""
        return self._table.update_if(
            run_key(run_id),
            "SET progress = :progress",
            "lease_owner = :owner AND #status = :running",
            {"#status": "status"},
            expression_values(progress=progress, owner=owner, running=RunStatus.RUNNING.value),
        )

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
        history: AttemptHistory | None = None,
        never_started: bool = False,
        events_pending: Sequence[str] = (),
        outbox_at: datetime | None = None,
        variant: str | None = None,
        slow_at: datetime | None = None,
    ) -> Finished:
        """Leave RUNNING: SUCCEEDED, RETRYING, FAILED or SKIPPED, only while holding the lease.

        `never_started`: a run skipped before its handler's first start loses the start its lease gave it (as a
        deferral's does), so it has no start and no start lateness; `finished_at` is the skip's time.

        A RETRYING run records `not_before` (its next attempt's earliest start, which the lease enforces) and
        goes back into the due index at `resend_at`: when its backoff rides on a message, that is a safety net
        (the tick re-sends it if the message never came back); when the backoff is too long for a message,
        that is the retry itself. `history` replaces `attempt_history` (the lease holder is its only writer).

        A terminal outcome tells whether the run was asked to complete its job (`completes_job`), from the item as
        the write found it (ReturnValues: no read, no capacity billed); the ask stays on the settled run, which
        nothing asks again, so an outcome whose answer was lost finds it too.

        `events_pending` (a terminal outcome's run events, tickwork.model.run_events) are kept on the run, which stays
        in the due index at `outbox_at` until they are published (tickwork.store.event_outbox). `slow_at`: the run
        was found slow (`Run Slow`, docs/forecasts.md), marked once by the write it rides on.

        `variant`: the variant the run ran (tickwork.model.variants), recorded by its first outcome, kept after.

        The outcome's token (store/conditional.Own) is what it writes anyway, so it costs no byte: its instant
        (`finished_at`; a retry's `not_before`) with the attempt it ends. An outcome applied whose answer was lost,
        its resend refused (the lease it held on is gone), is recorded."""
        update = _held_by(owner)
        update.set("#status", status.value)
        _record_variant(update, run, variant)
        if history is not None:
            _set_history(update, history)
        if status.terminal and (wall_ms := run.wall_ms_at(now, started=not never_started)) is not None:
            update.set("wall_ms", wall_ms)
        update.removes += ["lease_owner", "lease_until", "lease_until_ms", "leased_from"]
        if never_started:
            update.removes += ["started_at", "lateness_ms"]
        if status.terminal:
            update.set("finished_at", iso(now))
            update.set("expires_at", expires_at(now, self.retention))
        if duration_ms is not None:
            update.set("duration_ms", duration_ms)
        if slow_at is not None:
            update.sets.append(f"slow_at = if_not_exists(slow_at, {update.value(iso(slow_at))})")
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
        if status.terminal and events_pending and outbox_at is not None:
            resend_at = outbox_at
            update.set("events_pending", list(events_pending))
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
            run_key(run.id),
            update.expression(),
            update.condition(),
            update.names,
            update.attribute_values(),
            own=_outcome_token(run, status, now, not_before),
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
        history: AttemptHistory | None = None,
    ) -> bool:
        """Give the lease back without running: a limit held the run back. One write, only while holding the
        lease: back to `status` (QUEUED or RETRYING) with the attempt not consumed, `deferred` + 1 and its
        reason, `not_before` (the lease refuses any message before then) and its due-index entry at
        `resend_at` (the tick re-sends it then, were its message lost). A run whose execution had never started
        before this lease (Run.first_start_of_execution: not a yielded run's next segment, nor a later attempt)
        loses the start the lease gave it, so its start and lateness are those of its real start."""
        update = _held_by(owner, one=1, zero=0)
        update.names["#deferred"] = "deferred"
        update.set("#status", status.value)
        update.sets += ["attempts = attempts - :one", "#deferred = if_not_exists(#deferred, :zero) + :one"]
        update.set("deferred_reason", reason.value)
        update.set("not_before", iso(not_before))
        update.set("not_before_ms", to_ms(not_before))
        update.set("due_shard", shard_of(run.job_id, self.shards))
        update.set("due_at", to_ms(resend_at))
        if history is not None:
            _set_history(update, history)
        update.removes += ["lease_owner", "lease_until", "lease_until_ms", "leased_from"]
        if run.first_start_of_execution:
            update.removes += ["started_at", "lateness_ms"]
        return self._table.update_if(
            run_key(run.id), update.expression(), update.condition(), update.names, update.attribute_values()
        )

    def yield_run(
        self,
        run: Run,
        *,
        owner: str,
        segment_ms: int,
        resend_at: datetime,
        history: AttemptHistory,
        variant: str | None = None,
    ) -> bool:
        """A segment ended in a graceful yield (tickwork.executor.yields): back to QUEUED (RETRYING after a failed
        attempt) with the attempt not consumed, `segments` + 1 and its handler time added to `yielded_ms`, in the
        due index at `resend_at` (the tick re-sends it then, were its fresh message lost). Only while holding the
        lease; its checkpoint stays. `variant`: as an outcome records it (finish_run)."""
        update = _held_by(owner, one=1, zero=0, ms=segment_ms)
        _record_variant(update, run, variant)
        update.names["#segments"] = "segments"
        update.set("#status", (RunStatus.QUEUED if run.attempts <= 1 else RunStatus.RETRYING).value)
        update.sets += ["attempts = attempts - :one", "#segments = if_not_exists(#segments, :zero) + :one"]
        update.sets.append("yielded_ms = if_not_exists(yielded_ms, :zero) + :ms")
        _set_history(update, history)
        update.set("due_shard", shard_of(run.job_id, self.shards))
        update.set("due_at", to_ms(resend_at))
        update.removes += ["lease_owner", "lease_until", "lease_until_ms", "leased_from"]
        return self._table.update_if(
            run_key(run.id), update.expression(), update.condition(), update.names, update.attribute_values()
        )

    def request_cancel(self, run_id: str, *, audit: dict[str, Any] | None = None) -> bool:
        """Ask a RUNNING run to stop: its executor's next heartbeat sees it (cooperative cancellation). A yielded
        run between its segments (not ended) is asked too: its next segment's heartbeat sees it. `audit`: the
        request's audit record's item, in the same transaction, written only by the request that asks first (one
        already asked is a True that changes nothing and records nothing)."""
        asked = "#status = :running OR (#status IN (:queued, :retrying) AND #segments > :zero)"
        args = (
            run_key(run_id),
            "SET cancel_requested = :yes",
            asked,
            {"#status": "status", "#segments": "segments"},
            expression_values(
                yes=True,
                running=RunStatus.RUNNING.value,
                queued=RunStatus.QUEUED.value,
                retrying=RunStatus.RETRYING.value,
                zero=0,
            ),
        )
        if audit is None:
            return self._table.update_if(*args)
        key, update, _, names, values = args
        won, seen = self._table.update_if_audited(
            key, update, f"({asked}) AND attribute_not_exists(cancel_requested)", names, values, audit
        )
        status = seen.get("status")
        still_asked = status == RunStatus.RUNNING.value or (
            status in (RunStatus.QUEUED.value, RunStatus.RETRYING.value) and int(seen.get("segments", 0)) > 0
        )
        return won or (bool(seen.get("cancel_requested")) and still_asked)

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


def _outcome_token(run: Run, status: RunStatus, now: datetime, not_before: datetime | None) -> Own | None:
    """An outcome's token: its instant and the attempt it ends (another holder of a later lease has another
    attempt). None where the outcome writes no instant of its own."""
    attempt = (("attempts", run.attempts),)
    if status.terminal:
        return Own("finished_at", str(iso(now)), with_=attempt)
    return Own("not_before", str(iso(not_before)), with_=attempt) if not_before is not None else None


def _before_own_lease(leased: dict[str, Any]) -> dict[str, Any]:
    """The run's item as it was before a lease, from the item as that lease left it (its answer lost, its resend
    refused by the lease itself): the attempt it counted, the record it opened and the status it found taken back."""
    return leased | {
        "status": leased["leased_from"],
        "attempts": int(leased["attempts"]) - 1,
        "attempt_history": list(leased["attempt_history"])[:-1],
    }


def _held_by(owner: str, **values: Any) -> Update:
    """An update that only this lease's holder may make: the run RUNNING under `owner`'s lease."""
    update = Update({"#status": "status"}, owner=owner, running=RunStatus.RUNNING.value, **values)
    update.conditions.append("lease_owner = :owner AND #status = :running")
    return update


def _set_history(update: Update, history: AttemptHistory) -> None:
    """The whole attempt history, replaced (its records, their earlier ones' summary) and the handler time it
    adds up to."""
    update.set("attempt_history", [record.model_dump(mode="json") for record in history.records])
    if history.earlier is not None:
        update.set("earlier_attempts", history.earlier.model_dump(mode="json"))
    update.set("handler_ms", history.handler_ms)


def _record_variant(update: Update, run: Run, variant: str | None) -> None:
    """The run's variant, in the outcome's own write, when the run has none recorded yet (its first attempt)."""
    if variant is not None and run.variant is None:
        update.set("variant", variant)
