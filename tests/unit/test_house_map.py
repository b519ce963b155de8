"""docs/house.md cannot drift: it is generated from the modules' docstrings (tickwork_local.generate.house_map),
and every `tickwork.<module>` the README and docs/ name exists."""

from __future__ import annotations

from tickwork_local.generate import house_map


def test_the_house_map_lists_every_module_and_the_docs_name_only_real_ones() -> None:
    assert house_map.problems() == [], "run: .venv/bin/python -m tickwork_local.generate.house_map"


def test_a_module_missing_from_the_map_is_caught() -> None:
    house = house_map.HOUSE.read_text(encoding="utf-8")
    stale = house.replace("| `shared/tickwork/tick/fanout.py` |", "| `shared/tickwork/tick/fan_out.py` |")
    assert stale != house
    assert house_map.render(stale) == house


def test_a_named_module_or_name_that_does_not_exist_is_caught() -> None:
    text = "tickwork.tick.dispatch.Dispatcher, tickwork.model.job, tickwork.dispatch, tickwork.model.job.Nothing"
    assert house_map.missing_modules(text) == ["tickwork.dispatch", "tickwork.model.job.Nothing"]
