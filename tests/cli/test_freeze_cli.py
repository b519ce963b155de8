"""`tickwork freezes create` and `tickwork freezes lift`, as a deploy pipeline calls them: the freeze's id printed
alone."""

from __future__ import annotations

from datetime import timedelta

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_freezes_create_prints_its_id_and_freezes_lift_lifts_it(cli, pipeline):
    result = cli("freezes", "create", "--for", "30m", "--tag", "team=payments", "--reason", "deploy 1.42", output=None)
    assert result.exit_code == 0, result.output
    freeze_id = result.stdout.strip()
    assert freeze_id.startswith("f"), result.output
    stored = pipeline.services.freeze_records.get(freeze_id)
    assert stored is not None
    assert (stored.selector.tags, stored.reason) == ({"team": "payments"}, "deploy 1.42")
    assert stored.until - stored.from_ == timedelta(minutes=30)
    lifted = cli.json("freezes", "lift", freeze_id)
    assert lifted["lifted_at"] is not None


def test_a_freeze_with_no_reason_is_a_usage_error(cli):
    assert cli("freezes", "create", "--for", "30m", "--all").exit_code == 2


def test_a_freeze_ending_before_it_starts_is_refused_by_the_api(cli):
    result = cli("freezes", "create", "--from", "+1h", "--until", "+30m", "--all", "--reason", "r")
    assert result.exit_code == 1
    assert "until" in result.output
