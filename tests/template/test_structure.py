"""Structural checks of template.yaml (and its translation) for what moto cannot verify:
encryption, public access, TLS-only policy, timeouts, alarms, event sources, least privilege."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from template_support import _references, as_list, dashboard_json, evaluate, iam_statements
from tickwork.settings import JobCodeSettings, Settings
from tickwork.store import DUE_INDEX, DUE_INDEX_PROJECTION, TENANT_INDEX, TENANT_INDEX_PROJECTION
from tickwork.store.run_search import RUNS_INDEX, RUNS_INDEX_PROJECTION
from tickwork_local.stack.template import REPO_ROOT

BANDS = ("High", "Normal", "Low")
QUEUES = (
    *(f"{b}Queue" for b in BANDS),
    *(f"{b}DeadLetterQueue" for b in BANDS),
    "TickDeadLetterQueue",
    "DispatchQueue",
)
FUNCTIONS = {
    "TickFunction": "tick",
    "ExecutorFunction": "executor",
    "ApiFunction": "api",
    "DispatchFunction": "dispatch",
    "ResourceProviderFunction": "resource_provider",
}
METRICS = [
    "RunsDispatched",
    "DispatchLagMs",
    "StartLatenessMs",
    "RunDurationMs",
    "RunsSucceeded",
    "RunsFailed",
    "RunsRetried",
    "RunsSkipped",
    "TickDurationMs",
    "RunsHeldBackCapacity",
    "RunsHeldBackTenantRate",
]
# Actions that have no resource-level permissions: the only ones allowed on "*".
NO_RESOURCE_LEVEL = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "cloudwatch:GetMetricData"}


def _props(template, logical_id):
    return template["Resources"][logical_id]["Properties"]


def _default(template, parameter):
    return template["Parameters"][parameter]["Default"]


def _of_type(template, type_):
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


# ---------------------------------------------------------------- globals and layer


def test_globals_runtime_architecture_tracing(template):
    function = template["Globals"]["Function"]
    assert function["Runtime"] == "python3.13"
    assert function["Architectures"] == ["arm64"]
    assert function["Tracing"] == "Active"
    assert function["Layers"][0] == {"Ref": "SharedLayer"}
    assert 128 <= function["MemorySize"] <= 3008
    assert function["Timeout"] <= 60


def _environment(template, logical_id):
    """A function's environment as SAM deploys it: Globals' variables merged with its own."""
    own = _props(template, logical_id).get("Environment", {}).get("Variables", {})
    return {**template["Globals"]["Function"]["Environment"]["Variables"], **own}


POWERTOOLS = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}


def test_globals_environment_is_the_job_codes_settings_and_each_function_has_the_stacks(template):
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env.keys() == {field.alias for field in JobCodeSettings.model_fields.values()} | POWERTOOLS
    assert env["POWERTOOLS_SERVICE_NAME"] == "tickwork"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "Tickwork"
    assert env["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
    aliases = {field.alias for field in Settings.model_fields.values()}
    # The executor's own: the job sandbox is a function of the stack, so the others cannot name it (a cycle).
    executor_only = {"JOB_SANDBOX_FUNCTION"}
    # And the executor cannot be told its own name (the tick's warming invocations, the API's metrics): a cycle.
    not_the_executors = {"EXECUTOR_FUNCTION_NAME"}
    stacks = {fid: _environment(template, fid) for fid in FUNCTIONS}
    for fid, env in stacks.items():
        own = aliases - executor_only - (not_the_executors if fid == "ExecutorFunction" else set())
        assert own <= env.keys(), (fid, own - env.keys())
    assert not_the_executors.isdisjoint(stacks["ExecutorFunction"])
    # They agree on every setting (the local runtime, which hosts them in one process, insists on it too).
    for name in aliases - executor_only:
        assert len({repr(env[name]) for env in stacks.values() if name in env}) == 1, name
    env = stacks["ExecutorFunction"]
    assert env["JOB_SANDBOX_FUNCTION"] == {"Ref": "JobSandboxFunction"}
    assert evaluate(template, env["TABLE_NAME"]) == {"Ref": "JobsTable"}  # a global table's name: test_regions.py
    assert env["RESULTS_BUCKET"] == {"Ref": "ResultsBucket"}
    for band in BANDS:
        assert env[f"QUEUE_URL_{band.upper()}"] == {"Ref": f"{band}Queue"}
        assert env[f"DLQ_URL_{band.upper()}"] == {"Ref": f"{band}DeadLetterQueue"}
    assert env["RUN_RETENTION_DAYS"] == {"Ref": "RunRetentionDays"}
    assert env["AUDIT_RETENTION_DAYS"] == {"Ref": "AuditRetentionDays"}


def test_the_job_sandbox_is_told_nothing_of_the_stacks_resources(template):
    """Its role reaches none of the table, queues, buckets or the cursor key: its environment names none of them
    either, only the job code's settings (its handler reads JobCodeSettings)."""
    env = _environment(template, "JobSandboxFunction")
    assert env.keys() == {field.alias for field in JobCodeSettings.model_fields.values()} | POWERTOOLS
    named = {r for value in env.values() for r in _references(value) if not r.startswith("AWS::")}
    assert named <= template["Parameters"].keys(), named - template["Parameters"].keys()


