"""Least privilege must not mean "too little": every AWS call the real code makes is allowed by the
role of the function that makes it, on the resource it touches.

The pipeline harness records every botocore call (nothing is faked); each phase is attributed to the
function that runs it in AWS: the API's job service to ApiRole, the tick handler to TickRole, and
the executor handler plus its SQS event source mapping (receive, delete) to ExecutorRole.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from template_support import as_list, iam_statements
from tickwork.faults import CrashPoint
from tickwork.model.audit import Actor, ActorKind, Attribution
from tickwork.model.calendars import CalendarDefinition
from tickwork.model.errors import NotFound
from tickwork.model.ids import run_id_for
from tickwork.model.policies import Band
from tickwork.model.states import RunStatus, RunTrigger

from tests.faults.crashes import ProcessKilled
from tests.harness import START, TENANT

FAR = timedelta(minutes=10)
OPS = Attribution(
    actor=Actor(kind=ActorKind.IAM, id="arn:aws:sts::123456789012:assumed-role/tickwork-admin/ops", display="ops")
)

# Calls authorised by another action's name (IAM has no action of the call's own name).
_ACTION_OF = {
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "ListObjectsV2"): "s3:ListBucket",
}
_TRANSACT_ACTION = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}


def _queue_ids(resources) -> dict[str, str]:
    ids = {url: f"{band.capitalize()}Queue" for band, url in resources.queue_urls.items()}
    ids |= {url: f"{band.capitalize()}DeadLetterQueue" for band, url in resources.dlq_urls.items()}
    ids |= {url: logical_id for logical_id, url in resources.extra_queue_urls.items()}
    return ids


def _queue_of_arn(resources, arn: str) -> str:
    """The logical id of the queue an ARN names (a queue's ARN and URL end in its name)."""
    by_name = {url.rsplit("/", 1)[-1]: logical_id for url, logical_id in _queue_ids(resources).items()}
    return by_name[arn.rsplit(":", 1)[-1]]


def _needed(service: str, operation: str, params: dict[str, Any], resources) -> list[tuple[str, tuple[str, str]]]:
    """(IAM action, (logical id, sub-resource)) pairs one recorded call needs."""
    if service == "dynamodb":
        assert params.get("TableName", resources.table_name) == resources.table_name
        if operation == "TransactWriteItems":
            needed = []
            for item in params["TransactItems"]:
                ((kind, body),) = item.items()
                assert body["TableName"] == resources.table_name
                needed.append((_TRANSACT_ACTION[kind], ("JobsTable", "")))
            return needed
        index = params.get("IndexName")
        return [(f"dynamodb:{operation}", ("JobsTable", f"/index/{index}" if index else ""))]
    if service == "sqs" and "SourceArn" in params:  # a dead-letter queue's message move task, or its listing
        source = _queue_of_arn(resources, params["SourceArn"])
        if operation != "StartMessageMoveTask":
            return [(f"sqs:{operation}", (source, ""))]
        # The task moves the messages as its caller: received and deleted at the source, sent to the destination.
        moved = [
            (f"sqs:{action}", (source, "")) for action in ("StartMessageMoveTask", "ReceiveMessage", "DeleteMessage")
        ]
        return [*moved, ("sqs:SendMessage", (_queue_of_arn(resources, params["DestinationArn"]), ""))]
    if service == "sqs":
        return [
            (_ACTION_OF.get((service, operation), f"sqs:{operation}"), (_queue_ids(resources)[params["QueueUrl"]], ""))
        ]
    if service == "s3":
        # The audit trail's archive is written by the tick (tickwork.tick.audit_archive) once it holds records.
        buckets = {
            resources.results_bucket: "ResultsBucket",
            resources.environment("TickFunction")["AUDIT_BUCKET"]: "AuditBucket",
        }
        bucket = buckets[params["Bucket"]]
        target = (bucket, f"/{params['Key']}") if "Key" in params else (bucket, "")
        return [(_ACTION_OF.get((service, operation), f"s3:{operation}"), target)]
    if service == "lambda":
        # The stack's own functions, by the names the local runtime gives them (<prefix>-<logical id>).
        prefix = resources.table_name.rsplit("-", 1)[0]
        assert params["FunctionName"].startswith(f"{prefix}-"), params["FunctionName"]
        return [("lambda:InvokeFunction", (params["FunctionName"].removeprefix(f"{prefix}-"), ""))]
    if service == "events":
        # Run events go to the bus the EventBusName parameter names (its default, `default`, in the pipeline).
        assert all(entry["EventBusName"] == "default" for entry in params["Entries"])
        return [(f"events:{operation}", ("EventBusName", ""))]
    raise AssertionError(f"unexpected service {service}")


_GLOBAL_TABLE_ARN = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${GlobalTableName}"


def _granted(template, role: str) -> set[tuple[str, tuple[str, str]]]:
    """(action, (logical id, sub-resource)) pairs a role's Allow statements name."""
    grants = set()
    for r, statement in iam_statements(template):
        if r != role or statement["Effect"] != "Allow":
            continue
        for resource in as_list(statement["Resource"]):
            if isinstance(resource, dict) and "Fn::GetAtt" in resource:
                target = (resource["Fn::GetAtt"][0], "")
            elif isinstance(resource, dict) and str(resource.get("Fn::Sub", "")).endswith(":event-bus/${EventBusName}"):
                target = ("EventBusName", "")
            elif isinstance(resource, dict) and str(resource.get("Fn::Sub", "")).startswith(_GLOBAL_TABLE_ARN):
                # A grant of RegionMode strong only (the expiry sweep's): the global table, the local table here.
                target = ("JobsTable", resource["Fn::Sub"].removeprefix(_GLOBAL_TABLE_ARN))
            elif isinstance(resource, dict) and isinstance(resource.get("Fn::Sub"), list):
                target = ("?", str(resource["Fn::Sub"][0]))  # another region's ARN: no call here reaches it
            elif isinstance(resource, dict) and "Fn::Sub" in resource:
                match = re.fullmatch(r"\$\{(\w+)\.Arn\}(.*)", resource["Fn::Sub"])
                target = (match.group(1), match.group(2)) if match else ("?", resource["Fn::Sub"])
            else:
                target = ("?", str(resource))
            for action in as_list(statement["Action"]):
                grants.add((action, target))
    return grants


Recorded = dict[str, list[tuple[str, str, dict[str, Any]]]]


def _recorder(pipeline: Any) -> tuple[Recorded, Any]:
    """The calls each role made, and `acting_as(role)`: the calls made inside it are that role's."""
    recorded: Recorded = defaultdict(list)

    @contextmanager
    def acting_as(role: str) -> Iterator[None]:
        pipeline.calls.clear()
        yield
        recorded[role].extend(pipeline.calls.calls)
        pipeline.calls.clear()

    return recorded, acting_as


def _a_create_under_a_key_that_fails_after_taking_it(pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's write fails after its idempotency key was taken: the key is released (its record deleted), so the
    corrected retry is not refused."""
    from tickwork.control.api_bodies import JobSpec
    from tickwork.control.idempotent_create import IdempotentCreate

    def refused(*_: Any, **__: Any) -> Any:
        raise RuntimeError("the job's write failed")

    with monkeypatch.context() as patched:
        patched.setattr(IdempotentCreate, "_put_or_get", refused)
        spec = JobSpec.model_validate({"name": "iam-keyed", "type": "echo", "schedule": {"at": START + FAR}})
        with pytest.raises(RuntimeError):
            pipeline.services.idempotent_create.create_job_once(TENANT, spec, key="iam-key", request_hash="h")
    assert any(op == "DeleteItem" for _, op, _ in pipeline.calls.calls), "the key was not released"


def test_every_call_the_code_makes_is_allowed_by_its_functions_role(pipeline, template, monkeypatch):
    _every_call_is_allowed(pipeline, template, monkeypatch, strong=False)


def test_every_call_the_code_makes_in_strong_is_allowed_by_its_functions_role(mocked_aws, template, monkeypatch):
    """RegionMode strong: audited changes without transactions (their records pending, confirmed; what a dead request
    left settled by the tick) and the expiry sweep."""
    from tests.harness import Pipeline
    from tests.integration.test_expiry_sweep import STRONG

    with Pipeline.create(parameters=STRONG) as pipeline:
        _every_call_is_allowed(pipeline, template, monkeypatch, strong=True)


def _every_call_is_allowed(pipeline: Any, template: Any, monkeypatch: pytest.MonkeyPatch, *, strong: bool) -> None:
    recorded, acting_as = _recorder(pipeline)

    jobs, queries, redrive = pipeline.services.jobs, pipeline.services.queries, pipeline.services.redrive
    with acting_as("ApiRole"):
        ok = pipeline.create_job(schedule={"at": START + FAR})
        failing = pipeline.create_job(
            schedule={"at": START + FAR},
            payload={"fail_attempts": 10},
            retry={"max_attempts": 2, "backoff_seconds": 1},
        )
        pipeline.create_job(schedule={"at": START + timedelta(seconds=5)})  # claimed and sent at create
        queries.get_job(TENANT, ok.id)
        calendar = pipeline.services.calendars.create(
            TENANT,
            CalendarDefinition.model_validate(
                {"name": "iam-blackout", "windows": [{"from": START.isoformat(), "to": (START + FAR).isoformat()}]}
            ),
        )
        pipeline.services.calendars.delete(TENANT, calendar.id)
        _a_create_under_a_key_that_fails_after_taking_it(pipeline, monkeypatch)

    pipeline.clock.advance(FAR.total_seconds())
    with acting_as("TickRole"):
        assert pipeline.tick()["dispatched"] >= 2
    # A message no executor can process: it puts it on the band's SQS dead-letter queue.
    pipeline.sqs.send_message(QueueUrl=pipeline.resources.queue_urls["normal"], MessageBody="poison")
    with acting_as("ExecutorRole"):
        pipeline.drain()  # succeeds, retries (ChangeMessageVisibility), exhausts (FAILED), dead-letters the poison

    (failed,) = pipeline.runs_of(failing.id)
    assert failed.status is RunStatus.FAILED
    with acting_as("ApiRole"):
        queries.get_run(TENANT, failed.id)
        redrive.retry_run(TENANT, failed.id)
        jobs.trigger(TENANT, ok.id)
        # An admin's read of the SQS dead-letter queues, and the poison's redrive (a message move task), its audit
        # record an intent confirmed after the move (the intent's delete and the record's put, one transaction).
        pipeline.services.dead_letters.queues_now()
        assert pipeline.services.dead_letters.redrive([Band.NORMAL], by=OPS, tenant="ops").started == [Band.NORMAL]
    # A redrive whose request dies after its intent: the tick settles it.
    pipeline.sqs.send_message(QueueUrl=pipeline.resources.dlq_urls["normal"], MessageBody="poison")
    pipeline.crashes.arm(CrashPoint.REDRIVE_AFTER_INTENT)
    with acting_as("ApiRole"):
        with pytest.raises(ProcessKilled):
            pipeline.services.dead_letters.redrive([Band.NORMAL], by=OPS, tenant="ops")
    pipeline.clock.advance(60)
    with acting_as("TickRole"):
        pipeline.tick()  # reads the band's move tasks and settles the intent (no move of the request's time)
    if strong:
        _a_calendar_delete_whose_request_dies_settled_by_the_tick(pipeline, acting_as)

    operations = {op for calls in recorded.values() for _, op, _ in calls}
    # The phases really exercised the paths that need distinct permissions.
    assert {"PutItem", "UpdateItem", "SendMessageBatch", "Query", "PutObject", "ChangeMessageVisibility"} <= operations
    assert {"ListMessageMoveTasks", "StartMessageMoveTask"} <= operations
    assert ("TransactWriteItems" in operations) is not strong
    assert any(op == "ListMessageMoveTasks" for _, op, _ in recorded["TickRole"]), "no pending redrive record settled"
    assert any(op == "SendMessage" and "DeadLetterQueue" in p["QueueUrl"] for _, op, p in recorded["ExecutorRole"]), (
        "the poison message was not dead-lettered"
    )

    assert _missing(recorded, template, pipeline.resources) == []


def _a_calendar_delete_whose_request_dies_settled_by_the_tick(pipeline: Any, acting_as: Any) -> None:
    """Strong: the API dies after marking a calendar for its delete; past the record's settle time the tick finishes
    the delete and confirms the record."""
    from tickwork.model.audit_settlement import SETTLES_AFTER

    calendar = pipeline.services.calendars.create(
        TENANT,
        CalendarDefinition.model_validate(
            {"name": "iam-dying", "windows": [{"from": START.isoformat(), "to": (START + FAR).isoformat()}]}
        ),
    )
    client = pipeline.services.store.shared_table.client

    def dies_at_the_delete(**_: Any) -> None:
        raise ProcessKilled("before the marked delete")

    client.meta.events.register("before-call.dynamodb.DeleteItem", dies_at_the_delete)
    try:
        with acting_as("ApiRole"), pytest.raises(ProcessKilled):
            pipeline.services.calendars.delete(TENANT, calendar.id, by=OPS)
    finally:
        client.meta.events.unregister("before-call.dynamodb.DeleteItem", dies_at_the_delete)
    pipeline.clock.advance(SETTLES_AFTER.total_seconds() + 1)
    with acting_as("TickRole"):
        assert pipeline.tick()["pending_audits_settled"] == 1
    with pytest.raises(NotFound):
        pipeline.services.calendars.get(TENANT, calendar.id)


def _missing(recorded: dict[str, list[tuple[str, str, dict[str, Any]]]], template, resources) -> list[tuple[str, ...]]:
    missing = []
    for role, calls in recorded.items():
        granted = _granted(template, role)
        for service, operation, params in calls:
            for need in _needed(service, operation, params, resources):
                if not _allowed(need, granted):
                    missing.append((role, operation, *need))
    return sorted(set(missing))


def _allowed(need: tuple[str, tuple[str, str]], granted: set[tuple[str, tuple[str, str]]]) -> bool:
    """A grant of the action on the resource, its sub-resource matched as IAM matches it (`/*`: any object key)."""
    action, (resource, sub) = need
    return any(a == action and r == resource and fnmatch.fnmatchcase(sub, pattern) for a, (r, pattern) in granted)


def test_every_call_workflows_make_is_allowed_by_its_functions_role(pipeline, template):
    """Workflows: the API creates, triggers, reads, cancels and retries runs; the tick claims a workflow and
    reconciles a stalled run (reading upstream results); executors run steps and start downstream ones."""
    from tickwork.control.api_bodies import WorkflowSpec
    from tickwork.faults import CrashPoint
    from tickwork.model.ids import step_run_id_for

    from tests.faults.crashes import ProcessKilled

    recorded, acting_as = _recorder(pipeline)

    workflows = pipeline.services.workflows
    steps = [
        {"id": "a", "type": "echo", "payload": {"n": 1}},
        {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"n": {"$from": "steps.a.result.n"}}},
        {
            "id": "c",
            "type": "echo",
            "depends_on": ["b"],
            "payload": {"fail_attempts": 9, "n": {"$from": "steps.b.result.n"}},
            "retry": {"max_attempts": 1},
        },
    ]
    spec = {"name": "wf", "schedule": {"at": START + FAR}, "steps": steps}
    with acting_as("ApiRole"):
        workflow = workflows.create(TENANT, WorkflowSpec.model_validate(spec))
        triggered = workflows.trigger(TENANT, workflow.id)
    with acting_as("ExecutorRole"):
        pipeline.drain()
    with acting_as("ApiRole"):
        assert workflows.get_run(TENANT, triggered.id).status.value == "FAILED"
        workflows.retry_run(TENANT, triggered.id)
    with acting_as("ExecutorRole"):
        pipeline.drain()
    # The scheduled run: b ends, but its executor dies before its workflow run hears of it; the tick reconciles.
    pipeline.clock.advance(FAR.total_seconds())
    with acting_as("TickRole"):
        pipeline.tick()
    pipeline.crashes.arm(CrashPoint.WORKFLOW_BEFORE_STEP_SETTLED, skip=1)  # a's end goes on, b's dies there
    with acting_as("ExecutorRole"), contextlib.suppress(ProcessKilled):
        pipeline.drain()
    pipeline.crashes.disarm()
    pipeline.clock.advance(300)
    with acting_as("TickRole"):
        pipeline.tick()
    with acting_as("ExecutorRole"):
        pipeline.drain()
    scheduled = run_id_for(workflow.id, START + FAR)
    assert pipeline.run(step_run_id_for(scheduled, "c")).status is RunStatus.FAILED
    with acting_as("ApiRole"):
        workflows.trigger(TENANT, workflow.id)
        workflows.cancel_run(TENANT, run_id_for(workflow.id, pipeline.clock.now(), RunTrigger.MANUAL))

    operations = {(role, op) for role, calls in recorded.items() for _, op, _ in calls}
    assert {("ApiRole", "BatchGetItem"), ("TickRole", "BatchGetItem"), ("TickRole", "GetObject")} <= operations
    assert {("ExecutorRole", "PutItem"), ("ExecutorRole", "SendMessageBatch")} <= operations
    assert _missing(recorded, template, pipeline.resources) == []


def test_every_call_of_a_fanned_out_tick_is_allowed_by_its_functions_role(mocked_aws, template):
    """Fan-out: the tick (TickRole) hands out slices; the dispatch workers and their event source mapping
    (DispatchRole: receive, claim, send, delete) claim and send; the executors run what they sent."""
    from tests.harness import Pipeline

    with Pipeline.create(DISPATCH_WORKERS="2") as pipeline:
        recorded, acting_as = _recorder(pipeline)

        jobs = [pipeline.create_job(schedule={"at": START + FAR + timedelta(milliseconds=i)}) for i in range(12)]
        pipeline.calls.clear()
        pipeline.clock.advance(FAR.total_seconds() + 1)  # all due: sent without a delay (moto's are real time)
        with acting_as("TickRole"):
            assert pipeline.tick()["slices_sent"] == 2
        with acting_as("DispatchRole"):
            assert pipeline.dispatch_all() == 2
        with acting_as("ExecutorRole"):
            pipeline.drain()
        assert {r.status for j in jobs for r in pipeline.runs_of(j.id)} == {RunStatus.SUCCEEDED}
        operations = {(role, op) for role, calls in recorded.items() for _, op, _ in calls}
        assert {("TickRole", "SendMessageBatch"), ("DispatchRole", "ReceiveMessage")} <= operations
        assert {
            ("DispatchRole", "PutItem"),
            ("DispatchRole", "SendMessageBatch"),
            ("DispatchRole", "DeleteMessage"),
        } <= operations
        assert ("TickRole", "PutItem") not in operations  # claims nothing
        # Its one Query: the redrives' audit records left pending (tickwork.tick.redrive_intents), not a shard.
        queried = [p["ExpressionAttributeValues"][":s"]["S"] for _, op, p in recorded["TickRole"] if op == "Query"]
        assert queried == ["AUDIT_INTENT"]
        assert _missing(recorded, template, pipeline.resources) == []


def test_every_call_of_a_durable_run_is_allowed_by_its_functions_role(pipeline, template):
    """Checkpoints to S3 (written, read by the next attempt, and the superseded ones deleted), progress and a
    retry from the checkpoint."""
    from tickwork.jobtypes.durable import INLINE_CHECKPOINT_MAX_BYTES

    import tests.durable_jobtypes  # noqa: F401  # registers checkpoint-export

    recorded, acting_as = _recorder(pipeline)
    payload = {"pages": 3, "fail_after_page": 0, "padding": INLINE_CHECKPOINT_MAX_BYTES + 1}
    with acting_as("ApiRole"):
        job = pipeline.create_job(type="checkpoint-export", payload=payload, schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    with acting_as("TickRole"):
        pipeline.tick()
    with acting_as("ExecutorRole"):
        pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED, run.error
    operations = {(role, op) for role, calls in recorded.items() for _, op, _ in calls}
    assert {
        ("ExecutorRole", "PutObject"),
        ("ExecutorRole", "GetObject"),
        ("ExecutorRole", "DeleteObject"),
    } <= operations
    assert _missing(recorded, template, pipeline.resources) == []


def _arn_patterns(template, role: str, action: str) -> list[str]:
    """The ARN patterns a role's Allow statements grant `action` on, their ${...} as the pipeline resolves them."""
    known = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}
    known["SecretNamePrefix"] = template["Parameters"]["SecretNamePrefix"]["Default"]
    patterns = []
    for r, statement in iam_statements(template):
        if r == role and statement["Effect"] == "Allow" and action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                text = resource["Fn::Sub"] if isinstance(resource, dict) else resource
                patterns.append(re.sub(r"\$\{([^}]*)\}", lambda m: known[m.group(1)], text))
    return patterns


def test_a_runs_secret_reads_are_allowed_by_the_executor_role_and_only_under_the_prefix(pipeline, template):
    """Secrets by reference: GetSecretValue and GetParameter on what the run names, under SecretNamePrefix."""
    import boto3

    secret_arn = boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name=f"tickwork/{TENANT}/token", SecretString="s3cr3t-for-iam"
    )["ARN"]
    boto3.client("ssm", region_name="us-east-1").put_parameter(
        Name=f"/tickwork/{TENANT}/key", Value="k3y-for-iam", Type="SecureString"
    )
    payload = {"token": {"$secret": f"tickwork/{TENANT}/token"}, "key": {"$parameter": f"/tickwork/{TENANT}/key"}}
    recorded, acting_as = _recorder(pipeline)
    job = pipeline.create_job(payload=payload, schedule={"at": START + FAR})
    pipeline.clock.advance(FAR.total_seconds())
    pipeline.tick()
    with acting_as("ExecutorRole"):
        pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert run.status is RunStatus.SUCCEEDED, run.error

    reads = {
        (service, op): params
        for service, op, params in recorded["ExecutorRole"]
        if service in ("secretsmanager", "ssm")
    }
    assert set(reads) == {("secretsmanager", "GetSecretValue"), ("ssm", "GetParameter")}
    secrets = _arn_patterns(template, "ExecutorRole", "secretsmanager:GetSecretValue")
    parameters = _arn_patterns(template, "ExecutorRole", "ssm:GetParameter")
    assert any(fnmatch.fnmatchcase(secret_arn, p) for p in secrets), secrets
    parameter_arn = f"arn:aws:ssm:us-east-1:123456789012:parameter/tickwork/{TENANT}/key"
    assert any(fnmatch.fnmatchcase(parameter_arn, p) for p in parameters), parameters
    outside = "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf"
    assert not any(fnmatch.fnmatchcase(outside, p) for p in secrets)
    (decrypt,) = [
        s for r, s in iam_statements(template) if r == "ExecutorRole" and "kms:Decrypt" in as_list(s["Action"])
    ]
    assert set(decrypt["Condition"]["StringEquals"]) == {"kms:ViaService"}  # a key only through the two services


