"""A run's metrics by band and by tenant: EMF documents of their own, beside the function's batch (whose one
dimension set is `service`), so GET /v1/metrics can show lateness by band and a tenant its own figures.

Cost (docs/observability.md): the band dimension adds 3 custom metrics (StartLatenessMs per band); the tenant
dimension adds up to 6 per tenant that has runs (RunsSucceeded, RunsFailed, RunsSkipped, RunsRetried,
RunsDeferred, StartLatenessMs), billed only in the hours it publishes them. No AWS request: EMF is a log line.
Powertools' single_metric and EphemeralMetrics ignore POWERTOOLS_METRICS_DISABLED, so this honours it.
"""

from __future__ import annotations

from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from tickwork.model.clock import to_ms
from tickwork.model.run import Run
from tickwork.model.states import RunTrigger
from tickwork.observability import metrics


def _emit(name: str, unit: MetricUnit, value: float, dimension: str, dimension_value: str) -> None:
    if is_metrics_disabled():
        return
    document = EphemeralMetrics(namespace=metrics.namespace, service=metrics.service)
    document.add_dimension(name=dimension, value=dimension_value)
    document.add_metric(name=name, unit=unit, value=value)
    document.flush_metrics()


def count_for_tenant(name: str, tenant: str, value: float = 1) -> None:
    """A run outcome's count (RunsSucceeded, ...) under the run's tenant."""
    _emit(name, MetricUnit.Count, value, "tenant", tenant)


def start_lateness(lateness_ms: float, *, band: str, tenant: str) -> None:
    """StartLatenessMs by band and by tenant (the total is the batch's)."""
    _emit("StartLatenessMs", MetricUnit.Milliseconds, lateness_ms, "band", band)
    _emit("StartLatenessMs", MetricUnit.Milliseconds, lateness_ms, "tenant", tenant)


def count_start_lateness(run: Run) -> None:
    """Start lateness measures the scheduler: a first attempt of a job's run nobody re-queued by hand (a workflow
    step after the first starts when its upstream steps end, not at the occurrence)."""
    if (
        run.attempts == 1
        and run.requeues == 0
        and run.trigger is RunTrigger.SCHEDULE
        and run.workflow_run_id is None
        and run.lateness_ms is not None
    ):
        # From the instant it was due to start: a jittered run's own (scheduled_for), not its nominal
        # occurrence's, from which the lease measures `lateness_ms` (its offset is not the scheduler's delay).
        offset_ms = to_ms(run.scheduled_for) - to_ms(run.occurrence_at)
        metrics.add_metric(name="StartLatenessMs", unit="Milliseconds", value=max(0, run.lateness_ms - offset_ms))
        start_lateness(max(0, run.lateness_ms - offset_ms), band=run.band.value, tenant=run.tenant)
