"""Executions over HTTP: what a run freezes, who may start one, archive, spawn and delegation."""

from __future__ import annotations

from typing import Any

import pytest

from ..support import AGENT, CONV, SPEAKER, WORKSPACE, Api, alias, bindings, code, conv_base, pair
from .runs import TOOL_NAMES, Run, create, make_run

EXECUTION_KEYS = {
    "public_id",
    "workspace_public_id",
    "conversation_public_id",
    "agent_public_id",
    "principal",
    "subject",
    "mail_from_execution_public_id",
    "bindings",
    "tools",
    "created_at",
    "expires_at",
    "stopped",
}


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def shared_alias(group: str) -> dict[str, Any]:
    return bindings(CONV, WORKSPACE, AGENT, SPEAKER, alias(group, "read_write"))


# ---- starting an execution ----------------------------------------------------------------------------


def test_an_execution_freezes_its_bindings_subject_and_tools(run: Run) -> None:
    # When the answering agent starts an execution for a person it is talking with
    r = run.start(speaker_public_id=run.visitor)

    # Then the execution names its parts and every root the run may use, with resolved anchors
    assert r.status_code == 201, r.text
    ex = r.json()["execution"]
    assert set(ex) == EXECUTION_KEYS
    assert (ex["workspace_public_id"], ex["conversation_public_id"]) == (run.ws, run.conv)
    assert ex["agent_public_id"] == run.alpha.public_id
    assert ex["principal"] == {"kind": "agent", "public_id": run.alpha.public_id}
    assert ex["subject"] == {"speaker_public_id": run.visitor}
    assert ex["tools"] == TOOL_NAMES
    roots = run.roots(ex)
    assert list(roots) == ["conversation", "workspace", "agent", "speaker"]
    assert roots["conversation"]["anchor_public_id"] == run.conv
    assert roots["workspace"]["anchor_public_id"] == run.ws
    assert roots["agent"]["anchor_public_id"] == run.alpha.public_id
    assert (roots["speaker"]["agent_public_id"], roots["speaker"]["speaker_public_id"]) == (
        run.alpha.public_id,
        run.visitor,
    )
    # And the entries read exactly like the conversation's effective_memory_context entries
    door = {
        b["name"]: b
        for b in run.api.show_conversation(run.alpha, run.ws, run.conv)["effective_memory_context"]["bindings"]
    }
    assert {k: v for k, v in roots.items() if k != "speaker"} == door


def test_without_a_subject_the_speaker_root_stays_out(run: Run) -> None:
    # When an execution starts with no speaker
    ex = run.execution()
    # Then it has no subject and no speaker/ root, and the tools say so
    assert ex["subject"] is None
    assert "speaker" not in run.roots(ex)
    assert run.refused(ex, "memory_read", path="speaker/prefs.md") == "memory_scope_unavailable"


def test_a_member_may_start_one_without_reaching_the_agents_own_rows(run: Run) -> None:
    # When Bob, a member who does not steward the agent, starts an execution
    ex = run.execution(run.bob)
    # Then it is his, and the agent's private roots are not among its bindings
    assert ex["principal"] == {"kind": "human", "public_id": run.bob.public_id}
    assert ex["agent_public_id"] == run.alpha.public_id
    assert list(run.roots(ex)) == ["conversation", "workspace"]
    assert run.refused(ex, "memory_read", path="agent/notes.md") == "memory_scope_unavailable"
    # And he may not start one about a speaker: that would reach the (agent, speaker) pair's notes
    assert code(run.start(run.bob, speaker_public_id=run.visitor)) == (403, "not_authorized")
    # While the steward's own execution reaches them
    assert list(run.roots(run.execution(run.ada, speaker_public_id=run.visitor))) == [
        "conversation",
        "workspace",
        "agent",
        "speaker",
    ]


def test_who_may_not_start_an_execution(run: Run) -> None:
    outsider = run.api.account("other", "olga")
    # A viewer has no write standing
    assert code(run.start(run.vic)) == (403, "not_authorized")
    # Someone from another account cannot see the room
    assert code(run.start(outsider)) == (404, "not_found")
    # No token, no execution
    r = run.api.post(f"{run.conv_url()}/executions", None, {"execution": {}})
    assert code(r) == (401, "not_authenticated")
    # An unknown conversation
    missing = "01990000-0000-7000-8000-0000000000ff"
    assert code(run.start(conv=missing)) == (404, "not_found")


def test_an_empty_body_starts_an_ordinary_execution(run: Run) -> None:
    r = run.api.post(f"{run.conv_url()}/executions", run.alpha, {})
    assert r.status_code == 201, r.text
    assert r.json()["execution"]["tools"] == TOOL_NAMES


