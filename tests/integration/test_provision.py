"""The local table, queues and bucket come from template.yaml's own resource properties."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from moto.server import ThreadedMotoServer
from tickwork.settings import ApiSettings, Settings
from tickwork.store.cursors import cursor_key
from tickwork_local.aws.provision import ProvisionedResources, provision
from tickwork_local.stack.template import load_template

TEMPLATE = load_template()
RESOURCES = TEMPLATE["Resources"]


def _fake_credentials(patch: pytest.MonkeyPatch) -> None:
    patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    patch.setenv("AWS_ACCESS_KEY_ID", "testing")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    patch.setenv("AWS_SESSION_TOKEN", "testing")
    patch.delenv("AWS_ENDPOINT_URL", raising=False)
    patch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture(scope="module")
def clients():
    """Made once (client creation is the slow part); moto intercepts them inside each test's mock_aws."""
    with pytest.MonkeyPatch.context() as patch:
        _fake_credentials(patch)
        yield {name: boto3.client(name) for name in ("dynamodb", "sqs", "s3")}


@pytest.fixture
def aws(clients, monkeypatch):
    _fake_credentials(monkeypatch)
    with mock_aws():
        yield clients


@pytest.fixture
def provisioned(aws) -> ProvisionedResources:
    return provision(TEMPLATE, **aws)


def _queue_attributes(sqs, url: str) -> dict[str, str]:
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]


