"""Lazily built, cached boto3 clients: never at import, so moto can patch first.

Every client Tickwork builds comes from `AwsClients`, in the Lambdas (through `Services`), in the local runtime
and in the job types (through `RunContext.clients`), so every one of them gets `CLIENT_CONFIG`: its retry
configuration is set here and nowhere else.
"""

from __future__ import annotations

import math
import threading
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


# For reads from another region (a result held in another region's bucket, docs/regions.md): one attempt, bounded, so
# that a region that does not answer costs the API's caller seconds (and an answer saying so), not the SDK's backoff
# past the API function's 10 s. The caller may ask again.
_OTHER_REGION = Config(retries=_ONE_ATTEMPT, connect_timeout=3, read_timeout=4)  # type: ignore[arg-type]


class AwsClients:
    def __init__(
        self,
        session: boto3.session.Session | None = None,
        *,
        region_endpoints: dict[str, str] | None = None,
        **client_kwargs: Any,
    ) -> None:
        self._session = session
        self._kwargs = client_kwargs
        # Where another region's service answers when it is not AWS's regional endpoint (the local runtime's regions).
        self._region_endpoints = dict(region_endpoints or {})
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

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

    def regional_client(self, service: str, region: str) -> Any:
        """The service's client in another region (its own regional endpoint): one attempt, bounded timeouts, so that
        a region that does not answer holds no API request (a result read there, a failover's replication probe).
        Cached per region."""
        where: dict[str, Any] = {"region_name": region}
        if region in self._region_endpoints:
            where["endpoint_url"] = self._region_endpoints[region]
        return self._cached(f"{service}@{region}", CLIENT_CONFIG.merge(_OTHER_REGION), service=service, where=where)

    def _cached(
        self, key: str, config: Config, *, service: str | None = None, where: dict[str, Any] | None = None
    ) -> Any:
        with self._lock:
            if key not in self._clients:
                # One session for all of them: each session parses the SDK's endpoint and service models anew, so
                # a session per client would add that parsing to a cold start once per client. (Under the lock: a
                # boto3 session is not safe to share between threads building clients.)
                if self._session is None:
                    self._session = boto3.session.Session()
                kwargs = {**self._kwargs, **(where or {})}
                self._clients[key] = self._session.client(service or key, config=config, **kwargs)  # type: ignore[call-overload]
            return self._clients[key]
