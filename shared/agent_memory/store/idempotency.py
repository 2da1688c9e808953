"""Idempotency records stored on their own: a refusal's (a change's record rides in its commit)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from agent_memory.core import clock
from agent_memory.core.idempotency import Record
from agent_memory.store import kinds
from agent_memory.store.clients import Backend
from agent_memory.store.commit import Refusals, attempt, request_token
from agent_memory.store.items import unmarshal


class IdempotencyRecords(Backend):
    def record_answer(self, record: Record) -> Record | None:
        """Store `record` unless the key already holds a live one; answers the one it found, if any."""
        item = kinds.idempotency_item(record, request_token())
        try:
            attempt(
                lambda: self.ddb.put_item(
                    TableName=self.table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(#pk) OR #exp <= :now",
                    ExpressionAttributeNames={"#pk": "pk", "#exp": "expires_at"},
                    ExpressionAttributeValues={":now": {"N": str(int(clock.now()))}},
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ),
                ["idempotency"],
                # No meaning is given to the refusal, so it raises as it is and its old item is read below.
                Refusals(),
            )
        except ClientError as exc:
            old = exc.response.get("Item")
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException" and old:
                return kinds.idempotency_record(unmarshal(old))  # type: ignore[arg-type]
            raise
        return None
