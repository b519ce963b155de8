"""Schedules beside their handlers (docs/jobs-as-code.md): the jobs a module's `@job_type(..., schedule=...)` or
`jobs=[...]` declares, as the definitions `tickwork plan` and `tickwork apply --from-module` make so, beside those of
files. Each is a job named as its type unless it says otherwise, of its handler's type, checked with the API's own
create body (JobSpec) before anything is sent; an error names the module and the type, as a file's names its line.

    tickwork apply --from-module acme_jobs --source acme --prune
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError
from tickwork.control.api_bodies import JobSpec
from tickwork.jobtypes import JobType, JobTypeModuleError, import_job_type_modules, registry

from tickwork_cli.desired_state import Definition, DefinitionError


def read_modules(modules: Iterable[str]) -> list[Definition]:
    """Import each module (from the current folder, as `python -m` would, and PYTHONPATH), then read the jobs
    declared by the job types it registered; a module that fails to import, or registers none, is an error."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    definitions = []
    for module in modules:
        try:
            import_job_type_modules([module])
        except JobTypeModuleError as exc:
            raise DefinitionError(module, f"cannot import it: {exc.__cause__!r}") from None
        types = [registry.get(name) for name in registry.names()]
        own = [t for t in types if _defined_in(t, module)]
        if not own:
            raise DefinitionError(module, "registers no job type (@job_type): nothing to read")
        definitions += definitions_of(module, own)
    return definitions


def _defined_in(job_type: JobType, module: str) -> bool:
    defined = getattr(job_type.handler, "__module__", None) or ""
    return defined == module or defined.startswith(f"{module}.")


def definitions_of(module: str, job_types: Iterable[JobType]) -> list[Definition]:
    """The jobs `job_types` declare, as definitions of kind job: each its declared fields, its name (the type's when
    it gives none) and its type; each checked with JobSpec, its errors named `module: @job_type('type')` and the
    field."""
    definitions = []
    for job_type in job_types:
        several = len(job_type.declared_jobs) > 1
        for index, declared in enumerate(job_type.declared_jobs):
            where = f"{_defined_where(module, job_type)}: @job_type({job_type.name!r})"
            where += f" jobs[{index}]" if several else ""
            body: dict[str, Any] = {"name": job_type.name, **declared, "type": job_type.name}
            _check(where, body)
            definitions.append(Definition("job", body["name"], body, where))
    return definitions


def _defined_where(module: str, job_type: JobType) -> str:
    return getattr(job_type.handler, "__module__", None) or module


def _check(where: str, body: dict[str, Any]) -> None:
    """The API's own check of a create body, but the calendars: a definition names them, the plan finds their ids
    (tickwork_cli.desired_state)."""
    try:
        JobSpec.model_validate({k: v for k, v in body.items() if k != "calendars"})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(the job)'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise DefinitionError(where, problems) from None
