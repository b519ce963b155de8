"""The simulation's world: the real pipeline (tests/harness.Pipeline, moto in-process, SQS on the fake clock) driven
through the API handler, the executor and the tick as AWS would; a job type whose every execution and step is
recorded; and the reference model the invariants are checked against (tests/simulation/invariants.py).

One World serves every example of a state machine run (moto's resources are built once): each example is a tenant of
its own, and `reset` clears the table and the queues between examples."""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from api import app as api_app
from dispatch import app as dispatch_app
from executor import app as executor_app
from pydantic import BaseModel, StrictBool
from tick import app as tick_app
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.clock import FakeClock
from tickwork.model.policies import Band, NotCoerced
from tickwork.model.states import RunStatus
from tickwork.services import Services

from tests.api.conftest import ApiClient, Reply, build_event, role_identity
from tests.faults.crashes import ProcessKilled
from tests.harness import Pipeline

# What the simulated handlers really did, on the run's clock: each execution's start (run id -> instants) and
# each step's calls. Module-wide (the job type is registered once for the session); run ids never repeat.
EXECUTIONS: defaultdict[str, list[datetime]] = defaultdict(list)
STEP_CALLS: Counter[tuple[str, int]] = Counter()
# Each execution's handler time (run id -> [start, end)), its end when it returned or raised (its executor may
# still have died after it).
HANDLED: defaultdict[str, list[tuple[datetime, datetime]]] = defaultdict(list)
FAILED_ONCE: set[str] = set()
_lock = threading.Lock()

# A Wednesday noon (tests.harness.START is a Saturday's): weekday calendars' windows are open.
START = datetime(2026, 11, 18, 12, 0, 0, tzinfo=UTC)
LAMBDA_SECONDS = 60  # the executor's invocations: 45 s of handler time, should_yield() from 15 s


class SimWork(BaseModel):
    pages: Annotated[int, NotCoerced] = 2
    page_seconds: Annotated[float, NotCoerced] = (
        10  # each page is a step: ctx.sleep on the fake clock (the heartbeat beats)
    )
    fail_first_after_page: Annotated[
        int, NotCoerced
    ] = -1  # the run's first execution raises after this page (-1: never)
    fail_always: StrictBool = False  # every execution raises after its first page


if "sim-work" not in registry:

    @job_type("sim-work", SimWork)
    def sim_work(payload: SimWork, ctx: RunContext) -> dict[str, Any]:
        """Pages of work, each a step, checkpointed; yields when asked; fails where its payload says."""
        started = ctx.clock.now()
        with _lock:
            EXECUTIONS[ctx.run_id].append(started)
        try:
            return _pages(payload, ctx)
        finally:
            with _lock:
                HANDLED[ctx.run_id].append((started, ctx.clock.now()))

    def _pages(payload: SimWork, ctx: RunContext) -> dict[str, Any]:
        state = ctx.last_checkpoint() or {"next_page": 0}
        for page in range(state["next_page"], payload.pages):

            def work(page: int = page) -> int:
                ctx.sleep(payload.page_seconds)
                with _lock:
                    STEP_CALLS[(ctx.run_id, page)] += 1
                return page

            ctx.step(f"page-{page}", work)
            ctx.checkpoint({"next_page": page + 1})
            if payload.fail_always:
                raise RuntimeError("fails every time")
            if payload.fail_first_after_page == page and ctx.run_id not in FAILED_ONCE:
                with _lock:
                    FAILED_ONCE.add(ctx.run_id)
                raise RuntimeError(f"fails once after page {page}")
            if page + 1 < payload.pages and ctx.should_yield():
                return ctx.yield_run()
        return {"pages": payload.pages}


@dataclass
class Faults:
    """Faults the simulation injected, so that a failure they cause is not counted against the code."""

    tick_crashes: int = 0
    executor_crashes: int = 0
    lost_messages: int = 0
    duplicated_messages: int = 0