def test_every_call_of_a_function_isolated_run_is_allowed_and_the_sandbox_makes_none(pipeline, template, monkeypatch):
    """A function-isolated job type (docs/security.md, "Isolation of job code"): the executor invokes the job sandbox
    (ExecutorRole's InvokeJobSandbox) and writes what its ctx did (checkpoint, progress, logs, result); the sandbox
    itself calls nothing (JobSandboxRole grants nothing to call: tests/template/test_job_sandbox_role.py)."""
    from tickwork.jobtypes.sandbox import JobSandbox

    import tests.isolated_jobtypes  # noqa: F401  # registers isolated-asked

    recorded, acting_as = _recorder(pipeline)
    real = JobSandbox.run

    def as_the_sandbox(self: JobSandbox, event: Any) -> dict[str, Any]:
        before = len(pipeline.calls.calls)
        try:
            return real(self, event)
        finally:
            made = pipeline.calls.calls[before:]
            del pipeline.calls.calls[before:]
            recorded["JobSandboxRole"].extend(made)

    monkeypatch.setattr(JobSandbox, "run", as_the_sandbox)
    with acting_as("ApiRole"):
        job = pipeline.create_job(
            type="isolated-asked", payload={"fail": "plain", "fail_attempts": 1}, schedule={"at": START + FAR}
        )
    pipeline.clock.advance(FAR.total_seconds())
    with acting_as("TickRole"):
        pipeline.tick()
    with acting_as("ExecutorRole"):
        pipeline.drain()
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.attempts) == (RunStatus.SUCCEEDED, 2), run.error
    operations = {(role, op) for role, calls in recorded.items() for _, op, _ in calls}
    assert {("ExecutorRole", "Invoke"), ("ExecutorRole", "PutObject"), ("ExecutorRole", "UpdateItem")} <= operations
    assert recorded["JobSandboxRole"] == []
    assert _missing(recorded, template, pipeline.resources) == []


