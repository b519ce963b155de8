"""What a valid workflow is: a caller's spec made into a checked Workflow, and the checks a change must pass too.

Nothing here writes. Bad input raises InvalidInput naming every offending field (`steps[2].depends_on[0]`,
`steps[1].payload.url`, `steps[0].type`), and nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from tickwork.control.api_bodies import WorkflowSpec
from tickwork.control.calendars import check_calendars_visible
from tickwork.control.job_factory import JobFactory
from tickwork.jobtypes import UnknownJobType, registry
from tickwork.model.clock import to_ms
from tickwork.model.errors import FieldError, InvalidInput, ItemTooLarge, TooLarge, field_path
from tickwork.model.ids import new_workflow_id
from tickwork.model.policies import MAX_PAYLOAD_BYTES
from tickwork.model.targets import DEFAULT_TARGETS, TargetRules
from tickwork.model.variants import variant_errors
from tickwork.model.workflow.definition import Workflow, WorkflowStep, check_steps
from tickwork.model.workflow.expressions import from_references
from tickwork.store import item_bytes
from tickwork.store.calendars import CalendarRecords
from tickwork.store.codec import workflow_to_item

# The workflow item, and every workflow run item (which holds the same steps as its snapshot, plus a map of at
# most MAX_STEPS small entries), must fit DynamoDB's 400 KB: the workflow is checked against this as stored.
MAX_WORKFLOW_ITEM_BYTES = 300 * 1024

_PATH_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


@dataclass(frozen=True)
class WorkflowFactory:
    """Builds checked workflows from specs. `shards` is the store's (the item is measured as it would be stored)."""

    shards: int
    targets: TargetRules = DEFAULT_TARGETS  # as JobFactory's
    calendars: CalendarRecords | None = None  # as JobFactory's

    def new_workflow(
        self, tenant: str, spec: WorkflowSpec, *, now: datetime, workflow_id: str | None = None
    ) -> Workflow:
        """The workflow `spec` describes (under `workflow_id`, else a new id), checked (DAG, each step's type and
        payload, size, a future occurrence); nothing is written."""
        self.check_steps(tenant, spec.steps)
        check_calendars_visible(self.calendars, tenant, spec.calendars, now=now)
        workflow = Workflow(
            id=workflow_id or new_workflow_id(to_ms(now)),
            tenant=tenant,
            created_at=now,
            updated_at=now,
            **spec.model_dump(exclude={"schedule", "retry", "steps"}),
            schedule=spec.schedule.stored(),
            retry=spec.retry,
            steps=spec.steps,
        )
        workflow = workflow.model_copy(update={"next_run_at": self.first_occurrence(workflow, now)})
        self.check_item_size(workflow)
        return workflow

    def first_occurrence(self, workflow: Workflow, now: datetime) -> datetime:
        return JobFactory(self.shards, self.targets).first_occurrence(workflow, now)

    def check_steps(self, tenant: str, steps: Sequence[WorkflowStep]) -> None:
        """The DAG (tickwork.model.workflow.definition.check_steps), then each step's type and payload as its type's
        model reads it for `tenant` (the secrets it names its own), and each compensation's too. A `$from` value stands for a value only known when the step
        starts: the payload's model is not asked about it. Every error, at its field."""
        errors = check_steps(steps)
        for index, step in enumerate(steps):
            errors += self._step_errors(tenant, index, step)
        if errors:
            raise InvalidInput(errors)

    def _step_errors(self, tenant: str, index: int, step: WorkflowStep) -> list[FieldError]:
        errors = self._typed_errors(tenant, f"steps[{index}]", step.type, step.payload)
        if step.compensate is not None:
            compensate = step.compensate
            errors += self._typed_errors(tenant, f"steps[{index}].compensate", compensate.type, compensate.payload)
        return errors + variant_errors(
            step.variants,
            at=f"steps[{index}].",
            job_type=step.type,
            payload=step.payload,
            registered=registry.names(),
            typed_errors=lambda place, kind, merged: self._typed_errors(tenant, place, kind, merged),
        )

    def _typed_errors(self, tenant: str, at: str, type_name: str, payload: dict[str, Any]) -> list[FieldError]:
        """A type and payload (a step's, or its compensation's, at `at`) as the type's model reads them."""
        try:
            kind = registry.get(type_name)
        except UnknownJobType as exc:
            return [FieldError(f"{at}.type", str(exc))]
        size = len(json.dumps(payload, separators=(",", ":")).encode())
        if size > MAX_PAYLOAD_BYTES:
            raise TooLarge(f"{at}.payload", f"{size} bytes exceeds the limit of {MAX_PAYLOAD_BYTES} bytes")
        try:
            kind.parse(payload, context=self.targets.context(tenant))
        except ValidationError as exc:
            filled = [_location(path) for path, _ in from_references(payload)]
            return [
                FieldError(
                    field_path([f"{at}.payload", *err["loc"]]),
                    err["msg"].removeprefix("Value error, "),
                )
                for err in exc.errors()
                if not any(tuple(err["loc"][: len(place)]) == place for place in filled)
            ]
        return []

    def check_item_size(self, workflow: Workflow) -> None:
        size = item_bytes(workflow_to_item(workflow, self.shards))
        if size > MAX_WORKFLOW_ITEM_BYTES:
            raise ItemTooLarge("steps", size, MAX_WORKFLOW_ITEM_BYTES, "the steps and their payloads, as stored")


def _location(path: str) -> tuple[Any, ...]:
    """A `from_references` path (`payload.items[2].url`) as a validation error's location (`('items', 2,
    'url')`)."""
    parts = _PATH_PART.findall(path.removeprefix("payload"))
    return tuple(name if name else int(index) for name, index in parts)
