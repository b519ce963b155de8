"""Variants (tickwork.model.variants): the split holds its weights over 10,000 simulated occurrences and never
changes its mind about a run; what a variant may override, checked at its field; the overrides applied; and the
guard, over seeded histories: it rolls a bad variant back, and a good one never (false alarms counted)."""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError
from tickwork.model.errors import FieldError
from tickwork.model.ids import new_job_id, run_id_for
from tickwork.model.job import JobDefinition
from tickwork.model.variants import (
    BASELINE,
    DEFAULT_GUARD,
    Tally,
    Variant,
    applied,
    guard_verdict,
    merge_patch,
    pick_variant,
    stale_tallies,
    type_versions_of,
    variant_errors,
    with_qualifier,
)

OCCURRENCES = 10_000
# At these weights a share's standard deviation over 10,000 runs is at most 0.5 percentage points: 1.5 is 3 of them.
TOLERANCE_PERCENT = 1.5
START = datetime(2026, 1, 1, tzinfo=UTC)


def occurrences(job_id: str, n: int = OCCURRENCES) -> list[str]:
    """The run ids of a job's n occurrences a minute apart, as the claim names them."""
    return [run_id_for(job_id, START + timedelta(minutes=i)) for i in range(n)]


@pytest.mark.parametrize("weights", [[10], [10, 25], [50, 50], [1, 2, 3]])
def test_the_split_holds_its_weights_over_10000_occurrences(weights: list[int]) -> None:
    variants = [Variant(name=f"v{i}", weight=w) for i, w in enumerate(weights)]
    counts = Counter(pick_variant(run_id, variants) for run_id in occurrences(new_job_id(1_767_225_600_000)))
    expected = {f"v{i}": w for i, w in enumerate(weights)} | {BASELINE: 100 - sum(weights)}
    for name, percent in expected.items():
        assert abs(100 * counts[name] / OCCURRENCES - percent) <= TOLERANCE_PERCENT, (name, counts)
    assert sum(counts.values()) == OCCURRENCES


def test_a_run_keeps_its_variant_whenever_it_is_asked_again() -> None:
    variants = [Variant(name="v2", weight=30)]
    ids = occurrences("j" + "0" * 25, 500)
    first = [pick_variant(run_id, variants) for run_id in ids]
    assert first == [pick_variant(run_id, variants) for run_id in ids]
    assert {"v2", BASELINE} == set(first)


def test_no_variants_picks_nothing_and_all_weights_leave_no_baseline() -> None:
    assert pick_variant("j1.1", []) is None
    assert {pick_variant(r, [Variant(name="all", weight=100)]) for r in occurrences("j" + "1" * 25, 200)} == {"all"}


@pytest.mark.parametrize(
    ("variants", "said"),
    [
        ([{"name": "v2", "weight": 10}, {"name": "v2", "weight": 5}], "used by an earlier variant"),
        ([{"name": "baseline", "weight": 10}], "`baseline` is the job's own runs"),
        ([{"name": "a", "weight": 60}, {"name": "b", "weight": 41}], "add up to 101"),
        ([{"name": "a", "weight": 0}], "greater than or equal to 1"),
        ([{"name": "A", "weight": 5}], "should match pattern"),
        ([{"name": "a", "weight": 5, "target": "no:colons"}], "should match pattern"),
        ([{"name": "a", "weight": 5, "image": "x"}], "Extra inputs"),
    ],
)
def test_a_list_of_variants_is_refused_at_its_field(variants: list[dict[str, object]], said: str) -> None:
    with pytest.raises(ValidationError) as refused:
        JobDefinition.model_validate(
            {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "variants": variants}
        )
    (error,) = refused.value.errors()
    assert error["loc"][0] == "variants"
    assert said in error["msg"]


def _typed(at: str, kind: str, payload: dict[str, object]) -> list[FieldError]:
    """A stand-in for a type's model: `lambda` wants a function_arn, `echo@2` a string `greeting`."""
    if kind == "lambda" and "function_arn" not in payload:
        return [FieldError(f"{at}.payload.function_arn", "Field required")]
    if kind == "echo@2" and not isinstance(payload.get("greeting"), str):
        return [FieldError(f"{at}.payload.greeting", "Input should be a valid string")]
    return []


def _errors(job_type: str, payload: dict[str, object], *variants: Variant) -> list[FieldError]:
    return variant_errors(
        variants,
        at="",
        job_type=job_type,
        payload=payload,
        registered=["echo", "echo@2", "lambda", "http"],
        typed_errors=_typed,
    )


def test_what_a_variant_overrides_is_checked_against_the_job_at_its_field() -> None:
    assert _errors("echo", {}, Variant(name="v", weight=5, type="http")) == [
        FieldError("variants[0].type", "'http' is not a registered version of 'echo' (its versions: echo@2)")
    ]
    assert _errors("echo", {}, Variant(name="v", weight=5, target="live")) == [
        FieldError("variants[0].target", "a target (a function version or alias) is a `lambda` job's only")
    ]
    assert _errors("echo", {}, Variant(name="v", weight=5, type="echo@2")) == [
        FieldError("variants[0].payload.greeting", "Input should be a valid string")
    ]
    assert _errors("echo", {}, Variant(name="v", weight=5, type="echo@2", payload={"greeting": "hi"})) == []
    assert _errors("lambda", {"function_arn": "f"}, Variant(name="v", weight=5, payload={"function_arn": None})) == [
        FieldError("variants[0].payload.function_arn", "Field required")
    ]
    assert _errors("lambda", {"function_arn": "f"}, Variant(name="v", weight=5, target="7")) == []


