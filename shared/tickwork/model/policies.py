"""How a job runs: its band, its overlap, catch-up and start-precision policies, retries, circuit breaker,
concurrency and rate limits, and the constrained field types a job's definition is made of."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    model_validator,
)

from tickwork.model.schedule import UtcDatetime

MAX_TIMEOUT_SECONDS = 840  # the executor Lambda has 900 s; 60 s stay for lease, result and bookkeeping
DEFAULT_MISFIRE_GRACE_SECONDS = 900  # the 15-minute start threshold


def _no_coercion(value: object) -> object:
    """Numbers are JSON numbers: "5" or true is no priority (nor a JSON Schema integer, as the OpenAPI document
    says), while 5.0 is (it is one in JSON Schema too); pydantic's lax mode would take all of them."""
    if isinstance(value, str | bool):
        raise ValueError(f"must be a number, not {'a boolean' if isinstance(value, bool) else 'a string'}")
    return value


# After the type's own constraints in an Annotated, so that the OpenAPI document keeps its minimum and maximum.
NotCoerced = BeforeValidator(_no_coercion)

# Job field limits, defined once: the stored Job, the create body and the PATCH body all use these.
JobName = Annotated[str, Field(min_length=1, max_length=200)]
JobTypeName = Annotated[str, Field(min_length=1, max_length=64)]
Priority = Annotated[int, Field(ge=0, le=9), NotCoerced]
TimeoutSeconds = Annotated[int, Field(ge=1, le=MAX_TIMEOUT_SECONDS), NotCoerced]
# A run's handler time over all its segments (graceful yields, docs/durable-runs.md); each one's is timeout_seconds.
DEFAULT_MAX_RUN_SECONDS = 86_400
MaxRunSeconds = Annotated[int, Field(ge=1, le=7 * 86400), NotCoerced]
MisfireGraceSeconds = Annotated[int, Field(ge=0, le=7 * 86400), NotCoerced]
JitterSeconds = Annotated[int, Field(ge=0, le=366 * 86400), NotCoerced]  # and at most the schedule's period
# Tags as AWS bounds them: at most 50, keys of 1 to 128 characters, values of 0 to 256. Bounded so that a job
# item always fits DynamoDB's 400 KB (see tickwork.control.job_factory.MAX_JOB_ITEM_BYTES).
MAX_TAGS = 50
TagKey = Annotated[str, Field(min_length=1, max_length=128)]
TagValue = Annotated[str, Field(max_length=256)]
Tags = Annotated[dict[TagKey, TagValue], Field(max_length=MAX_TAGS)]
# What a stored job may hold: jobs written before the limits above stay readable (as UtcDatetime reads old
# times leniently); every write goes through JobSpec or JobUpdate (tickwork.control.api_bodies), which apply Tags.
StoredTags = Annotated[dict[str, str], Field(max_length=MAX_TAGS)]


class Band(StrEnum):
    """Priority bands, one SQS queue each: high 7-9, normal 3-6, low 0-2."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"

    @classmethod
    def of_priority(cls, priority: int) -> Band:
        if priority >= 7:
            return cls.HIGH
        return cls.NORMAL if priority >= 3 else cls.LOW


class OverlapPolicy(StrEnum):
    """What to do when an occurrence starts while the job's previous run is still running (docs/policies.md):
    run beside it, skip, wait for it (one waiter at most), or stop it and then run."""

    ALLOW = "ALLOW"
    SKIP = "SKIP"
    BUFFER_ONE = "BUFFER_ONE"
    CANCEL_OTHER = "CANCEL_OTHER"
    # Every run waits its turn, in the order of their scheduled times: an ordering key named by the job's id
    # (OrderingKey; tickwork.executor.ordering), whose failed run lets the next go (as Temporal's BufferAll).
    BUFFER_ALL = "BUFFER_ALL"

    @property
    def takes_running_slot(self) -> bool:
        """Whether a run of the job holds the job's running slot while it runs."""
        return self not in (OverlapPolicy.ALLOW, OverlapPolicy.BUFFER_ALL)


