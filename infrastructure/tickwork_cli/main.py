"""The `tickwork` command line: jobs, runs and the DLQ over the HTTP API; `tickwork dev` runs it all locally."""

from __future__ import annotations

import typer

app = typer.Typer(help="Tickwork: a serverless job scheduler.", no_args_is_help=True)

# `tickwork dev` lives with the local runtime (tickwork_local.cli), which registers itself here.
try:
    from tickwork_local.cli import register as _register_dev
except ImportError:  # pragma: no cover - the local runtime is not installed
    _register_dev = None
if _register_dev is not None:
    _register_dev(app)
