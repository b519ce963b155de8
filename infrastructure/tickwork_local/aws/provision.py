"""Create Tickwork's stateful resources from template.yaml's own resource properties.

The local runtime (`tickwork dev`) and every integration test get their table, queues and
buckets (the results, and the audit trail's archive) from here, so they can never drift from what `sam deploy` creates. The clients are
passed in: this works under moto's in-process `mock_aws`, against a `ThreadedMotoServer`
endpoint, or against anything else that speaks the AWS APIs.

Names are deterministic (`<prefix>-<LogicalId>`; lower-cased for the bucket), so a second
process can attach to resources a first one created (`if_missing=True`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

# Band queues and their DLQs, by logical id. Other queues go to `extra_queue_urls`.
BAND_QUEUES = {"high": "HighQueue", "normal": "NormalQueue", "low": "LowQueue"}
BAND_DLQS = {"high": "HighDeadLetterQueue", "normal": "NormalDeadLetterQueue", "low": "LowDeadLetterQueue"}
TABLE_ID = "JobsTable"
# RegionMode strong's table (docs/regions.md): made locally with its keys and indexes (its expiry index), under
# the local name, as one table (the local regions share one DynamoDB for it).
STRONG_TABLE_ID = "JobsGlobalTable"
BUCKET_ID = "ResultsBucket"
AUDIT_BUCKET_ID = "AuditBucket"

# What `Ref AWS::AccountId` resolves to locally (moto's default account).
LOCAL_ACCOUNT_ID = "123456789012"

# SQS queue properties that are also CreateQueue attributes (same names).
_SQS_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
    "FifoQueue",
    "ContentBasedDeduplication",
    "DeduplicationScope",
    "FifoThroughputLimit",
)
_SQS_JSON_ATTRIBUTES = ("RedrivePolicy", "RedriveAllowPolicy")


class UnresolvedReference(KeyError):
    """An intrinsic function refers to something the local resources do not provide."""


_NO_VALUE = object()


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


def _as_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_as_str(v) for v in value)
    return str(value)


_SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")
# A dynamic reference to a Secrets Manager secret, which CloudFormation resolves at deploy. Locally there is no
# secret: it resolves to "", which tickwork.store.cursors takes as unset (the cursor key is then derived from the
# table name, the same on every node).
_SECRET_REFERENCE = re.compile(r"\{\{resolve:secretsmanager:[^}]*\}\}")


@dataclass
class _Resolver:
    """Evaluates the intrinsic functions that appear in resource properties and environments."""

    template: Mapping[str, Any]
    parameters: Mapping[str, str]
    region: str
    stack_name: str
    refs: dict[str, Any] = field(default_factory=dict)  # logical id -> Ref value
    attributes: dict[tuple[str, str], str] = field(default_factory=dict)  # (logical id, attr) -> value

    def parameter(self, name: str) -> Any:
        declared = self.template.get("Parameters", {}).get(name)
        if declared is None:
            raise UnresolvedReference(f"no parameter {name}")
        if name in self.parameters:
            value = self.parameters[name]
        elif "Default" in declared:
            value = _as_str(declared["Default"])
        else:
            raise UnresolvedReference(f"parameter {name} has no default and no value was given")
        if declared.get("Type", "String") in ("CommaDelimitedList", "List<Number>") and isinstance(value, str):
            return [part.strip() for part in value.split(",")]
        return value

    def ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": LOCAL_ACCOUNT_ID,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{LOCAL_ACCOUNT_ID}:stack/{self.stack_name}/local",
            "AWS::NoValue": _NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.template.get("Parameters", {}):
            return self.parameter(name)
        if name in self.refs:
            return self.refs[name]
        raise UnresolvedReference(f"Ref {name} is not provisioned locally")

    def get_att(self, resource: str, attribute: str) -> str:
        try:
            return self.attributes[(resource, attribute)]
        except KeyError:
            raise UnresolvedReference(f"GetAtt {resource}.{attribute} is not provisioned locally") from None

    def condition(self, name: str) -> bool:
        return bool(self.resolve(self.template.get("Conditions", {})[name]))

    def sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return _as_str(self.resolve(variables[name]))
            if "." in name and not name.startswith("AWS::"):
                resource, _, attribute = name.partition(".")
                return self.get_att(resource, attribute)
            return _as_str(self.ref(name))

        return _SUB_VARIABLE.sub(replace, text)

    def resolve(self, value: Any) -> Any:  # one branch per intrinsic function
        if isinstance(value, list):
            return [v for v in (self.resolve(item) for item in value) if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                resource, attribute = arg.split(".", 1) if isinstance(arg, str) else arg
                return self.get_att(resource, attribute)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                return _SECRET_REFERENCE.sub("", self.sub(text, variables))
            if key == "Fn::Join":
                delimiter, items = arg
                return delimiter.join(_as_str(v) for v in self.resolve(items))
            if key == "Fn::Select":
                index, items = arg
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                delimiter, text = arg
                return _as_str(self.resolve(text)).split(delimiter)
            if key == "Fn::FindInMap":
                name, top, second = (self.resolve(v) for v in arg[:3])
                return self.template["Mappings"][name][top][second]
            if key == "Fn::If":
                name, when_true, when_false = arg
                return self.resolve(when_true if self.condition(name) else when_false)
            if key == "Fn::Equals":
                left, right = (_as_str(self.resolve(v)) for v in arg)
                return left == right
            if key == "Fn::Not":
                return not self.resolve(arg[0])
            if key == "Fn::And":
                return all(self.resolve(v) for v in arg)
            if key == "Fn::Or":
                return any(self.resolve(v) for v in arg)
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::ToJsonString":
                return json.dumps(self.resolve(arg), separators=(",", ":"))
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not _NO_VALUE}


@dataclass(frozen=True)
class ProvisionedResources:
    table_name: str
    results_bucket: str
    queue_urls: dict[str, str]  # band "high"/"normal"/"low" -> queue URL
    dlq_urls: dict[str, str]  # band -> DLQ URL
    extra_queue_urls: dict[str, str]  # other queues by logical id (e.g. TickDeadLetterQueue)
    _resolver: _Resolver = field(repr=False, compare=False, default=None)  # type: ignore[assignment]

    def environment(
        self, function_logical_id: str = "ExecutorFunction", overrides: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The function's environment variables as the template sets them (Globals merged with the
        function's own), with Refs/GetAtts/Subs to the table, queues, bucket resolved to these local
        physical names and parameter refs resolved to the parameter values (defaults unless
        `provision(parameters=...)` overrode them)."""
        template = self._resolver.template
        resources = template.get("Resources", {})
        if function_logical_id not in resources:
            raise KeyError(f"no resource {function_logical_id} in the template")
        merged: dict[str, Any] = {}
        merged.update(template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {}))
        props = resources[function_logical_id].get("Properties", {})
        merged.update(props.get("Environment", {}).get("Variables", {}))
        env = {name: _as_str(self._resolver.resolve(value)) for name, value in merged.items()}
        env.update(overrides or {})
        return env

    @property
    def parameters(self) -> dict[str, Any]:
        """Every template parameter's value as used here (defaults merged with overrides)."""
        return {name: self._resolver.parameter(name) for name in self._resolver.template.get("Parameters", {})}


