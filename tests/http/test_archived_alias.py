"""An alias root reaches another conversation's rows; once that conversation is archived they are read-only."""

from __future__ import annotations

from ..support import CONV, Api, alias, bindings, code, conv_base, pair


def test_writes_through_an_alias_of_an_archived_conversation_are_refused(api: Api) -> None:
    # Given a host conversation with a read_write alias to a second conversation holding a document
    ada, ws, host = api.room()
    source = api.conversation(ada, ws)
    doc = api.write(ada, conv_base(ws, source), "conversation/plan.md", "v1")
    assert doc.status_code == 201
    r = api.post(
        f"/workspaces/{ws}/conversations/{host}/memory_context",
        ada,
        {"memory_context": bindings(CONV, alias(source, "read_write"))},
    )
    assert r.status_code == 200, r.text
    base = conv_base(ws, host)
    assert api.write(ada, base, "group/plan.md", "v2", pair(doc)).status_code == 201
    current = api.show(ada, base, "group/plan.md")
    # When the aliased conversation is archived
    assert api.post(f"/workspaces/{ws}/conversations/{source}/archive", ada).status_code == 200
    revision = api.show_conversation(ada, ws, host)["context_revision"]
    # Then write, edit and delete through the alias are refused and change nothing
    assert code(api.write(ada, base, "group/plan.md", "v3", pair(current))) == (409, "conversation_archived")
    assert code(api.edit(ada, base, "group/plan.md", "v2", "v3", pair(current))) == (409, "conversation_archived")
    assert code(api.delete(ada, base, "group/plan.md", pair(current))) == (409, "conversation_archived")
    assert code(api.write(ada, base, "group/new.md", "x")) == (409, "conversation_archived")
    shown = api.show(ada, base, "group/plan.md")
    assert shown.json()["memory"]["content"] == "v2"
    assert api.show_conversation(ada, ws, host)["context_revision"] == revision
    # And the host's own root still takes writes
    assert api.write(ada, base, "conversation/mine.md", "ok").status_code == 201
