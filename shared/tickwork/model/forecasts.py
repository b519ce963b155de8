"""A job's forecast from its recent runs, in constant space: duration p50/p95/p99 and the probability of success.

Durations go into a decayed log-histogram (DDSketch, Masson et al., VLDB 2019, with exponentially decayed counts).
A duration x (ms, 1 ms at least) counts in bucket i = ceil(log_gamma x), gamma = (1 + alpha) / (1 - alpha), and a
quantile reads as 2 gamma^i / (gamma + 1), the point within relative alpha of every value of bucket i. So the error
is stated on the value: with alpha = ALPHA = 2 %, a quantile is within 2 % of the exact quantile of the runs kept,
each weighted by its decay (a p95 of 10 s reads between 9.8 and 10.2 s). What moves the ranks instead, and how little:

- counts are kept to 5 significant digits (the item stays small); each update's rounding is decayed with the rest,
  so a count strays from its exact value by less than 5e-5 / (1 - d) ~ 0.4 % of itself (d: the decay per run);
- a bucket whose count falls under PRUNED_BELOW (of a total near 72) is dropped, and at most MAX_BUCKETS are kept:
  past that span (a factor gamma^64 ~ 13 between the fastest and the slowest run) the fastest are merged into the
  lowest bucket kept. The high quantiles are untouched; a p50 more than 13 times below the slowest run is not.

Why decay: a job's durations drift (its data grows), so each update multiplies every count by d = 2^(-1/H), H =
HALF_LIFE_RUNS = 50: a run weighs half as much 50 runs later. The sketch follows a drift with a lag of about
1.44 H = 72 runs (on a median that doubles over 2,000 runs, about 2.5 % of the p95), and its effective sample is
(1 + d) / (1 - d) ~ 144 runs. Measured (tests/unit/test_forecasts.py), on lognormal durations with sigma = 0.5 in
log: the p95 covers 94.6 to 94.7 % of the next runs when they are stationary, 94.0 % while their median doubles
every 2,000 runs. The lag costs more when the spread is narrow beside the drift: 93.6 to 93.7 % at sigma = 0.3
under that drift. A longer half-life is steadier but lags more; a shorter one is noisier. Why not P² (Jain and
Chlamtac): its markers do not forget, and its error has no bound to state.

The success probability is the same decayed average over runs that ended (succeeded: 1, failed: 0), with a shorter
half-life, SUCCESS_HALF_LIFE_RUNS = 25, so that a job that starts failing shows it within a few dozen runs.

Stored: a `Forecast` on the job item, a few hundred bytes (MAX_STORED_BYTES bounds its JSON), validated once when
read; `observe` returns the next one. No clock: the caller gives a run's duration.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

ALPHA = 0.02
GAMMA = (1 + ALPHA) / (1 - ALPHA)
_LOG_GAMMA = math.log(GAMMA)
HALF_LIFE_RUNS = 50
SUCCESS_HALF_LIFE_RUNS = 25
DURATION_DECAY = 2 ** (-1 / HALF_LIFE_RUNS)
SUCCESS_DECAY = 2 ** (-1 / SUCCESS_HALF_LIFE_RUNS)
MAX_BUCKETS = 64
PRUNED_BELOW = 1e-3
SIGNIFICANT_DIGITS = 5
MAX_STORED_BYTES = 640
# Forecasts are shown (and would be used) from this many runs on: fewer say little about a p95.
MIN_RUNS = 20
MIN_DURATION_MS = 1.0


def bucket_of(duration_ms: float) -> int:
    """The bucket of a duration: i with gamma^(i-1) < x <= gamma^i (durations under 1 ms count as 1 ms)."""
    return math.ceil(math.log(max(duration_ms, MIN_DURATION_MS)) / _LOG_GAMMA)


def value_of(bucket: int) -> float:
    """The point within relative alpha of every duration of the bucket."""
    return 2 * GAMMA**bucket / (GAMMA + 1)


def _rounded(count: float) -> float:
    """To SIGNIFICANT_DIGITS (a count is never negative; 0 stays 0)."""
    return round(count, SIGNIFICANT_DIGITS - 1 - math.floor(math.log10(count))) if count > 0 else 0.0


class DurationSketch(BaseModel):
    """Decayed counts of durations by log bucket: counts[k] is bucket `offset` + k. At most MAX_BUCKETS; the first
    and last are never 0."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    offset: int
    counts: tuple[Annotated[float, Field(ge=0)], ...] = Field(min_length=1, max_length=MAX_BUCKETS)

    @property
    def total(self) -> float:
        return sum(self.counts)

    def quantile(self, q: float) -> float:
        """The q-quantile (0 <= q <= 1) of the decayed durations, in ms, within relative alpha."""
        rank = q * self.total
        seen = 0.0
        for k, count in enumerate(self.counts):
            seen += count
            if seen > rank:
                return value_of(self.offset + k)
        return value_of(self.offset + len(self.counts) - 1)

    def observe(self, duration_ms: float) -> DurationSketch:
        """Every count decayed once, then one more in the duration's bucket."""
        counts = [count * DURATION_DECAY for count in self.counts]
        offset, bucket = self.offset, bucket_of(duration_ms)
        if bucket < offset:
            counts = [0.0] * (offset - bucket) + counts
            offset = bucket
        elif bucket >= offset + len(counts):
            counts += [0.0] * (bucket - offset - len(counts) + 1)
        counts[bucket - offset] += 1.0
        return _bounded(offset, counts)

    @classmethod
    def of(cls, duration_ms: float) -> DurationSketch:
        return cls(offset=bucket_of(duration_ms), counts=(1.0,))


