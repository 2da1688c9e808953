"""The exact answers AWS gives for what moto never does, for tests that hand them to botocore in a
`before-call` hook (the store then reads them as it would read DynamoDB's)."""

from __future__ import annotations

from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.compat import HTTPHeaders

DYNAMODB_URL = "https://dynamodb.us-east-1.amazonaws.com/"


def dynamodb_error(code: str, message: str, extra: dict[str, Any] | None = None) -> tuple[AWSResponse, dict[str, Any]]:
    """A DynamoDB error answer as botocore parses it: (the HTTP response, the parsed body)."""
    parsed = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}, **(extra or {})}
    return AWSResponse(DYNAMODB_URL, 400, HTTPHeaders(), None), parsed


def transaction_cancelled(reasons: list[dict[str, Any]]) -> tuple[AWSResponse, dict[str, Any]]:
    """DynamoDB's answer to a cancelled TransactWriteItems: one reason per item sent, {"Code": "None"} for
    the items that passed, each failed one with its code (and, when asked for, the old "Item")."""
    codes = ", ".join(r["Code"] for r in reasons)
    return dynamodb_error(
        "TransactionCanceledException",
        f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        {"CancellationReasons": reasons},
    )
