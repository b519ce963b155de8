"""Builds the domain objects from settings and lazily built clients: the one wiring shared by all handlers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Generic, TypeVar

from tickwork.aws.audit_archive import AuditArchive
from tickwork.aws.clients import AwsClients
from tickwork.aws.dead_letters import DeadLetterQueues
from tickwork.aws.event_bus import EventBus
from tickwork.aws.metric_series import MetricSeries
from tickwork.aws.queues import DispatchQueue, RunQueues
from tickwork.aws.results import ResultStore
from tickwork.aws.role_tags import READ_TIMEOUT_SECONDS, RoleTenantTags
from tickwork.aws.secrets import SecretStores
from tickwork.executor.freeze_gate import FreezeGate
from tickwork.executor.isolation import JobSandboxCalls
from tickwork.executor.limits import RunLimits
from tickwork.executor.run_executor import Handlers, RunExecutor
from tickwork.executor.secrets import SecretCache
from tickwork.executor.yields import LambdaMargins
from tickwork.faults import NO_FAULTS, FaultPlan
from tickwork.jobtypes import import_job_type_modules, registry
from tickwork.jobtypes.sandbox import JobSandbox
from tickwork.model.clock import Clock, SystemClock
from tickwork.model.policies import MAX_PAYLOAD_BYTES, Band
from tickwork.model.regions import RegionMode
from tickwork.model.tenant_settings import TenantDirectory
from tickwork.progress.freeze_events import FreezeEvents
from tickwork.progress.run_events import RunEvents
from tickwork.progress.workflow_progress import ProgressSettings, WorkflowProgress
from tickwork.settings import (
    JobCodeSettings,
    MetricsSettings,
    ProviderSettings,
    Settings,
    TelemetryNames,
    load_settings,
)
from tickwork.store import (
    Cursors,
    EventOutbox,
    ExpiredItems,
    IdempotencyRecords,
    JobStore,
    KnownTenants,
    LimitRecords,
    Listings,
    PendingAudits,
    TenantRecords,
    WorkflowRecords,
    cursor_key,
)
from tickwork.store.audit import AuditIntents, AuditItems, AuditOutbox
from tickwork.store.calendars import CalendarRecords
from tickwork.store.conditional import Table
from tickwork.store.deadlines import DeadlineRecords
from tickwork.store.debounce import DebounceWindows
from tickwork.store.expiry import ExpiryMarks
from tickwork.store.freezes import FreezeReads, FreezeRecords
from tickwork.store.regions import RegionFence, RegionRoleRecords
from tickwork.store.run_search import RunSearchIndex
from tickwork.store.tenant_rates import TenantRates

if TYPE_CHECKING:  # the API's and the tick's rooms, imported where they are built: an executor never loads them
    from tickwork.control.audit import AuditTrail
    from tickwork.control.batch_create import BatchCreate
    from tickwork.control.bulk_jobs import BulkJobs
    from tickwork.control.bulk_runs import BulkRuns
    from tickwork.control.calendars import CalendarService
    from tickwork.control.cfn_provider import ResourceProvider
    from tickwork.control.dead_letters import DeadLetterAdmin
    from tickwork.control.freezes import FreezeService
    from tickwork.control.idempotent_create import IdempotentCreate
    from tickwork.control.job_factory import JobFactory
    from tickwork.control.job_lifecycle import JobLifecycle
    from tickwork.control.job_variants import JobVariants
    from tickwork.control.metrics_catalogue import MetricsContext
    from tickwork.control.ordering_keys import OrderingKeys
    from tickwork.control.queries import JobQueries
    from tickwork.control.redrive import RunRedrive
    from tickwork.control.region_failover import RegionFailovers, ReplicationProbe
    from tickwork.control.replication_lag import ReplicationLagReader
    from tickwork.control.result_reads import ResultReads
    from tickwork.control.run_cancel import RunCancel
    from tickwork.control.run_searches import RunSearches
    from tickwork.control.stuck_runs import StuckRuns
    from tickwork.control.tenants import ActiveJobsQuota, TenantService
    from tickwork.control.workflow_service import WorkflowService
    from tickwork.tick.audit_archive import AuditArchiver
    from tickwork.tick.dispatch import Dispatcher, MinuteTick
    from tickwork.tick.expiry_sweep import ExpirySweep
    from tickwork.tick.pending_audits import PendingAuditSettlement
    from tickwork.tick.redrive_intents import RedriveIntents
    from tickwork.tick.warmup import BurstWarmup


# One piece: the composition root (every wire in one place, so each collaborator is found where it is made).
@dataclass
class Services:
    settings: Settings
    clients: AwsClients = field(default_factory=AwsClients)
    clock: Clock = field(default_factory=SystemClock)
    # Where a tick or an executor may be made to die: nowhere in production; the fault-injection suite sets it.
    faults: FaultPlan = NO_FAULTS

    def __post_init__(self) -> None:
        # At start-up, before anything reads the registry: a module that fails stops the function here.
        import_job_type_modules(self.settings.job_type_modules)

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
            # An MRSC global table has no transactions (docs/regions.md section 2): audited changes go through intents.
            pending_audits=PendingAudits(self.clock) if s.region_mode == RegionMode.STRONG else None,
            expiry_marks=ExpiryMarks(self.clock) if s.region_mode == RegionMode.STRONG else None,
        )

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
        """This region's results bucket. In a multi-region stack each result written names this region (the S3
        client's), so another region's API reads it here (docs/regions.md, "Results")."""
        from tickwork.model.regions import regions_of

        client = self.clients.client("s3")
        here = client.meta.region_name
        if self.settings.region_mode == RegionMode.SINGLE:
            return ResultStore(
                client, self.settings.results_bucket, inline_max_bytes=self.settings.inline_result_max_bytes
            )
        others = [there for there in regions_of(self.settings.global_table_regions) if there != here]
        return ResultStore(
            client,
            self.settings.results_bucket,
            inline_max_bytes=self.settings.inline_result_max_bytes,
            region=here,
            elsewhere=lambda: [self.results_in(there) for there in others],
        )

    def results_in(self, there: str) -> ResultStore:
        """Another region's results bucket (a multi-region stack), through a client of that region."""
        from tickwork.model.result_regions import results_bucket_in

        if there not in self._other_results:  # two threads building one at once build the same: either is kept
            here = self.clients.client("s3").meta.region_name
            bucket = results_bucket_in(self.settings.results_bucket, here, there)
            self._other_results[there] = ResultStore(self.clients.regional_client("s3", there), bucket, region=there)
        return self._other_results[there]

    @cached_property
    def _other_results(self) -> dict[str, ResultStore]:
        return {}

    @cached_property
    def result_reads(self) -> ResultReads:
        """The API's read of a result: this region's bucket, then (multi-region) the bucket of the region it names."""
        from tickwork.control.result_reads import ResultReads

        here = self.clients.client("s3").meta.region_name
        return ResultReads(self.results, self.results_in, self.settings.region_mode, here)

    @cached_property
    def dispatcher(self) -> Dispatcher:
        from tickwork.tick.dispatch import Dispatcher
        from tickwork.tick.workflow_occurrences import WorkflowOccurrences

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
            faults=self.faults,
            workflows=WorkflowOccurrences(self.workflow_records, self.workflow_progress),
            tenants=self.tenant_directory,
            rates=self.tenant_rates,
            aging_after=timedelta(seconds=s.aging_after_seconds),
            events=self.run_events,
            calendars=self.calendar_records,
            freezes=self.freeze_records,
            audit_archive=self.audit_archiver,
            fence=self.region_fence,
            warmup=self.burst_warmup,
        )

    @cached_property
    def burst_warmup(self) -> BurstWarmup | None:
        """The tick's warm-ups before a burst it sees coming (tickwork.tick.warmup); none when both are off."""
        from tickwork.aws.warmup import ExecutorWarming, TableWarmth
        from tickwork.model.warmup import WarmupPolicy
        from tickwork.tick.warmup import BurstWarmup

        s = self.settings
        policy = WarmupPolicy(
            executor=s.executor_warmup == "invocations",
            # A global table's warm throughput is its replicas' (docs/regions.md): raised here in one region only.
            table=s.table_warmup == "on" and s.region_mode == RegionMode.SINGLE,
            **({"max_environments": s.executor_concurrency} if s.executor_concurrency else {}),
        )
        if not policy.enabled:
            return None
        name = s.executor_function_name
        executor = ExecutorWarming(lambda: self.clients.client("lambda"), name) if name else None
        table = TableWarmth(self.clients.client("dynamodb"), s.table_name)
        return BurstWarmup(policy, executor, table)

    @cached_property
    def audit_archiver(self) -> AuditArchiver | None:
        """The tick's archive of the audit records to S3, then their release to TTL; none without AUDIT_BUCKET."""
        from tickwork.tick.audit_archive import AuditArchiver

        s = self.settings
        if not s.audit_bucket:
            return None
        outbox = AuditOutbox(self.store.shared_table, retention=timedelta(days=s.audit_retention_days))
        return AuditArchiver(outbox, AuditArchive(self.clients.client("s3"), s.audit_bucket), self.faults)

    @cached_property
    def minute_tick(self) -> MinuteTick:
        """The tick: the dispatcher itself, or with DISPATCH_WORKERS > 1 the fan-out's coordinator."""
        from tickwork.tick.dispatch import MinuteTick
        from tickwork.tick.fanout import DispatchCoordinator

        s = self.settings
        coordinator = None
        if s.dispatch_workers > 1 and s.dispatch_queue_url is not None:
            coordinator = DispatchCoordinator(
                DispatchQueue(self.clients.client("sqs"), s.dispatch_queue_url),
                self.clock,
                workers=s.dispatch_workers,
                shards=s.due_shards,
                faults=self.faults,
            )
        return MinuteTick(
            self.dispatcher, coordinator, self.redrive_intents, self.expiry_sweep, self.pending_audit_settlement
        )

    @cached_property
    def expiry_sweep(self) -> ExpirySweep | None:
        """The tick's deletes of expired items, in RegionMode strong only: an MRSC table has no TTL (the table's
        writes mark the expiry index's bucket there, `JobStore(expiry_marks=)`); elsewhere TTL deletes them."""
        from tickwork.tick.expiry_sweep import ExpirySweep

        if self.settings.region_mode != RegionMode.STRONG:
            return None
        return ExpirySweep(ExpiredItems(self.store.shared_table), self.clock)

    @cached_property
    def pending_audit_settlement(self) -> PendingAuditSettlement | None:
        """The tick's settlement of the audit records dead requests left pending, in RegionMode strong only (an
        audited change without a transaction); elsewhere a change and its record are one transaction."""
        from tickwork.tick.pending_audits import PendingAuditSettlement

        table = self.store.shared_table
        if table.audited_writes is None:
            return None
        return PendingAuditSettlement(table, table.audited_writes)

    @cached_property
    def redrive_intents(self) -> RedriveIntents:
        """The tick's settlement of the dead letters' redrives' audit records left pending."""
        from tickwork.tick.redrive_intents import RedriveIntents

        return RedriveIntents(self.audit_intents, self.dead_letter_queues, self.clock)

    @cached_property
    def audit_intents(self) -> AuditIntents:
        return AuditIntents(self.store.shared_table, AuditItems())

    @cached_property
    def dead_letter_queues(self) -> DeadLetterQueues:
        s = self.settings
        return DeadLetterQueues(
            self.clients.client("sqs"),
            {band: s.queue_url(band) for band in Band},
            {band: s.dlq_url(band) for band in Band},
        )

    @cached_property
    def executor(self) -> RunExecutor:
        return RunExecutor(
            self.store,
            self.results,
            self.queues,
            Handlers(
                registry,
                targets=self.settings.targets,
                clients=self.clients,
                secrets=self.secret_cache,
                sandbox=JobSandboxCalls(
                    self.clients,
                    self.settings.job_sandbox_function,
                    busy_seconds=self.settings.executor_timeout_seconds,
                ),
            ),
            self.clock,
            lease_for=timedelta(seconds=self.settings.lease_seconds),
            retry_safety_net=self.retry_safety_net,
            faults=self.faults,
            workflows=self.workflow_progress,
            limits=RunLimits(LimitRecords(self.store.shared_table), self.tenant_directory),
            events=self.run_events,
            freezes=FreezeGate(self.freeze_records, self.executor_freezes, self.store.jobs),
            margins=LambdaMargins.for_timeout(self.settings.executor_timeout_seconds),
            slow_factor=self.settings.run_slow_factor,
            fence=self.region_fence,
        )

    @cached_property
    def region_failovers(self) -> RegionFailovers:
        """The regions' roles for an admin, and a failover (docs/regions.md)."""
        from tickwork.control.region_failover import RegionFailovers
        from tickwork.model.regions import regions_of

        s = self.settings
        bus = EventBus(lambda: self.clients.client("events"), s.event_bus_name)
        fence = self.region_fence
        return RegionFailovers(
            self.store.regions,
            self.store.due,
            bus.publish,
            self.clock,
            mode=s.region_mode,
            region=fence.region,
            regions=regions_of(s.global_table_regions),
            shards=self.store.shards,
            probe=self.replication_probe,
            audit=self.audit,
        )

    @cached_property
    def replication_probe(self) -> ReplicationProbe:
        """Whether a handover's target has the old active region's writes (RegionMode eventual): read in that region,
        through its clients, built on first use."""
        from tickwork.control.replication_probe import GlobalTableProbe

        def roles_in(region: str) -> RegionRoleRecords:
            return RegionRoleRecords(Table(self.clients.regional_client("dynamodb", region), self.settings.table_name))

        def series_in(region: str) -> MetricSeries:
            return MetricSeries(self.clients.regional_client("cloudwatch", region))

        return GlobalTableProbe(roles_in, series_in, self.clock, table=self.settings.table_name)

    @cached_property
    def replication_lag(self) -> ReplicationLagReader:
        """The replication lag for the health endpoint: CloudWatch's ReplicationLatency, kept a minute (kept as long
        as this object: the execution environment)."""
        from tickwork.control.replication_lag import ReplicationLagReader
        from tickwork.model.regions import regions_of

        s = self.settings
        return ReplicationLagReader(
            self.metric_series,
            self.clock,
            mode=s.region_mode,
            table=s.table_name,
            region=self.region_fence.region,
            regions=regions_of(s.global_table_regions),
        )

    @cached_property
    def region_fence(self) -> RegionFence:
        """This region's leave to claim, lease and record (docs/regions.md): the region is the table client's."""
        return RegionFence(
            self.store.regions, self.settings.region_mode, self.clients.client("dynamodb").meta.region_name
        )

    @cached_property
    def secret_cache(self) -> SecretCache:
        """The secrets runs' payloads name, kept for this execution environment (clients built on first use)."""
        stores = SecretStores(lambda: self.clients.client("secretsmanager"), lambda: self.clients.client("ssm"))
        return SecretCache(stores, self.clock, keep_for=timedelta(seconds=self.settings.secret_cache_seconds))

    @cached_property
    def role_tags(self) -> RoleTenantTags:
        """The `tickwork:tenant` tags of the API's callers' roles, kept for this execution environment. Each read
        is one attempt, not bounded by the SDK's backoff (which could outlive the API function's 10 s): a failure
        is a 503 with Retry-After to the caller."""
        return RoleTenantTags(
            lambda: self.clients.single_attempt_client("iam", read_timeout=READ_TIMEOUT_SECONDS), self.clock
        )

    @property
    def retry_safety_net(self) -> timedelta:
        """A message-borne retry or deferral not back by then is re-sent by the tick; past the horizon, so that
        the tick never sends ahead a retry whose own message is still on its way."""
        return timedelta(seconds=self.settings.redispatch_after_seconds + self.settings.horizon_seconds)

    @cached_property
    def run_events(self) -> RunEvents:
        """Run events to EventBridge after their facts, and from the outbox (tick and executor)."""
        bus = EventBus(lambda: self.clients.client("events"), self.settings.event_bus_name)
        return RunEvents(bus, EventOutbox(self.store.shared_table), self.store.jobs)

    @cached_property
    def workflow_records(self) -> WorkflowRecords:
        """Workflows and their runs, over the store's table (and client)."""
        return WorkflowRecords(self.store.shared_table, shards=self.store.shards, retention=self.store.retention)

    @cached_property
    def workflow_progress(self) -> WorkflowProgress:
        """Opens workflow runs, records their steps' ends, advances and reconciles them (tick and executor)."""
        s = self.settings
        return WorkflowProgress(
            self.workflow_records,
            self.store.jobs,
            self.store.runs,
            self.results,
            self.queues,
            self.clock,
            ProgressSettings(
                reconcile_after=timedelta(seconds=s.reconcile_after_seconds),
                redispatch_after=timedelta(seconds=s.redispatch_after_seconds),
                max_payload_bytes=MAX_PAYLOAD_BYTES,
            ),
            faults=self.faults,
            deadlines=DeadlineRecords(
                self.store.shared_table, shards=self.store.shards, retention=self.store.retention
            ),
        )

    @cached_property
    def workflows(self) -> WorkflowService:
        """What the API calls for workflows and their runs."""
        from tickwork.control.workflow_factory import WorkflowFactory
        from tickwork.control.workflow_service import WorkflowService

        return WorkflowService(
            self.workflow_records,
            self.store.runs,
            self.store.leases,
            self.workflow_progress,
            self.dispatcher,
            self.listings,
            self.clock,
            WorkflowFactory(self.store.shards, targets=self.settings.targets, calendars=self.calendar_records),
            self.active_jobs_quota,
            self.audit,
        )

    @cached_property
    def tenant_records(self) -> TenantRecords:
        """Tenants' settings and usage, over the store's table (and client)."""
        return TenantRecords(self.store.shared_table)

    @cached_property
    def known_tenants(self) -> KnownTenants:
        """The tenants the stack knows (an admin's `tenant=*` reads theirs), remembered per execution environment."""
        return KnownTenants(self.store.shared_table)

    @cached_property
    def tenant_rates(self) -> TenantRates:
        """Tenants' per-minute dispatch counters (max_runs_per_minute), over the store's table (and client)."""
        return TenantRates(self.store.shared_table)

    @cached_property
    def tenant_directory(self) -> TenantDirectory:
        """Tenants' settings as recently read (tick and executor): one directory per execution environment."""
        return TenantDirectory(self.tenant_records, self.clock)

    @cached_property
    def tenants(self) -> TenantService:
        """What the API calls for tenants' settings and usage."""
        from tickwork.control.tenants import TenantService

        return TenantService(self.tenant_records, self.tenant_directory, self.clock, self.audit)

    @cached_property
    def active_jobs_quota(self) -> ActiveJobsQuota:
        """The max_active_jobs check of every create (jobs and workflows)."""
        from tickwork.control.tenants import ActiveJobsQuota

        return ActiveJobsQuota(self.tenant_records, self.tenant_directory, self.known_tenants, self.clock)

    @cached_property
    def metrics_context(self) -> MetricsContext:
        """Where GET /v1/metrics finds this deployment's figures: the environment, read once, and the queues."""
        from tickwork.control.metrics_catalogue import MetricsContext

        names = TelemetryNames.from_env()
        deployed = MetricsSettings.from_env()
        return MetricsContext(
            namespace=names.namespace,
            service=names.service,
            queue_names={band: self.settings.queue_url(band).rstrip("/").rsplit("/", 1)[-1] for band in Band},
            executor_function=deployed.executor_function_name,
            executor_concurrency=deployed.executor_concurrency,
        )

    @cached_property
    def metric_series(self) -> MetricSeries:
        """CloudWatch's series (GetMetricData), for GET /v1/metrics."""
        return MetricSeries(self.clients.client("cloudwatch"))

    @cached_property
    def listings(self) -> Listings:
        """A tenant's jobs, runs and DLQ, page by page, over the store's table (and client)."""
        s = self.settings
        cursors = Cursors(cursor_key(s.table_name, s.cursor_secret))
        return Listings(self.store.shared_table, cursors, self.known_tenants)

    @cached_property
    def run_searches(self) -> RunSearches:
        """A tenant's runs across its jobs and workflows, filtered (GET /v1/runs)."""
        from tickwork.control.run_searches import RunSearches

        index = RunSearchIndex(self.store.shared_table, self.listings.cursors, self.known_tenants)
        return RunSearches(self.listings, index)

    @cached_property
    def idempotency(self) -> IdempotencyRecords:
        return IdempotencyRecords(self.store.shared_table)

    @cached_property
    def job_factory(self) -> JobFactory:
        from tickwork.control.job_factory import JobFactory

        return JobFactory(self.store.shards, targets=self.settings.targets, calendars=self.calendar_records)

    @cached_property
    def queries(self) -> JobQueries:
        from tickwork.control.queries import JobQueries

        return JobQueries(self.store.jobs, self.store.runs, self.listings, self.result_reads, self.clock)

    @cached_property
    def jobs(self) -> JobLifecycle:
        from tickwork.control.debounce import DebouncedTriggers
        from tickwork.control.job_lifecycle import JobLifecycle

        return JobLifecycle(
            self.store.jobs,
            self.store.runs,
            self.dispatcher,
            self.clock,
            self.job_factory,
            self.queries,
            self.active_jobs_quota,
            DebouncedTriggers(self.store.runs, DebounceWindows(self.store.shared_table), self.dispatcher, self.clock),
            self.audit,
        )

    @cached_property
    def job_variants(self) -> JobVariants:
        from tickwork.control.job_variants import JobVariants
        from tickwork.store.variants import VariantRuns

        return JobVariants(self.jobs, self.queries, VariantRuns(self.store.shared_table), self.clock)

    @cached_property
    def audit(self) -> AuditTrail:
        """Each API change's audit record (written in the change's own transaction), and the records' listing."""
        from tickwork.control.audit import AuditTrail

        return AuditTrail(AuditItems(), self.listings, self.clock, self.audit_intents)

    @cached_property
    def idempotent_create(self) -> IdempotentCreate:
        from tickwork.control.idempotent_create import IdempotentCreate

        return IdempotentCreate(
            self.store.jobs, self.job_factory, self.jobs, self.idempotency, self.clock, self.active_jobs_quota
        )

    # ---------------------------------------------------------------- calendars and freezes (docs/operations.md)

    @cached_property
    def calendar_records(self) -> CalendarRecords:
        return CalendarRecords(self.store.shared_table)

    @cached_property
    def freeze_records(self) -> FreezeRecords:
        return FreezeRecords(self.store.shared_table)

    @cached_property
    def executor_freezes(self) -> FreezeReads:
        """The executor's read of the freezes, kept 5 s per execution environment (tickwork.executor.freeze_gate)."""
        return FreezeReads(self.freeze_records, self.clock)

    @cached_property
    def freezes(self) -> FreezeService:
        """What the API calls for freezes."""
        from tickwork.control.freezes import FreezeService

        s = self.settings
        return FreezeService(
            self.freeze_records,
            self.store,
            self.clock,
            horizon=timedelta(seconds=s.horizon_seconds),
            redispatch_after=timedelta(seconds=s.redispatch_after_seconds),
            forget_read=self.dispatcher.freezes.forget,
            events=FreezeEvents(self.freeze_records, self.run_events, self.faults),
            dispatch_due=self.dispatcher.dispatch_due,
            send_runs=self.dispatcher.send_runs,
            audit=self.audit,
        )

    @cached_property
    def calendars(self) -> CalendarService:
        """What the API calls for a tenant's calendars."""
        from tickwork.control.calendars import CalendarService

        return CalendarService(self.calendar_records, self.clock, self.audit, self.known_tenants)

    @cached_property
    def resource_provider(self) -> ResourceProvider:
        """The CloudFormation custom resources' provider, for the tenants its settings name."""
        from tickwork.control.cfn_provider import ResourceProvider

        tenants = frozenset(ProviderSettings.from_env().tenants)
        return ResourceProvider(
            self.jobs, self.queries, self.workflows, self.calendars, self.idempotency, self.clock, tenants
        )

    @cached_property
    def bulk_jobs(self) -> BulkJobs:
        from tickwork.control.bulk_jobs import BulkJobs

        return BulkJobs(self.jobs, self.queries, self.listings)

    @cached_property
    def batch_create(self) -> BatchCreate:
        from tickwork.control.batch_create import BatchCreate

        return BatchCreate(self.jobs, self.idempotent_create)

    @cached_property
    def bulk_runs(self) -> BulkRuns:
        from tickwork.control.bulk_runs import BulkRuns

        return BulkRuns(self.redrive, self.run_searches)

    @cached_property
    def redrive(self) -> RunRedrive:
        from tickwork.control.redrive import RunRedrive

        return RunRedrive(
            self.store.runs,
            self.dispatcher,
            self.clock,
            self.queries,
            self.listings,
            self.audit,
            self.workflow_records,
            self.job_factory.check_payload,
        )

    @cached_property
    def dead_letters(self) -> DeadLetterAdmin:
        """The band queues' SQS dead-letter queues, for an admin: what they hold, and their redrive."""
        from tickwork.control.dead_letters import DeadLetterAdmin

        return DeadLetterAdmin(self.dead_letter_queues, self.audit, self.faults)

    @cached_property
    def run_cancel(self) -> RunCancel:
        from tickwork.control.run_cancel import RunCancel

        return RunCancel(self.store.leases, self.queries, self.audit)

    @cached_property
    def ordering_keys(self) -> OrderingKeys:
        from tickwork.control.ordering_keys import OrderingKeys

        return OrderingKeys(self.store.runs.ordering, self.queries, self.audit)

    @cached_property
    def stuck_runs(self) -> StuckRuns:
        """A tenant's stuck runs, as the tick counts them (GET /v1/runs/stuck)."""
        from tickwork.control.stuck_runs import StuckRuns

        s = self.settings
        return StuckRuns(
            self.store.due,
            self.clock,
            s.due_shards,
            redispatch_after=timedelta(seconds=s.redispatch_after_seconds),
            retry_safety_net=self.retry_safety_net,
        )


