"""What AWS Lambda does around a handler, done locally: the context object, the events its triggers build
(an SQS event source mapping's batch, an EventBridge scheduled event), and execution environments.

Used by the local runtime (`tickwork dev`) and the tests alike, so the handlers see exactly what they
would see in Lambda. The function's settings (code location, handler, timeout, memory, event sources)
are read from template.yaml, never restated here.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Generic, TypeVar

from tickwork_local.aws.provision import BAND_QUEUES, LOCAL_ACCOUNT_ID
from tickwork_local.stack.template import DEFAULT_TEMPLATE

REGION = "us-east-1"


@dataclass
class LocalLambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    timeout_seconds: float = 900
    memory_limit_in_mb: int = 512
    region: str = REGION
    account_id: str = LOCAL_ACCOUNT_ID
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _started: float = field(default_factory=time.monotonic)
    identity: Any = None
    client_context: Any = None
    function_version: ClassVar[str] = "$LATEST"
    log_stream_name: ClassVar[str] = "local"

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self._started)) * 1000))


def queue_arn(queue_url: str, region: str = REGION, account_id: str = LOCAL_ACCOUNT_ID) -> str:
    return f"arn:aws:sqs:{region}:{account_id}:{queue_url.rstrip('/').rsplit('/', 1)[-1]}"


def sqs_event(messages: list[dict[str, Any]], queue_url: str, region: str = REGION) -> dict[str, Any]:
    """The event an SQS event source mapping invokes a function with, from ReceiveMessage results
    (received with AttributeNames=["All"] and MessageAttributeNames=["All"])."""
    arn = queue_arn(queue_url, region)
    records = []
    for m in messages:
        attributes = dict(m.get("Attributes", {}))
        attributes.setdefault("ApproximateReceiveCount", "1")
        attributes.setdefault("SentTimestamp", str(int(time.time() * 1000)))
        attributes.setdefault("SenderId", "AIDAIENQZJOLO23YVJ4VO")
        attributes.setdefault("ApproximateFirstReceiveTimestamp", str(int(time.time() * 1000)))
        records.append(
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": attributes,
                "messageAttributes": {
                    name: {
                        "stringValue": value.get("StringValue"),
                        "binaryValue": value.get("BinaryValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": value["DataType"],
                    }
                    for name, value in m.get("MessageAttributes", {}).items()
                },
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": arn,
                "awsRegion": region,
            }
        )
    return {"Records": records}


def failed_message_ids(response: dict[str, Any] | None) -> set[str]:
    """The batchItemFailures of a ReportBatchItemFailures response, as Lambda reads them."""
    return {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}


def scheduled_event(
    instant: datetime, rule_arn: str, *, region: str = REGION, account_id: str = LOCAL_ACCOUNT_ID
) -> dict[str, Any]:
    """The event an EventBridge scheduled rule invokes its target with (time to the second, as AWS sends it)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account_id,
        "time": instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


# ---------------------------------------------------------------------------- the template's functions


def _parameter_value(value: Any, parameters: Mapping[str, Any]) -> Any:
    """A function property: a literal, or a Ref to a template parameter."""
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in parameters:
            return parameters[value["Ref"]]
        raise ValueError(f"cannot resolve {value!r} locally (only literals and parameter Refs)")
    return value


def _logical_id_of(value: Any) -> str:
    """The resource a `!GetAtt X.Arn` / `!Ref X` points at."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        att = value["Fn::GetAtt"]
        return att.split(".", 1)[0] if isinstance(att, str) else att[0]
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    raise ValueError(f"not a reference to a resource: {value!r}")


@dataclass(frozen=True)
class SqsEventSource:
    """One `Type: SQS` event of a function, as Lambda's event source mapping would run it."""

    name: str
    queue_logical_id: str
    band: str | None  # "high"/"normal"/"low" for the band queues
    batch_size: int
    batching_window_seconds: float
    maximum_concurrency: int | None
    report_batch_item_failures: bool
    enabled: bool


