"""docs/local.md's table of `tickwork dev`'s options cannot drift: it is generated from the command's own options
(tickwork_local.generate.options_doc), the ones `tickwork dev --help` prints."""

from __future__ import annotations

from tickwork_local.generate import options_doc


def test_the_options_table_is_the_commands_own() -> None:
    assert options_doc.main(["--check"]) == 0, "run: .venv/bin/python -m tickwork_local.generate.options_doc"


def test_every_option_of_tickwork_dev_has_its_row_and_an_option_missing_from_the_page_is_caught() -> None:
    page = options_doc.LOCAL_DOC.read_text(encoding="utf-8")
    for option in options_doc.dev_command().params:
        assert f"| `{option.opts[0]}" in page, option.opts
    stale = page.replace("| `--fault-seed N` | 0 |", "| `--fault-seed N` | 1 |")
    assert stale != page
    assert options_doc.render(stale) == page
