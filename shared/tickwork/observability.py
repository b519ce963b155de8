"""The one place Powertools' logger, tracer and metrics are built; handlers and the domain import them.

Service name and namespace come from TelemetryNames (POWERTOOLS_* variables set by the template), read when
this module is first imported; the log level and the switches (POWERTOOLS_LOG_LEVEL, ..._TRACE_DISABLED,
..._METRICS_DISABLED) are Powertools' own variables, which it reads itself.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

from tickwork.settings import TelemetryNames

_names = TelemetryNames.from_env()

logger = Logger(service=_names.service)
tracer = Tracer(service=_names.service)
metrics = Metrics(namespace=_names.namespace, service=_names.service)
