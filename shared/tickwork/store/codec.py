"""The item codec: how jobs, workflows and their runs become DynamoDB items and back, and where each item lives.

Pure functions, no client: the keys (job_key, run_key, workflow_run_key, shard_of), the attribute-value
encoding (serialize, deserialize, expression_values) and the model mappings (job_to_item, job_from_attrs,
workflow_to_item, workflow_from_attrs, run_to_attrs, run_from_attrs, workflow_run_to_attrs,
workflow_run_from_attrs). Every other store module builds its requests from these.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from tickwork.model.blocking import OnBlocked
from tickwork.model.clock import to_ms
from tickwork.model.forecast_uses import job_forecast
from tickwork.model.forecasts import JobForecasts
from tickwork.model.ids import ItemKind, parse_run_id, parse_workflow_run_id
from tickwork.model.job import Job
from tickwork.model.run import Run
from tickwork.model.states import JobState, RunTrigger
from tickwork.model.workflow.definition import Workflow
from tickwork.model.workflow.runs import WorkflowRunRecord

_ser = TypeSerializer()
_des = TypeDeserializer()


# What a tenant name may be. Tenants are derived from identities (IAM role names and account ids, or the local
# keys file) and become part of keys (T#<tenant>#JOB, IDEM#<tenant>#<key>), where '#' is the separator and so
# never allowed.
TENANT = re.compile(r"^[A-Za-z0-9_.:=+,@/-]{1,128}$")


# The runs-index's shards of a tenant's runs (tickwork.store.run_search). Part of every run's key there: never changed.
RUN_SEARCH_SHARDS = 8


def run_search_keys(run: Run) -> dict[str, str]:
    """A run's runs-index keys: its tenant's partition of its job's shard, and its scheduled instant then id."""
    return {
        "runs_key": f"{run.tenant}#{shard_of(run.job_id, RUN_SEARCH_SHARDS)}",
        "runs_sort": f"{to_ms(run.scheduled_for):013d}#{run.id}",
    }


def shard_of(job_id: str, shards: int) -> str:
    """Stable shard for a job and all its runs. Shards may grow, never shrink (old ones stay queried)."""
    return str(zlib.crc32(job_id.encode()) % shards)


def job_key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}}


def run_key(run_id: str) -> dict[str, Any]:
    parsed = parse_run_id(run_id)
    if parsed is None:
        raise ValueError(f"not a run id: {run_id!r}")
    suffix = "#m" if parsed.trigger is RunTrigger.MANUAL else ""
    when = f"{to_ms(parsed.scheduled_for):013d}{suffix}"
    # A step's run sorts under STEP#, apart from the workflow runs (RUN#), so a workflow's runs page alone.
    # A compensation's run sorts just after its step's (`#c`: a step id holds no `#`).
    sort = f"RUN#{when}" if parsed.step_id is None else f"STEP#{when}#{parsed.step_id}"
    if parsed.compensation:
        sort += "#c"
    return {"pk": {"S": f"JOB#{parsed.job_id}"}, "sk": {"S": sort}}


def workflow_run_key(workflow_run_id: str) -> dict[str, Any]:
    """A workflow run sorts among its workflow's runs (RUN#<ms>[#m]); its steps' runs sort under STEP#."""
    parsed = parse_workflow_run_id(workflow_run_id)
    if parsed is None:
        raise ValueError(f"not a workflow run id: {workflow_run_id!r}")
    suffix = "#m" if parsed.trigger is RunTrigger.MANUAL else ""
    return {"pk": {"S": f"JOB#{parsed.job_id}"}, "sk": {"S": f"RUN#{to_ms(parsed.scheduled_for):013d}{suffix}"}}


def _plain(value: Any) -> Any:
    """DynamoDB's Decimals back to int/float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set):
        return [_plain(v) for v in value]
    return value


def _dynamo(value: Any) -> Any:
    """JSON-ish Python to what TypeSerializer takes (floats become Decimals, None values dropped)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_dynamo(v) for v in value]
    return value