def test_every_call_of_the_resource_provider_is_allowed_by_its_role(pipeline, template, monkeypatch):
    """CloudFormation's custom resources (tickwork.control.cfn_provider): a calendar, a job naming it (due soon:
    claimed and sent at once) and a workflow created, the job changed in place and replaced, then all deleted."""
    from tickwork.control.cfn_provider import CfnRequest

    monkeypatch.setenv("RESOURCE_PROVIDER_TENANTS", TENANT)
    provider = pipeline.services.resource_provider
    recorded, acting_as = _recorder(pipeline)
    stack = "arn:aws:cloudformation:us-east-1:123456789012:stack/team/0a1b"
    made: dict[str, str] = {}

    def request(kind: str, request_type: str, props: dict[str, Any], old: dict[str, Any] | None = None) -> str:
        event = {
            "RequestType": request_type,
            "ResponseURL": "https://example.s3.amazonaws.com/r",
            "StackId": stack,
            "RequestId": f"{kind}-{request_type}-{len(made)}",
            "LogicalResourceId": kind,
            "ResourceType": f"Custom::Tickwork{kind}",
            "PhysicalResourceId": made.get(kind),
            "ResourceProperties": {"Tenant": TENANT, **props},
            "OldResourceProperties": None if old is None else {"Tenant": TENANT, **old},
        }
        answer = provider.handle(CfnRequest.model_validate(event))
        assert answer.Status == "SUCCESS", answer.Reason
        made[kind] = answer.PhysicalResourceId
        return answer.PhysicalResourceId

    with acting_as("ResourceProviderRole"):
        calendar = {"name": "iam-calendar", "windows": [{"dates": ["2027-01-01"]}]}
        calendar_id = request("Calendar", "Create", calendar)
        job = {"name": "iam-job", "type": "echo", "schedule": {"at": (START + timedelta(seconds=5)).isoformat()}}
        job |= {"calendars": [calendar_id]}
        request("Job", "Create", job)
        request("Job", "Update", {**job, "priority": "2"}, job)
        replaced = {**job, "type": "http", "payload": {"url": "https://example.com"}, "priority": "2"}
        request("Job", "Update", replaced, {**job, "priority": "2"})
        workflow = {"name": "iam-wf", "schedule": {"rate": "1 hour"}, "steps": [{"id": "a", "type": "echo"}]}
        request("Workflow", "Create", workflow)
        request("Workflow", "Delete", workflow)
        request("Job", "Delete", replaced)
        request("Calendar", "Delete", calendar)

    calls = recorded["ResourceProviderRole"]
    assert {"PutItem", "UpdateItem", "GetItem", "TransactWriteItems", "SendMessageBatch"} <= {op for _, op, _ in calls}
    transacted = [item for _, op, p in calls if op == "TransactWriteItems" for item in p["TransactItems"]]
    assert any("Delete" in item for item in transacted), "no calendar deleted"
    assert _missing(recorded, template, pipeline.resources) == []


