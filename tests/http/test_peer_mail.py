"""Peer mail: an execution started as mail from another, its bindings the intersection of both sides.

The world is runs.py's: Ada owns the room and stewards `alpha`, which answers and is a member; `visitor`
is a Speaker alpha controls; Bob is a member, Vic a viewer.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
import pytest
from agent_memory.store import keys

from ..support import AGENT, CONV, SPEAKER, WORKSPACE, Api, Who, alias, bindings, code, conv_base
from .runs import Run, create, make_run

MISSING = "01990000-0000-7000-8000-0000000000ff"


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def mail(run: Run, sender: dict[str, Any], conv: str, who: Who | None = None, **fields: Any) -> dict[str, Any]:
    """An execution started in `conv` as mail from `sender` (201 or the test stops here)."""
    return run.execution(who, conv, mail_from_execution_public_id=sender["public_id"], **fields)


def send(run: Run, sender: dict[str, Any], conv: str, who: Who | None = None, **fields: Any) -> Any:
    return run.start(who, conv, mail_from_execution_public_id=sender["public_id"], **fields)


def reach(ex: dict[str, Any]) -> dict[str, tuple[str, str | None, str]]:
    """name -> (anchor, speaker, access) of an execution's roots: what the intersection compares."""
    return {b["name"]: (b["anchor_public_id"], b.get("speaker_public_id"), b["access"]) for b in ex["bindings"]}


def anchors(ex: dict[str, Any]) -> dict[tuple[str, str, str | None], str]:
    """(scope, anchor, speaker) -> the best access an execution has there."""
    out: dict[tuple[str, str, str | None], str] = {}
    for b in ex["bindings"]:
        key = (b["scope"], b["anchor_public_id"], b.get("speaker_public_id"))
        if out.get(key) != "read_write":
            out[key] = b["access"]
    return out


def within(mailed: dict[str, Any], *sides: dict[str, Any]) -> None:
    """Every root of the mail is reached by each side, and never with more access than that side has."""
    for key, mine in anchors(mailed).items():
        for side in sides:
            theirs = anchors(side).get(key)
            assert theirs is not None, (key, side["bindings"])
            assert not (mine == "read_write" and theirs == "read"), (key, mine, theirs)


def expire(ex: dict[str, Any]) -> None:
    pk, sk = keys.execution(ex["public_id"])
    ddb = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    ddb.update_item(
        TableName=os.environ["TABLE_NAME"],
        Key={"pk": {"S": pk}, "sk": {"S": sk}},
        UpdateExpression="SET expires_at = :t",
        ExpressionAttributeValues={":t": {"N": "1"}},
    )


# ---- what mail records ------------------------------------------------------------------------------------


def test_mail_records_its_sender_in_its_view(run: Run) -> None:
    sender = run.execution(speaker_public_id=run.visitor)
    ordinary = run.execution(conv=run.conversation())
    mailed = mail(run, sender, run.conversation())
    assert mailed["mail_from_execution_public_id"] == sender["public_id"]
    assert ordinary["mail_from_execution_public_id"] is None
    assert sender["mail_from_execution_public_id"] is None
    # The principal is the caller and the answerer the receiving conversation's
    assert mailed["principal"] == {"kind": "agent", "public_id": run.alpha.public_id}
    assert mailed["agent_public_id"] == run.alpha.public_id


# ---- the rules, one each ----------------------------------------------------------------------------------


def test_the_receivers_own_conversation_root_is_absent_unless_the_sender_reaches_it(run: Run) -> None:
    receiver = run.conversation()
    # A sender that does not reach the receiving conversation: no conversation/ root in the mail
    stranger = run.execution(conv=run.conversation())
    mailed = mail(run, stranger, receiver)
    assert "conversation" not in run.roots(mailed)
    assert run.refused(mailed, "memory_read", path="conversation/plan.md") == "memory_scope_unavailable"
    # A sender that reaches it through an alias: the receiver's conversation/ root is there, at the alias's access
    near = run.execution(conv=run.conversation(memory_context=bindings(CONV, alias(receiver, "read"))))
    roots = reach(mail(run, near, receiver))
    assert roots["conversation"] == (receiver, None, "read")