def serialize(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(_dynamo(v)) for k, v in attrs.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(_des.deserialize(v)) for k, v in item.items()}


def expression_values(**values: Any) -> dict[str, Any]:
    """`ExpressionAttributeValues` from keyword arguments: `expression_values(v=3)` is `{":v": {"N": "3"}}`."""
    return {f":{k}": _ser.serialize(_dynamo(v)) for k, v in values.items()}


# ---------------------------------------------------------------- item <-> model


# A job's variants, as JSON text (as its payload is: a variant's payload patch keeps its nulls and its numbers as
# written), stored only when it has some.
VARIANTS_JSON = "variants_json"


def job_to_item(job: Job, shards: int) -> dict[str, Any]:
    item = _scheduled_item(job, ItemKind.JOB, "payload_json", job.payload, shards)
    del item["variants"]
    if job.variants:
        variants = [v.model_dump(mode="json", exclude_none=True) for v in job.variants]
        item[VARIANTS_JSON] = {"S": json_text(variants)}
    return item


# A workflow item's soonest root step deadline (Workflow.roots_deadline_seconds), absent when no root has one: its
# due-index entry competes with it in a held-back tick (earliest deadline first) as a job's does with `deadline`.
ROOTS_DEADLINE_SECONDS = "roots_deadline_seconds"


def workflow_to_item(workflow: Workflow, shards: int) -> dict[str, Any]:
    """A workflow sits where a job would (pk=JOB#<id>, sk=JOB, `job_id`), so the due index's projection and the
    claim read it as they read a job; its steps are JSON text, as a job's payload is."""
    steps = [step.model_dump(mode="json", exclude_none=True, exclude_defaults=True) for step in workflow.steps]
    within = workflow.roots_deadline_seconds
    derived = {ROOTS_DEADLINE_SECONDS: within} if within is not None else {}
    return _scheduled_item(workflow, ItemKind.WORKFLOW, "steps_json", steps, shards, derived)


