"""The one place Powertools' logger, tracer and metrics are built; handlers and the domain import them.

Service name and namespace come from TelemetryNames (POWERTOOLS_* variables set by the template), read when
this module is first imported; the log level and the switches (POWERTOOLS_LOG_LEVEL, ..._TRACE_DISABLED,
..._METRICS_DISABLED) are Powertools' own variables, which it reads itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics, Tracer

from tickwork.settings import TelemetryNames

_names = TelemetryNames.from_env()

logger = Logger(service=_names.service)
tracer = Tracer(service=_names.service)
metrics = Metrics(namespace=_names.namespace, service=_names.service)

Handler = TypeVar("Handler", bound=Callable[..., Any])


def observed(*, correlation_id_path: str | None = None) -> Callable[[Handler], Handler]:
    """What every function's entry point is wrapped in: its invocation's context in each log line (cleared between
    invocations, with the correlation id found at `correlation_id_path`), a trace, and its metrics flushed."""

    def wrap(handler: Handler) -> Handler:
        traced = tracer.capture_lambda_handler(metrics.log_metrics(handler))
        wrapped = logger.inject_lambda_context(traced, clear_state=True, correlation_id_path=correlation_id_path)
        return cast(Handler, wrapped)

    return wrap
