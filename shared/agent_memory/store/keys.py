"""Every key of the single table: the only place an item's pk / sk is spelled.

One table holds every item; the partition key names the thing, the sort key the item within it:

    pk                        sk                 item
    TOKEN#<sha256>            TOKEN              the principal a bearer token stands for
    ACCOUNT#<id>              ACCOUNT            name, created_at
    HUMAN#<id>                HUMAN              account, name
    AGENT#<id>                AGENT              steward, kind, memory_context_limit, current token digest
    STEWARD#<human>           DEFNAME#<name>     claims a definition name, unique per steward
    SPEAKER#<id>              SPEAKER            the agent a speaker belongs to, name
    WS#<id>                   WS                 settings (tool_provider_overrides)
    WS#<id>                   MEMBER#<id>        role of a human or agent in the workspace
    WS#<id>                   CONVREF#<id>       a conversation of the workspace (what an export walks)
    CONV#<id>                 CONV               context_revision, archived, memory_context, answering agent;
                                                 deleted_at once deleted (a tombstone: it reads as absent)
    EXEC#<id>                 EXEC               an execution: principal, answerer, subject, frozen bindings, tools,
                                                 ancestors (the executions it was spawned from)
    EXEC#<id>                 STOP               the execution was stopped: when, by whom (TTL past its descendants)
    ANCHOR#<anchor>           #META              doc_count: the 64-document bound, moved in the same transaction
    ANCHOR#<anchor>           DOC#<path>         a document pointer row -> immutable S3 content key
    ANCHOR#<anchor>           VER#<h>#<version>  one version record of the document at <path> (store/versions.py)
    ANCHOR#conversation#<c>   ENTRIES#<n>        store entries of conversation <c>, page n of ENTRY_PAGES (entries.py)
    ANCHOR#conversation#<c>   FORKBASE           a fork's base: each copied document's (public_id, lock_version)
    RATE#<principal>          MIN#<minute>       writes counted this minute (the write budget; expires by TTL)
    FORKLOG#<utc hour>        <time>#<child>     content keys a fork copied, for the sweeper (expires by TTL)
    IDEM#<scope>#<key hash>   IDEM               a keyed request's fingerprint and recorded answer (expires by TTL)
    MEM#<memory id>           MEM                an organization Memory: name, description, source, default, access
    ACCOUNT#<id>              MEMORY#<memory id> the account's index of its Memories (what a listing walks)
    ACCOUNT#<id>              MEMNAME#<name>     claims a Memory name, unique per account
    ACCOUNT#<id>              MEMDEFAULT#<id>    a tenant default: its reach, mode and read_first
    ACCOUNT#<id>              MEMREF#<mem>#<agent>  an agent the Memory is attached to (mode, read_first, name)
    ACCOUNT#<id>              AGENTREF#<agent>   the account's index of its agents (name, deployment)
    ACCOUNT#<id>              MEMMOUNT#<mem>#<exec>  a Memory an execution mounts, until its expires_at (TTL)
    ANCHOR#memory#<id>        #META              a Memory's file count, bytes and last writer; deleted_at once deleted
    ANCHOR#memory#<id>        LEASE#<h>          a short lease on the file at <path> (expires_at; TTL removes it)
    RECORD#<ws>#<L><n>        <record id>        a typed record, content inline; L is W or S (its layer), n its shard
    RECDUP#<ws>#<group>       C#<digest>         the exact-duplicate claim on a normalised text (claimed_until; TTL)
    RECBAND#<ws>#<group>      B#<band key>       the ids of the records whose MinHash band has that value
    RECRUN#<ws>#<run hash>    <record id>        a Session raw line of a run, and whether it was consolidated

A conversation's store entries are client state no prompt reads: at most 64 of 16 KiB each, kept as
top-level attributes `E:<key>` of ENTRY_PAGES page items (at most ENTRIES_PER_PAGE each, counted in `n`),
so a fork copies them in its one transaction and a request reads them all in its first batch.

A record's shard is a hash of its id (RECORD_SHARDS of them per layer), so a search reads a workspace's
records as that many Queries in parallel and a read by id knows its key without an index; <group> is the
digest of what duplicates are checked within (records.py).

<anchor> is `Anchor.key`: <scope>#<owner>[#<speaker>]; <minute> is whole minutes since the epoch.
<h> is the SHA-256 (hex) of the document's <path>: a path may take 1020 bytes, which a sort key with a
version behind it would not hold, and the hash keeps a version's key computable from the path and the
number alone, so it rides in a request's first batch read. <version> is the lock_version, zero-padded to
VERSION_DIGITS so the versions of one path sort by number.
Content lives in S3 under keys that are never reused, so a read can cache it forever by key.

A deleted conversation's items: its `CONV` row stays as the tombstone; everything else it owns lives under
`ANCHOR#conversation#<id>` (pointers, version records, and any later kind of the conversation's, such as
store entries) or in its own `CONV#<id>` partition beside the tombstone, and the sweeper removes every item
of both once the deletion's mark on the anchor's `#META` row is older than its grace (store/sweeper.py).
"""

