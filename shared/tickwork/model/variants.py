"""A job's (or a workflow step's) variants, for A/B runs (docs/versions.md): what a variant may override, which
variant an occurrence runs, and the guard's decision to roll a variant back. Pure: no I/O, no clock.

- A variant names a share of the runs (`weight`, in percent; the baseline takes the rest) and overrides the job's
  `type` (a registered version of it, `<type>@<version>`), its `payload` (merged over the job's, as a JSON merge
  patch, RFC 7386), or, for a `lambda` job, its `target` (a function version or alias, the qualifier of
  `function_arn`).
- An occurrence's variant is a pure function of its run id and the weights (`pick_variant`): a hash of the id into
  [0, 100), in steps of 0.01, against the cumulative weights in the order declared. The run's first attempt picks
  it (the executor has the job then; the claim reads only the due index) and its outcome's write records it on the
  run (`Run.variant`); every later attempt, a retry, a redrive, a yielded segment, runs the recorded one
  (`run_variant`), never a new pick.
- The guard (`guard_verdict`): a one-sided two-proportion test with a margin, on the runs that ended since the
  variant was declared, looked at every `min_runs` of the variant's runs, with the false-alarm rate spent over the
  looks (alpha * 6 / (pi^2 k^2) at the k-th look, so at most `alpha` in all, at the margin).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from tickwork.model.errors import FieldError
from tickwork.model.policies import NotCoerced
from tickwork.model.schedule import UtcDatetime

BASELINE = "baseline"
MAX_VARIANTS = 5
# A job type's registered versions are types of their own named `<type>@<version>` (tickwork.jobtypes.registry).
TYPE_VERSION_SEPARATOR = "@"
# The type whose variants may name a `target`: a version or alias of the function its payload invokes.
LAMBDA_TYPE = "lambda"
_QUALIFIER = r"^(\$LATEST|[A-Za-z0-9_-]{1,128})$"

VariantName = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$",
        description="Lower-case letters, digits, `-` and `_`, up to 32; not `baseline` (the job's own).",
    ),
]


class Variant(BaseModel):
    """One variant of a job (or a workflow step): its share of the runs and what it runs differently."""

    model_config = ConfigDict(extra="forbid")

    name: VariantName
    weight: Annotated[int, Field(ge=1, le=100), NotCoerced] = Field(
        description="Its share of the runs, in percent; the baseline takes the rest."
    )
    type: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="A registered version of the job's type, `<type>@<version>` (absent: the job's type).",
    )
    payload: dict[str, Any] | None = Field(
        default=None, description="Merged over the job's payload as a JSON merge patch (RFC 7386): null removes a key."
    )
    target: str | None = Field(
        default=None,
        pattern=_QUALIFIER,
        description="A `lambda` job's function version or alias: the qualifier of its `function_arn`.",
    )

    @field_validator("name")
    @classmethod
    def _not_the_baseline(cls, value: str) -> str:
        if value == BASELINE:
            raise ValueError("`baseline` is the job's own runs; name the variant otherwise")
        return value


def _check_variants(variants: list[Variant]) -> list[Variant]:
    """The rules between a list's variants: names used once, weights that leave the baseline its share."""
    seen: set[str] = set()
    for index, variant in enumerate(variants):
        if variant.name in seen:
            raise ValueError(f"variants[{index}].name: {variant.name!r} is used by an earlier variant")
        seen.add(variant.name)
    total = sum(v.weight for v in variants)
    if total > 100:
        raise ValueError(f"the variants' weights add up to {total}: at most 100 (percent of the runs)")
    return variants


Variants = Annotated[
    list[Variant],
    Field(
        max_length=MAX_VARIANTS,
        description="Versions run beside the job's own on a share of its runs (docs/versions.md).",
    ),
    AfterValidator(_check_variants),
]


class VariantRollback(BaseModel):
    """The last variant rolled back, by the guard or by hand, and why (also in the audit trail)."""

    model_config = ConfigDict(extra="forbid")

    variant: str
    at: UtcDatetime
    by: str
    reason: str


# ----------------------------------------------------------------------------------------------- the split


