"""Batch reads: every row a request needs, in as few round trips as the keys allow."""

from __future__ import annotations

from functools import partial
from typing import Any, TypeVar

from agent_memory.core.ports import Ref
from agent_memory.store import keys, kinds
from agent_memory.store.clients import Backend
from agent_memory.store.commit import PACING, busy, read

T = TypeVar("T")

# BatchGetItem's limit of keys per request.
_BATCH = 100


class Reads(Backend):
    """Rows by `Ref`, strongly consistent."""

    def get_many(self, refs: list[Ref]) -> dict[Ref, Any]:
        """Every ref maps to its row object, or None when absent. Strongly consistent."""
        unique = list(dict.fromkeys(refs))
        out: dict[Ref, Any] = dict.fromkeys(unique)
        if not unique:
            return out
        if len(unique) == 1:
            (ref,) = unique
            key = keys.wire(keys.ref_key(ref))
            resp = read(lambda: self.ddb.get_item(TableName=self.table, Key=key, ConsistentRead=True))
            if "Item" in resp:
                out[ref] = kinds.read_row(ref, resp["Item"])
            return out
        by_key = {keys.ref_key(r): r for r in unique}
        pending = [keys.wire(k) for k in by_key]
        while pending:
            chunk, pending = pending[:_BATCH], pending[_BATCH:]
            request: dict[str, Any] = {self.table: {"Keys": chunk, "ConsistentRead": True}}
            # DynamoDB hands back the keys it had no capacity for as UnprocessedKeys (no error, so botocore
            # does not retry them): ask again with backoff, a bounded number of times, then say busy.
            for retry in range(PACING.retries + 1):
                if retry:
                    PACING.pause(retry - 1)
                resp = read(partial(self.ddb.batch_get_item, RequestItems=request))
                for raw in resp.get("Responses", {}).get(self.table, []):
                    ref = by_key[(raw["pk"]["S"], raw["sk"]["S"])]
                    out[ref] = kinds.read_row(ref, raw)
                request = resp.get("UnprocessedKeys") or {}
                if not request:
                    break
            else:
                raise busy()
        return out

    def get(self, ref: Ref[T]) -> T | None:
        """One row, or None."""
        return ref.row(self.get_many([ref]))
