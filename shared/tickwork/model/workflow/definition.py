"""What a workflow is: a schedule, and steps that form a DAG. Pure: the checks a definition passes before anything
is written, and the graph questions the rest of the code asks (roots, ancestors, downstream steps).

A step is a job type and payload, like a job, with `depends_on` (the steps it waits for), a `trigger_rule`
(which outcomes of those let it run), an optional `condition` (JMESPath over its upstream steps' results)
and payload values `{"$from": <JMESPath>}` filled from those results when its run is created. Each step may
override the workflow's `retry`, `timeout_seconds` and `priority`. A step may carry a `compensate` (what undoes
it when its workflow run fails: tickwork.model.workflow.compensation), or be `irreversible`, and a `deadline`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from tickwork.model.blocking import CalendarIds, OnBlocked
from tickwork.model.deadlines import Deadline
from tickwork.model.errors import FieldError
from tickwork.model.ids import STEP_ID_PATTERN
from tickwork.model.job import ScheduledLifecycle, _InBand, _JobIdentity
from tickwork.model.policies import (
    ConcurrencyLimit,
    JobName,
    JobTypeName,
    MisfireGraceSeconds,
    OrderingKey,
    Priority,
    RateLimit,
    RetryPolicy,
    StoredTags,
    TimeoutSeconds,
)
from tickwork.model.schedule import Schedule
from tickwork.model.variants import Variants
from tickwork.model.workflow.expressions import (
    ALL_STEPS,
    FROM_KEY,
    compile_expression,
    from_references,
    referenced_steps,
)

MAX_STEPS = 100
StepId = Annotated[str, Field(pattern=f"^{STEP_ID_PATTERN}$", description="Letters, digits, _ and -; 1 to 64.")]
Condition = Annotated[str, Field(min_length=1, max_length=2000)]


class TriggerRule(StrEnum):
    """Which outcomes of a step's `depends_on` let it run, once they are all terminal (Airflow's names)."""

    ALL_SUCCESS = "all_success"  # every upstream SUCCEEDED
    ALL_DONE = "all_done"  # whatever they ended as
    ALL_FAILED = "all_failed"  # every upstream failed (FAILED, or skipped as upstream_failed)
    ONE_SUCCESS = "one_success"  # at least one SUCCEEDED
    ONE_FAILED = "one_failed"  # at least one failed
    NONE_FAILED = "none_failed"  # none failed (SUCCEEDED or skipped)


class CompensationOrder(StrEnum):
    REVERSE = "reverse"  # one at a time, the step that finished last first
    PARALLEL = "parallel"  # all at once


class CompensationOnError(StrEnum):
    HALT = "halt"  # a compensation that fails finally stops the chain: the ones not started are skipped
    CONTINUE = "continue"  # it is recorded, and the chain goes on


class CompensationPolicy(BaseModel):
    """How a failed workflow run's compensations run (docs/workflows.md, Compensation)."""

    model_config = ConfigDict(extra="forbid")

    order: CompensationOrder = CompensationOrder.REVERSE
    on_error: CompensationOnError = CompensationOnError.HALT


class StepCompensation(BaseModel):
    """What undoes a step that SUCCEEDED, run when its workflow run fails: a job type and payload (whose `$from`
    values may read the step's own result and its upstream steps'). Absent retry and timeout: the step's."""

    model_config = ConfigDict(extra="forbid")

    type: JobTypeName
    payload: dict[str, Any] = Field(default_factory=dict)
    retry: RetryPolicy | None = None
    timeout_seconds: TimeoutSeconds | None = None


class WorkflowStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: StepId
    type: JobTypeName
    payload: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[StepId] = Field(default_factory=list, max_length=MAX_STEPS)
    trigger_rule: TriggerRule = TriggerRule.ALL_SUCCESS
    condition: Condition | None = None
    # Absent: the workflow's.
    retry: RetryPolicy | None = None
    timeout_seconds: TimeoutSeconds | None = None
    priority: Priority | None = None
    # Absent: none (a step does not take its workflow's: a workflow has none of its own).
    concurrency: ConcurrencyLimit | None = None
    rate_limit: RateLimit | None = None
    compensate: StepCompensation | None = None
    # Its effects cannot be undone, so once it SUCCEEDED its upstream steps keep theirs too (none compensated).
    irreversible: StrictBool = False
    ordering: OrderingKey | None = None
    # As a job's (docs/operations.md, "Deadlines"), counted from its workflow run's occurrence; absent: none.
    deadline: Deadline | None = None
    # Versions of the step run on a share of its runs (tickwork.model.variants, docs/versions.md).
    variants: Variants = Field(default_factory=list)