def bucket_of(run_id: str) -> float:
    """The run id's place in [0, 100), in steps of 0.01: the first 8 bytes of its SHA-256."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return (int.from_bytes(digest[:8], "big") % 10_000) / 100


def pick_variant(run_id: str, variants: Sequence[Variant]) -> str | None:
    """The variant the run of `run_id` runs: the first whose cumulative weight its bucket falls under, else the
    baseline; None when there are no variants (nothing is recorded)."""
    if not variants:
        return None
    bucket = bucket_of(run_id)
    upto = 0
    for variant in variants:
        upto += variant.weight
        if bucket < upto:
            return variant.name
    return BASELINE


# ----------------------------------------------------------------------------------------------- the overrides


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: an object patch merges key by key (null removes), anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def with_qualifier(function: str, qualifier: str) -> str:
    """A Lambda function name or ARN with `qualifier` in place of the one it has, if any."""
    parts = function.split(":")
    unqualified = parts[:7] if function.startswith("arn:") else parts[:1]
    return ":".join([*unqualified, qualifier])


def overridden(job_type: str, payload: dict[str, Any], variant: Variant) -> tuple[str, dict[str, Any]]:
    """What `variant` runs: its type (else the job's) and the job's payload with its patch and target applied."""
    merged = merge_patch(payload, variant.payload) if variant.payload is not None else dict(payload)
    if variant.target is not None and isinstance(merged.get("function_arn"), str):
        merged["function_arn"] = with_qualifier(merged["function_arn"], variant.target)
    return variant.type or job_type, merged


def applied(
    job_type: str, payload: dict[str, Any], variants: Sequence[Variant], recorded: str | None
) -> tuple[str, dict[str, Any]]:
    """The type and payload a run of the variant named `recorded` runs: the baseline's for no variant, `baseline`,
    or a variant no longer declared (rolled back: its runs go on as the baseline; promoted: the baseline is it)."""
    variant = next((v for v in variants if v.name == recorded), None)
    return overridden(job_type, payload, variant) if variant is not None else (job_type, payload)


def run_variant(
    run_id: str, recorded: str | None, job_type: str, payload: dict[str, Any], variants: Sequence[Variant]
) -> tuple[str, dict[str, Any], str | None]:
    """What a run runs, and the variant it records: the one it recorded already (a retry, a redrive, a segment:
    never a new pick), else the pick of its id (its first attempt)."""
    name = recorded if recorded is not None else pick_variant(run_id, variants)
    return (*applied(job_type, payload, variants, name), name)


def type_versions_of(job_type: str, registered: Sequence[str]) -> list[str]:
    """The registered versions of `job_type`: the types named `<job_type>@<version>`."""
    prefix = job_type.split(TYPE_VERSION_SEPARATOR, 1)[0] + TYPE_VERSION_SEPARATOR
    return sorted(name for name in registered if name.startswith(prefix) and name != job_type)


def variant_errors(
    variants: Sequence[Variant],
    *,
    at: str,
    job_type: str,
    payload: dict[str, Any],
    registered: Sequence[str],
    typed_errors: Callable[[str, str, dict[str, Any]], list[FieldError]],
) -> list[FieldError]:
    """The one check of variants against what they vary (a job's, at create and update, and a workflow step's):
    a `type` must be a registered version of the job's type, a `target` is a `lambda` job's, and what each
    variant runs must pass its type's model (`typed_errors(at, type, payload)`, errors at their fields)."""
    errors: list[FieldError] = []
    for index, variant in enumerate(variants):
        place = f"{at}variants[{index}]"
        if variant.type is not None and variant.type not in type_versions_of(job_type, registered):
            known = ", ".join(type_versions_of(job_type, registered)) or "none"
            errors.append(
                FieldError(
                    f"{place}.type",
                    f"{variant.type!r} is not a registered version of {job_type!r} (its versions: {known})",
                )
            )
            continue
        if variant.target is not None and (variant.type or job_type) != LAMBDA_TYPE:
            errors.append(
                FieldError(f"{place}.target", "a target (a function version or alias) is a `lambda` job's only")
            )
            continue
        kind, merged = overridden(job_type, payload, variant)
        errors += typed_errors(place, kind, merged)
    return errors


# ----------------------------------------------------------------------------------------------- the guard


@dataclass(frozen=True)
class Tally:
    """Runs of one variant (or of the baseline) that ended since it was declared, and how many FAILED."""

    ended: int = 0
    failed: int = 0


@dataclass(frozen=True)
class GuardPolicy:
    """The guard's defaults (docs/versions.md says what they cost): roll back when the variant's failure rate is
    above the baseline's by more than `margin`, judged every `min_runs` of the variant's runs (with at least as
    many of the baseline's), at most `alpha` false alarms in all at the margin."""

    margin: float = 0.05
    min_runs: int = 30
    alpha: float = 0.05

    def alpha_at(self, look: int) -> float:
        """The false-alarm rate spent at the `look`-th look (1, 2, ...): they add up to `alpha`."""
        return self.alpha * 6 / (math.pi**2 * look**2)


DEFAULT_GUARD = GuardPolicy()


@dataclass(frozen=True)
class Verdict:
    roll_back: bool
    reason: str = ""
    z: float | None = None


def guard_verdict(variant: Tally, baseline: Tally, policy: GuardPolicy = DEFAULT_GUARD) -> Verdict:
    """Whether `variant`'s failure rate exceeds `baseline`'s by more than the margin, with enough runs to tell.
    Looked at only when the variant's count of ended runs reaches a multiple of `min_runs` (each count is seen
    once: the counting write returns it), and only with `min_runs` of the baseline's. The statistic is
    Agresti-Caffo's (a failure and a success added to each side, so no rate is 0 or 1):
    z = (p_v - p_b - margin) / sqrt(p_v (1 - p_v) / (n_v + 2) + p_b (1 - p_b) / (n_b + 2)),
    rolled back when z is above the normal's 1 - alpha_k quantile at the k-th look."""
    if variant.ended < policy.min_runs or variant.ended % policy.min_runs or baseline.ended < policy.min_runs:
        return Verdict(False)
    look = variant.ended // policy.min_runs
    p_v = (variant.failed + 1) / (variant.ended + 2)
    p_b = (baseline.failed + 1) / (baseline.ended + 2)
    se = math.sqrt(p_v * (1 - p_v) / (variant.ended + 2) + p_b * (1 - p_b) / (baseline.ended + 2))
    z = (p_v - p_b - policy.margin) / se
    bound = NormalDist().inv_cdf(1 - policy.alpha_at(look))
    if z <= bound:
        return Verdict(False, z=z)
    reason = (
        f"failure rate {variant.failed}/{variant.ended} ({variant.failed / variant.ended:.1%}) against the "
        f"baseline's {baseline.failed}/{baseline.ended} ({baseline.failed / baseline.ended:.1%}): more than "
        f"{policy.margin:.0%} above it (z = {z:.2f} > {bound:.2f}, look {look})"
    )
    return Verdict(True, reason, z)


def tally_attribute(name: str, field: str) -> str:
    """The job item's attribute counting a variant's runs (`ended` or `failed`): kept beside the job's fields,
    not among them, so that the counting write moves no version (tickwork.store.variants)."""
    return f"variant_runs#{name}#{field}"


def stale_tallies(before: Sequence[Variant], after: Sequence[Variant], *, baseline_changed: bool) -> list[str]:
    """The variants whose counts no longer hold after a change: gone, changed (its weight aside) or new (a name
    may have counts left by runs of an earlier variant of that name), and, when the baseline itself changed (its
    type or payload), every one and the baseline's."""
    if baseline_changed:
        return list(dict.fromkeys([BASELINE, *(v.name for v in before), *(v.name for v in after)]))
    old = {v.name: v.model_dump(exclude={"weight"}) for v in before}
    new = {v.name: v.model_dump(exclude={"weight"}) for v in after}
    return [name for name in dict.fromkeys([*old, *new]) if old.get(name) != new.get(name)]


def tally_attributes(names: Sequence[str]) -> frozenset[str]:
    return frozenset(tally_attribute(n, f) for n in names for f in ("ended", "failed"))


# ----------------------------------------------------------------------------------------------- the stats

# What a run's handler time costs: the executor's compute, 0.5 GB (its MemorySize) at Lambda's arm64 price per
# GB-second (benchmarks/prices.py). The part of a run's cost a variant changes; the scheduler's own is the same.
EXECUTOR_GB = 0.5
USD_PER_GB_SECOND = 0.0000133334


class VariantStats(BaseModel):
    """One variant's (or the baseline's) runs that ended in a window."""

    name: str
    weight: int = Field(description="Its share of the runs now, in percent (0: no longer declared).")
    runs: int = Field(description="Its runs that ended (SUCCEEDED or FAILED) in the window.")
    succeeded: int
    failed: int
    success_rate: float | None = Field(description="succeeded / runs; null without runs.")
    duration_p50_ms: int | None = Field(description="Of each run's wall time (its first start to its end).")
    duration_p95_ms: int | None
    attempts_per_run: float | None
    cost_per_run_usd: float | None = Field(
        description="The executor's compute for its handlers' time over every attempt (0.5 GB, arm64)."
    )


def _quantile(values: list[int], q: float) -> int | None:
    """The nearest-rank quantile of `values` (sorted here)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def variant_stats(runs: Sequence[dict[str, Any]], variants: Sequence[Variant]) -> list[VariantStats]:
    """The baseline's and each variant's stats from run records (`status`, `variant`, `attempts`, `wall_ms` or
    `duration_ms`, `handler_ms`): the baseline first, then the declared variants in order, then any variant the
    window's runs recorded that is no longer declared (rolled back or promoted)."""
    weights = {BASELINE: 100 - sum(v.weight for v in variants)} | {v.name: v.weight for v in variants}
    grouped: dict[str, list[dict[str, Any]]] = {name: [] for name in weights}
    for run in runs:
        grouped.setdefault(str(run.get("variant") or BASELINE), []).append(run)
    return [_stats_of(name, weights.get(name, 0), group) for name, group in grouped.items()]


def _stats_of(name: str, weight: int, runs: list[dict[str, Any]]) -> VariantStats:
    succeeded = sum(1 for r in runs if r.get("status") == "SUCCEEDED")
    durations = [int(d) for r in runs if (d := r.get("wall_ms", r.get("duration_ms"))) is not None]
    handler_seconds = sum(int(r.get("handler_ms") or 0) for r in runs) / 1000
    n = len(runs)
    return VariantStats(
        name=name,
        weight=weight,
        runs=n,
        succeeded=succeeded,
        failed=n - succeeded,
        success_rate=round(succeeded / n, 4) if n else None,
        duration_p50_ms=_quantile(durations, 0.50),
        duration_p95_ms=_quantile(durations, 0.95),
        attempts_per_run=round(sum(int(r.get("attempts") or 0) for r in runs) / n, 3) if n else None,
        cost_per_run_usd=round(handler_seconds * EXECUTOR_GB * USD_PER_GB_SECOND / n, 10) if n else None,
    )
