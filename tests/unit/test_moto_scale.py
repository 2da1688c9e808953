"""The local storage's moto, made to cost what a request touches, keeps DynamoDB's answers.

A cancelled TransactWriteItems saves and restores only the items it names (moto itself copies whole
tables); a table Query reads one partition (moto itself sorts the whole table). Both are held against
what DynamoDB answers: a cancelled transaction changes nothing, touched or untouched, and gives one
cancellation reason per item; a Query returns the same items, order and pages as the table would.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.store import DynamoStore
from botocore.exceptions import ClientError


def _all(store: DynamoStore) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": store.table}
    while True:
        page = store.ddb.scan(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=lambda i: (i["pk"]["S"], i["sk"]["S"]))
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _seed(store: DynamoStore) -> None:
    for p in range(4):
        for s in range(6):
            store.ddb.put_item(
                TableName=store.table,
                Item={**_key(f"P{p}", f"s{s:02d}"), "n": {"N": str(s)}, "tags": {"SS": ["a", "b"]}, "m": {"M": {}}},
            )


def test_a_cancelled_transaction_leaves_every_item_as_it_was(store: DynamoStore) -> None:
    _seed(store)
    before = _all(store)
    t = store.table
    items: list[dict[str, Any]] = [
        # moto's update changes the stored item in place: the restore must put the old one back.
        {
            "Update": {
                "TableName": t,
                "Key": _key("P0", "s00"),
                "UpdateExpression": "SET n = n + :one, m.x = :one ADD tags :c REMOVE nope",
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":c": {"SS": ["c"]}},
            }
        },
        {"Delete": {"TableName": t, "Key": _key("P1", "s03")}},
        {"Put": {"TableName": t, "Item": {**_key("P9", "new"), "n": {"N": "1"}}}},
        {"Put": {"TableName": t, "Item": {**_key("P2", "s01"), "n": {"N": "99"}}}},
        {
            "ConditionCheck": {
                "TableName": t,
                "Key": _key("P3", "s05"),
                "ConditionExpression": "n = :wrong",
                "ExpressionAttributeValues": {":wrong": {"N": "-1"}},
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        },
    ]
    with pytest.raises(ClientError) as caught:
        store.ddb.transact_write_items(TransactItems=items)
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    reasons: Any = error["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["None", "None", "None", "None", "ConditionalCheckFailed"]
    assert reasons[4]["Item"]["n"] == {"N": "5"}
    assert _all(store) == before


def test_a_transaction_naming_one_item_twice_changes_nothing(store: DynamoStore) -> None:
    _seed(store)
    before = _all(store)
    t = store.table
    with pytest.raises(ClientError) as caught:
        store.ddb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": t, "Item": {**_key("P0", "s01"), "n": {"N": "7"}}}},
                {"Delete": {"TableName": t, "Key": _key("P0", "s02")}},
                {"Delete": {"TableName": t, "Key": _key("P0", "s01")}},
            ]
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert _all(store) == before


def test_a_committed_transaction_applies_every_item(store: DynamoStore) -> None:
    _seed(store)
    t = store.table
    store.ddb.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": t,
                    "Key": _key("P0", "s00"),
                    "UpdateExpression": "SET n = n + :one",
                    "ConditionExpression": "n = :zero",
                    "ExpressionAttributeValues": {":one": {"N": "1"}, ":zero": {"N": "0"}},
                }
            },
            {"Delete": {"TableName": t, "Key": _key("P1", "s03")}},
            {"Put": {"TableName": t, "Item": {**_key("P9", "new")}}},
        ]
    )
    after = {(i["pk"]["S"], i["sk"]["S"]): i for i in _all(store)}
    assert after[("P0", "s00")]["n"] == {"N": "1"}
    assert ("P1", "s03") not in after
    assert ("P9", "new") in after


QUERIES: list[dict[str, Any]] = [
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "P2"}}},
    {
        "KeyConditionExpression": "pk = :p AND begins_with(sk, :b)",
        "ExpressionAttributeValues": {":p": {"S": "P1"}, ":b": {"S": "s0"}},
        "ScanIndexForward": False,
    },
    {
        "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
        "ExpressionAttributeValues": {":p": {"S": "P3"}, ":a": {"S": "s01"}, ":b": {"S": "s04"}},
        "FilterExpression": "n > :two",
        "ExpressionAttributeValues_extra": {":two": {"N": "2"}},
    },
    {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "absent"}}},
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [None, 2])
def test_a_query_answers_as_the_whole_table_would(store: DynamoStore, query: dict[str, Any], limit: int | None) -> None:
    _seed(store)
    kwargs = {k: v for k, v in query.items() if k != "ExpressionAttributeValues_extra"}
    kwargs["ExpressionAttributeValues"] = {
        **query["ExpressionAttributeValues"],
        **query.get("ExpressionAttributeValues_extra", {}),
    }
    if limit:
        kwargs["Limit"] = limit
    got: list[dict[str, Any]] = []
    pages = 0
    while True:
        page = store.ddb.query(TableName=store.table, **kwargs)
        got.extend(page["Items"])
        pages += 1
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    # What DynamoDB answers, from the whole table: the partition's items in sort-key order.
    values = kwargs["ExpressionAttributeValues"]
    expected = [i for i in _all(store) if i["pk"] == values[":p"]]
    if ":b" in values and ":a" not in values:
        expected = [i for i in expected if i["sk"]["S"].startswith(values[":b"]["S"])]
    if ":a" in values:
        expected = [i for i in expected if values[":a"]["S"] <= i["sk"]["S"] <= values[":b"]["S"]]
    if ":two" in values:
        expected = [i for i in expected if int(i["n"]["N"]) > 2]
    if query.get("ScanIndexForward") is False:
        expected.reverse()
    assert got == expected
    if limit and len(expected) > limit:
        assert pages > 1


@pytest.mark.parametrize("limit", [None, 1, 5, 7])
@pytest.mark.parametrize("filtered", [False, True])
def test_a_scan_pages_through_every_item_once_in_key_order(
    store: DynamoStore, limit: int | None, filtered: bool
) -> None:
    _seed(store)
    kwargs: dict[str, Any] = {"TableName": store.table}
    if limit:
        kwargs["Limit"] = limit
    if filtered:
        kwargs["FilterExpression"] = "n >= :three"
        kwargs["ExpressionAttributeValues"] = {":three": {"N": "3"}}
    keys: list[tuple[str, str]] = []
    pages = 0
    while True:
        page = store.ddb.scan(**kwargs)
        keys += [(i["pk"]["S"], i["sk"]["S"]) for i in page["Items"]]
        pages += 1
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    # What DynamoDB's Scan promises: every item once (moto's order is the key order, kept).
    expected = [(f"P{p}", f"s{s:02d}") for p in range(4) for s in range(6) if not filtered or s >= 3]
    assert keys == expected
    assert pages > 1 if limit else pages == 1


def test_the_storage_keeps_nothing_it_no_longer_holds(store: DynamoStore) -> None:
    """moto's models used to keep every instance they made: a long-running local server grew by about
    40 MB per 1,000 writes. Updates, queries and cancelled transactions make copies; none may outlive
    the request."""
    import gc

    from moto.dynamodb.models.dynamo_type import Item

    _seed(store)
    t = store.table
    for i in range(200):
        store.ddb.update_item(
            TableName=t,
            Key=_key("P0", "s00"),
            UpdateExpression="SET n = :n",
            ExpressionAttributeValues={":n": {"N": str(i)}},
        )
        store.ddb.query(TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "P1"}})
        with pytest.raises(ClientError):
            store.ddb.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": t, "Item": {**_key("P2", "s00"), "n": {"N": "1"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": t,
                            "Key": _key("P3", "s00"),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if isinstance(o, Item))
    assert alive <= 24 + 10  # the 24 stored items, and a few a request may still be finishing with
