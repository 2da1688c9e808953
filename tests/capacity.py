"""DynamoDB capacity units and S3 request classes per call, for `make bench`'s cost model.

moto answers `ReturnConsumedCapacity` with placeholder numbers, so the units are worked out here from what
AWS bills on (the DynamoDB developer guide's rules for on-demand tables):

- a read unit covers 4 KB of one item read strongly consistently; an eventually consistent read costs half;
  a transactional read twice. GetItem and BatchGetItem round each item up on its own; Query adds the sizes
  of every item it reads (projections and filters do not reduce it) and rounds the sum up once;
- a write unit covers 1 KB of one item, the larger of its size before and after; a transactional write
  costs twice. A ConditionCheck inside TransactWriteItems is charged here as a write of its item (the
  conservative reading);
- an item that is absent still costs the smallest charge.

Item sizes follow the guide's sizing rules (attribute names count; a number is about one byte per two
digits; a list or map has 3 bytes of overhead and 1 per element). To size items a request does not carry
in full (an update's result, a projected read, a Query's unfiltered items), the meter reads them again with
uncounted side calls, so it runs in a pass of its own, never while a call is being timed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

READ_UNIT = 4096
WRITE_UNIT = 1024

# S3 bills by request class: PUT, COPY, POST and LIST are one price, GET and SELECT another; DELETE is free.
S3_PUT_CLASS = frozenset({"PutObject", "CopyObject", "ListObjectsV2", "ListObjects", "CreateMultipartUpload"})
S3_GET_CLASS = frozenset({"GetObject", "HeadObject"})


def s3_requests(ops: Mapping[str, int]) -> tuple[int, int]:
    """(PUT-class, GET-class) S3 requests among a call's counted operations ("s3:GetObject": 2, ...)."""
    s3 = {op[3:]: n for op, n in ops.items() if op.startswith("s3:")}
    return sum(n for op, n in s3.items() if op in S3_PUT_CLASS), sum(n for op, n in s3.items() if op in S3_GET_CLASS)


def value_size(value: dict[str, Any]) -> int:
    """Bytes of one attribute value in DynamoDB's wire shape ({"S": ...}, {"M": {...}}, ...)."""
    ((kind, raw),) = value.items()
    if kind == "S":
        return len(str(raw).encode())
    if kind == "N":
        digits = str(raw).lstrip("-").replace(".", "").strip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(raw)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in raw)
    if kind == "NS":
        return sum(value_size({"N": n}) for n in raw)
    if kind == "BS":
        return sum(len(b) for b in raw)
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in raw)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in raw.items())
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: dict[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


def read_units(size: int, *, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / READ_UNIT))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


def write_units(size: int, *, transactional: bool = False) -> float:
    units = max(1, math.ceil(size / WRITE_UNIT))
    return float(2 * units if transactional else units)


@dataclass
class Usage:
    """What one handler call asked of DynamoDB, in billed units."""

    rru: float = 0.0
    wru: float = 0.0

    def add(self, op: str, *, rru: float = 0.0, wru: float = 0.0) -> None:
        self.rru += rru
        self.wru += wru


_TOKEN = re.compile(r"[#:][A-Za-z0-9_]+")


def _used_only(params: dict[str, Any], expressions: list[str]) -> dict[str, Any]:
    """The request's placeholders trimmed to those the kept expressions use (DynamoDB refuses unused ones)."""
    used = set()
    for text in expressions:
        used |= set(_TOKEN.findall(text))
    out = dict(params)
    for key in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
        kept = {k: v for k, v in params.get(key, {}).items() if k in used}
        if kept:
            out[key] = kept
        else:
            out.pop(key, None)
    return out


