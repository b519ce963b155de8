"""`tickwork smoke`: after a deploy, prove the stack runs a job end to end, signed as every other command is.

One echo one-shot due in 10 s, with a payload unique to this check: wait for its run, read its result, check the
result is the payload, then cancel what is left of the job. Every step says what it saw; the first step that fails
names the reason and the check ends there (the job is still cancelled).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork_cli import render
from tickwork_cli.api_client import ApiError, Client

DUE_IN = "+10s"
TAG = "tickwork-smoke"
TERMINAL = {"SUCCEEDED", "FAILED", "SKIPPED"}


class SmokeFailed(Exception):
    """A step of the check went wrong; the message says which and why."""


class SmokeTimedOut(SmokeFailed):
    """The run had not finished within --timeout."""


@dataclass(frozen=True)
class SmokeJob:
    """What the check creates: a name, tag and payload no other job has, so its result proves this run."""

    token: str

    @classmethod
    def new(cls) -> SmokeJob:
        return cls(uuid.uuid4().hex[:12])

    @property
    def payload(self) -> dict[str, Any]:
        return {"smoke": self.token}

    def spec(self, at: str) -> dict[str, Any]:
        return {
            "name": f"{TAG}-{self.token}",
            "type": "echo",
            "payload": self.payload,
            "schedule": {"at": at},
            "tags": {TAG: self.token},
        }


def run_problem(run: dict[str, Any]) -> str | None:
    """Why a finished run fails the check, or None when it SUCCEEDED."""
    if run["status"] == "SUCCEEDED":
        return None
    why = run.get("error") or run.get("skip_reason") or "no reason recorded"
    return f"run {run['id']} ended {run['status']}: {why}"


def result_problem(result: Any, payload: dict[str, Any]) -> str | None:
    """Why the run's result fails the check (an echo returns its payload), or None."""
    if result == payload:
        return None
    return f"the result {result!r} is not the payload {payload!r}"


@dataclass
class Smoke:
    """The check against one API. `now` and `sleep` are the CLI's (tests give theirs); `say` prints a step."""

    client: Client
    timeout: float
    interval: float
    now: Callable[[], datetime]
    sleep: Callable[[float], None]
    say: Callable[[str], None]

    def run(self, job: SmokeJob, due: Callable[[str, datetime], str]) -> None:
        """Raises SmokeFailed (or ApiError, from a call the API refused) at the first step that fails; cancels the
        job whatever happened once it exists."""
        created = render.plain(self.client.create_job(job.spec(due(DUE_IN, self.now()))))
        job_id = created["id"]
        self.say(f"created job {job_id} ({created['name']}), echo due at {created['next_run_at']}")
        try:
            self._check(job, job_id)
        except BaseException:
            self._clean_up(job_id, failing=True)
            raise
        self._clean_up(job_id)

    def _check(self, job: SmokeJob, job_id: str) -> None:
        run = self._finished_run(job_id)
        problem = run_problem(run)
        if problem:
            raise SmokeFailed(problem)
        self.say(f"run {run['id']} SUCCEEDED, {run.get('lateness_ms')} ms late, attempt {run.get('attempts')}")
        result = self.client.run_result(run["id"])
        problem = result_problem(result, job.payload)
        if problem:
            raise SmokeFailed(problem)
        self.say("result is the payload")

    def _finished_run(self, job_id: str) -> dict[str, Any]:
        """The job's run once it has finished; SmokeTimedOut after --timeout. Time spent waiting counts both by
        the clock and by the sleeps asked for, so a test's sleep that only moves a fake clock still ends it."""
        deadline = time.monotonic() + self.timeout
        waited = 0.0
        said = ""
        while True:
            runs = render.plain(self.client.list_runs(job_id).page().items)
            if runs and runs[0]["status"] in TERMINAL:
                return dict(runs[0])
            status = runs[0]["status"] if runs else "no run yet"
            if status != said:
                self.say(f"waiting: {status}")
                said = status
            if waited >= self.timeout or time.monotonic() >= deadline:
                raise SmokeTimedOut(f"the run had not finished after {self.timeout:g} s (last seen: {status})")
            self.sleep(self.interval)
            waited += self.interval

    def _clean_up(self, job_id: str, failing: bool = False) -> None:
        """Cancel the job. A cleanup that fails fails the check, unless the check is failing already: then it is
        said, and the first failure stays the reason."""
        try:
            self.client.cancel_job(job_id)
        except ApiError as exc:
            if exc.status == 409:  # the one-shot has completed: nothing of it is left to cancel
                self.say(f"job {job_id} has completed: nothing to cancel")
                return
            problem = f"could not cancel job {job_id}: {exc.describe()}"
            if not failing:
                raise SmokeFailed(problem) from None
            self.say(problem)
        else:
            self.say(f"cancelled job {job_id}")
