"""Options that several commands take, declared once as groups: the session with the API, a job's fields.

Typer reads a command's options from its signature, and users give them after the command name
(`tickwork jobs get ID --api-url ...`), so a callback on the group cannot hold them. Instead a command names
a group as one parameter (`session: Session`, `fields: JobFields`) and `api_command` spreads the group's
fields into the signature typer sees, then hands the command the group built from their values.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Callable
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import typer

from tickwork_cli import clock, render
from tickwork_cli.api_client import ApiError, Client, ConfigError

EXIT_API_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3  # a wait (`runs watch`, `--wait`) gave up before the run ended
# How a waited-for run ended, as the exit status a script gates on (`tickwork runs watch ID || ...`): each
# ending its own code, past the codes of the CLI's own problems. Several runs (`--wait`): the first of these
# that one of them has, in this order.
EXIT_BY_ENDING = {
    "FAILED": 4,
    "COMPENSATION_FAILED": 8,
    "COMPENSATED": 7,
    "CANCELLED": 6,
    "SKIPPED": 5,
}
EXIT_STATUS_HELP = """Exit status:
  0  every run SUCCEEDED
  4  one FAILED
  5  one was SKIPPED (a job's run cancelled is too)
  6  a workflow run was CANCELLED
  7  a workflow run was COMPENSATED
  8  a workflow run's compensation FAILED (COMPENSATION_FAILED)
  3  the wait timed out
  1  the API refused a call
  2  a usage problem
Runs that ended differently: the first of 4, 8, 7, 6, 5 one of them has."""


def exit_status_of(endings: typing.Iterable[str]) -> int:
    """The exit status for runs that ended so: 0 when every one SUCCEEDED (EXIT_BY_ENDING)."""
    ended = set(endings)
    return next((code for ending, code in EXIT_BY_ENDING.items() if ending in ended), 0)


def _flags_take_no_value() -> None:
    """Typer's rich help shows a type beside every option, a flag's too (`--all <bool>`), as if the flag took
    a value; its plain help leaves it out, as click does. Here the rich help leaves it out too."""
    shown_type = typer.core.TyperOption.display_type_rich

    def display_type_rich(self: typer.core.TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown_type(self, ctx)

    typer.core.TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_take_no_value()


class Output(StrEnum):
    table = "table"
    json = "json"


Limit = Annotated[int | None, typer.Option("--limit", min=1, max=100, help="Page size (1-100).")]
CursorOpt = Annotated[str | None, typer.Option("--cursor", help="Continue from a previous page's next_cursor.")]
AllPages = Annotated[bool, typer.Option("--all", help="Follow next_cursor to the end.")]
# An admin's view of one tenant's, or every tenant's (the API's `tenant` query parameter); a tenant may name only
# its own.
EVERY_TENANT = "*"
TenantOpt = Annotated[
    str | None,
    typer.Option(
        "--tenant",
        metavar="NAME|*",
        help="An admin's: this tenant's, as it sees them, or `*` for every tenant's (a TENANT column says whose).",
    ),
]
JobIdArg = Annotated[str, typer.Argument(help="The job id.")]
RunIdArg = Annotated[str, typer.Argument(help="The run id.")]
WorkflowIdArg = Annotated[str, typer.Argument(help="The workflow id.")]
WorkflowRunIdArg = Annotated[str, typer.Argument(help="The workflow run id.")]
BodyFile = Annotated[
    Path | None,
    typer.Option("--file", "-f", help="The request body as JSON, or - for stdin; the flags given override its fields."),
]
PreviewCount = Annotated[int | None, typer.Option("--count", help="How many occurrences (1-1000; default 5).")]


@dataclasses.dataclass
class Session:
    """Every API command's options: where the API is, how to sign for it, how to print its answers.

    `--api-url` stands where the command declares its session, the others after all its own options:
    the order `--help` has always shown.
    """

    api_url: Annotated[
        str,
        typer.Option("--api-url", envvar="TICKWORK_API_URL", help="The API's base URL.", show_default=False),
    ] = ""
    output: Annotated[
        Output | None,
        typer.Option("--output", "-o", help="table or json (default: table on a terminal, else json)."),
    ] = None
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="TICKWORK_API_KEY", help="X-Api-Key, for a local API started with keys."),
    ] = None
    profile: Annotated[
        str | None, typer.Option("--profile", envvar="AWS_PROFILE", help="AWS profile to sign with.")
    ] = None
    region: Annotated[str | None, typer.Option("--region", help="Region to sign for (default: from the URL).")] = None
    token: Annotated[
        str | None,
        typer.Option(
            "--token", envvar="TICKWORK_TOKEN", help="A bearer JWT, for the token API (TokenApiUrl): nothing is signed."
        ),
    ] = None

    @cached_property
    def client(self) -> Client:
        """Built on first use, so a command that checks its input before calling reports that first. Its waits
        between attempts are the CLI's (tickwork_cli.clock)."""
        return Client(
            self.api_url,
            api_key=self.api_key,
            token=self.token,
            profile=self.profile,
            region=self.region,
            sleep=clock.sleep,
            now=clock.now,
        )

    @property
    def as_json(self) -> bool:
        return (self.output or (Output.table if sys.stdout.isatty() else Output.json)) is Output.json

    def show_one(self, item: Any) -> None:
        """An answer (a model of the typed client's, or its JSON) as JSON, or a field a line."""
        item = render.plain(item)
        typer.echo(render.as_json(item) if self.as_json or not isinstance(item, dict) else render.record(item))

    def show_page(self, page: Any, columns: Any, *, tenant: str | None = None) -> None:
        """A page as JSON or a table; every tenant's (`tenant` `*`) with a TENANT column first."""
        page = render.plain(page)
        if self.as_json:
            typer.echo(render.as_json(page))
            return
        if tenant == EVERY_TENANT:
            columns = [render.TENANT_COLUMN, *columns]
        typer.echo(render.items_table(page["items"], columns))
        if page.get("next_cursor"):
            typer.echo(f"more: --cursor {page['next_cursor']}", err=True)


@dataclasses.dataclass
class ScheduleFields:
    """A schedule as flags: what jobs and workflows are created and changed with, and previews take."""

    at: Annotated[
        str | None,
        typer.Option("--at", help="Once at this ISO-8601 time, now (it runs at once), or +10s / +1h30m from now."),
    ] = None
    cron: Annotated[str | None, typer.Option("--cron", help="Cron: 5 fields, or 6 with seconds first.")] = None
    rate: Annotated[
        str | None, typer.Option("--rate", help='Fixed interval, e.g. "5 minutes" (takes no --timezone).')
    ] = None
    timezone: Annotated[str | None, typer.Option("--timezone", help="IANA time zone of --cron (default UTC).")] = None
    # The old spelling, kept for a release; --help shows only --timezone.
    tz: Annotated[str | None, typer.Option("--tz", hidden=True)] = None
    start_at: Annotated[
        str | None, typer.Option("--start-at", help="No occurrence before this time (ISO-8601, now, +1d).")
    ] = None
    end_at: Annotated[
        str | None, typer.Option("--end-at", help="No occurrence after this time (ISO-8601, now, +1d).")
    ] = None


@dataclasses.dataclass
class PolicyFields:
    """What jobs and workflows both set: priority, retries, the timeout, the misfire grace, tags."""

    priority: Annotated[int | None, typer.Option("--priority", help="0-9 (9 first).")] = None
    max_attempts: Annotated[int | None, typer.Option("--max-attempts", help="Attempts before a run FAILS.")] = None
    backoff: Annotated[float | None, typer.Option("--backoff", help="First retry delay, seconds.")] = None
    max_backoff: Annotated[float | None, typer.Option("--max-backoff", help="Longest retry delay, seconds.")] = None
    timeout: Annotated[int | None, typer.Option("--timeout", help="Run timeout, seconds.")] = None
    misfire_grace: Annotated[
        int | None, typer.Option("--misfire-grace", help="Seconds late a run may still start.")
    ] = None
    tag: Annotated[list[str] | None, typer.Option("--tag", help="key=value; repeatable.")] = None
    calendar: Annotated[
        list[str] | None, typer.Option("--calendar", metavar="ID", help="A calendar of yours; repeatable.")
    ] = None
    on_blocked: Annotated[
        str | None, typer.Option("--on-blocked", help="A blocked occurrence: SKIP, or DEFER to its block's end.")
    ] = None


DEBOUNCE_OPTION = typer.Option(
    "--debounce",
    metavar="KEY=SECONDS",
    help="Triggers of KEY within SECONDS (1-86400) of the first collapse into one run at the window's end.",
)
DEBOUNCE_COLLECT_OPTION = typer.Option(
    "--debounce-collect", help="With --debounce: the run carries every trigger's payload, not only the last."
)


@dataclasses.dataclass
class JobFields:
    """What only jobs set: the payload, overlap, catch-up, the circuit breaker, jitter, precision, limits."""

    payload: Annotated[str | None, typer.Option("--payload", help="The payload, a JSON object.")] = None
    payload_file: Annotated[
        Path | None, typer.Option("--payload-file", help="Read the payload (JSON object) from a file, or - for stdin.")
    ] = None
    overlap: Annotated[
        str | None,
        typer.Option(
            "--overlap",
            help="While a run is running, a new one: ALLOW, SKIP, BUFFER_ONE, BUFFER_ALL or CANCEL_OTHER.",
        ),
    ] = None
    catchup: Annotated[
        str | None, typer.Option("--catchup", help="Missed occurrences to run after an outage: NONE, LATEST or ALL.")
    ] = None
    failure_threshold: Annotated[
        int | None, typer.Option("--failure-threshold", help="Circuit breaker: suspend after this many failed runs.")
    ] = None
    cooldown_seconds: Annotated[
        int | None, typer.Option("--cooldown-seconds", help="Circuit breaker: seconds suspended before a probe.")
    ] = None
    max_cooldown_seconds: Annotated[
        int | None, typer.Option("--max-cooldown-seconds", help="Circuit breaker: the doubled cooldown's cap.")
    ] = None
    jitter_seconds: Annotated[
        int | None,
        typer.Option(
            "--jitter-seconds", help="Delay each run by a fixed-per-occurrence 0 to N s (at most the period)."
        ),
    ] = None
    start_precision: Annotated[
        str | None,
        typer.Option(
            "--start-precision", help="second (0-1 s after the instant) or precise (within ~100 ms; more Lambda time)."
        ),
    ] = None
    dispatch_order: Annotated[
        str | None,
        typer.Option(
            "--dispatch-order",
            help="edf (earliest deadline first) or sjf (shortest expected run first) when a tick is short of room;"
            " unset: its tenant's (docs/forecasts.md).",
        ),
    ] = None
    concurrency: Annotated[
        str | None,
        typer.Option("--concurrency", metavar="KEY=LIMIT", help="At most LIMIT runs sharing KEY run at once."),
    ] = None
    rate_limit: Annotated[
        str | None,
        typer.Option(
            "--rate-limit", metavar="KEY=N/s|N/min", help="Runs sharing KEY start at most N a second or a minute."
        ),
    ] = None
    ordering: Annotated[
        str | None,
        typer.Option("--ordering", metavar="KEY", help="Runs sharing KEY run one at a time, in scheduled order."),
    ] = None
    ordering_on_failure: Annotated[
        str | None,
        typer.Option(
            "--ordering-on-failure", help="With --ordering: a FAILED run blocks the key (block) or not (continue)."
        ),
    ] = None
    debounce: Annotated[str | None, DEBOUNCE_OPTION] = None
    debounce_collect: Annotated[bool, DEBOUNCE_COLLECT_OPTION] = False
    max_run_seconds: Annotated[
        int | None,
        typer.Option(
            "--max-run-seconds", help="A run's handler time over all its segments, at most (a durable run's)."
        ),
    ] = None
    deadline: Annotated[
        str | None,
        typer.Option(
            "--deadline",
            metavar="DURATION",
            help="Each run ends within this of its occurrence: 30m, 4h, 90 (seconds).",
        ),
    ] = None
    on_deadline_miss: Annotated[
        str | None,
        typer.Option("--on-deadline-miss", help="With --deadline: ALERT (the default), or CANCEL the run as well."),
    ] = None
    notify: Annotated[
        list[str] | None,
        typer.Option(
            "--notify",
            metavar="EVENT",
            help='An event to publish: "Run Failed", "Run Dead-Lettered", "Deadline Missed", "Job Suspended"; '
            "repeatable; none for no event.",
        ),
    ] = None
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants",
            metavar="JSON",
            help='Versions run on a share of the runs (docs/versions.md), a JSON list: \'[{"name": "v2", "weight": '
            '10, "target": "live"}]\'; [] for none.',
        ),
    ] = None


