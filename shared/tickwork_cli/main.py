"""The `tickwork` command line: jobs, runs, the DLQ and workflows over the HTTP API; `tickwork dev` runs it all
locally.

    tickwork jobs create --name hello --type echo --at +10s --payload '{"hello": "world"}'
    tickwork runs list <job id> --wait
    tickwork runs result <run id>
    tickwork workflows create --file workflow.json
    tickwork workflows trigger <workflow id>
    tickwork workflow-runs list <workflow id> --wait
    tickwork tenants get me
    tickwork tenants set acme --weight 3 --max-active-jobs 100
    tickwork audit --resource <job id> --from -1d
    tickwork smoke --api-url <ApiUrl>

The API comes from --api-url or TICKWORK_API_URL. A deployed API is called with SigV4 from the normal AWS
credential chain; a local one (127.0.0.1) needs nothing, or --api-key when it was started with a keys file.

Here the `tickwork` app is assembled; each noun's commands are in its own module of tickwork_cli.commands.
"""

from __future__ import annotations

import typer
from tickwork import __version__

from tickwork_cli.commands import (
    api,
    audit,
    calendars,
    console,
    dead_letters,
    dlq,
    freezes,
    jobs,
    metrics,
    regions,
    runs,
    schedules,
    smoke,
    tenants,
    workflow_runs,
    workflows,
)
from tickwork_cli.jobs_as_code import register as register_jobs_as_code

app = typer.Typer(help="Tickwork: a serverless job scheduler.", no_args_is_help=True)


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"tickwork {__version__}")
        raise typer.Exit


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Tickwork: a serverless job scheduler."""


# `--help` lists the top-level commands before the groups, each in the order registered: so plan, apply and
# dev come before audit, smoke and console, and dev's group (secrets) after these groups.
GROUPS = (
    jobs,
    runs,
    dlq,
    dead_letters,
    workflows,
    workflow_runs,
    schedules,
    tenants,
    calendars,
    freezes,
    metrics,
    api,
    regions,
)
COMMANDS = (audit, smoke, console)
for _noun in GROUPS:
    _noun.register(app)
register_jobs_as_code(app)  # plan, apply

# `tickwork dev` lives with the local runtime (tickwork_local.cli), which registers itself here.
try:
    from tickwork_local.cli import register as _register_dev
except ImportError:  # pragma: no cover - the local runtime is not installed
    pass
else:
    _register_dev(app)

for _noun in COMMANDS:
    _noun.register(app)
