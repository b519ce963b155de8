"""Environment settings, validated once at the edge (cold start), never read ad hoc: the one module that reads
os.environ.

Every Lambda and the local runtime configure Tickwork through these variables; the
template sets them from its resources, so names here are the contract with template.yaml.
- JobCodeSettings: what every function reads (the template's Globals), the job sandbox's whole environment.
- Settings: what every function but the job sandbox reads (each function's own environment in the template).
- ApiSettings: the API function's own (API_AUTH_MODE is set on ApiFunction only; the local runtime sets it
  to local, with API_KEYS_FILE).
- TelemetryNames: the names Powertools' logger, tracer and metrics are built with.
- ExecutorFunction: the executor's name and allowed concurrency, as the API, the tick and the dispatch workers see it.
- MetricsSettings: the API function's own, for `GET /v1/metrics` (the executor's name and allowed concurrency).
- ProviderSettings: the custom resource provider's own (the tenants it may act for).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tickwork.model.forecast_uses import DEFAULT_SLOW_FACTOR
from tickwork.model.policies import Band
from tickwork.model.regions import RegionMode
from tickwork.model.secret_references import DEFAULT_SECRET_PREFIX
from tickwork.model.targets import TargetRules

DEFAULT_AGING_AFTER_SECONDS = 300
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def comma_separated(value: object) -> object:
    """A variable's comma-separated list as a tuple (blanks dropped); anything else as it is, for the field."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class FromEnvironment(BaseModel):
    """Fields named by their variables (aliases); other variables are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return cls.model_validate(dict(os.environ if env is None else env))


class JobCodeSettings(FromEnvironment):
    """What a function that runs job code reads: the modules that register job types, and where those may reach.
    The whole of the job sandbox's settings (the template's Globals; the sandbox's role reaches nothing of the
    stack's, so it is told none of its resources)."""

    # CIDRs the http job type may reach even though they are private or loopback.
    http_allowlist: tuple[str, ...] = Field(default=(), alias="HTTP_ALLOWLIST")
    # The functions the lambda job type may invoke (template parameter InvokableFunctionArns, or its default), as
    # IAM patterns; and what makes a bare function name this account and region's ARN. Empty: not checked.
    invokable_functions: tuple[str, ...] = Field(default=(), alias="INVOKABLE_FUNCTIONS")
    function_arn_prefix: str = Field(default="", alias="FUNCTION_ARN_PREFIX")
    # Where the secrets a payload names by reference must be (template parameter SecretNamePrefix): each tenant's
    # under <prefix><tenant>/ (tickwork.model.secret_references), the names the executor's role may read.
    secret_name_prefix: str = Field(
        default=DEFAULT_SECRET_PREFIX,
        alias="SECRET_NAME_PREFIX",
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9/_+=.@-]+$",
    )
    # What makes a secret's ARN this account and region's: a reference to another's is refused at create.
    secret_arn_prefix: str = Field(default="", alias="SECRET_ARN_PREFIX")
    # Modules that register job types of their own (`@job_type`), imported when the wiring is built: the API
    # validates payloads with their models and the executor runs them (template parameter JobTypeModules).
    job_type_modules: tuple[str, ...] = Field(default=(), alias="JOB_TYPE_MODULES")

    @field_validator("http_allowlist", "invokable_functions", "job_type_modules", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        return comma_separated(value)

    @field_validator("job_type_modules")
    @classmethod
    def _module_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not MODULE_NAME.fullmatch(name):
                raise ValueError(f"JOB_TYPE_MODULES names Python modules (acme_jobs, acme.jobs), not {name!r}")
        return value

    @property
    def targets(self) -> TargetRules:
        """Where job types may reach, and the secrets they may read (checked at create, update and run)."""
        return TargetRules(
            self.http_allowlist,
            self.invokable_functions,
            self.function_arn_prefix,
            self.secret_name_prefix,
            self.secret_arn_prefix,
        )


class ExecutorFunction(FromEnvironment):
    """The executor function as other functions see it (the template sets these on the API, the tick and the dispatch
    workers): its name, and the concurrency it is allowed, each SQS event source's MaximumConcurrency
    (comma-separated, summed)."""

    executor_function_name: str | None = Field(default=None, alias="EXECUTOR_FUNCTION_NAME", max_length=140)
    executor_concurrency: int | None = Field(default=None, alias="EXECUTOR_CONCURRENCY", ge=1, le=100_000)

    @field_validator("executor_function_name", mode="before")
    @classmethod
    def _name_unset_when_empty(cls, value: object) -> object:
        return value or None

    @field_validator("executor_concurrency", mode="before")
    @classmethod
    def _sum_csv(cls, value: object) -> object:
        if isinstance(value, str):
            parts = [part.strip() for part in value.split(",") if part.strip()]
            if not parts:
                return None
            if not all(part.isdigit() and int(part) > 0 for part in parts):
                raise ValueError(f"EXECUTOR_CONCURRENCY must be positive integers, comma-separated: {value!r}")
            return sum(int(part) for part in parts)
        return value


class Settings(JobCodeSettings, ExecutorFunction):
    """What every function but the job sandbox reads: the stack's resources and tuning, besides the job code's."""

    table_name: str = Field(alias="TABLE_NAME", min_length=3)
    # The template's RegionMode (docs/regions.md): in eventual, only the active region claims, leases and records.
    region_mode: RegionMode = Field(default=RegionMode.SINGLE, alias="REGION_MODE")
    # The global table's regions, comma-separated (the template's GlobalTableRegions): where a failover may go.
    global_table_regions: str = Field(default="", alias="GLOBAL_TABLE_REGIONS")
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
    # The dispatcher fan-out (tickwork.tick.fanout): with more than one worker, the minute tick hands the due index's
    # shards to this many dispatch workers through the dispatch queue (each claims at most MAX_DISPATCH_PER_TICK).
    dispatch_workers: int = Field(default=1, alias="DISPATCH_WORKERS", ge=1, le=1000)
    # A job's result of at most this many bytes (JSON) is kept in its run record, not S3 (0: always S3).
    inline_result_max_bytes: int = Field(default=0, alias="INLINE_RESULT_MAX_BYTES", ge=0, le=4096)
    dispatch_queue_url: str | None = Field(default=None, alias="DISPATCH_QUEUE_URL")
    # An executor's lease on a run; heartbeats extend it by a third. A run whose executor dies is retried
    # within lease + 15 s (the message's visibility follows the lease).
    lease_seconds: int = Field(default=60, alias="LEASE_SECONDS", ge=10, le=300)
    claim_threads: int = Field(default=8, alias="CLAIM_THREADS", ge=1, le=64)
    # Fair share at dispatch: a due item overdue by more than this competes one band higher per such period
    # (capped at high), so a busy high band cannot starve the low one; 0 turns aging off.
    aging_after_seconds: int = Field(default=DEFAULT_AGING_AFTER_SECONDS, alias="AGING_AFTER_SECONDS", ge=0, le=86_400)
    # A run whose handler runs past its job's p99 times this is flagged `Run Slow` (docs/forecasts.md).
    run_slow_factor: float = Field(default=DEFAULT_SLOW_FACTOR, alias="RUN_SLOW_FACTOR", ge=1, le=100)
    # A RUNNING workflow run is reconciled by the tick this long after its last step's end (or its opening):
    # how long a run whose progress a crash interrupted waits at most, plus a tick.
    reconcile_after_seconds: int = Field(default=120, alias="RECONCILE_AFTER_SECONDS", ge=10, le=3600)
    run_retention_days: int = Field(default=30, alias="RUN_RETENTION_DAYS", ge=1)
    # Days an audit record lives in the table, once archived, before DynamoDB TTL removes it (AuditRetentionDays).
    audit_retention_days: int = Field(default=365, alias="AUDIT_RETENTION_DAYS", ge=1)
    # Where the tick archives audit records (the template's AuditBucket); unset, they stay in the table, unexpired.
    audit_bucket: str | None = Field(default=None, alias="AUDIT_BUCKET")
    # Keys the HMAC of the API's page cursors; unset (or empty), a key derived from the table name is used.
    # Isolation does not depend on it (see tickwork.store.cursors).
    cursor_secret: str | None = Field(default=None, alias="CURSOR_SECRET")
    # The EventBridge bus run events go to (tickwork.model.run_events; template parameter EventBusName).
    event_bus_name: str = Field(default="default", alias="EVENT_BUS_NAME", min_length=1, max_length=256)
    # The executor Lambda's timeout (template parameter ExecutorTimeoutSeconds): the margins a run's segment leaves of
    # it, for recording the outcome and for yielding, follow it (tickwork.executor.yields.LambdaMargins).
    executor_timeout_seconds: int = Field(default=900, alias="EXECUTOR_TIMEOUT_SECONDS", ge=10, le=900)
    # How long a secret's value is kept after its read (template parameter SecretCacheSeconds): a rotation's reach.
    secret_cache_seconds: int = Field(default=300, alias="SECRET_CACHE_SECONDS", ge=0, le=3600)
    # The job sandbox function (the executor's own setting; template resource JobSandboxFunction), where handlers of
    # function-isolated job types run (tickwork.executor.isolation). Unset: their runs fail, naming it.
    job_sandbox_function: str | None = Field(default=None, alias="JOB_SANDBOX_FUNCTION", max_length=170)
    # Before a burst the tick sees coming (tickwork.tick.warmup): warming invocations of the executor (template
    # parameter ExecutorWarmup; they need EXECUTOR_FUNCTION_NAME), and the table's warm throughput (TableWarmup).
    executor_warmup: Literal["invocations", "off"] = Field(default="off", alias="EXECUTOR_WARMUP")
    table_warmup: Literal["on", "off"] = Field(default="off", alias="TABLE_WARMUP")

    @field_validator("dispatch_queue_url", "job_sandbox_function", mode="before")
    @classmethod
    def _unset_when_blank(cls, value: object) -> object:
        return value or None

    @model_validator(mode="after")
    def _fan_out_has_its_queue(self) -> Self:
        if self.dispatch_workers > 1 and self.dispatch_queue_url is None:
            raise ValueError(f"DISPATCH_WORKERS is {self.dispatch_workers}: DISPATCH_QUEUE_URL must be set")
        return self

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


# What IAM allows in a role name (1 to 64 of these characters), ASCII as in the template's AllowedPattern. Spelled
# out, not `\w`: Unicode's `\w` repeated 64 times takes pydantic about 20 ms of CPU to compile, a field, at every
# function's import (docs/benchmarks.md section 11).
ROLE_NAME_PART = r"^[A-Za-z0-9_+=,.@-]{1,64}$"
# A claim's name (`groups`, `cognito:groups`, a namespaced `https://example.com/groups`), and a value's part that
# the token mode matches (the tenant prefix, the admin group): no space or comma, which separate a string claim's
# values (template parameters JwtTenantClaim, JwtTenantPrefix, JwtAdminGroup; tickwork.control.callers).
JWT_CLAIM_NAME = r"^[\x21-\x7e]{1,256}$"
JWT_CLAIM_VALUE_PART = r"^[A-Za-z0-9_+=.@/:-]{0,100}$"


class ApiSettings(FromEnvironment):
    """How the API finds the caller's tenant (tickwork.control.callers): iam (deployed; the default) or local."""

    auth_mode: Literal["iam", "local"] = Field(default="iam", alias="API_AUTH_MODE")
    # iam mode: a role of the API's account named <prefix><name> is tenant <name>; the role named admin_role_name
    # is the admin (template parameters TenantRolePrefix and AdminRoleName: each stack its own).
    tenant_role_prefix: str = Field(default="tickwork-tenant-", alias="TENANT_ROLE_PREFIX", pattern=ROLE_NAME_PART)
    admin_role_name: str = Field(default="tickwork-admin", alias="ADMIN_ROLE_NAME", pattern=ROLE_NAME_PART)
    # The token mode (the stack's TokenApi, with a JWT authorizer; unset: no token is accepted): the issuer API
    # Gateway verifies tokens against, the claim that names the caller's tenants, the prefix of a value that names
    # one (`<prefix><name>`), and the value that makes its holder the admin (empty: no token does).
    jwt_issuer: str | None = Field(default=None, alias="JWT_ISSUER", max_length=2048)
    jwt_tenant_claim: str = Field(default="groups", alias="JWT_TENANT_CLAIM", pattern=JWT_CLAIM_NAME)
    jwt_tenant_prefix: str = Field(default="tickwork-tenant-", alias="JWT_TENANT_PREFIX", pattern=JWT_CLAIM_VALUE_PART)
    jwt_admin_group: str = Field(default="tickwork-admin", alias="JWT_ADMIN_GROUP", pattern=JWT_CLAIM_VALUE_PART)
    # The hosted console (template condition HostsConsole; tickwork_console.hosting): the public OIDC client it
    # signs in with at jwt_issuer, and the scopes it asks for. Unset: the function serves no console.
    console_client_id: str | None = Field(default=None, alias="CONSOLE_CLIENT_ID", max_length=256)
    # The issuer's sign-out endpoint where its discovery names none (Cognito's /logout); unset: the discovery's own.
    console_logout_url: str | None = Field(default=None, alias="CONSOLE_LOGOUT_URL", max_length=2048)
    console_scopes: str = Field(
        default="openid profile email", alias="CONSOLE_SCOPES", pattern=r"^[\x21-\x7e ]{1,512}$"
    )
    # Local mode only: a JSON object mapping API keys to tenants; unset, every caller is tenant `default`.
    api_keys_file: str | None = Field(default=None, alias="API_KEYS_FILE")
    # Where a run's lines are in CloudWatch Logs, for the Logs Insights link of GET /v1/runs/{id}/logs: the
    # template names the executor's log group; Lambda sets the other two (the local runtime sets no function name).
    executor_log_groups: tuple[str, ...] = Field(default=(), alias="EXECUTOR_LOG_GROUPS")
    region: str | None = Field(default=None, alias="AWS_REGION")
    lambda_function_name: str | None = Field(default=None, alias="AWS_LAMBDA_FUNCTION_NAME")

    @field_validator("api_keys_file", "jwt_issuer", "console_client_id", "console_logout_url")
    @classmethod
    def _unset_when_empty(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("executor_log_groups", mode="before")
    @classmethod
    def _split_groups(cls, value: object) -> object:
        return comma_separated(value)


class TelemetryNames(FromEnvironment):
    """The service name and metrics namespace (the template sets both); the defaults serve tests and scripts."""

    service: str = Field(default="tickwork", alias="POWERTOOLS_SERVICE_NAME")
    namespace: str = Field(default="Tickwork", alias="POWERTOOLS_METRICS_NAMESPACE")


class MetricsSettings(ExecutorFunction):
    """What `GET /v1/metrics` reads besides the EMF metrics (the API function's own; the template sets them):
    the executor function whose AWS/Lambda ConcurrentExecutions is executor utilisation's numerator, and the
    concurrency it is allowed. Unset, the utilisation series has no data."""


class ProviderSettings(FromEnvironment):
    """The custom resource provider's own (ResourceProviderFunction; tickwork.control.cfn_provider): the tenants
    whose objects it may make (the stack's parameter ResourceProviderTenants: names, comma-separated, or `*` for
    any; none: it refuses every request), and, in the local runtime only, whether its answers may go to a loopback
    http URL."""

    tenants: tuple[str, ...] = Field(default=(), alias="RESOURCE_PROVIDER_TENANTS")
    loopback_response_urls: bool = Field(default=False, alias="RESOURCE_PROVIDER_LOOPBACK_URLS")

    @field_validator("tenants", mode="before")
    @classmethod
    def _split_tenants(cls, value: object) -> object:
        return comma_separated(value)


@lru_cache(maxsize=1)
def load_settings() -> Settings:
    """Settings of this process, validated once (cold start)."""
    return Settings.from_env()