@pytest.mark.parametrize(("workers", "role"), [("1", "TickRole"), ("2", "DispatchRole")])
def test_every_call_of_a_warm_up_before_a_burst_is_allowed_by_its_functions_role(mocked_aws, template, workers, role):
    """Before a burst it sees coming, the tick (or, fanned out, a dispatch worker) invokes the executor (warming
    invocations) and raises the table's warm throughput (DescribeTable, UpdateTable)."""
    from tests.harness import Pipeline, _process_aws

    name = "tickwork-ExecutorFunction"
    env = {"EXECUTOR_WARMUP": "invocations", "TABLE_WARMUP": "on", "EXECUTOR_FUNCTION_NAME": name}
    with Pipeline.create(DISPATCH_WORKERS=workers, **env) as pipeline:
        _process_aws().invokes.serve(name, _Accepted())
        warmup = pipeline.services.burst_warmup
        assert warmup is not None
        warmup.policy = warmup.policy.model_copy(update={"write_units_per_run": 100})
        recorded, acting_as = _recorder(pipeline)
        for _ in range(60):
            pipeline.create_job(schedule={"at": START + FAR})
        pipeline.clock.advance(FAR.total_seconds() - 90)
        with acting_as("TickRole"):
            pipeline.tick()  # fanned out, it hands out the slices
        with acting_as("DispatchRole"):
            pipeline.dispatch_all()
        operations = {op for _, op, _ in recorded[role]}
        assert {"Invoke", "DescribeTable", "UpdateTable"} <= operations
        assert _missing(recorded, template, pipeline.resources) == []


