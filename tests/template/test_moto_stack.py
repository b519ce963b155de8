"""The translated template is created as a stack in moto's CloudFormation, and what it builds is checked.

moto cannot create API Gateway resources and alarms: those are stripped (the list is asserted
below), references to them are replaced by literals, and both are covered by test_structure.py.
"""

from __future__ import annotations

import ast
import json
from types import SimpleNamespace

import boto3
import pytest
from moto import mock_aws
from template_support import evaluate, strip_for_moto, upload_placeholder_code
from tickwork.settings import Settings
from tickwork_local.aws.provision import provision

# moto warns about each resource type it has no CloudFormation model for (listed in a test below).
pytestmark = pytest.mark.filterwarnings("ignore:Tried to parse AWS:UserWarning")

STACK = "tickwork-test"
BANDS = {"high": "High", "normal": "Normal", "low": "Low"}
ALARMS = {
    "HighDeadLetterQueueAlarm",
    "NormalDeadLetterQueueAlarm",
    "LowDeadLetterQueueAlarm",
    "TickDeadLetterQueueAlarm",
    "TickErrorsAlarm",
    "TickNotRunningAlarm",
    "ExecutorErrorsAlarm",
    "ExecutorThrottlesAlarm",
    "HighQueueAgeAlarm",
    "NormalQueueAgeAlarm",
    "LowQueueAgeAlarm",
    "StartLatenessAlarm",
    "ApiServerErrorsAlarm",
    "DispatchCapacityAlarm",
    "SuspendedJobsAlarm",
    "DeadlineMissedAlarm",
    "StuckRunsAlarm",
    "ExecutorUtilisationAlarm",
    "RetriesAlarm",
    "OrderingKeyBlockedAlarm",
    "FailedRunsAlarm",
    "AuditArchiveFailuresAlarm",
}


@pytest.fixture(scope="module")
def stack(template, translated):
    body, stripped, stubbed = strip_for_moto(translated)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        patch.delenv("AWS_PROFILE", raising=False)
        with mock_aws():
            s3 = boto3.client("s3")
            upload_placeholder_code(s3)
            cloudformation = boto3.client("cloudformation")
            cloudformation.create_stack(StackName=STACK, TemplateBody=json.dumps(body), Capabilities=["CAPABILITY_IAM"])
            described = cloudformation.describe_stacks(StackName=STACK)["Stacks"][0]
            resources = cloudformation.describe_stack_resources(StackName=STACK)["StackResources"]
            yield SimpleNamespace(
                body=body,
                stripped=stripped,
                stubbed=stubbed,
                status=described["StackStatus"],
                outputs={o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])},
                # moto lists resources it skipped without a LogicalResourceId
                physical={
                    r["LogicalResourceId"]: r.get("PhysicalResourceId") for r in resources if "LogicalResourceId" in r
                },
                s3=s3,
                dynamodb=boto3.client("dynamodb"),
                sqs=boto3.client("sqs"),
                awslambda=boto3.client("lambda"),
                events=boto3.client("events"),
                iam=boto3.client("iam"),
                cloudwatch=boto3.client("cloudwatch"),
            )


def _queue_arn(stack, logical_id: str) -> str:
    url = stack.physical[logical_id]
    return stack.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]


def _function(stack, logical_id: str) -> dict:
    return stack.awslambda.get_function_configuration(FunctionName=stack.physical[logical_id])


def test_only_api_gateway_and_alarms_are_stripped(stack):
    assert set(stack.stripped) == {
        "HttpApi",
        "HttpApiApiGatewayDefaultStage",
        "ApiFunctionProxyPermission",  # lets API Gateway invoke ApiFunction; meaningless without the API
        # The token API (off with the defaults this stack is made with), and its permission to invoke ApiFunction.
        *(f"TokenApi{part}" for part in ("", "Authorizer", "Integration", "Route", "Stage", "InvokePermission")),
        "TokenApiConsoleRoute",  # the hosted console's open routes (HostedConsole, on with the token API)
        "TokenApiConsoleFilesRoute",
        "TokenApiServerErrorsAlarm",
        # Replication's (RegionMode eventual, off here).
        *(f"ReplicationLatencyAlarm{i}" for i in (1, 2, 3)),
        *ALARMS,
    }
    # Kept, with their references to stripped resources replaced by literals:
    assert stack.stubbed == {
        "Dashboard": sorted({"HttpApi", *ALARMS}),
        "Outputs.ApiUrl": ["HttpApi"],
        "ApiCallerPolicy": ["HttpApi"],
        "ApiAdminPolicy": ["HttpApi"],
        "Outputs.TokenApiUrl": ["TokenApi"],  # under its condition, off here
        "Outputs.ConsoleUrl": ["TokenApi"],  # the hosted console's, likewise
        "UserPoolClient": ["TokenApi"],  # its callback, the hosted console (CreateUserPool, off here)
    }


def test_stack_reaches_create_complete(stack):
    assert stack.status == "CREATE_COMPLETE"


