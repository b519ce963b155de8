"""Lazily built, cached boto3 clients: never at import, so moto can patch first."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

# Enough connections for the claim and executor thread pools; standard retry mode for throttles.
_CONFIG = Config(max_pool_connections=64, retries={"mode": "standard", "max_attempts": 5})


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
