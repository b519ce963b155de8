"""Drive the real pipeline in-process against moto: tick handler -> SQS -> executor handler -> S3.

The harness plays only what AWS itself does around the functions (EventBridge invoking the tick, the
SQS event source mapping invoking the executor and deleting what succeeded); the code under test is
the same handler code that runs in Lambda.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from dispatch import app as dispatch_app
from executor import app as executor_app
from tick import app as tick_app
from tickwork.aws.clients import AwsClients
from tickwork.control.api_bodies import JobSpec
from tickwork.model.clock import FakeClock
from tickwork.model.job import Job
from tickwork.model.policies import Band
from tickwork.model.run import Run
from tickwork.services import SandboxServices, Services
from tickwork.settings import Settings
from tickwork_local.aws.provision import ProvisionedResources
from tickwork_local.runtime.function_invokes import LocalInvokes
from tickwork_local.runtime.lambda_runtime import (
    FunctionConfig,
    FunctionRuntime,
    LocalLambdaContext,
    failed_message_ids,
    function_config,
    sqs_event,
)
from tickwork_local.runtime.node import SANDBOX_FUNCTION
from tickwork_local.stack.template import load_template

from tests.conftest import load_event
from tests.faults.crashes import CrashPlan
from tests.moto_snapshots import provisioned_stack

START = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
TENANT = "default"


@dataclass
class CallLog:
    """Every AWS call the code makes, with its parameters (a botocore event hook; nothing is faked)."""

    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, client: Any) -> None:
        client.meta.events.register("provide-client-params.*.*", self._record)

    def attach_session(self, session: Any) -> None:
        """Every client the session builds from now on records its calls (the single-attempt ones too)."""
        session.events.register("provide-client-params.*.*", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append((model.service_model.service_name, model.name, dict(params)))

    def count(self, operation: str | None = None) -> int:
        return sum(1 for _, op, _ in self.calls if operation is None or op == operation)

    def params(self, operation: str) -> list[dict[str, Any]]:
        return [p for _, op, p in self.calls if op == operation]

    def by_operation(self) -> Counter[str]:
        return Counter(op for _, op, _ in self.calls)

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()


@dataclass
class _ReusedAws:
    """A boto3 session, its clients and the hooks the harness puts on them, reused by a test process's pipelines.

    Building them is most of what a pipeline costs beyond moto: a session registers botocore's 1,300 built-in
    handlers (about 30 ms), and each client copies them and builds its endpoint and methods (about 27 ms, four or
    five clients a test). moto serves whichever mock is active, so the clients of an earlier test serve the next
    one's backends as their own. Each test still starts with an empty call log and no played functions; a client on
    which a test registered a handler of its own is dropped when the test ends (a registration replaces the event
    system's lookup cache, which is how it is seen), so the next test gets a fresh one."""

    session: Any
    calls: CallLog
    invokes: LocalInvokes
    clients: _WatchedClients

    @classmethod
    def new(cls) -> _ReusedAws:
        session = boto3.session.Session()
        calls = CallLog()
        calls.attach_session(session)
        invokes = LocalInvokes()  # the executor's Invoke of the job sandbox, played as tickwork dev plays it
        invokes.register(session.events)
        return cls(session, calls, invokes, _WatchedClients(session))

    @classmethod
    def for_this_process(cls) -> _ReusedAws:
        reused = _process_aws()
        reused.calls.clear()
        reused.invokes.withdraw_all()
        return reused

    def forget_changed_clients(self) -> None:
        self.clients.forget_changed()


class _WatchedClients(AwsClients):
    """`AwsClients` that know which of their clients a test changed: each client's event lookup cache as built."""

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self._as_built: dict[str, int] = {}

    def _cached(self, key: str, config: Any, **kwargs: Any) -> Any:
        client = super()._cached(key, config, **kwargs)
        self._as_built.setdefault(key, id(client.meta.events._emitter._lookup_cache))
        return client

    def forget_changed(self) -> None:
        with self._lock:
            for key, client in list(self._clients.items()):
                if id(client.meta.events._emitter._lookup_cache) != self._as_built.get(key):
                    del self._clients[key]
                    self._as_built.pop(key, None)


@functools.cache
def _process_aws() -> _ReusedAws:
    return _ReusedAws.new()


@functools.cache
def _sandbox_config() -> FunctionConfig:
    return function_config(load_template(), SANDBOX_FUNCTION)


@dataclass
class Pipeline:
    services: Services
    resources: ProvisionedResources
    clock: FakeClock
    calls: CallLog
    crashes: CrashPlan  # disarmed: a test arms it to kill the tick or an executor at a crash point

    @classmethod
    @contextmanager
    def create(
        cls,
        *,
        session_hooks: Sequence[Callable[[Any], None]] = (),
        parameters: Mapping[str, str] | None = None,
        **env: str,
    ) -> Iterator[Pipeline]:
        """`session_hooks` see a boto3 session of the test's own before any client is built (the fault suite's error
        injector); without them, the test process's reused session and clients serve (`_ReusedAws`). `parameters`:
        the template's, for the stack as provisioned and the functions' environment (e.g. a RegionMode)."""
        if session_hooks:
            aws = _ReusedAws.new()
            for hook in session_hooks:
                hook(aws.session)
        else:
            aws = _ReusedAws.for_this_process()
        calls, invokes, clients = aws.calls, aws.invokes, aws.clients
        resources = provisioned_stack(
            dynamodb=clients.client("dynamodb"),
            sqs=clients.client("sqs"),
            s3=clients.client("s3"),
            parameters={"TableDeletionProtection": "false", **(parameters or {})},
        )
        overrides = {"DUE_SHARDS": "4", "REDISPATCH_AFTER_SECONDS": "30", **env}
        settings = Settings.from_env(resources.environment("ExecutorFunction", overrides=overrides))
        clock = FakeClock(START)
        crashes = CrashPlan()
        services = Services(settings=settings, clients=clients, clock=clock, faults=crashes)
        if settings.job_sandbox_function:
            invokes.serve(
                settings.job_sandbox_function,
                FunctionRuntime(
                    _sandbox_config(),
                    prepare=lambda module: module.use_services(SandboxServices(settings, clients, clock)),
                    max_environments=10,
                ),
            )
        calls.clear()  # provisioning's calls are not the pipeline's
        tick_app.use_services(services)
        executor_app.use_services(services)
        dispatch_app.use_services(services)
        try:
            yield cls(services, resources, clock, calls, crashes)
        finally:
            tick_app.use_services(None)
            executor_app.use_services(None)
            dispatch_app.use_services(None)
            aws.forget_changed_clients()

    # ------------------------------------------------------------ shortcuts

    @property
    def sqs(self) -> Any:
        return self.services.clients.client("sqs")

    @property
    def s3(self) -> Any:
        return self.services.clients.client("s3")

    def create_job(self, tenant: str = TENANT, **spec: Any) -> Job:
        spec.setdefault("name", "test job")
        spec.setdefault("type", "echo")
        return self.services.jobs.create_job(tenant, JobSpec.model_validate(spec))

    def tick(self) -> dict[str, Any]:
        """EventBridge invoking the tick function with the sample scheduled event."""
        return tick_app.handler(load_event("tick-scheduled.json"), LocalLambdaContext("TickFunction"))

    def run(self, run_id: str) -> Run:
        run = self.services.store.runs.get_run(run_id)
        assert run is not None, f"no run {run_id}"
        return run

    def existing_runs(self, run_ids: list[str]) -> set[str]:
        """Which of these runs exist (BatchGetItem: moto's queries walk the whole table, key lookups don't)."""
        from tickwork.store import run_key

        db = self.services.clients.client("dynamodb")
        table = self.services.settings.table_name
        found: set[str] = set()
        for start in range(0, len(run_ids), 100):
            keys = [run_key(r) for r in run_ids[start : start + 100]]
            request: dict[str, Any] = {table: {"Keys": keys, "ProjectionExpression": "run_id"}}
            while request:
                response = db.batch_get_item(RequestItems=request)
                found |= {item["run_id"]["S"] for item in response["Responses"].get(table, [])}
                request = response.get("UnprocessedKeys") or {}
        return found

    def count_items(self, *, kind: str) -> int:
        """How many items of a kind the table holds (a test-only Scan: the product never scans)."""
        db = self.services.clients.client("dynamodb")
        pages = db.get_paginator("scan").paginate(
            TableName=self.services.settings.table_name,
            FilterExpression="kind = :k",
            ExpressionAttributeValues={":k": {"S": kind}},
            Select="COUNT",
        )
        return sum(page["Count"] for page in pages)

    def runs_of(self, job_id: str) -> list[Run]:
        runs, _ = self.services.store.runs.runs_of_job(job_id, limit=1000)
        return sorted(runs, key=lambda r: r.scheduled_for)

    # ------------------------------------------------------------ SQS, as an event source mapping

    def receive(self, band: Band, max_messages: int = 10) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.resources.queue_urls[band.value],
            MaxNumberOfMessages=max_messages,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        )
        return response.get("Messages", [])

    def deliver(self, band: Band, messages: list[dict[str, Any]], timeout_seconds: float = 900) -> set[str]:
        """Invoke the executor with these messages; delete the successes; return the failed message ids."""
        url = self.resources.queue_urls[band.value]
        try:
            response = executor_app.handler(
                sqs_event(messages, url), LocalLambdaContext("ExecutorFunction", timeout_seconds)
            )
            failed = failed_message_ids(response)
        except Exception:
            failed = {m["MessageId"] for m in messages}  # an invocation that throws leaves the whole batch
        # One delete per receipt handle: a test's copy of a message shares its handle (moto refuses it twice).
        done = list({m["ReceiptHandle"]: m for m in messages if m["MessageId"] not in failed}.values())
        for start in range(0, len(done), 10):
            chunk = done[start : start + 10]
            self.sqs.delete_message_batch(
                QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
            )
        self._last_failed = [m for m in messages if m["MessageId"] in failed]
        return failed

    # ------------------------------------------------------------ the fan-out's event source (DispatchFunction)

    @property
    def dispatch_queue_url(self) -> str:
        return self.resources.extra_queue_urls["DispatchQueue"]

    def receive_slices(self, max_messages: int = 10) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.dispatch_queue_url, MaxNumberOfMessages=max_messages, AttributeNames=["All"]
        )
        return response.get("Messages", [])

    def dispatch(self, message: dict[str, Any]) -> dict[str, Any]:
        """One dispatch worker invocation with one slice (BatchSize 1), its message deleted if it succeeded, as
        the event source mapping does. A worker that dies leaves its message in flight."""
        response = dispatch_app.handler(
            sqs_event([message], self.dispatch_queue_url), LocalLambdaContext("DispatchFunction", 55)
        )
        if not failed_message_ids(response):
            self.sqs.delete_message(QueueUrl=self.dispatch_queue_url, ReceiptHandle=message["ReceiptHandle"])
        return response

    def dispatch_all(self) -> int:
        """Every slice waiting, one worker invocation each, in turn; the number of invocations."""
        invoked = 0
        while messages := self.receive_slices():
            for message in messages:
                self.dispatch(message)
                invoked += 1
        return invoked

    def visibility_set_for(self, receipt_handle: str) -> list[int]:
        return [
            p["VisibilityTimeout"]
            for p in self.calls.params("ChangeMessageVisibility")
            if p["ReceiptHandle"] == receipt_handle
        ]

    def drain(self, *, max_rounds: int = 100, wait_out_backoff: bool = True) -> int:
        """Deliver until every band queue is empty. A failed item's backoff is waited out by moving the fake
        clock by the visibility the executor set, then making the message visible again (as time would)."""
        delivered = 0
        for _ in range(max_rounds):
            progressed = False
            for band in Band:
                messages = self.receive(band)
                if not messages:
                    continue
                progressed = True
                delivered += len(messages)
                self.deliver(band, messages)
                if wait_out_backoff:
                    url = self.resources.queue_urls[band.value]
                    for m in self._last_failed:
                        waits = self.visibility_set_for(m["ReceiptHandle"])
                        self.clock.advance(waits[-1] if waits else 1)
                        self.sqs.change_message_visibility(
                            QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
                        )
            if not progressed:
                return delivered
        raise AssertionError("queues did not drain")

    def drain_one_by_one(self, lambda_seconds: float, band: Band = Band.NORMAL) -> int:
        """Deliver until the band's queue is empty, each message alone to an executor Lambda of `lambda_seconds`
        (a yielding run's segments); how many invocations."""
        invocations = 0
        while messages := self.receive(band):
            for message in messages:
                self.deliver(band, [message], timeout_seconds=lambda_seconds)
                invocations += 1
            assert invocations < 50, "never finished"
        return invocations

    def queued_messages(self, band: Band) -> int:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.resources.queue_urls[band.value],
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesDelayed",
                "ApproximateNumberOfMessagesNotVisible",
            ],
        )["Attributes"]
        return sum(int(v) for v in attrs.values())

    def dlq_messages(self, band: Band) -> list[dict[str, Any]]:
        """What the band's SQS dead-letter queue holds: messages the executor could not process, with the reason
        (a message attribute) when the executor put them there."""
        response = self.sqs.receive_message(
            QueueUrl=self.resources.dlq_urls[band.value],
            MaxNumberOfMessages=10,
            WaitTimeSeconds=0,
            MessageAttributeNames=["All"],
        )
        return response.get("Messages", [])

    def result_objects(self) -> list[str]:
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.resources.results_bucket)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


def create_keyed_table(client: Any, name: str) -> None:
    """A table keyed as Tickwork's (pk, sk), nothing else: a bare replica for the regions' tests."""
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
