"""Builds the domain objects from settings and lazily built clients: the one wiring shared by all handlers."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property

from tickwork.aws import AwsClients
from tickwork.catalog import Catalog
from tickwork.clock import Clock, SystemClock
from tickwork.dispatch import Dispatcher
from tickwork.executor import RunExecutor
from tickwork.jobs import JobService
from tickwork.jobtypes import registry
from tickwork.models import Band
from tickwork.queues import RunQueues
from tickwork.results import ResultStore
from tickwork.settings import Settings, load_settings
from tickwork.store import JobStore


@dataclass
class Services:
    settings: Settings
    clients: AwsClients = field(default_factory=AwsClients)
    clock: Clock = field(default_factory=SystemClock)

    @classmethod
    def from_env(cls) -> Services:
        return cls(settings=load_settings())

    @cached_property
    def store(self) -> JobStore:
        s = self.settings
        return JobStore(
            self.clients.client("dynamodb"),
            s.table_name,
            shards=s.due_shards,
            retention_days=s.run_retention_days,
        )

    @cached_property
    def catalog(self) -> Catalog:
        """Listings and idempotency records, on the same (cached) DynamoDB client as the store."""
        return Catalog(self.clients.client("dynamodb"), self.settings.table_name)

    @cached_property
    def queues(self) -> RunQueues:
        s = self.settings
        return RunQueues(
            self.clients.client("sqs"),
            {band: s.queue_url(band) for band in Band},
            {band: s.dlq_url(band) for band in Band},
        )

    @cached_property
    def results(self) -> ResultStore:
        return ResultStore(self.clients.client("s3"), self.settings.results_bucket)

    @cached_property
    def dispatcher(self) -> Dispatcher:
        s = self.settings
        return Dispatcher(
            self.store,
            self.queues,
            self.clock,
            horizon=timedelta(seconds=s.horizon_seconds),
            tick_period=timedelta(seconds=s.tick_period_seconds),
            redispatch_after=timedelta(seconds=s.redispatch_after_seconds),
            max_dispatch=s.max_dispatch_per_tick,
            threads=s.claim_threads,
        )

    @cached_property
    def executor(self) -> RunExecutor:
        return RunExecutor(
            self.store,
            self.results,
            self.queues,
            registry,
            self.clock,
            lease_for=timedelta(seconds=self.settings.lease_seconds),
            # A message-borne retry not back by then is re-sent by the tick; past the horizon, so that the tick
            # never sends ahead a retry whose own message is still on its way.
            retry_safety_net=timedelta(seconds=self.settings.redispatch_after_seconds + self.settings.horizon_seconds),
            http_allowlist=self.settings.http_allowlist,
            clients=self.clients,
        )

    @cached_property
    def jobs(self) -> JobService:
        return JobService(
            self.store, self.dispatcher, self.results, self.clock, http_allowlist=self.settings.http_allowlist
        )


class ServicesSlot:
    """A handler module's wiring: built on first use (never at import, so moto can patch first) and kept for the
    life of the execution environment; tests and the local runtime inject their own."""

    def __init__(self) -> None:
        self._value: Services | None = None
        self._lock = threading.Lock()

    def get(self) -> Services:
        with self._lock:
            if self._value is None:
                self._value = Services.from_env()
            return self._value

    def set(self, value: Services | None) -> None:
        with self._lock:
            self._value = value
