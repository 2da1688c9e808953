"""Version records: a document's history, read newest first, and redaction.

A version record is written by the commit that makes the version (documents.py), so this part only
reads them, scrubs one, and deletes a redacted version's bytes.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from agent_memory.api.errors import stale, version_not_found
from agent_memory.core.model import Anchor, Author, Version, WriteBudget
from agent_memory.store import keys, kinds
from agent_memory.store.commit import Refusal, Refusals, Step, attempt, read, transact
from agent_memory.store.content import CACHE
from agent_memory.store.documents import Documents
from agent_memory.store.items import attribute


class Versions(Documents):
    """The history rows of documents, under the same anchors as their pointer rows."""

    def list_versions(self, anchor: Anchor, rest: str, low: int, high: int, limit: int) -> list[Version]:
        """Up to `limit` records of the document at `rest` numbered `low`..`high`, newest first: one Query."""
        resp = read(
            lambda: self.ddb.query(
                TableName=self.table,
                KeyConditionExpression="#pk = :pk AND #sk BETWEEN :low AND :high",
                ExpressionAttributeNames={"#pk": "pk", "#sk": "sk"},
                ExpressionAttributeValues={
                    ":pk": {"S": keys.anchor_pk(anchor)},
                    ":low": {"S": keys.version_sk(rest, low)},
                    ":high": {"S": keys.version_sk(rest, high)},
                },
                ScanIndexForward=False,
                Limit=limit,
                ConsistentRead=True,
            )
        )
        return [kinds.VERSION.read(item, rest=rest) for item in resp.get("Items", [])]

    def redact_version(
        self, version: Version, expected: tuple[str, int], by: Author, at: str, budget: WriteBudget | None
    ) -> None:
        """Drop a record's content key and mark it redacted, if the document still holds `expected`."""
        anchor, rest = version.anchor, version.rest
        steps: list[Step] = [
            (
                "document",
                {
                    "ConditionCheck": {
                        "TableName": self.table,
                        "Key": keys.wire(keys.document(anchor, rest)),
                        "ConditionExpression": "#pid = :pid AND #lv = :lv",
                        "ExpressionAttributeNames": {"#pid": "public_id", "#lv": "lock_version"},
                        "ExpressionAttributeValues": {":pid": {"S": expected[0]}, ":lv": {"N": str(expected[1])}},
                    }
                },
            ),
            (
                "version",
                {
                    "Update": {
                        "TableName": self.table,
                        "Key": keys.wire(keys.version(anchor, rest, version.lock_version)),
                        "UpdateExpression": "REMOVE #ck SET #ra = :ra, #rb = :rb, #rbn = :rbn",
                        "ConditionExpression": "#pid = :pid",
                        "ExpressionAttributeNames": {
                            "#ck": "content_key",
                            "#ra": "redacted_at",
                            "#rb": "redacted_by",
                            "#rbn": "redacted_by_name",
                            "#pid": "public_id",
                        },
                        "ExpressionAttributeValues": {
                            ":ra": {"S": at},
                            ":rb": {"S": f"{by.kind}:{by.public_id}"},
                            ":rbn": attribute(by.name),
                            ":pid": {"S": version.public_id},
                        },
                    }
                },
            ),
        ]
        by_role: dict[str, Refusal] = {
            "document": lambda _: stale(),
            "version": lambda _: version_not_found(version.lock_version),
        }
        self.spend(budget)
        transact(self.ddb, steps, Refusals(by_role, otherwise=stale))

    def delete_content(self, key: str) -> None:
        """Delete one content object now (a redaction whose bytes nothing else holds)."""
        CACHE.discard(key)
        try:
            attempt(lambda: self.s3.delete_object(Bucket=self.bucket, Key=key), ["content"], Refusals())
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                raise
