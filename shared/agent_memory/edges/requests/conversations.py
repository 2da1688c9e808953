"""Request bodies of a conversation's own state: its store entries, and merging a fork back.

A key outside `[A-Za-z0-9._:-]{1,128}` is 400 parameter_invalid; `expected_lock_version` must be present
(null creates only), so an absent one is 400 parameter_missing. An entry's value is any JSON, null
included: its bound (16 KiB as compact JSON) is the domain's, after authentication (entries.py).
`into` and `strategy` outside their words are 400 parameter_invalid, as the memory door's own words are.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from agent_memory.core.model import STORE_ENTRY_KEY
from agent_memory.edges.requests.base import Body, OptionalCounter, coded
from agent_memory.edges.requests.validation import PlainValidator, WithJsonSchema

KEY_RE = re.compile(STORE_ENTRY_KEY + r"\Z")
_KEY_SCHEMA = {"type": "string", "pattern": f"^{STORE_ENTRY_KEY}$"}
STRATEGIES = ("fail", "prefer_child", "prefer_parent")


def _key(value: Any) -> str:
    if not isinstance(value, str) or not KEY_RE.match(value):
        raise coded("parameter_invalid", "must be 1 to 128 characters of letters, digits, '.', '_', ':' and '-'")
    return value


def _any(value: Any) -> Any:
    return value


def _word(options: tuple[str, ...]) -> Any:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in options:
            raise coded("parameter_invalid", "must be " + " or ".join(f'"{o}"' for o in options))
        return value

    return check


EntryKey = Annotated[str, PlainValidator(_key), WithJsonSchema(_KEY_SCHEMA)]
# Any JSON value, null included; a missing one is parameter_missing.
EntryValue = Annotated[Any, PlainValidator(_any), WithJsonSchema({})]
Into = Annotated[str, PlainValidator(_word(("parent",))), WithJsonSchema({"type": "string", "enum": ["parent"]})]
Strategy = Annotated[
    str, PlainValidator(_word(STRATEGIES)), WithJsonSchema({"type": "string", "enum": list(STRATEGIES)})
]


class StoreEntryKey(Body):
    key: EntryKey


class StoreEntryWriteFields(Body):
    key: EntryKey
    value: EntryValue
    expected_lock_version: OptionalCounter


class StoreEntryDeleteFields(Body):
    key: EntryKey
    expected_lock_version: OptionalCounter


class StoreEntryShow(Body):
    entry: StoreEntryKey


class StoreEntryWrite(Body):
    entry: StoreEntryWriteFields


class StoreEntryDelete(Body):
    entry: StoreEntryDeleteFields


class MergeFields(Body):
    into: Into
    strategy: Strategy = "fail"


class MergeConversation(Body):
    merge: MergeFields
