"""The job type registry and the context a handler runs in."""

from __future__ import annotations

import copy
import importlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from tickwork.jobtypes.durable import (
    InMemoryCheckpoints,
    KeptProgress,
    ProgressSink,
    RunCheckpoints,
    Yielded,
    progress_report,
)
from tickwork.jobtypes.run_log import RunLog
from tickwork.model.clock import Clock
from tickwork.model.secret_references import reference_errors
from tickwork.model.targets import TargetRules


class UnknownJobType(LookupError):
    pass


class JobTypeModuleError(ImportError):
    """A module named to register job types (JOB_TYPE_MODULES) failed to import. The function must not start
    without them: the API would refuse their jobs as of an unknown type, and the executor fail every run."""


class PermanentJobError(Exception):
    """Raise from a handler when retrying cannot help (bad input): the run fails without retries."""


class RunTimeout(TimeoutError):
    """The run outlived its timeout (or the Lambda's remaining time)."""


class LeaseLost(RunTimeout):
    """This attempt no longer holds the run's lease (another executor took it over): it may save nothing more, and
    should stop; the attempt that took over goes on from the last checkpoint it saw."""


class EffectMayContinue(RuntimeError):
    """The attempt gave up, but its effect may still be under way elsewhere for up to `busy_seconds` (a Lambda
    invoked synchronously runs on after its caller's read timeout). The next attempt waits at least that long,
    so two attempts' effects never overlap."""

    def __init__(self, message: str, *, busy_seconds: float) -> None:
        super().__init__(message)
        self.busy_seconds = busy_seconds


class RetryNotBefore(RuntimeError):
    """The attempt failed and the other side said when to try again (an HTTP 429 or 503 with Retry-After): the
    next attempt waits at least `wait_seconds`, capped by the job's `retry.max_backoff_seconds`."""

    def __init__(self, message: str, *, wait_seconds: float) -> None:
        super().__init__(message)
        self.wait_seconds = wait_seconds


