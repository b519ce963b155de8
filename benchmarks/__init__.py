"""Tickwork benchmarks: `make bench` (full) and `make bench-quick` (CI). See benchmarks/run.py.

Outside pytest nothing puts the repo's source folders on sys.path, so this package does (the same list as
pyproject's [tool.pytest.ini_options] pythonpath), and
`prepare_environment()` sets what every section needs before anything imports boto3 or Powertools: fake
credentials (moto, never AWS), no X-Ray, no EMF lines on stdout.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

for _folder in (ROOT, ROOT / "infrastructure", ROOT / "functions", ROOT / "shared"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))


def prepare_environment() -> None:
    """Called by `benchmarks.run` before anything imports boto3 or Powertools (pytest's conftest does the same)."""
    for name, value in {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "ERROR",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        os.environ.setdefault(name, value)
    # Never real AWS: moto intercepts every call, and these are the keys moto expects.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        os.environ[name] = "testing"
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)
