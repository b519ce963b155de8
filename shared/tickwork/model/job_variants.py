"""A job's variants changed whole: rolled back (removed, and why recorded) or promoted (its overrides folded into
the job: it becomes the baseline). Pure: the caller writes the job under its version, with an audit record."""

from __future__ import annotations

from datetime import datetime

from tickwork.model.errors import NotFound
from tickwork.model.job import Job
from tickwork.model.variants import VariantRollback, overridden, stale_tallies, tally_attributes


def declared(job: Job, name: str) -> None:
    """NotFound unless `job` declares a variant `name`."""
    if all(v.name != name for v in job.variants):
        raise NotFound(f"job {job.id} has no variant {name!r}")


def rolled_back(job: Job, name: str, *, by: str, reason: str, now: datetime) -> Job:
    """`job` without variant `name` (its share goes back to the baseline), and the rollback recorded on it."""
    declared(job, name)
    return job.model_copy(
        update={
            "variants": [v for v in job.variants if v.name != name],
            "variant_rollback": VariantRollback(variant=name, at=now, by=by, reason=reason),
        }
    )


def promoted(job: Job, name: str) -> Job:
    """`job` running variant `name` as its own: the variant's type and payload become the job's and the variant
    goes; the other variants stay, their overrides now over the new baseline (one of the type it promotes runs the
    job's type now: a variant's `type` is another version than the job's)."""
    declared(job, name)
    variant = next(v for v in job.variants if v.name == name)
    kind, payload = overridden(job.type, job.payload, variant)
    rest = [v.model_copy(update={"type": None}) if v.type == kind else v for v in job.variants if v.name != name]
    return job.model_copy(update={"type": kind, "payload": payload, "variants": rest})


def stale_after(before: Job, after: Job) -> frozenset[str]:
    """The job item's tally attributes a change from `before` to `after` makes stale (tickwork.model.variants)."""
    changed = before.type != after.type or before.payload != after.payload
    return tally_attributes(stale_tallies(before.variants, after.variants, baseline_changed=changed))