def test_the_api_function_s_own_environment(template):
    stacks = _props(template, "TickFunction")["Environment"]["Variables"]
    api_env = {k: v for k, v in _props(template, "ApiFunction")["Environment"]["Variables"].items() if k not in stacks}
    # The run logs' Insights link names the executor's log group, spelled as the log group's own name.
    log_group = template["Resources"]["ExecutorLogGroup"]["Properties"]["LogGroupName"]
    assert api_env == {
        "API_AUTH_MODE": "iam",
        # Each stack names its own tenants' roles and admin (tickwork.control.callers).
        "TENANT_ROLE_PREFIX": {"Ref": "TenantRolePrefix"},
        "ADMIN_ROLE_NAME": {"Ref": "AdminRoleName"},
        # Bearer tokens (tests/template/test_token_api.py): the issuer given, or the stack's own user pool.
        "JWT_ISSUER": {
            "Fn::If": [
                "CreatesUserPool",
                {"Fn::Sub": "https://cognito-idp.${AWS::Region}.${AWS::URLSuffix}/${UserPool}"},
                {"Ref": "JwtIssuer"},
            ]
        },
        "JWT_TENANT_CLAIM": {"Fn::If": ["CreatesUserPool", "cognito:groups", {"Ref": "JwtTenantClaim"}]},
        "JWT_TENANT_PREFIX": {"Ref": "JwtTenantPrefix"},
        "JWT_ADMIN_GROUP": {"Ref": "JwtAdminGroup"},
        # The hosted console's client (tests/template/test_token_api.py): none without it.
        "CONSOLE_CLIENT_ID": {
            "Fn::If": [
                "HostsConsole",
                {
                    "Fn::If": [
                        "CreatesUserPool",
                        {"Ref": "UserPoolClient"},
                        {
                            "Fn::If": [
                                "ConsoleClientIdGiven",
                                {"Ref": "ConsoleClientId"},
                                {"Fn::Select": [0, {"Ref": "JwtAudience"}]},
                            ]
                        },
                    ]
                },
                "",
            ]
        },
        "CONSOLE_SCOPES": {"Fn::If": ["CreatesUserPool", "openid profile email", {"Ref": "ConsoleScopes"}]},
        "CONSOLE_LOGOUT_URL": {
            "Fn::If": [
                "UserPoolHostsConsole",
                {"Fn::Sub": "https://${UserPoolDomain}.auth.${AWS::Region}.amazoncognito.com/logout"},
                "",
            ]
        },
        "EXECUTOR_LOG_GROUPS": log_group,
    }
    # The executor's name and concurrency (GET /v1/metrics), which the tick reads too (its warm-ups).
    assert _props(template, "ApiFunction")["Environment"]["Variables"]["EXECUTOR_FUNCTION_NAME"] == {
        "Ref": "ExecutorFunction"
    }


def test_environment_defaults_are_valid_settings(template):
    """The literal and default values the template sets pass the Settings validation."""
    env = {}
    for name, value in _environment(template, "TickFunction").items():
        if isinstance(value, str):
            env[name] = value
        elif "Ref" in value and value["Ref"] in template["Parameters"]:
            env[name] = str(_default(template, value["Ref"]))
        elif "Fn::Join" in value and all(part.get("Ref") in template["Parameters"] for part in value["Fn::Join"][1]):
            separator, parts = value["Fn::Join"]
            env[name] = separator.join(str(_default(template, part["Ref"])) for part in parts)
        else:
            env[name] = f"resource-{name.lower()}"
    settings = Settings.from_env(env)
    assert (settings.executor_warmup, settings.table_warmup, settings.executor_concurrency) == ("invocations", "on", 75)
    assert settings.horizon_seconds > settings.tick_period_seconds


