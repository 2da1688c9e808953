"""Batch reads: every row a request needs, in as few round trips as the keys allow."""

from __future__ import annotations

from typing import Any

from ..ports import Ref
from . import keys
from .clients import Backend
from .items import ROWS

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
            resp = self.ddb.get_item(TableName=self.table, Key=keys.wire(keys.ref_key(ref)), ConsistentRead=True)
            if "Item" in resp:
                out[ref] = ROWS[ref.kind](resp["Item"])
            return out
        by_key = {keys.ref_key(r): r for r in unique}
        pending = [keys.wire(k) for k in by_key]
        while pending:
            chunk, pending = pending[:_BATCH], pending[_BATCH:]
            request: dict[str, Any] = {self.table: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                resp = self.ddb.batch_get_item(RequestItems=request)
                for raw in resp.get("Responses", {}).get(self.table, []):
                    ref = by_key[(raw["pk"]["S"], raw["sk"]["S"])]
                    out[ref] = ROWS[ref.kind](raw)
                request = resp.get("UnprocessedKeys") or {}
        return out

    def get(self, ref: Ref) -> Any:
        """One row, or None."""
        return self.get_many([ref])[ref]