def telemetry_environment(template: Mapping[str, Any], parameters: Mapping[str, str] | None = None) -> dict[str, str]:
    """What Powertools reads from the environment in every deployed function, which it does itself when first
    imported (so before any resource exists): Globals' POWERTOOLS_* variables, parameters at their defaults unless
    given, and its switches as deployed: metrics on (the template does not turn them off), tracing on where Globals
    say `Tracing: Active`."""
    resolver = _Resolver(template=template, parameters=dict(parameters or {}), region="us-east-1", stack_name="")
    function = template.get("Globals", {}).get("Function", {})
    variables = function.get("Environment", {}).get("Variables", {})
    env = {name: _as_str(resolver.resolve(v)) for name, v in variables.items() if name.startswith("POWERTOOLS_")}
    return {
        "POWERTOOLS_METRICS_DISABLED": "false",
        "POWERTOOLS_TRACE_DISABLED": "false" if function.get("Tracing") == "Active" else "true",
        **env,
    }


def _physical_name(prefix: str, logical_id: str) -> str:
    return f"{prefix}-{logical_id}"


def _resources_of_type(template: Mapping[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == type_
    }


def _exists(call: Callable[[], Any], *missing_codes: str) -> bool:
    try:
        call()
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in missing_codes:
            return False
        raise
    return True


# ---------------------------------------------------------------------------- DynamoDB


def _queue_arn(url: str, region: str) -> str | None:
    """A queue's ARN from its URL (`<endpoint>/<account>/<name>`, as SQS and moto write it), saving a
    GetQueueAttributes a queue; None for a URL of another shape (then it is asked for)."""
    parts = urlsplit(url).path.strip("/").split("/")
    if len(parts) != 2 or not re.fullmatch(r"\d{12}", parts[0]) or not parts[1]:
        return None
    return f"arn:aws:sqs:{region}:{parts[0]}:{parts[1]}"


def _create_table(dynamodb: Any, name: str, props: Mapping[str, Any]) -> str:
    """Create the table as the template says; its ARN."""
    # Taken at CreateTable: AttributeDefinitions, KeySchema, GlobalSecondaryIndexes,
    # LocalSecondaryIndexes, BillingMode, ProvisionedThroughput, SSESpecification,
    # StreamSpecification, TableClass, DeletionProtectionEnabled, Tags.
    # Applied after create: TimeToLiveSpecification (UpdateTimeToLive) and
    # PointInTimeRecoverySpecification (UpdateContinuousBackups).
    # Ignored: TableName (ours is deterministic), ContributorInsightsSpecification,
    # KinesisStreamSpecification, ImportSourceSpecification and ResourcePolicy (not CreateTable
    # parameters or meaningless locally).
    kwargs: dict[str, Any] = {
        "TableName": name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PROVISIONED"),
    }
    index_keys = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput", "OnDemandThroughput")
    for cfn_key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        if props.get(cfn_key):
            kwargs[cfn_key] = [{k: v for k, v in index.items() if k in index_keys} for index in props[cfn_key]]
    for key in ("ProvisionedThroughput", "TableClass", "Tags", "OnDemandThroughput"):
        if key in props:
            kwargs[key] = props[key]
    if "DeletionProtectionEnabled" in props:
        kwargs["DeletionProtectionEnabled"] = _as_bool(props["DeletionProtectionEnabled"])
    sse = props.get("SSESpecification")
    if sse:
        kwargs["SSESpecification"] = {"Enabled": _as_bool(sse.get("SSEEnabled", False))}
        if "SSEType" in sse:
            kwargs["SSESpecification"]["SSEType"] = sse["SSEType"]
        if "KMSMasterKeyId" in sse:
            kwargs["SSESpecification"]["KMSMasterKeyId"] = sse["KMSMasterKeyId"]
    stream = props.get("StreamSpecification")
    if stream:
        kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}

    arn = str(dynamodb.create_table(**kwargs)["TableDescription"]["TableArn"])
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30})

    ttl = props.get("TimeToLiveSpecification")
    if ttl:
        dynamodb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": _as_bool(ttl["Enabled"])},
        )
    pitr = props.get("PointInTimeRecoverySpecification")
    if pitr and _as_bool(pitr.get("PointInTimeRecoveryEnabled", False)):
        dynamodb.update_continuous_backups(
            TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
        )
    return arn