@pytest.mark.parametrize(
    "fields",
    [
        {"speaker_public_id": "not-a-uuid"},
        {"parent_execution_public_id": 7},
        {"delegate_to_agent_public_id": "x"},
        {"tools": "memory_read"},
        {"tools": ["memory_read", "memory_grep"]},
        {"tools": ["memory_read", "memory_read"]},
        {"tools": [1]},
    ],
)
def test_malformed_fields_are_parameter_invalid(run: Run, fields: dict[str, Any]) -> None:
    assert code(run.start(**fields)) == (400, "parameter_invalid")


def test_an_execution_body_that_is_not_an_object_is_parameter_invalid(run: Run) -> None:
    r = run.api.post(f"{run.conv_url()}/executions", run.alpha, {"execution": []})
    assert code(r) == (400, "parameter_invalid")


def test_the_subject_must_be_a_speaker_of_the_answering_agent(run: Run) -> None:
    # Given a speaker of another agent, and a speaker id that names nobody
    beta = run.api.agent(run.ada, "beta")
    theirs = run.api.speaker(run.ada, beta)
    # Then neither can be the subject
    assert code(run.start(speaker_public_id=theirs)) == (403, "not_authorized")
    assert code(run.start(speaker_public_id="01990000-0000-7000-8000-0000000000ff")) == (403, "not_authorized")


def test_tools_can_be_narrowed(run: Run) -> None:
    ex = run.execution(tools=["memory_read", "memory_ls"])
    # The list comes back in the service's own order
    assert ex["tools"] == ["memory_ls", "memory_read"]


# ---- frozen configuration -------------------------------------------------------------------------------


def test_a_later_binding_change_affects_new_executions_only(run: Run) -> None:
    # Given a room document and a running execution that binds workspace/
    assert run.api.write(run.ada, run.base, "workspace/handbook.md", "be kind").status_code == 201
    before = run.execution()
    # When the conversation's configuration drops workspace/
    r = run.configure(bindings(CONV))
    assert r.status_code == 200, r.text
    after = run.execution()
    # Then the running execution still reads it, and a new one does not have the root
    assert run.ok(before, "memory_read", path="workspace/handbook.md")["data"]["content"] == "be kind"
    assert "workspace" in run.roots(before)
    assert list(run.roots(after)) == ["conversation"]
    assert run.refused(after, "memory_read", path="workspace/handbook.md") == "memory_scope_unavailable"


def test_a_write_through_a_running_execution_keeps_its_access_mode(run: Run) -> None:
    # Given an execution started while workspace/ was read_write
    before = run.execution()
    run.configure(bindings(CONV, {**WORKSPACE, "access": "read"}))
    after = run.execution()
    # Then the old run may still write the room, the new one is read-only there
    assert not run.tool(before, "memory_write", **create("workspace/a.md", "x"))["is_error"]
    assert run.refused(after, "memory_write", **create("workspace/b.md", "y")) == "memory_read_only"


# ---- archive --------------------------------------------------------------------------------------------


def test_an_archived_conversation_lets_an_accepted_execution_finish_its_writes(run: Run) -> None:
    # Given an accepted execution and a document it read
    ex = run.execution()
    doc = run.ok(ex, "memory_write", **create("conversation/plan.md", "draft"))
    # When the conversation is archived
    assert run.api.post(f"{run.conv_url()}/archive", run.ada).status_code == 200
    revision = run.revision()
    # Then the management door refuses writes, but the execution finishes its own and they bump the revision
    assert code(run.api.write(run.ada, run.base, "conversation/other.md", "x")) == (409, "conversation_archived")
    edited = run.ok(
        ex,
        "memory_edit",
        path="conversation/plan.md",
        old_text="draft",
        new_text="final",
        expected_public_id=doc["data"]["public_id"],
        expected_lock_version=0,
    )
    assert run.revision() == revision + 1
    run.ok(
        ex,
        "memory_delete",
        path="conversation/plan.md",
        expected_public_id=edited["data"]["public_id"],
        expected_lock_version=1,
    )
    assert run.revision() == revision + 2
    # And no new execution is accepted there
    assert code(run.start()) == (409, "conversation_archived")


# ---- spawn ------------------------------------------------------------------------------------------------


