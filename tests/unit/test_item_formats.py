"""Stored item formats are data on disk: every kind's item, as the store writes it, is pinned here.

The expected items in snapshots/items.json were taken from the store before its item kinds moved into one
registry (store/kinds.py); users' local data dirs and deployed tables hold items spelled exactly so. Each
sample is written by its kind, compared with the pinned wire item, and read back to the same row; so is the
pinned item itself. Rows written by update expressions (no whole item of their own) pin how a stored item
reads back. A change to a codec that alters a stored spelling fails here: change the snapshot only together
with a migration of the stored data.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_memory.core.idempotency import Answer, Record
from agent_memory.core.model import (
    DEFAULT_EXECUTION_TTL_SECONDS,
    Account,
    Agent,
    Ancestor,
    Anchor,
    Attachment,
    Author,
    ConsoleSession,
    Conversation,
    Document,
    EntryPage,
    Execution,
    ExecutionStop,
    ForkBase,
    FrozenBinding,
    GitOrigin,
    Human,
    Lease,
    Member,
    MemoryAccess,
    MemoryDefault,
    MemoryReference,
    MemoryStats,
    MergedFrom,
    Mount,
    OrgMemory,
    PromotedFrom,
    Quarantine,
    RecordClaim,
    RunLine,
    Speaker,
    StoreEntry,
    TokenRow,
    TypedRecord,
    Version,
    Workspace,
)
from agent_memory.core.ports import Ref
from agent_memory.store import keys, kinds

SNAPSHOT = Path(__file__).parent / "snapshots" / "items.json"

AUTHOR = Author("agent", "ag_1", "Scout", "ex_1", "c0ffee")
HUMAN_AUTHOR = Author("human", "hu_1")
QUARANTINE = Quarantine(
    "released", ("inj.a", "inj.b"), "rules-3", Author("human", "hu_2", "Rev"), "2026-01-02T00:00:00.000Z"
)
ANCHOR = Anchor("conversation", "cv_1")
SPEAKER_ANCHOR = Anchor("speaker", "ag_1", "sp_1")
PROMOTED = PromotedFrom("an_1", "/notes/a.md", "doc_1", 3, "mem_1", HUMAN_AUTHOR, "2026-01-03T00:00:00.000Z")
PROMOTED_BARE = PromotedFrom("an_2", "/b.md", "doc_2", 1)
ORG = OrgMemory(
    "mem_1",
    "acc_1",
    "team",
    "what the team knows",
    "git",
    HUMAN_AUTHOR,
    "2026-01-01T00:00:00.000Z",
    archived=True,
    git=GitOrigin("https://example.com/r.git", "main", "docs", "abc123"),
    default=MemoryDefault("deployment", "prod", "readonly", True),
    access=MemoryAccess(("hu_1", "hu_2"), ("ws_1",)),
    promoted_from=PROMOTED,
    attachment_count=2,
    revision=5,
)
ORG_BARE = OrgMemory("mem_2", "acc_1", "plain", "", "native", AUTHOR, "2026-01-01T00:00:00.000Z")
EXECUTION = Execution(
    "ex_1",
    "ws_1",
    "cv_1",
    "acc_1",
    "ag_1",
    "human",
    "hu_1",
    "sp_1",
    [
        FrozenBinding("notes", "conversation", "read_write", "an_1", conversation_public_id="cv_1"),
        FrozenBinding("me", "speaker", "read", "an_2", speaker_public_id="sp_1", agent_public_id="ag_1"),
    ],
    ["memory", "records"],
    "2026-01-01T00:00:00.000Z",
    parent_id="ex_0",
    mail_from_id="ex_9",
    expires_at=1767312000,
    secret_digest="d1",
    principal_name="Ada",
    mounts=[
        Mount("/memories/team", "memory", "readwrite", "git", "mem_1", "team", True, "shared notes"),
        Mount("/memories/team/sub", "memory", "readonly", memory_id="mem_1"),
        Mount("/agent", "agent", "readonly"),
    ],
    ancestors=[Ancestor("ex_0", "cv_0")],
)
EXECUTION_BARE = Execution(
    "ex_2", "ws_1", "cv_1", "acc_1", None, "agent", "ag_1", None, [], [], "2026-01-01T00:00:00.000Z", expires_at=5
)
DOCUMENT = Document(
    SPEAKER_ANCHOR,
    "/a/b.md",
    "doc_1",
    4,
    120,
    "f" * 64,
    "a note",
    "2026-01-01T00:00:00.000Z",
    "content/k1",
    AUTHOR,
    ("email", "phone"),
    QUARANTINE,
)
DOCUMENT_BARE = Document(
    ANCHOR, "/c.md", "doc_2", 1, 0, "e" * 64, None, "2026-01-01T00:00:00.000Z", "content/k2", HUMAN_AUTHOR
)
VERSION = Version(
    ANCHOR,
    "/a/b#c.md",
    "doc_1",
    7,
    99,
    "d" * 64,
    "desc",
    "2026-01-01T00:00:00.000Z",
    "content/k3",
    AUTHOR,
    "merge",
    1767312000.0,
    overwrote_concurrent_edit=True,
    rolled_back_from=3,
    renamed_from="/old.md",
    promoted_from=PROMOTED_BARE,
    forked_from="cv_0",
    redacted_at="2026-01-04T00:00:00.000Z",
    redacted_by=HUMAN_AUTHOR,
    pii=("email",),
    quarantine=Quarantine("pending", ("r1",), "rules-3"),
    handed_off=True,
    merged_from=MergedFrom("cv_2", "doc_9", 2),
)
VERSION_BARE = Version(
    ANCHOR, "/v.md", "doc_3", 1, 5, "c" * 64, None, "2026-01-01T00:00:00.000Z", None, HUMAN_AUTHOR, "write", 17.0
)
RECORD = TypedRecord(
    "rec_1",
    "ws_1",
    "Workspace",
    "fact",
    "the sky is blue",
    AUTHOR,
    "2026-01-01T00:00:00.000Z",
    "2026-01-02T00:00:00.000Z",
    lock_version=3,
    facet="weather",
    labels=("sky", "colour"),
    run_id="run_1",
    source_kind="human",
    source_ref="doc_1",
    visibility="private",
    user_id="u_1",
    observed_at="2026-01-01T00:00:00.000Z",
    valid_from="2026-01-01T00:00:00.000Z",
    valid_to="2027-01-01T00:00:00.000Z",
    supersedes="rec_0",
    superseded_by="rec_2",
    mention_count=4,
    evidence_count=2,
    pii=("email",),
    quarantine=QUARANTINE,
    content_digest="dg",
    group="grp",
    operation_id="op_1",
    last_seen_at="2026-01-05T00:00:00.000Z",
)
RECORD_BARE = TypedRecord(
    "rec_2", "ws_1", "Session", "note", "hello", HUMAN_AUTHOR, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"
)
PAGE = EntryPage(
    "cv_1",
    2,
    {
        "a": StoreEntry("a", 1, '{"x":1}', 7, "2026-01-01T00:00:00.000Z"),
        "b#c": StoreEntry("b#c", 3, '"s"', 3, "2026-01-02T00:00:00.000Z"),
    },
)
FORK_BASE = ForkBase("cv_2", "cv_1", {"/a.md": ("doc_1", 3), "/b.md": ("doc_2", 1)})
AGENT = Agent(
    "ag_1",
    "acc_1",
    "hu_1",
    "scout",
    "definition",
    {"tokens": 2000},
    "2026-01-01T00:00:00.000Z",
    token_digest="t1",
    deployment="prod",
    memories=(Attachment("mem_2", "readonly", False), Attachment("mem_1", "readwrite", True)),
    memories_revision=3,
)
AGENT_BARE = Agent("ag_2", "acc_1", "hu_1", "prog", "program", None, "2026-01-01T00:00:00.000Z")
CONVERSATION = Conversation(
    "cv_1",
    "ws_1",
    "acc_1",
    "hu_1",
    "2026-01-01T00:00:00.000Z",
    context_revision=4,
    archived=True,
    memory_context={"k": [1, 2]},
    answering_agent_id="ag_1",
    parent_public_id="cv_0",
    forked_at=1767312000,
)
CONVERSATION_BARE = Conversation("cv_2", "ws_1", "acc_1", "ag_1", "2026-01-01T00:00:00.000Z")
WORKSPACE = Workspace(
    "ws_1", "acc_1", "room", "2026-01-01T00:00:00.000Z", {"search": "exa"}, dedup_enabled=False, created_by="hu_1"
)
WORKSPACE_BARE = Workspace("ws_2", "acc_1", "bare", "2026-01-01T00:00:00.000Z")
WORKSPACE_INDEXED = Workspace("ws_3", "acc_1", "new", "2026-01-01T00:00:00.000Z", records_index=1)
IDEM = Record("hu_1", "kd", "fp", Answer(201, {"ok": True, "n": [1, "é"]}), 1767312000)
LEASE = Lease("mem_1", "/memories/a.md", AUTHOR, 1767312000.25)

# name -> (the item as the store writes it, how it reads back, the row it must read back as)
WRITTEN: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], Any] | None, Any]] = {
    "token": (
        lambda: kinds.TOKEN.item(TokenRow("sha", "agent", "ag_1", "acc_1", "scout")),
        kinds.TOKEN.read,
        TokenRow("sha", "agent", "ag_1", "acc_1", "scout"),
    ),
    "token_bare": (
        lambda: kinds.TOKEN.item(TokenRow("sha2", "human", "hu_1", "acc_1")),
        kinds.TOKEN.read,
        TokenRow("sha2", "human", "hu_1", "acc_1"),
    ),
    "account": (
        lambda: kinds.ACCOUNT.item(Account("acc_1", "Acme", "2026-01-01T00:00:00.000Z", "hu_1")),
        kinds.ACCOUNT.read,
        Account("acc_1", "Acme", "2026-01-01T00:00:00.000Z", "hu_1"),
    ),
    "account_bare": (
        lambda: kinds.ACCOUNT.item(Account("acc_2", "Bare", "2026-01-01T00:00:00.000Z")),
        kinds.ACCOUNT.read,
        Account("acc_2", "Bare", "2026-01-01T00:00:00.000Z"),
    ),
    "human": (
        lambda: kinds.HUMAN.item(Human("hu_1", "acc_1", "Ada", "2026-01-01T00:00:00.000Z", "t1")),
        kinds.HUMAN.read,
        Human("hu_1", "acc_1", "Ada", "2026-01-01T00:00:00.000Z", "t1"),
    ),
    "human_bare": (
        lambda: kinds.HUMAN.item(Human("hu_2", "acc_1", "Bob", "2026-01-01T00:00:00.000Z")),
        kinds.HUMAN.read,
        Human("hu_2", "acc_1", "Bob", "2026-01-01T00:00:00.000Z"),
    ),
    "agent": (lambda: kinds.AGENT.item(AGENT), kinds.AGENT.read, AGENT),
    "agent_bare": (lambda: kinds.AGENT.item(AGENT_BARE), kinds.AGENT.read, AGENT_BARE),
    "agent_index": (
        lambda: kinds.AGENT_INDEX.item(AGENT),
        kinds.agent_index_row,
        ("ag_1", "scout", "prod"),
    ),
    "definition": (lambda: kinds.DEFINITION.item(AGENT), kinds.definition_row, "ag_1"),
    "speaker": (
        lambda: kinds.SPEAKER.item(Speaker("sp_1", "acc_1", "ag_1", "Sam", "2026-01-01T00:00:00.000Z")),
        kinds.SPEAKER.read,
        Speaker("sp_1", "acc_1", "ag_1", "Sam", "2026-01-01T00:00:00.000Z"),
    ),
    "workspace": (lambda: kinds.WORKSPACE.item(WORKSPACE), kinds.WORKSPACE.read, WORKSPACE),
    "workspace_bare": (lambda: kinds.WORKSPACE.item(WORKSPACE_BARE), kinds.WORKSPACE.read, WORKSPACE_BARE),
    "workspace_indexed": (lambda: kinds.WORKSPACE.item(WORKSPACE_INDEXED), kinds.WORKSPACE.read, WORKSPACE_INDEXED),
    "member": (
        lambda: kinds.MEMBER.item(Member("ws_1", "agent", "ag_1", "curator", "2026-01-01T00:00:00.000Z")),
        kinds.MEMBER.read,
        Member("ws_1", "agent", "ag_1", "curator", "2026-01-01T00:00:00.000Z"),
    ),
    "conversation": (lambda: kinds.CONVERSATION_ANY.item(CONVERSATION), kinds.CONVERSATION_ANY.read, CONVERSATION),
    "conversation_bare": (
        lambda: kinds.CONVERSATION_ANY.item(CONVERSATION_BARE),
        kinds.CONVERSATION.read,
        CONVERSATION_BARE,
    ),
    "room_entry": (lambda: kinds.ROOM_CONVERSATION.item(CONVERSATION), None, None),
    "execution": (lambda: kinds.EXECUTION.item(EXECUTION), kinds.EXECUTION.read, EXECUTION),
    "execution_bare": (lambda: kinds.EXECUTION.item(EXECUTION_BARE), kinds.EXECUTION.read, EXECUTION_BARE),
    "memory_mounts": (lambda: {str(i): it for i, it in enumerate(kinds.memory_mount_items(EXECUTION))}, None, None),
    "record_term": (lambda: keys.wire(keys.record_term("ws_1", "Workspace", ("billing", 1205), "rec_1")), None, None),
    "document": (lambda: kinds.DOCUMENT.item(DOCUMENT), kinds.DOCUMENT.read, DOCUMENT),
    "document_bare": (lambda: kinds.DOCUMENT.item(DOCUMENT_BARE), kinds.DOCUMENT.read, DOCUMENT_BARE),
    "document_elsewhere": (
        lambda: kinds.DOCUMENT.item(DOCUMENT_BARE, anchor=Anchor("conversation", "cv_9").key),
        None,
        None,
    ),
    "version": (
        lambda: kinds.VERSION.item(VERSION),
        lambda it: kinds.VERSION.read(it, rest="/a/b#c.md"),
        VERSION,
    ),
    "version_bare": (
        lambda: kinds.VERSION.item(VERSION_BARE),
        lambda it: kinds.VERSION.read(it, rest="/v.md"),
        VERSION_BARE,
    ),
    "meta": (lambda: kinds.META.item(12, anchor=ANCHOR.key), None, None),
    "idempotency": (lambda: kinds.idempotency_item(IDEM, "att_1"), kinds.IDEMPOTENCY.read, IDEM),
    "memory": (lambda: kinds.MEMORY_ANY.item(ORG), kinds.MEMORY.read, ORG),
    "memory_bare": (lambda: kinds.MEMORY_ANY.item(ORG_BARE), kinds.MEMORY_ANY.read, ORG_BARE),
    "memory_index": (lambda: kinds.MEMORY_INDEX.item(ORG), None, None),
    "memory_name": (lambda: kinds.MEMORY_NAME.item(ORG), None, None),
    "memory_default": (
        lambda: kinds.MEMORY_DEFAULT.item(ORG),
        kinds.memory_default_row,
        ("mem_1", "team", MemoryDefault("deployment", "prod", "readonly", True)),
    ),
    "memory_ref": (
        lambda: kinds.MEMORY_REF.item(MemoryReference("mem_1", "ag_1", "scout", "readwrite", True), account_id="acc_1"),
        kinds.MEMORY_REF.read,
        MemoryReference("mem_1", "ag_1", "scout", "readwrite", True),
    ),
    "lease": (
        lambda: kinds.LEASE.item(LEASE, anchor=Anchor("memory", "mem_1").key),
        kinds.LEASE.read,
        Lease("mem_1", "/memories/a.md", AUTHOR, 1767312000.25),
    ),
    "record": (lambda: kinds.RECORD.item(RECORD), kinds.RECORD.read, RECORD),
    "record_bare": (lambda: kinds.RECORD.item(RECORD_BARE), kinds.RECORD.read, RECORD_BARE),
    "entry_page": (lambda: kinds.ENTRY_PAGE.item(PAGE), kinds.ENTRY_PAGE.read, PAGE),
    "entry_page_copy": (lambda: kinds.ENTRY_PAGE.item(PAGE, conversation_id="cv_7"), None, None),
    "fork_base": (lambda: kinds.FORK_BASE.item(FORK_BASE), kinds.FORK_BASE.read, FORK_BASE),
    "console_session": (
        lambda: kinds.CONSOLE_SESSION.item(ConsoleSession("sd", "hu_1", "td", 1767312000, 1767340800)),
        kinds.CONSOLE_SESSION.read,
        ConsoleSession("sd", "hu_1", "td", 1767312000, 1767340800),
    ),
}

# Kinds whose items are written by update expressions: a stored item, and the row it reads back as.
STORED: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], Any], Any]] = {
    "execution_stop": (
        {"pk": {"S": "EXEC#ex_1"}, "sk": {"S": "STOP"}, "stopped_at": {"N": "12.5"}, "stopped_by": {"S": "hu_1"}},
        kinds.EXECUTION_STOP.read,
        ExecutionStop("ex_1", 12.5, "hu_1"),
    ),
    "memory_stats": (
        {
            "pk": {"S": "ANCHOR#memory#mem_1"},
            "sk": {"S": "#META"},
            "doc_count": {"N": "3"},
            "bytes": {"N": "300"},
            "written_by": {"S": "agent:ag_1"},
            "written_by_name": {"S": "Scout"},
            "written_at": {"S": "2026-01-01T00:00:00.000Z"},
        },
        kinds.MEMORY_STATS.read,
        MemoryStats(3, 300, Author("agent", "ag_1", "Scout"), "2026-01-01T00:00:00.000Z"),
    ),
    "memory_stats_deleted": (
        {"pk": {"S": "ANCHOR#memory#mem_1"}, "sk": {"S": "#META"}, "deleted_at": {"N": "5"}},
        kinds.MEMORY_STATS.read,
        None,
    ),
    "memory_deleting": (
        {**kinds.MEMORY_ANY.item(ORG_BARE), "deleting": {"BOOL": True}},
        kinds.MEMORY.read,
        None,
    ),
    "conversation_deleted": (
        {**kinds.CONVERSATION_ANY.item(CONVERSATION), "deleted_at": {"N": "5"}},
        kinds.CONVERSATION.read,
        None,
    ),
    "execution_before_ttl": (
        {
            "pk": {"S": "EXEC#ex_3"},
            "sk": {"S": "EXEC"},
            "workspace_id": {"S": "ws_1"},
            "conversation_id": {"S": "cv_1"},
            "account_id": {"S": "acc_1"},
            "principal_kind": {"S": "agent"},
            "principal_id": {"S": "ag_1"},
            "bindings": {"L": []},
            "tools": {"L": []},
            "created_at": {"S": "2026-01-01T00:00:00.000Z"},
            "parent_id": {"S": "ex_0"},
        },
        kinds.EXECUTION.read,
        Execution(
            "ex_3",
            "ws_1",
            "cv_1",
            "acc_1",
            None,
            "agent",
            "ag_1",
            None,
            [],
            [],
            "2026-01-01T00:00:00.000Z",
            parent_id="ex_0",
            expires_at=1767225600 + DEFAULT_EXECUTION_TTL_SECONDS,
            ancestors=[Ancestor("ex_0", "")],
        ),
    ),
    "memory_mount": (
        {"pk": {"S": "ACCOUNT#acc_1"}, "sk": {"S": "MEMMOUNT#mem_1#ex_1"}, "expires_at": {"N": "99"}},
        kinds.memory_mount_row,
        ("mem_1", 99),
    ),
    "record_claim": (
        {
            "pk": {"S": "RECDUP#ws_1#grp"},
            "sk": {"S": "C#dg"},
            "record_id": {"S": "rec_1"},
            "claimed_until": {"N": "17.5"},
            "lock_version": {"N": "2"},
        },
        kinds.RECORD_CLAIM.read,
        RecordClaim("rec_1", 17.5, 2),
    ),
    "record_band": (
        {"pk": {"S": "RECBAND#ws_1#grp"}, "sk": {"S": "B#x"}, "ids": {"SS": ["rec_1", "rec_3", "rec_2"]}},
        kinds.RECORD_BAND.read,
        ("rec_3", "rec_2", "rec_1"),
    ),
    "run_line": (
        {
            "pk": {"S": "RECRUN#ws_1#h"},
            "sk": {"S": "rec_1"},
            "consolidated": {"BOOL": True},
            "claimed_by": {"S": "op"},
            "claimed_until": {"N": "3"},
        },
        kinds.RUN_LINE.read,
        RunLine("rec_1", True, "op", 3.0),
    ),
}

# Every Ref the domain batches, and the key it names.
REFS: dict[str, Ref] = {
    "token": Ref.token("sha"),
    "workspace": Ref.workspace("ws_1"),
    "member": Ref.member("ws_1", "ag_1"),
    "conversation": Ref.conversation("cv_1"),
    "agent": Ref.agent("ag_1"),
    "speaker": Ref.speaker("sp_1"),
    "human": Ref.human("hu_1"),
    "account": Ref.account("acc_1"),
    "execution": Ref.execution("ex_1"),
    "execution_stop": Ref.execution_stop("ex_1"),
    "document": Ref.document(SPEAKER_ANCHOR, "/a/b#c.md"),
    "idempotency": Ref.idempotency("hu_1", "kd"),
    "memory": Ref.memory("mem_1"),
    "memory_any": Ref.memory_any("mem_1"),
    "memory_stats": Ref.memory_stats("mem_1"),
    "lease": Ref.lease(Anchor("memory", "mem_1"), "/memories/a#b.md"),
    "record": Ref.record("ws_1", "Session", "rec_1"),
    "record_claim": Ref.record_claim("ws_1", "grp", "dg"),
    "record_band": Ref.record_band("ws_1", "grp", "x#y"),
    "version": Ref.version(ANCHOR, "/a/b#c.md", 7),
    "entry_page": Ref.entry_page("cv_1", 3),
    "fork_base": Ref.fork_base("cv_2"),
}


def _snapshot() -> dict[str, Any]:
    return {
        "items": {name: write() for name, (write, _, _) in WRITTEN.items()},
        "keys": {name: list(keys.ref_key(ref)) for name, ref in REFS.items()},
    }


def test_every_written_item_is_spelled_as_pinned() -> None:
    pinned = json.loads(SNAPSHOT.read_text())
    got = json.loads(json.dumps(_snapshot()))  # wire items are JSON: tuples read back as lists
    for name in pinned["items"]:
        assert got["items"][name] == pinned["items"][name], name
    assert got["items"].keys() == pinned["items"].keys()


def test_every_ref_names_the_pinned_key() -> None:
    pinned = json.loads(SNAPSHOT.read_text())
    assert {name: list(keys.ref_key(ref)) for name, ref in REFS.items()} == pinned["keys"]


@pytest.mark.parametrize("name", [n for n, (_, read, _) in WRITTEN.items() if read is not None])
def test_a_written_item_reads_back_as_its_row(name: str) -> None:
    write, read, row = WRITTEN[name]
    assert read is not None
    assert read(write()) == row


@pytest.mark.parametrize("name", list(STORED))
def test_a_stored_item_reads_back_as_its_row(name: str) -> None:
    item, read, row = STORED[name]
    assert read(item) == row


def test_a_pinned_item_reads_back_as_its_row() -> None:
    """What is on disk, not only what this build writes, reads back as the row."""
    pinned = json.loads(SNAPSHOT.read_text())["items"]
    for name, (_, read, row) in WRITTEN.items():
        if read is not None:
            assert read(pinned[name]) == row, name


if __name__ == "__main__":
    # Run once, against the store the formats are taken from: writes the snapshot.
    SNAPSHOT.write_text(json.dumps(_snapshot(), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
