"""A document whose content object is missing breaks only that document.

An object can go missing under a live pointer when a sweep runs with too short a grace during a write (the
write stores its content, the sweep sees an unreferenced object and deletes it, then the pointer commits),
or when someone deletes it by hand. Show and edit answer 500 `memory_content_missing` naming the path; the
listing still lists it; the memory block and grep serve every other document and name the broken one; a
write with its pair (or a delete) repairs it. The content cache is emptied before each read, so a read
shows what S3 holds rather than what this process remembers.
"""

from __future__ import annotations

from typing import Any

from agent_memory.core.settings import settings
from agent_memory.domain.memory.block import Entry, section_cost
from agent_memory.store import CACHE, aws_clients
from agent_memory.store.sweeper import SweepReport, sweep_configured

from ..support import Api, Who, code, conv_base, created, listed


def content_key(path: str) -> str:
    """The content key of a document's current version, read from its pointer row in the table."""
    ddb, _ = aws_clients()
    rest = path.split("/", 1)[1]
    for it in ddb.scan(TableName=settings().table_name)["Items"]:
        if it["sk"]["S"] == f"DOC#{rest}" and "content_key" in it:
            key: str = it["content_key"]["S"]
            return key
    raise AssertionError(f"no pointer row for {path}")


def lose(key: str) -> None:
    _, s3 = aws_clients()
    s3.delete_object(Bucket=settings().bucket_name, Key=key)
    CACHE.clear()


def block(api: Api, who: Who, ws: str, conv: str, **fields: Any) -> dict[str, Any]:
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/memory_block", who, {"memory_block": fields})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()["memory_block"]
    return out


def test_a_missing_content_object_breaks_only_its_document(api: Api) -> None:
    # Given two documents of the same size, bravo written after alpha, and bravo's object deleted by hand
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    created(api.write(ada, base, "conversation/a.md", "alpha"))
    bravo = created(api.write(ada, base, "conversation/b.md", "bravo"))
    full = block(api, ada, ws, conv)
    (newest, _) = full["included"]
    assert newest["path"] == "conversation/b.md"
    one = section_cost(Entry(newest["path"], newest["bytesize"], newest["written_at"]))
    lose(content_key("conversation/b.md"))

    # Then show and edit answer their own code, naming the document, and change nothing
    shown = api.show(ada, base, "conversation/b.md")
    assert code(shown) == (500, "memory_content_missing")
    assert shown.json()["error"]["details"] == {"path": "conversation/b.md"}
    assert "conversation/b.md" in shown.json()["error"]["message"]
    assert code(api.edit(ada, base, "conversation/b.md", "bravo", "x", bravo)) == (500, "memory_content_missing")
    # And the other document still reads, and the listing lists both
    assert api.show(ada, base, "conversation/a.md").json()["memory"]["content"] == "alpha"
    assert listed(api, ada, base) == ["conversation/a.md", "conversation/b.md"]

    # And the block, with room for one document, spends it on the readable one and names the broken one
    b = block(api, ada, ws, conv, budget_bytes=one)
    assert [e["path"] for e in b["included"]] == ["conversation/a.md"]
    assert b["omitted"] == []
    assert [e["path"] for e in b["unreadable"]] == ["conversation/b.md"]
    assert "alpha" in b["text"] and "bravo" not in b["text"]
    assert '<omitted reason="content_missing">\n<document path="conversation/b.md" bytesize="5"' in b["text"]
    # With exact byte accounting: the included sections are what the budget was charged
    assert b["used_bytes"] == one
    head = b["text"][: b["text"].index("\n") + 1]  # the wrapper line, which declares the boundary
    sections = b["text"][len(head) : b["text"].index('<omitted reason="content_missing">')]
    assert len(sections.encode()) == b["used_bytes"]

    # And grep searches the rest and says what it skipped
    r = api.grep(ada, base, "alpha|bravo")
    assert r.status_code == 200, r.text
    assert [m["path"] for m in r.json()["matches"]] == ["conversation/a.md"]
    assert r.json()["unreadable"] == ["conversation/b.md"]

    # And a write with the pair repairs the document (it needs no old content), after which all is whole
    created(api.write(ada, base, "conversation/b.md", "bravo again", bravo))
    CACHE.clear()
    assert api.show(ada, base, "conversation/b.md").json()["memory"]["content"] == "bravo again"
    assert "unreadable" not in block(api, ada, ws, conv)
    assert "unreadable" not in api.grep(ada, base, "alpha|bravo").json()


def test_a_sweep_with_no_grace_during_a_write_leaves_that_document_broken_and_the_rest_served(api: Api) -> None:
    # Given a document, and a second write whose commit waits while a sweep with grace 0 runs: the new
    # version is stored but no row points at it yet, so the sweep deletes it (why the CLI has a floor)
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    created(api.write(ada, base, "conversation/kept.md", "kept"))
    ddb, _ = aws_clients()
    reports: list[SweepReport] = []

    def sweep_first(**_: Any) -> None:
        if not reports:
            reports.append(sweep_configured(grace_seconds=0, settle_seconds=0))

    ddb.meta.events.register("before-call.dynamodb.TransactWriteItems", sweep_first, unique_id="test-sweep-mid")
    try:
        # When the write commits after the sweep
        assert api.write(ada, base, "conversation/late.md", "late").status_code == 201
    finally:
        ddb.meta.events.unregister("before-call.dynamodb.TransactWriteItems", unique_id="test-sweep-mid")
    assert reports[0].deleted == 1
    CACHE.clear()

    # Then only that document is broken: show names it, the listing and the block serve the rest
    assert code(api.show(ada, base, "conversation/late.md")) == (500, "memory_content_missing")
    assert listed(api, ada, base) == ["conversation/kept.md", "conversation/late.md"]
    b = block(api, ada, ws, conv)
    assert [e["path"] for e in b["included"]] == ["conversation/kept.md"]
    assert [e["path"] for e in b["unreadable"]] == ["conversation/late.md"]
    # And deleting it works, since a delete needs only the pair
    late = api.ls(ada, base).json()["memory"][1]
    pair = (late["public_id"], late["lock_version"])
    assert api.delete(ada, base, "conversation/late.md", pair).status_code == 204
    assert "unreadable" not in block(api, ada, ws, conv)
