"""Named crash points: the places where a tick or an executor dying hurts the most.

The tick, the executor and the dead letters' redrive call `faults.reached(point)` at each of them. In production the plan is
`NO_FAULTS` and does nothing. The fault-injection suite (tests/faults) passes a plan that ends the
process's work right there, to prove that whatever dies at any of these points, nothing is lost and
nothing runs twice. The points are named here, in the domain, so that a reader sees where a process
may die, and so that moving code cannot silently move a test's crash somewhere harmless.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class CrashPoint(StrEnum):
    # The tick (and job creation, which claims a job due soon the same way).
    TICK_AFTER_RUN_PUT = "tick.after_run_put"  # run records written, the job not yet advanced
    TICK_AFTER_JOB_UPDATE = "tick.after_job_update"  # the job advanced, its runs not yet sent
    TICK_BEFORE_SEND = "tick.before_send"  # about to send a slice of claimed runs
    TICK_AFTER_SEND = "tick.after_send"  # a slice sent, the tick not yet done
    # The fan-out's coordinator (tickwork.tick.fanout): a tick that hands its shards to dispatch workers.
    FANOUT_BEFORE_SEND = "fanout.before_send"  # the slices made, none sent
    FANOUT_AFTER_SEND = "fanout.after_send"  # a batch of slices sent, the rest not yet
    # The executor.
    # The batch received, the first ChangeMessageVisibility not yet made: the message stays invisible for the
    # queue's whole visibility timeout (5,400 s: six times the executor's timeout, as AWS asks).
    EXECUTOR_ON_RECEIVE = "executor.on_receive"
    EXECUTOR_AFTER_LEASE = "executor.after_lease"  # the run leased, nothing else done
    EXECUTOR_AFTER_JOB_READ = "executor.after_job_read"  # the job read, the handler not yet started
    EXECUTOR_AFTER_RESULT_WRITE = "executor.after_result_write"  # the result in S3, the run not yet finished
    EXECUTOR_BEFORE_FINISH = "executor.before_finish"  # about to record the outcome (any outcome)
    EXECUTOR_DURING_HEARTBEAT = "executor.during_heartbeat"  # the lease extended, the message not yet
    # A workflow run's progress (by an executor that just ended a step, or by the tick reconciling).
    WORKFLOW_AFTER_RUN_PUT = "workflow.after_run_put"  # a workflow run opened, its root steps' runs not created
    WORKFLOW_BEFORE_STEP_SETTLED = "workflow.before_step_settled"  # a step's run ended, its workflow run not told
    WORKFLOW_AFTER_STEP_SETTLED = "workflow.after_step_settled"  # a step's end recorded, downstream not decided
    WORKFLOW_AFTER_STEP_RUNS_PUT = (
        "workflow.after_step_runs_put"  # downstream (or compensation) runs made, not recorded
    )
    # Run events (tickwork.progress.run_events, freeze_events): a fact recorded (a failed run's outcome, a freeze's
    # start or end), its events not published.
    EVENTS_BEFORE_PUBLISH = "events.before_publish"
    # The audit trail's archive (tickwork.tick.audit_archive): a record in S3, not yet released to TTL.
    AUDIT_AFTER_ARCHIVE = "audit.after_archive"
    # The SQS dead letters' redrive (tickwork.control.dead_letters), whose record is an intent confirmed after the
    # move tasks start (tickwork.model.redrive_intents).
    REDRIVE_BEFORE_INTENT = "redrive.before_intent"  # the queues read, nothing written
    REDRIVE_AFTER_INTENT = "redrive.after_intent"  # the intent written, no move started
    REDRIVE_AFTER_MOVE = "redrive.after_move"  # a band's move started, the record not confirmed
    REDRIVE_AFTER_CONFIRM = "redrive.after_confirm"  # the record confirmed, the answer not sent


TICK_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("tick."))
EXECUTOR_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("executor."))
WORKFLOW_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("workflow."))
FANOUT_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("fanout."))
EVENT_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("events."))
AUDIT_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("audit."))
REDRIVE_CRASH_POINTS = tuple(p for p in CrashPoint if p.value.startswith("redrive."))


class FaultPlan(Protocol):
    def reached(self, point: CrashPoint) -> None:
        """Called when the code passes `point`. A test plan may end the work here by raising."""
        ...


class NoFaults:
    """The production plan: every crash point passes."""

    def reached(self, point: CrashPoint) -> None:
        return None


NO_FAULTS: FaultPlan = NoFaults()