@dataclass
class RunContext:
    """What a handler may use: ids, its attempt number, a deadline, a cooperative sleep, the run's log
    (`ctx.log(message, level="INFO", **fields)`, or `ctx.logger.info(message, **fields)`: see
    tickwork.jobtypes.run_log), its checkpoint (`ctx.checkpoint`, `ctx.last_checkpoint`, `ctx.step`) and its progress
    (`ctx.progress`): see tickwork.jobtypes.durable."""

    run_id: str
    job_id: str
    tenant: str
    attempt: int
    deadline: datetime
    clock: Clock
    cancelled: threading.Event = field(default_factory=threading.Event)
    http_allowlist: tuple[str, ...] = ()
    clients: Any = None  # a factory of boto3 clients, for types that call AWS (see jobtypes.lambda_invoke)
    on_tick: Callable[[], None] | None = None  # the heartbeat, called between sleep slices
    logger: RunLog = field(default=None)  # type: ignore[assignment]  # made for the attempt when not given
    checkpoints: RunCheckpoints = field(default=None)  # type: ignore[assignment]  # in memory when not given
    progress_sink: ProgressSink = field(default_factory=KeptProgress)
    yield_at: datetime | None = None  # when should_yield() turns true (None: never)

    def __post_init__(self) -> None:
        if self.logger is None:
            self.logger = RunLog(self.run_id, self.attempt, self.clock)
        if self.checkpoints is None:
            self.checkpoints = RunCheckpoints(InMemoryCheckpoints())

    def checkpoint(self, state: Any) -> None:
        """Save `state` (JSON-serialisable) as the run's checkpoint, durably before returning; a later attempt (a
        retry, a takeover after a crash, a re-queue from the DLQ) reads it with `last_checkpoint()`. Raises
        CheckpointTooLarge or CheckpointNotJSON (the previous checkpoint stands), LeaseLost if this attempt lost
        the run."""
        self.checkpoints.save(state)

    def last_checkpoint(self) -> Any:
        """The state last saved by `checkpoint()`, in this attempt or an earlier one; None if there is none."""
        return self.checkpoints.last()

    def progress(self, fraction: float | None = None, message: str | None = None, data: Any = None) -> None:
        """Say how far the run has got: `fraction` from 0 to 1 (else ValueError), a `message`, JSON `data` (up to
        2 KiB). `GET /v1/runs/{id}` shows the last report as `progress`; reports are coalesced (at most one write
        every few seconds, most riding on the heartbeat's), so call it as often as is convenient."""
        self.progress_sink.report(progress_report(fraction, message, data))

    def should_yield(self) -> bool:
        """True once this invocation nears its end (the Lambda's time left, less the yield margin): checkpoint,
        then `return ctx.yield_run()` to go on in a fresh invocation."""
        return self.yield_at is not None and self.clock.now() >= self.yield_at

    def yield_run(self) -> Yielded:
        """Return this (`return ctx.yield_run()`): the run goes back on its queue without using an attempt, keeps
        its checkpoint, and a fresh invocation goes on from it."""
        return Yielded()

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run `fn` once for the run: its result is saved under `name`, and a later call (in this attempt or a
        later one) returns the saved result without calling `fn`. The result must be JSON-serialisable."""
        return self.checkpoints.step(name, fn)

    def log(self, message: str, level: str = "INFO", **fields: Any) -> None:
        """A line in the function's structured log (with the run id and attempt) and in the run's own log, which
        `GET /v1/runs/{id}/logs` answers (capped per attempt: tickwork.jobtypes.run_log). Pass no secrets in
        `fields`."""
        self.logger.log(message, level, **fields)

    def remaining_seconds(self) -> float:
        return (self.deadline - self.clock.now()).total_seconds()

    def check(self) -> None:
        """Raise if the run should stop: cancelled (lease lost, timeout) or past its deadline."""
        if self.cancelled.is_set():
            raise RunTimeout("run cancelled: its lease was lost or it timed out")
        if self.remaining_seconds() <= 0:
            raise RunTimeout("run exceeded its timeout")

    def sleep(self, seconds: float, *, slice_seconds: float = 5.0) -> None:
        """Sleep in slices, beating the heartbeat between them and stopping at the deadline."""
        left = seconds
        while left > 0:
            self.check()
            step = min(left, slice_seconds, max(self.remaining_seconds(), 0))
            if step <= 0:
                self.check()
                break
            self.clock.sleep(step)
            left -= step
            if self.on_tick is not None:
                self.on_tick()
        self.check()


Handler = Callable[[Any, RunContext], Any]


class Isolation(StrEnum):
    """Where a job type's handler runs (docs/security.md, "Isolation of job code"): `inline`, in the executor, with
    its role (the built-in types); `function`, in the job sandbox function, whose role reaches none of Tickwork's
    table, queues or bucket, while the executor keeps the run's lease, retries and outcome
    (tickwork.executor.isolation)."""

    INLINE = "inline"
    FUNCTION = "function"

    @classmethod
    def of(cls, value: object) -> Isolation:
        """The one check of a job type's isolation: ValueError naming the choices."""
        if isinstance(value, str) and value in cls._value2member_map_:
            return cls(value)
        choices = ", ".join(repr(member.value) for member in cls)
        raise ValueError(f"a job type's isolation is one of {choices}, not {value!r}")


@dataclass(frozen=True)
class JobType:
    name: str
    payload_model: type[BaseModel]
    handler: Handler
    description: str = ""
    isolation: Isolation = Isolation.INLINE
    # The jobs its module declares to run it, each the fields of a job's create body without its `type` (its name
    # defaulting to the type's): data, read by `tickwork apply --from-module` (tickwork_cli.declared_jobs), which
    # validates them with the API's JobSpec; nothing here acts on them.
    declared_jobs: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "isolation", Isolation.of(self.isolation))

    def parse(self, payload: dict[str, Any], *, context: dict[str, Any] | None = None) -> BaseModel:
        """The payload as its model reads it, in `context` (TargetRules.context: where it may reach, whose it is).
        Every secret reference in it, wherever it is, must be well formed and the tenant's to name
        (tickwork.model.secret_references): each that is not is an error at its place, beside the model's own."""
        refused = reference_errors(payload, TargetRules.secrets_of(context))
        if not refused:
            return self.payload_model.model_validate(payload, context=context or {})
        details: list[InitErrorDetails] = [
            {"type": PydanticCustomError("secret_reference", reason), "loc": at, "input": None}
            for at, reason in refused
        ]
        try:
            self.payload_model.model_validate(payload, context=context or {})
        except ValidationError as exc:
            # The model's own errors elsewhere; at a refused reference, the refusal says it all.
            details += [
                {"type": PydanticCustomError(err["type"], err["msg"]), "loc": err["loc"], "input": None}
                for err in exc.errors(include_url=False, include_input=False)
                if not any(tuple(err["loc"][: len(at)]) == at for at, _ in refused)
            ]
        raise ValidationError.from_exception_data(self.payload_model.__name__, details)