W = TypeVar("W")


@dataclass
class SandboxServices:
    """The job sandbox function's wiring: function-isolated handlers' segments. It reads only the job code's settings
    and builds nothing of the table's, the queues' or the bucket's, which its role may not reach."""

    settings: JobCodeSettings
    clients: AwsClients = field(default_factory=AwsClients)
    clock: Clock = field(default_factory=SystemClock)

    def __post_init__(self) -> None:
        import_job_type_modules(self.settings.job_type_modules)

    @classmethod
    def from_env(cls) -> SandboxServices:
        return cls(settings=JobCodeSettings.from_env())

    @cached_property
    def job_sandbox(self) -> JobSandbox:
        return JobSandbox(registry, self.settings.targets, self.clients, self.clock)


class WiringSlot(Generic[W]):
    """A handler module's wiring: built on first use (never at import, so moto can patch first) and kept for the
    life of the execution environment; tests and the local runtime inject their own."""

    def __init__(self, build: Callable[[], W]) -> None:
        self._build = build
        self._value: W | None = None
        self._lock = threading.Lock()

    def get(self) -> W:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value

    def set(self, value: W | None) -> None:
        with self._lock:
            self._value = value


class ServicesSlot(WiringSlot[Services]):
    """The wiring of a function that reads the stack's settings (all but the job sandbox)."""

    def __init__(self) -> None:
        super().__init__(Services.from_env)
