"""Table's audited writes (docs/security.md "Audit trail"): the change and its record in one transaction, whose
outcome is read as a single conditional write's is."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from tickwork.store.conditional import CONFLICT_REFUSALS, TRANSACTION_CONFLICT_TRIES, Table

KEY = {"pk": {"S": "JOB#j"}, "sk": {"S": "JOB"}}
AUDIT = {"pk": {"S": "AUDIT#acme"}, "sk": {"S": "0000000000001#a1"}}


def cancelled(*codes: str, item: dict[str, Any] | None = None) -> ClientError:
    reasons: list[dict[str, Any]] = [{"Code": code} for code in codes]
    if item is not None:
        reasons[0]["Item"] = item
    response: Any = {"Error": {"Code": "TransactionCanceledException"}, "CancellationReasons": reasons}
    return ClientError(response, "TransactWriteItems")


class Client:
    """Answers each TransactWriteItems with the next of `answers` (an error to raise, or None: written)."""

    def __init__(self, *answers: ClientError | None) -> None:
        self.answers = list(answers)
        self.sent: list[list[dict[str, Any]]] = []

    def transact_write_items(self, TransactItems: list[dict[str, Any]]) -> dict[str, Any]:
        self.sent.append(TransactItems)
        answer = self.answers.pop(0)
        if answer is not None:
            raise answer
        return {}


def update(client: Client) -> tuple[bool, dict[str, Any]]:
    return Table(client, "t").update_if_audited(KEY, "SET v = :v", "v = :old", None, {":v": {"N": "2"}}, AUDIT)


def test_the_change_and_its_record_go_in_one_transaction() -> None:
    client = Client(None)
    assert update(client) == (True, {})
    ((change, record),) = client.sent
    assert change["Update"]["Key"] == KEY
    assert record["Put"]["Item"] == AUDIT
    assert record["Put"]["ConditionExpression"] == "attribute_not_exists(pk)"


def test_a_change_whose_condition_fails_is_a_false_with_the_item_it_saw_and_no_record() -> None:
    client = Client(cancelled("ConditionalCheckFailed", "None", item={"pk": {"S": "JOB#j"}, "v": {"N": "3"}}))
    assert update(client) == (False, {"pk": "JOB#j", "v": 3})


def test_a_transaction_another_one_cancelled_is_sent_again() -> None:
    client = Client(cancelled("TransactionConflict", "None"), None)
    assert update(client) == (True, {})
    assert len(client.sent) == 2


def test_a_conflict_that_lasts_is_an_error_after_its_tries() -> None:
    client = Client(*[cancelled("TransactionConflict", "None")] * TRANSACTION_CONFLICT_TRIES)
    with pytest.raises(ClientError):
        update(client)
    assert len(client.sent) == TRANSACTION_CONFLICT_TRIES


def test_a_record_id_taken_already_is_an_error_not_a_lost_change() -> None:
    with pytest.raises(ClientError):
        update(Client(cancelled("None", "ConditionalCheckFailed")))


def test_a_change_lost_whose_record_is_there_already_is_a_false() -> None:
    """The second confirm of an audit intent: the intent is gone and its record is there, written by the first."""
    assert update(Client(cancelled("ConditionalCheckFailed", "ConditionalCheckFailed"))) == (False, {})


def test_a_transaction_cannot_be_asked_for_the_written_item() -> None:
    with pytest.raises(ValueError, match="returns no attributes"):
        Table(Client(), "t")._attempt("Update", None, AUDIT, Key=KEY, ReturnValues="ALL_NEW")


def single_write_refused(*codes: str) -> tuple[Any, Any]:
    """A real DynamoDB client whose UpdateItem answers are `codes` (errors) and then a success, without AWS."""
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(client)
    for code in codes:
        stubber.add_client_error("update_item", service_error_code=code)
    stubber.add_response("update_item", {"Attributes": {"v": {"N": "2"}}})
    stubber.activate()
    return client, stubber


@pytest.mark.parametrize("code", sorted(CONFLICT_REFUSALS))
@pytest.mark.parametrize("refusals", [1, TRANSACTION_CONFLICT_TRIES - 1])
def test_a_single_write_refused_while_another_write_holds_its_item_is_sent_again(code: str, refusals: int) -> None:
    """A tick's claim or an executor's heartbeat on an item an API change's transaction holds is refused, unapplied,
    with TransactionConflictException (which the SDK does not retry); in an MRSC global table, a write to an item
    another region is writing, with ReplicatedWriteConflictException past the SDK's retries (docs/regions.md): sent
    again, not an error of the tick's or the run's."""
    client, stubber = single_write_refused(*[code] * refusals)
    table = Table(client, "t")
    assert table.update_if_returning_new(KEY, "SET v = :v", "v = :old", None, {":v": {"N": "2"}}) == (True, {"v": 2})
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize("code", sorted(CONFLICT_REFUSALS))
def test_a_single_write_refused_by_conflicts_every_time_is_an_error(code: str) -> None:
    client, _ = single_write_refused(*[code] * TRANSACTION_CONFLICT_TRIES)
    with pytest.raises(ClientError, match=code):
        Table(client, "t").update_if_returning_new(KEY, "SET v = :v", "v = :old", None, {":v": {"N": "2"}})
