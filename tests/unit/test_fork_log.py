"""The fork's item builders: the hand-built pointer copy and the fork-log entry the sweeper reads."""

from __future__ import annotations

import pytest
from agent_memory.model import Anchor, Document
from agent_memory.store.dynamo import (
    FORK_LOG_TTL_SECONDS,
    _doc_item,
    _doc_row,
    doc_attributes,
    doc_from_attributes,
    fork_log_item,
    fork_log_partition,
    fork_log_time,
    marshal,
    unmarshal,
)

CONV = "0199aaaa-0000-7000-8000-000000000001"


def _doc(description: str | None, author: str) -> Document:
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
@pytest.mark.parametrize("author", ["", "human:0199aaaa-0000-7000-8000-000000000003"])
def test_a_hand_built_copy_is_the_item_the_serializer_builds(description: str | None, author: str) -> None:
    doc = _doc(description, author)
    assert doc_attributes(doc) == marshal(_doc_item(doc))
    assert doc_from_attributes(doc_attributes(doc)) == _doc_row(unmarshal(doc_attributes(doc))) == doc
    assert doc_from_attributes(doc_attributes(doc), doc.anchor) == doc
    # Copied under another anchor, only the key changes
    other = Anchor("conversation", "0199aaaa-0000-7000-8000-0000000000ff")
    moved = doc_from_attributes(doc_attributes(doc, other))
    assert moved.anchor == other and (moved.rest, moved.public_id, moved.written_at) == (
        doc.rest,
        doc.public_id,
        doc.written_at,
    )


def test_a_row_of_an_unexpected_shape_is_still_read() -> None:
    raw = marshal(_doc_item(_doc(None, "")))
    raw["description"] = {"NULL": True}
    assert doc_from_attributes(raw) == _doc_row(unmarshal(raw))


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
