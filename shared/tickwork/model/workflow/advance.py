"""What a workflow run does next: the pure decision, from its steps' states (and the upstream results it reads).

`plan_advance` looks at every PENDING step whose `depends_on` are all terminal, in dependency order, and
decides it: start it (with its payload resolved), or record it SKIPPED with the reason. A skip decides its
downstream steps in the same plan (a skip propagates, as in Airflow). Whoever applies the plan (an executor
that just finished a step, or the tick's reconciliation of a stalled run) writes each decision with a
condition on the step still being PENDING and creates each run only if absent, so applying a plan twice, or
two plans at once, changes nothing more than applying it once.

The rules, as docs/workflows.md states them:
- a step whose upstream steps are all terminal starts if its trigger rule holds and its condition is true;
- a rule that cannot hold: SKIPPED `upstream_failed` when an upstream failure is why, `upstream_skipped` when
  upstream skips are why, `rule_not_met` when the rule waits for a failure that did not come (one_failed,
  all_failed); a false condition: SKIPPED `condition_false`;
- an upstream step counts as failed if it FAILED or was skipped as `upstream_failed`;
- a condition or `$from` that cannot be evaluated (a JMESPath type error), or that reads an upstream result over
  MAX_READ_RESULT_BYTES: the step FAILS, its run created FAILED with a reason naming the expression and the
  error, or the result's size and the cap;
- the workflow run ends when every step is terminal: FAILED if a failure reached a leaf step unhandled (a
  failure is handled by a step downstream of it that ran and SUCCEEDED), otherwise SUCCEEDED;
- a run that FAILS with steps to compensate (compensated_steps) is COMPENSATING instead: what follows is
  tickwork.model.workflow.compensation's to decide.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tickwork.model.states import SkipReason
from tickwork.model.workflow.definition import Dag, TriggerRule
from tickwork.model.workflow.expressions import ExpressionFailed, holds, resolve_payload

# The error types of a step whose run is created FAILED, never run (StepStart.error).
PAYLOAD_TOO_LARGE = "StepPayloadTooLarge"
EXPRESSION_FAILED = "StepExpressionError"
UPSTREAM_RESULT_TOO_LARGE = "StepUpstreamResultTooLarge"

# The most of an upstream result a condition or `$from` may read (4 job payloads): a larger one is not read into
# memory, and the step reading it FAILS.
MAX_READ_RESULT_BYTES = 1024 * 1024


@dataclass(frozen=True)
class OversizedResult:
    """Stands in `results` for an upstream result that was not read: it is `size` bytes, over `max_bytes`."""

    size: int
    max_bytes: int


class StepStatus(StrEnum):
    """A step's state as its workflow run records it. QUEUED: its run exists (the run says how it goes)."""

    PENDING = "PENDING"
    QUEUED = "QUEUED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"

    @property
    def terminal(self) -> bool:
        return self in (StepStatus.SUCCEEDED, StepStatus.FAILED, StepStatus.SKIPPED)