def test_everything_else_is_created_and_what_moto_skips_is_known(stack, template):
    created = set(stack.physical)
    conditional = {k for k, r in stack.body["Resources"].items() if "Condition" in r}
    # Off with the defaults: AlarmEmail is "", VpcSubnetIds is empty (test_private_network.py renders them set).
    assert "AlarmEmailSubscription" in conditional
    on = {k for k in conditional if evaluate(template, {"Condition": stack.body["Resources"][k]["Condition"]})}
    # On with the defaults, only the jobs table: the stack's own in one region (test_regions.py renders the others).
    assert on == {"JobsTable"}
    expected = set(stack.body["Resources"]) - conditional | on
    # moto's CloudFormation accepts but does not create these (it has no model for them);
    # test_structure.py and test_sam_translate.py check them instead. (It lists the layer but
    # does not attach it to the functions.)
    skipped = {
        "TickFunctionEventInvokeConfig",
        "ResultsBucketPolicy",
        "ResultsAccessLogsBucketPolicy",
        "AuditBucketPolicy",
        "TickDeadLetterQueuePolicy",
        "CursorSecret",
    }
    assert expected - created == skipped


def test_the_caller_policies_are_created_and_named_by_the_outputs(stack):
    for name in ("ApiCallerPolicy", "ApiAdminPolicy"):
        arn = stack.outputs[f"{name}Arn"]
        policy = stack.iam.get_policy(PolicyArn=arn)["Policy"]
        document = stack.iam.get_policy_version(PolicyArn=arn, VersionId=policy["DefaultVersionId"])
        statements = document["PolicyVersion"]["Document"]["Statement"]
        assert statements[0]["Action"] == "execute-api:Invoke"
        assert statements[0]["Resource"] == "arn:aws:execute-api:us-east-1:123456789012:stripped-HttpApi/*"


