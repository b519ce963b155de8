"""Which compensations a COMPENSATING workflow run starts next, and how it ends: the pure decision.

A workflow run that FAILS with steps to compensate (tickwork.model.workflow.advance.compensated_steps: each step
that SUCCEEDED with a `compensate`, except the upstream steps of an irreversible step that SUCCEEDED) is
COMPENSATING. So is a run cancelled with `compensate`, once its running steps have ended. Each compensation is an
ordinary run; its state is kept in the workflow run's `compensations` map, by the id of the step it undoes.

The rules, as docs/workflows.md states them:
- nothing starts while a step is not terminal (a cancelled run's running steps may still SUCCEED, and then they
  are compensated too);
- `order: "reverse"`: one at a time, in reverse order of the steps' finish (the last to finish first; steps that
  finished at the same instant in reverse dependency order), each once the one before it has ended;
  `"parallel"`: all at once;
- a compensation that FAILED (its attempts exhausted): with `on_error: "halt"` the ones not started are SKIPPED
  `compensation_halted` and the run ends; with `"continue"` the next starts;
- the run ends once every compensation is terminal: COMPENSATED if every one SUCCEEDED, COMPENSATION_FAILED if
  any FAILED; with nothing to compensate, it ends as it would have without compensation (FAILED, or CANCELLED).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tickwork.model.workflow.advance import StepState, StepStatus, WorkflowRunStatus, compensated_steps
from tickwork.model.workflow.definition import CompensationOnError, CompensationOrder, CompensationPolicy, Dag

_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class CompensationPlan:
    start: list[str] = field(default_factory=list)  # the steps whose compensation starts now
    halt: list[str] = field(default_factory=list)  # ...whose compensation is SKIPPED `compensation_halted`
    # The run's end, once this plan is applied (compensations started now are not terminal).
    status: WorkflowRunStatus | None = None


def compensation_order(
    dag: Dag, states: Mapping[str, StepState], finished_at: Mapping[str, datetime | None]
) -> list[str]:
    """The steps to compensate, the one to undo first first: reverse order of finish; at the same instant (or
    with no instant recorded, which sorts first), the later in dependency order first."""
    position = {sid: i for i, sid in enumerate(dag.topological)}

    def finish(sid: str) -> tuple[bool, datetime, int]:
        at = finished_at.get(sid)
        return (at is not None, at or _NEVER, position[sid])

    return sorted(compensated_steps(dag, states), key=finish, reverse=True)


def plan_compensation(
    dag: Dag,
    states: Mapping[str, StepState],
    finished_at: Mapping[str, datetime | None],
    compensations: Mapping[str, StepState],
    policy: CompensationPolicy,
    *,
    cause: WorkflowRunStatus,
) -> CompensationPlan:
    """What a COMPENSATING run does next. `finished_at`: when each step finished; `compensations`: the state of
    each compensation so far (absent: PENDING); `cause`: how the run ends with nothing to compensate (FAILED,
    or CANCELLED)."""
    if not all(states.get(sid, StepState()).status.terminal for sid in dag.order):
        return CompensationPlan()
    order = compensation_order(dag, states, finished_at)
    after = {sid: compensations.get(sid, StepState()).status for sid in order}
    start: list[str] = []
    halt: list[str] = []
    if policy.order is CompensationOrder.PARALLEL:
        start = [sid for sid in order if after[sid] is StepStatus.PENDING]
    else:
        halted = False
        for sid in order:
            status = after[sid]
            if status is StepStatus.PENDING and halted:
                halt.append(sid)
            elif status is StepStatus.PENDING:
                start.append(sid)
                break
            elif status is StepStatus.QUEUED:
                break
            elif status is StepStatus.FAILED and policy.on_error is CompensationOnError.HALT:
                halted = True
    after |= dict.fromkeys(start, StepStatus.QUEUED) | dict.fromkeys(halt, StepStatus.SKIPPED)
    return CompensationPlan(start=start, halt=halt, status=_end(after, cause))


def _end(after: Mapping[str, StepStatus], cause: WorkflowRunStatus) -> WorkflowRunStatus | None:
    if not after:
        return cause
    if not all(status.terminal for status in after.values()):
        return None
    if any(status is StepStatus.FAILED for status in after.values()):
        return WorkflowRunStatus.COMPENSATION_FAILED
    return WorkflowRunStatus.COMPENSATED
