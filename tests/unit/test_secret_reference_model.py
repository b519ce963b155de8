"""Secret references, the pure model: how one is read, which a tenant may name, where they are in a payload, and
a payload's references replaced by their values; the mask that hides a run's values."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError
from tickwork.jobtypes.http import HttpPayload
from tickwork.model.secret_references import (
    SecretAllowance,
    SecretKind,
    SecretOrStr,
    SecretReference,
    reference_errors,
    references_in,
    revealed,
    with_values,
)
from tickwork.model.targets import TargetRules
from tickwork.observability import SecretMask

ACME = SecretAllowance("tickwork/", "acme")


@pytest.mark.parametrize(
    ("written", "kind", "name", "key"),
    [
        ({"$secret": "tickwork/acme/token"}, SecretKind.SECRET, "tickwork/acme/token", None),
        ({"$secret": "tickwork/acme/db#password"}, SecretKind.SECRET, "tickwork/acme/db", "password"),
        (
            {"$secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:tickwork/acme/db-AbCdEf#user"},
            SecretKind.SECRET,
            "tickwork/acme/db-AbCdEf",
            "user",
        ),
        ({"$parameter": "/tickwork/acme/api-key"}, SecretKind.PARAMETER, "tickwork/acme/api-key", None),
        ({"$parameter": "tickwork/acme/api-key"}, SecretKind.PARAMETER, "tickwork/acme/api-key", None),
    ],
)
def test_a_reference_is_read_with_the_name_its_allowance_is_checked_on(written, kind, name, key):
    reference = SecretReference.of(written)
    assert (reference.kind, reference.name, reference.json_key) == (kind, name, key)
    assert reference.refusal(ACME) is None


@pytest.mark.parametrize(
    ("written", "fragment"),
    [
        ({"$secret": "a", "$parameter": "b"}, "one key"),
        ({"$secret": "tickwork/acme/x", "other": 1}, "one key"),
        ({"$secret": ""}, "non-empty string"),
        ({"$secret": 5}, "non-empty string"),
        ({"$secret": "tickwork/acme/x#"}, "JSON key"),
        ({"$secret": "tickwork/acme/x y"}, "Secrets Manager ARN or name"),
        ({"$parameter": "tickwork/acme/x#key"}, "SSM parameter name"),
    ],
)
def test_a_malformed_reference_says_what_is_wrong(written, fragment):
    with pytest.raises(ValueError, match=fragment):
        SecretReference.of(written)


@pytest.mark.parametrize(
    ("written", "allowance", "fragment"),
    [
        ({"$secret": "tickwork/globex/token"}, ACME, "must start with 'tickwork/acme/'"),
        ({"$secret": "tickwork/acme-2/token"}, ACME, "must start with 'tickwork/acme/'"),
        ({"$secret": "tickwork/acme/"}, ACME, "must start with"),  # the prefix alone names nothing
        ({"$secret": "other/acme/token"}, ACME, "must start with"),
        ({"$parameter": "/tickwork/globex/key"}, ACME, "must start with"),
        (
            {"$secret": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:tickwork/globex/db-AbCdEf"},
            ACME,
            "must start with",
        ),
        ({"$secret": "tickwork/acme/token"}, SecretAllowance("tickwork/", None), "unavailable to tenant None"),
        # A tenant with a slash in its name would share names with another (tenant a's `b/x` is tenant a/b's `x`).
        ({"$secret": "tickwork/a/b/x"}, SecretAllowance("tickwork/", "a/b"), "unavailable to tenant 'a/b'"),
    ],
)
def test_a_reference_outside_the_tenants_allowance_is_refused_naming_it(written, allowance, fragment):
    reason = SecretReference.of(written).refusal(allowance)
    assert reason is not None
    assert fragment in reason
    assert json.dumps(written) in reason


def test_the_stacks_prefix_decides_the_allowance():
    reference = SecretReference.of({"$secret": "prod/acme/token"})
    assert reference.refusal(SecretAllowance("prod/", "acme")) is None
    assert reference.refusal(TargetRules().secrets_for("acme")) is not None  # the default prefix is tickwork/


def test_references_are_found_anywhere_in_a_payload_with_where_they_are():
    payload = {
        "url": "https://example.com",
        "headers": {"Authorization": {"$secret": "tickwork/acme/a"}},
        "body": {"items": [{"key": {"$parameter": "/tickwork/acme/b"}}, "plain"]},
    }
    assert [at for at, _ in references_in(payload)] == [("headers", "Authorization"), ("body", "items", 0, "key")]


def test_reference_errors_name_each_bad_reference_and_only_those():
    payload = {
        "ok": {"$secret": "tickwork/acme/a"},
        "theirs": [{"$secret": "tickwork/globex/a"}],
        "broken": {"$parameter": ""},
    }
    errors = dict(reference_errors(payload, ACME))
    assert set(errors) == {("theirs", 0), ("broken",)}
    assert "tickwork/acme/" in errors[("theirs", 0)]


def test_with_values_replaces_each_reference_and_leaves_the_stored_payload_as_it_was():
    stored = {"headers": {"Authorization": {"$secret": "tickwork/acme/a#k"}}, "n": 1, "list": [{"$parameter": "p"}]}
    seen = []

    def value_of(at, reference):
        seen.append((at, reference.kind))
        return f"value-of-{reference.source}"

    resolved = with_values(stored, value_of)
    assert resolved == {"headers": {"Authorization": "value-of-tickwork/acme/a"}, "n": 1, "list": ["value-of-p"]}
    assert stored["headers"]["Authorization"] == {"$secret": "tickwork/acme/a#k"}
    assert seen == [(("headers", "Authorization"), SecretKind.SECRET), (("list", 0), SecretKind.PARAMETER)]


def test_a_field_typed_to_take_a_secret_takes_a_string_or_a_well_formed_reference_only():
    class Model(BaseModel):
        token: SecretOrStr

    assert Model(token="plain").token == "plain"
    assert Model.model_validate({"token": {"$secret": "tickwork/acme/x"}}).token == {"$secret": "tickwork/acme/x"}
    with pytest.raises(ValidationError):
        Model.model_validate({"token": {"$secret": "a", "extra": "b"}})
    with pytest.raises(TypeError, match="unresolved"):
        revealed({"$secret": "tickwork/acme/x"})
    assert revealed("plain") == "plain"


def test_the_http_types_headers_and_query_take_references_its_url_does_not():
    context = TargetRules().context("acme")
    parsed = HttpPayload.model_validate(
        {
            "url": "https://example.com/",
            "headers": {"Authorization": {"$secret": "tickwork/acme/token"}},
            "query": {"key": {"$parameter": "/tickwork/acme/key"}},
        },
        context=context,
    )
    assert parsed.headers["Authorization"] == {"$secret": "tickwork/acme/token"}
    with pytest.raises(ValidationError):
        HttpPayload.model_validate({"url": {"$secret": "tickwork/acme/url"}}, context=context)
    schema = HttpPayload.model_json_schema()
    assert "$defs" not in schema  # the OpenAPI document keeps the whole payload schema


def test_the_mask_hides_values_while_a_run_uses_them_and_as_json_spells_them():
    mask = SecretMask()
    value = 'p"ss\\word-1234'
    assert mask.value({"a": value}) == {"a": value}  # nothing hidden: as it is
    mask.hide([value])
    mask.hide([value])  # two runs use it
    assert mask.value({"a": [f"x {value} y"], value: 1}) == {"a": ["x *** y"], "***": 1}
    assert mask.text(json.dumps({"a": value})) == '{"a": "***"}'
    mask.unhide([value])
    assert mask.text(value) == "***"  # one run still uses it
    mask.unhide([value])
    assert mask.text(value) == value


def test_a_secret_by_arn_must_be_this_stacks_account_and_regions():
    here = SecretAllowance("tickwork/", "acme", "arn:aws:secretsmanager:us-east-1:123456789012:secret:")
    ours = SecretReference.of(
        {"$secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:tickwork/acme/t-AbCdEf"}
    )
    assert ours.refusal(here) is None
    for elsewhere in (
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:",
        "arn:aws:secretsmanager:us-east-1:999999999999:secret:",
    ):
        reference = SecretReference.of({"$secret": f"{elsewhere}tickwork/acme/t-AbCdEf"})
        reason = reference.refusal(here)
        assert reason is not None
        assert "another account's or region's" in reason
    assert SecretReference.of({"$secret": "tickwork/acme/t"}).refusal(here) is None  # a name is this stack's
