"""A custom resource's properties as the API's bodies (CloudFormation's strings made the numbers and booleans the
body's schema asks for), and what an update does: nothing, a change in place, or a replacement."""

from __future__ import annotations

import json

import pytest
from tickwork.control.api_bodies import JobSpec
from tickwork.control.cfn_properties import (
    ResourceKind,
    body_of,
    patch_of,
    plan_update,
    resource_kind,
    spec_of,
    tenant_of,
)
from tickwork.control.cfn_provider import MAX_RESPONSE_BYTES, CfnRequest, data_of
from tickwork.model.errors import InvalidInput

JOB = ResourceKind.JOB
# As CloudFormation hands them over: every scalar a string.
NIGHTLY = {
    "ServiceToken": "arn:aws:lambda:eu-west-1:123456789012:function:tickwork-provider",
    "Tenant": "acme",
    "name": "nightly-export",
    "type": "echo",
    "payload": {"table": "orders", "n": "3"},
    "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"},
    "priority": "7",
    "retry": {"max_attempts": "5"},
    "debounce": {"key": "k", "seconds": "30", "collect": "true"},
    "tags": {"team": "data", "cost-centre": "42"},
}


def test_strings_become_the_numbers_and_booleans_the_body_asks_for_and_stay_strings_elsewhere():
    spec = spec_of(JOB, NIGHTLY)
    assert isinstance(spec, JobSpec)
    assert (spec.priority, spec.retry.max_attempts) == (7, 5)
    assert (spec.debounce.seconds, spec.debounce.collect) == (30, True)
    assert spec.tags == {"team": "data", "cost-centre": "42"}  # a tag's value is a string in the API too
    assert spec.payload == {"table": "orders", "n": "3"}  # echo's payload is any object: nothing says a number


def test_a_name_of_digits_stays_a_name():
    assert spec_of(JOB, {**NIGHTLY, "name": "2026"}).name == "2026"


def test_a_payload_is_read_by_its_types_model_and_may_be_a_json_string():
    http = {"url": "https://example.com/hook", "timeout": "2.5"}
    assert body_of(JOB, {**NIGHTLY, "type": "http", "payload": http})["payload"]["timeout"] == 2.5
    as_text = body_of(JOB, {**NIGHTLY, "payload": json.dumps({"n": 3, "deep": {"ok": True}})})
    assert as_text["payload"] == {"n": 3, "deep": {"ok": True}}


def test_a_payload_string_that_is_not_json_is_named():
    with pytest.raises(InvalidInput) as refused:
        spec_of(JOB, {**NIGHTLY, "payload": "{not json"})
    assert [e.field for e in refused.value.errors] == ["payload"]


def test_a_bad_value_is_refused_with_the_apis_message_at_its_field():
    with pytest.raises(InvalidInput) as refused:
        spec_of(JOB, {**NIGHTLY, "priority": "urgent", "schedule": {"cron": "61 * * * *"}})
    fields = {e.field: e.message for e in refused.value.errors}
    assert set(fields) == {"priority", "schedule.cron"}
    assert "must be a number" in fields["priority"]


def test_a_workflows_steps_payloads_are_read_by_their_types():
    steps = [{"id": "call", "type": "http", "payload": {"url": "https://example.com", "timeout": "3"}}]
    body = body_of(
        ResourceKind.WORKFLOW, {"Tenant": "acme", "name": "w", "schedule": {"rate": "1 hour"}, "steps": steps}
    )
    assert body["steps"][0]["payload"]["timeout"] == 3


def test_tenant_is_required_and_unknown_resource_types_are_named():
    with pytest.raises(InvalidInput) as no_tenant:
        tenant_of({"name": "x"})
    assert no_tenant.value.errors[0].field == "Tenant"
    with pytest.raises(InvalidInput) as unknown:
        resource_kind("Custom::Other")
    assert "Custom::TickworkJob" in str(unknown.value)


# ---------------------------------------------------------------- updates


@pytest.mark.parametrize("kind", list(ResourceKind))
def test_cloudformations_own_service_timeout_is_not_read_as_a_field_of_the_body(kind):
    """ServiceTimeout (seconds CloudFormation waits for the answer) is CloudFormation's, as ServiceToken is: it
    comes in the properties of every custom resource that sets it (cfn-lint asks for it on each)."""
    bodies = {
        JOB: NIGHTLY,
        ResourceKind.WORKFLOW: {"name": "etl", "schedule": {"rate": "1 hour"}, "steps": [{"id": "a", "type": "echo"}]},
        ResourceKind.CALENDAR: {"name": "holidays", "windows": [{"dates": ["2026-12-25"]}]},
    }
    given = {**bodies[kind], "Tenant": "acme", "ServiceTimeout": "300"}
    assert "ServiceTimeout" not in body_of(kind, given)
    assert spec_of(kind, given) == spec_of(kind, bodies[kind])
    assert plan_update(kind, {**given, "ServiceTimeout": "600"}, "acme", spec_of(kind, given)).action == "none"


