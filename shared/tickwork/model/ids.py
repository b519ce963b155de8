"""Ids of jobs, workflows and their runs: how they are made and parsed; and the kinds of item they name."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Literal, NamedTuple, TypeVar

from tickwork.model.clock import from_ms, to_ms
from tickwork.model.errors import Conflict
from tickwork.model.states import RunTrigger

# Ids: a job is j + 25 characters, a workflow w + 25. An occurrence's run is <owner id>.<13 digits of ms>, with
# `.m` for a manual trigger: a job's run, or a workflow run. A workflow step's run is its workflow run's id,
# `.s-`, and the step id, so that every id names its place in the table (see store.codec).
STEP_ID_PATTERN = r"[A-Za-z_][A-Za-z0-9_-]{0,63}"
_ID = re.compile(r"^j[0-9a-z]{25}$")
_WORKFLOW_ID = re.compile(r"^w[0-9a-z]{25}$")
_JOB_RUN_ID = re.compile(r"^(j[0-9a-z]{25})\.(\d{13})(\.m)?$")
_WORKFLOW_RUN_ID = re.compile(r"^(w[0-9a-z]{25})\.(\d{13})(\.m)?$")
_STEP_RUN_ID = re.compile(rf"^(w[0-9a-z]{{25}})\.(\d{{13}})(\.m)?\.([sc])-({STEP_ID_PATTERN})$")
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def new_job_id(now_ms: int | None = None, *, prefix: Literal["j", "w", "c", "f", "a"] = "j") -> str:
    """Time-ordered, collision-resistant: 10 chars of milliseconds then 15 random chars (ULID-like)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    head = "".join(_ALPHABET[(ms >> shift) & 31] for shift in range(45, -5, -5))
    rand = int.from_bytes(os.urandom(10), "big")
    tail = "".join(_ALPHABET[(rand >> shift) & 31] for shift in range(70, -5, -5))[:15]
    return prefix + head + tail


def new_workflow_id(now_ms: int | None = None) -> str:
    return new_job_id(now_ms, prefix="w")


def is_job_id(value: str) -> bool:
    return bool(_ID.match(value))


def is_workflow_id(value: str) -> bool:
    return bool(_WORKFLOW_ID.match(value))


def run_id_for(job_id: str, scheduled_for: datetime, trigger: RunTrigger = RunTrigger.SCHEDULE) -> str:
    """Deterministic: the same job (or workflow) and occurrence always name the same run (the claim's lock key)."""
    suffix = ".m" if trigger is RunTrigger.MANUAL else ""
    return f"{job_id}.{to_ms(scheduled_for):013d}{suffix}"


MANUAL_TRIGGER_TRIES = 5
_Started = TypeVar("_Started")


def on_a_free_millisecond(now: datetime, start: Callable[[datetime], _Started | None]) -> _Started:
    """A manual run (a job's, or a workflow run) at now, or, since two triggers in the same millisecond would
    name the same run, at the next millisecond whose run `start` could create (it returns None where one exists).
    Conflict after MANUAL_TRIGGER_TRIES."""
    for offset_ms in range(MANUAL_TRIGGER_TRIES):
        started = start(now + timedelta(milliseconds=offset_ms))
        if started is not None:
            return started
    raise Conflict("too many triggers at once; try again")


def step_run_id_for(workflow_run_id: str, step_id: str) -> str:
    """Deterministic: a workflow run's step has one run, whoever creates it (the lock on the step)."""
    return f"{workflow_run_id}.s-{step_id}"


def compensation_run_id_for(workflow_run_id: str, step_id: str) -> str:
    """Deterministic, as a step's: the run of the compensation of a workflow run's step."""
    return f"{workflow_run_id}.c-{step_id}"


class ParsedRunId(NamedTuple):
    job_id: str  # the job's id, or for a step's run its workflow's
    scheduled_for: datetime
    trigger: RunTrigger
    step_id: str | None = None  # a workflow step's run, or its compensation's
    compensation: bool = False  # the run of the step's compensation

    @property
    def workflow_run_id(self) -> str | None:
        if self.step_id is None:
            return None
        return run_id_for(self.job_id, self.scheduled_for, self.trigger)


def parse_run_id(run_id: str) -> ParsedRunId | None:
    """A run's id: a job's run, or a workflow step's run (a workflow run itself is not a run: see
    parse_workflow_run_id)."""
    match = _JOB_RUN_ID.match(run_id) or _STEP_RUN_ID.match(run_id)
    if not match:
        return None
    trigger = RunTrigger.MANUAL if match.group(3) else RunTrigger.SCHEDULE
    if match.re is not _STEP_RUN_ID:
        return ParsedRunId(match.group(1), from_ms(int(match.group(2))), trigger)
    compensation = match.group(4) == "c"
    return ParsedRunId(match.group(1), from_ms(int(match.group(2))), trigger, match.group(5), compensation)


def parse_workflow_run_id(workflow_run_id: str) -> ParsedRunId | None:
    match = _WORKFLOW_RUN_ID.match(workflow_run_id)
    if not match:
        return None
    trigger = RunTrigger.MANUAL if match.group(3) else RunTrigger.SCHEDULE
    return ParsedRunId(match.group(1), from_ms(int(match.group(2))), trigger)


class ItemKind(StrEnum):
    JOB = "JOB"
    RUN = "RUN"  # a job's run, or a workflow step's
    WORKFLOW = "WORKFLOW"
    WORKFLOW_RUN = "WORKFLOW_RUN"
    DEADLINE = "DEADLINE"  # a run's deadline, watched in the due index (tickwork.store.deadlines)

    @property
    def scheduled(self) -> bool:
        """A job or a workflow: what the tick claims occurrences of (ahead, within the horizon)."""
        return self in (ItemKind.JOB, ItemKind.WORKFLOW)
