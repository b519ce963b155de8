"""The simulation's state machine (hypothesis stateful testing): random jobs, operator actions through the API
handler, faults and the passing of time, with every invariant (tests/simulation/model.py) checked after each step.

See tests/simulation/test_simulation.py for how to run it."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from tickwork.faults import EXECUTOR_CRASH_POINTS, TICK_CRASH_POINTS
from tickwork.model.run import Run
from tickwork.model.states import RunStatus

from tests.simulation.model import CalendarModel, JobModel, Model, violations
from tests.simulation.world import EXECUTIONS, HANDLED, STEP_CALLS, World

# Exploring past a known failure: invariants not checked, and rules not run (comma-separated names).
SKIPPED_INVARIANTS = frozenset(filter(None, os.environ.get("SIMULATION_SKIP", "").split(",")))
WITHOUT_RULES = frozenset(filter(None, os.environ.get("SIMULATION_WITHOUT", "").split(",")))

# Set by the test before the machine runs (one World for every example of the run).
WORLD: list[World] = []

EVERY = st.sampled_from([1, 2, 3])
OVERLAP = st.sampled_from(["ALLOW", "SKIP", "BUFFER_ONE"])
BACKOFF = st.sampled_from([(0.2, 0.5), (1, 5), (2, 10.6)])  # (backoff_seconds, max_backoff_seconds)
PAGES = st.sampled_from([(1, 5.0), (2, 10.0), (4, 10.0)])  # pages, seconds each
FAILS = st.sampled_from(["never", "never", "once", "always"])
WINDOWS = st.sampled_from(
    [
        {"cron": "*/10 * * * *", "duration_minutes": 3},
        {"cron": "0 0 30 2 *", "duration_minutes": 60},  # never fires
        {"cron": "0 * * * 1-5", "duration_minutes": 90},  # chained: a blackout from Monday to Friday
    ]
)
PATCHES = st.sampled_from(
    [
        {"payload_pages": 1},
        {"deadline": {"within_seconds": 600}},
        {"deadline": {"within_seconds": 604799}},  # over the job's maximum run time: a 422
        {"overlap": "SKIP"},
        {"jitter_seconds": 20},
        {"schedule": {"cron": "*/2 * * * *"}},
    ]
)


class Simulation(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = WORLD[0]
        self.world.reset()
        self.model = Model()
        self.payloads: dict[str, dict[str, Any]] = {}
        self.calendars: dict[str, CalendarModel] = {}  # each created calendar, by id, in order
        self.freezes: list[str] = []
        # The freezes over every job (jobs created later too): (from, until, on_blocked).
        self.freezes_of_all: list[tuple[datetime, datetime, str]] = []

    # ------------------------------------------------------------ jobs

    @rule(
        every=EVERY,
        overlap=OVERLAP,
        backoff=BACKOFF,
        pages=PAGES,
        fails=FAILS,
        attempts=st.integers(1, 3),
        jitter=st.booleans(),
        debounce=st.booleans(),
        ordering=st.booleans(),
        deadline=st.booleans(),
        breaker=st.booleans(),
        calendar=st.booleans(),
        on_blocked=st.sampled_from(["SKIP", "DEFER"]),
        tight_budget=st.booleans(),
    )
    def create_job(
        self,
        every: int,
        overlap: str,
        backoff: tuple[float, float],
        pages: tuple[int, float],
        fails: str,
        attempts: int,
        jitter: bool,
        debounce: bool,
        ordering: bool,
        deadline: bool,
        breaker: bool,
        calendar: bool,
        on_blocked: str,
        tight_budget: bool = False,
    ) -> None:
        count, seconds = pages
        work = count * seconds
        payload: dict[str, Any] = {"pages": count, "page_seconds": seconds}
        if fails == "once":
            payload["fail_first_after_page"] = count // 2
        elif fails == "always":
            payload["fail_always"] = True
        body: dict[str, Any] = {
            "name": "sim",
            "type": "sim-work",
            "payload": payload,
            "schedule": {"cron": f"*/{every} * * * *" if every > 1 else "* * * * *"},
            "overlap": overlap,
            "retry": {"max_attempts": attempts, "backoff_seconds": backoff[0], "max_backoff_seconds": backoff[1]},
            "timeout_seconds": 120,
            "on_blocked": on_blocked,
        }
        if tight_budget:  # the work fits, with a little room to spare (not twice over; no time for a retry)
            body["max_run_seconds"] = int(work) + 5
        if jitter:
            body["jitter_seconds"] = 20
        if debounce:
            body["debounce"] = {"key": "k", "seconds": 90}
        if ordering:
            body["ordering"] = {"key": "o", "on_failure": "continue"}
        if deadline:
            body["deadline"] = {"within_seconds": 900}
        if breaker:
            body["circuit_breaker"] = {"failure_threshold": 2, "cooldown_seconds": 120}
        named = list(self.calendars)[-1] if calendar and self.calendars else None
        if named is not None:
            body["calendars"] = [named]
        reply = self.world.call("POST", "/v1/jobs", body)
        if reply.status != 201:
            return
        job = reply.json
        self.payloads[job["id"]] = payload
        self.model.jobs[job["id"]] = JobModel(
            id=job["id"],
            every_minutes=every,
            created_at=self.world.now,
            overlap=overlap,
            max_backoff_seconds=backoff[1],
            jitter=jitter,
            calendar=self.calendars[named] if named is not None else None,
            on_blocked=on_blocked,
        )
        for start, until, freeze_on_blocked in self.freezes_of_all:
            self.model.jobs[job["id"]].frozen_by(start, until, freeze_on_blocked)

    @rule(window=WINDOWS, mode=st.sampled_from(["exclude", "include"]))
    def create_calendar(self, window: dict[str, Any], mode: str) -> None:
        body = {"name": "sim", "timezone": "UTC", "mode": mode, "windows": [window]}
        reply = self.world.call("POST", "/v1/calendars", body)
        if reply.status == 201:
            self.calendars[reply.json["id"]] = CalendarModel(mode, window["cron"], window["duration_minutes"])

    def _job(self, index: int) -> JobModel:
        jobs = list(self.model.jobs.values())
        return jobs[index % len(jobs)]

    # ------------------------------------------------------------ operator actions

    @precondition(lambda self: self.model.jobs)
    @rule(index=st.integers(0, 7), debounced=st.booleans())
    def trigger(self, index: int, debounced: bool) -> None:
        job = self._job(index)
        body: dict[str, Any] = {"payload": self.payloads[job.id]}
        if debounced:
            body["debounce"] = {"key": "t", "seconds": 60, "collect": False}
        reply = self.world.call("POST", f"/v1/jobs/{job.id}/trigger", body)
        if reply.status == 202:
            self.model.triggered.add(reply.json["id"])

    @precondition(lambda self: self.model.jobs)
    @rule(index=st.integers(0, 7), action=st.sampled_from(["pause", "resume", "cancel"]))
    def change_state(self, index: int, action: str) -> None:
        job = self._job(index)
        if action == "cancel":
            reply = self.world.call("DELETE", f"/v1/jobs/{job.id}")
        else:
            reply = self.world.call("POST", f"/v1/jobs/{job.id}/{action}")
        if reply.status < 300:
            job.stop_modelling(self.world.now)
            if action == "cancel" and job.cancelled_at is None:
                job.cancelled_at = self.world.now

    @precondition(lambda self: self.model.jobs)
    @rule(index=st.integers(0, 7), patch=PATCHES)
    def patch(self, index: int, patch: dict[str, Any]) -> None:
        job = self._job(index)
        body = dict(patch)
        if "payload_pages" in body:
            body = {"payload": {**self.payloads[job.id], "pages": body["payload_pages"]}}
        reply = self.world.call("PATCH", f"/v1/jobs/{job.id}", body)
        if reply.status < 300:
            job.stop_modelling(self.world.now)
            if "overlap" in body:
                job.overlap = body["overlap"]

    @precondition(lambda self: self.model.jobs)
    @rule(index=st.integers(0, 7), minutes=st.integers(2, 30))
    def backfill(self, index: int, minutes: int) -> None:
        job = self._job(index)
        now = self.world.now
        body = {"from": (now - timedelta(minutes=minutes)).isoformat(), "to": now.isoformat(), "max_runs": 3}
        self.world.call("POST", f"/v1/jobs/{job.id}/backfill", body)

    @precondition(lambda self: self.model.jobs)
    @rule(index=st.integers(0, 20), redrive=st.booleans(), from_checkpoint=st.booleans())
    def retry_failed(self, index: int, redrive: bool, from_checkpoint: bool) -> None:
        failed = [r for r in self._runs() if r.status == RunStatus.FAILED]
        if not failed:
            return
        run = failed[index % len(failed)]
        if redrive:
            self.world.call("POST", "/v1/dlq/redrive", {"run_ids": [run.id]})
        else:
            reply = self.world.call("POST", f"/v1/runs/{run.id}/retry", {"from_checkpoint": from_checkpoint})
            if reply.status < 300 and not from_checkpoint:
                self.model.restarted[run.id] += 1  # its steps start over

    @precondition(lambda self: self.model.jobs)
    @rule(
        index=st.integers(0, 7),
        every_job=st.booleans(),
        started_ago=st.sampled_from([0, 30, 300]),
        seconds=st.sampled_from([60, 180, 600]),
        on_blocked=st.sampled_from(["SKIP", "DEFER"]),
    )
    def freeze(self, index: int, every_job: bool, started_ago: int, seconds: int, on_blocked: str) -> None:
        job = self._job(index)
        now = self.world.now
        start = now - timedelta(seconds=started_ago)
        body = {
            "selector": {"all": True} if every_job else {"job_ids": [job.id]},
            "from": start.isoformat(),
            "for_seconds": seconds,
            "reason": "simulated deploy",
            "on_blocked": on_blocked,
        }
        reply = self.world.call("POST", "/v1/freezes", body)
        if reply.status != 201:
            return
        self.freezes.append(reply.json["id"])
        until = start + timedelta(seconds=seconds)
        if every_job:
            self.freezes_of_all.append((start, until, on_blocked))
        for frozen in self.model.jobs.values() if every_job else [job]:
            frozen.frozen_by(start, until, on_blocked)
            # A freeze's claimed runs are marked at its creation: what they become is the other invariants' to say.
            frozen.defer_frozen.append((now - timedelta(minutes=3), now + timedelta(minutes=3)))

    @precondition(lambda self: self.freezes)
    @rule(index=st.integers(0, 7))
    def lift(self, index: int) -> None:
        freeze_id = self.freezes.pop(index % len(self.freezes))
        self.world.call("DELETE", f"/v1/freezes/{freeze_id}")

    @precondition(lambda self: self.model.jobs)
    @rule(index=st.integers(0, 7))
    def preview(self, index: int) -> None:
        self.world.call("GET", f"/v1/jobs/{self._job(index).id}/preview", query={"count": 3})

    # ------------------------------------------------------------ time and faults

    @rule(seconds=st.sampled_from([20, 60, 150, 400]))
    def advance(self, seconds: int) -> None:
        self.world.advance(seconds)

    @rule(point=st.sampled_from(TICK_CRASH_POINTS))
    def crash_next_tick(self, point: Any) -> None:
        self.world.pipeline.crashes.arm(point)
        self.world.faults.tick_crashes += 1
        self.world.tick()
        self.world.pipeline.crashes.disarm()

    @rule(point=st.sampled_from(EXECUTOR_CRASH_POINTS))
    def kill_next_executor(self, point: Any) -> None:
        self.world.pipeline.crashes.arm(point)
        self.world.faults.executor_crashes += 1
        self.world.deliver_visible(until=self.world.now + timedelta(minutes=1))
        self.world.pipeline.crashes.disarm()

    @rule(lose=st.booleans())
    def message_fault(self, lose: bool) -> None:
        if lose:
            self.world.lose_message()
        else:
            self.world.duplicate_message()

    # ------------------------------------------------------------ invariants

    def _runs(self) -> list[Run]:
        return [run for job_id in self.model.jobs for run in self.world.pipeline.runs_of(job_id)]

    @invariant()
    def promises_hold(self) -> None:
        runs = {job_id: self.world.pipeline.runs_of(job_id) for job_id in self.model.jobs}
        self.model.retry_waits = self.world.retry_waits
        self.model.handled = HANDLED
        broken = violations(self.model, runs, EXECUTIONS, STEP_CALLS, self.world.now, skip=SKIPPED_INVARIANTS)
        broken += [error for error in self.world.errors if error.split(":")[0] not in SKIPPED_INVARIANTS]
        assert not broken, "\n".join(broken)

    def teardown(self) -> None:
        self.world.pipeline.crashes.disarm()


def _leave_out(machine: type[RuleBasedStateMachine], names: frozenset[str]) -> None:
    """The rules named never run (their precondition never holds)."""
    for name in names:
        setattr(machine, name, precondition(lambda self: False)(getattr(machine, name)))


_leave_out(Simulation, WITHOUT_RULES)
