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
