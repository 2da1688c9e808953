"""The directory: accounts, humans, workspaces, members, conversations, agents and speakers.

Who may do what here is core/access.py's; the rows come through the resolver. Each operation answers
domain values, which views.py renders.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from agent_memory.api.errors import ApiError
from agent_memory.core import access, clock, idempotency
from agent_memory.core.bindings import parse_bindings
from agent_memory.core.budget import Budgets
from agent_memory.core.context import Context
from agent_memory.core.idempotency import settle
from agent_memory.core.ids import PresentedToken, digests_equal, mint_token, now_iso, uuid7
from agent_memory.core.lazy_dataclass import dataclass
from agent_memory.core.model import (
    Account,
    Agent,
    Anchor,
    Conversation,
    ForkBase,
    Human,
    Member,
    Principal,
    Speaker,
    TokenRow,
    Version,
    Workspace,
)
from agent_memory.core.ports import DirectoryStore, Ref
from agent_memory.core.resolver import Resolver, require_token
from agent_memory.domain.directory.entries import page_refs as entry_page_refs
from agent_memory.domain.records.text import INDEX_VERSION

# A workspace's tool_provider_overrides stay a small map: its row must fit DynamoDB's 400 KB item.
MAX_OVERRIDES = 32


@dataclass(frozen=True, slots=True)
class NewAccount:
    account: Account
    human: Human
    token: str


@dataclass(frozen=True, slots=True)
class NewHuman:
    human: Human
    token: str


@dataclass(frozen=True, slots=True)
class NewAgent:
    agent: Agent
    token: str | None


@dataclass(frozen=True, slots=True)
class ConversationState:
    """A conversation and the Context its caller's memory resolves to (for effective_memory_context)."""

    conversation: Conversation
    context: Context


def _state(ctx: Context) -> ConversationState:
    if ctx.conversation is None:
        raise access.not_found("conversation")
    return ConversationState(ctx.conversation, ctx)


def require_operator(operator_key: str | None, presented: str | None) -> None:
    if not operator_key or not presented or not digests_equal(operator_key, presented):
        raise ApiError("not_authenticated", "Creating an account needs the deployment's X-Operator-Key.")


