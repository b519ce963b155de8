"""Reading stored items that may not fit today's models, and measuring items against DynamoDB's 400 KB.

One bad item must never take a whole listing down: readers skip it (logged with its key, counted as the
`UnreadableItems` metric), and a read of that one item says it is unreadable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aws_lambda_powertools.metrics import MetricUnit

from tickwork.model.errors import UnreadableItem
from tickwork.model.job import Job
from tickwork.model.run import Run
from tickwork.model.workflow.definition import Workflow
from tickwork.model.workflow.runs import WorkflowRunRecord
from tickwork.observability import logger, metrics
from tickwork.store.codec import job_from_attrs, run_from_attrs, workflow_from_attrs, workflow_run_from_attrs

# What reading a stored item that does not fit the models raises (pydantic's ValidationError is a ValueError;
# so is bad JSON in payload_json).
UNREADABLE = (ValueError, KeyError, TypeError)

T = TypeVar("T")


def item_bytes(item: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB counts it against its 400 KB limit: attribute names plus values (UTF-8
    strings, numbers at up to 21 bytes, 3 bytes of overhead per map or list and 1 per element)."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: Mapping[str, Any]) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(str(data).encode())
    if kind == "N":
        return 21
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_bytes(v) + 1 for k, v in data.items())
    if kind == "L":
        return 3 + sum(_value_bytes(v) + 1 for v in data)
    if kind in ("SS", "BS"):
        return sum(len(v.encode()) if isinstance(v, str) else len(v) for v in data)
    return 21 * len(data)  # NS


def note_unreadable(attrs: Mapping[str, Any], exc: BaseException) -> None:
    """Log (with the item's key) and count an item the code cannot read; the caller skips it or says so."""
    logger.error(
        "stored item unreadable",
        extra={"item_pk": str(attrs.get("pk")), "item_sk": str(attrs.get("sk")), "reason": str(exc)[:1000]},
    )
    metrics.add_metric(name="UnreadableItems", unit=MetricUnit.Count, value=1)


def read_job(attrs: Mapping[str, Any]) -> Job:
    """job_from_attrs, or UnreadableItem (logged and counted) for an item that does not fit the model."""
    return _read("job", "job_id", job_from_attrs, attrs)


def read_run(attrs: Mapping[str, Any]) -> Run:
    """run_from_attrs, or UnreadableItem (logged and counted) for an item that does not fit the model."""
    return _read("run", "run_id", run_from_attrs, attrs)


def read_workflow(attrs: Mapping[str, Any]) -> Workflow:
    return _read("workflow", "job_id", workflow_from_attrs, attrs)


def read_workflow_run(attrs: Mapping[str, Any]) -> WorkflowRunRecord:
    return _read("workflow run", "run_id", workflow_run_from_attrs, attrs)


def _read(kind: str, id_attribute: str, convert: Callable[[Mapping[str, Any]], T], attrs: Mapping[str, Any]) -> T:
    try:
        return convert(attrs)
    except UNREADABLE as exc:
        note_unreadable(attrs, exc)
        raise UnreadableItem(kind, str(attrs.get(id_attribute) or attrs.get("pk")), str(exc)) from exc