def _bounded(offset: int, counts: list[float]) -> DurationSketch:
    """Rounded, the negligible counts at either end dropped, and the lowest buckets merged past MAX_BUCKETS."""
    kept = [_rounded(count) if count >= PRUNED_BELOW else 0.0 for count in counts]
    first = next(k for k, count in enumerate(kept) if count > 0)  # the run just counted is never pruned
    last = max(k for k, count in enumerate(kept) if count > 0)
    kept, offset = kept[first : last + 1], offset + first
    if len(kept) > MAX_BUCKETS:
        spill = len(kept) - MAX_BUCKETS
        kept = [_rounded(sum(kept[: spill + 1])), *kept[spill + 1 :]]
        offset += spill
    return DurationSketch.model_construct(offset=offset, counts=tuple(kept))


class ForecastView(BaseModel):
    """What a job shows of its forecast (the API's `forecast`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    p50_ms: int = Field(description="The median duration of the job's recent runs, in ms (within 2 %).")
    p95_ms: int = Field(description="95 % of the job's recent runs took at most this long, in ms (within 2 %).")
    p99_ms: int = Field(description="99 % of the job's recent runs took at most this long, in ms (within 2 %).")
    p_success: float = Field(ge=0, le=1, description="The probability that a run succeeds, from its recent runs.")
    runs: int = Field(ge=0, description="How many runs the forecast has seen (recent ones weigh more).")


class Forecast(BaseModel):
    """A job's forecast as stored on its item: the runs seen, the decayed success average, the duration sketch."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs: int = Field(default=0, ge=0)
    succeeded: float = Field(default=0.0, ge=0)  # decayed count of runs that succeeded
    ended: float = Field(default=0.0, ge=0)  # decayed count of runs that ended (succeeded or failed)
    durations: DurationSketch | None = None

    def observe(self, *, succeeded: bool, duration_ms: float | None) -> Forecast:
        """The forecast after one more run that ended; `duration_ms`: how long its handler ran (None: it never
        started, and only its outcome counts)."""
        durations = self.durations
        if duration_ms is not None:
            durations = DurationSketch.of(duration_ms) if durations is None else durations.observe(duration_ms)
        return Forecast.model_construct(  # each part is valid by construction: validated once, when read
            runs=self.runs + 1,
            succeeded=_rounded(self.succeeded * SUCCESS_DECAY + (1.0 if succeeded else 0.0)),
            ended=_rounded(self.ended * SUCCESS_DECAY + 1.0),
            durations=durations,
        )

    @property
    def p_success(self) -> float | None:
        return min(1.0, self.succeeded / self.ended) if self.ended > 0 else None

    def view(self) -> ForecastView | None:
        """What the job shows; None until MIN_RUNS runs with a duration have been seen."""
        if self.runs < MIN_RUNS or self.durations is None or self.p_success is None:
            return None
        return ForecastView(
            p50_ms=round(self.durations.quantile(0.50)),
            p95_ms=round(self.durations.quantile(0.95)),
            p99_ms=round(self.durations.quantile(0.99)),
            p_success=round(self.p_success, 4),
            runs=self.runs,
        )


# The variant a run without one belongs to (issue 41's A/B runs: a run records `variant`; none is the baseline).
BASELINE = "baseline"
# The most ended runs one claim folds: the rest wait for the next claim (a backlog of a per-second job's runs).
FOLD_LIMIT = 100


class EndedRun(BaseModel):
    """What a claim folds of one of its job's runs, read in scheduled order: whether it has ended (SUCCEEDED or
    FAILED: SKIPPED and unsettled runs are not outcomes), how, and how long its handler took."""

    model_config = ConfigDict(frozen=True)

    sort_key: str  # its sort key under its job (RUN#<scheduled ms>[#m]): where the fold's cursor moves to
    settled: bool  # terminal (SUCCEEDED, FAILED or SKIPPED)
    succeeded: bool | None = None  # None: skipped, nothing to count
    duration_ms: float | None = None
    variant: str = BASELINE


class JobForecasts(BaseModel):
    """A job's forecasts, one per variant (the baseline's under BASELINE), and the fold's cursor: the sort key of
    the last run folded in. Stored on the job item as JSON text (`forecasts`), written by the claim's advance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    through: str = ""  # the sort key of the last run folded ("": none yet)
    variants: dict[str, Forecast] = Field(default_factory=dict)

    def of(self, variant: str = BASELINE) -> Forecast:
        """A variant's forecast; a variant with too few runs of its own reads as the baseline's."""
        own = self.variants.get(variant)
        if own is not None and own.view() is not None:
            return own
        return self.variants.get(BASELINE, own or Forecast())

    def view(self, variant: str = BASELINE) -> ForecastView | None:
        return self.of(variant).view()

    def fold(self, runs: list[EndedRun]) -> JobForecasts:
        """The forecasts after the runs read since the cursor (in scheduled order): every run up to the first that
        has not settled is counted (a skip only moves the cursor), and the cursor moves past the last one. A run
        still open holds the cursor, so the runs after it are read again by the next claim, and a long run is
        counted when it ends, not dropped (dropping the slow ones would bias the p99 low)."""
        variants, through = dict(self.variants), self.through
        for run in runs:
            if not run.settled:
                break
            through = run.sort_key
            if run.succeeded is not None:
                before = variants.get(run.variant, Forecast())
                variants[run.variant] = before.observe(succeeded=run.succeeded, duration_ms=run.duration_ms)
        if through == self.through:
            return self
        return JobForecasts.model_construct(through=through, variants=variants)