def test_mail_into_the_senders_own_conversation_keeps_that_conversation(run: Run) -> None:
    sender = run.execution()
    mailed = mail(run, sender, run.conv)
    assert reach(mailed) == reach(sender)
    assert mailed["mail_from_execution_public_id"] == sender["public_id"]


def test_read_only_wins_on_either_side(run: Run) -> None:
    # The sender reads the room only; the receiver binds it read_write
    reader = run.execution(conv=run.conversation(memory_context=bindings(CONV, {**WORKSPACE, "access": "read"})))
    assert reach(mail(run, reader, run.conversation()))["workspace"] == (run.ws, None, "read")
    # The sender writes the room; the receiver binds it read-only
    writer = run.execution(conv=run.conversation())
    receiver = run.conversation(memory_context=bindings(CONV, {**WORKSPACE, "access": "read"}))
    assert reach(mail(run, writer, receiver))["workspace"] == (run.ws, None, "read")
    # Both write it: read_write
    assert reach(mail(run, writer, run.conversation()))["workspace"] == (run.ws, None, "read_write")


def test_a_root_whose_anchor_the_sender_does_not_reach_is_absent(run: Run) -> None:
    # The sender binds conversation/ only; the receiver has the default roots
    sender = run.execution(conv=run.conversation(memory_context=bindings(CONV)), speaker_public_id=run.visitor)
    mailed = mail(run, sender, run.conversation())
    assert run.roots(mailed) == {}
    assert run.refused(mailed, "memory_read", path="workspace/rules.md") == "memory_scope_unavailable"


def test_an_alias_survives_only_when_it_names_a_source_available_to_both(run: Run) -> None:
    group = run.conversation()
    receiver = run.conversation(memory_context=bindings(CONV, alias(group, "read_write")))
    # The sender does not reach the group: the alias is gone
    assert "group" not in run.roots(mail(run, run.execution(conv=run.conversation()), receiver))
    # The sender reaches it under another name: the alias survives, still the group
    named = run.execution(conv=run.conversation(memory_context=bindings(CONV, alias(group, "read_write", "team"))))
    assert reach(mail(run, named, receiver))["group"] == (group, None, "read_write")
    # The sender is in the group itself: its conversation/ root is the group, so the alias survives too
    inside = run.execution(conv=group)
    assert reach(mail(run, inside, receiver))["group"] == (group, None, "read_write")
    # An alias the sender has but the receiver does not configure is never added
    assert "team" not in run.roots(mail(run, named, run.conversation()))


def test_the_ordinary_speaker_root_follows_the_senders_captured_subject(run: Run) -> None:
    other = run.api.speaker(run.ada, run.alpha, "other")
    sender = run.execution(speaker_public_id=run.visitor)
    # A default receiver: speaker/ is the sender's subject, and so is the mail's subject
    mailed = mail(run, sender, run.conversation())
    assert mailed["subject"] == {"speaker_public_id": run.visitor}
    assert reach(mailed)["speaker"] == (run.visitor, run.visitor, "read_write")
    # A receiver whose speaker/ root names another person still follows the sender's subject
    pinned = run.conversation(memory_context=bindings(CONV, {**SPEAKER, "speaker_public_id": other}))
    assert reach(mail(run, sender, pinned))["speaker"][1] == run.visitor
    # A sender without a subject: the mail has none, and no speaker/ root
    bare = mail(run, run.execution(), run.conversation())
    assert bare["subject"] is None
    assert "speaker" not in run.roots(bare)
    # And mail cannot choose a subject of its own
    assert code(send(run, sender, run.conversation(), speaker_public_id=other)) == (400, "parameter_invalid")