@dataclass(frozen=True)
class FunctionConfig:
    """A function's settings from template.yaml (Globals.Function merged with its own properties)."""

    logical_id: str
    code_dir: Path
    handler: str
    timeout_seconds: float
    memory_mb: int
    events: Mapping[str, Any]

    @property
    def module_file(self) -> Path:
        module, _, _ = self.handler.rpartition(".")
        return self.code_dir / (module.replace(".", "/") + ".py")

    @property
    def handler_name(self) -> str:
        return self.handler.rpartition(".")[2]

    def sqs_event_sources(self, parameters: Mapping[str, Any]) -> list[SqsEventSource]:
        bands = {logical_id: band for band, logical_id in BAND_QUEUES.items()}
        sources = []
        for name, event in self.events.items():
            if event.get("Type") != "SQS":
                continue
            props = event.get("Properties", {})
            queue = _logical_id_of(props["Queue"])
            scaling = props.get("ScalingConfig") or {}
            concurrency = scaling.get("MaximumConcurrency")
            sources.append(
                SqsEventSource(
                    name=name,
                    queue_logical_id=queue,
                    band=bands.get(queue),
                    batch_size=int(_parameter_value(props.get("BatchSize", 10), parameters)),
                    batching_window_seconds=float(
                        _parameter_value(props.get("MaximumBatchingWindowInSeconds", 0), parameters)
                    ),
                    maximum_concurrency=None if concurrency is None else int(_parameter_value(concurrency, parameters)),
                    report_batch_item_failures="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
                    enabled=str(_parameter_value(props.get("Enabled", True), parameters)).lower() != "false",
                )
            )
        return sources

    def schedule_rule_arn(self, prefix: str, region: str = REGION) -> str:
        """The ARN of the rule SAM generates for the function's first Schedule event (<Function><Event>)."""
        for name, event in self.events.items():
            if event.get("Type") in ("Schedule", "ScheduleV2"):
                return f"arn:aws:events:{region}:{LOCAL_ACCOUNT_ID}:rule/{prefix}-{self.logical_id}{name}"
        return f"arn:aws:events:{region}:{LOCAL_ACCOUNT_ID}:rule/{prefix}-{self.logical_id}"


def function_config(
    template: Mapping[str, Any],
    logical_id: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    template_dir: Path | None = None,
) -> FunctionConfig:
    resource = template["Resources"][logical_id]
    if resource.get("Type") != "AWS::Serverless::Function":
        raise ValueError(f"{logical_id} is not an AWS::Serverless::Function")
    merged = {**template.get("Globals", {}).get("Function", {}), **resource.get("Properties", {})}
    # A parameter not given takes its default, as CloudFormation does.
    defaults = {name: p["Default"] for name, p in template.get("Parameters", {}).items() if "Default" in p}
    params = {**defaults, **(parameters or {})}
    base = template_dir or DEFAULT_TEMPLATE.parent
    code_uri = merged.get("CodeUri")
    if not isinstance(code_uri, str):
        raise ValueError(f"{logical_id}: CodeUri must be a local path to run it locally")
    return FunctionConfig(
        logical_id=logical_id,
        code_dir=(base / code_uri).resolve(),
        handler=str(merged.get("Handler", "app.handler")),
        timeout_seconds=float(_parameter_value(merged.get("Timeout", 3), params)),
        memory_mb=int(_parameter_value(merged.get("MemorySize", 128), params)),
        events=merged.get("Events", {}),
    )


# ---------------------------------------------------------------------------- execution environments

_environment_ids = itertools.count(1)


def load_handler_module(config: FunctionConfig) -> ModuleType:
    """A fresh instance of the function's handler module, as a new Lambda execution environment would
    import it: the same file, with module globals (Powertools processors and resolvers, the injected
    services) of its own. The shared `tickwork` package (the layer) is imported once per process."""
    path = config.module_file
    name = f"_tickwork_local_{config.logical_id}_{next(_environment_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves postponed annotations through sys.modules
    code_dir = str(config.code_dir)
    if code_dir not in sys.path:  # sibling modules import as top-level modules, as in Lambda
        sys.path.append(code_dir)
    # Its sibling modules (the API's routes, dependencies) are its own too: a Powertools Router keeps the event
    # of the resolver that included it last, so environments sharing one routes module read each other's requests.
    siblings = {path.stem for path in config.code_dir.iterdir() if path.suffix == ".py" or path.is_dir()}
    shared = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] in siblings}
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        own = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] in siblings}
        # The first environment's stay where later imports (a route's own, at its call) find them.
        sys.modules.update(shared or own)
        module.__dict__["_tickwork_own_siblings"] = own  # kept alive with the environment
    for resolver in _resolvers(module):
        keep_own_request(resolver)
    return module


