"""The audit trail's record: who changed what, when, from where, and how (docs/security.md "Audit trail").

Pure values: the actor and the request's attribution (built by the API from the verified caller and API Gateway's
request context), the record, and the before/after of the fields a change changed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tickwork.model.ids import new_job_id
from tickwork.model.schedule import UtcDatetime

# What a change does not show: the bookkeeping every change moves.
_BOOKKEEPING = frozenset({"version", "updated_at", "updated_by"})
# A field's before or after longer than this (as JSON) is kept as its digest: a record, with both sides of a large
# payload, must stay well inside DynamoDB's 400 KB item.
MAX_CHANGE_BYTES = 16_384


class ActorKind(StrEnum):
    IAM = "iam"  # a SigV4 caller: id is its ARN
    JWT = "jwt"  # a bearer token's subject
    LOCAL_KEY = "local-key"  # the local runtime's caller: id is its tenant, never its key
    SYSTEM = "system"  # the scheduler itself
    CLOUDFORMATION = (
        "cloudformation"  # a stack's custom resource (tickwork.control.cfn_provider): id is the stack's ARN
    )


class Actor(BaseModel):
    """Who acted: `id` identifies it for good (an ARN, a token's subject), `display` is what people read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ActorKind
    id: str = Field(max_length=2048)
    display: str = Field(max_length=512)


SYSTEM = Actor(kind=ActorKind.SYSTEM, id="tickwork", display="tickwork")


class Attribution(BaseModel):
    """An API request's actor and where it came from (API Gateway's requestContext): what every audit record of
    the request carries."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actor: Actor
    request_id: str | None = None
    source_ip: str | None = None
    user_agent: str | None = Field(default=None, max_length=1024)


class AuditResource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["job", "workflow", "run", "workflow_run", "calendar", "freeze", "tenant", "dlq", "region"]
    id: str


class Change(BaseModel):
    """A field's value before and after (absent: the field was not there, as before a create)."""

    model_config = ConfigDict(extra="forbid")

    before: Any = None
    after: Any = None


class AuditRecord(BaseModel):
    """One change, as the audit trail keeps it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    at: UtcDatetime
    actor: Actor
    tenant: str
    action: str = Field(description="What was done, `<resource>.<verb>`: job.create, job.pause, freeze.lift, ...")
    resource: AuditResource
    request_id: str | None = None
    source_ip: str | None = None
    user_agent: str | None = None
    outcome: Literal["succeeded"] = "succeeded"
    changes: dict[str, Change] = Field(default_factory=dict)


def audit_record(
    by: Attribution,
    *,
    tenant: str,
    action: str,
    resource: AuditResource,
    at: datetime,
    before: BaseModel | None = None,
    after: BaseModel | None = None,
    changes: dict[str, Change] | None = None,
) -> AuditRecord:
    """The record of `action` on `resource`, by `by`, changing `before` into `after` (None: created or deleted),
    or, for a change no model shows (a run asked to stop), `changes` as given."""
    return AuditRecord(
        id=new_job_id(int(at.timestamp() * 1000), prefix="a"),
        at=at,
        actor=by.actor,
        tenant=tenant,
        action=action,
        resource=resource,
        request_id=by.request_id,
        source_ip=by.source_ip,
        user_agent=by.user_agent,
        changes=changes if changes is not None else changes_between(before, after),
    )


def changes_between(before: BaseModel | None, after: BaseModel | None) -> dict[str, Change]:
    """The fields that differ between the two (as JSON; secret references stay as they are written), each with
    its before and after; a side too large is kept as its digest (MAX_CHANGE_BYTES)."""
    old = before.model_dump(mode="json", exclude_none=True) if before is not None else {}
    new = after.model_dump(mode="json", exclude_none=True) if after is not None else {}
    return {
        name: Change(before=_bounded(old.get(name)), after=_bounded(new.get(name)))
        for name in sorted(old.keys() | new.keys())
        if name not in _BOOKKEEPING and old.get(name) != new.get(name)
    }


def _bounded(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    if len(text.encode()) <= MAX_CHANGE_BYTES:
        return value
    return {"omitted_bytes": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}
