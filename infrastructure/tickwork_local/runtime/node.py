"""One local Tickwork node: the functions of template.yaml, run in-process as Lambda would run them,
with what AWS does around them played locally:

- API Gateway (HTTP API, `$default` route, payload 2.0) in front of ApiFunction; with `token_api` (`tickwork dev
  --idp`, which sets the parameter JwtIssuer to its local issuer), the stack's TokenApi instead: its JWT authorizer,
  and the hosted console's open routes (tickwork_local.identity.jwt_authorizer);
- an EventBridge schedule invoking TickFunction every period, aligned to the wall clock;
- one SQS event source mapping per `Type: SQS` event of ExecutorFunction (batch size, batching window,
  ReportBatchItemFailures and MaximumConcurrency from the template; concurrency scaled to `workers`);
- EventBridge delivering the run events the functions publish to a queue this node drains: each is printed
  and kept for `GET /_tickwork/events` (tickwork_local.runtime.event_log);
- with DispatchWorkers > 1 (`--parameter DispatchWorkers=N`), the dispatch queue's event source feeding
  DispatchFunction, the fan-out's workers (tickwork.tick.fanout).

The handlers are the same modules as in Lambda; each gets `Services` built from the function's own
environment in the template (resolved to the local resource names) and clients for the local endpoint.
Several nodes can share one endpoint: they are several Lambdas on one account.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3
import botocore.loaders
import botocore.session
from botocore.exceptions import ClientError
from tickwork.aws.clients import AwsClients
from tickwork.settings import JobCodeSettings, Settings

from tickwork_local.aws.emf_forwarding import CloudWatchPlay, play_cloudwatch
from tickwork_local.aws.faults import AwsErrorInjector
from tickwork_local.aws.provision import ProvisionedResources, provision
from tickwork_local.identity.jwt_authorizer import JwtAuthorizer
from tickwork_local.runtime.apigateway import ApiGatewayServer
from tickwork_local.runtime.event_log import EVENTS_PATH, LocalEventLog
from tickwork_local.runtime.function_invokes import InvokeEndpoint, LocalInvokes
from tickwork_local.runtime.lambda_runtime import (
    REGION,
    FunctionConfig,
    FunctionRuntime,
    function_config,
    scheduled_event,
)
from tickwork_local.runtime.observe import ObservedResults, ObservedStore, RunLog, format_tick_line
from tickwork_local.runtime.poller import POLL_LANES, BatchOutcome, QueuePoller
from tickwork_local.runtime.process_runtime import ProcessFunctionRuntime
from tickwork_local.runtime.ticker import Ticker
from tickwork_local.stack.build import BuiltStack, load_built
from tickwork_local.stack.template import load_template

log = logging.getLogger("tickwork_local")

API_FUNCTION = "ApiFunction"
TICK_FUNCTION = "TickFunction"
EXECUTOR_FUNCTION = "ExecutorFunction"
DISPATCH_FUNCTION = "DispatchFunction"  # the fan-out's worker; idle unless DispatchWorkers > 1
SANDBOX_FUNCTION = "JobSandboxFunction"  # function-isolated job types' handlers; the executor invokes it
PROVIDER_FUNCTION = "ResourceProviderFunction"  # CloudFormation's custom resources; Lambda's Invoke of it is played
FUNCTIONS = (API_FUNCTION, TICK_FUNCTION, EXECUTOR_FUNCTION, DISPATCH_FUNCTION, SANDBOX_FUNCTION, PROVIDER_FUNCTION)

DISPATCH_ENVIRONMENTS = 4  # dispatch workers at once on one node (each claims with its own threads)

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",  # moto's placeholder credentials
}
# Every region's endpoint (`tickwork dev --regions`: `us-east-1=http://...,us-west-2=http://...`), where this node's
# clients of another region send: its API reads a result another region's bucket holds (docs/regions.md,
# "Results"); a failover's replication probe reads the old active region's replica and metrics.
REGION_ENDPOINTS_ENV = "TICKWORK_LOCAL_REGION_ENDPOINTS"


def region_endpoints(value: str) -> dict[str, str]:
    """`REGION_ENDPOINTS_ENV`'s value as {region: endpoint URL}."""
    return dict(part.strip().split("=", 1) for part in value.split(",") if "=" in part)