def _plan(old: dict, new: dict, kind: ResourceKind = JOB):
    return plan_update(kind, old, new["Tenant"], spec_of(kind, new))


def test_the_same_body_is_no_change_even_where_a_default_is_given_now():
    assert _plan(NIGHTLY, {**NIGHTLY, "timeout_seconds": "300"}).action == "none"


def test_a_changed_field_is_patched_in_place_alone():
    plan = _plan(NIGHTLY, {**NIGHTLY, "priority": "2", "schedule": {"cron": "30 4 * * *", "timezone": "Europe/Paris"}})
    assert (plan.action, sorted(plan.changes)) == ("in_place", ["priority", "schedule"])
    patch = patch_of(JOB, plan.changes)
    assert patch.changes()["priority"] == 2
    assert patch.changes()["schedule"].cron == "30 4 * * *"


def test_a_removed_field_with_a_default_value_is_set_back_in_place():
    plan = _plan(NIGHTLY, {k: v for k, v in NIGHTLY.items() if k != "priority"})
    assert (plan.action, plan.changes) == ("in_place", {"priority": 5})


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"type": "http", "payload": {"url": "https://example.com"}}, "type changed"),
        ({"Tenant": "globex"}, "Tenant changed"),
        ({"debounce": None}, "debounce removed"),
    ],
)
def test_what_the_api_cannot_change_in_place_is_a_replacement(change, reason):
    new = {k: v for k, v in {**NIGHTLY, **change}.items() if v is not None}
    plan = _plan(NIGHTLY, new)
    assert plan.action == "replace"
    assert plan.reason.startswith(reason)


def test_a_calendar_is_replaced_whole_in_place():
    holidays = {"Tenant": "acme", "name": "holidays", "windows": [{"dates": ["2026-12-25"]}]}
    plan = _plan(holidays, {**holidays, "mode": "include"}, ResourceKind.CALENDAR)
    assert plan.action == "in_place"
    assert plan.changes["mode"] == "include"
    assert plan.changes["name"] == "holidays"


def test_old_properties_that_were_refused_send_every_field_given():
    plan = _plan({**NIGHTLY, "priority": "urgent"}, NIGHTLY)
    assert plan.action == "in_place"
    assert set(plan.changes) == set(NIGHTLY) - {"ServiceToken", "Tenant", "type"}  # the same type: not sent


# ---------------------------------------------------------------- answers


def _request(**extra) -> CfnRequest:
    event = {
        "RequestType": "Create",
        "ResponseURL": "https://cloudformation-custom-resource-response-euwest1.s3.amazonaws.com/x",
        "StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/team-stack/0a1b",
        "RequestId": "r-1",
        "LogicalResourceId": "NightlyExport",
        "ResourceType": "Custom::TickworkJob",
        "ResourceProperties": NIGHTLY,
    }
    return CfnRequest.model_validate({**event, **extra})


def test_a_long_reason_is_cut_so_the_answer_fits_cloudformations_4096_bytes():
    body = _request().refused("x" * 10_000).body()
    answer = json.loads(body)
    assert len(body) <= MAX_RESPONSE_BYTES
    assert answer["Status"] == "FAILED"
    assert answer["Reason"].endswith("(cut to fit)")
    assert answer["PhysicalResourceId"] == "tickwork-not-created-r-1"


def test_a_requests_key_is_its_stack_resource_and_request_and_its_actor_the_stack():
    first = _request()
    assert first.idempotency_key == _request().idempotency_key
    assert first.idempotency_key != _request(RequestId="r-2").idempotency_key
    assert first.idempotency_key != _request(LogicalResourceId="Other").idempotency_key
    assert first.attribution.actor.display == "team-stack/NightlyExport"


def test_data_says_a_jobs_id_name_state_type_and_next_run():
    from datetime import UTC, datetime

    from tickwork.model.job import Job

    spec = spec_of(JOB, NIGHTLY)
    at = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    job = Job(id="j" + "0" * 25, tenant="acme", created_at=at, updated_at=at, next_run_at=at, **spec.model_dump())
    assert data_of(job) == {
        "Id": job.id,
        "Name": "nightly-export",
        "State": "ACTIVE",
        "NextRunAt": "2026-12-01T02:00:00Z",
        "Type": "echo",
    }
