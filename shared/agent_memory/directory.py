"""The directory: accounts, humans, workspaces, members, conversations, agents and speakers."""

from __future__ import annotations

import copy
import hmac
import re
from typing import Any

from .bindings import parse_bindings
from .errors import ApiError
from .ids import PresentedToken, mint_token, now_iso, uuid7
from .memory import refuse_override
from .model import Account, Agent, Anchor, Conversation, Human, Member, Principal, Speaker, TokenRow, Workspace
from .ports import Ref, Store
from .resolver import Context, Resolver, conversation_standing, not_found, require_token, workspace_role

DEFINITION_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}\Z")


def conversation_json(ctx: Context) -> dict[str, Any]:
    conv = ctx.conversation
    assert conv is not None
    return {
        "public_id": conv.public_id,
        "workspace_public_id": conv.workspace_id,
        "answering_agent_public_id": conv.answering_agent_id,
        "parent_public_id": conv.parent_public_id,
        "context_revision": conv.context_revision,
        "archived": conv.archived,
        "created_at": conv.created_at,
        "memory_context": conv.memory_context,
        "effective_memory_context": {"bindings": [s.effective_json() for s in ctx.readable()]},
    }


def workspace_json(ws: Workspace) -> dict[str, Any]:
    return {
        "public_id": ws.public_id,
        "name": ws.name,
        "created_at": ws.created_at,
        "tool_provider_overrides": ws.tool_provider_overrides,
    }


def agent_json(agent: Agent) -> dict[str, Any]:
    return {
        "public_id": agent.public_id,
        "name": agent.name,
        "kind": agent.kind,
        "steward_public_id": agent.steward_id,
        "memory_context_limit": agent.memory_context_limit,
        "created_at": agent.created_at,
    }


