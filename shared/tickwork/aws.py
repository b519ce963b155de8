"""Lazily built, cached boto3 clients: never at import, so moto can patch first."""

from __future__ import annotations

import math
import threading
from typing import Any

import boto3
from botocore.config import Config

# Enough connections for the claim and executor thread pools; standard retry mode for throttles.
_CONFIG = Config(max_pool_connections=64, retries={"mode": "standard", "max_attempts": 5})


# For calls that must not be repeated (invoking a job's target): one attempt, and a read timeout that is
# the time the run has left, so a slow target is never invoked twice by the SDK itself.
_ONE_ATTEMPT = {"total_max_attempts": 1, "mode": "standard"}


class AwsClients:
    def __init__(self, session: boto3.session.Session | None = None, **client_kwargs: Any) -> None:
        self._session = session
        self._kwargs = client_kwargs
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def client(self, service: str) -> Any:
        with self._lock:
            if service not in self._clients:
                session = self._session or boto3.session.Session()
                self._clients[service] = session.client(service, config=_CONFIG, **self._kwargs)  # type: ignore[call-overload]
            return self._clients[service]

    def single_attempt_client(self, service: str, *, read_timeout: float) -> Any:
        """A client that sends each request once (no SDK retries) and waits at most `read_timeout` seconds
        for an answer. Cached per whole second of timeout, so a busy executor builds few of them."""
        seconds = max(1, math.ceil(read_timeout))
        key = f"{service}#once#{seconds}"
        with self._lock:
            if key not in self._clients:
                session = self._session or boto3.session.Session()
                config = _CONFIG.merge(
                    Config(retries=_ONE_ATTEMPT, read_timeout=seconds, connect_timeout=min(seconds, 10))  # type: ignore[arg-type]
                )
                self._clients[key] = session.client(service, config=config, **self._kwargs)  # type: ignore[call-overload]
            return self._clients[key]