def test_a_spawned_child_inherits_the_bindings_relative_roots_follow_it_shared_aliases_stay(run: Run) -> None:
    # Given a parent conversation binding a shared group conversation, and an execution there
    group = run.conversation()
    parent_conv = run.conversation(memory_context=shared_alias(group))
    parent = run.execution(conv=parent_conv, speaker_public_id=run.visitor)
    # When the run spawns a child execution in a child conversation
    child_conv = run.conversation()
    child = run.execution(conv=child_conv, parent_execution_public_id=parent["public_id"])
    # Then the child carries the parent's roots: conversation/ is the child's, group/ is still the shared one
    roots = run.roots(child)
    assert list(roots) == ["conversation", "workspace", "agent", "speaker", "group"]
    assert roots["conversation"]["anchor_public_id"] == child_conv
    assert roots["group"]["anchor_public_id"] == group
    # And it keeps the parent's subject
    assert child["subject"] == {"speaker_public_id": run.visitor}
    assert roots["speaker"]["speaker_public_id"] == run.visitor
    # And its writes land there
    run.ok(child, "memory_write", **create("conversation/task.md", "child notes"))
    run.ok(child, "memory_write", **create("group/shared.md", "for everyone"))
    assert run.api.show(run.ada, conv_base(run.ws, child_conv), "conversation/task.md").status_code == 200
    assert code(run.api.show(run.ada, conv_base(run.ws, parent_conv), "conversation/task.md")) == (
        404,
        "memory_not_found",
    )
    shared = run.api.show(run.ada, conv_base(run.ws, group), "conversation/shared.md")
    assert shared.json()["memory"]["content"] == "for everyone"
    # And each write bumped the child conversation's revision, where the run answers
    assert run.revision(child_conv) == 2


def test_a_spawn_ignores_the_child_conversations_own_configuration(run: Run) -> None:
    # Given a parent with default roots, and a child conversation configured with conversation/ only
    parent = run.execution()
    child_conv = run.conversation(memory_context=bindings(CONV))
    # Then the child execution still has the parent's roots
    child = run.execution(conv=child_conv, parent_execution_public_id=parent["public_id"])
    assert list(run.roots(child)) == ["conversation", "workspace", "agent"]


def test_a_profile_limit_can_exclude_an_inherited_shared_alias(run: Run) -> None:
    # Given a parent binding a shared group, and a child conversation answered by an agent whose profile
    # allows conversation/ and a read-only workspace/ only
    group = run.conversation()
    parent = run.execution(conv=run.conversation(memory_context=shared_alias(group)))
    narrow = run.api.agent(run.ada, "narrow", limit=bindings(CONV, {**WORKSPACE, "access": "read"}))
    child_conv = run.conversation(answering=narrow)
    # When the child execution is spawned there
    child = run.execution(conv=child_conv, parent_execution_public_id=parent["public_id"])
    # Then the shared alias is gone, and the limit's read-only access wins
    roots = run.roots(child)
    assert list(roots) == ["conversation", "workspace"]
    assert roots["workspace"]["access"] == "read"
    assert child["agent_public_id"] == narrow.public_id
    # (group/ is no root at all for it now, so the path itself is refused)
    assert run.refused(child, "memory_read", path="group/shared.md") == "memory_path_invalid"


def test_spawn_refusals(run: Run) -> None:
    parent = run.execution(speaker_public_id=run.visitor)
    # An unknown parent
    assert code(run.start(parent_execution_public_id="01990000-0000-7000-8000-0000000000ff")) == (404, "not_found")
    # A parent from another workspace
    other_ws = run.api.workspace(run.ada, "elsewhere")
    other_conv = run.api.conversation(run.ada, other_ws, answering_agent_public_id=run.alpha.public_id)
    r = run.api.post(
        f"/workspaces/{other_ws}/conversations/{other_conv}/executions",
        run.ada,
        {"execution": {"parent_execution_public_id": parent["public_id"]}},
    )
    assert code(r) == (404, "not_found")
    # A child keeps its parent's subject: it cannot pick another
    r = run.start(parent_execution_public_id=parent["public_id"], speaker_public_id=run.visitor)
    assert code(r) == (400, "parameter_invalid")
    # A parent in a conversation the caller cannot see
    hidden = run.api.conversation(run.ada, other_ws)
    outsider_parent = run.api.post(
        f"/workspaces/{other_ws}/conversations/{hidden}/executions", run.ada, {"execution": {}}
    ).json()["execution"]
    assert code(run.start(parent_execution_public_id=outsider_parent["public_id"])) == (404, "not_found")


# ---- delegation -------------------------------------------------------------------------------------------


