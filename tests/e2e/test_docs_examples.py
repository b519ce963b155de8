"""The docs' examples, run as written against one `tickwork dev`: the blocks marked
`<!-- example: run as written against `tickwork dev` by tests/e2e/test_docs_examples.py -->` in the pages below,
each page's blocks in order, in one shell environment (tests/e2e/doc_examples.py says what is not as written)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import ROOT, Node
from tests.e2e.doc_examples import marked_examples, run_steps

pytestmark = pytest.mark.e2e

MARKER = "<!-- example: run as written against `tickwork dev` by tests/e2e/test_docs_examples.py -->"
PAGES = ["docs/workflows.md", "docs/api.md", "docs/fairness.md", "docs/operations.md", "docs/versions.md"]


def test_the_marked_pages_are_the_pages_with_marks():
    marked = sorted(
        str(page.relative_to(ROOT)) for page in ROOT.glob("docs/**/*.md") if MARKER in page.read_text("utf-8")
    )
    assert marked == sorted(PAGES)


def test_the_workflow_files_the_docs_show_are_the_files_they_create():
    text = (ROOT / "docs/workflows.md").read_text(encoding="utf-8")
    shown = text.split("`examples/workflows/nightly-etl.json`:\n\n```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(shown) == json.loads((ROOT / "examples/workflows/nightly-etl.json").read_text("utf-8"))
    failing = json.loads((ROOT / "examples/workflows/nightly-etl-failing.json").read_text("utf-8"))
    (extract, *rest) = failing["steps"]
    assert extract["payload"]["fail_attempts"] == 99
    assert extract["retry"] == {"max_attempts": 1}
    assert rest == json.loads(shown)["steps"][1:]
    trip = text.split("`examples/workflows/book-trip.json`:\n\n```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(trip) == json.loads((ROOT / "examples/workflows/book-trip.json").read_text("utf-8"))


@pytest.mark.parametrize("page", PAGES)
def test_the_page_examples_run_as_written(node: Node, page: str) -> None:
    blocks = marked_examples(ROOT / page, MARKER)
    assert blocks, f"{page} has no marked example"
    placeholders: dict[str, str] = {}
    run_steps([step for block in blocks for step in block], node.api.url, placeholders)
