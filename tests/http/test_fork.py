"""Forks over HTTP: copy-on-write copies of a conversation's pointer rows and configuration, and archive.

A fork must read and write no content bytes and copy in one DynamoDB transaction (two only past what one
holds); the AWS calls are counted with botocore's event hooks on the very clients the in-process gateway's
handlers use.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..support import CONV, Api, Who, alias, bindings, code, conv_base, created
from .world import aws_calls, scan_table

MAX_DOCS = 64


def fork_url(ws: str, conv: str) -> str:
    return f"/workspaces/{ws}/conversations/{conv}/fork"


def fork(api: Api, who: Who, ws: str, conv: str) -> dict[str, Any]:
    r = api.post(fork_url(ws, conv), who)
    assert r.status_code == 201, r.text
    child: dict[str, Any] = r.json()["conversation"]
    return child


def rows(api: Api, who: Who, ws: str, conv: str) -> list[dict[str, Any]]:
    r = api.ls(who, conv_base(ws, conv))
    assert r.status_code == 200, r.text
    out: list[dict[str, Any]] = r.json()["memory"]
    return out


def content(api: Api, who: Who, ws: str, conv: str, path: str) -> str | None:
    r = api.show(who, conv_base(ws, conv), path)
    if r.status_code == 404:
        assert r.json()["error"]["code"] == "memory_not_found"
        return None
    assert r.status_code == 200, r.text
    text: str = r.json()["memory"]["content"]
    return text


# ---- what a fork copies ------------------------------------------------------------------------------


def test_a_fork_lists_exactly_the_parents_documents_with_their_age_and_content(api: Api) -> None:
    # Given a conversation with a few documents, one of them rewritten, plus a workspace document
    ada, ws, parent = api.room()
    base = conv_base(ws, parent)
    first = created(api.write(ada, base, "conversation/plan.md", "ship friday"))
    created(api.write(ada, base, "conversation/plan.md", "ship monday", first))
    created(api.write(ada, base, "conversation/notes/a.md", "alpha"))
    created(api.write(ada, base, "workspace/team.md", "the team"))
    before = api.show_conversation(ada, ws, parent)

    # When it is forked
    child = fork(api, ada, ws, parent)

    # Then the child is a new conversation that names its parent and starts at revision 0
    assert child["public_id"] != parent
    assert child["parent_public_id"] == parent
    assert child["workspace_public_id"] == ws
    assert child["context_revision"] == 0 and child["archived"] is False
    assert child["memory_context"] == before["memory_context"]
    # And its listing is the parent's at that instant: same ids, versions, sizes and written_at
    assert rows(api, ada, ws, child["public_id"]) == rows(api, ada, ws, parent)
    # And every document reads the same content
    for path in ("conversation/plan.md", "conversation/notes/a.md"):
        assert content(api, ada, ws, child["public_id"], path) == content(api, ada, ws, parent, path)
    # And the fork changed nothing on the parent
    assert api.show_conversation(ada, ws, parent) == before
    # And the child reads back as the fork answered it
    assert api.show_conversation(ada, ws, child["public_id"]) == child


def test_parent_and_child_never_see_each_others_later_writes_or_deletes(api: Api) -> None:
    # Given a parent with three documents, forked
    ada, ws, parent = api.room()
    pb = conv_base(ws, parent)
    pairs = {p: created(api.write(ada, pb, f"conversation/{p}", f"{p} v0")) for p in ("a.md", "b.md", "c.md")}
    child = fork(api, ada, ws, parent)["public_id"]
    cb = conv_base(ws, child)

    # When the parent rewrites a.md and deletes b.md
    assert api.write(ada, pb, "conversation/a.md", "a parent v1", pairs["a.md"]).status_code == 201
    assert api.delete(ada, pb, "conversation/b.md", pairs["b.md"]).status_code == 204
    # Then the child still has the versions it was forked with
    assert content(api, ada, ws, child, "conversation/a.md") == "a.md v0"
    assert content(api, ada, ws, child, "conversation/b.md") == "b.md v0"

    # When the child rewrites c.md (with the pair it lists), deletes a.md and creates d.md
    child_rows = {r["path"]: (r["public_id"], r["lock_version"]) for r in rows(api, ada, ws, child)}
    assert api.write(ada, cb, "conversation/c.md", "c child v1", child_rows["conversation/c.md"]).status_code == 201
    assert api.delete(ada, cb, "conversation/a.md", child_rows["conversation/a.md"]).status_code == 204
    assert api.write(ada, cb, "conversation/d.md", "d child").status_code == 201
    # Then the parent sees none of it
    assert content(api, ada, ws, parent, "conversation/c.md") == "c.md v0"
    assert content(api, ada, ws, parent, "conversation/a.md") == "a parent v1"
    assert content(api, ada, ws, parent, "conversation/d.md") is None
    assert content(api, ada, ws, parent, "conversation/b.md") is None
    # And each side lists only its own state
    assert {r["path"] for r in rows(api, ada, ws, parent)} == {"conversation/a.md", "conversation/c.md"}
    assert {r["path"] for r in rows(api, ada, ws, child)} == {
        "conversation/b.md",
        "conversation/c.md",
        "conversation/d.md",
    }


def test_a_fork_of_a_fork_copies_the_child_as_it_is(api: Api) -> None:
    # Given a parent, its fork, and a document only the fork has
    ada, ws, parent = api.room()
    created(api.write(ada, conv_base(ws, parent), "conversation/root.md", "from the root"))
    child = fork(api, ada, ws, parent)["public_id"]
    created(api.write(ada, conv_base(ws, child), "conversation/child.md", "from the child"))

    # When the fork is forked again
    grandchild = fork(api, ada, ws, child)

    # Then the grandchild names the fork as its parent and holds both documents
    assert grandchild["parent_public_id"] == child
    g = grandchild["public_id"]
    assert rows(api, ada, ws, g) == rows(api, ada, ws, child)
    assert content(api, ada, ws, g, "conversation/root.md") == "from the root"
    assert content(api, ada, ws, g, "conversation/child.md") == "from the child"
    # And it is as independent as any fork
    assert api.write(ada, conv_base(ws, g), "conversation/g.md", "mine").status_code == 201
    assert content(api, ada, ws, child, "conversation/g.md") is None


def test_a_full_conversation_forks_into_a_full_child(api: Api) -> None:
    # Given a conversation holding the maximum of 64 documents
    ada, ws, parent = api.room()
    base = conv_base(ws, parent)
    for i in range(MAX_DOCS):
        created(api.write(ada, base, f"conversation/n{i:02d}.md", f"note {i}"))

    # When it is forked
    child = fork(api, ada, ws, parent)["public_id"]
    cb = conv_base(ws, child)

    # Then the child holds all 64 and its own count is full too: a 65th is refused
    listed = rows(api, ada, ws, child)
    assert len([r for r in listed if r["path"].startswith("conversation/")]) == MAX_DOCS
    assert code(api.write(ada, cb, "conversation/extra.md", "x")) == (422, "memory_full")
    # And after deleting one, the child may create one, while the parent stays full
    first = next(r for r in listed if r["path"] == "conversation/n00.md")
    assert api.delete(ada, cb, "conversation/n00.md", (first["public_id"], first["lock_version"])).status_code == 204
    assert api.write(ada, cb, "conversation/extra.md", "x").status_code == 201
    assert code(api.write(ada, base, "conversation/extra.md", "x")) == (422, "memory_full")


def test_a_fork_that_fits_reads_no_content_and_copies_in_one_transaction(api: Api) -> None:
    # Given a conversation with 8 documents
    ada, ws, parent = api.room()
    base = conv_base(ws, parent)
    for i in range(8):
        created(api.write(ada, base, f"conversation/n{i}.md", f"note {i}"))

    # When it is forked, counting every AWS request the service makes meanwhile
    with aws_calls() as seen:
        r = api.post(fork_url(ws, parent), ada)
    assert r.status_code == 201, r.text

    # Then S3 saw nothing, and DynamoDB saw the batch read, the parent's mark, the Query of its rows and
    # ONE transaction: the child, its copies, their first history records and the write budget together
    assert seen == Counter(
        {
            "dynamodb:BatchGetItem": 1,
            "dynamodb:UpdateItem": 1,
            "dynamodb:Query": 1,
            "dynamodb:TransactWriteItems": 1,
        }
    )
    # And each copy starts the child's history with one record
    child = r.json()["conversation"]["public_id"]
    records = [i for i in scan_table() if i["pk"] == f"ANCHOR#conversation#{child}" and i["sk"].startswith("VER#")]
    assert len(records) == 8 and {i["operation"] for i in records} == {"fork"}


def test_forking_a_full_conversation_reads_no_content_and_copies_in_two_transactions(api: Api) -> None:
    # Given a Human-answered conversation with 64 documents (their content cached or not, no matter)
    ada, ws, parent = api.room()
    base = conv_base(ws, parent)
    for i in range(MAX_DOCS):
        created(api.write(ada, base, f"conversation/n{i:02d}.md", f"note {i} " * 50))

    # When it is forked, counting every AWS request the service makes meanwhile
    with aws_calls() as seen:
        r = api.post(fork_url(ws, parent), ada)
    assert r.status_code == 201, r.text

    # Then S3 saw nothing, and DynamoDB saw the request's one batch read (token, workspace, membership,
    # conversation), one update marking the parent as being forked (before its rows are read, so a redaction
    # meanwhile keeps the bytes the copies will point at), one Query listing the parent's rows, and, since
    # 64 copies and their 64 records pass DynamoDB's 100 items a transaction, one transaction writing the
    # child's first history records (with the write budget, when one is on) and one writing the child itself
    assert not [op for op in seen if op.startswith("s3:")], seen
    assert seen == Counter(
        {
            "dynamodb:BatchGetItem": 1,
            "dynamodb:UpdateItem": 1,
            "dynamodb:Query": 1,
            "dynamodb:TransactWriteItems": 2,
        }
    )
    # And each copied document starts the child's history with exactly one record
    child = r.json()["conversation"]["public_id"]
    records = [i for i in scan_table() if i["pk"] == f"ANCHOR#conversation#{child}" and i["sk"].startswith("VER#")]
    assert len(records) == MAX_DOCS and {i["operation"] for i in records} == {"fork"}


def test_a_relative_conversation_root_follows_the_child_and_an_explicit_alias_stays_shared(api: Api) -> None:
    # Given a shared conversation, and a parent bound to it as group/ next to its own conversation/ root
    ada, ws, shared = api.room()
    context = bindings(CONV, alias(shared, "read_write"))
    parent = api.conversation(ada, ws, memory_context=context)

    # When the parent is forked
    child = fork(api, ada, ws, parent)
    c = child["public_id"]

    # Then the configuration is copied verbatim
    assert child["memory_context"] == context
    anchors = {b["name"]: b["anchor_public_id"] for b in child["effective_memory_context"]["bindings"]}
    # And the relative conversation/ root now names the child, while group/ still names the shared one
    assert anchors == {"conversation": c, "group": shared}
    # And a write through the child's group/ lands in the shared conversation, seen by the parent too
    assert api.write(ada, conv_base(ws, c), "group/agenda.md", "shared agenda").status_code == 201
    assert content(api, ada, ws, parent, "group/agenda.md") == "shared agenda"
    assert content(api, ada, ws, shared, "conversation/agenda.md") == "shared agenda"
    # And a write through the child's conversation/ stays the child's
    assert api.write(ada, conv_base(ws, c), "conversation/own.md", "child only").status_code == 201
    assert content(api, ada, ws, parent, "conversation/own.md") is None


def test_an_agent_forks_its_own_conversation_and_still_answers_the_child(api: Api) -> None:
    # Given a conversation answered by a paired program, which keeps notes in it
    ada = api.account()
    ws = api.workspace(ada)
    bot = api.agent(ada)
    conv = api.conversation(ada, ws, answering_agent_public_id=bot.public_id)
    created(api.write(bot, conv_base(ws, conv), "conversation/state.md", "step 3"))

    # When the agent itself forks it
    child = fork(api, bot, ws, conv)

    # Then the child is answered by the same agent, which reads and writes it
    assert child["answering_agent_public_id"] == bot.public_id
    c = child["public_id"]
    assert content(api, bot, ws, c, "conversation/state.md") == "step 3"
    assert api.write(bot, conv_base(ws, c), "conversation/more.md", "step 4").status_code == 201


# ---- who may fork ------------------------------------------------------------------------------------


def test_a_fork_needs_write_standing_on_a_visible_conversation(api: Api) -> None:
    # Given a conversation, a viewer of its workspace, and a Human of another account
    ada, ws, conv = api.room()
    vic = api.human(ada, "vic")
    api.member(ada, ws, vic, role="viewer")
    eve = api.account("evil", "eve")

    # Then a viewer may read but not fork
    assert api.ls(vic, conv_base(ws, conv)).status_code == 200
    assert code(api.post(fork_url(ws, conv), vic)) == (403, "not_authorized")
    # And nobody else sees the conversation at all
    assert code(api.post(fork_url(ws, conv), eve)) == (404, "not_found")
    other_ws = api.workspace(ada, "other")
    assert code(api.post(fork_url(other_ws, conv), ada)) == (404, "not_found")
    assert code(api.post(fork_url(ws, "01990000-0000-7000-8000-000000000000"), ada)) == (404, "not_found")
    # And a request without a token is not authenticated
    assert code(api.post(fork_url(ws, conv))) == (401, "not_authenticated")
    # And none of those refusals created a conversation
    assert api.show_conversation(ada, ws, conv)["context_revision"] == 0


# ---- archive -----------------------------------------------------------------------------------------


def test_an_archived_conversation_keeps_reads_refuses_writes_bumps_nothing_and_can_be_forked(api: Api) -> None:
    # Given a conversation with a document, then archived
    ada, ws, conv = api.room()
    base = conv_base(ws, conv)
    doc = created(api.write(ada, base, "conversation/plan.md", "ship friday"))
    revision = api.show_conversation(ada, ws, conv)["context_revision"]
    archived = api.post(f"/workspaces/{ws}/conversations/{conv}/archive", ada)
    assert archived.status_code == 200, archived.text
    assert archived.json()["conversation"]["archived"] is True

    # Then every change is refused as archived
    refused = [
        api.write(ada, base, "conversation/plan.md", "ship monday", doc),
        api.write(ada, base, "conversation/new.md", "new"),
        api.edit(ada, base, "conversation/plan.md", "friday", "monday", doc),
        api.delete(ada, base, "conversation/plan.md", doc),
        api.post(f"/workspaces/{ws}/conversations/{conv}/memory_context", ada, {"memory_context": None}),
    ]
    assert [code(r) for r in refused] == [(409, "conversation_archived")] * len(refused)
    # And reads still answer
    assert content(api, ada, ws, conv, "conversation/plan.md") == "ship friday"
    assert [r["path"] for r in rows(api, ada, ws, conv)] == ["conversation/plan.md"]
    assert api.grep(ada, base, "friday").json()["matches"][0]["path"] == "conversation/plan.md"
    # And neither the archive nor the refusals bumped the revision
    assert api.show_conversation(ada, ws, conv)["context_revision"] == revision

    # When the archived conversation is forked
    child = fork(api, ada, ws, conv)

    # Then the child is not archived and takes writes, while the parent stays archived
    assert child["archived"] is False
    c = child["public_id"]
    assert content(api, ada, ws, c, "conversation/plan.md") == "ship friday"
    assert api.write(ada, conv_base(ws, c), "conversation/plan.md", "ship monday", doc).status_code == 201
    assert api.show_conversation(ada, ws, conv)["archived"] is True
    assert content(api, ada, ws, conv, "conversation/plan.md") == "ship friday"
