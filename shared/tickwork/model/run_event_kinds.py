"""The kinds of run event (an event's `detail-type`), and which of them a job publishes: its `notify`, and the
default when it has none. A job names them, and so does every run event (tickwork.model.run_events)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, Field


class RunEventKind(StrEnum):
    """An event's `detail-type`."""

    RUN_FAILED = "Run Failed"
    RUN_DEAD_LETTERED = "Run Dead-Lettered"
    DEADLINE_MISSED = "Deadline Missed"
    DEADLINE_AT_RISK = "Deadline At Risk"
    RUN_SLOW = "Run Slow"
    JOB_SUSPENDED = "Job Suspended"
    FREEZE_STARTED = "Freeze Started"
    FREEZE_ENDED = "Freeze Ended"
    VARIANT_ROLLED_BACK = "Variant Rolled Back"
    REGION_FAILOVER = "Region Failover"  # another region made active (docs/regions.md)


# What a job emits unless its `notify` says otherwise: failures and dead letters.
DEFAULT_NOTIFY: tuple[RunEventKind, ...] = (RunEventKind.RUN_FAILED, RunEventKind.RUN_DEAD_LETTERED)
# The kinds a job's `notify` may name (freezes are a tenant's, not a job's).
JOB_EVENT_KINDS: tuple[RunEventKind, ...] = (
    RunEventKind.RUN_FAILED,
    RunEventKind.RUN_DEAD_LETTERED,
    RunEventKind.DEADLINE_MISSED,
    RunEventKind.JOB_SUSPENDED,
    RunEventKind.DEADLINE_AT_RISK,
    RunEventKind.RUN_SLOW,
)


# A kind a job's `notify` may name, as written (RunEventKind's values; freezes are a tenant's, not a job's).
JobEventKind = Literal[
    "Run Failed", "Run Dead-Lettered", "Deadline Missed", "Job Suspended", "Deadline At Risk", "Run Slow"
]


def _distinct(kinds: list[str]) -> list[str]:
    return list(dict.fromkeys(kinds))


# A job's `notify`: the run events it publishes ([] for none).
Notify = Annotated[
    list[JobEventKind],
    # The bound before the de-duplication, so a list over it is refused as the schema says, not shortened first.
    Field(
        max_length=2 * len(JOB_EVENT_KINDS),
        description="The run events this job publishes to EventBridge (absent: `Run Failed` and `Run Dead-Lettered`).",
    ),
    AfterValidator(_distinct),
]
FAILURE_KINDS: tuple[RunEventKind, ...] = (RunEventKind.RUN_FAILED, RunEventKind.RUN_DEAD_LETTERED)
# A job with a deadline publishes its misses and its warnings unless its notify leaves them out; every job its
# slow runs (docs/forecasts.md).
DEADLINE_NOTIFY = (*DEFAULT_NOTIFY, RunEventKind.DEADLINE_MISSED, RunEventKind.DEADLINE_AT_RISK)
SLOW_NOTIFY = (*DEFAULT_NOTIFY, RunEventKind.RUN_SLOW)


def emitted(notify: Sequence[str] | None, kinds: Sequence[RunEventKind]) -> list[str]:
    """Of `kinds`, those a job's `notify` asks for (None: the default), as stored in `events_pending`."""
    wanted = DEFAULT_NOTIFY if notify is None else tuple(notify)
    return [kind.value for kind in kinds if kind in wanted]