from __future__ import annotations

import hashlib
from typing import Any

from agent_memory.core.model import Anchor
from agent_memory.core.ports import Ref

Key = tuple[str, str]

TOKEN = "TOKEN#"
ACCOUNT = "ACCOUNT#"
HUMAN = "HUMAN#"
AGENT = "AGENT#"
STEWARD = "STEWARD#"
SPEAKER = "SPEAKER#"
WORKSPACE = "WS#"
CONVERSATION = "CONV#"
EXECUTION = "EXEC#"
ANCHOR = "ANCHOR#"
RECORD = "RECORD#"
RECORD_CLAIM = "RECDUP#"
RECORD_BAND = "RECBAND#"
RECORD_RUN = "RECRUN#"
RECORD_SHARDS = 8
DOC = "DOC#"
VERSION = "VER#"
VERSION_DIGITS = 12
RATE = "RATE#"
FORK_LOG = "FORKLOG#"
IDEMPOTENCY = "IDEM#"
MEMORY = "MEM#"
MEMORY_INDEX = "MEMORY#"
MEMORY_NAME = "MEMNAME#"
MEMORY_DEFAULT = "MEMDEFAULT#"
MEMORY_REF = "MEMREF#"
MEMORY_MOUNT = "MEMMOUNT#"
LEASE = "LEASE#"
ENTRY_PAGE = "ENTRIES#"
FORK_BASE = "FORKBASE"
AGENT_INDEX = "AGENTREF#"


def token(digest: str) -> Key:
    return f"{TOKEN}{digest}", "TOKEN"


def account(account_id: str) -> Key:
    return f"{ACCOUNT}{account_id}", "ACCOUNT"


def human(human_id: str) -> Key:
    return f"{HUMAN}{human_id}", "HUMAN"


def agent(agent_id: str) -> Key:
    return f"{AGENT}{agent_id}", "AGENT"


def definition(steward_id: str, name: str) -> Key:
    return f"{STEWARD}{steward_id}", f"DEFNAME#{name}"


def speaker(speaker_id: str) -> Key:
    return f"{SPEAKER}{speaker_id}", "SPEAKER"


def workspace(workspace_id: str) -> Key:
    return f"{WORKSPACE}{workspace_id}", "WS"


def member(workspace_id: str, principal_id: str) -> Key:
    return f"{WORKSPACE}{workspace_id}", f"MEMBER#{principal_id}"


ROOM_CONVERSATION = "CONVREF#"


def room_conversation(workspace_id: str, conversation_id: str) -> Key:
    return f"{WORKSPACE}{workspace_id}", f"{ROOM_CONVERSATION}{conversation_id}"


def conversation(conversation_id: str) -> Key:
    return f"{CONVERSATION}{conversation_id}", "CONV"


def execution(execution_id: str) -> Key:
    return f"{EXECUTION}{execution_id}", "EXEC"


def execution_stop(execution_id: str) -> Key:
    return f"{EXECUTION}{execution_id}", "STOP"


def anchor_pk(anchor: Anchor) -> str:
    return f"{ANCHOR}{anchor.key}"


def meta(anchor: Anchor) -> Key:
    return anchor_pk(anchor), "#META"


def document(anchor: Anchor, rest: str) -> Key:
    return anchor_pk(anchor), f"{DOC}{rest}"


def path_hash(rest: str) -> str:
    return hashlib.sha256(rest.encode("utf-8")).hexdigest()


def version_prefix(rest: str) -> str:
    """What every version key of the document at `rest` starts with."""
    return f"{VERSION}{path_hash(rest)}#"


def version_sk(rest: str, lock_version: int) -> str:
    return f"{version_prefix(rest)}{lock_version:0{VERSION_DIGITS}d}"


def version(anchor: Anchor, rest: str, lock_version: int) -> Key:
    return anchor_pk(anchor), version_sk(rest, lock_version)


def parse_version_sk(sk: str) -> tuple[str, int]:
    """(path hash, lock_version) of a version key."""
    h, _, number = sk[len(VERSION) :].partition("#")
    return h, int(number)


def rate(subject: str, key: str, minute: int) -> Key:
    """A meter's count for one minute; a principal's keeps the bare id it always had."""
    return f"{RATE}{key}" if subject == "principal" else f"{RATE}{subject}:{key}", f"MIN#{minute}"


def fork_log_pk(hour: str) -> str:
    return f"{FORK_LOG}{hour}"


def fork_log(hour: str, at: str, child_id: str) -> Key:
    return fork_log_pk(hour), f"{at}#{child_id}"


