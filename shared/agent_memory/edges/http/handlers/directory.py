"""Directory routes: accounts, humans, workspaces, members, conversations, agents, speakers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.edges import services
from agent_memory.edges.http.glue import Request
from agent_memory.edges.http.handlers import answered, no_content, parsed
from agent_memory.edges.http.secrets import operator_key
from agent_memory.render import views

# Request models and domain modules are imported inside the verbs that use them: a route's Lambda loads
# only its own verb's (handlers/__init__.py).
if TYPE_CHECKING:
    from agent_memory.core.model import Member, Speaker, Workspace
    from agent_memory.domain.directory.service import ConversationState, NewAccount, NewAgent, NewHuman


def _conversation(state: ConversationState) -> object:
    return {"conversation": views.conversation(state.conversation, state.context)}


def create_account(req: Request) -> object:
    from agent_memory.domain.directory.service import require_operator
    from agent_memory.edges.requests.directory import CreateAccount

    presented = req.headers.get("x-operator-key")
    # The key is checked before the body is read: without it, nothing about the request matters.
    require_operator(operator_key() if presented else None, presented)
    body = parsed(req, CreateAccount)
    return answered(req, _account, lambda: services.directory().create_account(body.account.name, body.human.name))


def _account(out: NewAccount) -> object:
    return {"account": views.account(out.account), "human": views.human(out.human), "token": out.token}


def _human(out: NewHuman) -> object:
    return {"human": views.human(out.human), "token": out.token}


def create_human(req: Request) -> object:
    from agent_memory.edges.requests.directory import CreateHuman

    body = parsed(req, CreateHuman)
    return answered(req, _human, lambda: services.directory().create_human(req.token, body.human.name))


def rotate_human_credentials(req: Request) -> object:
    return answered(req, _human, lambda: services.directory().rotate_human(req.token, req.params["human_public_id"]))


def revoke_human_credentials(req: Request) -> object:
    return answered(
        req, no_content, lambda: services.directory().revoke_human(req.token, req.params["human_public_id"])
    )


def create_workspace(req: Request) -> object:
    from agent_memory.edges.requests.directory import CreateWorkspace

    body = parsed(req, CreateWorkspace)
    return answered(req, _workspace, lambda: services.directory().create_workspace(req.token, body.workspace.name))


def _workspace(ws: Workspace) -> object:
    return {"workspace": views.workspace(ws)}


def update_workspace(req: Request) -> object:
    from agent_memory.edges.requests.directory import UpdateWorkspace

    w = parsed(req, UpdateWorkspace).workspace
    dedup = None if w.settings is None or w.settings.dedup is None else w.settings.dedup.enabled
    return answered(
        req,
        _workspace,
        lambda: services.directory().update_workspace(
            req.token, req.params["workspace_public_id"], w.tool_provider_overrides, dedup
        ),
    )


def add_member(req: Request) -> object:
    from agent_memory.edges.requests.directory import AddMember

    m = parsed(req, AddMember).member
    return answered(
        req,
        _member,
        lambda: services.directory().add_member(
            req.token, req.params["workspace_public_id"], m.human_public_id, m.agent_public_id, m.role or "member"
        ),
    )


def _member(member: Member) -> object:
    return {"member": views.member(member)}


def create_conversation(req: Request) -> object:
    from agent_memory.edges.requests.directory import CreateConversation

    c = parsed(req, CreateConversation).conversation
    return answered(
        req,
        _conversation,
        lambda: services.directory().create_conversation(
            req.token,
            req.params["workspace_public_id"],
            c.answering_agent_public_id,
            c.memory_context,
            c.has_memory_context,
        ),
    )


def show_conversation(req: Request) -> object:
    p = req.params
    return _conversation(
        services.directory().show_conversation(req.token, p["workspace_public_id"], p["conversation_public_id"])
    )


def archive_conversation(req: Request) -> object:
    p = req.params
    return answered(
        req,
        _conversation,
        lambda: services.directory().archive(req.token, p["workspace_public_id"], p["conversation_public_id"]),
    )


def delete_conversation(req: Request) -> object:
    p = req.params
    return answered(
        req,
        no_content,
        lambda: services.directory().delete_conversation(
            req.token, p["workspace_public_id"], p["conversation_public_id"]
        ),
    )


def fork_conversation(req: Request) -> object:
    p = req.params
    return answered(
        req,
        _conversation,
        lambda: services.directory().fork(req.token, p["workspace_public_id"], p["conversation_public_id"]),
    )


def replace_memory_context(req: Request) -> object:
    from agent_memory.edges.requests.directory import ReplaceMemoryContext

    body = parsed(req, ReplaceMemoryContext)
    p = req.params
    return answered(
        req,
        _conversation,
        lambda: services.directory().replace_memory_context(
            req.token, p["workspace_public_id"], p["conversation_public_id"], body.memory_context
        ),
    )


def create_agent(req: Request) -> object:
    from agent_memory.edges.requests.directory import CreateAgent

    a = parsed(req, CreateAgent).agent
    return answered(
        req,
        _agent,
        lambda: services.directory().create_agent(req.token, a.name, a.kind or "program", a.memory_context_limit),
    )


def _agent(out: NewAgent) -> object:
    body: dict[str, object] = {"agent": views.agent(out.agent)}
    if out.token:
        body["token"] = out.token
    return body


def rotate_agent_credentials(req: Request) -> object:
    return answered(
        req,
        lambda token: {"token": token},
        lambda: services.directory().rotate(req.token, req.params["agent_public_id"]),
    )


def create_speaker(req: Request) -> object:
    from agent_memory.edges.requests.directory import CreateSpeaker

    s = parsed(req, CreateSpeaker).speaker
    return answered(req, _speaker, lambda: services.directory().create_speaker(req.token, s.name, s.agent_public_id))


def _speaker(speaker: Speaker) -> object:
    return {"speaker": views.speaker(speaker)}