def region_endpoints_from_env() -> dict[str, str]:
    return region_endpoints(os.environ.get(REGION_ENDPOINTS_ENV, ""))


@dataclass
class NodeOptions:
    endpoint_url: str
    host: str = "127.0.0.1"
    port: int = 3000
    tick_seconds: int = 60
    workers: int = 10
    due_shards: int = 2
    prefix: str = "tickwork"
    attach: bool = False  # the resources may exist already (another node, or an earlier run)
    poll_wait_seconds: int = 5
    # One: Powertools' API resolver keeps the event being resolved in a class attribute (BaseRouter.current_event),
    # shared by every resolver in the process, so two API invocations at once would read each other's request.
    # In Lambda each process serves one request at a time; here requests to the API are served one at a time.
    api_environments: int = 1
    log_level: str = "WARNING"
    api_keys_file: str | None = None
    accept_hosts: tuple[str, ...] = ()  # host names the API answers for besides the loopback ones and `host`
    parameters: dict[str, str] = field(default_factory=dict)  # more template parameter overrides
    node_name: str = ""
    # Fail this share of the functions' AWS requests (throttles, 5xx, connect timeouts; see tickwork_local.aws.faults).
    aws_error_rate: float = 0.0
    aws_error_seed: int = 0
    # Run the functions from a build (tickwork_local.stack.build) in processes of their own Python, as deployed,
    # instead of importing them into this process.
    built: str | None = None
    # Folders the JobTypeModules are imported from, as from a layer's python/ (tickwork dev --job-types-path).
    job_type_paths: list[str] = field(default_factory=list)
    # Be the stack's TokenApi (tickwork dev --idp): the parameters JwtIssuer and JwtAudience's JWT authorizer.
    token_api: bool = False