class JobTypeRegistry:
    def __init__(self) -> None:
        self._types: dict[str, JobType] = {}

    def register(self, job: JobType) -> None:
        if job.name in self._types:
            raise ValueError(f"job type {job.name!r} is already registered")
        self._types[job.name] = job

    def get(self, name: str) -> JobType:
        try:
            return self._types[name]
        except KeyError:
            raise UnknownJobType(f"unknown job type {name!r}; known: {', '.join(sorted(self._types))}") from None

    def names(self) -> list[str]:
        return sorted(self._types)

    def __contains__(self, name: object) -> bool:
        return name in self._types


registry = JobTypeRegistry()


def job_type(
    name: str,
    payload_model: type[BaseModel],
    *,
    description: str = "",
    isolation: str = Isolation.INLINE,
    schedule: Mapping[str, Any] | None = None,
    jobs: Sequence[Mapping[str, Any]] = (),
) -> Callable[[Handler], Handler]:
    """Register a handler for a job type. The payload is validated with `payload_model` at create time. `isolation`
    says where the handler runs: "inline" (in the executor) or "function" (in the job sandbox function: see
    Isolation); anything else raises ValueError here, when the module is imported.

    The jobs that run it may be declared beside it (docs/jobs-as-code.md, "Schedules beside their handlers"):
    `schedule=` (as the API takes it: `{"cron": "0 3 * * *", "timezone": "Europe/Paris"}`) declares one job of the
    type's name; `jobs=` several, each the fields of a job's create body but its `type` (`name`, `schedule`,
    `payload`, `retry`, `tags`...). `tickwork apply --from-module` makes them so; they are checked there.

    A new version of a type is registered as a type of its own named `<type>@<version>` (`report@2`): a job of type
    `report` may run it on a share of its runs, as a variant (tickwork.model.variants, docs/versions.md)."""
    checked = Isolation.of(isolation)
    declared = declared_jobs(name, schedule, jobs)

    def decorate(fn: Handler) -> Handler:
        about = description or (fn.__doc__ or "").strip()
        registry.register(JobType(name, payload_model, fn, about, checked, declared))
        return fn

    return decorate


def declared_jobs(
    name: str, schedule: Mapping[str, Any] | None, jobs: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, Any], ...]:
    """`schedule=` and `jobs=` as one tuple of job fields (copied: the module's own dicts may change after); only
    their shape is checked here (ValueError), their fields by `tickwork apply`, with the API's model."""
    if schedule is not None and jobs:
        raise ValueError(f"job type {name!r}: give schedule= (one job) or jobs= (each with its schedule), not both")
    given = [{"schedule": schedule}] if schedule is not None else list(jobs)
    for job in given:
        if not isinstance(job, Mapping):
            raise ValueError(f"job type {name!r}: each of jobs= is a job's fields (a dict), not {job!r}")
        if "type" in job:
            raise ValueError(f"job type {name!r}: a declared job's type is the handler's own; give no `type`")
    return tuple(copy.deepcopy(dict(job)) for job in given)


def import_job_type_modules(modules: Iterable[str]) -> None:
    """Import the modules that register job types of their own (their `@job_type` decorators run on import;
    a module already imported is not run again). The first that fails raises, naming it and why."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise JobTypeModuleError(
                f"job type module {module!r} (JOB_TYPE_MODULES) failed to import: {type(exc).__name__}: {exc}",
                name=module,
            ) from exc
