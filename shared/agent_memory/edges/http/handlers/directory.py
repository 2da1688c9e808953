"""Directory routes: accounts, humans, workspaces, members, conversations, agents, speakers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Reply, Request
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.edges.http.secrets import operator_key
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.model import Member, Speaker, Workspace
    from agent_memory.domain.directory.service import ConversationState, NewAccount, NewAgent, NewHuman


def _conversation(status: int, state: ConversationState) -> Reply:
    return Reply(status, {"conversation": views.conversation(state.conversation, state.context)})


def _conversation_as(status: int) -> Callable[[ConversationState], Reply]:
    return lambda state: _conversation(status, state)


def create_account(req: Request) -> Reply:
    from agent_memory.domain.directory.service import require_operator
    from agent_memory.edges.requests.directory import CreateAccount

    presented = req.headers.get("x-operator-key")
    # The key is checked before the body is read: without it, nothing about the request matters.
    require_operator(operator_key() if presented else None, presented)
    body = parsed(req, CreateAccount)
    return answered(_account, lambda: services.directory().create_account(body.account.name, body.human.name))


def _account(out: NewAccount) -> Reply:
    return Reply(201, {"account": views.account(out.account), "human": views.human(out.human), "token": out.token})


def _human(out: NewHuman) -> Reply:
    return Reply(201, {"human": views.human(out.human), "token": out.token})


def create_human(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import CreateHuman

    body = parsed(req, CreateHuman)
    return answered(_human, lambda: services.directory().create_human(req.token, body.human.name))


def rotate_human_credentials(req: Request) -> Reply:
    return answered(_human, lambda: services.directory().rotate_human(req.token, req.params["human_public_id"]))


def revoke_human_credentials(req: Request) -> Reply:
    return answered(no_content, lambda: services.directory().revoke_human(req.token, req.params["human_public_id"]))


def create_workspace(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import CreateWorkspace

    body = parsed(req, CreateWorkspace)
    return answered(_workspace(201), lambda: services.directory().create_workspace(req.token, body.workspace.name))


def _workspace(status: int) -> Callable[[Workspace], Reply]:
    return lambda ws: Reply(status, {"workspace": views.workspace(ws)})


def update_workspace(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import UpdateWorkspace

    w = parsed(req, UpdateWorkspace).workspace
    dedup = None if w.settings is None or w.settings.dedup is None else w.settings.dedup.enabled
    return answered(
        _workspace(200),
        lambda: services.directory().update_workspace(
            req.token, req.params["workspace_public_id"], w.tool_provider_overrides, dedup
        ),
    )


def add_member(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import AddMember

    m = parsed(req, AddMember).member
    return answered(
        _member,
        lambda: services.directory().add_member(
            req.token, req.params["workspace_public_id"], m.human_public_id, m.agent_public_id, m.role or "member"
        ),
    )


def _member(member: Member) -> Reply:
    return Reply(201, {"member": views.member(member)})


def create_conversation(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import CreateConversation

    c = parsed(req, CreateConversation).conversation
    return answered(
        _conversation_as(201),
        lambda: services.directory().create_conversation(
            req.token,
            req.params["workspace_public_id"],
            c.answering_agent_public_id,
            c.memory_context,
            c.has_memory_context,
        ),
    )


def show_conversation(req: Request) -> Reply:
    p = req.params
    return _conversation(
        200, services.directory().show_conversation(req.token, p["workspace_public_id"], p["conversation_public_id"])
    )


def archive_conversation(req: Request) -> Reply:
    p = req.params
    return answered(
        _conversation_as(200),
        lambda: services.directory().archive(req.token, p["workspace_public_id"], p["conversation_public_id"]),
    )


def delete_conversation(req: Request) -> Reply:
    p = req.params
    return answered(
        no_content,
        lambda: services.directory().delete_conversation(
            req.token, p["workspace_public_id"], p["conversation_public_id"]
        ),
    )


def fork_conversation(req: Request) -> Reply:
    p = req.params
    return answered(
        _conversation_as(201),
        lambda: services.directory().fork(req.token, p["workspace_public_id"], p["conversation_public_id"]),
    )


def replace_memory_context(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import ReplaceMemoryContext

    body = parsed(req, ReplaceMemoryContext)
    p = req.params
    return answered(
        _conversation_as(200),
        lambda: services.directory().replace_memory_context(
            req.token, p["workspace_public_id"], p["conversation_public_id"], body.memory_context
        ),
    )


def create_agent(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import CreateAgent

    a = parsed(req, CreateAgent).agent
    return answered(
        _agent,
        lambda: services.directory().create_agent(req.token, a.name, a.kind or "program", a.memory_context_limit),
    )


def _agent(out: NewAgent) -> Reply:
    body: dict[str, object] = {"agent": views.agent(out.agent)}
    if out.token:
        body["token"] = out.token
    return Reply(201, body)


def rotate_agent_credentials(req: Request) -> Reply:
    return answered(
        lambda token: Reply(200, {"token": token}),
        lambda: services.directory().rotate(req.token, req.params["agent_public_id"]),
    )


def create_speaker(req: Request) -> Reply:
    from agent_memory.edges.requests.directory import CreateSpeaker

    s = parsed(req, CreateSpeaker).speaker
    return answered(_speaker, lambda: services.directory().create_speaker(req.token, s.name, s.agent_public_id))


def _speaker(speaker: Speaker) -> Reply:
    return Reply(201, {"speaker": views.speaker(speaker)})
