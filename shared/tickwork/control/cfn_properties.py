"""A CloudFormation custom resource's properties read as the API's request bodies, and what an update of one does:
pure decisions, no I/O (tickwork.control.cfn_provider acts on them).

- **The kinds.** `Custom::TickworkJob` is a `POST /v1/jobs` body (JobSpec), `Custom::TickworkWorkflow` a
  `POST /v1/workflows` body (WorkflowSpec), `Custom::TickworkCalendar` a `POST /v1/calendars` body
  (CalendarDefinition), each beside `Tenant` (whose object it is) and CloudFormation's own `ServiceToken` (and
  `ServiceTimeout`, where the template sets it).
- **Strings.** CloudFormation hands a custom resource every scalar as a string (`priority: 7` arrives as `"7"`),
  where the API takes JSON numbers and booleans only. A string is made the number or boolean the body's JSON Schema
  asks for at that place, and only there (`coerced`): a name of digits stays a string; a payload is read by its job
  type's payload model's schema, and a payload given as a JSON string (`!Sub '{"n": 1}'`) is parsed. Then the body
  is checked by the API's own model, as the API checks it.
- **An update** (`plan_update`) changes the object in place (the API's PATCH: the fields whose values differ, or a
  calendar's PUT), or replaces it (a new object, a new physical id, the old one then deleted by CloudFormation)
  where the API cannot change a field in place: another `Tenant`, a job's `type`, or a field given before and
  removed now whose default is no value (a PATCH cannot send null). A replacement is planned against the live
  object too (`properties_of`): CloudFormation's rollback of an update refused for such a field sends it back as
  the old properties, though the object never had it, and the object as it is needs no replacement then.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from tickwork.control.api_bodies import JobSpec, JobUpdate, WorkflowSpec, WorkflowUpdate
from tickwork.jobtypes import registry
from tickwork.model.calendars import CalendarDefinition
from tickwork.model.errors import InvalidInput

TENANT_PROPERTY = "Tenant"
SERVICE_TOKEN = "ServiceToken"  # noqa: S105 - CloudFormation's own property (which provider), not a secret
SERVICE_TIMEOUT = "ServiceTimeout"  # CloudFormation's own too: how long it waits for the answer
NOT_THE_BODY = frozenset({TENANT_PROPERTY, SERVICE_TOKEN, SERVICE_TIMEOUT})


class ResourceKind(StrEnum):
    JOB = "Custom::TickworkJob"
    WORKFLOW = "Custom::TickworkWorkflow"
    CALENDAR = "Custom::TickworkCalendar"

    @property
    def noun(self) -> str:
        return self.name.lower()

    @property
    def spec_model(self) -> type[BaseModel]:
        models: dict[str, type[BaseModel]] = {"JOB": JobSpec, "WORKFLOW": WorkflowSpec, "CALENDAR": CalendarDefinition}
        return models[self.name]

    @property
    def id_pattern(self) -> re.Pattern[str]:
        """The ids the API gives this kind (the physical ids a create of it answers)."""
        return re.compile(f"^{self.name[0].lower()}[0-9a-z]{{25}}$")


def resource_kind(resource_type: str) -> ResourceKind:
    """The kind a request's ResourceType names; InvalidInput naming the ones there are, otherwise."""
    try:
        return ResourceKind(resource_type)
    except ValueError:
        known = ", ".join(kind.value for kind in ResourceKind)
        raise InvalidInput.one("ResourceType", f"{resource_type[:100]!r} is not one of {known}") from None


# ---------------------------------------------------------------- strings as the body's numbers and booleans

_INTEGER = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