def _scheduled_item(
    thing: Job | Workflow,
    kind: ItemKind,
    text_name: str,
    text: Any,
    shards: int,
    derived: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The item of a job or a workflow: its fields, one of them as JSON text, what the tick reads `derived` from
    them, its tenant-index entry, and its due-index entry while it is ACTIVE (or SUSPENDED) with a next
    occurrence."""
    # `forecast` is an answer's (derived from the stored `forecasts`, which only the claim's advance writes).
    data = thing.model_dump(mode="json", exclude={"id", "payload", "steps", "forecast"})
    # Without calendars (the common case) neither field is stored: every write of the item and of its due-index
    # entry stays as small as before them (the defaults read back).
    if not thing.calendars:
        data.pop("calendars")
    if thing.on_blocked is OnBlocked.SKIP:
        data.pop("on_blocked")
    attrs: dict[str, Any] = {
        "pk": f"JOB#{thing.id}",
        "sk": "JOB",
        "kind": kind.value,
        "job_id": thing.id,
        text_name: json_text(text),
        "tenant_key": f"T#{thing.tenant}#{kind.value}",
        "tenant_sort": f"{to_ms(thing.created_at):013d}#{thing.id}",
        **data,
        **(derived or {}),
    }
    # A SUSPENDED job stays due: its claims record the skips (circuit_open) and queue its probe on time.
    if thing.state in (JobState.ACTIVE, JobState.SUSPENDED) and thing.next_run_at is not None:
        attrs["due_shard"] = shard_of(thing.id, shards)
        attrs["due_at"] = to_ms(thing.next_run_at)
    return serialize(attrs)


_JOB_FIELDS = set(Job.model_fields)
_RUN_FIELDS = set(Run.model_fields) - {"payload"}
_WORKFLOW_FIELDS = set(Workflow.model_fields)
_WORKFLOW_RUN_FIELDS = set(WorkflowRunRecord.model_fields) - {"definition"}


def job_from_attrs(attrs: Mapping[str, Any]) -> Job:
    data = {k: v for k, v in attrs.items() if k in _JOB_FIELDS and k != "forecast"}
    data["id"] = attrs["job_id"]
    data["payload"] = json.loads(attrs.get("payload_json") or "{}")
    data["variants"] = json.loads(attrs.get(VARIANTS_JSON) or "[]")
    job = Job.model_validate(data)
    forecasts = stored_forecasts(attrs)
    if forecasts is None:
        return job
    shown = job_forecast(
        forecasts.view(),
        next_run_at=job.next_run_at,
        deadline_seconds=job.deadline.within_seconds if job.deadline else None,
        timeout_seconds=job.timeout_seconds,
    )
    return job.model_copy(update={"forecast": shown})


# The job item's attribute that keeps its forecasts (tickwork.model.forecasts.JobForecasts, as JSON text), written by
# the claim's advance only; the due index projects it (the claim folds into it and reads its runs' outlook there).
FORECASTS = "forecasts"


def stored_forecasts(attrs: Mapping[str, Any]) -> JobForecasts | None:
    """A job item's forecasts (None: none yet). One that does not read (written by a newer version) reads as none:
    the next fold starts it again, a forecast is never worth failing a claim or a read for."""
    text = attrs.get(FORECASTS)
    if not text:
        return None
    try:
        return JobForecasts.model_validate_json(text)
    except ValueError:
        return None


def workflow_from_attrs(attrs: Mapping[str, Any]) -> Workflow:
    data = {k: v for k, v in attrs.items() if k in _WORKFLOW_FIELDS}
    data["id"] = attrs["job_id"]
    data["steps"] = json.loads(attrs["steps_json"])
    return Workflow.model_validate(data)


def run_to_attrs(run: Run) -> dict[str, Any]:
    """A run's attributes. A step's payload is JSON text (as a job's is), so that its size as stored is its
    size as JSON: a map would bill every number at up to 21 bytes."""
    data = run.model_dump(mode="json", exclude={"id", "payload"})
    attrs = _run_item(ItemKind.RUN, run_key(run.id), run.id, data) | run_search_keys(run)
    if run.payload is not None:
        attrs["payload_json"] = json_text(run.payload)
    if run.not_before is not None:  # the lease's condition reads it (a jittered run's start, tickwork.model.jitter)
        attrs["not_before_ms"] = to_ms(run.not_before)
    return attrs


def run_from_attrs(attrs: Mapping[str, Any]) -> Run:
    return Run.model_validate(_run_fields(attrs, _RUN_FIELDS, "payload"))


def workflow_run_to_attrs(record: WorkflowRunRecord) -> dict[str, Any]:
    """A workflow run's attributes; its definition is JSON text (written once, never updated in place)."""
    data = record.model_dump(mode="json", exclude={"id", "definition"}, exclude_none=True)
    attrs = _run_item(ItemKind.WORKFLOW_RUN, workflow_run_key(record.id), record.id, data)
    if record.definition is not None:
        attrs["definition_json"] = json_text(
            record.definition.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
        )
    return attrs


def workflow_run_from_attrs(attrs: Mapping[str, Any]) -> WorkflowRunRecord:
    return WorkflowRunRecord.model_validate(_run_fields(attrs, _WORKFLOW_RUN_FIELDS, "definition"))


def _run_item(kind: ItemKind, key: Mapping[str, Any], run_id: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A run's (or a workflow run's) attributes: its key, kind and id, then its fields."""
    return {"pk": key["pk"]["S"], "sk": key["sk"]["S"], "kind": kind.value, "run_id": run_id, **data}


def _run_fields(attrs: Mapping[str, Any], fields: set[str], text_field: str) -> dict[str, Any]:
    """A run's (or a workflow run's) fields from its attributes: its id, and the one field kept as JSON text
    (`<field>_json`) where it is stored."""
    data = {k: v for k, v in attrs.items() if k in fields}
    data["id"] = attrs["run_id"]
    if f"{text_field}_json" in attrs:
        data[text_field] = json.loads(attrs[f"{text_field}_json"])
    return data


def json_text(value: Any) -> str:
    """A JSON-text attribute's value (a payload, a definition): compact, keys sorted."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