class WorkflowDefinition(BaseModel):
    """The fields a caller chooses for a workflow, declared once: the stored Workflow and the create body
    (tickwork.control.api_bodies.WorkflowSpec, with stricter schedule instants and tags) both are one."""

    model_config = ConfigDict(extra="forbid")

    name: JobName
    schedule: Schedule
    steps: list[WorkflowStep] = Field(min_length=1, max_length=MAX_STEPS)
    priority: Priority = 5
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    timeout_seconds: TimeoutSeconds = 300
    misfire_grace_seconds: MisfireGraceSeconds = 900
    tags: StoredTags = Field(default_factory=dict)
    compensation: CompensationPolicy = Field(default_factory=CompensationPolicy)
    # As a job's (docs/operations.md): its calendars, and what becomes of an occurrence they or a freeze block.
    calendars: CalendarIds = Field(default_factory=list)
    on_blocked: OnBlocked = OnBlocked.SKIP


class StepSettings:
    """What a step runs with: its own priority, retry and timeout, else its workflow's. Shared by the stored
    Workflow and the snapshot a workflow run keeps (tickwork.model.workflow.runs), which both have these fields."""

    if TYPE_CHECKING:  # the fields of the models that use it (declared here for the type checker only)
        steps: list[WorkflowStep]
        priority: int
        retry: RetryPolicy
        timeout_seconds: int

    @cached_property
    def dag(self) -> Dag:
        return Dag(self.steps)

    def step(self, step_id: str) -> WorkflowStep:
        return self.dag.steps[step_id]

    def step_priority(self, step_id: str) -> int:
        step = self.step(step_id)
        return self.priority if step.priority is None else step.priority

    def step_retry(self, step_id: str) -> RetryPolicy:
        return self.step(step_id).retry or self.retry

    def step_timeout_seconds(self, step_id: str) -> int:
        step = self.step(step_id)
        return self.timeout_seconds if step.timeout_seconds is None else step.timeout_seconds

    def compensation_retry(self, step_id: str) -> RetryPolicy:
        compensate = self.step(step_id).compensate
        return (compensate.retry if compensate else None) or self.step_retry(step_id)

    def compensation_timeout_seconds(self, step_id: str) -> int:
        compensate = self.step(step_id).compensate
        own = compensate.timeout_seconds if compensate else None
        return self.step_timeout_seconds(step_id) if own is None else own


class Workflow(ScheduledLifecycle, WorkflowDefinition, _JobIdentity, _InBand, StepSettings):
    """A stored workflow: id and tenant, its definition, and the same lifecycle as a job's."""

    model_config = ConfigDict(extra="forbid")

    def next_occurrence_after(self, instant: datetime) -> datetime | None:
        return self.schedule.next_after(instant, anchor=self.created_at, hash_key=self.id)

    @property
    def roots_deadline_seconds(self) -> int | None:
        """The soonest deadline among its root steps (None: none has one): the first runs of an occurrence's
        claim must end within this of the occurrence."""
        deadlines = [d.within_seconds for sid in self.dag.roots if (d := self.step(sid).deadline) is not None]
        return min(deadlines, default=None)


class Dag:
    """The steps as a graph. Built from checked steps (see check_steps), so ids are unique and it is acyclic."""

    def __init__(self, steps: Sequence[WorkflowStep]) -> None:
        self.steps = {step.id: step for step in steps}
        self.order = [step.id for step in steps]  # as the caller listed them: a stable order for every answer
        self.downstream: dict[str, list[str]] = {sid: [] for sid in self.order}
        for step in steps:
            for upstream in step.depends_on:
                self.downstream[upstream].append(step.id)

    @cached_property
    def topological(self) -> list[str]:
        """Every step after the steps it depends on; among the ready ones, in the caller's order."""
        done: set[str] = set()
        out: list[str] = []
        while len(out) < len(self.order):
            for sid in self.order:
                if sid not in done and all(up in done for up in self.steps[sid].depends_on):
                    done.add(sid)
                    out.append(sid)
                    break
        return out

    @property
    def roots(self) -> list[str]:
        return [sid for sid in self.order if not self.steps[sid].depends_on]

    @property
    def leaves(self) -> list[str]:
        return [sid for sid in self.order if not self.downstream[sid]]

    @cached_property
    def ancestors(self) -> dict[str, set[str]]:
        """Each step's upstream steps, transitively."""
        found: dict[str, set[str]] = {}

        def of(sid: str) -> set[str]:
            if sid not in found:
                found[sid] = set()
                for up in self.steps[sid].depends_on:
                    found[sid] |= {up} | of(up)
            return found[sid]

        for sid in self.order:
            of(sid)
        return found

    def reads(self, step_id: str) -> set[str]:
        """The upstream steps whose results the step's condition and `$from` values read."""
        step = self.steps[step_id]
        expressions = [step.condition] if step.condition else []
        expressions += [ref[FROM_KEY] for _, ref in from_references(step.payload)]
        read: set[str] = set()
        for text in expressions:
            refs = referenced_steps(text)
            read |= self.ancestors[step_id] if refs is ALL_STEPS else refs
        return read & self.ancestors[step_id]

    def compensation_reads(self, step_id: str) -> set[str]:
        """The steps whose results the step's compensation's `$from` values read: the step itself and its
        upstream steps."""
        compensate = self.steps[step_id].compensate
        if compensate is None:
            return set()
        readable = self.ancestors[step_id] | {step_id}
        read: set[str] = set()
        for _, ref in from_references(compensate.payload):
            refs = referenced_steps(ref[FROM_KEY])
            read |= readable if refs is ALL_STEPS else refs
        return read & readable