class Directory:
    def __init__(self, store: DirectoryStore, resolver: Resolver, budgets: Budgets | None = None) -> None:
        self.store = store
        self.resolver = resolver
        self.budgets = budgets or Budgets()

    def _spend(self, principal: Principal) -> None:
        # Directory changes are rare, so their metering is one request of its own just before the change.
        budget = self.budgets.of(principal)
        if budget is not None:
            self.store.spend(budget)

    # ---- accounts and humans --------------------------------------------------------------------

    def create_account(self, account_name: str, human_name: str) -> NewAccount:
        """Only after `require_operator` has accepted the caller's key."""
        now = now_iso()
        human_id = uuid7()
        account = Account(uuid7(), account_name, now, first_human_id=human_id)
        token, digest = mint_token("human", human_id)
        human = Human(human_id, account.public_id, human_name, now, token_digest=digest)
        out = NewAccount(account, human, token)
        settle(out)
        self.store.create_account(
            account, human, TokenRow(digest, "human", human.public_id, account.public_id, human.name)
        )
        return out

    def create_human(self, presented: PresentedToken | None, name: str) -> NewHuman:
        principal = self.resolver.human(presented)
        human_id = uuid7()
        token, digest = mint_token("human", human_id)
        human = Human(human_id, principal.account_id, name, now_iso(), token_digest=digest)
        self._spend(principal)
        out = NewHuman(human, token)
        settle(out)
        self.store.create_human(human, TokenRow(digest, "human", human.public_id, principal.account_id, human.name))
        return out

    def _credentials_of(self, presented: PresentedToken | None, human_id: str) -> tuple[Human, str]:
        """A Human whose credentials the caller may change (itself, or any of the account's as its first
        Human), and the digest of the caller's own token, which the change is conditioned on."""
        caller = require_token(presented)
        principal = self.resolver.human(caller)
        got = self.store.get_many([Ref.human(human_id), Ref.account(principal.account_id)])
        human: Human = access.in_account(principal, got[Ref.human(human_id)], "human")
        access.may_manage_credentials(principal, human, got[Ref.account(principal.account_id)])
        self._spend(principal)
        return human, caller.digest

    def rotate_human(self, presented: PresentedToken | None, human_id: str) -> NewHuman:
        """A new token for the Human; the old one stops working at once."""
        human, caller = self._credentials_of(presented, human_id)
        token, digest = mint_token("human", human.public_id)
        old = human.token_digest
        out = NewHuman(replace(human, token_digest=digest), token)
        settle(out)
        self.store.rotate_human_token(
            human, old, TokenRow(digest, "human", human.public_id, human.account_id, human.name), caller
        )
        return out

    def revoke_human(self, presented: PresentedToken | None, human_id: str) -> None:
        """No token of the Human works until its credentials are rotated again."""
        human, caller = self._credentials_of(presented, human_id)
        settle(None)
        self.store.revoke_human_token(human, human.token_digest, caller)

    # ---- workspaces -----------------------------------------------------------------------------

    def create_workspace(self, presented: PresentedToken | None, name: str) -> Workspace:
        principal = self.resolver.principal(presented)
        now = now_iso()
        # A new workspace has no record yet, so every record it will hold is in the search index.
        ws = Workspace(
            uuid7(), principal.account_id, name, now, created_by=principal.public_id, records_index=INDEX_VERSION
        )
        self._spend(principal)
        settle(ws)
        # The creator starts as the room's curator: someone must be able to review quarantined versions.
        self.store.create_workspace(ws, Member(ws.public_id, principal.kind, principal.public_id, "curator", now))
        return ws

    def add_member(
        self, presented: PresentedToken | None, ws_id: str, human_id: str | None, agent_id: str | None, role: str
    ) -> Member:
        # The request model has checked that exactly one principal is named, and the role.
        target = Ref.human(human_id) if human_id else Ref.agent(agent_id or "")
        principal, ws, got = self.resolver.writable_workspace(presented, ws_id, [target])
        row = access.in_account(principal, got[target], "human" if human_id else "agent")
        member = Member(ws.public_id, "human" if human_id else "agent", row.public_id, role, now_iso())  # type: ignore[arg-type]
        self._spend(principal)
        settle(member)
        self.store.put_member(member)
        return member

    def update_workspace(
        self,
        presented: PresentedToken | None,
        ws_id: str,
        overrides: dict[str, Any] | None,
        dedup_enabled: bool | None = None,
    ) -> Workspace:
        """Change a workspace's tool_provider_overrides (merged key by key) and its settings."""
        principal, ws, _ = self.resolver.writable_workspace(presented, ws_id)
        merged = dict(ws.tool_provider_overrides)
        # Each key and value is the request model's to check; what they add up to is judged here.
        for key, value in (overrides or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        # The request model bounds one request; this bounds what requests add up to.
        if len(merged) > MAX_OVERRIDES:
            raise ApiError(
                "parameter_invalid",
                f"A workspace holds at most {MAX_OVERRIDES} tool_provider_overrides and this would make "
                f"{len(merged)}: clear some (set them to null) first.",
            )
        self._spend(principal)
        # The update writes the whole map, so the workspace it leaves is known before it is sent.
        updated = replace(ws, tool_provider_overrides=merged)
        if dedup_enabled is not None:
            updated = replace(updated, dedup_enabled=dedup_enabled)
        settle(updated)
        if overrides is not None:
            self.store.update_workspace_overrides(ws.public_id, merged)
        if dedup_enabled is not None:
            # A second request only when both change, which no hot path does.
            self.store.update_workspace_dedup(ws.public_id, dedup_enabled)
        return updated

    # ---- conversations --------------------------------------------------------------------------

    def create_conversation(
        self,
        presented: PresentedToken | None,
        ws_id: str,
        answering_agent_id: str | None,
        memory_context: Any,
        has_memory_context: bool,
    ) -> ConversationState:
        extra = [Ref.agent(answering_agent_id)] if answering_agent_id else []
        principal, ws, got = self.resolver.writable_workspace(presented, ws_id, extra)
        if answering_agent_id:
            access.in_account(principal, got[Ref.agent(answering_agent_id)], "agent")
        conv = Conversation(
            uuid7(), ws.public_id, ws.account_id, principal.public_id, now_iso(), answering_agent_id=answering_agent_id
        )
        if has_memory_context and memory_context is not None:
            conv.memory_context = self._checked_context(principal, ws, got, conv, memory_context)
        self._spend(principal)
        # The new conversation's view resolves from the rows already read, before it is stored.
        state = _state(self.resolver.new_conversation_context(principal, ws, got, conv))
        settle(state)
        self.store.create_conversation(conv)
        return state

    def show_conversation(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> ConversationState:
        return _state(self.resolver.conversation(presented, ws_id, conv_id))

    def archive(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> ConversationState:
        state = _state(self.resolver.conversation(presented, ws_id, conv_id, write=True))
        if state.conversation.archived:
            return state
        # Archiving changes no memory, so it bumps nothing.
        self._spend(state.context.principal)
        if idempotency.active():
            # A keyed archive records its answer in its commit: the row it leaves is the one read, archived,
            # and the update is conditioned on that revision so the answer is exact.
            archived = replace(state.conversation, archived=True)
            settle(ConversationState(archived, state.context))
            self.store.update_conversation(
                conv_id, archive=True, expected_context_revision=state.conversation.context_revision
            )
            return ConversationState(archived, state.context)
        row = self.store.update_conversation(conv_id, archive=True)
        if row is None:  # only a keyed request has no row back, and it took the branch above
            raise access.not_found("conversation")
        return ConversationState(row, state.context)

    def delete_conversation(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> None:
        """Tombstone a conversation: from the commit on it reads as absent everywhere (its routes not_found,
        an alias of it unavailable, its executions stopped). Bounded work: one batch read and one transaction
        of three items, however much the conversation holds; its documents, versions and other items, and
        the bytes only they hold, are the sweeper's (store/sweeper.py). Its forks keep their own rows."""
        principal, host = self.resolver.conversation_host(presented, ws_id, conv_id)
        access.may_delete_conversation(principal, host.workspace, host.conversation, host.standing)
        self._spend(principal)
        settle(None)
        self.store.delete_conversation(host.conversation, principal.public_id, clock.now())

    def fork(self, presented: PresentedToken | None, ws_id: str, conv_id: str) -> ConversationState:
        """Copy-on-write: a new conversation holding copies of the parent's pointer rows and configuration.

        One Query lists the parent's rows and one transaction writes the child with its copies and their
        first history records (a fork too large for one sends the records first: store/documents.py), so a
        fork is all or nothing and costs no content bytes: both sides point at the same immutable versions, and any
        later write on either side makes a new version the other never sees.
        """
        # The parent's store entry pages ride in the first batch: the child's transaction copies them.
        pages = entry_page_refs(conv_id)
        parent_ctx = self.resolver.conversation(presented, ws_id, conv_id, write=True, extra=pages)
        parent_state = _state(parent_ctx)
        parent = parent_state.conversation
        # The parent is marked forked before its rows are read: a redaction there that reads the mark keeps
        # the bytes this fork may copy, and one that read the parent before it can only scrub a version
        # already superseded when the rows are read, so not one this fork copies (history.py, _sole_holder).
        now = clock.now()
        with idempotency.suspended():  # written ahead of the change: not the commit that records the answer
            self.store.update_conversation(parent.public_id, forked_at=now)
        documents = self.store.list_documents(Anchor("conversation", parent.public_id))
        # An archived parent can still be forked: archiving freezes that conversation, not its content.
        child = Conversation(
            uuid7(),
            parent.workspace_id,
            parent.account_id,
            parent_state.context.principal.public_id,
            now_iso(),
            context_revision=0,
            archived=False,
            memory_context=copy.deepcopy(parent.memory_context),
            answering_agent_id=parent.answering_agent_id,
            parent_public_id=parent.public_id,
        )
        # Each copy starts the child's own history with one `fork` version: the inherited pointer, with the
        # author and time of the version it copies. The parent's older versions stay the parent's.
        child_anchor = Anchor("conversation", child.public_id)
        versions = [
            Version.of(replace(d, anchor=child_anchor), "fork", now, forked_from=parent.public_id) for d in documents
        ]
        budget = self.budgets.of(parent_state.context.principal)
        # Same workspace, same answerer, same caller: the child resolves from the rows already loaded.
        state = _state(self.resolver.child_context(parent_state.context, child))
        settle(state)
        # The base a merge of the child will need: each copied document's pair, kept with the child.
        base = ForkBase(child.public_id, parent.public_id, {d.rest: (d.public_id, d.lock_version) for d in documents})
        entry_pages = [page for ref in pages if (page := parent_ctx.loaded.get(ref)) is not None]
        self.store.fork_conversation(child, documents, versions, budget, now, entry_pages, base)
        return state

    def replace_memory_context(
        self, presented: PresentedToken | None, ws_id: str, conv_id: str, memory_context: Any
    ) -> ConversationState:
        ctx = self.resolver.conversation(presented, ws_id, conv_id, write=True)
        conv = _state(ctx).conversation
        # The bindings route is one of the door's routes: under a provider override it is the provider's too.
        access.refuse_override(ctx, None)
        if conv.archived:
            raise ApiError("conversation_archived", "The conversation is archived: its configuration is read-only.")
        value = None
        if memory_context is not None:
            ws = ctx.workspace
            if ws is None:  # a conversation's Context always carries its workspace
                raise access.not_found("workspace")
            value = self._checked_context(ctx.principal, ws, dict(ctx.loaded), conv, memory_context)
        self._spend(ctx.principal)
        # Conditioned on the revision read, the update leaves exactly this row: its view is resolved first.
        updated = replace(conv, memory_context=value, context_revision=conv.context_revision + 1)
        state = _state(self.resolver.conversation_context_of(ctx, updated))
        settle(state)
        self.store.update_conversation(
            conv_id,
            memory_context=value,
            set_memory_context=True,
            bump=True,
            expected_context_revision=conv.context_revision,
        )
        return state

    def _checked_context(
        self, principal: Principal, ws: Workspace, got: dict[Ref, Any], conv: Conversation, memory_context: Any
    ) -> dict[str, Any]:
        """Grammar first (validation_failed), then every source must exist and be within the caller's reach."""
        bindings = parse_bindings(memory_context)
        need: list[Ref] = [Ref.member(ws.public_id, principal.public_id)]
        need += [Ref.conversation(b.conversation_public_id) for b in bindings if b.conversation_public_id]
        need += [Ref.speaker(b.speaker_public_id) for b in bindings if b.speaker_public_id]
        if conv.answering_agent_id and any(b.speaker_public_id for b in bindings):
            need.append(Ref.agent(conv.answering_agent_id))
        missing = [r for r in need if r not in got]
        if missing:
            got.update(self.store.get_many(missing))
        access.check_configured(principal, ws, got[Ref.member(ws.public_id, principal.public_id)], conv, bindings, got)
        return {"bindings": [b.as_json() for b in bindings]}

    # ---- agents and speakers --------------------------------------------------------------------

    def create_agent(self, presented: PresentedToken | None, name: str, kind: str, limit: Any) -> NewAgent:
        principal = self.resolver.human(presented)
        if limit is not None:
            limit = {"bindings": [b.as_json() for b in parse_bindings(limit, limit=True)]}
        agent = Agent(uuid7(), principal.account_id, principal.public_id, name, kind, limit, now_iso())  # type: ignore[arg-type]
        token = None
        row = None
        if kind == "program":
            token, digest = mint_token("agent", agent.public_id)
            agent.token_digest = digest
            row = TokenRow(digest, "agent", agent.public_id, principal.account_id, agent.name)
        self._spend(principal)
        out = NewAgent(agent, token)
        settle(out)
        self.store.create_agent(agent, row)
        return out

    def rotate(self, presented: PresentedToken | None, agent_id: str) -> str:
        principal, agent = self.resolver.account_row(presented, Ref.agent(agent_id), "agent")
        access.require_steward(principal, agent)
        if agent.kind != "program":
            raise ApiError("parameter_invalid", "Only a paired program has a credential to rotate.")
        token, digest = mint_token("agent", agent.public_id)
        self._spend(principal)
        settle(token)
        self.store.rotate_agent_token(
            agent, agent.token_digest, TokenRow(digest, "agent", agent.public_id, agent.account_id, agent.name)
        )
        return token

    def create_speaker(self, presented: PresentedToken | None, name: str, agent_id: str) -> Speaker:
        principal, agent = self.resolver.account_row(presented, Ref.agent(agent_id), "agent")
        access.may_add_speaker(principal, agent)
        speaker = Speaker(uuid7(), principal.account_id, agent.public_id, name, now_iso())
        self._spend(principal)
        settle(speaker)
        self.store.create_speaker(speaker)
        return speaker