def test_speaker_aliases_keep_the_senders_subject_and_that_subjects_ceiling(run: Run) -> None:
    other = run.api.speaker(run.ada, run.alpha, "other")
    person = {"name": "person", "scope": "speaker", "access": "read", "speaker_public_id": run.visitor}
    sender = run.execution(conv=run.conversation(memory_context=bindings(CONV, person)))
    # The receiver's alias names another person, read_write
    receiver = run.conversation(
        memory_context=bindings(
            CONV,
            {**person, "access": "read_write", "speaker_public_id": other},
            {"name": "friend", "scope": "speaker", "access": "read_write", "speaker_public_id": other},
        )
    )
    mailed = mail(run, sender, receiver)
    roots = run.roots(mailed)
    # The alias keeps the sender's subject and the sender's read-only ceiling for it
    assert (roots["person"]["speaker_public_id"], roots["person"]["access"]) == (run.visitor, "read")
    # An alias with no counterpart on the sender's side is absent
    assert "friend" not in roots
    # And a write through it is read-only
    assert run.refused(mailed, "memory_write", **create("person/prefs.md", "x")) == "memory_read_only"


def test_agent_and_speaker_rows_of_another_answerer_are_never_opened(run: Run) -> None:
    # The sender is alpha's execution about the visitor; the receiver is answered by beta, Ada's too
    beta = run.api.agent(run.ada, "beta")
    sender = run.execution(run.ada, speaker_public_id=run.visitor)
    mailed = mail(run, sender, run.conversation(answering=beta), run.ada)
    # beta's agent/ and (beta, visitor) speaker/ are anchors the sender never reached
    assert mailed["agent_public_id"] == beta.public_id
    assert list(run.roots(mailed)) == ["workspace"]


def test_the_receiving_profiles_limit_narrows_further(run: Run) -> None:
    narrow = run.api.agent(run.ada, "narrow", limit=bindings(CONV, {**WORKSPACE, "access": "read"}))
    run.api.member(run.ada, run.ws, narrow)
    sender = run.execution(speaker_public_id=run.visitor)
    receiver = run.conversation(answering=narrow)
    mailed = mail(run, sender, receiver, run.ada)
    # The sender writes the room, the limit reads it; nothing the limit lacks comes back
    assert reach(mailed) == {"workspace": (run.ws, None, "read")}


def test_mail_across_workspaces_of_one_account_shares_only_what_both_reach(run: Run) -> None:
    elsewhere = run.api.workspace(run.ada, "elsewhere")
    run.api.member(run.ada, elsewhere, run.alpha)
    receiver = run.api.conversation(run.ada, elsewhere, answering_agent_public_id=run.alpha.public_id)
    sender = run.execution(speaker_public_id=run.visitor)
    r = run.api.post(
        f"/workspaces/{elsewhere}/conversations/{receiver}/executions",
        run.alpha,
        {"execution": {"mail_from_execution_public_id": sender["public_id"]}},
    )
    assert r.status_code == 201, r.text
    mailed = r.json()["execution"]
    # The rooms differ, so workspace/ is gone; alpha's own rows and the visitor pair follow
    assert list(run.roots(mailed)) == ["agent", "speaker"]
    within(mailed, sender)


# ---- never wider than either side ---------------------------------------------------------------------------

SIDES = [None, "read", "read_write"]


@pytest.mark.parametrize("receiver_access", ["read", "read_write"])
@pytest.mark.parametrize("sender_access", SIDES)
def test_mail_never_widens_access_beyond_either_side(run: Run, receiver_access: str, sender_access: str | None) -> None:
    # The receiver binds its own conversation, the room and a shared group at `receiver_access`
    group = run.conversation()
    receiver = run.conversation(
        memory_context=bindings(
            {**CONV, "access": receiver_access},
            {**WORKSPACE, "access": receiver_access},
            {**AGENT, "access": receiver_access},
            alias(group, receiver_access),
        )
    )
    # The sender reaches the receiver, the room and the group at `sender_access` (or not at all)
    reached = (
        []
        if sender_access is None
        else [
            {**WORKSPACE, "access": sender_access},
            {**AGENT, "access": sender_access},
            alias(receiver, sender_access, "inbox"),
            alias(group, sender_access, "team"),
        ]
    )
    sender = run.execution(conv=run.conversation(memory_context=bindings(CONV, *reached)))
    ordinary = run.execution(conv=receiver)
    mailed = mail(run, sender, receiver)
    # Then every root is reached by both sides, never with more access than either
    within(mailed, sender, ordinary)
    roots = reach(mailed)
    if sender_access is None:
        assert roots == {}
        return
    best = "read" if "read" in (receiver_access, sender_access) else "read_write"
    assert roots == {
        "conversation": (receiver, None, best),
        "workspace": (run.ws, None, best),
        "agent": (run.alpha.public_id, None, best),
        "group": (group, None, best),
    }
    # And the tools agree: a write lands only where both sides write
    for root in roots:
        out = run.tool(mailed, "memory_write", **create(f"{root}/note.md", "x"))
        assert out["code"] == (None if best == "read_write" else "memory_read_only"), (root, out)