class Directory:
    def __init__(self, store: Store, resolver: Resolver) -> None:
        self.store = store
        self.resolver = resolver

    # ---- accounts and humans --------------------------------------------------------------------

    @staticmethod
    def require_operator(operator_key: str | None, presented: str | None) -> None:
        if not operator_key or not presented or not hmac.compare_digest(operator_key, presented):
            raise ApiError("not_authenticated", "Creating an account needs the deployment's X-Operator-Key.")

    def create_account(
        self, operator_key: str | None, presented: str | None, account_name: str, human_name: str
    ) -> dict[str, Any]:
        self.require_operator(operator_key, presented)
        now = now_iso()
        account = Account(uuid7(), account_name, now)
        human = Human(uuid7(), account.public_id, human_name, now)
        token, digest = mint_token("human", human.public_id)
        self.store.create_account(account, human, TokenRow(digest, "human", human.public_id, account.public_id))
        return {
            "account": {"public_id": account.public_id, "name": account.name, "created_at": now},
            "human": {"public_id": human.public_id, "name": human.name, "created_at": now},
            "token": token,
        }

    def _human_principal(self, presented: PresentedToken | None) -> Principal:
        principal = self.resolver.principal(presented)
        if principal.kind != "human":
            raise ApiError("not_authorized", "Only a Human can do this; an agent's token cannot.")
        return principal

    def create_human(self, presented: PresentedToken | None, name: str) -> dict[str, Any]:
        principal = self._human_principal(presented)
        human = Human(uuid7(), principal.account_id, name, now_iso())
        token, digest = mint_token("human", human.public_id)
        self.store.create_human(human, TokenRow(digest, "human", human.public_id, principal.account_id))
        return {"human": {"public_id": human.public_id, "name": name, "created_at": human.created_at}, "token": token}

    # ---- workspaces -----------------------------------------------------------------------------

    def create_workspace(self, presented: PresentedToken | None, name: str) -> dict[str, Any]:
        principal = self.resolver.principal(presented)
        now = now_iso()
        ws = Workspace(uuid7(), principal.account_id, name, now)
        self.store.create_workspace(ws, Member(ws.public_id, principal.kind, principal.public_id, "member", now))
        return {"workspace": workspace_json(ws)}

    def _workspace_for(
        self, presented: PresentedToken | None, ws_id: str, extra: list[Ref] | None = None
    ) -> tuple[Principal, Workspace, dict[Ref, Any]]:
        """The caller and a workspace it has write standing in (read-only callers are refused)."""
        tok = require_token(presented)
        principal, got = self.resolver.first_round(
            tok, [Ref.workspace(ws_id), Ref.member(ws_id, tok.principal_id), *(extra or [])]
        )
        ws = got[Ref.workspace(ws_id)]
        role = workspace_role(principal, ws, got[Ref.member(ws_id, principal.public_id)])
        if role is None:
            raise not_found("workspace")
        if role != "member":
            raise ApiError("not_authorized", "You have read-only standing in this workspace.")
        return principal, ws, got

    def add_member(
        self, presented: PresentedToken | None, ws_id: str, human_id: str | None, agent_id: str | None, role: str
    ) -> dict[str, Any]:
        if (human_id is None) == (agent_id is None):
            raise ApiError("parameter_invalid", "member needs exactly one of human_public_id and agent_public_id.")
        if role not in ("member", "viewer"):
            raise ApiError("parameter_invalid", "member.role must be 'member' or 'viewer'.")
        target = Ref.human(human_id) if human_id else Ref.agent(agent_id or "")
        principal, ws, got = self._workspace_for(presented, ws_id, [target])
        row = got[target]
        if row is None or row.account_id != principal.account_id:
            raise not_found("human" if human_id else "agent")
        kind = "human" if human_id else "agent"
        member = Member(ws.public_id, kind, row.public_id, role, now_iso())  # type: ignore[arg-type]
        self.store.put_member(member)
        return {
            "member": {
                "workspace_public_id": ws.public_id,
                f"{kind}_public_id": row.public_id,
                "role": role,
                "created_at": member.created_at,
            }
        }

    def set_overrides(self, presented: PresentedToken | None, ws_id: str, overrides: dict[str, Any]) -> dict[str, Any]:
        _, ws, _ = self._workspace_for(presented, ws_id)
        merged = dict(ws.tool_provider_overrides)
        for key, value in overrides.items():
            if value is None:
                merged.pop(key, None)
            elif isinstance(value, str) and value.strip() and len(value) <= 200:
                merged[key] = value
            else:
                raise ApiError(
                    "parameter_invalid", f"tool_provider_overrides[{key!r}] must be a provider name or null."
                )
        return {"workspace": workspace_json(self.store.update_workspace_overrides(ws.public_id, merged))}

    # ---- conversations --------------------------------------------------------------------------

    def create_conversation(
        self,
        presented: PresentedToken | None,
        ws_id: str,
        answering_agent_id: str | None,
        memory_context: Any,
        has_memory_context: bool,
    ) -> dict[str, Any]:
        extra = [Ref.agent(answering_agent_id)] if answering_agent_id else []
        principal, ws, got = self._workspace_for(presented, ws_id, extra)
        if answering_agent_id:
            agent = got[Ref.agent(answering_agent_id)]
            if agent is None or agent.account_id != principal.account_id:
                raise not_found("agent")
        conv = Conversation(
            uuid7(), ws.public_id, ws.account_id, principal.public_id, now_iso(), answering_agent_id=answering_agent_id
        )
        if has_memory_context and memory_context is not None:
            conv.memory_context = self._checked_context(principal, ws, got, conv, memory_context)
        self.store.create_conversation(conv)
        return {"conversation": conversation_json(self.resolver.conversation(presented, ws_id, conv.public_id))}

    def show_conversation(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> dict[str, Any]:
        return {"conversation": conversation_json(self.resolver.conversation(presented, ws_id, conv_id))}

    def archive(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> dict[str, Any]:
        ctx = self.resolver.conversation(presented, ws_id, conv_id, write=True)
        assert ctx.conversation is not None
        if not ctx.conversation.archived:
            # Archiving changes no memory, so it bumps nothing.
            ctx.conversation = self.store.update_conversation(conv_id, archive=True)
        return {"conversation": conversation_json(ctx)}

    def fork(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> dict[str, Any]:
        """Copy-on-write: a new conversation holding copies of the parent's pointer rows and configuration.

        One Query lists the parent's rows and one transaction writes the child with its copies, so a fork is
        all or nothing and costs no content bytes: both sides point at the same immutable versions, and any
        later write on either side makes a new version the other never sees.
        """
        ctx = self.resolver.conversation(presented, ws_id, conv_id, write=True)
        parent = ctx.conversation
        assert parent is not None and ctx.workspace is not None
        documents = self.store.list_documents(Anchor("conversation", parent.public_id))
        # An archived parent can still be forked: archiving freezes that conversation, not its content.
        child = Conversation(
            uuid7(),
            parent.workspace_id,
            parent.account_id,
            ctx.principal.public_id,
            now_iso(),
            context_revision=0,
            archived=False,
            memory_context=copy.deepcopy(parent.memory_context),
            answering_agent_id=parent.answering_agent_id,
            parent_public_id=parent.public_id,
        )
        self.store.fork_conversation(child, documents)
        # Same workspace, same answerer, same caller: the rows the parent's bindings needed are already
        # loaded, so the child's sources resolve without another read (its relative roots now name the child).
        member = ctx.loaded.get(Ref.member(ws_id, ctx.principal.public_id))
        standing = conversation_standing(ctx.principal, ctx.workspace, member, child) or "read"
        sources = self.resolver._resolve_conversation_bindings(
            ctx.principal, ctx.workspace, member, child, None, ctx.loaded, standing
        )
        child_ctx = Context(
            self.store, ctx.principal, "conversation", sources, ctx.workspace, child, standing == "write", ctx.loaded
        )
        return {"conversation": conversation_json(child_ctx)}

    def replace_memory_context(
        self, presented: PresentedToken | None, ws_id: str, conv_id: str, memory_context: Any
    ) -> dict[str, Any]:
        ctx = self.resolver.conversation(presented, ws_id, conv_id, write=True)
        conv = ctx.conversation
        assert conv is not None and ctx.workspace is not None
        # The bindings route is one of the door's routes: under a provider override it is the provider's too.
        refuse_override(ctx, None)
        if conv.archived:
            raise ApiError("conversation_archived", "The conversation is archived: its configuration is read-only.")
        value = None
        if memory_context is not None:
            value = self._checked_context(ctx.principal, ctx.workspace, dict(ctx.loaded), conv, memory_context)
        self.store.update_conversation(
            conv_id,
            memory_context=value,
            set_memory_context=True,
            bump=True,
            expected_context_revision=conv.context_revision,
        )
        return self.show_conversation(presented, ws_id, conv_id)

    def _checked_context(
        self, principal: Principal, ws: Workspace, got: dict[Ref, Any], conv: Conversation, memory_context: Any
    ) -> dict[str, Any]:
        """Grammar first (validation_failed), then every source must exist and be within the caller's reach."""
        bindings = parse_bindings(memory_context)
        need = [Ref.member(ws.public_id, principal.public_id)]
        need += [Ref.conversation(b.conversation_public_id) for b in bindings if b.conversation_public_id]
        need += [Ref.speaker(b.speaker_public_id) for b in bindings if b.speaker_public_id]
        missing = [r for r in need if r not in got]
        if missing:
            got.update(self.store.get_many(missing))
        member = got[Ref.member(ws.public_id, principal.public_id)]
        for b in bindings:
            if b.scope == "agent" and conv.answering_agent_id is None:
                raise ApiError(
                    "memory_scope_unavailable",
                    f"Binding {b.name!r}: a Human-answered conversation has no agent/ scope.",
                )
            if b.conversation_public_id:
                alias = got[Ref.conversation(b.conversation_public_id)]
                standing = conversation_standing(principal, ws, member, alias)
                if alias is None or standing is None:
                    raise ApiError(
                        "memory_scope_unavailable",
                        f"Binding {b.name!r}: no conversation with that id is visible in this workspace.",
                    )
                if b.access == "read_write" and standing != "write":
                    raise ApiError(
                        "not_authorized", f"Binding {b.name!r}: read_write needs write standing on that conversation."
                    )
            if b.speaker_public_id:
                speaker = got[Ref.speaker(b.speaker_public_id)]
                if speaker is None or speaker.account_id != principal.account_id:
                    raise ApiError(
                        "memory_scope_unavailable",
                        f"Binding {b.name!r}: no speaker with that id exists in this account.",
                    )
        return {"bindings": [b.as_json() for b in bindings]}

    # ---- agents and speakers --------------------------------------------------------------------

    def create_agent(self, presented: PresentedToken | None, name: str, kind: str, limit: Any) -> dict[str, Any]:
        principal = self._human_principal(presented)
        if kind not in ("program", "definition"):
            raise ApiError("parameter_invalid", "agent.kind must be 'program' or 'definition'.")
        if kind == "definition" and not DEFINITION_NAME_RE.match(name):
            raise ApiError(
                "parameter_invalid",
                "A definition's name addresses it in URLs: lowercase letters, digits, '-' and '_', "
                "at most 64 characters.",
            )
        if limit is not None:
            limit = {"bindings": [b.as_json() for b in parse_bindings(limit, limit=True)]}
        agent = Agent(uuid7(), principal.account_id, principal.public_id, name, kind, limit, now_iso())  # type: ignore[arg-type]
        token = None
        row = None
        if kind == "program":
            token, digest = mint_token("agent", agent.public_id)
            agent.token_digest = digest
            row = TokenRow(digest, "agent", agent.public_id, principal.account_id)
        self.store.create_agent(agent, row)
        out: dict[str, Any] = {"agent": agent_json(agent)}
        if token:
            out["token"] = token
        return out

    def _account_agent(self, presented: PresentedToken | None, agent_id: str) -> tuple[Principal, Agent]:
        """The caller and an agent of its account (not_found for any other)."""
        tok = require_token(presented)
        principal, got = self.resolver.first_round(tok, [Ref.agent(agent_id)])
        agent: Agent | None = got[Ref.agent(agent_id)]
        if agent is None or agent.account_id != principal.account_id:
            raise not_found("agent")
        return principal, agent

    def _stewarded_agent(self, presented: PresentedToken | None, agent_id: str) -> tuple[Principal, Agent]:
        principal, agent = self._account_agent(presented, agent_id)
        if agent.steward_id != principal.public_id:
            raise ApiError("not_authorized", "Only the agent's steward can do this.")
        return principal, agent

    def rotate(self, presented: PresentedToken | None, agent_id: str) -> dict[str, Any]:
        _, agent = self._stewarded_agent(presented, agent_id)
        if agent.kind != "program":
            raise ApiError("parameter_invalid", "Only a paired program has a credential to rotate.")
        token, digest = mint_token("agent", agent.public_id)
        self.store.rotate_agent_token(
            agent, agent.token_digest, TokenRow(digest, "agent", agent.public_id, agent.account_id)
        )
        return {"token": token}

    def create_speaker(self, presented: PresentedToken | None, name: str, agent_id: str) -> dict[str, Any]:
        principal, agent = self._account_agent(presented, agent_id)
        if principal.public_id not in (agent.steward_id, agent.public_id):
            raise ApiError("not_authorized", "Only the agent itself or its steward can add its speakers.")
        speaker = Speaker(uuid7(), principal.account_id, agent.public_id, name, now_iso())
        self.store.create_speaker(speaker)
        return {
            "speaker": {
                "public_id": speaker.public_id,
                "name": name,
                "agent_public_id": agent.public_id,
                "created_at": speaker.created_at,
            }
        }

    def definition_context(
        self, presented: PresentedToken | None, name: str, speaker_selector: str | None = None
    ) -> Context:
        principal = self._human_principal(presented)
        agent_id = self.store.find_definition(principal.public_id, name)
        agent = self.store.get_many([Ref.agent(agent_id)])[Ref.agent(agent_id)] if agent_id else None
        return self.resolver.definition(presented, agent, principal, speaker_selector)