def _resolved(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return schema


def _branches(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema and every branch of its anyOf, oneOf and allOf, resolved."""
    schema = _resolved(schema, defs)
    found = [schema]
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            found += _branches(branch, defs)
    return found


def _scalar(value: str, branches: list[dict[str, Any]]) -> Any:
    types = {b.get("type") for b in branches} | {type(b["const"]).__name__ for b in branches if "const" in b}
    if "string" in types or "str" in types:
        return value
    if types & {"boolean", "bool"} and value in ("true", "false"):
        return value == "true"
    if types & {"integer", "int"} and _INTEGER.match(value):
        return int(value)
    if "number" in types and _NUMBER.match(value):
        return float(value) if any(c in value for c in ".eE") else int(value)
    return value


def coerced(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """`value` with each string made the number or boolean `schema` asks for at its place (where it asks for a
    string too, or for neither, the string stays)."""
    branches = _branches(schema, defs)
    if isinstance(value, str):
        return _scalar(value, branches)
    if isinstance(value, list):
        items = [b["items"] for b in branches if isinstance(b.get("items"), dict)]
        return [coerced(v, {"anyOf": items}, defs) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            inner = [b["properties"][key] for b in branches if key in b.get("properties", {})]
            inner += [b["additionalProperties"] for b in branches if isinstance(b.get("additionalProperties"), dict)]
            out[key] = coerced(item, {"anyOf": inner}, defs)
        return out
    return value


def _model_coerced(value: Any, model: type[BaseModel]) -> Any:
    schema = model.model_json_schema()
    return coerced(value, schema, schema.get("$defs", {}))


def _payload_coerced(body: dict[str, Any], where: str) -> dict[str, Any]:
    """The body (a job, or a workflow's step) with its payload read: a JSON string parsed, its strings coerced by
    its type's payload model (left as they are for a type the stack does not know: the API names that)."""
    payload = body.get("payload")
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError as exc:
            raise InvalidInput.one(f"{where}payload", f"a string payload must be a JSON object: {exc}") from None
    if isinstance(payload, dict) and isinstance(body.get("type"), str) and body["type"] in registry.names():
        payload = _model_coerced(payload, registry.get(body["type"]).payload_model)
    return body if payload is None else {**body, "payload": payload}


def body_of(kind: ResourceKind, properties: dict[str, Any]) -> dict[str, Any]:
    """The request body the properties give (without Tenant, ServiceToken and ServiceTimeout), its strings
    coerced."""
    body = {k: v for k, v in properties.items() if k not in NOT_THE_BODY}
    if kind is ResourceKind.JOB:
        body = _payload_coerced(body, "")
    if kind is ResourceKind.WORKFLOW and isinstance(body.get("steps"), list):
        steps = body["steps"]
        body["steps"] = [_payload_coerced(s, f"steps[{i}].") if isinstance(s, dict) else s for i, s in enumerate(steps)]
    return _model_coerced(body, kind.spec_model)


def spec_of(kind: ResourceKind, properties: dict[str, Any]) -> Any:
    """The API's body model of the properties (JobSpec, WorkflowSpec, CalendarDefinition); InvalidInput naming each
    field as the API's 422 does."""
    body = body_of(kind, properties)
    try:
        return kind.spec_model.model_validate(body)
    except ValidationError as exc:
        raise InvalidInput.from_validation(exc) from None


def tenant_of(properties: dict[str, Any]) -> str:
    tenant = properties.get(TENANT_PROPERTY)
    if not isinstance(tenant, str) or not tenant:
        raise InvalidInput.one(TENANT_PROPERTY, "required: the tenant whose object this is")
    return tenant


# ---------------------------------------------------------------- updates


@dataclass(frozen=True)
class UpdatePlan:
    """What an Update request does: nothing, a change in place (`changes`: a PATCH body's fields, or a calendar's
    whole definition), or a replacement (`reason`: the field the API cannot change in place)."""

    action: Literal["none", "in_place", "replace"]
    changes: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


_FIXED: dict[ResourceKind, frozenset[str]] = {ResourceKind.JOB: frozenset({"type"})}
_PATCH: dict[ResourceKind, type[BaseModel]] = {ResourceKind.JOB: JobUpdate, ResourceKind.WORKFLOW: WorkflowUpdate}


def plan_update(kind: ResourceKind, old_properties: dict[str, Any], new_tenant: str, new_spec: BaseModel) -> UpdatePlan:
    """What changing the resource's properties from `old_properties` to the new ones does. Old properties that are
    not a valid body (a rollback to properties an update was refused for) are compared field by field as given, so
    every field the new ones give is sent, but what the API never changes in place where it is given alike."""
    if old_properties.get(TENANT_PROPERTY) != new_tenant:
        return UpdatePlan("replace", reason=f"{TENANT_PROPERTY} changed")
    new = new_spec.model_dump(mode="json")
    try:
        old = spec_of(kind, old_properties).model_dump(mode="json")
        changed = sorted(name for name in new if old.get(name) != new[name])
    except InvalidInput:  # as given, not read as a body: what made it invalid may be unreadable (a payload)
        old = {name: value for name, value in old_properties.items() if name not in NOT_THE_BODY}
        changed = sorted(new_spec.model_fields_set)
    if not changed:
        return UpdatePlan("none")
    if kind is ResourceKind.CALENDAR:  # replaced whole (PUT), in place
        return UpdatePlan("in_place", changes=new)
    fixed = sorted(name for name in _FIXED.get(kind, frozenset()) & set(changed) if old.get(name) != new[name])
    if fixed:
        return UpdatePlan("replace", reason=f"{', '.join(fixed)} changed: the API never changes it in place")
    unset = [name for name in changed if new[name] is None]
    if unset:
        return UpdatePlan("replace", reason=f"{', '.join(unset)} removed: the API cannot unset it in place")
    in_place = [name for name in changed if name not in _FIXED.get(kind, frozenset())]
    return UpdatePlan("in_place", changes={name: new[name] for name in in_place})


def properties_of(kind: ResourceKind, tenant: str, live: BaseModel) -> dict[str, Any]:
    """The properties the live object is made of: its tenant and the fields of its kind's body."""
    shown = live.model_dump(mode="json")
    return {TENANT_PROPERTY: tenant, **{name: shown[name] for name in kind.spec_model.model_fields if name in shown}}


def not_yet_made(changes: dict[str, Any], live: BaseModel) -> dict[str, Any]:
    """The changes the live object does not have yet (a repeated delivery of an update finds them made: it then
    writes nothing, and no version is added)."""
    shown = live.model_dump(mode="json")
    return {name: value for name, value in changes.items() if shown.get(name) != value}


def patch_of(kind: ResourceKind, changes: dict[str, Any]) -> Any:
    """The PATCH body (JobUpdate, WorkflowUpdate) of an in-place plan's changes."""
    return _PATCH[kind].model_validate(changes)