@dataclass
class World:
    pipeline: Pipeline
    api: ApiClient
    example: int = 0
    faults: Faults = field(default_factory=Faults)
    errors: list[str] = field(default_factory=list)  # what broke outside an invariant (a 5xx, a raising handler)
    last_tick: datetime = START
    retry_waits: list[tuple[str, str, float]] = field(default_factory=list)  # (job, run, seconds) of each retry
    retries_seen: set[tuple[str, int, int]] = field(default_factory=set)  # (run, attempt, requeues) measured

    @property
    def tenant(self) -> str:
        return f"sim{self.example}"

    @property
    def identity(self) -> dict[str, Any]:
        return role_identity(f"tickwork-tenant-{self.tenant}")

    @property
    def now(self) -> datetime:
        return self.pipeline.clock.now()

    # ------------------------------------------------------------ the API, as a caller

    def call(self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None) -> Reply:
        reply = self.api.call(build_event(method, path, body=body, query=query, identity=self.identity))
        if reply.status >= 500:
            self.errors.append(f"no_5xx: {method} {path} {body!r} answered {reply.status}: {reply.text[:300]}")
        return reply

    # ------------------------------------------------------------ time: EventBridge's tick, SQS's deliveries

    def tick(self) -> None:
        try:
            self.pipeline.tick()
        except ProcessKilled:
            pass
        except Exception as error:  # the tick must not raise: recorded as a failure
            self.errors.append(f"tick_never_raises: the tick raised {type(error).__name__}: {error}")

    def _next_tick(self) -> datetime:
        return (self.last_tick + timedelta(minutes=1)).replace(second=0, microsecond=0)

    def _tick_when_due(self) -> None:
        """EventBridge's schedule: the tick runs each whole minute, however long the handlers take meanwhile (it
        runs beside them: a minute a handler's sleep moved the clock past is ticked right after)."""
        while self._next_tick() <= self.now:
            self.last_tick = self._next_tick()
            self.tick()

    def deliver_visible(self, until: datetime) -> None:
        """Each visible message, one invocation each (a short Lambda, so long runs yield), until none is visible or
        the clock (which the handlers' sleeps move) reaches `until`."""
        for _ in range(500):
            if self.now >= until:
                return
            delivered = False
            for band in Band:
                for message in self.pipeline.receive(band, max_messages=1):
                    delivered = True
                    # An invocation that dies leaves its message in flight until its visibility ends.
                    with contextlib.suppress(ProcessKilled):
                        self.pipeline.deliver(band, [message], timeout_seconds=LAMBDA_SECONDS)
                    self._observe_retry(message)
                    self._tick_when_due()
            if not delivered:
                return
        self.errors.append("queues_drain: the queues never emptied (500 invocations)")

    def _observe_retry(self, message: dict[str, Any]) -> None:
        """A run the invocation left RETRYING: how long it waits (its next attempt's time, from its failure's), as
        the failure set it. Seen once per failed attempt: a later invocation that finds a limit or the overlap slot
        still taken defers the attempt further (not_before moves on), which is the limit's wait, not the backoff."""
        run = self.pipeline.services.store.runs.get_run(json.loads(message["Body"])["run_id"])
        if run is None or run.status != RunStatus.RETRYING or run.not_before is None or not run.attempt_history:
            return
        failed = run.attempt_history[-1]
        if failed.ended_at is None or (run.id, failed.attempt, run.requeues) in self.retries_seen:
            return
        self.retries_seen.add((run.id, failed.attempt, run.requeues))
        self.retry_waits.append((run.job_id, run.id, (run.not_before - failed.ended_at).total_seconds()))

    def advance(self, seconds: float) -> None:
        """Time passes: the tick runs at each whole minute, and what is visible is delivered as it comes."""
        end = self.now + timedelta(seconds=seconds)
        while self.now < end:
            self.pipeline.clock.set(min(self._next_tick(), end))
            self._tick_when_due()
            self.deliver_visible(until=end)

    def skip_to(self, instant: datetime) -> None:
        """Time passes to `instant` without the ticks of the minutes between: for a test whose jobs have nothing
        due meanwhile (a tick would find nothing to write), so that days pass in one step."""
        self.pipeline.clock.set(instant)
        self.last_tick = instant.replace(second=0, microsecond=0) - timedelta(minutes=1)

    # ------------------------------------------------------------ message faults

    def visible_message(self) -> tuple[Band, dict[str, Any]] | None:
        for band in Band:
            messages = self.pipeline.receive(band, max_messages=1)
            if messages:
                return band, messages[0]
        return None

    def lose_message(self) -> None:
        found = self.visible_message()
        if found:
            band, message = found
            url = self.pipeline.resources.queue_urls[band.value]
            self.pipeline.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
            self.faults.lost_messages += 1

    def duplicate_message(self) -> None:
        found = self.visible_message()
        if found:
            band, message = found
            url = self.pipeline.resources.queue_urls[band.value]
            attributes = message.get("MessageAttributes") or {}
            self.pipeline.sqs.send_message(QueueUrl=url, MessageBody=message["Body"], MessageAttributes=attributes)
            self.pipeline.sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
            self.faults.duplicated_messages += 1

    # ------------------------------------------------------------ between examples

    def reset(self) -> None:
        """A fresh tenant, empty queues and table, the clock back at the start."""
        self.example += 1
        with _lock:  # an example replayed makes the same ids again
            EXECUTIONS.clear()
            HANDLED.clear()
            STEP_CALLS.clear()
            FAILED_ONCE.clear()
        self.faults = Faults()
        self.errors = []
        self.retry_waits = []
        self.retries_seen = set()
        self.pipeline.crashes.disarm()
        sqs = self.pipeline.sqs
        for url in [*self.pipeline.resources.queue_urls.values(), *self.pipeline.resources.dlq_urls.values()]:
            sqs.purge_queue(QueueUrl=url)
        db = self.pipeline.services.clients.client("dynamodb")
        table = self.pipeline.services.settings.table_name
        for page in db.get_paginator("scan").paginate(TableName=table, ProjectionExpression="pk, sk"):
            items = page.get("Items", [])
            for start in range(0, len(items), 25):
                db.batch_write_item(
                    RequestItems={table: [{"DeleteRequest": {"Key": key}} for key in items[start : start + 25]]}
                )
        # Every example from the same instant, with fresh services (no cache of the last example's): an example
        # replays as it ran, for hypothesis to shrink it.
        clock = FakeClock(START)
        services = Services(
            settings=self.pipeline.services.settings,
            clients=self.pipeline.services.clients,
            clock=clock,
            faults=self.pipeline.crashes,
        )
        self.pipeline.clock, self.pipeline.services = clock, services
        self.last_tick = START
        for app in (tick_app, executor_app, dispatch_app, api_app):
            app.use_services(services)