def prepare_process(endpoint_url: str, log_level: str = "WARNING") -> None:
    """Process settings every boto3 client and Powertools object here must see, before they are built:
    all AWS calls go to the local endpoint; no X-Ray daemon (EMF lines go to the local CloudWatch: emf_forwarding)."""
    os.environ["AWS_ENDPOINT_URL"] = endpoint_url
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ.setdefault("AWS_REGION", os.environ["AWS_DEFAULT_REGION"])
    if not os.environ.get("AWS_ACCESS_KEY_ID") and not os.environ.get("AWS_PROFILE"):
        os.environ.update(FAKE_CREDENTIALS)
    os.environ["POWERTOOLS_TRACE_DISABLED"] = "true"
    os.environ["POWERTOOLS_LOG_LEVEL"] = log_level
    for name in ("werkzeug", "urllib3.connectionpool"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # An invocation that recorded no metric makes Powertools warn, on every invocation.
    warnings.filterwarnings("ignore", message="No application metrics to publish")


_ALREADY_EXISTS = {
    "ResourceInUseException",  # DynamoDB CreateTable
    "QueueAlreadyExists",
    "QueueNameExists",
    "BucketAlreadyOwnedByYou",
    "BucketAlreadyExists",
}
MIN_BAND_CONCURRENCY = 2  # Lambda's floor for an SQS event source's MaximumConcurrency


def apportion(weights: Mapping[str, int], total: int, minimum: int = MIN_BAND_CONCURRENCY) -> dict[str, int]:
    """Split `total` workers over bands in proportion to their template MaximumConcurrency (largest
    remainder), at least `minimum` each (Lambda's floor) and never more than the template's own ceiling."""
    if total < minimum * len(weights):
        raise ValueError(f"--workers must be at least {minimum * len(weights)} ({minimum} per band)")
    whole = sum(weights.values())
    exact = {band: total * weight / whole for band, weight in weights.items()}
    shares = {band: max(minimum, int(value)) for band, value in exact.items()}
    order = sorted(weights, key=lambda band: exact[band] - int(exact[band]), reverse=True)
    while sum(shares.values()) < total:
        grown = False
        for band in order:
            if sum(shares.values()) >= total:
                break
            if shares[band] < weights[band]:
                shares[band] += 1
                grown = True
        if not grown:
            break
    while sum(shares.values()) > total:  # the minimum overshot: take from the largest
        band = max((b for b in shares if shares[b] > minimum), key=lambda b: shares[b])
        shares[band] -= 1
    return {band: min(shares[band], weights[band]) for band in weights}


class LocalNode:
    def __init__(
        self, options: NodeOptions, *, template: dict[str, Any] | None = None, out: TextIO | None = None
    ) -> None:
        self.options = options
        self.template = template or load_template()
        self.out = out or sys.stdout
        self.resources: ProvisionedResources | None = None
        self.functions: dict[str, Any] = {}  # FunctionRuntime, or ProcessFunctionRuntime for --built
        self.pollers: list[Any] = []
        self.concurrency: dict[str, int] = {}
        self.ticker: Any = None
        self.api: Any = None
        self.runlog: Any = None
        self.clients: dict[str, Any] = {}
        self.aws_errors: AwsErrorInjector | None = None  # with NodeOptions.aws_error_rate
        self.cloudwatch: CloudWatchPlay | None = None  # EMF and AWS's own metrics into the local CloudWatch
        self.event_log: LocalEventLog | None = None  # the run events published, for GET /_tickwork/events
        self.invokes = LocalInvokes()  # the functions' Invoke of the job sandbox, played by this node
        # --built: the same, over HTTP, for the functions' processes (their SDK calls go over the network)
        self.invoke_endpoint: InvokeEndpoint | None = None
        self._loader: Any = None
        self.built: BuiltStack | None = None
        if options.built:
            if options.aws_error_rate:
                raise ValueError("--inject-aws-errors works on functions run in this process, not --built ones")
            self.built = load_built(Path(options.built))
            self.template = self.built.template

    # ------------------------------------------------------------ set-up

    @property
    def api_url(self) -> str:
        port = self.api.port if self.api is not None else self.options.port
        return f"http://{self.options.host}:{port}"

    def parameters(self) -> dict[str, str]:
        return {"DueShards": str(self.options.due_shards), **self.options.parameters}

    @property
    def jwt_issuer(self) -> str:
        """The issuer whose bearer tokens the API takes, as TokenApi deployed (the parameter JwtIssuer), with
        `token_api`; empty otherwise (the API is local: open, or keyed)."""
        return self.parameters().get("JwtIssuer", "") if self.options.token_api else ""

    def jwt_authorizer(self) -> JwtAuthorizer | None:
        """TokenApi's JWT authorizer, with the issuer and audiences the template gives it; None without JwtIssuer."""
        if not self.jwt_issuer:
            return None
        audiences = self.parameters().get("JwtAudience", "")
        return JwtAuthorizer(self.jwt_issuer, tuple(a.strip() for a in audiences.split(",") if a.strip()))

    def environment(self, logical_id: str) -> dict[str, str]:
        """The function's environment from the template, with the local runtime's few overrides."""
        assert self.resources is not None
        tick = self.options.tick_seconds
        overrides = {
            "TICK_PERIOD_SECONDS": str(tick),
            "POWERTOOLS_LOG_LEVEL": self.options.log_level,
        }
        horizon = int(self.resources.environment(logical_id).get("HORIZON_SECONDS", "120"))
        if horizon <= tick:  # claims must look beyond the next tick
            overrides["HORIZON_SECONDS"] = str(min(900, tick + 60))
        if logical_id == PROVIDER_FUNCTION:
            # Its answers go to a loopback URL here (tests, `aws lambda invoke` by hand); and, where the local API
            # is open (every caller the admin of tenant `default`), it acts for any tenant unless the parameter
            # ResourceProviderTenants says. Keyed or with tokens, the parameter decides, as deployed.
            overrides["RESOURCE_PROVIDER_LOOPBACK_URLS"] = "true"
            open_mode = not self.options.api_keys_file and not self.jwt_issuer
            if open_mode and "ResourceProviderTenants" not in self.options.parameters:
                overrides["RESOURCE_PROVIDER_TENANTS"] = "*"
        if logical_id == API_FUNCTION and not self.jwt_issuer:
            # The deployed API authenticates with IAM; locally it is open, for tenant `default`, or keyed.
            overrides["API_AUTH_MODE"] = "local"
            if self.options.api_keys_file:
                overrides["API_KEYS_FILE"] = self.options.api_keys_file
        return self.resources.environment(logical_id, overrides=overrides)

    def provision(self, clients: Any) -> ProvisionedResources:
        """Create the template's table, queues and bucket; attached, only those missing. Nodes starting
        together may race to create them: the loser finds them made and attaches (a second pass)."""
        for attempt in (1, 2):
            try:
                self.resources = provision(
                    self.template,
                    dynamodb=clients.client("dynamodb"),
                    sqs=clients.client("sqs"),
                    s3=clients.client("s3"),
                    prefix=self.options.prefix,
                    if_missing=self.options.attach,
                    parameters=self.parameters(),
                )
                return self.resources
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if not (self.options.attach and attempt == 1 and code in _ALREADY_EXISTS):
                    raise
        raise AssertionError("unreachable")

    def start(self) -> None:
        """Create (or find) the resources, then start the API, the tick and the event source mappings."""
        opts = self.options
        prepare_process(opts.endpoint_url, opts.log_level)
        for folder in reversed(opts.job_type_paths):
            if folder not in sys.path:
                sys.path.insert(0, folder)

        def clients(*, faulty: bool = True, invokes: LocalInvokes | None = None) -> AwsClients:
            session = self._session()
            if faulty and self.aws_errors is not None:
                self.aws_errors.register(session.events)
            if invokes is not None:
                invokes.register(session.events)
            return AwsClients(
                session=session, endpoint_url=opts.endpoint_url, region_endpoints=region_endpoints_from_env()
            )

        if opts.aws_error_rate:
            self.aws_errors = AwsErrorInjector(opts.aws_error_rate, seed=opts.aws_error_seed)
        setup = clients(faulty=False)  # creating the resources is not what a fault run tests
        self.provision(setup)
        envs = {logical_id: self.environment(logical_id) for logical_id in FUNCTIONS}
        # One process hosts the functions: their environments must agree where they overlap.
        merged: dict[str, str] = {}
        for logical_id, env in envs.items():
            for name, value in env.items():
                if name in merged and merged[name] != value:
                    raise ValueError(f"{logical_id} sets {name}={value!r}, another function {merged[name]!r}")
                merged[name] = value
        os.environ.update(merged)

        # Powertools reads its POWERTOOLS_* settings when these are first imported, which this module's own imports
        # may have done before prepare_process (the service and namespace are the template's either way): the log
        # level is set here.
        from tickwork.observability import logger as powertools_logger  # noqa: PLC0415
        from tickwork.services import SandboxServices, Services  # noqa: PLC0415

        powertools_logger.setLevel(opts.log_level)
        handler = getattr(powertools_logger, "logger_handler", None)
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stdout:
            handler.setStream(sys.stderr)  # stdout is for the runtime's readable lines
        self.runlog = RunLog(self.out, node=opts.node_name)

        def services(logical_id: str, clients: Any, *, observed: bool = False) -> Services:
            # One wiring per function, shared by its execution environments: the domain objects hold no
            # per-invocation state, and boto3 clients are thread-safe. The functions that claim tell the run log
            # the names of the jobs they claim, so that the executor's lines need no read of them.
            built = Services(settings=Settings.from_env(envs[logical_id]), clients=clients)
            built.store = ObservedStore(built.store, self.runlog, outcomes=observed)  # type: ignore[assignment,misc]
            if observed:
                built.results = ObservedResults(built.results, self.runlog)  # type: ignore[assignment,misc]
            return built

        # The tick's (and dispatch workers') warming invocations of the executor are played here too.
        api_clients, poller_clients = clients(invokes=self.invokes), clients()
        executor_clients = clients(invokes=self.invokes)  # its Invoke of the job sandbox is played here
        sandbox_clients = clients()  # the sandbox's own, as it has a role of its own
        self.clients = {
            "api": api_clients,
            "executor": executor_clients,
            "poller": poller_clients,
            "sandbox": sandbox_clients,
        }
        for factory, names in (
            (api_clients, ("dynamodb", "sqs", "s3")),
            (executor_clients, ("dynamodb", "sqs", "s3")),
            (poller_clients, ("sqs",)),
        ):
            for name in names:
                factory.client(name)  # built now, not on the first request

        code_root = self.built.root if self.built else None
        configs = {
            fid: function_config(self.template, fid, self.resources.parameters, template_dir=code_root)  # type: ignore[union-attr]
            for fid in FUNCTIONS
        }
        sources = [s for s in configs[EXECUTOR_FUNCTION].sqs_event_sources(self.resources.parameters) if s.enabled]  # type: ignore[union-attr]
        weights = {s.band or s.name: s.maximum_concurrency or 1000 for s in sources}
        self.concurrency = apportion(weights, opts.workers)
        environments = {
            API_FUNCTION: opts.api_environments,
            TICK_FUNCTION: 1,
            DISPATCH_FUNCTION: DISPATCH_ENVIRONMENTS,
            EXECUTOR_FUNCTION: max(1, sum(self.concurrency.values())),
            SANDBOX_FUNCTION: max(1, sum(self.concurrency.values())),  # a segment at a time per executor's run
            PROVIDER_FUNCTION: 1,
        }
        if self.built is not None:
            self.invoke_endpoint = InvokeEndpoint(self.invokes, opts.endpoint_url)
            self.invoke_endpoint.start()
            self.functions = {
                fid: self._process_runtime(configs[fid], envs[fid], environments[fid]) for fid in FUNCTIONS
            }
        else:
            wiring = {
                API_FUNCTION: services(API_FUNCTION, api_clients),
                TICK_FUNCTION: services(TICK_FUNCTION, api_clients),
                DISPATCH_FUNCTION: services(DISPATCH_FUNCTION, api_clients),
                SANDBOX_FUNCTION: SandboxServices(JobCodeSettings.from_env(envs[SANDBOX_FUNCTION]), sandbox_clients),
                EXECUTOR_FUNCTION: services(EXECUTOR_FUNCTION, executor_clients, observed=True),
                PROVIDER_FUNCTION: services(PROVIDER_FUNCTION, api_clients),
            }
            self.functions = {fid: self._runtime(configs[fid], wiring[fid], environments[fid]) for fid in FUNCTIONS}
        self.invokes.serve(f"{opts.prefix}-{SANDBOX_FUNCTION}", self.functions[SANDBOX_FUNCTION])
        self.invokes.serve(f"{opts.prefix}-{PROVIDER_FUNCTION}", self.functions[PROVIDER_FUNCTION])
        self.invokes.serve(f"{opts.prefix}-{EXECUTOR_FUNCTION}", self.functions[EXECUTOR_FUNCTION])
        # Cold-start the API and the executor before serving, so the first requests are not slow.
        for fid in (API_FUNCTION, EXECUTOR_FUNCTION):
            self.functions[fid].warm()

        self.cloudwatch = play_cloudwatch(self, setup)  # before the pollers: it counts the executor's invocations
        self.event_log = LocalEventLog(
            setup,
            prefix=opts.prefix,
            bus_name=merged.get("EVENT_BUS_NAME") or "default",
            line=self.runlog.line,
        )
        self.event_log.set_up()
        self.event_log.start()
        self._start_api()
        self._start_pollers(sources, poller_clients.client("sqs"))
        self._start_dispatch_poller(configs[DISPATCH_FUNCTION], poller_clients.client("sqs"))
        self._start_ticker(configs[TICK_FUNCTION])
        if self.aws_errors is not None:
            threading.Thread(target=self._report_aws_errors, name="aws-errors", daemon=True).start()

    def _report_aws_errors(self, every_seconds: float = 10.0) -> None:
        """A line every few seconds, so whoever kills this node still knows how many errors it injected."""
        assert self.aws_errors is not None
        prefix = f"{self.options.node_name}: " if self.options.node_name else ""
        while True:
            time.sleep(every_seconds)
            injected, seen = sum(self.aws_errors.injected.values()), sum(self.aws_errors.requests.values())
            self.out.write(f"{prefix}injected {injected} AWS errors in {seen} requests\n")
            self.out.flush()

    def _session(self) -> Any:
        """A boto3 session of its own (sessions are not thread-safe) sharing one model loader (loading
        the service models is most of a client's creation time)."""
        if self._loader is None:
            self._loader = botocore.loaders.create_loader()
        core = botocore.session.get_session()
        core.register_component("data_loader", self._loader)
        return boto3.session.Session(botocore_session=core)

    def _process_runtime(self, config: FunctionConfig, env: dict[str, str], environments: int) -> Any:
        """A built function in processes of its own: its template environment, the local endpoint and credentials
        (this process's AWS_* settings, as prepare_process made them), and what play_cloudwatch tells the API."""
        assert self.built is not None
        process_env = {name: value for name, value in os.environ.items() if name.startswith(("AWS_", "POWERTOOLS_"))}
        process_env |= env
        process_env["EXECUTOR_FUNCTION_NAME"] = f"{self.options.prefix}-{EXECUTOR_FUNCTION}"
        process_env["EXECUTOR_CONCURRENCY"] = str(max(1, sum(self.concurrency.values())))
        if self.invoke_endpoint is not None:  # the job sandbox's Invoke, played by this node; any other to moto
            process_env["AWS_ENDPOINT_URL_LAMBDA"] = self.invoke_endpoint.url
        return ProcessFunctionRuntime(
            config,
            # --job-types-path folders are the contents of a user layer's python/: they come after the built layers.
            layer_paths=[*self.built.layer_paths(config.logical_id), *map(Path, self.options.job_type_paths)],
            python=self.built.python,
            environment=process_env,
            max_environments=environments,
            function_name=f"{self.options.prefix}-{config.logical_id}",
        )

    def _runtime(self, config: FunctionConfig, services: Any, environments: int) -> FunctionRuntime:
        return FunctionRuntime(
            config,
            prepare=lambda module: module.use_services(services),
            max_environments=environments,
            function_name=f"{self.options.prefix}-{config.logical_id}",
        )

    def _start_api(self) -> None:
        self.api = ApiGatewayServer(
            (self.options.host, self.options.port),
            self.functions[API_FUNCTION].invoke,
            accept_hosts=self.options.accept_hosts,
            local_routes={EVENTS_PATH: self.event_log.listed} if self.event_log is not None else None,
            invokes=self.invokes,
            authorizer=self.jwt_authorizer(),
        )
        self.api.start()

    def _start_pollers(self, sources: list[Any], sqs: Any) -> None:
        assert self.resources is not None
        executor = self.functions[EXECUTOR_FUNCTION]
        phase = random.random()  # noqa: S311 - spreads several nodes' polls over the second

        def on_batch(outcome: BatchOutcome) -> None:
            if outcome.error is not None:
                self.runlog.line(
                    f"executor invocation failed on {outcome.band} ({type(outcome.error).__name__}: {outcome.error}); "
                    f"its {outcome.received} messages return after their visibility timeout"
                )

        for source in sources:
            url = self.resources.queue_urls[source.band] if source.band else self._queue_url(source.queue_logical_id)
            concurrency = self.concurrency[source.band or source.name]
            poller = QueuePoller(
                sqs=sqs,
                queue_url=url,
                source=source,
                invoke=executor.invoke,
                concurrency=concurrency,
                lanes=max(concurrency, POLL_LANES),
                wait_seconds=self.options.poll_wait_seconds,
                phase=phase,
                on_batch=on_batch,
            )
            poller.start()
            self.pollers.append(poller)

    def _start_dispatch_poller(self, config: FunctionConfig, sqs: Any) -> None:
        """The fan-out's event source: the dispatch queue's slices to DispatchFunction, a few at once (a node
        is one machine; several nodes attached to one endpoint share the slices, as Lambda's workers would)."""
        if int(self.resources.parameters.get("DispatchWorkers", 1)) <= 1:  # type: ignore[union-attr]
            return  # no slices are ever sent: no poller
        for source in config.sqs_event_sources(self.resources.parameters):  # type: ignore[union-attr]
            poller = QueuePoller(
                sqs=sqs,
                queue_url=self._queue_url(source.queue_logical_id),
                source=source,
                invoke=self.functions[DISPATCH_FUNCTION].invoke,
                concurrency=DISPATCH_ENVIRONMENTS,
                lanes=max(DISPATCH_ENVIRONMENTS, POLL_LANES),
                wait_seconds=self.options.poll_wait_seconds,
                phase=random.random(),  # noqa: S311
            )
            poller.start()
            self.pollers.append(poller)

    def _queue_url(self, logical_id: str) -> str:
        assert self.resources is not None
        return self.resources.extra_queue_urls[logical_id]

    def _start_ticker(self, config: FunctionConfig) -> None:
        rule_arn = config.schedule_rule_arn(self.options.prefix)

        def on_result(instant: Any, result: Any, error: BaseException | None, seconds: float) -> None:
            text = format_tick_line(instant, result, error, seconds, node=self.options.node_name)
            if text:
                self.runlog.line(text)

        self.ticker = Ticker(
            self.functions[TICK_FUNCTION].invoke,
            period_seconds=self.options.tick_seconds,
            event_for=lambda instant: scheduled_event(instant, rule_arn),
            on_result=on_result,
        )
        self.ticker.start()

    # ------------------------------------------------------------ shutdown

    def shutdown(self, grace_seconds: float = 7.0, *, endpoint_stops_too: bool = False) -> dict[str, int]:
        """Stop taking work, let what runs finish within `grace_seconds`, and release what did not: the
        messages go back to their queue at once (visibility 0), for this node's next start or another node.
        `endpoint_stops_too`: the AWS endpoint is this node's own and stops with it, so a long poll still waiting
        is not waited for (up to its WaitTimeSeconds): what it could receive ends with the endpoint."""
        deadline = time.monotonic() + grace_seconds
        if self.api is not None:
            threading.Thread(target=self.api.stop, daemon=True).start()
        if self.ticker is not None:
            self.ticker.stop()
        for poller in self.pollers:
            poller.stop()
        polls_too = not endpoint_stops_too
        finished = all(p.join(max(0.0, deadline - time.monotonic()), polls_too=polls_too) for p in self.pollers)
        released = 0
        if not finished:
            released = sum(p.release_unfinished() for p in self.pollers)
        if self.ticker is not None:
            self.ticker.join(max(0.0, deadline - time.monotonic()))
        if self.event_log is not None:
            self.event_log.stop()
        if self.cloudwatch is not None:
            self.cloudwatch.stop()  # the metrics still pending reach the local CloudWatch
        for function in self.functions.values():
            if isinstance(function, ProcessFunctionRuntime):
                function.stop()
        if self.invoke_endpoint is not None:
            self.invoke_endpoint.stop()
        return {"released": released, "finished": int(finished)}