def idempotency(scope: str, key_digest: str) -> Key:
    """A keyed request's record: <scope> is the principal's id (or "operator"), the key is hashed."""
    return f"{IDEMPOTENCY}{scope}#{key_digest}", "IDEM"


def memory(memory_id: str) -> Key:
    return f"{MEMORY}{memory_id}", "MEM"


def memory_index(account_id: str, memory_id: str) -> Key:
    return f"{ACCOUNT}{account_id}", f"{MEMORY_INDEX}{memory_id}"


def memory_name(account_id: str, name: str) -> Key:
    return f"{ACCOUNT}{account_id}", f"{MEMORY_NAME}{name}"


def memory_default(account_id: str, memory_id: str) -> Key:
    return f"{ACCOUNT}{account_id}", f"{MEMORY_DEFAULT}{memory_id}"


def memory_ref(account_id: str, memory_id: str, agent_id: str) -> Key:
    return f"{ACCOUNT}{account_id}", f"{MEMORY_REF}{memory_id}#{agent_id}"


def memory_mount(account_id: str, memory_id: str, execution_id: str) -> Key:
    return f"{ACCOUNT}{account_id}", f"{MEMORY_MOUNT}{memory_id}#{execution_id}"


def agent_index(account_id: str, agent_id: str) -> Key:
    return f"{ACCOUNT}{account_id}", f"{AGENT_INDEX}{agent_id}"


def lease(anchor: Anchor, rest: str) -> Key:
    return anchor_pk(anchor), f"{LEASE}{path_hash(rest)}"


def entry_page(conversation_id: str, number: int) -> Key:
    return anchor_pk(Anchor("conversation", conversation_id)), f"{ENTRY_PAGE}{number}"


def fork_base(conversation_id: str) -> Key:
    return anchor_pk(Anchor("conversation", conversation_id)), FORK_BASE


def record_shard(record_id: str) -> int:
    return int(hashlib.sha256(record_id.encode("ascii", "replace")).hexdigest()[:4], 16) % RECORD_SHARDS


def record_partition(workspace_id: str, layer: str, shard: int) -> str:
    return f"{RECORD}{workspace_id}#{layer[:1]}{shard}"


def record(workspace_id: str, layer: str, record_id: str) -> Key:
    return record_partition(workspace_id, layer, record_shard(record_id)), record_id


def record_claim(workspace_id: str, group: str, digest: str) -> Key:
    return f"{RECORD_CLAIM}{workspace_id}#{group}", f"C#{digest}"


def record_band(workspace_id: str, group: str, band: str) -> Key:
    return f"{RECORD_BAND}{workspace_id}#{group}", f"B#{band}"


def record_run(workspace_id: str, run_id: str) -> str:
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{RECORD_RUN}{workspace_id}#{digest}"


def ref_key(ref: Ref) -> Key:
    """The key of the row a `Ref` names."""
    match ref.kind:
        case "token":
            return token(ref.a)
        case "workspace":
            return workspace(ref.a)
        case "member":
            return member(ref.a, ref.b)
        case "conversation":
            return conversation(ref.a)
        case "agent":
            return agent(ref.a)
        case "speaker":
            return speaker(ref.a)
        case "human":
            return human(ref.a)
        case "account":
            return account(ref.a)
        case "document":
            # A Ref carries the anchor already spelled as its key.
            return f"{ANCHOR}{ref.a}", f"{DOC}{ref.b}"
        case "execution":
            return execution(ref.a)
        case "execution_stop":
            return execution_stop(ref.a)
        case "idempotency":
            return idempotency(ref.a, ref.b)
        case "memory" | "memory_any":
            return memory(ref.a)
        case "memory_stats":
            return meta(Anchor("memory", ref.a))
        case "lease":
            return lease(Anchor.from_key(ref.a), ref.b)
        case "record":
            layer, _, record_id = ref.b.partition("#")
            return record(ref.a, layer, record_id)
        case "record_claim":
            group, _, digest = ref.b.partition("#")
            return record_claim(ref.a, group, digest)
        case "record_band":
            group, _, band = ref.b.partition("#")
            return record_band(ref.a, group, band)
        case "entry_page":
            return entry_page(ref.a, int(ref.b))
        case "fork_base":
            return fork_base(ref.a)
        case "version":
            # ("version", anchor key, "<lock_version>#<rest>"): the number first, since a path may hold '#'.
            number, _, rest = ref.b.partition("#")
            return f"{ANCHOR}{ref.a}", version_sk(rest, int(number))
    raise ValueError(f"unknown ref kind {ref.kind}")


def wire(key: Key) -> dict[str, Any]:
    """A key as DynamoDB's `Key` parameter spells it."""
    return {"pk": {"S": key[0]}, "sk": {"S": key[1]}}