def check_steps(steps: Sequence[WorkflowStep]) -> list[FieldError]:
    """What is wrong with a DAG, each error at its field (`steps[2].depends_on[0]`); empty when nothing is.

    Ids unique; every dependency a known step other than itself, listed once; no cycle; every condition and
    `$from` valid JMESPath that reads only upstream steps. (Each step's type and payload are the factory's to
    check, as for jobs.)"""
    errors: list[FieldError] = []
    index: dict[str, int] = {}
    for i, step in enumerate(steps):
        if step.id in index:
            errors.append(FieldError(f"steps[{i}].id", f"duplicate step id {step.id!r} (also steps[{index[step.id]}])"))
        else:
            index[step.id] = i
    for i, step in enumerate(steps):
        seen: set[str] = set()
        for k, upstream in enumerate(step.depends_on):
            field = f"steps[{i}].depends_on[{k}]"
            if upstream == step.id:
                errors.append(FieldError(field, f"step {step.id!r} cannot depend on itself"))
            elif upstream not in index:
                errors.append(FieldError(field, f"unknown step {upstream!r}"))
            elif upstream in seen:
                errors.append(FieldError(field, f"{upstream!r} is listed twice"))
            seen.add(upstream)
    if errors:
        return errors
    cycle = _find_cycle(steps)
    if cycle:
        first = index[cycle[0]]
        path = " -> ".join([*cycle, cycle[0]])
        return [FieldError(f"steps[{first}].depends_on", f"the steps form a cycle: {path}")]
    dag = Dag(steps)
    for i, step in enumerate(steps):
        ancestors = dag.ancestors[step.id]
        if step.condition is not None:
            errors += _check_expression(f"steps[{i}].condition", step.condition, step.id, ancestors)
        for path, ref in from_references(step.payload):
            field = f"steps[{i}].{path}.{FROM_KEY}"
            if set(ref) != {FROM_KEY} or not isinstance(ref[FROM_KEY], str):
                errors.append(
                    FieldError(field, 'a "$from" object holds exactly one key, "$from", whose value is a string')
                )
                continue
            errors += _check_expression(field, ref[FROM_KEY], step.id, ancestors)
        errors += _check_compensation(i, step, ancestors)
    return errors


def _check_compensation(index: int, step: WorkflowStep, ancestors: set[str]) -> list[FieldError]:
    """A compensation's `$from` values read the step itself or its upstream steps; an irreversible step has
    nothing to compensate."""
    errors: list[FieldError] = []
    if step.compensate is None:
        return errors
    if step.irreversible:
        errors.append(
            FieldError(
                f"steps[{index}].irreversible",
                "an irreversible step cannot have a compensate: its effects are kept (drop one of the two)",
            )
        )
    for path, ref in from_references(step.compensate.payload):
        field = f"steps[{index}].compensate.{path}.{FROM_KEY}"
        if set(ref) != {FROM_KEY} or not isinstance(ref[FROM_KEY], str):
            errors.append(FieldError(field, 'a "$from" object holds exactly one key, "$from", whose value is a string'))
            continue
        errors += _check_expression(field, ref[FROM_KEY], step.id, ancestors | {step.id}, itself=True)
    return errors


def _check_expression(
    field: str, text: str, step_id: str, upstream: set[str], *, itself: bool = False
) -> list[FieldError]:
    try:
        compile_expression(text)
    except ValueError as exc:
        return [FieldError(field, str(exc))]
    refs = referenced_steps(text)
    if refs is ALL_STEPS:
        return []
    what = f"neither {step_id!r} itself nor upstream of it" if itself else f"not upstream of {step_id!r}"
    return [FieldError(field, f"reads step {ref!r}, which is {what}") for ref in sorted(refs - upstream)]


def _find_cycle(steps: Iterable[WorkflowStep]) -> list[str] | None:
    """One cycle, as the steps along it, or None (depth-first, in the caller's order: the answer is stable)."""
    graph = {step.id: step.depends_on for step in steps}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(sid: str) -> list[str] | None:
        state[sid] = 1
        path.append(sid)
        for up in graph[sid]:
            if state.get(up) == 1:
                cycle = path[path.index(up) :]
                return list(reversed(cycle))  # in the direction work flows: upstream first
            if up not in state and (found := visit(up)):
                return found
        path.pop()
        state[sid] = 2
        return None

    for sid in graph:
        if sid not in state and (found := visit(sid)):
            return found
    return None
