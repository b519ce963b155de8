"""The item codec: how jobs and runs become DynamoDB items and back, and where each item lives.

Pure functions, no client: the keys (job_key, run_key, shard_of), the attribute-value encoding (serialize,
deserialize, expression_values) and the model mappings (job_to_item, job_from_attrs, run_to_attrs,
run_from_attrs). Every other store module builds its requests from these.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from tickwork.clock import to_ms
from tickwork.models import Job, JobState, Run, RunTrigger, parse_run_id

_ser = TypeSerializer()
_des = TypeDeserializer()


# What a tenant name may be. Tenants are derived from identities (IAM role names and account ids, or the local
# keys file) and become part of keys (T#<tenant>#JOB, IDEM#<tenant>#<key>), where '#' is the separator and so
# never allowed.
TENANT = re.compile(r"^[A-Za-z0-9_.:=+,@/-]{1,128}$")


class ItemKind(StrEnum):
    JOB = "JOB"
    RUN = "RUN"


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
    sort = f"RUN#{when}" if parsed.step_id is None else f"STEP#{when}#{parsed.step_id}"
    return {"pk": {"S": f"JOB#{parsed.job_id}"}, "sk": {"S": sort}}


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


def job_to_item(job: Job, shards: int) -> dict[str, Any]:
    data = job.model_dump(mode="json", exclude={"id", "payload"})
    attrs: dict[str, Any] = {
        "pk": f"JOB#{job.id}",
        "sk": "JOB",
        "kind": ItemKind.JOB.value,
        "job_id": job.id,
        "payload_json": json.dumps(job.payload, separators=(",", ":"), sort_keys=True),
        "tenant_key": f"T#{job.tenant}#JOB",
        "tenant_sort": f"{to_ms(job.created_at):013d}#{job.id}",
        **data,
    }
    if job.state is JobState.ACTIVE and job.next_run_at is not None:
        attrs["due_shard"] = shard_of(job.id, shards)
        attrs["due_at"] = to_ms(job.next_run_at)
    return serialize(attrs)


_JOB_FIELDS = set(Job.model_fields)
_RUN_FIELDS = set(Run.model_fields)


def job_from_attrs(attrs: Mapping[str, Any]) -> Job:
    data = {k: v for k, v in attrs.items() if k in _JOB_FIELDS}
    data["id"] = attrs["job_id"]
    data["payload"] = json.loads(attrs.get("payload_json") or "{}")
    return Job.model_validate(data)


def run_to_attrs(run: Run) -> dict[str, Any]:
    data = run.model_dump(mode="json", exclude={"id"})
    key = run_key(run.id)
    return {"pk": key["pk"]["S"], "sk": key["sk"]["S"], "kind": ItemKind.RUN.value, "run_id": run.id, **data}


def run_from_attrs(attrs: Mapping[str, Any]) -> Run:
    data = {k: v for k, v in attrs.items() if k in _RUN_FIELDS}
    data["id"] = attrs["run_id"]
    return Run.model_validate(data)
