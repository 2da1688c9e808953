"""The table's keys under the names the store modules build them by.

Each kind's key shape is declared once, in its entry of store/kinds.py (`kinds.layout()` lists them all,
and the template's header is generated from it); the builders below are those shapes, and the prefixes
the listings and scans walk by.
"""

from __future__ import annotations

from typing import Any

from agent_memory.core.model import Anchor
from agent_memory.core.ports import Ref
from agent_memory.store import kinds
from agent_memory.store.kinds import RECORD_SHARDS, VERSION_DIGITS, Key, path_hash, record_shard, ref_key, run_digest

__all__ = ["RECORD_SHARDS", "VERSION_DIGITS", "Key", "path_hash", "record_shard", "ref_key"]

# What every key of a kind starts with, for the listings and scans that walk them.
ACCOUNT = kinds.ACCOUNT.shape.pk_prefix
AGENT = kinds.AGENT.shape.pk_prefix
SPEAKER = kinds.SPEAKER.shape.pk_prefix
WORKSPACE = kinds.WORKSPACE.shape.pk_prefix
CONVERSATION = kinds.CONVERSATION_ANY.shape.pk_prefix
DOC = kinds.DOCUMENT.shape.sk_prefix
VERSION = kinds.VERSION.shape.sk_prefix
MEMORY_INDEX = kinds.MEMORY_INDEX.shape.sk_prefix
MEMORY_DEFAULT = kinds.MEMORY_DEFAULT.shape.sk_prefix
MEMORY_REF = kinds.MEMORY_REF.shape.sk_prefix
MEMORY_MOUNT = kinds.MEMORY_MOUNT.shape.sk_prefix
AGENT_INDEX = kinds.AGENT_INDEX.shape.sk_prefix
ROOM_CONVERSATION = kinds.ROOM_CONVERSATION.shape.sk_prefix
META = kinds.META.sk

token = kinds.TOKEN.key
account = kinds.ACCOUNT.key
human = kinds.HUMAN.key
agent = kinds.AGENT.key
definition = kinds.DEFINITION.key
workspace = kinds.WORKSPACE.key
room_conversation = kinds.ROOM_CONVERSATION.key
conversation = kinds.CONVERSATION_ANY.key
execution = kinds.EXECUTION.key
execution_stop = kinds.EXECUTION_STOP.key
idempotency = kinds.IDEMPOTENCY.key
memory = kinds.MEMORY_ANY.key
memory_index = kinds.MEMORY_INDEX.key
memory_name = kinds.MEMORY_NAME.key
memory_default = kinds.MEMORY_DEFAULT.key
memory_ref = kinds.MEMORY_REF.key
entry_page = kinds.ENTRY_PAGE.key
record_claim = kinds.RECORD_CLAIM.key
record_band = kinds.RECORD_BAND.key


def anchor_pk(anchor: Anchor) -> str:
    return kinds.DOCUMENT.shape.pk.format(anchor=anchor.key)


def meta(anchor: Anchor) -> Key:
    return kinds.META.key(anchor.key)


def document(anchor: Anchor, rest: str) -> Key:
    return kinds.DOCUMENT.key(anchor.key, rest)


def version_prefix(rest: str) -> str:
    """What every version key of the document at `rest` starts with."""
    return f"{VERSION}{path_hash(rest)}#"


def version_sk(rest: str, lock_version: int) -> str:
    return version(Anchor("", ""), rest, lock_version)[1]


def version(anchor: Anchor, rest: str, lock_version: int) -> Key:
    return kinds.VERSION.key(anchor.key, path_hash(rest), lock_version)


def rate(subject: str, key: str, minute: int) -> Key:
    """A meter's count for one minute; a principal's keeps the bare id it always had."""
    return kinds.RATE.key(key if subject == "principal" else f"{subject}:{key}", minute)


def fork_log_pk(hour: str) -> str:
    return fork_log(hour, "", "")[0]


def fork_log(hour: str, at: str, child_id: str) -> Key:
    return kinds.FORK_LOG.key(hour, at, child_id)


def lease(anchor: Anchor, rest: str) -> Key:
    return kinds.LEASE.key(anchor.key, path_hash(rest))


def record_partition(workspace_id: str, layer: str, shard: int) -> str:
    return kinds.RECORD.shape.pk.format(workspace_id=workspace_id, partition=kinds.record_partition(layer, shard))


def record(workspace_id: str, layer: str, record_id: str) -> Key:
    return kinds.RECORD.ref_key(Ref.record(workspace_id, layer, record_id))


def record_term(workspace_id: str, layer: str, posting: tuple[str, int], record_id: str) -> Key:
    """A record's posting: (term, impact) in its text."""
    term, impact = posting
    return kinds.RECORD_TERM.key(workspace_id, layer, kinds.term_hash(term), f"{impact:04d}", record_id)


def record_term_partition(workspace_id: str, layer: str, term: str) -> str:
    """Where the postings of one search term live."""
    return kinds.RECORD_TERM.shape.pk.format(workspace_id=workspace_id, layer=layer, term_hash=kinds.term_hash(term))


def record_run(workspace_id: str, run_id: str) -> str:
    return kinds.RUN_LINE.key(workspace_id, run_digest(run_id), "")[0]


def wire(key: Key) -> dict[str, Any]:
    """A key as DynamoDB's `Key` parameter spells it."""
    return {"pk": {"S": key[0]}, "sk": {"S": key[1]}}