def test_table_has_the_template_key_schema_and_both_gsis(aws, provisioned):
    table = aws["dynamodb"].describe_table(TableName=provisioned.table_name)["Table"]
    props = RESOURCES["JobsTable"]["Properties"]

    assert provisioned.table_name == "tickwork-JobsTable"
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert {d["AttributeName"]: d["AttributeType"] for d in table["AttributeDefinitions"]} == {
        d["AttributeName"]: d["AttributeType"] for d in props["AttributeDefinitions"]
    }
    indexes = {gsi["IndexName"]: gsi for gsi in table["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"due-index", "tenant-index", "runs-index"}
    assert indexes["due-index"]["KeySchema"] == [
        {"AttributeName": "due_shard", "KeyType": "HASH"},
        {"AttributeName": "due_at", "KeyType": "RANGE"},
    ]
    assert indexes["due-index"]["Projection"]["ProjectionType"] == "INCLUDE"
    template_due = next(i for i in props["GlobalSecondaryIndexes"] if i["IndexName"] == "due-index")
    assert indexes["due-index"]["Projection"]["NonKeyAttributes"] == template_due["Projection"]["NonKeyAttributes"]
    assert "created_at" in indexes["due-index"]["Projection"]["NonKeyAttributes"]
    assert indexes["tenant-index"]["KeySchema"] == [
        {"AttributeName": "tenant_key", "KeyType": "HASH"},
        {"AttributeName": "tenant_sort", "KeyType": "RANGE"},
    ]
    assert indexes["tenant-index"]["Projection"]["ProjectionType"] == "INCLUDE"
    assert table["SSEDescription"]["Status"] == "ENABLED"
    assert table["DeletionProtectionEnabled"] is True


def test_table_ttl_and_point_in_time_recovery(aws, provisioned):
    ddb = aws["dynamodb"]
    ttl = ddb.describe_time_to_live(TableName=provisioned.table_name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}
    backups = ddb.describe_continuous_backups(TableName=provisioned.table_name)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"


def test_deletion_protection_follows_the_parameter(aws):
    resources = provision(TEMPLATE, **aws, prefix="unprotected", parameters={"TableDeletionProtection": "false"})
    table = aws["dynamodb"].describe_table(TableName=resources.table_name)["Table"]
    assert table["DeletionProtectionEnabled"] is False
    aws["dynamodb"].delete_table(TableName=resources.table_name)


@pytest.mark.parametrize("band", ["high", "normal", "low"])
def test_band_queue_redrives_to_its_own_dlq(aws, provisioned, band):
    sqs = aws["sqs"]
    queue = _queue_attributes(sqs, provisioned.queue_urls[band])
    dlq = _queue_attributes(sqs, provisioned.dlq_urls[band])

    redrive = json.loads(queue["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == dlq["QueueArn"]
    assert int(redrive["maxReceiveCount"]) == 120  # parameter MaxReceiveCount's default
    assert queue["VisibilityTimeout"] == "5400"
    assert queue["ReceiveMessageWaitTimeSeconds"] == "20"
    assert queue["SqsManagedSseEnabled"] == "true"
    assert dlq["MessageRetentionPeriod"] == "1209600"
    assert dlq["SqsManagedSseEnabled"] == "true"
    assert "RedrivePolicy" not in dlq


def test_max_receive_count_comes_from_parameters(aws):
    resources = provision(TEMPLATE, **aws, prefix="custom", parameters={"MaxReceiveCount": "7"})
    queue = _queue_attributes(aws["sqs"], resources.queue_urls["high"])
    assert json.loads(queue["RedrivePolicy"])["maxReceiveCount"] == 7


def test_every_template_queue_is_created(aws, provisioned):
    assert provisioned.extra_queue_urls.keys() == {"TickDeadLetterQueue", "DispatchQueue"}
    assert provisioned.extra_queue_urls["TickDeadLetterQueue"].endswith("/tickwork-TickDeadLetterQueue")
    queue_ids = {k for k, r in RESOURCES.items() if r["Type"] == "AWS::SQS::Queue"}
    urls = [*provisioned.queue_urls.values(), *provisioned.dlq_urls.values(), *provisioned.extra_queue_urls.values()]
    assert len(urls) == len(queue_ids) == len(set(urls))


def test_queue_messages_really_redrive(aws):
    resources = provision(TEMPLATE, **aws, prefix="redrive", parameters={"MaxReceiveCount": "1"})
    sqs = aws["sqs"]
    sqs.send_message(QueueUrl=resources.queue_urls["low"], MessageBody="poison")
    first = sqs.receive_message(QueueUrl=resources.queue_urls["low"], VisibilityTimeout=0, WaitTimeSeconds=0)[
        "Messages"
    ]
    assert [m["Body"] for m in first] == ["poison"]
    again = sqs.receive_message(QueueUrl=resources.queue_urls["low"], WaitTimeSeconds=0).get("Messages", [])
    assert again == []
    dead = sqs.receive_message(QueueUrl=resources.dlq_urls["low"], WaitTimeSeconds=0)["Messages"]
    assert [m["Body"] for m in dead] == ["poison"]


def test_bucket_is_private_encrypted_and_expires_results(aws, provisioned):
    s3 = aws["s3"]
    name = provisioned.results_bucket
    assert name == "tickwork-resultsbucket"
    s3.head_bucket(Bucket=name)
    encryption = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
    assert encryption[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    block = s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"]
    assert block == {
        "BlockPublicAcls": True,
        "IgnorePublicAcls": True,
        "BlockPublicPolicy": True,
        "RestrictPublicBuckets": True,
    }
    ownership = s3.get_bucket_ownership_controls(Bucket=name)["OwnershipControls"]["Rules"]
    assert ownership == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    rules = s3.get_bucket_lifecycle_configuration(Bucket=name)["Rules"]
    assert rules[0]["Expiration"] == {"Days": 30}  # parameter ResultsRetentionDays's default


def test_environment_resolves_names_and_parameter_defaults(provisioned):
    env = provisioned.environment()
    assert env["TABLE_NAME"] == provisioned.table_name
    assert env["RESULTS_BUCKET"] == provisioned.results_bucket
    for band in ("high", "normal", "low"):
        assert env[f"QUEUE_URL_{band.upper()}"] == provisioned.queue_urls[band]
        assert env[f"DLQ_URL_{band.upper()}"] == provisioned.dlq_urls[band]
    assert env["DUE_SHARDS"] == "8"
    assert env["RUN_RETENTION_DAYS"] == "30"
    assert env["HTTP_ALLOWLIST"] == ""
    assert env["POWERTOOLS_SERVICE_NAME"] == "tickwork"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "Tickwork"
    assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
    assert "API_AUTH_MODE" not in env
    assert all(isinstance(v, str) for v in env.values())


def test_a_generated_secret_is_unset_locally_so_every_node_derives_the_same_cursor_key(provisioned):
    # Deployed, CloudFormation resolves CursorSecret's dynamic reference; locally there is no Secrets Manager.
    for function in ("ApiFunction", "TickFunction", "ExecutorFunction"):
        env = provisioned.environment(function)
        assert env["CURSOR_SECRET"] == ""
        settings = Settings.from_env(env)
        assert cursor_key(settings.table_name, settings.cursor_secret) == cursor_key(provisioned.table_name)


def test_environment_merges_function_variables_and_overrides(provisioned):
    api = provisioned.environment("ApiFunction", overrides={"POWERTOOLS_LOG_LEVEL": "DEBUG"})
    assert api["API_AUTH_MODE"] == "iam"
    assert api["TABLE_NAME"] == provisioned.table_name
    assert api["POWERTOOLS_LOG_LEVEL"] == "DEBUG"
    with pytest.raises(KeyError):
        provisioned.environment("NoSuchFunction")


def test_the_local_api_function_accepts_no_tokens(provisioned):
    """The template's token settings resolve locally (no user pool, no issuer): the API accepts no bearer token."""
    api = provisioned.environment("ApiFunction")
    assert (api["JWT_ISSUER"], api["JWT_TENANT_CLAIM"]) == ("", "groups")
    assert ApiSettings.from_env(api).jwt_issuer is None


def test_environment_is_valid_settings(provisioned):
    settings = Settings.from_env(provisioned.environment("TickFunction"))
    assert settings.table_name == provisioned.table_name
    assert settings.queue_url_high == provisioned.queue_urls["high"]


def test_environment_uses_parameter_overrides(aws):
    resources = provision(TEMPLATE, **aws, prefix="params", parameters={"DueShards": "3", "LogLevel": "DEBUG"})
    env = resources.environment("TickFunction")
    assert env["DUE_SHARDS"] == "3"
    assert env["POWERTOOLS_LOG_LEVEL"] == "DEBUG"


def test_if_missing_is_idempotent_and_keeps_data(aws, provisioned):
    aws["dynamodb"].put_item(TableName=provisioned.table_name, Item={"pk": {"S": "a"}, "sk": {"S": "b"}})
    aws["sqs"].send_message(QueueUrl=provisioned.queue_urls["high"], MessageBody="kept")

    again = provision(TEMPLATE, **aws, if_missing=True)

    assert again == provisioned
    assert again.environment() == provisioned.environment()
    items = aws["dynamodb"].scan(TableName=provisioned.table_name)["Items"]
    assert items == [{"pk": {"S": "a"}, "sk": {"S": "b"}}]
    depth = _queue_attributes(aws["sqs"], provisioned.queue_urls["high"])["ApproximateNumberOfMessages"]
    assert depth == "1"


def test_if_missing_creates_what_is_absent(aws, provisioned):
    aws["sqs"].delete_queue(QueueUrl=provisioned.queue_urls["low"])
    aws["s3"].delete_bucket(Bucket=provisioned.results_bucket)

    again = provision(TEMPLATE, **aws, if_missing=True)

    assert again == provisioned
    aws["s3"].head_bucket(Bucket=provisioned.results_bucket)
    redrive = json.loads(_queue_attributes(aws["sqs"], again.queue_urls["low"])["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"].endswith(":tickwork-LowDeadLetterQueue")


def test_without_if_missing_an_existing_table_is_an_error(aws, provisioned):
    with pytest.raises(aws["dynamodb"].exceptions.ResourceInUseException):
        provision(TEMPLATE, **aws)


def test_prefixes_isolate_deployments(aws, provisioned):
    other = provision(TEMPLATE, **aws, prefix="other")
    assert other.table_name == "other-JobsTable"
    assert other.results_bucket == "other-resultsbucket"
    assert set(other.queue_urls.values()).isdisjoint(provisioned.queue_urls.values())


@pytest.mark.parametrize("mode", ["strong", "eventual"])
def test_a_multi_region_stacks_results_bucket_is_named_for_its_region_as_deployed(aws, mode):
    """So that another region's API derives its name (docs/regions.md, "Results"); the audit bucket is as before."""
    parameters = {
        "RegionMode": mode,
        "GlobalTableName": "tickwork-JobsTable",
        "GlobalTableRegions": "us-east-1,us-west-2",
    }
    resources = provision(TEMPLATE, **aws, parameters=parameters)
    assert resources.results_bucket == "tickwork-results-123456789012-us-east-1"
    aws["s3"].head_bucket(Bucket=resources.results_bucket)
    assert resources.environment("ApiFunction")["RESULTS_BUCKET"] == resources.results_bucket


def test_a_single_regions_results_bucket_keeps_the_prefixs_name(provisioned):
    assert provisioned.results_bucket == "tickwork-resultsbucket"


def test_works_against_a_moto_server(monkeypatch):
    _fake_credentials(monkeypatch)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        clients = {name: boto3.client(name, endpoint_url=endpoint) for name in ("dynamodb", "sqs", "s3")}
        resources = provision(TEMPLATE, **clients)
        again = provision(TEMPLATE, **clients, if_missing=True)
        assert again == resources
        gsis = clients["dynamodb"].describe_table(TableName=resources.table_name)["Table"]["GlobalSecondaryIndexes"]
        assert {g["IndexName"] for g in gsis} == {"due-index", "tenant-index", "runs-index"}
        assert resources.environment()["QUEUE_URL_HIGH"].startswith(endpoint)
    finally:
        server.stop()
