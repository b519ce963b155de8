"""Workflows through the real pipeline against moto: create -> due index -> tick -> workflow run -> step runs on
SQS -> executor -> step_settled -> downstream steps. Time is the fake clock's; nothing sleeps."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from tickwork.control.api_bodies import WorkflowUpdate
from tickwork.faults import CrashPoint
from tickwork.model.errors import Conflict, InvalidInput, NotFound
from tickwork.model.ids import run_id_for, step_run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import JobState, RunStatus, RunTrigger, SkipReason
from tickwork.model.workflow.advance import StepStatus, WorkflowRunStatus
from tickwork.model.workflow.runs import StepEntry

from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT, Pipeline
from tests.testing_jobtypes import EXECUTIONS
from tests.workflow_runs import (  # noqa: F401  fresh_hold: autouse
    FAILING,
    FAR,
    HOLD,
    ONCE,
    create,
    deliver_round,
    fresh_hold,
    occur,
    result_of,
    statuses,
    step,
    view,
)

# ---------------------------------------------------------------- the diamond


def test_a_diamond_runs_each_step_exactly_once_and_passes_results_downstream(pipeline):
    workflow = create(
        pipeline,
        [
            step("a", type="echo", payload={"rows": [1, 2, 3], "n": 3}),
            step("b", "a", payload={"rows": {"$from": "steps.a.result.rows"}}),
            step("c", "a", payload={"n": {"$from": "steps.a.result.n"}, "missing": {"$from": "steps.a.result.nope"}}),
            step("d", "b", "c", payload={"b": {"$from": "steps.b.result.rows"}, "c": {"$from": "steps.c.result.n"}}),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    assert pipeline.drain() == 4

    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.SUCCEEDED
    assert statuses(run) == dict.fromkeys("abcd", "SUCCEEDED")
    ids = {sid: step_run_id_for(workflow_run_id, sid) for sid in "abcd"}
    assert {sid: s.run_id for sid, s in run.steps.items()} == ids
    assert all(s.attempts == 1 for s in run.steps.values())
    assert dict(EXECUTIONS) == {ids[s]: 1 for s in "bcd"}  # each counting step ran once
    assert pipeline.count_items(kind="RUN") == 4
    # Results passed down: a $from value the result lacks is null, not dropped.
    assert pipeline.run(ids["c"]).payload == {"n": 3, "missing": None}
    assert result_of(pipeline, ids["d"]) == {"run_id": ids["d"], "b": [1, 2, 3], "c": 3}
    # Step runs are ordinary runs: the store and the run queries read them, under their workflow's id.
    step_run = pipeline.services.queries.get_run(TENANT, ids["b"])
    assert (step_run.job_id, step_run.workflow_run_id, step_run.step_id) == (workflow.id, workflow_run_id, "b")
    assert step_run.status is RunStatus.SUCCEEDED
    assert step_run.payload == {"rows": [1, 2, 3]}


# ---------------------------------------------------------------- trigger rules and conditions


def test_every_trigger_rule_both_ways(pipeline):
    """Roots that succeed (ok, ok2), fail (bad, bad2) or are skipped by their condition (off); downstream, each
    rule over upstream outcomes that make it hold, and over outcomes that do not."""
    roots = [
        step("ok"),
        step("ok2"),
        step("bad", **FAILING),
        step("bad2", **FAILING),
        step("off", condition="`false`"),
    ]
    cases = {
        "all_success_runs": ("all_success", ["ok", "ok2"]),
        "all_success_skips": ("all_success", ["ok", "bad"]),
        "all_done_runs": ("all_done", ["ok", "bad", "off"]),
        "all_failed_runs": ("all_failed", ["bad", "bad2"]),
        "all_failed_skips": ("all_failed", ["ok", "bad"]),
        "one_success_runs": ("one_success", ["ok", "bad"]),
        "one_success_skips": ("one_success", ["bad", "bad2"]),
        "one_failed_runs": ("one_failed", ["ok", "bad"]),
        "one_failed_skips": ("one_failed", ["ok", "ok2"]),
        "none_failed_runs": ("none_failed", ["ok", "off"]),
        "none_failed_skips": ("none_failed", ["ok", "bad"]),
        "all_success_over_a_skip": ("all_success", ["ok", "off"]),
    }
    downstream = [step(sid, *ups, trigger_rule=rule) for sid, (rule, ups) in cases.items()]
    workflow_run_id = occur(pipeline, create(pipeline, roots + downstream))
    pipeline.drain()

    run = view(pipeline, workflow_run_id)
    assert statuses(run) == {
        "ok": "SUCCEEDED",
        "ok2": "SUCCEEDED",
        "bad": "FAILED",
        "bad2": "FAILED",
        "off": "SKIPPED:condition_false",
        "all_success_runs": "SUCCEEDED",
        "all_success_skips": "SKIPPED:upstream_failed",
        "all_done_runs": "SUCCEEDED",
        "all_failed_runs": "SUCCEEDED",
        "all_failed_skips": "SKIPPED:rule_not_met",
        "one_success_runs": "SUCCEEDED",
        "one_success_skips": "SKIPPED:upstream_failed",
        "one_failed_runs": "SUCCEEDED",
        "one_failed_skips": "SKIPPED:rule_not_met",
        "none_failed_runs": "SUCCEEDED",
        "none_failed_skips": "SKIPPED:upstream_failed",
        "all_success_over_a_skip": "SKIPPED:upstream_skipped",
    }
    # A step skipped by a rule has no run; only those that ran do.
    assert run.steps["all_success_skips"].run_id is None
    assert pipeline.count_items(kind="RUN") == 4 + 6  # ok, ok2, bad, bad2 and the six that ran
    # `all_success_skips` carries bad's failure to a leaf unhandled: the run FAILED.
    assert run.status is WorkflowRunStatus.FAILED


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (3, {"check": "SUCCEEDED", "load": "SUCCEEDED", "after": "SUCCEEDED"}),
        (0, {"check": "SUCCEEDED", "load": "SKIPPED:condition_false", "after": "SKIPPED:upstream_skipped"}),
    ],
    ids=["true", "false"],
)
def test_a_condition_over_an_upstream_result_runs_or_skips_its_step(pipeline, n, expected):
    workflow = create(
        pipeline,
        [
            step("check", type="echo", payload={"n": n}),
            step("load", "check", condition="steps.check.result.n > `0` && steps.check.status == 'SUCCEEDED'"),
            step("after", "load"),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert statuses(run) == expected
    # A false condition and the skips it propagates are not failures: the run SUCCEEDED either way.
    assert run.status is WorkflowRunStatus.SUCCEEDED


def test_a_root_whose_condition_is_false_is_skipped_when_the_run_opens(pipeline):
    workflow = create(pipeline, [step("only", condition="`false`")])
    workflow_run_id = occur(pipeline, workflow)
    run = view(pipeline, workflow_run_id)
    assert statuses(run) == {"only": "SKIPPED:condition_false"}
    assert run.status is WorkflowRunStatus.SUCCEEDED  # every step skipped at once: it ended as it opened
    assert pipeline.count_items(kind="RUN") == 0
    assert sum(pipeline.queued_messages(b) for b in Band) == 0


# ---------------------------------------------------------------- results passed downstream


def test_a_payload_too_large_to_pass_fails_its_step_with_a_clear_error_and_nothing_truncated(pipeline):
    big = "x" * 150_000
    workflow = create(
        pipeline,
        [
            step("a", type="echo", payload={"big": big}),
            step("b", "a", payload={"one": {"$from": "steps.a.result.big"}, "two": {"$from": "steps.a.result.big"}}),
            step("c", "b"),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert statuses(run) == {"a": "SUCCEEDED", "b": "FAILED", "c": "SKIPPED:upstream_failed"}
    assert run.status is WorkflowRunStatus.FAILED
    failed = pipeline.run(step_run_id_for(workflow_run_id, "b"))
    assert failed.error is not None
    assert failed.error.type == "StepPayloadTooLarge"
    assert "over the limit of 262144" in failed.error.message
    assert failed.attempts == 0  # never run
    assert failed.payload == {}  # nothing truncated: no payload at all
    # In the tenant's DLQ listing, like any run that failed (and, like any, not on its band's SQS DLQ).
    assert [r.id for r in pipeline.services.queries.list_dlq(TENANT).items] == [failed.id]
    assert pipeline.dlq_messages(Band.NORMAL) == []
    # The same results would give the same payload: a retry has nothing to retry.
    with pytest.raises(Conflict, match="payloads could not be made"):
        pipeline.services.workflows.retry_run(TENANT, workflow_run_id)


def test_a_jmespath_error_at_evaluation_fails_its_step_and_the_run_settles(pipeline):
    """`a` returns no `tags`: `contains(null, ...)` cannot be evaluated. Its step FAILS with a reason naming the
    expression and JMESPath's error, recorded on its run (and the DLQ); the run settles by the rules, at the
    step's end, not after a reconciliation that raised for ever."""
    condition = "contains(steps.a.result.tags, 'urgent')"
    workflow = create(
        pipeline,
        [
            step("a", type="echo", payload={"n": 1}),
            step("b", "a", condition=condition),
            step("c", "b"),
            step("alert", "b", trigger_rule="one_failed"),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert (run.status, statuses(run)) == (
        WorkflowRunStatus.FAILED,  # the failure reached the leaf `c` unhandled (`alert` ran all the same)
        {"a": "SUCCEEDED", "b": "FAILED", "c": "SKIPPED:upstream_failed", "alert": "SUCCEEDED"},
    )
    failed = pipeline.run(step_run_id_for(workflow_run_id, "b"))
    assert failed.error is not None
    assert (failed.error.type, failed.attempts) == ("StepExpressionError", 0)
    assert f"`{condition}`" in failed.error.message
    assert "invalid type for value: None" in failed.error.message
    assert [r.id for r in pipeline.services.queries.list_dlq(TENANT).items] == [failed.id]
    assert EXECUTIONS.get(failed.id, 0) == 0


def test_an_upstream_result_over_the_read_cap_fails_the_step_that_reads_it_naming_size_and_cap(pipeline):
    """`a`'s result is over the 1 MiB a condition or `$from` may read: it is not read whole (a ranged GetObject
    stops at the cap), and `b`, whose `$from` reads it, FAILS, never run, with a reason naming the step, the
    result's size and the cap. `c` depends on `a` without reading its result, and runs."""
    workflow = create(
        pipeline,
        [
            step("a", type="sized", payload={"bytes": 1024 * 1024}),
            step("b", "a", payload={"n": {"$from": "length(steps.a.result.rows)"}}),
            step("c", "a"),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.calls.clear()
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert (run.status, statuses(run)) == (
        WorkflowRunStatus.FAILED,
        {"a": "SUCCEEDED", "b": "FAILED", "c": "SUCCEEDED"},
    )
    size = pipeline.run(step_run_id_for(workflow_run_id, "a")).result.bytes  # type: ignore[union-attr]
    assert size == 1024 * 1024 + len('{"rows":""}')
    failed = pipeline.run(step_run_id_for(workflow_run_id, "b"))
    assert failed.error is not None
    assert (failed.error.type, failed.attempts, failed.payload) == ("StepUpstreamResultTooLarge", 0, {})
    assert "step 'b'" in failed.error.message
    assert f"step 'a' is {size} bytes, over the 1048576 bytes" in failed.error.message
    assert [r.id for r in pipeline.services.queries.list_dlq(TENANT).items] == [failed.id]
    assert [p.get("Range") for p in pipeline.calls.params("GetObject")] == ["bytes=0-1048576"]


def test_a_null_result_passes_as_null(pipeline):
    workflow = create(
        pipeline,
        [step("a", type="nothing"), step("b", "a", payload={"got": {"$from": "steps.a.result"}})],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    assert pipeline.run(step_run_id_for(workflow_run_id, "b")).payload == {"got": None}
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.SUCCEEDED


# ---------------------------------------------------------------- fan-in races


DIAMOND = [step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c", payload={"c": {"$from": "steps.c.result"}})]


def _run_a_then_hold_b_and_c(pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[Any]]:
    """The diamond up to b and c ended, with their workflow run not told yet: returns the workflow run id and the
    step_settled calls the executors made (to be made again by the test, as it likes)."""
    workflow_run_id = occur(pipeline, create(pipeline, DIAMOND))
    assert deliver_round(pipeline) == 1  # a, and its executor starts b and c
    progress = pipeline.services.workflow_progress
    held: list[Any] = []
    monkeypatch.setattr(progress, "step_settled", lambda *args: held.append(args))
    assert deliver_round(pipeline) == 2  # b and c run; their ends are held back
    monkeypatch.undo()
    assert sorted(args[0].step_id for args in held) == ["b", "c"]
    return workflow_run_id, held


def _d_ran_once(pipeline: Pipeline, workflow_run_id: str) -> None:
    assert pipeline.drain() == 1
    d = step_run_id_for(workflow_run_id, "d")
    assert EXECUTIONS[d] == 1
    assert pipeline.count_items(kind="RUN") == 4
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.SUCCEEDED
    assert run.steps["d"].attempts == 1


@pytest.mark.parametrize("attempt", range(3))
def test_racing_fan_in_on_two_executors_creates_the_downstream_run_once(pipeline, monkeypatch, attempt):
    workflow_run_id, held = _run_a_then_hold_b_and_c(pipeline, monkeypatch)
    progress = pipeline.services.workflow_progress
    barrier = threading.Barrier(2)
    reports: list[Any] = []

    def settle(args: Any) -> None:
        barrier.wait()
        reports.append(progress.step_settled(*args))

    threads = [threading.Thread(target=settle, args=(args,)) for args in held]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Both ends recorded; d created by exactly one of the two, and sent once.
    assert sorted(sent for report in reports for sent in report.sent) == [step_run_id_for(workflow_run_id, "d")]
    assert sum(pipeline.queued_messages(b) for b in Band) == 1
    _d_ran_once(pipeline, workflow_run_id)


def test_fan_in_interleaved_by_hand_creates_the_downstream_run_once(pipeline, monkeypatch):
    """b and c settle, then both plan d from the same run: the first creates d's run, the second (between the
    first's put and its decision) loses the put, records the decision, and the first's decision then loses
    and re-plans to nothing."""
    workflow_run_id, held = _run_a_then_hold_b_and_c(pipeline, monkeypatch)
    progress = pipeline.services.workflow_progress
    records = pipeline.services.workflow_records
    for run, status, *_ in held:
        records.settle_step(
            workflow_run_id,
            run.step_id,
            StepEntry(status=StepStatus(status.value), run_id=run.id),
            reconcile_at=pipeline.clock.now(),
        )
    both_done = records.get_workflow_run(workflow_run_id)
    assert both_done is not None
    second: list[Any] = []

    class InterleaveAfterPut:
        """When the first writer has created d's run, the second runs its whole plan (once)."""

        def reached(self, point: CrashPoint) -> None:
            if point is CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT and not second:
                second.append(None)
                second.append(progress.advance(both_done))

    monkeypatch.setattr(progress, "faults", InterleaveAfterPut())
    first = progress.advance(both_done)
    assert [o.message.run_id for o in first] == [step_run_id_for(workflow_run_id, "d")]
    assert second[1] == []  # lost the put: it sends nothing
    assert records.get_workflow_run(workflow_run_id).steps["d"].status is StepStatus.QUEUED  # type: ignore[union-attr]
    progress.send(first)
    _d_ran_once(pipeline, workflow_run_id)


# ---------------------------------------------------------------- crashes mid-fan-in


@pytest.mark.parametrize(
    "point",
    [
        CrashPoint.WORKFLOW_BEFORE_STEP_SETTLED,  # c's run ended; its workflow run not told
        CrashPoint.WORKFLOW_AFTER_STEP_SETTLED,  # c's end recorded; d not decided
        CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT,  # d's run created; not recorded, not sent
    ],
    ids=lambda p: p.value,
)
def test_a_crash_between_the_last_upstream_end_and_the_downstream_run_is_reconciled_by_the_tick(pipeline, point):
    workflow_run_id = occur(pipeline, create(pipeline, [step("a"), step("b", "a"), step("c", "b"), step("d", "c")]))
    deliver_round(pipeline)  # a
    deliver_round(pipeline)  # b
    # c is the last upstream of d: the executor that ends it dies there, and nothing else ever happens to this
    # workflow run but the tick.
    pipeline.crashes.arm(point)
    with pytest.raises(ProcessKilled):
        deliver_round(pipeline)
    pipeline.crashes.disarm()
    assert pipeline.run(step_run_id_for(workflow_run_id, "c")).status is RunStatus.SUCCEEDED
    assert sum(pipeline.queued_messages(b) for b in Band) == 1  # only the dead executor's own message
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.RUNNING

    pipeline.clock.advance(60)
    pipeline.tick()  # too early: the run's last progress is less than RECONCILE_AFTER old
    assert pipeline.existing_runs([step_run_id_for(workflow_run_id, "d")]) == (
        {step_run_id_for(workflow_run_id, "d")} if point is CrashPoint.WORKFLOW_AFTER_STEP_RUNS_PUT else set()
    )
    pipeline.clock.advance(90)  # now it is
    pipeline.tick()
    d = step_run_id_for(workflow_run_id, "d")
    pipeline.drain()  # d (the dead executor's message for c would come back after its lease, as a duplicate)
    assert EXECUTIONS[d] == 1
    assert EXECUTIONS[step_run_id_for(workflow_run_id, "c")] == 1
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.SUCCEEDED
    assert statuses(run) == dict.fromkeys("abcd", "SUCCEEDED")


def test_a_tick_that_dies_after_opening_a_workflow_run_is_completed_by_the_next(pipeline):
    workflow = create(pipeline, [step("a"), step("b")])
    pipeline.clock.set(workflow.next_run_at)  # type: ignore[arg-type]
    pipeline.crashes.arm(CrashPoint.WORKFLOW_AFTER_RUN_PUT)
    with pytest.raises(ProcessKilled):
        pipeline.tick()
    pipeline.crashes.disarm()
    workflow_run_id = run_id_for(workflow.id, workflow.next_run_at)  # type: ignore[arg-type]
    assert pipeline.count_items(kind="RUN") == 0  # opened, its roots' runs never created
    pipeline.clock.advance(60)
    pipeline.tick()  # the workflow was never advanced: this claim finds the run and creates its roots
    assert pipeline.drain() == 2
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.SUCCEEDED
    assert pipeline.count_items(kind="WORKFLOW_RUN") == 1
    assert {step_run_id_for(workflow_run_id, s): 1 for s in "ab"} == EXECUTIONS


def test_racing_ticks_open_exactly_one_workflow_run_per_occurrence(pipeline):
    workflows = [create(pipeline, DIAMOND[:2], at=START + FAR + timedelta(milliseconds=i)) for i in range(20)]
    pipeline.clock.advance(FAR.total_seconds() + 1)
    barrier = threading.Barrier(4)

    def tick() -> None:
        barrier.wait()
        pipeline.services.dispatcher.claim_due_runs()

    threads = [threading.Thread(target=tick) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pipeline.count_items(kind="WORKFLOW_RUN") == 20
    assert pipeline.count_items(kind="RUN") == 20  # one root each
    assert sum(pipeline.queued_messages(b) for b in Band) == 20
    pipeline.drain()
    for workflow in workflows:
        workflow_run_id = run_id_for(workflow.id, workflow.next_run_at)  # type: ignore[arg-type]
        assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.SUCCEEDED
    assert len(EXECUTIONS) == 40
    assert set(EXECUTIONS.values()) == {1}


# ---------------------------------------------------------------- retry, cancel, pause


def test_retry_reruns_only_the_failed_steps_and_those_skipped_because_of_them(pipeline):
    HOLD.flaky_fails = True
    workflow = create(
        pipeline,
        [
            step("a"),
            step("side"),
            step("b", "a", type="flaky", retry=ONCE),
            step("c", "b", payload={"b": {"$from": "steps.b.result"}}),
            step("alert", "b", trigger_rule="one_failed"),
        ],
    )
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    failed = view(pipeline, workflow_run_id)
    assert failed.status is WorkflowRunStatus.FAILED
    assert statuses(failed) == {
        "a": "SUCCEEDED",
        "side": "SUCCEEDED",
        "b": "FAILED",
        "c": "SKIPPED:upstream_failed",
        "alert": "SUCCEEDED",
    }
    with pytest.raises(Conflict, match="only a RUNNING workflow run can be cancelled"):
        pipeline.services.workflows.cancel_run(TENANT, workflow_run_id)

    HOLD.flaky_fails = False
    retried = pipeline.services.workflows.retry_run(TENANT, workflow_run_id)
    assert retried.status is WorkflowRunStatus.RUNNING
    assert statuses(retried) == {
        "a": "SUCCEEDED",
        "side": "SUCCEEDED",
        "b": "QUEUED",
        "c": "PENDING",
        "alert": "SUCCEEDED",
    }
    with pytest.raises(Conflict, match="only a FAILED workflow run can be retried"):
        pipeline.services.workflows.retry_run(TENANT, workflow_run_id)
    assert pipeline.drain() == 2  # b again, then c
    done = view(pipeline, workflow_run_id)
    assert done.status is WorkflowRunStatus.SUCCEEDED
    assert statuses(done) == dict.fromkeys(["a", "side", "b", "c", "alert"], "SUCCEEDED")
    ids = {sid: step_run_id_for(workflow_run_id, sid) for sid in ("a", "side", "c", "alert")}
    assert {run_id: EXECUTIONS[run_id] for run_id in ids.values()} == dict.fromkeys(ids.values(), 1)
    b = pipeline.run(step_run_id_for(workflow_run_id, "b"))
    assert (b.status, b.requeues, b.attempts) == (RunStatus.SUCCEEDED, 1, 1)  # the same run, re-queued once
    assert pipeline.services.queries.list_dlq(TENANT).items == []  # no longer in the DLQ listing


def test_cancel_skips_pending_steps_and_cancels_a_running_one_cooperatively(pipeline):
    workflow = create(
        pipeline, [step("slow", type="hold"), step("waiting"), step("next", "slow"), step("later", "next")]
    )
    workflow_run_id = occur(pipeline, workflow)
    messages = {json.loads(m["Body"])["run_id"]: m for m in pipeline.receive(Band.NORMAL)}
    slow, waiting = (step_run_id_for(workflow_run_id, s) for s in ("slow", "waiting"))
    assert set(messages) == {slow, waiting}
    executor = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [messages[slow]]))
    executor.start()
    assert HOLD.started.wait(10)

    cancelled = pipeline.services.workflows.cancel_run(TENANT, workflow_run_id)
    assert cancelled.status is WorkflowRunStatus.CANCELLED
    assert cancelled.finished_at == pipeline.clock.now()
    assert statuses(cancelled) == {
        "slow": "RUNNING",
        "waiting": "QUEUED",
        "next": "SKIPPED:cancelled",
        "later": "SKIPPED:cancelled",
    }
    # The running step sees its cancellation on its next heartbeat (no extra read) and stops.
    HOLD.release.set()
    executor.join(10)
    # The step that had not started is recorded SKIPPED when an executor takes it.
    pipeline.deliver(Band.NORMAL, [messages[waiting]])
    run = view(pipeline, workflow_run_id)
    assert run.status is WorkflowRunStatus.CANCELLED
    assert statuses(run) == {
        "slow": "SKIPPED:cancelled",
        "waiting": "SKIPPED:cancelled",
        "next": "SKIPPED:cancelled",
        "later": "SKIPPED:cancelled",
    }
    assert pipeline.run(slow).attempts == 1  # cancelled, not retried
    assert EXECUTIONS[waiting] == 0
    assert pipeline.count_items(kind="RUN") == 2  # nothing downstream was created
    assert sum(pipeline.queued_messages(b) for b in Band) == 0
    with pytest.raises(Conflict, match="only a RUNNING workflow run can be cancelled"):
        pipeline.services.workflows.cancel_run(TENANT, workflow_run_id)


def test_a_cancelled_step_that_returns_anyway_succeeded(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, [step("slow", type="hold", payload={"finish": True})]))
    (message,) = pipeline.receive(Band.NORMAL)
    executor = threading.Thread(target=pipeline.deliver, args=(Band.NORMAL, [message]))
    executor.start()
    assert HOLD.started.wait(10)
    pipeline.services.workflows.cancel_run(TENANT, workflow_run_id)
    HOLD.release.set()
    executor.join(10)
    run = view(pipeline, workflow_run_id)
    assert (run.status, statuses(run)) == (WorkflowRunStatus.CANCELLED, {"slow": "SUCCEEDED"})
    assert result_of(pipeline, step_run_id_for(workflow_run_id, "slow")) == {"held": True}


def test_pause_stops_new_workflow_runs_while_the_run_in_progress_finishes(pipeline):
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a"), step("b", "a")], schedule={"rate": "5 minutes"})
    first = occur(pipeline, workflow)  # 12:05
    assert deliver_round(pipeline) == 1  # a; b is queued
    workflows.pause(TENANT, workflow.id)
    assert pipeline.drain() == 1  # b: the run in progress goes on
    assert view(pipeline, first).status is WorkflowRunStatus.SUCCEEDED
    pipeline.clock.advance(16 * 60)  # 12:21: 12:10, 12:15 and 12:20 fall while paused
    pipeline.tick()
    assert pipeline.count_items(kind="WORKFLOW_RUN") == 1  # nothing new while paused

    workflows.resume(TENANT, workflow.id)
    runs = workflows.runs(TENANT, workflow.id).items
    assert [(r.scheduled_for.strftime("%H:%M"), r.status.value, r.skip_reason) for r in runs] == [
        ("12:20", "SKIPPED", SkipReason.PAUSED),
        ("12:15", "SKIPPED", SkipReason.PAUSED),
        ("12:10", "SKIPPED", SkipReason.PAUSED),
        ("12:05", "SUCCEEDED", None),
    ]
    assert runs[0].steps == {}  # a skipped occurrence ran nothing
    skipped = workflows.runs(TENANT, workflow.id, status=WorkflowRunStatus.SKIPPED, limit=2)
    assert [r.scheduled_for.strftime("%H:%M") for r in skipped.items] == ["12:20", "12:15"]
    rest = workflows.runs(TENANT, workflow.id, status=WorkflowRunStatus.SKIPPED, cursor=skipped.next_cursor)
    assert ([r.scheduled_for.strftime("%H:%M") for r in rest.items], rest.next_cursor) == (["12:10"], None)
    assert pipeline.count_items(kind="RUN") == 2  # a and b of 12:05 only
    assert sum(pipeline.queued_messages(b) for b in Band) == 0


def test_trigger_starts_a_manual_workflow_run_now_even_while_paused(pipeline):
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a"), step("b", "a")])
    workflows.pause(TENANT, workflow.id)
    run = workflows.trigger(TENANT, workflow.id)
    assert run.id == run_id_for(workflow.id, pipeline.clock.now(), RunTrigger.MANUAL)
    assert (run.trigger, run.status, statuses(run)) == (
        RunTrigger.MANUAL,
        WorkflowRunStatus.RUNNING,
        {"a": "QUEUED", "b": "PENDING"},
    )
    assert pipeline.drain() == 2
    assert view(pipeline, run.id).status is WorkflowRunStatus.SUCCEEDED
    workflows.cancel(TENANT, workflow.id)
    with pytest.raises(Conflict, match="CANCELLED"):
        workflows.trigger(TENANT, workflow.id)


def test_a_workflow_completes_once_its_last_occurrence_has_ended(pipeline):
    workflow = create(pipeline, [step("a")])
    occur(pipeline, workflow)
    assert pipeline.services.workflows.get(TENANT, workflow.id).state is JobState.ACTIVE
    pipeline.drain()
    assert pipeline.services.workflows.get(TENANT, workflow.id).state is JobState.COMPLETED


# ---------------------------------------------------------------- bad definitions


def _table_items(pipeline: Pipeline) -> int:
    db = pipeline.services.clients.client("dynamodb")
    return db.scan(TableName=pipeline.services.settings.table_name, Select="COUNT")["Count"]


@pytest.mark.parametrize(
    ("steps", "fields"),
    [
        ([step("a", "c"), step("b", "a"), step("c", "b")], {"steps[1].depends_on"}),  # b -> c -> a -> b
        ([step("a"), step("a")], {"steps[1].id"}),
        ([step("a", "nope")], {"steps[0].depends_on[0]"}),
        ([step("a", "a")], {"steps[0].depends_on[0]"}),
        ([step("a"), step("b"), step("c", "a", condition="steps.b.result")], {"steps[2].condition"}),
        ([step("a"), step("b", payload={"x": {"$from": "steps.a.result"}})], {"steps[1].payload.x.$from"}),
        ([step("a"), step("b", "a", condition="steps.a.result ==")], {"steps[1].condition"}),
        ([step("a", type="no-such-type")], {"steps[0].type"}),
        ([step("a", type="http", payload={"url": 3})], {"steps[0].payload.url"}),
    ],
    ids=[
        "cycle",
        "duplicate",
        "unknown",
        "self",
        "condition-not-upstream",
        "from-not-upstream",
        "bad-jmespath",
        "unknown-type",
        "bad-payload",
    ],
)
def test_a_bad_definition_names_the_field_and_writes_nothing(pipeline, steps, fields):
    with pytest.raises(InvalidInput) as raised:
        create(pipeline, steps)
    assert {e.field for e in raised.value.errors} == fields
    assert _table_items(pipeline) == 0


def test_a_cycle_is_named(pipeline):
    with pytest.raises(InvalidInput, match="the steps form a cycle: b -> c -> a -> b"):
        create(pipeline, [step("a", "c"), step("b", "a"), step("c", "b")])


def test_a_payload_from_upstream_is_not_checked_against_its_type_before_it_exists(pipeline):
    workflow = create(
        pipeline,
        [
            step("a", type="echo", payload={"url": "https://example.com"}),
            step("b", "a", type="http", payload={"url": {"$from": "steps.a.result.url"}}),
        ],
    )
    assert [s.id for s in workflow.steps] == ["a", "b"]


def test_an_update_is_checked_as_a_create_and_keeps_runs_in_progress_on_their_snapshot(pipeline):
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a"), step("b", "a")])
    workflow_run_id = occur(pipeline, workflow)
    with pytest.raises(InvalidInput) as raised:
        workflows.update(TENANT, workflow.id, WorkflowUpdate.model_validate({"steps": [step("x", "x")]}))
    assert [e.field for e in raised.value.errors] == ["steps[0].depends_on[0]"]
    updated = workflows.update(TENANT, workflow.id, WorkflowUpdate.model_validate({"steps": [step("only")]}))
    assert [s.id for s in updated.steps] == ["only"]
    assert updated.version == workflow.version + 2  # the claim advanced it once, the update once more
    pipeline.drain()
    assert statuses(view(pipeline, workflow_run_id)) == {"a": "SUCCEEDED", "b": "SUCCEEDED"}


def test_other_tenants_workflows_and_runs_do_not_exist(pipeline):
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a")])
    workflow_run_id = occur(pipeline, workflow)
    for call in (
        lambda: workflows.get("other", workflow.id),
        lambda: workflows.get_run("other", workflow_run_id),
        lambda: workflows.cancel_run("other", workflow_run_id),
        lambda: workflows.runs("other", workflow.id),
        lambda: workflows.get(TENANT, "not-an-id"),
        lambda: workflows.get_run(TENANT, "not-an-id"),
    ):
        with pytest.raises(NotFound):
            call()
    assert [w.id for w in workflows.list(TENANT).items] == [workflow.id]
    assert workflows.list("other").items == []


def test_a_failed_steps_run_is_retried_with_its_workflow_run_not_alone(pipeline):
    workflow_run_id = occur(pipeline, create(pipeline, [step("bad", **FAILING), step("after", "bad")]))
    pipeline.drain()
    bad = step_run_id_for(workflow_run_id, "bad")
    assert [r.id for r in pipeline.services.queries.list_dlq(TENANT).items] == [bad]
    with pytest.raises(Conflict, match=f"retried with its workflow run: retry {workflow_run_id}"):
        pipeline.services.redrive.retry_run(TENANT, bad)
    report = pipeline.services.redrive.redrive(TENANT)
    assert (report.redriven, report.not_redriven) == (0, [bad])
    assert pipeline.run(bad).status is RunStatus.FAILED


def test_a_trigger_that_dies_after_opening_its_run_is_completed_by_the_ticks_reconciliation(pipeline):
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a"), step("b", "a")])
    pipeline.crashes.arm(CrashPoint.WORKFLOW_AFTER_RUN_PUT)
    with pytest.raises(ProcessKilled):
        workflows.trigger(TENANT, workflow.id)
    pipeline.crashes.disarm()
    workflow_run_id = run_id_for(workflow.id, pipeline.clock.now(), RunTrigger.MANUAL)
    assert statuses(view(pipeline, workflow_run_id)) == {"a": "QUEUED", "b": "PENDING"}  # recorded, never created
    assert pipeline.count_items(kind="RUN") == 0
    pipeline.clock.advance(150)  # past RECONCILE_AFTER: the run's root is created and sent by the tick
    pipeline.tick()
    assert pipeline.drain() == 2
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.SUCCEEDED
    assert {step_run_id_for(workflow_run_id, s): 1 for s in "ab"} == EXECUTIONS


def test_pause_resume_and_delete_are_idempotent_and_refuse_a_cancelled_workflow(pipeline):
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a")])
    assert workflows.resume(TENANT, workflow.id) == workflow  # already ACTIVE: no change, as for jobs
    assert workflows.pause(TENANT, workflow.id).state is JobState.PAUSED
    assert workflows.pause(TENANT, workflow.id).version == workflow.version + 1  # no second write
    assert workflows.resume(TENANT, workflow.id).state is JobState.ACTIVE
    cancelled = workflows.cancel(TENANT, workflow.id)
    assert (cancelled.state, cancelled.next_run_at) == (JobState.CANCELLED, None)
    assert workflows.cancel(TENANT, workflow.id) == cancelled
    with pytest.raises(Conflict, match="cannot resume a CANCELLED workflow"):
        workflows.resume(TENANT, workflow.id)
    with pytest.raises(Conflict, match="cannot update a CANCELLED workflow"):
        workflows.update(TENANT, workflow.id, WorkflowUpdate.model_validate({"name": "renamed"}))


# ---------------------------------------------------------------- a pause or cancel racing the claim


@pytest.mark.parametrize(("change", "reason"), [("pause", SkipReason.PAUSED), ("cancel", SkipReason.CANCELLED)])
@pytest.mark.parametrize("moment", ["after_the_index_read", "before_the_advance"])
def test_a_workflow_paused_or_cancelled_while_a_tick_is_claiming_does_not_run_that_occurrence(
    pipeline, monkeypatch, change, reason, moment
):
    """The tick has read the workflow from the due index; the change lands before its claim writes anything, or
    between the workflow run's put and the claim's advance. Either way the occurrence is recorded SKIPPED with
    the reason, as a job's run is, and no step runs."""
    workflows = pipeline.services.workflows
    workflow = create(pipeline, [step("a"), step("b", "a")])
    pipeline.clock.set(workflow.next_run_at)  # type: ignore[arg-type]
    changed = []

    def change_first(target: Any, method: str) -> None:
        original = getattr(target, method)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if not changed:
                changed.append(getattr(workflows, change)(TENANT, workflow.id))
            return original(*args, **kwargs)

        monkeypatch.setattr(target, method, wrapped)

    if moment == "after_the_index_read":
        change_first(pipeline.services.dispatcher.workflows, "write")
    else:
        change_first(pipeline.services.store.jobs, "advance_job")
    pipeline.tick()
    monkeypatch.undo()
    assert changed

    pipeline.drain()
    workflow_run_id = run_id_for(workflow.id, workflow.next_run_at)  # type: ignore[arg-type]
    run = view(pipeline, workflow_run_id)
    assert (run.status, run.skip_reason) == (WorkflowRunStatus.SKIPPED, reason)
    assert EXECUTIONS == {}  # no step ran
    assert all(s.status in ("PENDING", RunStatus.SKIPPED) for s in run.steps.values())
    assert sum(pipeline.queued_messages(b) for b in Band) == 0


def test_a_workflow_run_retry_that_dies_between_its_reopen_and_its_requeue_is_completed_not_failed_again(
    pipeline, monkeypatch
):
    """A retry is two writes: the run reopened (its failed step QUEUED), then the step's run re-queued. Dying
    between them leaves a QUEUED step whose run is still FAILED from before; the tick's reconciliation re-queues
    it (the step's entry says which re-queue it waits for), rather than recording the old failure again."""
    HOLD.flaky_fails = True
    workflow = create(pipeline, [step("a"), step("b", "a", type="flaky", retry=ONCE)])
    workflow_run_id = occur(pipeline, workflow)
    pipeline.drain()
    assert view(pipeline, workflow_run_id).status is WorkflowRunStatus.FAILED
    HOLD.flaky_fails = False

    def killed(*args: Any, **kwargs: Any) -> Any:
        raise ProcessKilled("between the reopen and the requeue")

    monkeypatch.setattr(pipeline.services.store.runs, "requeue_failed_run", killed)
    with pytest.raises(ProcessKilled):
        pipeline.services.workflows.retry_run(TENANT, workflow_run_id)
    monkeypatch.undo()
    reopened = view(pipeline, workflow_run_id)
    assert (reopened.status, statuses(reopened)) == (WorkflowRunStatus.RUNNING, {"a": "SUCCEEDED", "b": "FAILED"})
    pipeline.clock.advance(150)  # past RECONCILE_AFTER
    pipeline.tick()
    pipeline.drain()
    run = view(pipeline, workflow_run_id)
    assert (run.status, statuses(run)) == (WorkflowRunStatus.SUCCEEDED, {"a": "SUCCEEDED", "b": "SUCCEEDED"})
    assert pipeline.run(step_run_id_for(workflow_run_id, "b")).requeues == 1
