"""Make moto's CloudWatch answer GetMetricData as CloudWatch does for the queries Tickwork sends.

Two things moto leaves out (moto/cloudwatch/models.py), which `GET /v1/metrics` needs:
- Percentile statistics: `Statistics.get_statistics_for_type` knows Sum, Average, Minimum, Maximum and
  SampleCount only, so `p99` returns nothing. `play_cloudwatch_statistics` adds `pNN` (and `pNN.N`) over the
  period's values, each as often as its count (moto stores a value sent with Counts that many times):
  CloudWatch's nearest-rank definition, the smallest value with at least NN% of the values at or below it.
- Metric math: moto's `parse_expression` returns an expression's result only when the expression is another
  query's id. This evaluates the arithmetic Tickwork's catalogue uses (numbers, query ids, + - * /, brackets
  and FILL(series, value)) point by point, as CloudWatch does: a point missing from an operand is missing from
  the result, FILL puts its value there, and a division by zero gives no point. FILL fills the periods where
  any of the expression's series has data (CloudWatch fills every period of the range: a period where no
  series has data is left empty here, where CloudWatch would compute on the fill values).

And one thing it does slowly: moto's GetMetricData walks every datum of the range for every period of every query
(a console's 1 h query over a busy run's metrics took 21 s). `_get_metric_data` indexes the range's data by
metric once and puts each datum in its period (the same answers, in well under a second); its dimension match
is CloudWatch's, exact (moto's matches any dimensions when a query names none).

Like moto_atomic, this makes the emulator faithful; no AWS API changes. The local moto server applies it in
`motoserver._prepare_moto`, and the in-process fixture (tests/conftest.py) with `cloudwatch_in_process`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, SupportsFloat

from moto.cloudwatch import models as cloudwatch_models
from moto.cloudwatch.exceptions import ValidationError
from moto.cloudwatch.models import CloudWatchBackend, MetricDatum, Statistics

_PERCENTILE = re.compile(r"^p(\d{1,2}(?:\.\d+)?|100)$")
_MOTO_STATISTIC = Statistics.get_statistics_for_type
_MOTO_PARSE_EXPRESSION = cloudwatch_models.parse_expression
_MOTO_GET_METRIC_DATA = CloudWatchBackend.get_metric_data


def percentile(values: list[float], percent: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least `percent`% of `values` at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _statistic(self: Statistics, stat: str) -> SupportsFloat | None:
    match = _PERCENTILE.match(stat)
    if match is None:
        return _MOTO_STATISTIC(self, stat)
    return percentile([m.value for m in self.metric_data if isinstance(m, MetricDatum)], float(match.group(1)))


# ------------------------------------------------------------------ metric math

Points = dict[datetime, float]
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


class ExpressionError(ValueError):
    """An expression this evaluator does not know (moto then answers as before: nothing)."""


def _tokens(expression: str) -> list[str]:
    found = []
    for number, name, symbol in _TOKEN.findall(expression):
        token = number or name or symbol
        if token.strip():
            found.append(token)
    return found


class _Evaluator:
    """Recursive descent over: sum := product (('+'|'-') product)*; product := unary (('*'|'/') unary)*;
    unary := '-' unary | atom; atom := number | id | FILL '(' sum ',' number ')' | '(' sum ')'.
    A value is a float (a constant) or Points (a series)."""

    def __init__(self, expression: str, series: dict[str, Points]) -> None:
        self.tokens = _tokens(expression)
        self.at = 0
        self.series = series
        # FILL fills where any series the expression names has data (not every query of the request).
        named = {token for token in self.tokens if token in series}
        self.instants = sorted({t for name in named for t in series[name]})

    def evaluate(self) -> Points:
        value = self._sum()
        if self.at != len(self.tokens):
            raise ExpressionError(f"unexpected {self.tokens[self.at]!r}")
        if isinstance(value, float):
            return dict.fromkeys(self.instants, value)
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise ExpressionError(f"expected {expected or 'more'}, found {token!r}")
        self.at += 1
        return token

    def _sum(self) -> float | Points:
        value = self._product()
        while self._peek() in ("+", "-"):
            op = self._take()
            value = _combine(value, self._product(), op)
        return value

    def _product(self) -> float | Points:
        value = self._unary()
        while self._peek() in ("*", "/"):
            op = self._take()
            value = _combine(value, self._unary(), op)
        return value

    def _unary(self) -> float | Points:
        if self._peek() == "-":
            self._take()
            return _combine(-1.0, self._unary(), "*")
        return self._atom()

    def _atom(self) -> float | Points:
        token = self._take()
        if token == "(":  # noqa: S105 - a bracket, not a password
            value = self._sum()
            self._take(")")
            return value
        if token[0].isdigit():
            return float(token)
        if token.upper() == "FILL":
            self._take("(")
            inner = self._sum()
            self._take(",")
            fill = float(self._take())
            self._take(")")
            if isinstance(inner, float):
                return inner
            return {t: inner.get(t, fill) for t in self.instants}
        if token in self.series:
            return self.series[token]
        raise ExpressionError(f"unknown id or function {token!r}")


_OPERATIONS: dict[str, Callable[[float, float], float | None]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b if b != 0 else None,
}


def _combine(left: float | Points, right: float | Points, op: str) -> float | Points:
    apply = _OPERATIONS[op]
    if isinstance(left, float) and isinstance(right, float):
        value = apply(left, right)
        if value is None:
            raise ExpressionError("division by zero")
        return value
    instants = sorted(set(left if isinstance(left, dict) else ()) | set(right if isinstance(right, dict) else ()))
    out: Points = {}
    for t in instants:
        a = left if isinstance(left, float) else left.get(t)
        b = right if isinstance(right, float) else right.get(t)
        if a is None or b is None:
            continue  # missing from an operand: missing from the result
        value = apply(a, b)
        if value is not None:
            out[t] = value
    return out


def evaluate_expression(expression: str, series: dict[str, Points]) -> Points:
    return _Evaluator(expression, series).evaluate()


def _parse_expression(expression: str, results: list[dict[str, Any]]) -> tuple[list[SupportsFloat], list[datetime]]:
    series = {r["id"]: dict(zip(r["timestamps"], (float(v) for v in r["values"]), strict=False)) for r in results}
    try:
        points = evaluate_expression(expression, series)
    except ExpressionError:
        return _MOTO_PARSE_EXPRESSION(expression, results)  # type: ignore[no-any-return]
    instants = sorted(points)
    return [points[t] for t in instants], instants


# ------------------------------------------------------------------ GetMetricData, indexed


def _metric_key(namespace: str, name: str, dimensions: Iterable[tuple[str | None, str | None]]) -> tuple[Any, ...]:
    return (namespace, name, tuple(sorted(dimensions)))


def _get_metric_data(
    self: CloudWatchBackend,
    queries: list[dict[str, Any]],
    start_time: datetime,
    end_time: datetime,
    scan_by: str = "TimestampAscending",
) -> list[dict[str, Any]]:
    """moto's GetMetricData for MetricStat and metric math queries, each datum looked at once (see above)."""
    if any(str(q.get("Expression", "")).startswith("SELECT") for q in queries):
        return _MOTO_GET_METRIC_DATA(self, queries, start_time, end_time, scan_by)  # type: ignore[no-any-return]
    start_time = start_time.replace(microsecond=0)
    end_time = end_time.replace(microsecond=0)
    if start_time > end_time:
        raise ValidationError("The parameter EndTime must be greater than StartTime.")
    if start_time == end_time:
        raise ValidationError("The parameter StartTime must not equal parameter EndTime.")
    by_metric: dict[tuple[Any, ...], list[Any]] = {}
    for datum in self.get_all_metrics():
        if start_time <= datum.timestamp < end_time:
            key = _metric_key(datum.namespace, datum.name, ((d.name, d.value) for d in datum.dimensions))
            by_metric.setdefault(key, []).append(datum)
    results: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for query in queries:
        if "MetricStat" not in query:
            continue
        stat_query = query["MetricStat"]
        metric = stat_query["Metric"]
        key = _metric_key(
            metric["Namespace"], metric["MetricName"], ((d["Name"], d["Value"]) for d in metric.get("Dimensions", []))
        )
        period = int(stat_query["Period"])
        unit = stat_query.get("Unit")
        buckets: dict[int, list[Any]] = {}
        for datum in by_metric.get(key, []):
            if unit and datum.unit != unit:
                continue
            buckets.setdefault(int((datum.timestamp - start_time).total_seconds()) // period, []).append(datum)
        stat = stat_query["Stat"]
        timestamps, values = [], []
        for index in sorted(buckets):
            statistics = Statistics([stat], start_time + timedelta(seconds=index * period))
            statistics.metric_data = buckets[index]
            value = statistics.get_statistics_for_type(stat)
            if value is not None:
                timestamps.append(statistics.timestamp)
                values.append(value)
        result = {
            "id": query["Id"],
            "label": query.get("Label") or f"{metric['MetricName']} {stat}",
            "values": values,
            "timestamps": timestamps,
            "status_code": "Complete",
        }
        results.append(result)
        if query.get("ReturnData", True):
            shown.append(result)
    for query in queries:
        if "Expression" in query:
            values, timestamps = _parse_expression(query["Expression"], results)
            shown.append(
                {
                    "id": query["Id"],
                    "label": query.get("Label") or query["Id"],
                    "values": values,
                    "timestamps": timestamps,
                    "status_code": "Complete",
                }
            )
    if scan_by == "TimestampDescending":
        for result in shown:
            result["values"] = list(reversed(result["values"]))
            result["timestamps"] = list(reversed(result["timestamps"]))
    return shown


def play_cloudwatch_statistics() -> None:
    """Percentiles, metric math and an indexed GetMetricData in moto (see above). Idempotent."""
    Statistics.get_statistics_for_type = _statistic  # type: ignore[method-assign]
    cloudwatch_models.parse_expression = _parse_expression
    CloudWatchBackend.get_metric_data = _get_metric_data  # type: ignore[method-assign]


def moto_cloudwatch_statistics() -> None:
    """Undo `play_cloudwatch_statistics`."""
    Statistics.get_statistics_for_type = _MOTO_STATISTIC  # type: ignore[method-assign]
    cloudwatch_models.parse_expression = _MOTO_PARSE_EXPRESSION
    CloudWatchBackend.get_metric_data = _MOTO_GET_METRIC_DATA  # type: ignore[method-assign]


@contextmanager
def cloudwatch_in_process() -> Iterator[None]:
    """For `mock_aws` (in-process): percentiles and metric math while the block runs."""
    already = Statistics.get_statistics_for_type is _statistic  # a local moto server in this process plays it
    play_cloudwatch_statistics()
    try:
        yield
    finally:
        if not already:
            moto_cloudwatch_statistics()
