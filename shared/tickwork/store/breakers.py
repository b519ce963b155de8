"""The job's circuit breaker on its item (pk=JOB#<job_id>, sk=JOB): the count of consecutive failed runs, and the
breaker opened, probed, reopened and closed (decided by tickwork.executor.breaker), each one conditional write."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tickwork.model.clock import iso
from tickwork.model.policies import BreakerState
from tickwork.model.states import JobState
from tickwork.store.codec import expression_values, job_key
from tickwork.store.conditional import Own, Table


class BreakerRecords:
    """The circuit breaker's writes on a job item. The failure count's leave the job's version alone (a claim or
    a PATCH racing one still wins); the breaker's changes of state (open, probe, reopen, close) move it."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def count_failure(self, job_id: str, failure: str) -> int:
        """One more consecutive FAILED run, `failure` naming its end (the job's `last_failure`, the count's token:
        store/conditional.Own); the count now (0: the job is gone). Counted once: its resend after a lost answer
        finds it the last failure (unless another run's was counted in between). No version change: a claim or a
        PATCH racing it still wins."""
        own = Own("last_failure", failure)
        won, item = self._table.update_if_returning_new(
            job_key(job_id),
            "SET consecutive_failures = if_not_exists(consecutive_failures, :zero) + :one, last_failure = :failure",
            "attribute_exists(pk) AND (attribute_not_exists(last_failure) OR last_failure <> :failure)",
            None,
            expression_values(zero=0, one=1, failure=failure),
            own=own,
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
        moves, so a claim that read the job before this cannot name a second probe. The probe's instant is the
        election's token (store/conditional.Own): one run has it."""
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
            own=Own("breaker.probe_at", str(iso(probe_at))),  # this run's election, found on a lost answer's resend
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