# ---------------------------------------------------------------------------- SQS


def _queue_attributes(props: Mapping[str, Any]) -> dict[str, str]:
    attributes = {key: _as_str(props[key]) for key in _SQS_ATTRIBUTES if key in props}
    for key in _SQS_JSON_ATTRIBUTES:
        if key in props:
            policy = dict(props[key])
            if "maxReceiveCount" in policy:
                policy["maxReceiveCount"] = int(policy["maxReceiveCount"])
            attributes[key] = json.dumps(policy)
    return attributes


def _queue_order(queues: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Logical ids with every queue after the queues its RedrivePolicy points at (DLQs first)."""

    def targets(logical_id: str) -> set[str]:
        policy = queues[logical_id].get("Properties", {}).get("RedrivePolicy") or {}
        target = policy.get("deadLetterTargetArn")
        if isinstance(target, dict) and "Fn::GetAtt" in target:
            att = target["Fn::GetAtt"]
            return {att.split(".", 1)[0] if isinstance(att, str) else att[0]} & set(queues)
        return set()

    ordered: list[str] = []
    pending = list(queues)
    while pending:
        ready = [q for q in pending if targets(q) <= set(ordered)]
        if not ready:
            raise ValueError(f"queues redrive into each other: {pending}")
        ordered.extend(ready)
        pending = [q for q in pending if q not in ready]
    return ordered


# ---------------------------------------------------------------------------- S3


def _lifecycle_rules(rules: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    converted = []
    for rule in rules:
        api_rule: dict[str, Any] = {
            "Status": rule.get("Status", "Enabled"),
            "Filter": {"Prefix": rule.get("Prefix", "")},
        }
        if "Id" in rule:
            api_rule["ID"] = rule["Id"]
        if "ExpirationInDays" in rule:
            api_rule["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
        if "AbortIncompleteMultipartUpload" in rule:
            days = int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
            api_rule["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": days}
        if "NoncurrentVersionExpiration" in rule:
            days = int(rule["NoncurrentVersionExpiration"]["NoncurrentDays"])
            api_rule["NoncurrentVersionExpiration"] = {"NoncurrentDays": days}
        converted.append(api_rule)
    return converted


def _create_bucket(s3: Any, name: str, props: Mapping[str, Any]) -> None:
    region = s3.meta.region_name or "us-east-1"
    locked = {"ObjectLockEnabledForBucket": True} if _as_bool(props.get("ObjectLockEnabled", False)) else {}
    if region == "us-east-1":
        s3.create_bucket(Bucket=name, **locked)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region}, **locked)
    if "VersioningConfiguration" in props:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration=props["VersioningConfiguration"])
    if locked and "ObjectLockConfiguration" in props:
        lock = props["ObjectLockConfiguration"]
        retention = dict(lock["Rule"]["DefaultRetention"])
        retention["Days"] = int(retention["Days"])
        s3.put_object_lock_configuration(
            Bucket=name,
            ObjectLockConfiguration={"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": retention}},
        )
    encryption = props.get("BucketEncryption")
    if encryption:
        # CloudFormation says ServerSideEncryptionByDefault where the API says Apply...ByDefault.
        rules = [
            {
                **{k: v for k, v in rule.items() if k != "ServerSideEncryptionByDefault"},
                "ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"],
            }
            if "ServerSideEncryptionByDefault" in rule
            else dict(rule)
            for rule in encryption["ServerSideEncryptionConfiguration"]
        ]
        for rule in rules:
            if "BucketKeyEnabled" in rule:
                rule["BucketKeyEnabled"] = _as_bool(rule["BucketKeyEnabled"])
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
    if "PublicAccessBlockConfiguration" in props:
        block = {k: _as_bool(v) for k, v in props["PublicAccessBlockConfiguration"].items()}
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=block)
    if "OwnershipControls" in props:
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=props["OwnershipControls"])
    lifecycle = props.get("LifecycleConfiguration")
    if lifecycle and lifecycle.get("Rules"):
        s3.put_bucket_lifecycle_configuration(
            Bucket=name, LifecycleConfiguration={"Rules": _lifecycle_rules(lifecycle["Rules"])}
        )
    # Not applied: the TLS-only bucket policy (AWS::S3::BucketPolicy). Local endpoints speak
    # plain HTTP, so the policy would deny every request wherever bucket policies are enforced.


# ---------------------------------------------------------------------------- entry point


def provision(
    template: dict[str, Any],
    *,
    dynamodb: Any,
    sqs: Any,
    s3: Any,
    prefix: str = "tickwork",
    if_missing: bool = False,
    parameters: Mapping[str, str] | None = None,
) -> ProvisionedResources:
    """Create the table, queues and buckets of `template` through the given boto3 clients.

    Every property comes from the template's resources, with intrinsic functions resolved:
    parameters to `parameters` or their defaults, queue ARNs to the local queues. With
    `if_missing=True`, resources that already exist (same deterministic names) are kept.
    Note: JobsTable's DeletionProtectionEnabled is applied as the template says (parameter
    TableDeletionProtection, default "true"); pass "false" if you need to delete the table.
    """
    region = dynamodb.meta.region_name or "us-east-1"
    resolver = _Resolver(template=template, parameters=dict(parameters or {}), region=region, stack_name=prefix)

    # Queues: DLQs first, so RedrivePolicy can name their ARNs.
    queues = _resources_of_type(template, "AWS::SQS::Queue")
    queue_urls: dict[str, str] = {}
    for logical_id in _queue_order(queues):
        name = _physical_name(prefix, logical_id)  # never the template's QueueName: names are per prefix
        url = None
        if if_missing:
            try:
                url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") not in (
                    "AWS.SimpleQueueService.NonExistentQueue",
                    "QueueDoesNotExist",
                ):
                    raise
        if url is None:
            props = resolver.resolve(queues[logical_id].get("Properties", {}))
            url = sqs.create_queue(QueueName=name, Attributes=_queue_attributes(props))["QueueUrl"]
        arn = (
            _queue_arn(url, region)
            or sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        )
        queue_urls[logical_id] = url
        resolver.refs[logical_id] = url
        resolver.attributes[(logical_id, "Arn")] = arn
        resolver.attributes[(logical_id, "QueueName")] = name
        resolver.attributes[(logical_id, "QueueUrl")] = url

    # The results bucket, and the audit trail's archive.
    for logical_id in (BUCKET_ID, AUDIT_BUCKET_ID):
        if logical_id not in template["Resources"]:
            continue
        bucket = template["Resources"][logical_id]
        # The template's name where it gives one (a multi-region stack's results bucket, named for its region so that
        # another region's API finds it: docs/regions.md); else the prefix's.
        named = resolver.resolve(bucket.get("Properties", {}).get("BucketName", _NO_VALUE))
        bucket_name = named if isinstance(named, str) else _physical_name(prefix, logical_id).lower()
        if not (if_missing and _exists(partial(s3.head_bucket, Bucket=bucket_name), "404", "NoSuchBucket")):
            # Not applied: server access logging (LoggingConfiguration) names the access-log bucket, which
            # only a deployed stack has; a local run has no S3 access logs to keep.
            properties = {
                k: v for k, v in bucket.get("Properties", {}).items() if k not in ("LoggingConfiguration", "BucketName")
            }
            _create_bucket(s3, bucket_name, resolver.resolve(properties))
        resolver.refs[logical_id] = bucket_name
        resolver.attributes[(logical_id, "Arn")] = f"arn:aws:s3:::{bucket_name}"
        resolver.attributes[(logical_id, "DomainName")] = f"{bucket_name}.s3.amazonaws.com"
    bucket_name = resolver.refs[BUCKET_ID]

    # The jobs table.
    table_name = _physical_name(prefix, TABLE_ID)
    strong = "StrongRegions" in template.get("Conditions", {}) and resolver.condition("StrongRegions")
    table = template["Resources"][STRONG_TABLE_ID if strong else TABLE_ID]
    if if_missing and _exists(lambda: dynamodb.describe_table(TableName=table_name), "ResourceNotFoundException"):
        table_arn = dynamodb.describe_table(TableName=table_name)["Table"]["TableArn"]
    else:
        table_arn = _create_table(dynamodb, table_name, resolver.resolve(table.get("Properties", {})))
    resolver.refs[TABLE_ID] = table_name
    resolver.attributes[(TABLE_ID, "Arn")] = table_arn
    # A function's Ref is its name; the local runtime names each `<prefix>-<logical id>` (LocalNode._runtime).
    resolver.refs.update(
        {f: _physical_name(prefix, f) for f in _resources_of_type(template, "AWS::Serverless::Function")}
    )
    # A secret's Ref is its ARN; only its dynamic reference is read, and that resolves to "" (_SECRET_REFERENCE).
    resolver.refs.update(
        {
            secret: f"arn:aws:secretsmanager:{region}:{LOCAL_ACCOUNT_ID}:secret:{_physical_name(prefix, secret)}"
            for secret in _resources_of_type(template, "AWS::SecretsManager::Secret")
        }
    )

    return ProvisionedResources(
        table_name=table_name,
        results_bucket=bucket_name,
        queue_urls={band: queue_urls[logical_id] for band, logical_id in BAND_QUEUES.items()},
        dlq_urls={band: queue_urls[logical_id] for band, logical_id in BAND_DLQS.items()},
        extra_queue_urls={
            logical_id: url
            for logical_id, url in queue_urls.items()
            if logical_id not in BAND_QUEUES.values() and logical_id not in BAND_DLQS.values()
        },
        _resolver=resolver,
    )