class CapacityMeter:
    """Works out each call's billed units with side calls to `raw`, the unmetered botocore call."""

    def __init__(self) -> None:
        self.usage = Usage()
        self._keys: dict[str, list[str]] = {}

    def begin(self) -> None:
        self.usage = Usage()

    # ---- around one call -----------------------------------------------------------------------------

    def before(self, raw: Callable[[str, dict[str, Any]], Any], op: str, params: dict[str, Any]) -> Any:
        """Sizes that only exist before the call: the items a write replaces."""
        if op in ("PutItem", "UpdateItem", "DeleteItem"):
            return self._get(raw, params["TableName"], params["Key"] if "Key" in params else self._key(raw, params))
        if op == "TransactWriteItems":
            olds = []
            for entry in params["TransactItems"]:
                ((_, body),) = entry.items()
                key = body.get("Key") or self._key(raw, {"TableName": body["TableName"], "Item": body["Item"]})
                olds.append(self._get(raw, body["TableName"], key))
            return olds
        if op == "BatchWriteItem":
            olds = []
            for table, requests in params["RequestItems"].items():
                for req in requests:
                    if "DeleteRequest" in req:
                        olds.append(self._get(raw, table, req["DeleteRequest"]["Key"]))
                    else:
                        olds.append(
                            self._get(
                                raw, table, self._key(raw, {"TableName": table, "Item": req["PutRequest"]["Item"]})
                            )
                        )
            return olds
        return None

    def after(
        self, raw: Callable[[str, dict[str, Any]], Any], service: str, op: str, params: dict[str, Any], old: Any
    ) -> None:
        if service != "dynamodb":
            return  # S3 requests are counted from the timed calls' operations (s3_requests)
        u = self.usage
        if op == "GetItem":
            size = item_size(self._get(raw, params["TableName"], params["Key"]))
            u.add(op, rru=read_units(size, consistent=bool(params.get("ConsistentRead"))))
        elif op == "BatchGetItem":
            for table, spec in params["RequestItems"].items():
                consistent = bool(spec.get("ConsistentRead"))
                for key in spec["Keys"]:
                    u.add(op, rru=read_units(item_size(self._get(raw, table, key)), consistent=consistent))
        elif op == "TransactGetItems":
            for entry in params["TransactItems"]:
                body = entry["Get"]
                size = item_size(self._get(raw, body["TableName"], body["Key"]))
                u.add(op, rru=read_units(size, consistent=True, transactional=True))
        elif op in ("Query", "Scan"):
            size = self._query_bytes(raw, op, params)
            u.add(op, rru=read_units(size, consistent=bool(params.get("ConsistentRead"))))
        elif op == "PutItem":
            u.add(op, wru=write_units(max(item_size(old), item_size(params["Item"]))))
        elif op in ("UpdateItem", "DeleteItem"):
            new = self._get(raw, params["TableName"], params["Key"]) if op == "UpdateItem" else None
            u.add(op, wru=write_units(max(item_size(old), item_size(new))))
        elif op == "TransactWriteItems":
            for entry, before in zip(params["TransactItems"], old, strict=True):
                ((kind, body),) = entry.items()
                if kind == "Put":
                    new = body["Item"]
                elif kind == "Update":
                    new = self._get(raw, body["TableName"], body["Key"])
                else:
                    new = None
                u.add(op, wru=write_units(max(item_size(before), item_size(new)), transactional=True))
        elif op == "BatchWriteItem":
            requests = [r for reqs in params["RequestItems"].values() for r in reqs]
            for req, before in zip(requests, old, strict=True):
                new = req["PutRequest"]["Item"] if "PutRequest" in req else None
                u.add(op, wru=write_units(max(item_size(before), item_size(new))))

    # ---- side calls ----------------------------------------------------------------------------------

    def _key(self, raw: Callable[[str, dict[str, Any]], Any], params: dict[str, Any]) -> dict[str, Any]:
        table = params["TableName"]
        if table not in self._keys:
            described = raw("DescribeTable", {"TableName": table})
            self._keys[table] = [k["AttributeName"] for k in described["Table"]["KeySchema"]]
        return {name: params["Item"][name] for name in self._keys[table]}

    @staticmethod
    def _get(raw: Callable[[str, dict[str, Any]], Any], table: str, key: dict[str, Any]) -> dict[str, Any] | None:
        found: dict[str, Any] | None = raw("GetItem", {"TableName": table, "Key": key, "ConsistentRead": True}).get(
            "Item"
        )
        return found

    @staticmethod
    def _query_bytes(raw: Callable[[str, dict[str, Any]], Any], op: str, params: dict[str, Any]) -> int:
        """The bytes a Query or Scan reads: the same page, asked for whole items and without the filter."""
        kept = {k: v for k, v in params.items() if k not in ("ProjectionExpression", "FilterExpression", "Select")}
        exprs = [kept.get("KeyConditionExpression", "")]
        side = _used_only(kept, exprs)
        return sum(item_size(it) for it in raw(op, side).get("Items", []))
