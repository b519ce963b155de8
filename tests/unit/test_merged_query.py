"""tickwork.store.merged_query: several partitions read at once and merged newest first, page by page with one
position, in order and each item once, whatever the filter leaves and however the budget cuts a page short. Played
on an in-memory Query (no AWS): each partition a list of entries, read newest first, `Limit` entries a call."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tickwork.store.merged_query import merged_page

SORT = "tenant_sort"


class FakeIndex:
    """Partitions of entries `{SORT: "<13 digits>#<id>", "match": bool}`; a Query evaluates `Limit` entries below
    the request's `below` (its key condition), newest first, and returns those that match (its filter)."""

    def __init__(self, partitions: dict[str, list[tuple[int, bool]]]) -> None:
        self.partitions = {
            name: sorted(
                ({SORT: f"{at:013d}#{name}-{at}", "match": match} for at, match in entries),
                key=lambda e: e[SORT],
                reverse=True,
            )
            for name, entries in partitions.items()
        }
        self.queries = 0

    def request(self, partition: str, below: str | None, limit: int) -> dict[str, Any]:
        return {"partition": partition, "below": below, "Limit": limit}

    def query(self, **request: Any) -> dict[str, Any]:
        self.queries += 1
        entries = [
            e for e in self.partitions[request["partition"]] if request["below"] is None or e[SORT] < request["below"]
        ]
        start = request.get("ExclusiveStartKey")
        if start is not None:
            entries = [e for e in entries if e[SORT] < start[SORT]["S"]]
        evaluated = entries[: request["Limit"]]
        answer: dict[str, Any] = {
            "Items": [{SORT: {"S": e[SORT]}, "match": {"BOOL": e["match"]}} for e in evaluated if e["match"]]
        }
        if len(entries) > len(evaluated):
            answer["LastEvaluatedKey"] = {SORT: {"S": evaluated[-1][SORT]}}
        return answer

    def every_match(self) -> list[str]:
        return sorted((e[SORT] for p in self.partitions.values() for e in p if e["match"]), reverse=True)


def read_all(index: FakeIndex, *, limit: int, read_limit: int, budget: int) -> tuple[list[str], list[int]]:
    """Every page from the first, as a client follows the cursor: the positions seen, and each page's size."""
    seen: list[str] = []
    sizes: list[int] = []
    below = None
    for _ in range(1000):
        requests = [index.request(name, below, read_limit) for name in index.partitions]
        page = merged_page(index.query, requests, sort_attr=SORT, limit=limit, budget=budget, below=below)
        seen += [e[SORT] for e in page.entries]
        sizes.append(len(page.entries))
        if page.below is None:
            return seen, sizes
        below = page.below
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize("seed", range(5))
def test_pages_come_newest_first_across_partitions_each_item_once(seed):
    rng = random.Random(seed)
    index = FakeIndex({f"t{n}": [(rng.randrange(10**6), True) for _ in range(rng.randrange(0, 12))] for n in range(4)})
    seen, sizes = read_all(index, limit=5, read_limit=6, budget=100)
    assert seen == index.every_match()
    assert all(size == 5 for size in sizes[:-1])


@pytest.mark.parametrize("seed", range(5))
def test_a_selective_filter_may_cut_pages_short_but_keeps_them_in_order_and_complete(seed):
    rng = random.Random(seed)
    partitions = {f"t{n}": [(rng.randrange(10**6), rng.random() < 0.1) for _ in range(60)] for n in range(3)}
    index = FakeIndex(partitions)
    seen, sizes = read_all(index, limit=4, read_limit=5, budget=5)
    assert seen == index.every_match()
    assert max(sizes) <= 4


def test_each_page_reads_every_partition_once_and_more_only_within_its_budget():
    index = FakeIndex({f"t{n}": [(at, at % 7 == 0) for at in range(n, 300, 3)] for n in range(3)})
    requests = [index.request(name, None, 5) for name in index.partitions]
    merged_page(index.query, requests, sort_attr=SORT, limit=50, budget=4)
    assert index.queries == 4
    index.queries = 0
    merged_page(index.query, requests, sort_attr=SORT, limit=50, budget=1)
    assert index.queries == 3  # every partition at least once, whatever the budget


def test_no_partitions_is_an_empty_last_page():
    page = merged_page(FakeIndex({}).query, [], sort_attr=SORT, limit=10, budget=10)
    assert (page.entries, page.below) == ([], None)
