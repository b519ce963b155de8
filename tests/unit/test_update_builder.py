"""The store's one builder of variable update expressions (tickwork.store.conditional.Update): the clauses, and
only the names and values they use (DynamoDB refuses an unused one)."""

from __future__ import annotations

from tickwork.store.conditional import Update


def test_an_update_names_and_numbers_only_what_its_clauses_use():
    update = Update({"#status": "status"}, owner="me")
    update.conditions += ["lease_owner = :owner", "#status = :running"]
    update.values["running"] = "RUNNING"
    update.set("#status", "SUCCEEDED")
    update.set(update.name("result"), {"n": 1})
    update.removes += ["lease_owner", update.name("error")]
    assert update.expression() == "SET #status = :v2, #n1 = :v3 REMOVE lease_owner, #n2"
    assert update.condition() == "lease_owner = :owner AND #status = :running"
    assert update.names == {"#status": "status", "#n1": "result", "#n2": "error"}
    assert update.attribute_values() == {
        ":owner": {"S": "me"},
        ":running": {"S": "RUNNING"},
        ":v2": {"S": "SUCCEEDED"},
        ":v3": {"M": {"n": {"N": "1"}}},
    }


def test_an_encoded_value_is_sent_as_given_and_an_update_of_removes_only_says_remove():
    update = Update()
    update.set("name", {"S": "nightly"}, encoded=True)
    assert update.attribute_values() == {":v0": {"S": "nightly"}}
    removing = Update()
    removing.removes.append("due_at")
    assert removing.expression() == "REMOVE due_at"