def test_table_has_its_key_schema_and_gsis(stack):
    table = stack.dynamodb.describe_table(TableName=stack.physical["JobsTable"])["Table"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    indexes = {i["IndexName"]: i for i in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"due-index", "tenant-index", "runs-index"}
    assert [k["AttributeName"] for k in indexes["due-index"]["KeySchema"]] == ["due_shard", "due_at"]
    assert indexes["due-index"]["Projection"]["ProjectionType"] == "INCLUDE"
    assert [k["AttributeName"] for k in indexes["tenant-index"]["KeySchema"]] == ["tenant_key", "tenant_sort"]
    assert indexes["tenant-index"]["Projection"]["ProjectionType"] == "INCLUDE"
    assert [k["AttributeName"] for k in indexes["runs-index"]["KeySchema"]] == ["runs_key", "runs_sort"]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"


@pytest.mark.parametrize("band", BANDS)
def test_band_queue_redrives_to_its_own_dlq(stack, band):
    prefix = BANDS[band]
    attributes = stack.sqs.get_queue_attributes(QueueUrl=stack.physical[f"{prefix}Queue"], AttributeNames=["All"])[
        "Attributes"
    ]
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == _queue_arn(stack, f"{prefix}DeadLetterQueue")
    assert int(redrive["maxReceiveCount"]) == 120
    assert int(attributes["VisibilityTimeout"]) >= 6 * _function(stack, "ExecutorFunction")["Timeout"]


def test_results_bucket_exists(stack):
    stack.s3.head_bucket(Bucket=stack.physical["ResultsBucket"])
    assert stack.outputs["ResultsBucketName"] == stack.physical["ResultsBucket"]


@pytest.mark.parametrize("function", ["TickFunction", "ExecutorFunction", "ApiFunction"])
def test_functions_have_handler_and_environment_resolved_to_physical_names(stack, function):
    config = _function(stack, function)
    assert config["Handler"] == "app.handler"
    assert config["Runtime"] == "python3.13"
    env = {k: str(v) for k, v in config["Environment"]["Variables"].items()}
    assert env["TABLE_NAME"] == stack.physical["JobsTable"]
    assert env["RESULTS_BUCKET"] == stack.physical["ResultsBucket"]
    for band, prefix in BANDS.items():
        assert env[f"QUEUE_URL_{band.upper()}"] == stack.physical[f"{prefix}Queue"]
        assert env[f"DLQ_URL_{band.upper()}"] == stack.physical[f"{prefix}DeadLetterQueue"]
    assert env["POWERTOOLS_SERVICE_NAME"] == "tickwork"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "Tickwork"
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert (env.get("API_AUTH_MODE") == "iam") is (function == "ApiFunction")
    settings = Settings.from_env(env)
    assert settings.due_shards == 8


def test_executor_has_one_mapping_per_band_with_weighted_concurrency(stack):
    executor_arn = _function(stack, "ExecutorFunction")["FunctionArn"]
    mappings = stack.awslambda.list_event_source_mappings(FunctionName=stack.physical["ExecutorFunction"])[
        "EventSourceMappings"
    ]
    by_queue = {m["EventSourceArn"]: m for m in mappings}
    concurrency = {}
    for band, prefix in BANDS.items():
        mapping = by_queue.pop(_queue_arn(stack, f"{prefix}Queue"))
        assert mapping["FunctionArn"] == executor_arn
        assert mapping["BatchSize"] == 10
        assert mapping["MaximumBatchingWindowInSeconds"] == 0
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        concurrency[band] = mapping["ScalingConfig"]["MaximumConcurrency"]
    assert by_queue == {}
    assert concurrency == {"high": 50, "normal": 20, "low": 5}


def test_tick_rule_fires_every_minute_into_tick_function(stack):
    rule_name = stack.physical["TickFunctionEveryMinute"]
    rule = stack.events.describe_rule(Name=rule_name)
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule["State"] == "ENABLED"
    (target,) = stack.events.list_targets_by_rule(Rule=rule_name)["Targets"]
    assert target["Arn"] == _function(stack, "TickFunction")["FunctionArn"]
    assert target["DeadLetterConfig"]["Arn"] == _queue_arn(stack, "TickDeadLetterQueue")
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 2


def test_roles_name_the_stacks_physical_resources(stack):
    role_name = stack.physical["ExecutorRole"]
    (policy_name,) = stack.iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    document = stack.iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
    if isinstance(document, str):  # moto hands back the Python repr of the CloudFormation dict
        document = ast.literal_eval(document)
    # A statement granted only in a region mode is `!If [..., !Ref AWS::NoValue]`: CloudFormation drops it; moto's
    # stack leaves a None in its place.
    statements = {s["Sid"]: s for s in document["Statement"] if s is not None}
    band_arns = {_queue_arn(stack, f"{p}Queue") for p in BANDS.values()}
    assert set(statements["ConsumeBands"]["Resource"]) == band_arns
    table_arn = stack.dynamodb.describe_table(TableName=stack.physical["JobsTable"])["Table"]["TableArn"]
    assert statements["RunState"]["Resource"] == table_arn
    assert statements["Results"]["Resource"] == f"arn:aws:s3:::{stack.physical['ResultsBucket']}/*"
    assert statements["LambdaJobType"]["Resource"] == ("arn:aws:lambda:us-east-1:123456789012:function:tickwork-job-*")


def test_dashboard_is_created_with_physical_names(stack):
    (entry,) = stack.cloudwatch.list_dashboards()["DashboardEntries"]
    assert entry["DashboardName"] == stack.outputs["DashboardName"] == f"{STACK}-tickwork"
    body = json.loads(stack.cloudwatch.get_dashboard(DashboardName=entry["DashboardName"])["DashboardBody"])
    queue_names = {
        metric[3]
        for widget in body["widgets"]
        for metric in widget["properties"].get("metrics", [])
        if metric[0] == "AWS/SQS"
    }
    expected = {
        stack.physical[f"{p}{kind}"].rsplit("/", 1)[-1] for p in BANDS.values() for kind in ("Queue", "DeadLetterQueue")
    }
    expected.add(stack.physical["TickDeadLetterQueue"].rsplit("/", 1)[-1])
    assert queue_names == expected


def test_outputs(stack):
    assert stack.outputs["TableName"] == stack.physical["JobsTable"]
    assert stack.outputs["HighQueueUrl"] == stack.physical["HighQueue"]
    assert stack.outputs["AlarmTopicArn"] == stack.physical["AlarmTopic"]
    assert {"ApiUrl", "NormalQueueUrl", "LowQueueUrl", "DashboardName"} <= stack.outputs.keys()


def test_provision_builds_the_same_table_and_queues_as_cloudformation(stack, template):
    """The local helper and CloudFormation read the same properties and build the same things."""
    local = provision(template, dynamodb=stack.dynamodb, sqs=stack.sqs, s3=stack.s3, prefix="local")

    def table_shape(name):
        table = stack.dynamodb.describe_table(TableName=name)["Table"]
        indexes = sorted(
            (i["IndexName"], json.dumps(i["KeySchema"]), json.dumps(i["Projection"], sort_keys=True))
            for i in table["GlobalSecondaryIndexes"]
        )
        return table["KeySchema"], sorted(table["AttributeDefinitions"], key=lambda d: d["AttributeName"]), indexes

    assert table_shape(local.table_name) == table_shape(stack.physical["JobsTable"])

    compared = ("VisibilityTimeout", "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds", "SqsManagedSseEnabled")
    for band, prefix in BANDS.items():
        for url_local, logical_id in (
            (local.queue_urls[band], f"{prefix}Queue"),
            (local.dlq_urls[band], f"{prefix}DeadLetterQueue"),
        ):
            a = stack.sqs.get_queue_attributes(QueueUrl=url_local, AttributeNames=["All"])["Attributes"]
            b = stack.sqs.get_queue_attributes(QueueUrl=stack.physical[logical_id], AttributeNames=["All"])[
                "Attributes"
            ]
            assert {k: a.get(k) for k in compared} == {k: b.get(k) for k in compared}
            assert ("RedrivePolicy" in a) is ("RedrivePolicy" in b)