class WorkflowRunStatus(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"  # the occurrence itself did not run (paused, misfired), as a job's run is skipped
    CANCELLED = "CANCELLED"
    # It failed (or was cancelled asking for it), and its succeeded steps are being compensated
    # (tickwork.model.workflow.compensation); then every compensation SUCCEEDED, or one FAILED.
    COMPENSATING = "COMPENSATING"
    COMPENSATED = "COMPENSATED"
    COMPENSATION_FAILED = "COMPENSATION_FAILED"

    @property
    def terminal(self) -> bool:
        return self not in (WorkflowRunStatus.RUNNING, WorkflowRunStatus.COMPENSATING)

    @property
    def in_progress(self) -> bool:
        """Moving on: in the due index for reconciliation, its steps' or compensations' ends recorded."""
        return not self.terminal


@dataclass(frozen=True)
class StepState:
    status: StepStatus = StepStatus.PENDING
    skip_reason: SkipReason | None = None


@dataclass(frozen=True)
class StepStart:
    """A step to start: its run is created with this payload. `error` set: the step cannot run (its payload,
    filled from upstream results, is too large, or its condition or a `$from` cannot be evaluated): the run is
    created FAILED with it (of type `error_type`), not run."""

    step_id: str
    payload: dict[str, Any]
    error: str | None = None
    error_type: str | None = None


@dataclass(frozen=True)
class AdvancePlan:
    start: list[StepStart] = field(default_factory=list)
    skip: list[tuple[str, SkipReason]] = field(default_factory=list)
    # The run's end, if every step is terminal once this plan is applied (steps started now are not).
    status: WorkflowRunStatus | None = None


def _fails(state: StepState) -> bool:
    return state.status is StepStatus.FAILED or (
        state.status is StepStatus.SKIPPED and state.skip_reason is SkipReason.UPSTREAM_FAILED
    )


def rule_outcome(rule: TriggerRule, upstream: list[StepState]) -> SkipReason | None:
    """None if the rule holds over these (terminal) upstream states, else why the step is skipped."""
    if not upstream:
        return None  # a root step starts at the occurrence
    succeeded = sum(s.status is StepStatus.SUCCEEDED for s in upstream)
    failed = sum(_fails(s) for s in upstream)
    because = SkipReason.UPSTREAM_FAILED if failed else SkipReason.UPSTREAM_SKIPPED
    match rule:
        case TriggerRule.ALL_SUCCESS:
            return None if succeeded == len(upstream) else because
        case TriggerRule.ALL_DONE:
            return None
        case TriggerRule.ALL_FAILED:
            return None if failed == len(upstream) else SkipReason.RULE_NOT_MET
        case TriggerRule.ONE_SUCCESS:
            return None if succeeded else because
        case TriggerRule.ONE_FAILED:
            return None if failed else SkipReason.RULE_NOT_MET
        case TriggerRule.NONE_FAILED:
            return None if not failed else SkipReason.UPSTREAM_FAILED


def deciding_reads(dag: Dag, states: Mapping[str, StepState]) -> set[str]:
    """The SUCCEEDED steps whose results `plan_advance` may read now: those the PENDING steps' conditions and
    `$from` values read (the caller fetches these, and only these, from the results store). Every PENDING
    step, not only those decidable now: a skip decided in the plan can make a downstream step decidable in
    the same plan."""

    def status(sid: str) -> StepStatus:
        return states.get(sid, StepState()).status

    pending = [sid for sid in dag.order if status(sid) is StepStatus.PENDING]
    return {up for sid in pending for up in dag.reads(sid) if status(up) is StepStatus.SUCCEEDED}


def plan_advance(
    dag: Dag,
    states: Mapping[str, StepState],
    results: Mapping[str, Any],
    *,
    max_payload_bytes: int,
    cancelled: bool = False,
) -> AdvancePlan:
    """Decide every PENDING step that can be decided now. `results` holds the result of each SUCCEEDED step in
    `deciding_reads(dag, states)` (a result missing there reads as null). A cancelled run starts nothing: its
    PENDING steps are SKIPPED `cancelled`."""
    after = {sid: states.get(sid, StepState()) for sid in dag.order}
    start: list[StepStart] = []
    skip: list[tuple[str, SkipReason]] = []
    for sid in dag.topological:
        if after[sid].status is not StepStatus.PENDING:
            continue
        step = dag.steps[sid]
        if cancelled:
            skip.append((sid, SkipReason.CANCELLED))
            after[sid] = StepState(StepStatus.SKIPPED, SkipReason.CANCELLED)
            continue
        upstream = [after[up] for up in step.depends_on]
        if not all(s.status.terminal for s in upstream):
            continue
        reason = rule_outcome(step.trigger_rule, upstream)
        document: dict[str, Any] = {}
        unreadable = _unreadable(dag, sid, results) if reason is None else None
        if unreadable is not None:
            start.append(unreadable)
            after[sid] = StepState(StepStatus.QUEUED)
            continue
        if reason is None and (step.condition or dag.reads(sid)):
            document = _document(dag, sid, after, results)
            try:
                if step.condition and not holds(step.condition, document):
                    reason = SkipReason.CONDITION_FALSE
            except ExpressionFailed as exc:
                # Decided as a failure: the same upstream results would fail the same way at every look.
                start.append(_unmade(sid, EXPRESSION_FAILED, f"step {sid!r}: {exc}"))
                after[sid] = StepState(StepStatus.QUEUED)
                continue
        if reason is not None:
            skip.append((sid, reason))
            after[sid] = StepState(StepStatus.SKIPPED, reason)
            continue
        start.append(_start(sid, step.payload, document, max_payload_bytes))
        after[sid] = StepState(StepStatus.QUEUED)
    status = workflow_status(dag, after)
    if status is WorkflowRunStatus.FAILED and compensated_steps(dag, after):
        status = WorkflowRunStatus.COMPENSATING
    return AdvancePlan(start=start, skip=skip, status=status)


def step_start(
    dag: Dag, step_id: str, states: Mapping[str, StepState], results: Mapping[str, Any], *, max_payload_bytes: int
) -> StepStart:
    """A started step's run as plan_advance made it: its payload resolved over the same upstream states and
    results (which read the same once the step has started: its upstream steps are terminal). For re-creating
    the run of a step recorded QUEUED whose run is missing (its creator died between the two writes)."""
    unreadable = _unreadable(dag, step_id, results)
    if unreadable is not None:
        return unreadable
    document = _document(dag, step_id, states, results) if dag.reads(step_id) else {}
    return _start(step_id, dag.steps[step_id].payload, document, max_payload_bytes)


def compensation_start(
    dag: Dag, step_id: str, states: Mapping[str, StepState], results: Mapping[str, Any], *, max_payload_bytes: int
) -> StepStart:
    """A step's compensation's run: its `compensate` payload resolved over the step's own result and its upstream
    steps' (`results` holds those of dag.compensation_reads(step_id)). Unmade, as a step's run is, when that
    cannot be done."""
    compensate = dag.steps[step_id].compensate
    assert compensate is not None, f"step {step_id!r} has no compensate"
    reads = dag.compensation_reads(step_id)
    unreadable = _unreadable(dag, step_id, results, reads)
    if unreadable is not None:
        return unreadable
    document = _document(dag, step_id, states, results, itself=True) if reads else {}
    return _start(step_id, compensate.payload, document, max_payload_bytes)


def _unreadable(dag: Dag, sid: str, results: Mapping[str, Any], reads: set[str] | None = None) -> StepStart | None:
    """The step FAILS, unmade, if its condition or a `$from` reads an upstream result too large to be read."""
    for up in sorted(dag.reads(sid) if reads is None else reads):
        found = results.get(up)
        if isinstance(found, OversizedResult):
            error = (
                f"step {sid!r} reads the result of step {up!r} (its condition or a $from), and the result of step "
                f"{up!r} is {found.size} bytes, over the {found.max_bytes} bytes a condition or $from may read: "
                f"have {up!r} return a smaller result (a reference to the data, such as its location)"
            )
            return _unmade(sid, UPSTREAM_RESULT_TOO_LARGE, error)
    return None


def _document(
    dag: Dag, sid: str, states: Mapping[str, StepState], results: Mapping[str, Any], *, itself: bool = False
) -> dict[str, Any]:
    """What a step's condition and `$from` values read: its upstream steps' statuses and results (and, for its
    compensation, its own)."""
    readable = dag.ancestors[sid] | ({sid} if itself else set())
    return {
        "steps": {
            up: {
                "status": states[up].status.value,
                "result": results.get(up) if states[up].status is StepStatus.SUCCEEDED else None,
            }
            for up in sorted(readable)
        }
    }


def _start(sid: str, template: dict[str, Any], document: dict[str, Any], max_payload_bytes: int) -> StepStart:
    try:
        payload = resolve_payload(template, document) if document else template
    except ExpressionFailed as exc:
        return _unmade(sid, EXPRESSION_FAILED, f"step {sid!r}: {exc}")
    size = len(json.dumps(payload, separators=(",", ":")).encode())
    if size > max_payload_bytes:
        error = (
            f"the payload of step {sid!r}, filled from upstream results, is {size} bytes, over the limit of "
            f"{max_payload_bytes}: pass a smaller value (a reference to the result, such as its location)"
        )
        return _unmade(sid, PAYLOAD_TOO_LARGE, error)
    return StepStart(sid, payload)


def _unmade(sid: str, error_type: str, error: str) -> StepStart:
    return StepStart(sid, {}, error, error_type)


def compensated_steps(dag: Dag, states: Mapping[str, StepState]) -> list[str]:
    """The steps a failed (or cancelled and compensated) run compensates, in dependency order: each step that
    SUCCEEDED and has a `compensate`, except the upstream steps of an `irreversible` step that SUCCEEDED (past
    it, their effects are kept)."""

    def succeeded(sid: str) -> bool:
        return states.get(sid, StepState()).status is StepStatus.SUCCEEDED

    kept = {up for sid in dag.order if dag.steps[sid].irreversible and succeeded(sid) for up in dag.ancestors[sid]}
    return [sid for sid in dag.topological if succeeded(sid) and dag.steps[sid].compensate and sid not in kept]


def workflow_status(dag: Dag, states: Mapping[str, StepState]) -> WorkflowRunStatus | None:
    """The run's end once every step is terminal (None while any is not): FAILED if a failure reached a leaf
    step unhandled, else SUCCEEDED. A failure is carried down through skipped steps, and handled (stopped)
    by a step that ran and SUCCEEDED."""
    if not all(states.get(sid, StepState()).status.terminal for sid in dag.order):
        return None
    carries: dict[str, bool] = {}
    for sid in dag.topological:
        state = states[sid]
        if state.status is StepStatus.SUCCEEDED:
            carries[sid] = False
        elif state.status is StepStatus.FAILED:
            carries[sid] = True
        else:
            carries[sid] = _fails(state) or any(carries[up] for up in dag.steps[sid].depends_on)
    return WorkflowRunStatus.FAILED if any(carries[leaf] for leaf in dag.leaves) else WorkflowRunStatus.SUCCEEDED