class CatchupPolicy(StrEnum):
    """Which occurrences missed during an outage, a pause's aftermath or a deploy run (docs/policies.md)."""

    NONE = "NONE"
    LATEST = "LATEST"
    ALL = "ALL"


class DispatchOrder(StrEnum):
    """Within one band, which due item a tick that cannot claim everything claims first (docs/forecasts.md):
    `edf`, the earliest deadline; `sjf`, the shortest expected run (its job's p50, tickwork.model.forecasts)."""

    EDF = "edf"
    SJF = "sjf"


class StartPrecision(StrEnum):
    """How close to its instant a run starts (docs/policies.md, "Start precision").

    `second`: its message is sent with DelaySeconds rounded up, so it starts 0-1 s after its instant (and the
    executor's poll). `precise`: rounded down, a little early, and the executor waits out the rest before it
    leases (the lease's not_before keeps it from ever starting early): it starts within milliseconds, for up to
    ~1.25 s of executor time per batch (the batch's runs wait together)."""

    SECOND = "second"
    PRECISE = "precise"


MAX_BREAKER_COOLDOWN_SECONDS = 86400
BreakerCooldown = Annotated[int, Field(ge=1, le=MAX_BREAKER_COOLDOWN_SECONDS), NotCoerced]


class CircuitBreaker(BaseModel):
    """After `failure_threshold` consecutive FAILED runs the job is SUSPENDED for `cooldown_seconds`; each failed
    probe doubles the cooldown, up to `max_cooldown_seconds` (default: a day)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failure_threshold: Annotated[int, Field(ge=1, le=1000), NotCoerced]
    cooldown_seconds: BreakerCooldown
    max_cooldown_seconds: BreakerCooldown = MAX_BREAKER_COOLDOWN_SECONDS

    @model_validator(mode="after")
    def _cap_above_cooldown(self) -> CircuitBreaker:
        if self.max_cooldown_seconds < self.cooldown_seconds:
            raise ValueError("max_cooldown_seconds must be at least cooldown_seconds")
        return self


class BreakerState(BaseModel):
    """An open breaker: no run before `opens_until`; then the first occurrence is its probe (`probe_at`, set
    when the claim queues it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    opens_until: UtcDatetime
    cooldown_seconds: int
    consecutive_failures: int
    probe_at: UtcDatetime | None = None


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: Annotated[int, Field(ge=1, le=100), NotCoerced] = 3
    # At least a millisecond: a shorter backoff means nothing, and DynamoDB cannot store a positive number
    # below 1e-130 (schemathesis found 1.87e-278 failing the write with a 500).
    backoff_seconds: Annotated[float, Field(ge=0.001, le=3600), NotCoerced] = 2
    # 900 s is also SQS's longest message delay, so a backoff never outlives one visibility change. Delays are
    # whole seconds rounded down (tickwork.model.backoff), so a cap under 1 s is allowed and retries at once (0 s).
    max_backoff_seconds: Annotated[float, Field(ge=0.001, le=43200), NotCoerced] = 900

    @model_validator(mode="after")
    def _cap_above_base(self) -> RetryPolicy:
        if self.max_backoff_seconds < self.backoff_seconds:
            raise ValueError("max_backoff_seconds must be at least backoff_seconds")
        return self


LimitKey = Annotated[str, Field(min_length=1, max_length=128)]
# At least one run a day (the slowest rate worth a key), at most one a millisecond.
PerSecond = Annotated[float, Field(ge=1 / 86400, le=1000), NotCoerced]
PerMinute = Annotated[float, Field(ge=1 / 1440, le=60000), NotCoerced]
_NO_RATE: Any = None  # a RateLimit's unit not given (absent, never null: the document says number)


class ConcurrencyLimit(BaseModel):
    """At most `limit` runs that share `key` (within the tenant) run at once, across every executor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: LimitKey
    limit: Annotated[int, Field(ge=1, le=1000), NotCoerced]


def _one_rate_schema(schema: dict[str, Any]) -> None:
    """ "Exactly one" in the OpenAPI document too, so that no schema-valid body is refused; and no null default
    for a number that is either given or absent."""
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)
    schema["oneOf"] = [{"required": ["per_second"]}, {"required": ["per_minute"]}]


class RateLimit(BaseModel):
    """Runs that share `key` (within the tenant) start no faster than this rate: `per_second` or `per_minute`,
    exactly one. Strictly spaced (no burst): two runs start at least 1/rate apart."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_one_rate_schema)

    key: LimitKey
    # The unit not given is left out of the document, as it was of the body.
    per_second: PerSecond = Field(default=_NO_RATE, exclude_if=lambda v: v is None)
    per_minute: PerMinute = Field(default=_NO_RATE, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _one_rate(self) -> RateLimit:
        if len(self.model_fields_set & {"per_second", "per_minute"}) != 1:
            raise ValueError("give exactly one of per_second and per_minute")
        return self

    @property
    def interval_seconds(self) -> float:
        return 1 / self.per_second if "per_second" in self.model_fields_set else 60 / self.per_minute

    @property
    def interval_ms(self) -> int:
        """The spacing between two starts, rounded up so the rate is never exceeded."""
        return math.ceil(self.interval_seconds * 1000)


MAX_ORDERING_KEY_BYTES = 256


def _within_key_bytes(value: str) -> str:
    if len(value.encode()) > MAX_ORDERING_KEY_BYTES:
        raise ValueError(f"must be at most {MAX_ORDERING_KEY_BYTES} bytes (UTF-8)")
    return value


OrderingKeyName = Annotated[
    str, Field(min_length=1, max_length=MAX_ORDERING_KEY_BYTES), AfterValidator(_within_key_bytes)
]


class OrderingOnFailure(StrEnum):
    """What a run of an ordering key that FAILED finally does to the key: hold every later run back until the
    user retries, redrives or skips it (`block`), or let the next run go (`continue`)."""

    BLOCK = "block"
    CONTINUE = "continue"


class OrderingKey(BaseModel):
    """Runs that share `key` (within the tenant) run one at a time, in the order of their scheduled times (ties:
    by run id), across every executor (docs/fairness.md, "Ordering keys")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: OrderingKeyName
    on_failure: OrderingOnFailure = OrderingOnFailure.BLOCK


def run_ordering(ordering: OrderingKey | None, overlap: OverlapPolicy, owner_id: str) -> OrderingKey | None:
    """The ordering a new run of a job (or step) is queued under: its own key, else BUFFER_ALL's (its job's
    id, a failure letting the next go), else none."""
    if ordering is not None:
        return ordering
    if overlap is OverlapPolicy.BUFFER_ALL:
        return OrderingKey(key=owner_id, on_failure=OrderingOnFailure.CONTINUE)
    return None


# The job item (<= 400 KB in DynamoDB) carries the payload; SQS messages never do. 256 KiB leaves room.
MAX_PAYLOAD_BYTES = 256 * 1024

MAX_DEBOUNCE_SECONDS = 86400
# A collecting window's run carries at most this many payloads, of this size together (a job's payload bound); a
# trigger that would not fit opens the next window.
MAX_COLLECTED_PAYLOADS = 100
MAX_COLLECTED_BYTES = MAX_PAYLOAD_BYTES


class Debounce(BaseModel):
    """Triggers of one job with the same `key` within `seconds` of the first collapse into one run at the end of
    that window, carrying the last trigger's payload, or all of them (`collect`: `{"payloads": [...]}`, at most
    MAX_COLLECTED_PAYLOADS) (docs/fairness.md, "Debounce")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: OrderingKeyName
    seconds: Annotated[int, Field(ge=1, le=MAX_DEBOUNCE_SECONDS), NotCoerced]
    collect: StrictBool = False


class DebounceWindow(BaseModel):
    """A debounced run's window: its key, whether it collects, and how many triggers it stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    collect: bool = False
    triggers: int = 1


# Ids: a job is j + 25 characters, a workflow w + 25. An occurrence's run is <owner id>.<13 digits of ms>, with
# `.m` for a manual trigger: a job's run, or a workflow run. A workflow step's run is its workflow run's id,
