"""Jitter: a job's occurrences delayed by a deterministic offset in [0, jitter_seconds), to the millisecond.

`H` in a cron spreads jobs across a field (a minute of the hour, say); jitter spreads a job's runs within a
second or a minute, against the thundering herd of many jobs on the same occurrence. The offset is a hash of the
job id and the nominal occurrence, so every claimer (a tick, a create's immediate dispatch, a retried claim)
computes the same jittered instant: the run keeps the nominal occurrence's id (exactly-once is unchanged) and
records both instants, `nominal_at` and the later `scheduled_for`, at which it starts.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from tickwork.model.clock import to_ms
from tickwork.model.schedule import Schedule


class JitterTooLarge(ValueError):
    """A jitter of at least the schedule's period would let a run start after its next occurrence."""


def jitter_offset_ms(job_id: str, nominal: datetime, jitter_seconds: int) -> int:
    """The offset in [0, jitter_seconds * 1000) ms for this job's occurrence at `nominal`; 0 without jitter.

    SHA-256 of "<job id>:<occurrence ms>", its first 8 bytes as a number modulo the range: uniform to within
    range/2**64, which no test or run count can see."""
    span_ms = jitter_seconds * 1000
    if span_ms <= 0:
        return 0
    digest = hashlib.sha256(f"{job_id}:{to_ms(nominal)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % span_ms


def jittered(job_id: str, nominal: datetime, jitter_seconds: int) -> datetime:
    """When the occurrence at `nominal` runs: never before it."""
    return nominal + timedelta(milliseconds=jitter_offset_ms(job_id, nominal, jitter_seconds))


def check_jitter(jitter_seconds: int, schedule: Schedule) -> None:
    """JitterTooLarge when the jitter reaches the schedule's shortest period (see Schedule.shortest_period):
    its delayed run could then start after the next occurrence's. A one-shot has no period."""
    if jitter_seconds <= 0:
        return
    period = schedule.shortest_period()
    if period is not None and timedelta(seconds=jitter_seconds) > period:
        raise JitterTooLarge(
            f"must be at most the schedule's shortest period, {int(period.total_seconds())} s "
            f"(the smallest gap between its occurrences), not {jitter_seconds} s"
        )


def jittered_times(job_id: str, nominal: datetime, jitter_seconds: int) -> dict[str, datetime]:
    """A claimed run's times: `scheduled_for` alone without jitter (nothing extra is stored); with it, the later
    `scheduled_for`, `nominal_at`, and `not_before` (the lease's condition), so that no message, however early
    (SQS delays a message 15 minutes at most), starts the run before its jittered time."""
    offset_ms = jitter_offset_ms(job_id, nominal, jitter_seconds)
    if offset_ms == 0:
        return {"scheduled_for": nominal}
    at = nominal + timedelta(milliseconds=offset_ms)
    return {"scheduled_for": at, "nominal_at": nominal, "not_before": at}
