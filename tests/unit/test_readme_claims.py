"""The README's claims are true today: what it says the API takes is in the OpenAPI document, the figures it quotes
are the ones docs/benchmarks.md and docs/reliability.md measured, every page of docs/ is in its table, and every
link, `make` target and route it names exists. (Its examples are run by tests/e2e/test_readme_examples.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPENAPI = json.loads((ROOT / "functions/api/openapi.json").read_text(encoding="utf-8"))
BENCHMARKS = (ROOT / "docs/benchmarks.md").read_text(encoding="utf-8")
RELIABILITY = (ROOT / "docs/reliability.md").read_text(encoding="utf-8")


def enum(name: str) -> set[str]:
    return set(OPENAPI["components"]["schemas"][name]["enum"])


def row(label: str) -> list[str]:
    """The cells of the README table row whose first cell is `label`."""
    for line in README.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == label:
            return cells
    raise AssertionError(f"README has no table row {label!r}")


def number(text: str) -> float:
    return float(text.replace(",", ""))


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, re.M):
        text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
        found.add(text.replace(" ", "-"))
    return found


def test_the_comparison_names_every_overlap_and_catch_up_policy_the_api_takes_and_no_other() -> None:
    named = set(re.findall(r"`([A-Z_]+)`", row("Overlap, catch-up")[1]))
    assert named == enum("OverlapPolicy") | enum("CatchupPolicy")


def test_the_skip_reasons_the_comparison_names_are_the_apis() -> None:
    listed = re.search(r"skipped with its reason \(([^)]*)\)", row("Each occurrence")[1])
    assert listed is not None
    reasons = {reason.strip() for reason in listed.group(1).split(",")} - {"..."}
    assert reasons
    assert reasons <= enum("SkipReason")


def test_every_route_the_readme_names_is_in_the_openapi_document() -> None:
    named = re.findall(r"\b(GET|POST|PUT|PATCH|DELETE) (/v1/[\w/{}-]*)", README)
    assert named
    for method, path in named:
        assert method.lower() in OPENAPI["paths"].get(path, {}), f"{method} {path}"


def test_every_make_target_the_readme_names_exists() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    named = set(re.findall(r"\bmake ([a-z][\w-]*)", README))
    assert {"dev", "test"} <= named
    assert named <= targets, named - targets


def test_every_page_of_docs_is_in_the_docs_table() -> None:
    docs_table = README.split("## Docs", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)\)", docs_table))
    assert linked == {page.name for page in (ROOT / "docs").glob("*.md")}


@pytest.mark.parametrize("target", sorted(set(re.findall(r"\]\(([^)\s]+)\)", README))))
def test_every_link_in_the_readme_resolves(target: str) -> None:
    if target.startswith(("http://", "https://")):
        return
    path, _, anchor = target.partition("#")
    assert (ROOT / path).exists(), target
    if anchor and path.endswith(".md"):
        assert anchor in anchors((ROOT / path).read_text(encoding="utf-8")), target


def test_the_cost_figures_are_the_benchmarks() -> None:
    measured = re.search(r"Cost per million runs: \*\*\$([\d.]+)\*\* vs \*\*\$([\d.]+)\*\*", BENCHMARKS)
    inline = re.search(r"\*\*\$([\d.]+) per million runs, ratio", BENCHMARKS)
    assert measured
    assert inline
    tickwork, eventbridge = measured.groups()
    assert row("Cost per million runs")[1:3] == [
        f"${tickwork}; ${inline.group(1)} with small results kept inline",
        f"${eventbridge} for the same work (our model)",
    ]
    assert f"${tickwork} per million one-shot runs against ${eventbridge} for EventBridge Scheduler" in README


def test_the_requests_and_write_units_per_run_are_the_benchmarks() -> None:
    measured = re.search(r"\*\*([\d.]+) billable requests\*\* .*? and \*\*([\d.]+) DynamoDB WRU\*\*", BENCHMARKS)
    claimed = re.search(r"([\d.]+) billable requests and ([\d.]+) DynamoDB write units per run", README)
    assert measured
    assert claimed
    assert claimed.groups() == measured.groups()


def test_the_start_lateness_is_the_benchmarks() -> None:
    measured = re.search(r"Start lateness p99: \*\*(\d+) ms\*\* \(p50 (\d+) ms", BENCHMARKS)
    claimed = re.search(r"p50 ([\d,]+) ms, p99 ([\d,]+) ms, \*\*0 early\*\*", README)
    assert measured
    assert claimed
    assert (number(claimed.group(1)), number(claimed.group(2))) == (
        number(measured.group(2)),
        number(measured.group(1)),
    )
    assert f"p99 {claimed.group(2)} ms, measured locally" in row("When a run starts")[1]


def test_the_soak_figures_are_the_reliability_pages() -> None:
    claimed = re.search(r"([\d,]+) runs\):\s+\*\*0 lost, 0 duplicated, 0 stuck, 0 wrong, 0 early\*\*", README)
    assert claimed
    assert claimed.group(1) in RELIABILITY or str(int(number(claimed.group(1)))) in RELIABILITY