def test_delegation_keeps_the_subject_but_selects_the_delegates_own_speaker_documents(run: Run) -> None:
    # Given alpha's execution for the visitor, with a note about that person
    beta = run.api.agent(run.ada, "beta")
    run.api.member(run.ada, run.ws, beta)
    parent = run.execution(speaker_public_id=run.visitor)
    run.ok(parent, "memory_write", **create("speaker/prefs.md", "alpha: likes tea"))
    # When beta takes the work over from alpha's execution
    r = run.api.post(
        f"{run.conv_url()}/executions",
        beta,
        {
            "execution": {
                "parent_execution_public_id": parent["public_id"],
                "delegate_to_agent_public_id": beta.public_id,
            }
        },
    )
    assert r.status_code == 201, r.text
    child = r.json()["execution"]
    # Then the subject is the same person, but speaker/ and agent/ are beta's own
    assert child["subject"] == {"speaker_public_id": run.visitor}
    assert child["agent_public_id"] == beta.public_id
    roots = run.roots(child)
    assert (roots["speaker"]["agent_public_id"], roots["speaker"]["speaker_public_id"]) == (beta.public_id, run.visitor)
    assert roots["agent"]["anchor_public_id"] == beta.public_id
    # And beta does not read alpha's note about the visitor; its own note stays its own
    assert (
        run.api.post(
            f"/executions/{child['public_id']}/tools/memory_read", beta, {"input": {"path": "speaker/prefs.md"}}
        ).json()["code"]
        == "memory_not_found"
    )
    wrote = run.api.post(
        f"/executions/{child['public_id']}/tools/memory_write",
        beta,
        {"input": create("speaker/prefs.md", "beta: prefers email")},
    ).json()
    assert not wrote["is_error"], wrote
    assert run.ok(parent, "memory_read", path="speaker/prefs.md")["data"]["content"] == "alpha: likes tea"
    # The conversation door, for alpha and that person, agrees
    shown = run.api.show(run.alpha, run.base, "speaker/prefs.md", speaker_public_id=run.visitor)
    assert shown.json()["memory"]["content"] == "alpha: likes tea"


def test_delegation_by_another_agent_never_opens_the_delegates_private_rows(run: Run) -> None:
    # Given alpha's execution for the visitor
    beta = run.api.agent(run.ada, "beta")
    parent = run.execution(speaker_public_id=run.visitor)
    # When alpha itself delegates to beta
    child = run.execution(parent_execution_public_id=parent["public_id"], delegate_to_agent_public_id=beta.public_id)
    # Then the child answers as beta, but alpha cannot reach beta's agent/ or speaker/ rows through it
    assert child["agent_public_id"] == beta.public_id
    assert list(run.roots(child)) == ["conversation", "workspace"]


def test_delegation_without_a_parent_checks_the_subject_against_the_answering_agent(run: Run) -> None:
    beta = run.api.agent(run.ada, "beta")
    # The steward delegates a fresh execution for alpha's visitor to beta
    ex = run.execution(run.ada, speaker_public_id=run.visitor, delegate_to_agent_public_id=beta.public_id)
    roots = run.roots(ex)
    assert (roots["speaker"]["agent_public_id"], roots["speaker"]["speaker_public_id"]) == (beta.public_id, run.visitor)


def test_delegation_to_an_unknown_agent_is_not_found(run: Run) -> None:
    r = run.start(delegate_to_agent_public_id="01990000-0000-7000-8000-0000000000ff")
    assert code(r) == (404, "not_found")
    outsider = run.api.account("other", "olga")
    foreign = run.api.agent(outsider, "foreign")
    assert code(run.start(delegate_to_agent_public_id=foreign.public_id)) == (404, "not_found")


def test_a_door_write_and_a_tool_write_meet_the_same_condition(run: Run) -> None:
    # Given a document written through the door and an execution that read it
    doc = run.api.write(run.ada, run.base, "conversation/plan.md", "v1")
    ex = run.execution()
    seen = run.ok(ex, "memory_read", path="conversation/plan.md")
    # When the door changes it in between
    assert run.api.edit(run.ada, run.base, "conversation/plan.md", "v1", "v2", pair(doc)).status_code == 200
    # Then the tool's write with the old pair is stale, and nothing changed
    revision = run.revision()
    stale = run.tool(
        ex,
        "memory_write",
        path="conversation/plan.md",
        content="v3",
        expected_public_id=seen["data"]["public_id"],
        expected_lock_version=0,
    )
    assert stale["code"] == "stale_object"
    assert run.revision() == revision
    assert run.api.show(run.ada, run.base, "conversation/plan.md").json()["memory"]["content"] == "v2"


def test_a_human_answered_conversation_runs_without_agent_roots(run: Run) -> None:
    # Given a conversation a person answers
    conv = run.api.conversation(run.ada, run.ws)
    # When Ada starts an execution there
    ex = run.execution(run.ada, conv=conv)
    # Then no agent answers it, and there is no agent/ root to reach
    assert ex["agent_public_id"] is None
    assert list(run.roots(ex)) == ["conversation", "workspace"]
    assert run.refused(ex, "memory_read", path="agent/notes.md") == "memory_scope_unavailable"
    # And a subject cannot be chosen, since no agent controls a speaker here
    assert code(run.start(run.ada, conv=conv, speaker_public_id=run.visitor)) == (403, "not_authorized")