@dataclasses.dataclass
class RunsListing:
    """How `runs list` and `workflow-runs list` page through runs, and wait for them to finish."""

    limit: Limit = None
    cursor: CursorOpt = None
    all_pages: AllPages = False
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Poll until there is a run and every run listed has finished; the exit status says how they ended.",
        ),
    ] = False
    wait_timeout: Annotated[float, typer.Option("--wait-timeout", help="Give up waiting after this many seconds.")] = (
        120
    )
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls when waiting.")] = 1


@dataclasses.dataclass
class RunFilters:
    """A runs search's filters (GET /v1/runs) besides the status: `runs search` lists what they find, `runs retry`
    re-queues it."""

    job_id: Annotated[str | None, typer.Option("--job", help="Only this job's runs.")] = None
    workflow_id: Annotated[str | None, typer.Option("--workflow", help="Only this workflow's steps' runs.")] = None
    job_type: Annotated[str | None, typer.Option("--type", help="Only runs of jobs of this type.")] = None
    tag: Annotated[str | None, typer.Option("--tag", help="Only runs of jobs tagged so: key=value.")] = None
    trigger: Annotated[str | None, typer.Option("--trigger", help="schedule, manual or backfill.")] = None
    error_type: Annotated[str | None, typer.Option("--error-type", help="Only runs whose error is of this type.")] = (
        None
    )
    since: Annotated[str | None, typer.Option("--from", help="From this instant (ISO-8601, now, -1h).")] = None
    until: Annotated[str | None, typer.Option("--to", help="Up to this instant (ISO-8601, now, -10m).")] = None
    ended: Annotated[bool, typer.Option("--ended", help="--from/--to bound when runs ended, not their time.")] = False


