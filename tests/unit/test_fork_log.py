"""The fork's item builders: the pointer copy under the child's anchor and the fork-log entry the sweeper reads."""

from __future__ import annotations

import pytest
from agent_memory.core.model import Anchor, Author, Document
from agent_memory.store.forklog import FORK_LOG_TTL_SECONDS, fork_log_item, fork_log_partition, fork_log_time
from agent_memory.store.items import marshal
from agent_memory.store.kinds import DOCUMENT
from boto3.dynamodb.types import TypeSerializer

CONV = "0199aaaa-0000-7000-8000-000000000001"


LEGACY = Author("human", "")  # a row written before rows named their author reads back as this


def _doc(description: str | None, author: Author) -> Document:
    return Document(
        Anchor("conversation", CONV),
        "notes/plan.md",
        "0199aaaa-0000-7000-8000-000000000002",
        7,
        1234,
        "ab" * 32,
        description,
        "2026-01-01T00:00:00.000Z",
        "content/x/y",
        author,
    )


@pytest.mark.parametrize("description", [None, "", "Use when planning."])
@pytest.mark.parametrize(
    "author",
    [
        LEGACY,
        Author("human", "0199aaaa-0000-7000-8000-000000000003", "ada"),
        Author("agent", "0199aaaa-0000-7000-8000-000000000004", "helper", "0199aaaa-0000-7000-8000-000000000005"),
    ],
)
def test_a_pointer_row_reads_back_as_written_and_a_copy_changes_only_its_key(
    description: str | None, author: Author
) -> None:
    doc = _doc(description, author)
    # A row reads back as itself
    assert DOCUMENT.read(DOCUMENT.item(doc)) == doc
    # Its item is what boto3's serializer would send, an absent description left out
    ser = TypeSerializer()
    expected = {k: ser.serialize(v) for k, v in _plain_item(doc).items() if v is not None}
    assert DOCUMENT.item(doc) == expected
    # Copied under another anchor, only the key changes
    other = Anchor("conversation", "0199aaaa-0000-7000-8000-0000000000ff")
    moved = DOCUMENT.read(DOCUMENT.item(doc, anchor=other.key))
    assert moved.anchor == other and (moved.rest, moved.public_id, moved.written_at) == (
        doc.rest,
        doc.public_id,
        doc.written_at,
    )
    assert DOCUMENT.item(doc, anchor=other.key)["pk"] == {"S": f"ANCHOR#{other.key}"}


def _plain_item(d: Document) -> dict[str, object]:
    return {
        "pk": f"ANCHOR#{d.anchor.key}",
        "sk": f"DOC#{d.rest}",
        "public_id": d.public_id,
        "lock_version": d.lock_version,
        "bytesize": d.bytesize,
        "sha256": d.sha256,
        "description": d.description,
        "written_at": d.written_at,
        "content_key": d.content_key,
        "author": f"{d.author.kind}:{d.author.public_id}",
        "author_name": d.author.name,
        "author_execution": d.author.execution_public_id,
    }


def test_a_row_of_an_unexpected_shape_is_still_read() -> None:
    # Given a row whose optional attributes are stored as NULL or missing, and numbers in another spelling
    raw = DOCUMENT.item(_doc(None, LEGACY))
    raw["description"] = {"NULL": True}
    raw["lock_version"] = {"N": "7.0"}
    del raw["author"]
    # Then it still reads as the row
    assert DOCUMENT.read(raw) == _doc(None, LEGACY)


def test_fork_log_keys_sort_by_time_within_an_hourly_partition() -> None:
    # 2026-01-01T10:59:59.999Z and one millisecond later fall in consecutive hours
    late = 1767265199.999
    assert fork_log_partition(late) == "FORKLOG#2026-01-01T10"
    assert fork_log_partition(late + 0.001) == "FORKLOG#2026-01-01T11"
    assert fork_log_time(late) == "2026-01-01T10:59:59.999Z"
    times = [fork_log_time(late + k / 1000) for k in range(-5, 5)]
    assert times == sorted(times)


def test_a_fork_log_entry_names_each_copied_key_once_and_expires() -> None:
    entry = fork_log_item(CONV, ["content/b", "content/a", "content/b"], epoch=1767265199.5)
    assert entry["pk"] == "FORKLOG#2026-01-01T10"
    assert entry["sk"] == f"2026-01-01T10:59:59.500Z#{CONV}"
    assert entry["content_keys"] == ["content/a", "content/b"]
    assert entry["expires_at"] == 1767265199 + FORK_LOG_TTL_SECONDS
    # And it is stored as a list of strings the sweeper reads back
    assert marshal(entry)["content_keys"] == {"L": [{"S": "content/a"}, {"S": "content/b"}]}