def test_layer_is_built_from_shared_with_its_requirements(template):
    layer = template["Resources"]["SharedLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "shared/"
    assert layer["Metadata"]["BuildMethod"] == "python3.13"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    # SAM puts ContentUri's contents into python/, so the package sits directly in shared/.
    assert (REPO_ROOT / "shared" / "tickwork" / "__init__.py").is_file()
    # SAM installs ContentUri's requirements.txt into the layer: the lock file (tests/template/test_lock.py).
    assert (REPO_ROOT / "shared" / "requirements.txt").read_text().startswith("# This file was autogenerated by uv")


# ---------------------------------------------------------------- table


def test_table_is_on_demand_encrypted_recoverable_and_protected(template):
    table = template["Resources"]["JobsTable"]
    props = table["Properties"]
    # On demand unless TableBillingMode says PROVISIONED (test_table_capacity.py).
    assert props["BillingMode"] == {"Ref": "TableBillingMode"}
    assert _default(template, "TableBillingMode") == "PAY_PER_REQUEST"
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["DeletionProtectionEnabled"] == {"Fn::If": ["ProtectTable", True, False]}
    assert template["Conditions"]["ProtectTable"] == {"Fn::Equals": [{"Ref": "TableDeletionProtection"}, "true"]}
    assert _default(template, "TableDeletionProtection") == "true"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"


def test_table_keys_and_indexes(template):
    props = _props(template, "JobsTable")
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    types = {d["AttributeName"]: d["AttributeType"] for d in props["AttributeDefinitions"]}
    assert types == {
        "pk": "S",
        "sk": "S",
        "due_shard": "S",
        "due_at": "N",
        "tenant_key": "S",
        "tenant_sort": "S",
        "runs_key": "S",
        "runs_sort": "S",
    }
    indexes = {i["IndexName"]: i for i in props["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"due-index", "tenant-index", "runs-index"} == {DUE_INDEX, TENANT_INDEX, RUNS_INDEX}
    due = indexes["due-index"]
    assert due["KeySchema"] == [
        {"AttributeName": "due_shard", "KeyType": "HASH"},
        {"AttributeName": "due_at", "KeyType": "RANGE"},
    ]
    # The template projects exactly what the tick reads from the index: the store's list, not a copy of it.
    assert due["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(DUE_INDEX_PROJECTION)}
    tenant = indexes["tenant-index"]
    assert tenant["KeySchema"] == [
        {"AttributeName": "tenant_key", "KeyType": "HASH"},
        {"AttributeName": "tenant_sort", "KeyType": "RANGE"},
    ]
    # Only what its queries filter on: the store's list (claims and outcomes then leave the entry alone).
    assert tenant["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(TENANT_INDEX_PROJECTION)}
    runs = indexes["runs-index"]
    assert runs["KeySchema"] == [
        {"AttributeName": "runs_key", "KeyType": "HASH"},
        {"AttributeName": "runs_sort", "KeyType": "RANGE"},
    ]
    assert runs["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(RUNS_INDEX_PROJECTION)}


# ---------------------------------------------------------------- queues


def test_every_queue_is_encrypted(template):
    assert set(_of_type(template, "AWS::SQS::Queue")) == set(QUEUES)
    for queue in QUEUES:
        assert _props(template, queue)["SqsManagedSseEnabled"] is True


def test_band_visibility_is_at_least_six_executor_timeouts(template):
    assert _props(template, "ExecutorFunction")["Timeout"] == {"Ref": "ExecutorTimeoutSeconds"}
    parameter = template["Parameters"]["ExecutorTimeoutSeconds"]
    assert (parameter["Default"], parameter["MinValue"], parameter["MaxValue"]) == (900, 10, 900)
    for band in BANDS:  # whatever timeout the parameter sets
        assert _props(template, f"{band}Queue")["VisibilityTimeout"] >= 6 * parameter["MaxValue"]


def test_the_executor_is_told_its_own_timeout(template):
    """The margins of a run's segment follow the executor Lambda's timeout (tickwork.executor.yields)."""
    env = _environment(template, "ExecutorFunction")
    assert env["EXECUTOR_TIMEOUT_SECONDS"] == _props(template, "ExecutorFunction")["Timeout"]


def test_band_queues_redrive_to_their_own_dlq_after_a_parameter(template):
    max_receive = template["Parameters"]["MaxReceiveCount"]
    assert max_receive["Default"] > 100  # > the largest retry policy (max_attempts <= 100)
    assert max_receive["MaxValue"] <= 1000
    for band in BANDS:
        redrive = _props(template, f"{band}Queue")["RedrivePolicy"]
        assert redrive == {
            "deadLetterTargetArn": {"Fn::GetAtt": [f"{band}DeadLetterQueue", "Arn"]},
            "maxReceiveCount": {"Ref": "MaxReceiveCount"},
        }


def test_dead_letter_queues_keep_messages_14_days(template):
    for queue in (*(f"{b}DeadLetterQueue" for b in BANDS), "TickDeadLetterQueue"):
        assert _props(template, queue)["MessageRetentionPeriod"] == 14 * 24 * 3600


# ---------------------------------------------------------------- bucket


def test_bucket_blocks_public_access_encrypts_and_enforces_ownership(template):
    bucket = template["Resources"]["ResultsBucket"]
    props = bucket["Properties"]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert props["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert "AccessControl" not in props
    assert bucket["DeletionPolicy"] == "Retain"


def test_bucket_expires_results_after_a_parameter(template):
    rules = _props(template, "ResultsBucket")["LifecycleConfiguration"]["Rules"]
    assert any(r["Status"] == "Enabled" and r["ExpirationInDays"] == {"Ref": "ResultsRetentionDays"} for r in rules)


def test_checkpoint_objects_expire_with_the_results(template):
    """The executor deletes each checkpoint object its run item stops pointing to; one it could not (a failed
    delete, a death between the two writes) expires with the results: the rule covers the whole bucket."""
    rules = _props(template, "ResultsBucket")["LifecycleConfiguration"]["Rules"]
    (expiry,) = [r for r in rules if r["Status"] == "Enabled" and "ExpirationInDays" in r]
    assert expiry["ExpirationInDays"] == {"Ref": "ResultsRetentionDays"}
    assert not {"Prefix", "Filter"} & expiry.keys()  # checkpoints/ included
    # Deleting is the executor's, and only under checkpoints/: results and logs are written once and expire.
    deletes = {role: _grants(template, role).get("s3:DeleteObject") for role in ("ExecutorRole", "ApiRole", "TickRole")}
    assert deletes == {
        "ExecutorRole": [{"Fn::Sub": "${ResultsBucket.Arn}/checkpoints/*"}],
        "ApiRole": None,
        "TickRole": None,
    }


def test_bucket_policy_denies_non_tls_requests(template):
    policy = _props(template, "ResultsBucketPolicy")
    assert policy["Bucket"] == {"Ref": "ResultsBucket"}
    deny = [
        s
        for s in policy["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
    ]
    (statement,) = deny
    assert statement["Principal"] == "*"
    assert statement["Action"] == "s3:*"
    assert statement["Resource"] == [
        {"Fn::GetAtt": ["ResultsBucket", "Arn"]},
        {"Fn::Sub": "${ResultsBucket.Arn}/*"},
    ]


def test_results_bucket_access_is_logged_to_a_private_expiring_bucket(template):
    logging = _props(template, "ResultsBucket")["LoggingConfiguration"]
    assert logging == {"DestinationBucketName": {"Ref": "ResultsAccessLogsBucket"}, "LogFilePrefix": "results/"}
    logs = _props(template, "ResultsAccessLogsBucket")
    assert all(logs["PublicAccessBlockConfiguration"].values())
    # S3 server access logging delivers only to SSE-S3 (AES256) buckets.
    (rule,) = logs["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    (expiry,) = logs["LifecycleConfiguration"]["Rules"]
    assert expiry["ExpirationInDays"] == {"Ref": "AccessLogRetentionDays"}
    statements = {s["Sid"]: s for s in _props(template, "ResultsAccessLogsBucketPolicy")["PolicyDocument"]["Statement"]}
    writer = statements["S3ServerAccessLogsFromResultsBucket"]
    assert writer["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert writer["Action"] == "s3:PutObject"
    assert writer["Condition"]["ArnLike"] == {"aws:SourceArn": {"Fn::GetAtt": ["ResultsBucket", "Arn"]}}
    assert statements["DenyInsecureTransport"]["Effect"] == "Deny"


# ---------------------------------------------------------------- functions


@pytest.mark.parametrize(("function", "folder"), FUNCTIONS.items())
def test_function_code_handler_and_own_log_group(template, function, folder):
    props = _props(template, function)
    assert props["CodeUri"] == f"functions/{folder}/"
    assert props["Handler"] == "app.handler"
    log_group_id = props["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = template["Resources"][log_group_id]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    # Its role may write to its own log group and no other.
    role_id = props["Role"]["Fn::GetAtt"][0]
    (logs,) = [s for r, s in iam_statements(template) if r == role_id and "logs:PutLogEvents" in as_list(s["Action"])]
    assert logs["Resource"] == {"Fn::GetAtt": [log_group_id, "Arn"]}


def test_each_function_has_its_own_log_group(template):
    groups = [_props(template, f)["LoggingConfig"]["LogGroup"]["Ref"] for f in FUNCTIONS]
    assert len(set(groups)) == len(groups)


def test_no_data_plane_action_on_star_and_no_wildcard_actions(translated):
    for role, statement in iam_statements(translated):
        actions = set(as_list(statement["Action"]))
        assert not any("*" in action for action in actions), (role, actions)
        if "*" in as_list(statement["Resource"]):
            assert actions <= NO_RESOURCE_LEVEL, (role, statement)


def test_no_role_can_scan_the_table(translated):
    for role, statement in iam_statements(translated):
        assert "dynamodb:Scan" not in as_list(statement["Action"]), role


def test_no_aws_managed_policies_on_any_role(translated):
    """A role's managed policies are the stack's own (the executor's and the job sandbox's VPC access, only in a
    VPC), never AWS's."""
    own = {k for k, r in translated["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"}
    for logical_id, resource in translated["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role" and "ManagedPolicyArns" in resource["Properties"]:
            assert logical_id in ("ExecutorRole", "JobSandboxRole")
            arns = resource["Properties"]["ManagedPolicyArns"]
            assert arns == {"Fn::If": ["InVpc", [{"Ref": "ExecutorVpcAccessPolicy"}], {"Ref": "AWS::NoValue"}]}
            assert "ExecutorVpcAccessPolicy" in own


GLOBAL_TABLE_ARN = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${GlobalTableName}"


def test_dynamodb_statements_name_only_this_table(template):
    table_arns = (
        {"Fn::GetAtt": ["JobsTable", "Arn"]},
        {"Fn::Sub": "${JobsTable.Arn}/index/due-index"},
        {"Fn::Sub": "${JobsTable.Arn}/index/tenant-index"},
        # Granted in RegionMode strong only (the tick's expiry sweep): the global table this stack names.
        {"Fn::Sub": f"{GLOBAL_TABLE_ARN}"},
        {"Fn::Sub": f"{GLOBAL_TABLE_ARN}/index/expiry-index"},
    )
    for role, statement in iam_statements(template):
        if statement.get("Sid") == "ReadRegionRolesInEveryReplica":
            continue  # RegionMode eventual's, on the global table's replicas: tests/template/test_regions.py
        if any(a.startswith("dynamodb:") for a in as_list(statement["Action"])):
            assert all(r in table_arns for r in as_list(statement["Resource"])), role


def _grants(template, role):
    """{action: [resources]} a role's statements allow (resources as written in the template)."""
    grants: dict[str, list] = {}
    for r, statement in iam_statements(template):
        if r == role and statement["Effect"] == "Allow":
            for action in as_list(statement["Action"]):
                grants.setdefault(action, []).extend(as_list(statement["Resource"]))
    return grants


def _arn(logical_id):
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def test_only_the_executor_consumes_the_band_queues(template):
    consume = {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"}
    executor = _grants(template, "ExecutorRole")
    for action in consume:  # what the SQS event source mapping and retries need
        assert sorted(executor[action], key=str) == sorted((_arn(f"{b}Queue") for b in BANDS), key=str)
    # The API consumes no band queue: it reads a band queue's ARN (a dead-letter redrive's destination), and an
    # admin's redrive receives and deletes the SQS dead-letter queues' messages (SQS's move task, as its caller).
    api = _grants(template, "ApiRole")
    dlqs = sorted((_arn(f"{b}DeadLetterQueue") for b in BANDS), key=str)
    for action in consume & api.keys():
        expected = [*dlqs, *(_arn(f"{b}Queue") for b in BANDS)] if action == "sqs:GetQueueAttributes" else dlqs
        assert sorted(api[action], key=str) == sorted(expected, key=str), action
    assert sorted(api["sqs:StartMessageMoveTask"], key=str) == dlqs
    tick = _grants(template, "TickRole")
    # The tick only reads a band's backlog (before re-sending a run nobody leased), and a dead-letter queue's move
    # tasks (a redrive's audit record left pending: tickwork.tick.redrive_intents); it consumes nothing.
    assert not (consume - {"sqs:GetQueueAttributes"}) & tick.keys()
    assert sorted(tick["sqs:GetQueueAttributes"], key=str) == sorted(
        [*(_arn(f"{b}Queue") for b in BANDS), *dlqs], key=str
    )
    assert sorted(tick["sqs:ListMessageMoveTasks"], key=str) == dlqs
    # A dispatch worker consumes only the dispatch queue (its event source), and reads the bands' backlogs.
    worker = _grants(template, "DispatchRole")
    for action in consume - {"sqs:GetQueueAttributes"}:
        assert worker[action] == [_arn("DispatchQueue")]
    assert sorted(worker["sqs:GetQueueAttributes"], key=str) == sorted(
        [*(_arn(f"{b}Queue") for b in BANDS), _arn("DispatchQueue")], key=str
    )
    # The claims need the same table and index grants as the tick's (whose expiry sweep, RegionMode strong only, is
    # the tick's alone).
    sweep = {"Fn::Sub": f"{GLOBAL_TABLE_ARN}/index/expiry-index"}
    for action in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:BatchGetItem"):
        assert worker[action] == [grant for grant in tick[action] if grant != sweep]


def test_the_dispatch_queue_never_retries_a_slice_and_outlasts_its_worker(template):
    queue = _props(template, "DispatchQueue")
    assert queue["RedrivePolicy"] == {"deadLetterTargetArn": _arn("TickDeadLetterQueue"), "maxReceiveCount": 1}
    assert queue["VisibilityTimeout"] >= 6 * _props(template, "DispatchFunction")["Timeout"]
    (source,) = _props(template, "DispatchFunction")["Events"].values()
    assert source["Type"] == "SQS"
    assert source["Properties"]["BatchSize"] == 1
    assert source["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert template["Parameters"]["DispatchWorkers"]["Default"] == 1


def test_who_may_send_where(template):
    bands = sorted((_arn(f"{b}Queue") for b in BANDS), key=str)
    dlqs = sorted((_arn(f"{b}DeadLetterQueue") for b in BANDS), key=str)
    tick = _grants(template, "TickRole")["sqs:SendMessage"]
    # Fanned out, the tick hands its slices to the dispatch queue. A FAILED run (a workflow step whose payload
    # cannot be made) is the table's: nothing but the executor sends to a band's SQS dead-letter queue.
    assert sorted(tick, key=str) == sorted([*bands, _arn("TickDeadLetterQueue"), _arn("DispatchQueue")], key=str)
    # A dispatch worker claims as the tick does; it neither hands out slices nor reports a failed tick itself.
    worker = _grants(template, "DispatchRole")["sqs:SendMessage"]
    assert sorted(worker, key=str) == bands
    assert sorted(_grants(template, "ApiRole")["sqs:SendMessage"], key=str) == bands  # immediate dispatch
    # The messages it cannot process, and the workflow steps a step's end lets start.
    assert sorted(_grants(template, "ExecutorRole")["sqs:SendMessage"], key=str) == sorted([*bands, *dlqs], key=str)


def test_results_bucket_access(template):
    objects = {"Fn::Sub": "${ResultsBucket.Arn}/*"}
    executor = _grants(template, "ExecutorRole")
    api = _grants(template, "ApiRole")
    assert executor["s3:PutObject"] == [objects]
    # Multi-region only (a statement under a condition): the other regions' results buckets (docs/regions.md).
    others = "arn:${AWS::Partition}:s3:::${AWS::StackName}-results-${AWS::AccountId}-*"
    # The executor: a run taken over from an executor that died in another region, its result looked for there.
    assert executor["s3:GetObject"] == [objects, {"Fn::Sub": f"{others}/*"}]
    assert api["s3:GetObject"] == [objects, {"Fn::Sub": f"{others}/*"}]
    # HeadObject/GetObject of a missing result must be a 404 (results.find), not a 403.
    assert executor["s3:ListBucket"] == [_arn("ResultsBucket"), {"Fn::Sub": others}]
    assert api["s3:ListBucket"] == [_arn("ResultsBucket"), {"Fn::Sub": others}]
    assert "s3:PutObject" not in api
    # The tick reads the upstream results a stalled workflow run's next steps use; it writes none. It (or, fanned
    # out, a dispatch worker) archives the audit records, which nothing else may write, and nothing reads.
    archive = {"Fn::Sub": "${AuditBucket.Arn}/audit/*"}
    for role in ("TickRole", "DispatchRole"):
        grants = _grants(template, role)
        assert {a: grants[a] for a in grants if a.startswith("s3:")} == {
            "s3:GetObject": [objects],
            "s3:ListBucket": [_arn("ResultsBucket")],
            "s3:PutObject": [archive],
        }
    assert archive not in executor["s3:PutObject"]


def test_audit_archive_failures_alarm(template):
    """A record the tick cannot archive stays unexpired in the table; an archive refused for 15 minutes pages."""
    alarm = _props(template, "AuditArchiveFailuresAlarm")
    assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("Tickwork", "AuditArchiveFailures", "Sum")
    assert (alarm["Period"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (300, 3, 3)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"


def test_table_access_is_what_the_store_does(template):
    table = _arn("JobsTable")
    tick = _grants(template, "TickRole")
    # The claim is two ordered conditional writes: Puts of the runs, then an Update of the job; a workflow
    # run's reconciliation reads its queued steps' runs at once.
    assert {a: tick[a] for a in tick if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem": [table],
        "dynamodb:PutItem": [table],
        "dynamodb:UpdateItem": [table],
        "dynamodb:BatchGetItem": [table],
        # The due index, and the table itself for one partition: the freezes in force (tickwork.store.freezes).
        # RegionMode strong only (no TTL; tickwork.tick.expiry_sweep): the expiry index, then conditional deletes.
        "dynamodb:Query": [
            {"Fn::Sub": "${JobsTable.Arn}/index/due-index"},
            {"Fn::Sub": f"{GLOBAL_TABLE_ARN}/index/expiry-index"},
            table,
        ],
        "dynamodb:DeleteItem": [{"Fn::Sub": GLOBAL_TABLE_ARN}],
        # Before a burst, with TableWarmup on only (tickwork.tick.warmup): the table's warm throughput.
        "dynamodb:DescribeTable": [table],
        "dynamodb:UpdateTable": [table],
    }
    (warm_table,) = [s for r, s in iam_statements(template) if r == "TickRole" and s.get("Sid") == "WarmTable"]
    conditional = [
        s["Fn::If"]
        for s in template["Resources"]["TickRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        if "Fn::If" in s
    ]
    assert {(c[0], c[1]["Sid"]) for c in conditional} == {
        ("WarmsTable", "WarmTable"),
        ("StrongRegions", "SweepExpiredItems"),
        ("StrongRegions", "DeleteExpiredItems"),
    }
    assert [c[1] for c in conditional if c[0] == "WarmsTable"] == [warm_table]
    executor = _grants(template, "ExecutorRole")
    # Overlap SKIP is a conditional update of the job's running slot: no query for it. A workflow step's end
    # creates the runs of the steps it lets start (conditional Puts). The one Query is of the table itself, never
    # an index: a recurring job's last run looking for its job's unsettled runs before completing it.
    assert {a for a in executor if a.startswith("dynamodb:")} == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
    }
    assert executor["dynamodb:Query"] == [table]
    api = _grants(template, "ApiRole")
    assert {"Fn::Sub": "${JobsTable.Arn}/index/tenant-index"} in api["dynamodb:Query"]
    for role in ("TickRole", "ExecutorRole", "ApiRole", "DispatchRole"):
        forbidden = {"dynamodb:Scan", "dynamodb:BatchWriteItem", "dynamodb:DeleteTable"}
        # The API deletes a calendar, and an idempotency key its failed create took; the tick, in RegionMode strong
        # only, what has expired (the global table's ARN: the grant is under StrongRegions).
        if role not in ("ApiRole", "TickRole"):
            forbidden.add("dynamodb:DeleteItem")
        assert not forbidden & _grants(template, role).keys(), role
    assert api["dynamodb:DeleteItem"] == [{"Fn::GetAtt": ["JobsTable", "Arn"]}]


def test_executor_may_invoke_only_the_configured_functions(template):
    statement, sandbox = [
        s
        for r, s in iam_statements(template)
        if r == "ExecutorRole" and "lambda:InvokeFunction" in as_list(s["Action"])
    ]
    # ... and the job sandbox, for function-isolated job types (docs/security.md, "Isolation of job code").
    assert (sandbox["Sid"], sandbox["Resource"]) == ("InvokeJobSandbox", {"Fn::GetAtt": ["JobSandboxFunction", "Arn"]})
    assert statement["Resource"] == {
        "Fn::If": [
            "HasInvokableFunctionArns",
            {"Ref": "InvokableFunctionArns"},
            {"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:tickwork-job-*"},
        ]
    }
    assert template["Parameters"]["InvokableFunctionArns"]["Type"] == "CommaDelimitedList"
    # Only the executor invokes job functions; the tick and the dispatch workers invoke the executor alone (its
    # warming invocations before a burst, tickwork.tick.warmup).
    others = [
        (r, s["Resource"])
        for r, s in iam_statements(template)
        if r != "ExecutorRole" and "lambda:InvokeFunction" in as_list(s["Action"])
    ]
    executor = {"Fn::GetAtt": ["ExecutorFunction", "Arn"]}
    assert others == [("TickRole", executor), ("DispatchRole", executor)]


# ---------------------------------------------------------------- tick


def test_tick_runs_every_minute_with_retries_and_a_dlq(template):
    tick = _props(template, "TickFunction")
    (event,) = tick["Events"].values()
    assert event["Type"] in ("Schedule", "ScheduleV2")
    props = event["Properties"]
    assert props.get("Schedule", props.get("ScheduleExpression")) == "rate(1 minute)"
    assert props["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    assert props["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["TickDeadLetterQueue", "Arn"]}}
    assert tick["Timeout"] < 60  # a tick finishes before the next one starts


def test_tick_dlq_accepts_only_the_tick_rule(template):
    policy = _props(template, "TickDeadLetterQueuePolicy")
    assert policy["Queues"] == [{"Ref": "TickDeadLetterQueue"}]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage"
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == {"Fn::GetAtt": ["TickFunctionEveryMinute", "Arn"]}


# ---------------------------------------------------------------- executor event sources


def test_executor_reads_each_band_with_report_batch_item_failures(template):
    events = _props(template, "ExecutorFunction")["Events"]
    queues = {}
    for event in events.values():
        assert event["Type"] == "SQS"
        props = event["Properties"]
        assert props["BatchSize"] == 10
        assert props["MaximumBatchingWindowInSeconds"] == 0
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        queues[props["Queue"]["Fn::GetAtt"][0]] = props["ScalingConfig"]["MaximumConcurrency"]["Ref"]
    assert queues == {f"{b}Queue": f"{b}Concurrency" for b in BANDS}


def test_band_concurrency_is_weighted_high_to_low(template):
    high, normal, low = (_default(template, f"{b}Concurrency") for b in BANDS)
    assert high > normal > low >= 2
    assert (high, normal, low) == (50, 20, 5)


# ---------------------------------------------------------------- API


def test_http_api_uses_iam_auth_and_access_logs(template):
    api = template["Resources"]["HttpApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi"
    props = api["Properties"]
    assert props["Auth"]["DefaultAuthorizer"] == "AWS_IAM"
    assert props["Auth"]["EnableIamAuthorizer"] is True
    assert props["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    assert "$context.requestId" in props["AccessLogSettings"]["Format"]
    events = _props(template, "ApiFunction")["Events"]
    assert all(e["Type"] == "HttpApi" and e["Properties"]["ApiId"] == {"Ref": "HttpApi"} for e in events.values())


# ---------------------------------------------------------------- alarms


def _alarms(template):
    return {k: r["Properties"] for k, r in _of_type(template, "AWS::CloudWatch::Alarm").items()}


def test_every_alarm_notifies_the_topic(template):
    alarms = _alarms(template)
    assert (
        len(alarms) == 26
    )  # with the token API's and the three of replication (RegionMode eventual), under conditions
    for props in alarms.values():
        assert props["AlarmActions"] == [{"Ref": "AlarmTopic"}]
        assert props["OKActions"] == [{"Ref": "AlarmTopic"}]


def test_alarm_topic_is_encrypted_with_a_rotating_key_cloudwatch_may_use(template):
    assert _props(template, "AlarmTopic")["KmsMasterKeyId"] == {"Ref": "AlarmTopicKey"}
    key = _props(template, "AlarmTopicKey")
    assert key["EnableKeyRotation"] is True
    statements = {s["Sid"]: s for s in key["KeyPolicy"]["Statement"]}
    cloudwatch = statements["CloudWatchAlarmsPublish"]
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert sorted(cloudwatch["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"]


def test_alarm_email_subscription_is_optional(template):
    subscription = template["Resources"]["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == {"Ref": "AlarmEmail"}
    assert _default(template, "AlarmEmail") == ""


def _alarm_on(template, namespace, metric, dimension_value):
    matches = [
        props
        for props in _alarms(template).values()
        if props.get("Namespace") == namespace
        and props["MetricName"] == metric
        and [d["Value"] for d in props["Dimensions"]] == [dimension_value]
    ]
    assert len(matches) == 1, (namespace, metric, dimension_value)
    return matches[0]


@pytest.mark.parametrize("queue", [*(f"{b}DeadLetterQueue" for b in BANDS), "TickDeadLetterQueue"])
def test_any_dlq_message_alarms(template, queue):
    alarm = _alarm_on(template, "AWS/SQS", "ApproximateNumberOfMessagesVisible", {"Fn::GetAtt": [queue, "QueueName"]})
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Threshold"] == 0


def test_tick_errors_and_tick_not_running_alarm(template):
    tick = {"Ref": "TickFunction"}
    errors = _alarm_on(template, "AWS/Lambda", "Errors", tick)
    assert (errors["ComparisonOperator"], errors["Threshold"]) == ("GreaterThanThreshold", 0)
    silent = _alarm_on(template, "AWS/Lambda", "Invocations", tick)
    assert silent["Statistic"] == "Sum"
    assert (silent["ComparisonOperator"], silent["Threshold"]) == ("LessThanThreshold", 1)
    assert silent["TreatMissingData"] == "breaching"
    assert silent["Period"] * silent["EvaluationPeriods"] == 180
    assert silent["DatapointsToAlarm"] == silent["EvaluationPeriods"]


def test_executor_errors_and_throttles_alarm(template):
    executor = {"Ref": "ExecutorFunction"}
    for metric in ("Errors", "Throttles"):
        alarm = _alarm_on(template, "AWS/Lambda", metric, executor)
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


@pytest.mark.parametrize("band", BANDS)
def test_oldest_message_age_alarms_per_band(template, band):
    alarm = _alarm_on(
        template, "AWS/SQS", "ApproximateAgeOfOldestMessage", {"Fn::GetAtt": [f"{band}Queue", "QueueName"]}
    )
    assert alarm["Threshold"] == {"Ref": "QueueAgeAlarmSeconds"}


def test_start_lateness_p99_alarm(template):
    alarm = _alarm_on(template, "Tickwork", "StartLatenessMs", "tickwork")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "tickwork"}]
    assert alarm["ExtendedStatistic"] == "p99"
    assert alarm["Threshold"] == {"Ref": "StartLatenessAlarmMs"}


def test_api_5xx_alarm(template):
    alarm = _alarm_on(template, "AWS/ApiGateway", "5xx", {"Ref": "HttpApi"})
    assert alarm["Dimensions"][0]["Name"] == "ApiId"
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


# ---------------------------------------------------------------- dashboard and outputs


def _dashboard_metrics(template):
    body = dashboard_json(_props(template, "Dashboard")["DashboardBody"])
    metrics = []
    for widget in body["widgets"]:
        for metric in widget["properties"].get("metrics", []):
            if len(metric) < 4:  # a metric math row: [{"expression": ...}]
                continue
            stat = metric[-1].get("stat") if isinstance(metric[-1], dict) else None
            metrics.append((metric[0], metric[1], metric[3], stat or widget["properties"].get("stat")))
    return body, metrics


def test_dashboard_shows_every_tickwork_metric(template):
    _, metrics = _dashboard_metrics(template)
    shown = {name for namespace, name, dimension, _ in metrics if namespace == "Tickwork" and dimension == "tickwork"}
    assert shown == set(METRICS)
    lateness = {stat for ns, name, _, stat in metrics if name == "StartLatenessMs"}
    assert {"p50", "p99"} <= lateness


def test_dashboard_shows_queues_dlqs_executor_and_api(template):
    body, metrics = _dashboard_metrics(template)
    sqs = {(name, dimension) for namespace, name, dimension, _ in metrics if namespace == "AWS/SQS"}
    for band in BANDS:
        assert ("ApproximateNumberOfMessagesVisible", f"<{band}Queue.QueueName>") in sqs
        assert ("ApproximateAgeOfOldestMessage", f"<{band}Queue.QueueName>") in sqs
        assert ("ApproximateNumberOfMessagesVisible", f"<{band}DeadLetterQueue.QueueName>") in sqs
    assert ("ApproximateNumberOfMessagesVisible", "<TickDeadLetterQueue.QueueName>") in sqs
    executor = {name for namespace, name, dimension, _ in metrics if dimension == "<ExecutorFunction>"}
    assert {"ConcurrentExecutions", "Errors", "Duration"} <= executor
    api = {name for namespace, name, dimension, _ in metrics if namespace == "AWS/ApiGateway"}
    assert {"Count", "4xx", "5xx"} <= api
    alarm_widgets = [w for w in body["widgets"] if w["type"] == "alarm"]
    # Every alarm of a stack with the defaults: the token API's (TokenApiServerErrorsAlarm, under its condition) is
    # not on it, as a dashboard's body cannot name a resource that may be absent.
    unconditional = [k for k, r in _of_type(template, "AWS::CloudWatch::Alarm").items() if "Condition" not in r]
    assert len(alarm_widgets[0]["properties"]["alarms"]) == len(unconditional)


def test_outputs(template):
    outputs = template["Outputs"]
    required = {"ApiUrl", "TableName", "ResultsBucketName", "AlarmTopicArn", "DashboardName"}
    required |= {f"{b}QueueUrl" for b in BANDS}
    assert required <= outputs.keys()
    assert outputs["DashboardName"]["Value"] == {"Ref": "Dashboard"}
    assert "${HttpApi}" in outputs["ApiUrl"]["Value"]["Fn::Sub"]


# ---------------------------------------------------------------- samconfig


def test_samconfig_has_deploy_defaults():
    config = tomllib.loads((Path(REPO_ROOT) / "samconfig.toml").read_text())
    assert config["version"] == 0.1
    deploy = config["default"]["deploy"]["parameters"]
    assert deploy["stack_name"] == "tickwork"
    assert deploy["resolve_s3"] is True
    assert "CAPABILITY_IAM" in deploy["capabilities"]
    assert deploy["confirm_changeset"] is True
    build = config["default"]["build"]["parameters"]
    assert build["cached"] is True
    assert config["default"]["validate"]["parameters"]["lint"] is True