# ---- the mail execution at work -------------------------------------------------------------------------------


def test_tool_calls_honour_the_intersected_bindings(run: Run) -> None:
    receiver = run.conversation()
    sender = run.execution(
        conv=run.conversation(
            memory_context=bindings(CONV, {**WORKSPACE, "access": "read"}, alias(receiver, "read_write", "inbox"))
        )
    )
    mailed = mail(run, sender, receiver)
    # A root the sender had read-only is refused as the tools refuse any read-only root
    assert run.refused(mailed, "memory_write", **create("workspace/rules.md", "x")) == "memory_read_only"
    # A root the sender never had is unavailable, though the receiver binds it
    assert run.refused(mailed, "memory_read", path="agent/notes.md") == "memory_scope_unavailable"
    # Where both write, the write lands in the receiving conversation and bumps its revision
    before = run.revision(receiver)
    run.ok(mailed, "memory_write", **create("conversation/reply.md", "done"))
    assert run.revision(receiver) == before + 1
    shown = run.api.show(run.ada, conv_base(run.ws, receiver), "conversation/reply.md")
    assert shown.json()["memory"]["content"] == "done"


def test_the_block_of_a_mail_execution_shows_only_the_intersected_roots(run: Run) -> None:
    receiver = run.conversation()
    assert run.api.write(run.ada, run.base, "workspace/rules.md", "room rules").status_code == 201
    assert (
        run.api.write(run.ada, conv_base(run.ws, receiver), "conversation/private.md", "inbox only").status_code == 201
    )
    sender = run.execution(conv=run.conversation(memory_context=bindings(CONV, {**WORKSPACE, "access": "read"})))
    mailed = mail(run, sender, receiver)
    r = run.api.post(f"/executions/{mailed['public_id']}/memory_block", run.alpha, {"memory_block": {}})
    assert r.status_code == 200, r.text
    block = r.json()["memory_block"]
    assert [e["path"] for e in block["included"]] == ["workspace/rules.md"]
    assert "room rules" in block["text"] and "inbox only" not in block["text"]
    # While an ordinary execution there sees both
    ordinary = run.execution(conv=receiver)
    r = run.api.post(f"/executions/{ordinary['public_id']}/memory_block", run.alpha, {"memory_block": {}})
    assert {e["path"] for e in r.json()["memory_block"]["included"]} == {
        "workspace/rules.md",
        "conversation/private.md",
    }


def test_completion_continues_with_the_captured_subject_and_limits(run: Run) -> None:
    # Given mail that kept the room read-only and the visitor pair, but not the agent's own rows
    home = run.conversation(memory_context=bindings(CONV, {**WORKSPACE, "access": "read"}, SPEAKER))
    sender = run.execution(conv=home, speaker_public_id=run.visitor)
    receiver = run.conversation()
    mailed = mail(run, sender, receiver)
    assert reach(mailed) == {"workspace": (run.ws, None, "read"), "speaker": (run.visitor, run.visitor, "read_write")}
    # When the receiver's configuration changes afterwards, the mail keeps what it captured
    assert run.configure(bindings(CONV), conv=receiver).status_code == 200
    assert run.ok(mailed, "memory_ls", path="workspace/")["is_error"] is False
    # A child it spawns keeps its subject and its narrowed roots: the agent's rows do not come back
    child = run.execution(conv=run.conversation(), parent_execution_public_id=mailed["public_id"])
    assert child["subject"] == {"speaker_public_id": run.visitor}
    assert reach(child) == {"workspace": (run.ws, None, "read"), "speaker": (run.visitor, run.visitor, "read_write")}
    # And its reply, mailed back home, is intersected with the mail's own roots
    reply = mail(run, mailed, home)
    assert reply["subject"] == {"speaker_public_id": run.visitor}
    assert reach(reply) == {"workspace": (run.ws, None, "read"), "speaker": (run.visitor, run.visitor, "read_write")}
    within(reply, mailed, sender)