def test_a_variant_applies_its_type_payload_and_target_and_a_gone_one_runs_the_baseline() -> None:
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:report"
    variants = [Variant(name="v2", weight=10, target="live", payload={"payload": {"rows": 2}, "x": None})]
    base = {"function_arn": arn + ":3", "payload": {"rows": 1, "keep": True}, "x": 1}
    assert applied("lambda", base, variants, "v2") == (
        "lambda",
        {"function_arn": arn + ":live", "payload": {"rows": 2, "keep": True}},
    )
    assert applied("lambda", base, variants, BASELINE) == ("lambda", base)
    assert applied("lambda", base, variants, "rolled-back") == ("lambda", base)
    assert applied("echo", {}, [Variant(name="b", weight=1, type="echo@2")], "b")[0] == "echo@2"
    assert with_qualifier("report", "$LATEST") == "report:$LATEST"
    assert merge_patch({"a": [1]}, {"a": {"b": 1}}) == {"a": {"b": 1}}
    assert type_versions_of("echo@2", ["echo", "echo@2", "echo@3", "echoes@1"]) == ["echo@3"]


def test_the_counts_a_change_makes_stale() -> None:
    v2, v3 = Variant(name="v2", weight=10, target="7"), Variant(name="v3", weight=5)
    assert stale_tallies([v2, v3], [v2.model_copy(update={"weight": 50}), v3], baseline_changed=False) == []
    assert stale_tallies([v2, v3], [v2.model_copy(update={"target": "8"})], baseline_changed=False) == ["v2", "v3"]
    assert stale_tallies([v2], [v2, v3], baseline_changed=False) == ["v3"]
    assert stale_tallies([v2], [v3], baseline_changed=True) == [BASELINE, "v2", "v3"]


# ------------------------------------------------------------------------------------------------ the guard

HISTORIES = 1_000
RUNS_PER_HISTORY = 2_000
VARIANT_SHARE = 0.2
BASELINE_FAILURES = 0.05


def first_rollback(seed: int, variant_failures: float) -> int | None:
    """One seeded history of runs split 20/80, each counted as its outcome is written and the guard asked then:
    the variant's run count at which it was rolled back, or None if it never was."""
    rng = random.Random(seed)
    variant, baseline = Tally(), Tally()
    for _ in range(RUNS_PER_HISTORY):
        if rng.random() < VARIANT_SHARE:
            failed = rng.random() < variant_failures
            variant = Tally(variant.ended + 1, variant.failed + failed)
            if guard_verdict(variant, baseline).roll_back:
                return variant.ended
        else:
            baseline = Tally(baseline.ended + 1, baseline.failed + (rng.random() < BASELINE_FAILURES))
    return None


def rollbacks(variant_failures: float) -> list[int]:
    fired = (first_rollback(seed, variant_failures) for seed in range(HISTORIES))
    return [at for at in fired if at is not None]


def test_the_guard_never_rolls_back_a_good_variant() -> None:
    """As good as the baseline (5 % failures each): 0 false alarms in 1,000 histories of 2,000 runs."""
    assert rollbacks(BASELINE_FAILURES) == []


def test_the_guard_false_alarm_rate_at_the_margin_is_under_its_alpha() -> None:
    """Exactly at the margin (10 % against 5 %), a rollback is a false alarm: at most alpha (5 %) by construction;
    measured, 24 in 1,000 histories (2.4 %)."""
    false_alarms = len(rollbacks(BASELINE_FAILURES + DEFAULT_GUARD.margin))
    assert false_alarms / HISTORIES <= DEFAULT_GUARD.alpha
    assert false_alarms == 24


def test_the_guard_rolls_back_a_bad_variant_within_its_first_looks() -> None:
    """30 % failures against 5 %: rolled back in every history, at the first look (30 of its runs) in 735 of
    1,000, by the third (90) in 955, by 210 runs in all. 20 % against 5 %: in 952 of 1,000, by 420 runs."""
    fired = Counter(rollbacks(0.30))
    assert sum(fired.values()) == HISTORIES
    assert fired[DEFAULT_GUARD.min_runs] == 735
    assert sum(n for at, n in fired.items() if at <= 3 * DEFAULT_GUARD.min_runs) == 955
    assert max(fired) == 210
    assert len(rollbacks(0.20)) == 952


def test_the_guard_looks_only_at_multiples_of_its_minimum_with_enough_baseline_runs() -> None:
    bad = Tally(30, 30)
    assert guard_verdict(bad, Tally(30, 0)).roll_back
    assert not guard_verdict(Tally(29, 29), Tally(30, 0)).roll_back
    assert not guard_verdict(Tally(31, 31), Tally(30, 0)).roll_back
    assert not guard_verdict(bad, Tally(29, 0)).roll_back
    verdict = guard_verdict(bad, Tally(100, 5))
    assert verdict.roll_back
    assert "30/30 (100.0%)" in verdict.reason
    assert "5/100 (5.0%)" in verdict.reason


def test_the_worked_example_in_docs_versions_runs() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "versions.md").read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", page, re.S)[-1]  # the last: "In Python"
    exec(compile(example, "docs/versions.md", "exec"), {})
