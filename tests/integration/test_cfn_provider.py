"""The custom resource provider's function on moto, through real boto3 clients, with CloudFormation's request events
(events/cfn-job-*.json): each request answered by a PUT to its pre-signed URL, here a local HTTP server's."""

from __future__ import annotations

from collections.abc import Iterator
from copy import deepcopy
from datetime import timedelta
from typing import Any

import pytest
from resource_provider import app as provider_app
from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.model.errors import Conflict, InvalidInput
from tickwork.model.states import JobState
from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

from tests.conftest import load_event
from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT
from tests.http_upstream import PresignedPuts, serving

CONTEXT = LocalLambdaContext("ResourceProviderFunction")


@pytest.fixture
def cloudformation(pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("RESOURCE_PROVIDER_TENANTS", f"{TENANT},globex")
    monkeypatch.setenv("RESOURCE_PROVIDER_LOOPBACK_URLS", "true")
    provider_app.response_urls.cache_clear()
    provider_app.use_services(pipeline.services)
    PresignedPuts.answers = []
    with serving(PresignedPuts) as url:
        yield url
    provider_app.use_services(None)
    provider_app.response_urls.cache_clear()


def _send(url: str, name: str, physical_id: str | None = None, **changes: Any) -> dict[str, Any]:
    """The event `name`, its ResponseURL the local server's (and its physical id given), through the handler; the
    answer the server got."""
    event = deepcopy(load_event(name))
    event["ResponseURL"] = f"{url}/response?X-Amz-Signature=0f1e"
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    for key, value in changes.items():
        event[key] = value
    count = len(PresignedPuts.answers)
    provider_app.handler(event, CONTEXT)
    assert len(PresignedPuts.answers) == count + 1
    return PresignedPuts.answers[-1]


def _jobs(pipeline: Any) -> list[Any]:
    return pipeline.services.queries.list_jobs(TENANT, limit=100).items


def test_a_create_makes_the_job_and_answers_its_id_by_a_put_to_the_presigned_url(pipeline, cloudformation):
    answer = _send(cloudformation, "cfn-job-create.json")
    (job,) = _jobs(pipeline)
    assert answer["Status"] == "SUCCESS"
    assert answer["PhysicalResourceId"] == job.id
    assert answer["content_type"] == ""  # what the URL is signed for
    assert answer["path"] == "/response?X-Amz-Signature=0f1e"
    assert answer["size"] < 4096
    assert (answer["LogicalResourceId"], answer["RequestId"]) == (
        "NightlyExport",
        "3f6c1a52-0d4b-4a55-9e0e-6b1f5c2a9d01",
    )
    assert answer["Data"] == {
        "Id": job.id,
        "Name": "nightly-export",
        "State": "ACTIVE",
        "NextRunAt": job.next_run_at.isoformat().replace("+00:00", "Z"),
        "Type": "echo",
    }
    # The properties' strings as the API's numbers; the job attributed to the stack's resource.
    assert (job.priority, job.retry.max_attempts, job.tags) == (7, 5, {"team": "orders"})
    assert job.created_by == "team-orders/NightlyExport"


def test_a_repeated_delivery_of_a_create_answers_the_same_job_and_makes_no_second(pipeline, cloudformation):
    first = _send(cloudformation, "cfn-job-create.json")
    again = _send(cloudformation, "cfn-job-create.json")
    assert again["Status"] == "SUCCESS"
    assert again["PhysicalResourceId"] == first["PhysicalResourceId"]
    assert [j.id for j in _jobs(pipeline)] == [first["PhysicalResourceId"]]


def _first_delivery_dies_after_its_claim(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The create's first delivery: its process ends after it claimed the job's id, before the job is written."""

    def dies(*_: Any, **__: Any) -> Any:
        raise ProcessKilled("the invocation's process ended")

    with monkeypatch.context() as patched:
        patched.setattr(JobLifecycle, "add_new", dies)
        with pytest.raises(ProcessKilled):
            provider_app.handler({**load_event("cfn-job-create.json"), "ResponseURL": url}, CONTEXT)


def test_a_delivery_after_the_first_died_past_its_claim_makes_the_job_under_the_claimed_id(
    pipeline, cloudformation, monkeypatch
):
    _first_delivery_dies_after_its_claim(cloudformation, monkeypatch)
    assert PresignedPuts.answers == []
    assert _jobs(pipeline) == []
    again = _send(cloudformation, "cfn-job-create.json")
    (job,) = _jobs(pipeline)
    assert again["PhysicalResourceId"] == job.id
    assert _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"] == job.id


def test_an_update_changes_the_job_in_place(pipeline, cloudformation):
    job_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    answer = _send(cloudformation, "cfn-job-update.json", job_id)
    job = pipeline.services.queries.get_job(TENANT, job_id)
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("SUCCESS", job_id)
    assert (job.priority, job.schedule.cron, job.version) == (3, "30 4 * * *", 2)
    # The same again (a repeated delivery): the fields are as asked already, nothing is written.
    _send(cloudformation, "cfn-job-update.json", job_id)
    assert pipeline.services.queries.get_job(TENANT, job_id).version == 2


def test_a_new_type_replaces_the_job_and_cloudformations_delete_of_the_old_one_cancels_it(pipeline, cloudformation):
    old_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    update = load_event("cfn-job-update.json")
    props = {**update["ResourceProperties"], "type": "http", "payload": {"url": "https://example.com/hook"}}
    answer = _send(cloudformation, "cfn-job-update.json", old_id, ResourceProperties=props)
    new_id = answer["PhysicalResourceId"]
    assert answer["Status"] == "SUCCESS"
    assert new_id != old_id
    assert pipeline.services.queries.get_job(TENANT, new_id).type == "http"
    # CloudFormation then deletes the old physical id, with the old properties.
    old_props = load_event("cfn-job-create.json")["ResourceProperties"]
    deleted = _send(cloudformation, "cfn-job-delete.json", old_id, ResourceProperties=old_props)
    assert (deleted["Status"], deleted["PhysicalResourceId"]) == ("SUCCESS", old_id)
    assert pipeline.services.queries.get_job(TENANT, old_id).state is JobState.CANCELLED
    assert pipeline.services.queries.get_job(TENANT, new_id).state is JobState.ACTIVE


def test_a_delete_cancels_the_job_and_a_delete_of_what_is_gone_succeeds(pipeline, cloudformation):
    job_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    assert _send(cloudformation, "cfn-job-delete.json", job_id)["Status"] == "SUCCESS"
    assert pipeline.services.queries.get_job(TENANT, job_id).state is JobState.CANCELLED
    assert _send(cloudformation, "cfn-job-delete.json", job_id)["Status"] == "SUCCESS"  # cancelled already
    gone = _send(cloudformation, "cfn-job-delete.json", "j" + "0" * 25)  # an id no job has
    assert gone["Status"] == "SUCCESS"


def test_a_refused_create_fails_with_the_apis_message_and_its_rollback_delete_succeeds(pipeline, cloudformation):
    answer = _send(cloudformation, "cfn-job-create-refused.json")
    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("schedule.cron: cron expression '61 * * * *' is not valid")
    assert _jobs(pipeline) == []
    # CloudFormation's rollback deletes what the failed create answered: nothing was made, so nothing to do.
    rollback = _send(cloudformation, "cfn-job-delete.json", answer["PhysicalResourceId"])
    assert rollback["Status"] == "SUCCESS"


def test_a_tenant_the_provider_may_not_act_for_is_refused_and_nothing_is_made(pipeline, cloudformation):
    event = load_event("cfn-job-create.json")
    props = {**event["ResourceProperties"], "Tenant": "initech"}
    answer = _send(cloudformation, "cfn-job-create.json", ResourceProperties=props)
    assert answer["Status"] == "FAILED"
    assert "ResourceProviderTenants" in answer["Reason"]
    assert "'initech'" in answer["Reason"]
    assert pipeline.services.queries.list_jobs("initech", limit=10).items == []


def test_another_tenant_is_a_replacement_in_that_tenant(pipeline, cloudformation):
    old_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    update = load_event("cfn-job-update.json")
    props = {**update["ResourceProperties"], "Tenant": "globex"}
    new_id = _send(cloudformation, "cfn-job-update.json", old_id, ResourceProperties=props)["PhysicalResourceId"]
    assert new_id != old_id
    assert pipeline.services.queries.get_job("globex", new_id).name == "nightly-export"


def test_a_response_url_that_is_not_awss_gets_no_answer(pipeline, cloudformation, monkeypatch):
    monkeypatch.setenv("RESOURCE_PROVIDER_LOOPBACK_URLS", "false")
    provider_app.response_urls.cache_clear()
    with pytest.raises(InvalidInput) as refused:
        provider_app.handler({**load_event("cfn-job-create.json"), "ResponseURL": cloudformation}, CONTEXT)
    assert refused.value.errors[0].field == "ResponseURL"
    assert PresignedPuts.answers == []
    assert _jobs(pipeline) == []


def test_an_event_without_what_an_answer_needs_is_an_error_naming_it(pipeline, cloudformation):
    event = load_event("cfn-job-create.json")
    del event["ResponseURL"]
    with pytest.raises(InvalidInput) as refused:
        provider_app.handler(event, CONTEXT)
    assert [e.field for e in refused.value.errors] == ["ResponseURL"]


def test_an_unexpected_error_is_answered_failed_so_the_stack_does_not_wait(pipeline, cloudformation, monkeypatch):
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("DynamoDB said no")

    monkeypatch.setattr(JobLifecycle, "create_job", broken)
    answer = _send(cloudformation, "cfn-job-create.json")
    assert answer["Status"] == "FAILED"
    assert answer["Reason"].startswith("the request failed; try again")
    assert "DynamoDB" not in answer["Reason"]


# ---------------------------------------------------------------- workflows and calendars


def _event(kind: str, request_type: str, properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    event = load_event("cfn-job-create.json")
    props = {"ServiceToken": event["ResourceProperties"]["ServiceToken"], "Tenant": TENANT, **properties}
    return {
        **event,
        "RequestType": request_type,
        "ResourceType": f"Custom::Tickwork{kind}",
        "LogicalResourceId": kind,
        "RequestId": f"{kind}-{request_type}-{len(PresignedPuts.answers)}",
        "ResourceProperties": props,
        **extra,
    }


def _answer(url: str, event: dict[str, Any]) -> dict[str, Any]:
    provider_app.handler({**event, "ResponseURL": url}, CONTEXT)
    return PresignedPuts.answers[-1]


def _update(url: str, kind: str, physical_id: str, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    old_properties = {"Tenant": TENANT, **old}
    return _answer(
        url, _event(kind, "Update", new, PhysicalResourceId=physical_id, OldResourceProperties=old_properties)
    )


def test_a_calendar_and_a_workflow_naming_it_are_created_changed_and_deleted(pipeline, cloudformation):
    holidays = {"name": "holidays", "windows": [{"dates": ["2026-12-25"]}]}
    created = _answer(cloudformation, _event("Calendar", "Create", holidays))
    calendar_id = created["PhysicalResourceId"]
    assert created["Data"] == {"Id": calendar_id, "Name": "holidays", "Mode": "exclude"}

    steps = [
        {"id": "extract", "type": "echo", "payload": {"n": "1"}},
        {"id": "load", "type": "echo", "depends_on": ["extract"]},
    ]
    flow = {"name": "etl", "schedule": {"rate": "1 hour"}, "steps": steps, "calendars": [calendar_id]}
    workflow = _answer(cloudformation, _event("Workflow", "Create", flow))
    workflow_id = workflow["PhysicalResourceId"]
    assert workflow["Status"] == "SUCCESS"
    assert pipeline.services.workflows.get(TENANT, workflow_id).calendars == [calendar_id]

    # In place: the calendar replaced whole, the workflow patched.
    include = {**holidays, "mode": "include"}
    changed = _update(cloudformation, "Calendar", calendar_id, holidays, include)
    assert (changed["PhysicalResourceId"], changed["Data"]["Mode"]) == (calendar_id, "include")
    hourly = {**flow, "priority": "2"}
    patched = _update(cloudformation, "Workflow", workflow_id, flow, hourly)
    assert patched["PhysicalResourceId"] == workflow_id
    assert pipeline.services.workflows.get(TENANT, workflow_id).priority == 2

    assert (
        _answer(cloudformation, _event("Workflow", "Delete", hourly, PhysicalResourceId=workflow_id))["Status"]
        == "SUCCESS"
    )
    assert pipeline.services.workflows.get(TENANT, workflow_id).state is JobState.CANCELLED
    assert (
        _answer(cloudformation, _event("Calendar", "Delete", include, PhysicalResourceId=calendar_id))["Status"]
        == "SUCCESS"
    )
    assert pipeline.services.calendars.list(TENANT) == []
    # Deleted already: still a success.
    again = _answer(cloudformation, _event("Calendar", "Delete", include, PhysicalResourceId=calendar_id))
    assert again["Status"] == "SUCCESS"


def test_an_unknown_resource_type_fails_naming_the_three(pipeline, cloudformation):
    answer = _answer(cloudformation, _event("Queue", "Create", {"name": "q"}))
    assert answer["Status"] == "FAILED"
    assert "Custom::TickworkJob, Custom::TickworkWorkflow, Custom::TickworkCalendar" in answer["Reason"]


@pytest.mark.parametrize(("keys_file", "tenants"), [(None, "*"), ("keys.json", "")])
def test_the_local_runtime_lets_the_provider_act_for_any_tenant_only_where_its_api_is_open(
    pipeline, keys_file, tenants
):
    """Open mode (every caller the admin of `default`): any tenant; keyed (tenants apart), the parameter alone, whose
    default refuses every request. Its answers may go to loopback there, never deployed."""
    from tickwork_local.runtime.node import PROVIDER_FUNCTION, LocalNode, NodeOptions

    node = LocalNode(NodeOptions(endpoint_url="http://127.0.0.1:1", api_keys_file=keys_file))
    node.resources = pipeline.resources
    env = node.environment(PROVIDER_FUNCTION)
    assert (env["RESOURCE_PROVIDER_TENANTS"], env["RESOURCE_PROVIDER_LOOPBACK_URLS"]) == (tenants, "true")
    deployed = pipeline.resources.environment(PROVIDER_FUNCTION)
    assert deployed["RESOURCE_PROVIDER_TENANTS"] == ""
    assert "RESOURCE_PROVIDER_LOOPBACK_URLS" not in deployed


def test_a_job_that_ran_its_course_is_left_completed_by_a_delete(pipeline, cloudformation):
    event = load_event("cfn-job-create.json")
    props = {**event["ResourceProperties"], "schedule": {"at": (START + timedelta(minutes=1)).isoformat()}}
    job_id = _send(cloudformation, "cfn-job-create.json", ResourceProperties=props)["PhysicalResourceId"]
    pipeline.clock.advance(90)
    pipeline.tick()
    pipeline.drain()
    assert pipeline.services.queries.get_job(TENANT, job_id).state is JobState.COMPLETED
    assert _send(cloudformation, "cfn-job-delete.json", job_id, ResourceProperties=props)["Status"] == "SUCCESS"
    assert pipeline.services.queries.get_job(TENANT, job_id).state is JobState.COMPLETED


def test_a_job_cancelled_by_hand_is_not_brought_back_by_an_update(pipeline, cloudformation):
    job_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    pipeline.services.jobs.cancel(TENANT, job_id)
    answer = _send(cloudformation, "cfn-job-update.json", job_id)
    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == "cannot update a CANCELLED job"


def test_a_delivery_racing_another_answers_the_job_the_other_made(pipeline, cloudformation, monkeypatch):
    """Both found the key claimed and the job missing; the other wrote it first: this one's write finds its id taken
    (Conflict) and answers that job."""
    made = JobLifecycle.create_job

    def raced(self: JobLifecycle, *args: Any, **kwargs: Any) -> Any:
        made(self, *args, **kwargs)  # the other delivery's write
        return made(self, *args, **kwargs)  # this one's: the id is taken

    _first_delivery_dies_after_its_claim(cloudformation, monkeypatch)
    monkeypatch.setattr(JobLifecycle, "create_job", raced)
    answer = _send(cloudformation, "cfn-job-create.json")
    (job,) = _jobs(pipeline)
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("SUCCESS", job.id)


# ---------------------------------------------------------------- rollbacks of refused updates


def _rollback(url: str, job_id: str, refused: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation's rollback of an update it was answered FAILED for: an Update back to the create's properties,
    the refused ones as its old properties, with the physical id the failed update kept."""
    create = load_event("cfn-job-create.json")["ResourceProperties"]
    return _send(
        url,
        "cfn-job-update.json",
        job_id,
        RequestId="rollback-1",
        ResourceProperties=create,
        OldResourceProperties=refused,
    )


@pytest.mark.parametrize(
    "refused",
    [
        {"Tenant": "initech"},  # a tenant the provider may not act for
        {"type": "http", "payload": {"url": "not a url"}},  # another type, its payload refused
        # a field added (its removal back is no PATCH), the payload naming a secret of another tenant's
        {"concurrency": {"key": "exports", "limit": "1"}, "payload": {"token": {"$secret": "tickwork/globex/key"}}},
    ],
    ids=["tenant", "type", "unset"],
)
def test_the_rollback_of_a_refused_replacement_keeps_the_job_and_makes_no_second(pipeline, cloudformation, refused):
    job_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    refused_props = {**load_event("cfn-job-create.json")["ResourceProperties"], **refused}
    failed = _send(cloudformation, "cfn-job-update.json", job_id, ResourceProperties=refused_props)
    assert (failed["Status"], failed["PhysicalResourceId"]) == ("FAILED", job_id)
    rollback = _rollback(cloudformation, job_id, refused_props)
    assert (rollback["Status"], rollback["PhysicalResourceId"]) == ("SUCCESS", job_id)
    assert [j.id for j in _jobs(pipeline)] == [job_id]
    assert pipeline.services.queries.get_job(TENANT, job_id).version == 1


def test_the_delete_of_a_create_refused_for_its_resource_type_succeeds(pipeline, cloudformation):
    created = _answer(cloudformation, _event("Queue", "Create", {"name": "q"}))
    assert created["Status"] == "FAILED"
    rollback = _event("Queue", "Delete", {"name": "q"}, PhysicalResourceId=created["PhysicalResourceId"])
    assert _answer(cloudformation, rollback)["Status"] == "SUCCESS"


def test_the_rollback_of_an_update_refused_for_a_payload_that_is_not_json_keeps_the_job(pipeline, cloudformation):
    job_id = _send(cloudformation, "cfn-job-create.json")["PhysicalResourceId"]
    refused_props = {**load_event("cfn-job-create.json")["ResourceProperties"], "payload": "{not json"}
    failed = _send(cloudformation, "cfn-job-update.json", job_id, ResourceProperties=refused_props)
    assert (failed["Status"], failed["Reason"].split(":")[0]) == ("FAILED", "payload")
    rollback = _rollback(cloudformation, job_id, refused_props)
    assert (rollback["Status"], rollback["PhysicalResourceId"]) == ("SUCCESS", job_id)
    assert pipeline.services.queries.get_job(TENANT, job_id).version == 1


def test_a_refused_tenant_is_not_told_the_tenants_the_provider_acts_for(pipeline, cloudformation):
    """The Reason is kept in the stack's events, which whoever reads the stack sees: other tenants' names stay out."""
    props = {**load_event("cfn-job-create.json")["ResourceProperties"], "Tenant": "initech"}
    answer = _send(cloudformation, "cfn-job-create.json", ResourceProperties=props)
    assert answer["Status"] == "FAILED"
    assert "globex" not in answer["Reason"]
    assert TENANT not in answer["Reason"].replace("initech", "")


def test_a_first_delivery_whose_write_is_found_made_already_answers_that_job(pipeline, cloudformation, monkeypatch):
    """The SDK's retry of a write that happened, though its answer was lost, finds the job's id taken (Conflict): the
    job is the request's own, answered so, not left behind a FAILED answer that CloudFormation never deletes."""
    made = JobLifecycle.create_job

    def written_twice(self: JobLifecycle, *args: Any, **kwargs: Any) -> Any:
        made(self, *args, **kwargs)  # the write whose answer was lost
        return made(self, *args, **kwargs)  # its retry: the id is taken

    monkeypatch.setattr(JobLifecycle, "create_job", written_twice)
    answer = _send(cloudformation, "cfn-job-create.json")
    (job,) = _jobs(pipeline)
    assert (answer["Status"], answer["PhysicalResourceId"]) == ("SUCCESS", job.id)


def test_a_conflict_on_an_id_no_object_has_is_the_failure_answered(pipeline, cloudformation, monkeypatch):
    def refused(*_: Any, **__: Any) -> Any:
        raise Conflict("job exists already")

    monkeypatch.setattr(JobLifecycle, "create_job", refused)
    answer = _send(cloudformation, "cfn-job-create.json")
    assert (answer["Status"], answer["Reason"]) == ("FAILED", "job exists already")
    assert _jobs(pipeline) == []
