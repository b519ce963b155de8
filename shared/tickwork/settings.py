"""Environment settings, validated once at the edge (cold start), never read ad hoc.

Every Lambda and the local runtime configure Tickwork through these variables; the
template sets them from its resources, so names here are the contract with template.yaml.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tickwork.models import Band


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    table_name: str = Field(alias="TABLE_NAME", min_length=3)
    results_bucket: str = Field(alias="RESULTS_BUCKET", min_length=3)
    queue_url_high: str = Field(alias="QUEUE_URL_HIGH")
    queue_url_normal: str = Field(alias="QUEUE_URL_NORMAL")
    queue_url_low: str = Field(alias="QUEUE_URL_LOW")
    dlq_url_high: str = Field(alias="DLQ_URL_HIGH")
    dlq_url_normal: str = Field(alias="DLQ_URL_NORMAL")
    dlq_url_low: str = Field(alias="DLQ_URL_LOW")
    # How many partitions the due index is spread over; the tick queries each in parallel.
    due_shards: int = Field(default=8, alias="DUE_SHARDS", ge=1, le=1000)
    # Claims look this far ahead; must exceed the tick period plus a tick's own run time.
    horizon_seconds: int = Field(default=120, alias="HORIZON_SECONDS", ge=10, le=900)
    tick_period_seconds: int = Field(default=60, alias="TICK_PERIOD_SECONDS", ge=1, le=3600)
    # A claimed run that no executor has leased this long after its time is sent again.
    redispatch_after_seconds: int = Field(default=300, alias="REDISPATCH_AFTER_SECONDS", ge=30)
    # Upper bound on runs one tick dispatches; beyond it, higher priority goes first.
    max_dispatch_per_tick: int = Field(default=5000, alias="MAX_DISPATCH_PER_TICK", ge=1)
    # An executor's lease on a run; heartbeats extend it by a third. A run whose executor dies is retried
    # within lease + 15 s (the message's visibility follows the lease).
    lease_seconds: int = Field(default=60, alias="LEASE_SECONDS", ge=10, le=300)
    claim_threads: int = Field(default=8, alias="CLAIM_THREADS", ge=1, le=64)
    run_retention_days: int = Field(default=30, alias="RUN_RETENTION_DAYS", ge=1)
    # Keys the HMAC of the API's page cursors; unset (or empty), a key derived from the table name is used.
    # Isolation does not depend on it (see tickwork.store.cursors).
    cursor_secret: str | None = Field(default=None, alias="CURSOR_SECRET")
    # CIDRs the http job type may reach even though they are private or loopback.
    http_allowlist: tuple[str, ...] = Field(default=(), alias="HTTP_ALLOWLIST")

    @field_validator("http_allowlist", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("horizon_seconds")
    @classmethod
    def _horizon_beyond_tick(cls, value: int, info) -> int:  # type: ignore[no-untyped-def]
        tick = info.data.get("tick_period_seconds", 60)
        if value <= tick:
            raise ValueError(f"HORIZON_SECONDS ({value}) must exceed TICK_PERIOD_SECONDS ({tick})")
        return value

    def queue_url(self, band: Band) -> str:
        return {
            Band.HIGH: self.queue_url_high,
            Band.NORMAL: self.queue_url_normal,
            Band.LOW: self.queue_url_low,
        }[band]

    def dlq_url(self, band: Band) -> str:
        return {Band.HIGH: self.dlq_url_high, Band.NORMAL: self.dlq_url_normal, Band.LOW: self.dlq_url_low}[band]

    def band_of_queue_arn_or_url(self, value: str) -> Band | None:
        """Which band a queue belongs to, from its URL or ARN (SQS events carry the ARN)."""
        name = value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        for band in Band:
            if self.queue_url(band).rstrip("/").rsplit("/", 1)[-1] == name:
                return band
        return None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        return cls.model_validate(dict(os.environ if env is None else env))


@lru_cache(maxsize=1)
def load_settings() -> Settings:
    """Settings of this process, validated once (cold start)."""
    return Settings.from_env()