# ---- who may send, and refusals -------------------------------------------------------------------------------


def test_a_member_with_write_standing_may_send_as_anothers_execution_without_its_private_rows(run: Run) -> None:
    sender = run.execution(speaker_public_id=run.visitor)
    mailed = mail(run, sender, run.conversation(), run.bob)
    # The mail is Bob's, and alpha's own rows are out of his reach on the receiving side
    assert mailed["principal"] == {"kind": "human", "public_id": run.bob.public_id}
    assert list(run.roots(mailed)) == ["workspace"]


def test_who_may_not_send_mail(run: Run) -> None:
    sender = run.execution()
    receiver = run.conversation()
    # A viewer cannot start an execution on the receiver
    assert code(send(run, sender, receiver, run.vic)) == (403, "not_authorized")
    # A caller who only reads the sender's conversation and is not its principal may not send as it
    theirs = run.api.workspace(run.ada, "theirs")
    run.api.member(run.ada, theirs, run.bob, role="viewer")
    hidden_conv = run.api.conversation(run.ada, theirs)
    foreign = run.api.post(f"/workspaces/{theirs}/conversations/{hidden_conv}/executions", run.ada, {}).json()[
        "execution"
    ]
    assert code(send(run, foreign, receiver, run.bob)) == (403, "not_authorized")
    # One who cannot see the sender's conversation at all does not learn it exists
    assert code(send(run, foreign, receiver, run.alpha)) == (404, "not_found")


def test_an_unknown_sender_or_one_of_another_account_is_not_found(run: Run) -> None:
    receiver = run.conversation()
    assert code(run.start(conv=receiver, mail_from_execution_public_id=MISSING)) == (404, "not_found")
    outsider = run.api.account("other", "olga")
    ows = run.api.workspace(outsider)
    oconv = run.api.conversation(outsider, ows)
    theirs = run.api.post(f"/workspaces/{ows}/conversations/{oconv}/executions", outsider, {}).json()["execution"]
    assert code(send(run, theirs, receiver)) == (404, "not_found")
    # And the outsider cannot mail into this room
    r = run.api.post(
        f"{run.conv_url(receiver)}/executions",
        outsider,
        {"execution": {"mail_from_execution_public_id": theirs["public_id"]}},
    )
    assert code(r) == (404, "not_found")


def test_an_expired_sender_sends_nothing(run: Run) -> None:
    sender = run.execution()
    expire(sender)
    assert code(send(run, sender, run.conversation())) == (409, "execution_expired")


def test_a_stopped_sender_sends_nothing(run: Run) -> None:
    sender = run.execution()
    assert run.api.post(f"/executions/{sender['public_id']}/stop", run.principal(sender), {}).status_code == 200
    assert code(send(run, sender, run.conversation())) == (409, "execution_stopped")


def test_an_archived_receiver_accepts_no_mail(run: Run) -> None:
    sender = run.execution()
    receiver = run.conversation()
    assert run.api.post(f"{run.conv_url(receiver)}/archive", run.ada).status_code == 200
    assert code(send(run, sender, receiver)) == (409, "conversation_archived")


@pytest.mark.parametrize("field", ["parent_execution_public_id", "delegate_to_agent_public_id"])
def test_mail_is_neither_a_spawn_nor_a_delegation(run: Run, field: str) -> None:
    sender = run.execution()
    value: str = sender["public_id"] if field == "parent_execution_public_id" else run.alpha.public_id
    fields: dict[str, Any] = {field: value}
    assert code(send(run, sender, run.conversation(), None, **fields)) == (400, "parameter_invalid")


def test_a_malformed_sender_id_is_parameter_invalid(run: Run) -> None:
    assert code(run.start(mail_from_execution_public_id="nope")) == (400, "parameter_invalid")