def _resolvers(module: ModuleType) -> list[Any]:
    """The module's Powertools API resolvers (none where Powertools' event handler was never imported)."""
    if "aws_lambda_powertools.event_handler" not in sys.modules:
        return []
    from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver  # noqa: PLC0415 - a handler imported it already

    return [value for value in vars(module).values() if isinstance(value, ApiGatewayResolver)]


def keep_own_request(resolver: Any) -> None:
    """Make a Powertools resolver read its own invocation's request (and context), as in an environment of its own
    process. Powertools keeps the request it resolves on its class (`BaseRouter.current_event`), one per process:
    environments sharing this process, invoked at once, would read each other's (the body the request validation
    reads, the path of a problem's `instance`). The resolver's own attributes come first."""
    from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent  # noqa: PLC0415 - as _resolvers

    resolve = resolver.resolve

    def resolve_own_request(event: Any, context: Any) -> Any:
        raw = event.raw_event if isinstance(event, BaseProxyEvent) else event
        resolver.current_event = resolver._to_proxy_event(raw)
        resolver.lambda_context = context
        return resolve(event, context)

    resolver.resolve = resolve_own_request


@dataclass
class Environment:
    module: ModuleType
    handler: Callable[[Any, Any], Any]
    invocations: int = 0


E = TypeVar("E")


class EnvironmentPool(Generic[E]):
    """Lambda's execution environments of one function: up to `max_environments`, created on demand (a cold
    start) and reused when warm, one invocation at a time each. Subclasses say how an environment is created
    and how it runs an event."""

    def __init__(self, config: FunctionConfig, max_environments: int, function_name: str | None) -> None:
        if max_environments < 1:
            raise ValueError("max_environments must be at least 1")
        self.config = config
        self.function_name = function_name or config.logical_id
        self._max = max_environments
        self._idle: list[E] = []
        self._count = 0
        self._cond = threading.Condition()

    @property
    def environments(self) -> int:
        with self._cond:
            return self._count

    def _create(self) -> E:
        raise NotImplementedError

    def _call(self, env: E, event: Any) -> Any:
        raise NotImplementedError

    def invoke(self, event: Any) -> Any:
        """Invoke synchronously, in an idle environment or a new one; the function's error propagates."""
        env = self._acquire()
        try:
            return self._call(env, event)
        finally:
            self._release(env)

    def _usable(self, env: E) -> bool:
        """Whether a released environment can serve again (a process that ended cannot)."""
        return True

    def _acquire(self) -> E:
        with self._cond:
            while not self._idle and self._count >= self._max:
                self._cond.wait()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            return self._create()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, env: E) -> None:
        with self._cond:
            if self._usable(env):
                self._idle.append(env)
            else:
                self._count -= 1
            self._cond.notify()

    def warm(self) -> None:
        """Create one environment now (a cold start before the first invocation needs it)."""
        self._release(self._acquire())


class FunctionRuntime(EnvironmentPool[Environment]):
    """A Lambda function run locally: each execution environment is a separate instance of the handler module.
    Each invocation gets a fresh context with the template's timeout."""

    def __init__(
        self,
        config: FunctionConfig,
        *,
        prepare: Callable[[ModuleType], None],
        max_environments: int,
        function_name: str | None = None,
    ) -> None:
        super().__init__(config, max_environments, function_name)
        self._prepare = prepare

    def _create(self) -> Environment:
        module = load_handler_module(self.config)
        self._prepare(module)
        return Environment(module, getattr(module, self.config.handler_name))

    def context(self) -> LocalLambdaContext:
        return LocalLambdaContext(
            function_name=self.function_name,
            timeout_seconds=self.config.timeout_seconds,
            memory_limit_in_mb=self.config.memory_mb,
        )

    def _call(self, env: Environment, event: Any) -> Any:
        env.invocations += 1
        return env.handler(event, self.context())
