"""Lazily built, cached boto3 clients: never at import, so moto can patch first.

Every client Tickwork builds comes from `AwsClients`, in the Lambdas (through `Services`), in the local runtime
and in the job types (through `RunContext.clients`), so every one of them gets `CLIENT_CONFIG`: its retry
configuration is set here and nowhere else.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

# The SDK's "standard" retry mode: throttles (ProvisionedThroughputExceeded, Throttling, SlowDown), 5xx answers
# and connection errors are retried with exponential backoff and full jitter, behind a client-side retry quota
# that stops retry storms when a service is really down. Six attempts in all (the first and five retries, each
# backoff up to 20 s) ride out a brief throttle without holding a tick or an executor for long; past them the
# error reaches Tickwork, whose own recovery (the claim's conditional writes, the lease, the re-send) takes over.
# A pool as large as the claim and executor thread pools, so threads never wait for a connection.
TOTAL_ATTEMPTS = 6
CLIENT_CONFIG = Config(max_pool_connections=64, retries={"mode": "standard", "total_max_attempts": TOTAL_ATTEMPTS})

# For calls that must not be repeated (invoking a job's target): one attempt, on purpose. An SDK retry after a
# lost answer would invoke the target twice within one run attempt; the run's own retry policy decides instead.
# And a read timeout that is the time the run has left, so a slow target is never waited on past the run's end.
_ONE_ATTEMPT = {"total_max_attempts": 1, "mode": "standard"}

# A request that was sent but whose answer never came: the call may have happened, or may still be going on.
# (Job types catch these without importing botocore themselves.)
ANSWER_LOST: tuple[type[Exception], ...] = (ReadTimeoutError, ConnectionClosedError)


class AwsClients:
    def __init__(
        self,
        session: boto3.session.Session | None = None,
        *,
        region_endpoints: Mapping[str, str] | None = None,
        **client_kwargs: Any,
    ) -> None:
        """`region_endpoints`: where another region's clients send (`in_region`), where it is not AWS's endpoint
        (`tickwork dev --regions`: each region's own endpoint)."""
        self._session = session
        self._kwargs = client_kwargs
        self._region_endpoints = dict(region_endpoints or {})
        self._clients: dict[str, Any] = {}
        self._regions: dict[str, AwsClients] = {}
        self._lock = threading.Lock()

    def in_region(self, region: str) -> AwsClients:
        """Clients of another region, built on first use (RegionMode eventual: a failover reads the old active
        region's replica and CloudWatch there, tickwork.control.replication_probe). Their own session."""
        with self._lock:
            if region not in self._regions:
                kwargs = {**self._kwargs, "region_name": region}
                if region in self._region_endpoints:
                    kwargs["endpoint_url"] = self._region_endpoints[region]
                self._regions[region] = AwsClients(region_endpoints=self._region_endpoints, **kwargs)
            return self._regions[region]

    def client(self, service: str) -> Any:
        """The service's client, with `CLIENT_CONFIG` (standard retries)."""
        return self._cached(service, CLIENT_CONFIG)

    def single_attempt_client(self, service: str, *, read_timeout: float) -> Any:
        """A client that sends each request once (no SDK retries) and waits at most `read_timeout` seconds
        for an answer. Cached per whole second of timeout, so a busy executor builds few of them."""
        seconds = max(1, math.ceil(read_timeout))
        config = CLIENT_CONFIG.merge(
            Config(retries=_ONE_ATTEMPT, read_timeout=seconds, connect_timeout=min(seconds, 10))  # type: ignore[arg-type]
        )
        return self._cached(f"{service}#once#{seconds}", config, service=service)

    def _cached(self, key: str, config: Config, *, service: str | None = None) -> Any:
        with self._lock:
            if key not in self._clients:
                # One session for all of them: each session parses the SDK's endpoint and service models anew, so
                # a session per client would add that parsing to a cold start once per client. (Under the lock: a
                # boto3 session is not safe to share between threads building clients.)
                if self._session is None:
                    self._session = boto3.session.Session()
                self._clients[key] = self._session.client(service or key, config=config, **self._kwargs)  # type: ignore[call-overload]
            return self._clients[key]