class _Accepted:
    """The executor, as far as a warming invocation's caller sees it: accepted, nothing run."""

    def invoke(self, event: Any) -> Any:
        return {"warmed": True}


def test_every_call_of_strongs_expiry_sweep_is_allowed_by_the_ticks_role(mocked_aws, template):
    """RegionMode strong (no TTL): the tick reads the expiry index and deletes what has expired (tickwork.tick.expiry_sweep)."""
    from tests.harness import Pipeline
    from tests.integration.test_expiry_sweep import STRONG

    with Pipeline.create(parameters=STRONG, RUN_RETENTION_DAYS="1") as pipeline:
        recorded, acting_as = _recorder(pipeline)
        pipeline.create_job(name="iam-expiring", type="echo", schedule={"at": START + FAR})
        pipeline.clock.advance(FAR.total_seconds())
        with acting_as("TickRole"):
            pipeline.tick()
        pipeline.drain()
        pipeline.clock.advance(timedelta(days=2).total_seconds())
        with acting_as("TickRole"):
            assert pipeline.services.minute_tick.run().expired_deleted == 1  # the run, a day after it ended
        operations = {(op, p.get("IndexName")) for _, op, p in recorded["TickRole"]}
        assert {("DeleteItem", None), ("Query", "expiry-index")} <= operations
        assert _missing(recorded, template, pipeline.resources) == []
