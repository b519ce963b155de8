"""The one place Powertools' logger, tracer and metrics are built; handlers and the domain import them.

Service name, namespace and log level come from POWERTOOLS_* variables set by the template.
"""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "tickwork")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Tickwork")

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)
