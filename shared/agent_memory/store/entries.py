"""A conversation's store entries: conditional writes of one entry inside its page item.

Each entry is a top-level attribute (`E:<key>`) of one of the conversation's ENTRY_PAGES page items, whose
`n` counts the entries it holds (at most ENTRIES_PER_PAGE), so the 64-entry bound is the pages' bounds
added up. A write touches one attribute of one item under a condition on that attribute alone: two
writers of different keys never refuse each other. A create also checks that no other page holds the key
(a ConditionCheck per page), so a key lives in exactly one page; and every change checks that the
conversation exists unarchived. The caller's write budget is spent just before (`Documents.spend`).
"""

from __future__ import annotations

from typing import Any

from agent_memory.api.errors import ApiError
from agent_memory.core.model import ENTRIES_PER_PAGE, ENTRY_PAGES, StoreEntry, WriteBudget
from agent_memory.core.ports import EntryPageFull
from agent_memory.store import keys
from agent_memory.store.commit import Refusal, Refusals, Step, transact
from agent_memory.store.documents import Documents
from agent_memory.store.items import ENTRY_ATTRIBUTE, entry_attribute


def _stale(key: str) -> ApiError:
    return ApiError(
        "stale_object",
        f"The store entry {key!r} changed since you read it (or was created, or deleted): read it again, then "
        "retry with its current expected_lock_version.",
    )


def _conversation_refused(old: dict[str, Any] | None) -> ApiError:
    if old is None or old.get("deleted_at") is not None:
        return ApiError("not_found", "That conversation does not exist.")
    return ApiError("conversation_archived", "The conversation is archived: its store entries are read-only.")


class Entries(Documents):
    def _conversation_check(self, conversation_id: str) -> Step:
        return (
            "conversation",
            {
                "ConditionCheck": {
                    "TableName": self.table,
                    "Key": keys.wire(keys.conversation(conversation_id)),
                    # Live (a deletion's tombstone makes it absent to every door) and not archived.
                    "ConditionExpression": "attribute_exists(#pk) AND attribute_not_exists(#del) AND #ar = :f",
                    "ExpressionAttributeNames": {"#pk": "pk", "#ar": "archived", "#del": "deleted_at"},
                    "ExpressionAttributeValues": {":f": {"BOOL": False}},
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        )

    def _commit_entry(
        self, conversation_id: str, key: str, page: Step, others: list[Step], budget: WriteBudget | None
    ) -> None:
        steps: list[Step] = [page, *others, self._conversation_check(conversation_id)]

        def page_refused(old: dict[str, Any] | None) -> ApiError:
            if (old or {}).get(f"{ENTRY_ATTRIBUTE}{key}") is None and int(
                (old or {}).get("n") or 0
            ) >= ENTRIES_PER_PAGE:
                raise EntryPageFull
            return _stale(key)

        by_role: dict[str, Refusal] = {
            "conversation": _conversation_refused,
            "page": page_refused,
            "other": lambda _: _stale(key),
        }
        self.spend(budget)
        transact(self.ddb, steps, Refusals(by_role, otherwise=lambda: _stale(key)))

    def write_entry(
        self, conversation_id: str, page: int, entry: StoreEntry, expected: int | None, budget: WriteBudget | None
    ) -> None:
        """Create (`expected` None: absent from every page) or replace (at `expected`) one entry in `page`."""
        names = {"#e": f"{ENTRY_ATTRIBUTE}{entry.key}"}
        values: dict[str, Any] = {":e": entry_attribute(entry)}
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": keys.wire(keys.entry_page(conversation_id, page)),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        others: list[Step] = []
        if expected is None:
            names["#n"] = "n"
            values |= {":one": {"N": "1"}, ":cap": {"N": str(ENTRIES_PER_PAGE)}}
            update["UpdateExpression"] = "SET #e = :e ADD #n :one"
            update["ConditionExpression"] = "attribute_not_exists(#e) AND (attribute_not_exists(#n) OR #n < :cap)"
            # A key lives in one page: no other may hold it (a check on an absent page item passes).
            others = [
                (
                    "other",
                    {
                        "ConditionCheck": {
                            "TableName": self.table,
                            "Key": keys.wire(keys.entry_page(conversation_id, n)),
                            "ConditionExpression": "attribute_not_exists(#e)",
                            "ExpressionAttributeNames": {"#e": names["#e"]},
                        }
                    },
                )
                for n in range(ENTRY_PAGES)
                if n != page
            ]
        else:
            names["#lv"] = "lv"
            values[":elv"] = {"N": str(expected)}
            update["UpdateExpression"] = "SET #e = :e"
            update["ConditionExpression"] = "#e.#lv = :elv"
        update["ExpressionAttributeNames"] = names
        update["ExpressionAttributeValues"] = values
        self._commit_entry(conversation_id, entry.key, ("page", {"Update": update}), others, budget)

    def delete_entry(
        self, conversation_id: str, page: int, key: str, expected: int, budget: WriteBudget | None
    ) -> None:
        """Remove one entry from `page` if it is still at `expected`."""
        update = {
            "TableName": self.table,
            "Key": keys.wire(keys.entry_page(conversation_id, page)),
            "UpdateExpression": "REMOVE #e ADD #n :minus",
            "ConditionExpression": "#e.#lv = :elv",
            "ExpressionAttributeNames": {"#e": f"{ENTRY_ATTRIBUTE}{key}", "#n": "n", "#lv": "lv"},
            "ExpressionAttributeValues": {":elv": {"N": str(expected)}, ":minus": {"N": "-1"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        self._commit_entry(conversation_id, key, ("page", {"Update": update}), [], budget)