GROUPS = (Session, ScheduleFields, PolicyFields, JobFields, RunsListing, RunFilters)
_SESSION_HEAD = "api_url"  # the one Session option that stands where the command declares its session


def _options_of(group: type) -> list[inspect.Parameter]:
    hints = typing.get_type_hints(group, include_extras=True)
    return [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=hints[f.name])
        for f in dataclasses.fields(group)
    ]


def _spread(command: Callable[..., Any]) -> tuple[list[inspect.Parameter], dict[str, type]]:
    """The parameters typer sees, and which of the command's parameters are groups (name -> group)."""
    head: list[inspect.Parameter] = []
    tail: list[inspect.Parameter] = []
    groups: dict[str, type] = {}
    for param in inspect.signature(command, eval_str=True).parameters.values():
        if param.annotation not in GROUPS:
            head.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        groups[param.name] = param.annotation
        options = _options_of(param.annotation)
        if param.annotation is Session:
            head += [p for p in options if p.name == _SESSION_HEAD]
            tail += [p for p in options if p.name != _SESSION_HEAD]
        else:
            head += options
    return head + tail, groups


def api_command(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command with its option groups spread out for typer, and the API's problems printed readably on
    stderr with a non-zero exit status."""
    parameters, groups = _spread(command)
    members = {name: [f.name for f in dataclasses.fields(group)] for name, group in groups.items()}

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        for name, group in groups.items():
            values[name] = group(**{field: values.pop(field) for field in members[name]})
        try:
            return command(**values)
        except ApiError as exc:
            typer.echo(exc.describe(), err=True)
            raise typer.Exit(EXIT_API_ERROR) from None
        except ConfigError as exc:
            typer.echo(f"tickwork: {exc}", err=True)
            raise typer.Exit(EXIT_USAGE) from None

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run
